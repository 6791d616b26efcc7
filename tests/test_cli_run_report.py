"""``sdp-expect dry-run``, ``run`` and ``report`` end to end, on the example project.

True runs (each ~20-40 s), shared by the tests of this module, on the newest pyspark
line only (``NEWEST_LINE``: the 4.1 line runs the spark41 example's true runs in
test_cli_e2e, as scripts/run-example.sh does): the spark42 example is
dry-run and run from another folder (the catalog must land in the project),
then reported on as text and HTML; the HTML page is opened in headless
Chromium. A small project with a violated fail rule shows the failure (run on the
test session's shared server, ``--remote``: it starts no Spark of its own). What
the commands show is compared with the tables as a plain Spark session reads
them (through the test session's shared server: no Spark is started to read). The
example's run writes its events to a pseudo-terminal (stderr, with ``--format
json``): the progress line is drawn live there; the failing run's output is a pipe:
plain progress lines.

These are the example's only cold runs on this line: while it runs, a second copy
runs from its own folder (each run starts a server of its own on a free port,
neither waits for the other), and that copy then shows ``sdp-expect serve``: a
re-run on the warm server writes the same tables as its cold run (compared through
Spark with chispa), runs the new code after an edit, and ``report`` reads through
the server. The fast checks of the same machinery, without Spark, are in
test_local_server.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from chromium import INSTALL_HINT, Browser, find_chromium
from cli_helpers import (
    NEWEST_LINE,
    REPO,
    process_alive,
    read_stored_tables,
    screen,
    sdp_expect,
    sdp_expect_on_terminal,
    sdp_expect_script,
    set_storage,
    user_env,
    write_project,
)
from pyspark.sql import SparkSession
from sdp_runner import SparkServer, keep_alive

from sdp_expect.base import names
from sdp_expect.runtime.local_server import read_record

EXAMPLE = "spark42"

pytestmark = [pytest.mark.usefixtures("own_jvm"), NEWEST_LINE, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("example") / EXAMPLE
    shutil.copytree(REPO / "examples" / EXAMPLE, project,
                    ignore=shutil.ignore_patterns("metastore_db", "spark-warehouse", ".sdp-expect",
                                                  "derby.log", "__pycache__"))
    set_storage(project, project.parent / "storage")
    return project


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the commands are started from: not the project's."""
    return tmp_path_factory.mktemp("elsewhere")


@pytest.fixture(scope="module")
def dry_run(example: Path, elsewhere: Path) -> Any:
    return sdp_expect("dry-run", "--spec", str(example), cwd=elsewhere)


TERMINAL_COLUMNS = 50
"""The width of the terminal the example's run writes its events to."""


@dataclass(frozen=True)
class ColdPair:
    """The example's cold run and, at the same time, a second copy's (``sdp-expect run``):
    the only cold runs of the example on this line."""

    projects: list[Path]
    outputs: list[tuple[int, str, str]]  # exit status, stdout, stderr
    seconds: float  # the wall time of both
    terminal: Any  # the first: its events on a terminal (stderr), its JSON on a pipe


@pytest.fixture(scope="module")
def cold_pair(example: Path, elsewhere: Path, dry_run: Any,
              tmp_path_factory: pytest.TempPathFactory) -> ColdPair:
    """The example's run, its events on a terminal (stderr) and its JSON document on a
    pipe, while a second copy of the example runs from its own folder: two projects on
    one machine at the same time."""
    second = tmp_path_factory.mktemp("second") / EXAMPLE
    shutil.copytree(example, second, ignore=shutil.ignore_patterns(
        "metastore_db", "spark-warehouse", ".sdp-expect", "derby.log", "__pycache__"))
    set_storage(second, second.parent / "storage")
    began = time.monotonic()
    other = subprocess.Popen([sdp_expect_script(), "run", "--format", "json"], cwd=second,
                             env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        shown = sdp_expect_on_terminal("run", "--spec", str(example / "spark-pipeline.yml"),
                                       "--format", "json", cwd=elsewhere, terminal="stderr",
                                       columns=TERMINAL_COLUMNS)
    finally:
        out, err = other.communicate(timeout=900)
    return ColdPair([example, second], [(shown.returncode, shown.stdout, shown.stderr),
                                        (other.returncode, out, err)],
                    time.monotonic() - began, shown)


@pytest.fixture(scope="module")
def example_run(cold_pair: ColdPair) -> Any:
    """The example's run: its events on a terminal (stderr), its JSON document on a pipe."""
    return cold_pair.terminal


@pytest.fixture(scope="module")
def report(example: Path, example_run: Any) -> tuple[Any, Path]:
    html = example.parent / "out" / "report.html"
    return sdp_expect("report", "--html", str(html), cwd=example / "transformations"), html


@pytest.fixture(scope="module")
def tables(example: Path, report: Any, spark_server: SparkServer
           ) -> dict[str, list[dict[str, Any]]]:
    """The example's tables after its cold run, read through the shared server."""
    return read_stored_tables(spark_server.session(), example / "spark-warehouse")


def metrics_of(tables: dict[str, list[dict[str, Any]]], table: str) -> list[dict[str, Any]]:
    return sorted(tables[table], key=lambda row: row["expectation"])


def test_dry_run_streams_the_events_and_keeps_the_catalog_in_the_project(
        dry_run: Any, example: Path, elsewhere: Path) -> None:
    assert dry_run.returncode == 0, dry_run.stdout + dry_run.stderr
    assert "Run is COMPLETED" in dry_run.stdout
    assert dry_run.stdout.rstrip().endswith("sdp-expect dry-run: COMPLETED (exit status 0)")
    assert "Data quality" not in dry_run.stdout
    assert "\x1b[" not in dry_run.stdout  # not a terminal: plain text
    assert "flows done" not in dry_run.stdout  # a dry-run runs no flow: no progress line
    assert (example / "metastore_db").is_dir()
    assert not (elsewhere / "metastore_db").exists()


NOISE = ("UserWarning", "CANNOT_MODIFY_STATIC_CONFIG", "Ignoring non-Spark config property",
         "ErrorUtils", "INVALID_HANDLE", "Traceback", " WARN ", " INFO ")
"""What a successful run printed before issue 12: warnings and traces a newcomer reads as
failures. They go to the log file only (shown with --verbose)."""


def test_a_successful_run_shows_events_and_summary_only(dry_run: Any, example_run: Any,
                                                        example: Path) -> None:
    for done in (dry_run, example_run):
        assert done.returncode == 0, done.stdout + done.stderr
        events = done.stdout if done is dry_run else done.stderr
        for noise in NOISE:
            assert noise not in done.stdout + done.stderr, (noise, done.stdout + done.stderr)
        assert "Run is COMPLETED" in events
    assert "Flow spark_catalog.default.orders_silver has COMPLETED" in example_run.stderr
    document = json.loads(example_run.stdout)
    log = Path(document["log"]).read_text(encoding="utf-8")
    assert "Run is COMPLETED" in log and " WARN " in log  # everything is in the log file
    assert Path(document["log"]).parent == example / ".sdp-expect" / "logs"


PROGRESS = re.compile(r"\[(\d\d):(\d\d)\] (.*)")
STYLE = re.compile(r"\x1b\[[0-9;]*m")
DRAWN = re.compile(r"\r([^\r\n]*?)\x1b\[K")
"""A live line drawn: carriage return, the line, erase to the end of the line."""


def seconds(match: re.Match[str]) -> int:
    return int(match.group(1)) * 60 + int(match.group(2))


def test_a_run_on_a_terminal_draws_its_progress_live_and_leaves_the_last_line(
        example_run: Any) -> None:
    assert example_run.returncode == 0, example_run.stdout + example_run.stderr
    raw = example_run.stderr  # what the terminal received
    shown = screen(raw)
    # On the screen: the header, the project's server started for the run, every event
    # of the run once (as in the log file), and the progress line, left as the last line
    # with the final counts.
    log = Path(json.loads(example_run.stdout)["log"]).read_text(encoding="utf-8")
    events = [line for line in log.splitlines() if re.match(r"\d{4}-\d\d-\d\d \d", line)]
    assert shown[0].startswith("sdp-expect run: ")
    assert shown[1].startswith("sdp-expect: a local Spark Connect server on port "), shown[1]
    assert shown[2:-1] == events
    final = PROGRESS.fullmatch(shown[-1])
    assert final and final.group(3) == "6/6 flows done · failed: 0", shown[-1]
    assert STYLE.sub("", raw).endswith(shown[-1] + "\r\n")  # nothing after it
    draws = [STYLE.sub("", text) for text in DRAWN.findall(raw)]
    # cut to the terminal's width (the first flow alone running does not fit)
    assert all(len(text) < TERMINAL_COLUMNS for text in draws), draws
    assert any(text.endswith("…") for text in draws), draws
    assert any(re.fullmatch(r"\[\d\d:\d\d\] 0/6 flows done · failed: 0 · r.*", text)
               for text in draws), draws
    # redrawn as the seconds pass (by the timer: the child's lines come in bursts, with
    # silences of several seconds while Spark starts), also with no line in between
    drawn = {seconds(m) for m in map(PROGRESS.fullmatch, draws) if m}
    assert len(drawn) >= 0.8 * seconds(final), sorted(drawn)
    assert re.search(r"\r\[\d\d:\d\d\][^\r\n]*\x1b\[K\r\[\d\d:\d\d\]", STYLE.sub("", raw))


def test_report_shows_the_summary_only(report: tuple[Any, Path]) -> None:
    """``report`` reads the tables with a Spark process of its own: none of that
    process's warnings reach the user."""
    done, _ = report
    assert done.returncode == 0, done.stdout + done.stderr
    assert "== Data quality" in done.stdout
    for noise in (*NOISE, "log4j", "WARNING"):
        assert noise not in done.stdout + done.stderr, (noise, done.stdout + done.stderr)


def test_run_summary_equals_the_metrics_tables(example_run: Any, example: Path,
                                               elsewhere: Path,
                                               tables: dict[str, list[dict[str, Any]]]) -> None:
    assert example_run.returncode == 0, example_run.stdout + example_run.stderr
    summary = json.loads(example_run.stdout)  # stdout holds only the document
    assert summary["status"] == "COMPLETED" and summary["exit_code"] == 0
    assert "Flow spark_catalog.default.orders_silver has COMPLETED" in example_run.stderr
    assert (example / "spark-warehouse" / "orders_silver").is_dir()
    assert not (elsewhere / "spark-warehouse").exists()
    shown = {d["dataset"]: d for d in summary["datasets"]}
    assert set(shown) == {"orders_silver", "revenue_by_customer"}
    for name, dataset in shown.items():
        assert dataset["status"] == "updated"
        rows = metrics_of(tables, f"{name}_dq_metrics")
        assert sorted(({k: r[k] for k in ("expectation", "action", "constraint",
                                          "passed_records", "failed_records", "total_records")}
                       for r in dataset["rules"]), key=lambda r: r["expectation"]) == [
            {k: row[k] for k in ("expectation", "action", "constraint", "passed_records",
                                 "failed_records", "total_records")} for row in rows]
        assert dataset["total_records"] == rows[0]["total_records"]
        assert dataset["dropped_records"] == rows[0]["dropped_records"]
    silver = shown["orders_silver"]
    assert (silver["total_records"], silver["dropped_records"]) == (10, 4)
    assert [(r["expectation"], r["failed_records"], r["failure_percentage"])
            for r in silver["rules"]] == [("recent", 3, 30.0), ("valid_id", 2, 20.0),
                                          ("valid_amount", 3, 30.0)]
    assert silver["quarantine"]["records"] == len(tables["orders_silver_quarantine"]) == 4
    assert len(tables["orders_silver"]) == 6


def test_report_shows_each_dataset_as_of_its_last_successful_update(
        report: Any, tables: dict[str, list[dict[str, Any]]]) -> None:
    result, html = report
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    assert "orders_silver  materialized view, last successful update" in text
    assert "quarantine orders_silver_quarantine: 4 records" in text
    for dataset in ("orders_silver", "revenue_by_customer"):
        for row in tables[f"{dataset}_dq_metrics"]:
            assert re.search(rf"^    {row['expectation']} +{row['action']} +"
                             rf"{row['passed_records']} +{row['failed_records']} ", text,
                             re.MULTILINE), text
    assert f"HTML report written to {html}" in text
    assert html.is_file()


def test_quarantine_counts_each_failed_rule_as_the_table_holds_it(
        example: Path, report: Any, tables: dict[str, list[dict[str, Any]]]) -> None:
    """``sdp-expect quarantine`` against the quarantine table as Spark reads its files:
    the records, per rule how many of them name it in ``_failed_expectations``, per
    update how many it quarantined, the records themselves (a sample as large as the
    table)."""
    done = sdp_expect("quarantine", "--format", "json", "--sample", "10", cwd=example)
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert (document["command"], document["database"]) == ("quarantine", "default")
    shown = {q["dataset"]: q for q in document["quarantines"]}
    assert set(shown) == {"orders_silver"}
    rows = tables["orders_silver_quarantine"]
    oracle = Counter(rule for row in rows for rule in row["_failed_expectations"])
    silver = shown["orders_silver"]
    assert (silver["table"], silver["records"]) == ("orders_silver_quarantine", len(rows))
    assert silver["by_rule"] == dict(oracle)
    assert list(silver["by_rule"].values()) == sorted(oracle.values(), reverse=True)
    by_update = Counter((row[names.QUARANTINE_UPDATE_COLUMN], row[names.QUARANTINE_TIME_COLUMN])
                        for row in rows)
    assert {(u["update"], u["started"]): u["records"] for u in silver["by_update"]} == dict(
        by_update)
    assert sorted(json.dumps(r, sort_keys=True) for r in silver["sample"]) == sorted(
        json.dumps(r, sort_keys=True) for r in rows)


def test_the_run_s_update_id_is_in_its_quarantine_records_and_its_history_rows(
        example_run: Any, tables: dict[str, list[dict[str, Any]]]) -> None:
    """``sdp-expect run`` hands its update to the pipeline: each record quarantined in the
    run names it (with its start), as do the history rows the run recorded and its JSON."""
    update = json.loads(example_run.stdout)["update_id"]
    quarantined = tables["orders_silver_quarantine"]
    assert quarantined
    assert {r[names.QUARANTINE_UPDATE_COLUMN] for r in quarantined} == {update}
    started = {r[names.QUARANTINE_TIME_COLUMN] for r in quarantined}
    assert len(started) == 1 and None not in started, started
    assert {r["update_id"] for r in tables[names.HISTORY_TABLE]} == {update}


def test_html_report_shows_every_dataset_and_rule_in_chromium(
        report: Any, tables: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    binary = find_chromium()
    if binary is None:
        pytest.fail(INSTALL_HINT)
    _, html = report
    page = html.read_text(encoding="utf-8")
    assert not re.search(r"(src|href)=\"(https?:)?//", page) and "<script" not in page
    browser = Browser(binary)
    try:
        browser.open(html)
        browser.screenshot(tmp_path / "report.png")
        text = browser.evaluate("document.body.innerText")
        # Nothing was fetched: the page is self-contained.
        assert browser.evaluate("performance.getEntriesByType('resource').length") == 0
        bars = browser.evaluate("""JSON.stringify([...document.querySelectorAll('tr[data-rule]')]
            .map(row => ({dataset: row.closest('section').dataset.dataset,
                          rule: row.dataset.rule,
                          bar: row.querySelector('.bar').getBoundingClientRect().width,
                          passed: row.querySelector('.bar .passed').getBoundingClientRect().width,
                          failed: row.querySelector('.bar .failed').getBoundingClientRect().width,
                          color: getComputedStyle(row.querySelector('.bar .failed'))
                                   .backgroundColor})))""")
        stats = browser.evaluate("""JSON.stringify([...document.querySelectorAll('section')]
            .map(s => ({dataset: s.dataset.dataset,
                        dropped: s.querySelector('.dropped-records').innerText,
                        quarantine: (s.querySelector('.quarantine-size') || {}).innerText,
                        chips: [...s.querySelectorAll('table.quarantine tbody tr')].map(
                          tr => [...tr.querySelectorAll('.chip')].map(c => c.innerText)),
                        byRule: [...s.querySelectorAll('ul.by-rule li')].map(
                          li => [li.dataset.rule, li.lastChild.textContent])})))""")
        # The run recorded one update in the history: a chart of one point per rule
        # (docs/history.md#trends-in-the-report), read by the report's own Spark process.
        trends = browser.evaluate("""JSON.stringify([...document.querySelectorAll(
            'figure.trend')].map(f => [f.closest('section').dataset.dataset, f.dataset.rule,
              f.querySelectorAll('svg.trend-chart circle.point').length,
              f.querySelector('.latest-value').textContent]))""")
    finally:
        browser.close()
    for dataset in ("orders_silver", "revenue_by_customer"):
        assert dataset in text
        for row in tables[f"{dataset}_dq_metrics"]:
            assert row["expectation"] in text and row["constraint"] in text
    shown = {(b["dataset"], b["rule"]): b for b in json.loads(bars)}
    assert len(shown) == 4
    for dataset in ("orders_silver", "revenue_by_customer"):
        for row in tables[f"{dataset}_dq_metrics"]:
            bar = shown[(dataset, row["expectation"])]
            total = row["passed_records"] + row["failed_records"]
            assert bar["bar"] > 100
            assert abs(bar["passed"] - bar["bar"] * row["passed_records"] / total) < 1.5, bar
            assert abs(bar["failed"] - bar["bar"] * row["failed_records"] / total) < 1.5, bar
    colors = {shown[("orders_silver", "recent")]["color"],
              shown[("orders_silver", "valid_id")]["color"]}
    assert len(colors) == 2  # a warn rule's failures and a drop rule's look different
    by_dataset = {s["dataset"]: s for s in json.loads(stats)}
    silver = by_dataset["orders_silver"]
    assert silver["dropped"] == str(tables["orders_silver_dq_metrics"][0]["dropped_records"])
    assert silver["quarantine"] == str(len(tables["orders_silver_quarantine"]))
    assert sorted(silver["chips"]) == sorted(row["_failed_expectations"]
                                             for row in tables["orders_silver_quarantine"])
    oracle = Counter(rule for row in tables["orders_silver_quarantine"]
                     for rule in row["_failed_expectations"])
    assert sorted(silver["byRule"]) == sorted([rule, str(n)] for rule, n in oracle.items())
    assert "sdp-expect quarantine --dataset orders_silver" in text
    assert by_dataset["revenue_by_customer"]["dropped"] == "0"
    assert sorted(json.loads(trends)) == sorted(
        [dataset, row["expectation"], 1,
         f"{100 * row['failed_records'] / row['total_records']:.1f}%"]
        for dataset in ("orders_silver", "revenue_by_customer")
        for row in tables[f"{dataset}_dq_metrics"])


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory, spark_server: SparkServer
                ) -> tuple[Any, Path, str]:
    """A run that a fail rule stops, through the shared server (``--remote``; a database of
    its own): what it shows does not depend on where Spark runs, so it starts none."""
    database = f"failing_{uuid.uuid4().hex[:8]}"
    spark_server.session().sql(f"CREATE DATABASE `{database}`")
    project = write_project(tmp_path_factory.mktemp("failing") / "project", """\
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp

        spark = SparkSession.active()

        @dp.materialized_view
        def raw():
            return spark.sql("SELECT * FROM VALUES (1, 5), (2, -3), (3, 8) AS t(id, amount)")

        @dp.materialized_view
        @dp.expect_or_fail("amount_not_negative", "amount >= 0")
        def checked():
            return spark.read.table("raw")

        @dp.materialized_view
        @dp.quarantine()
        @dp.expect("small", "amount < 8")
        @dp.expect_or_drop("positive", "amount > 0")
        def other():
            return spark.read.table("raw")
        """, configuration=f"database: {database}\n")
    return (sdp_expect("run", "--remote", spark_server.url, cwd=project / "transformations"),
            project, database)


def test_violated_fail_rule_exits_1_and_the_summary_shows_the_record(
        failing_run: tuple[Any, Path, str]) -> None:
    result, project, database = failing_run
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    line = ("[EXPECTATION_VIOLATION] Flow 'checked' failed to meet the expectation. "
            "Violated expectations: 'amount_not_negative'. "
            "Output record: '{\"id\":2,\"amount\":-3}'.")
    assert line in out
    assert out.count(f"{database}.checked is RUNNING") == 1  # not retried
    summary = out[out.index("== Data quality"):]
    assert re.search(r"checked  (materialized view, )?FAILED in this run\n"
                     r"  FAILED: expectation 'amount_not_negative' violated by the record\n"
                     r"    \{\"id\":2,\"amount\":-3\}\n", summary), summary
    assert ("other  materialized view, updated in this run\n"
            "  3 records, 1 dropped, quarantine other_quarantine: 1 records\n") in summary
    assert re.search(r"^    positive +drop +2 +1 +33\.3%$", summary, re.MULTILINE), summary
    assert re.search(r"^    small +warn +2 +1 +33\.3%$", summary, re.MULTILINE), summary
    assert out.rstrip().endswith("sdp-expect run: FAILED, 1 expectation violation "
                                 "(exit status 1)")
    assert "\x1b[" not in out
    # Not a terminal: plain progress lines, each after the events of flows that ended,
    # with the elapsed time; the last one before the summary has the final counts.
    lines = out[:out.index("== Data quality")].splitlines()
    told = [(i, m) for i, m in enumerate(map(PROGRESS.fullmatch, lines)) if m]
    assert told, out
    assert [seconds(m) for _, m in told] == sorted(seconds(m) for _, m in told)
    for index, _ in told:  # never between an event and its error line
        assert index + 1 == len(lines) or not lines[index + 1].startswith("Error: ")
    flows = {m.group(1) for m in (re.search(r"Flow (\S+) is QUEUED", line) for line in lines) if m}
    failed = {m.group(1) for m in (re.search(r"Flow '(\S+)' has FAILED", line) for line in lines)
              if m}
    assert f"spark_catalog.{database}.checked" in failed
    assert told[-1][1].group(3).startswith(f"{len(flows)}/{len(flows)} flows done · "
                                           f"failed: {len(failed)}"), told[-1][1].group(0)
    assert not any(PROGRESS.fullmatch(line) for line in out[out.index("== Data quality"):]
                   .splitlines())
    kept = json.loads((project / ".sdp-expect" / "last-summaries.json").read_text())
    assert set(kept["datasets"]) == {"other"}
    assert kept["last_run"]["violations"][0]["dataset"] == "checked"


# ---------------------------------------------------------------------------------------
# Two projects at the same time, and a warm server (issue 17)
# ---------------------------------------------------------------------------------------
def summary(document: dict[str, Any]) -> dict[str, Any]:
    """Each dataset's numbers in a run's JSON document (not the run's own details)."""
    return {d["dataset"]: {"total": d["total_records"], "dropped": d["dropped_records"],
                           "rules": [(r["expectation"], r["passed_records"],
                                      r["failed_records"]) for r in d["rules"]],
                           "quarantine": (d["quarantine"] or {}).get("records")}
            for d in document["datasets"]}


EXPECTED = {"orders_silver": {"total": 10, "dropped": 4,
                              "rules": [("recent", 7, 3), ("valid_id", 8, 2),
                                        ("valid_amount", 7, 3)],
                              "quarantine": 4},
            "revenue_by_customer": {"total": 6, "dropped": 0,
                                    "rules": [("revenue_not_negative", 6, 0)],
                                    "quarantine": None}}


def test_two_projects_run_at_the_same_time(cold_pair: ColdPair) -> None:
    projects = cold_pair.projects
    documents = []
    for code, out, err in cold_pair.outputs:
        assert code == 0, out + err
        assert "waiting" not in err
        documents.append(json.loads(out))
    first, second = documents
    # Each ran on a server of its own, on its own port: not Spark's fixed 15002
    assert first["server"]["port"] != second["server"]["port"]
    assert 15002 not in (first["server"]["port"], second["server"]["port"])
    assert not first["server"]["warm"] and not second["server"]["warm"]
    # Neither waited for the other: the two pipelines ran at the same time
    assert first["started_at"] < second["finished_at"], (first, second)
    assert second["started_at"] < first["finished_at"], (first, second)
    for project, document in zip(projects, documents, strict=True):
        assert summary(document) == EXPECTED
        assert Path(document["log"]).parent == project / ".sdp-expect" / "logs"
        assert (project / "metastore_db").is_dir() and (project / "spark-warehouse").is_dir()
        assert not process_alive(document["server"]["pid"], project)  # stopped with its run
        assert read_record(project) is None


def session(url: str, token: str) -> SparkSession:
    """A new Spark Connect session on the project's server.

    New for every reading, as every run's is: a session keeps the file listing of the
    tables it read, and a later run of the pipeline rewrites their files.
    """
    created: SparkSession = SparkSession.builder.remote(f"{url}/;token={token}").create()
    return keep_alive(created)


UPDATE_COLUMNS = (names.QUARANTINE_UPDATE_COLUMN, names.QUARANTINE_TIME_COLUMN)


def read_tables(spark: SparkSession) -> dict[str, Any]:
    """Every table of the default database: its schema and rows (not the history table
    and its view, which every run appends to: tests/test_history.py; nor the update
    that quarantined a record, which differs when a run recomputes a quarantine)."""
    found = {}
    for table in spark.catalog.listTables("default"):
        if table.name in (names.HISTORY_TABLE, names.EVENT_LOG_VIEW):
            continue
        frame = spark.table(f"default.`{table.name}`").drop(*UPDATE_COLUMNS)
        found[table.name] = (frame.schema, frame.collect())
    return found


def test_a_warm_run_writes_what_a_cold_run_writes(cold_pair: ColdPair) -> None:
    # The second copy: the example itself is reported on by the tests above, unedited.
    project = cold_pair.projects[1]
    code, out, err = cold_pair.outputs[1]
    assert code == 0, out + err
    cold_run = json.loads(out)
    assert cold_run["server"]["warm"] is False and summary(cold_run) == EXPECTED
    served = sdp_expect("serve", "--background", cwd=project)
    assert served.returncode == 0, served.stdout + served.stderr
    record = read_record(project)
    assert record is not None
    sessions: list[SparkSession] = []

    def spark() -> SparkSession:
        sessions.append(session(record.url, record.token))
        return sessions[-1]

    try:
        before = read_tables(spark())  # the cold run's tables, as it left them
        assert {"orders_silver", "orders_silver_quarantine", "orders_silver_dq_metrics",
                "revenue_by_customer_dq_metrics"} <= set(before)

        began = time.monotonic()
        warm = sdp_expect("run", "--format", "json", cwd=project)
        warm_seconds = time.monotonic() - began
        assert warm.returncode == 0, warm.stdout + warm.stderr
        warm_run = json.loads(warm.stdout)
        assert warm_run["server"] == {"url": record.url, "port": record.port,
                                      "pid": record.pid, "warm": True}
        assert "a local Spark Connect server on port" not in warm.stderr  # none started
        assert summary(warm_run) == summary(cold_run)
        reader = spark()
        after = read_tables(reader)
        assert set(after) == set(before)
        for name, (schema, rows) in before.items():
            assert_df_equality(reader.table(f"default.`{name}`").drop(*UPDATE_COLUMNS),
                               reader.createDataFrame(rows, schema),
                               ignore_row_order=True, ignore_nullable=False)

        # An edit: the warm server runs the new definition, not one it remembers
        silver = project / "transformations" / "silver.py"
        silver.write_text(silver.read_text().replace(
            "@dp.expect_from_file(", '@dp.expect("small", "amount < 100")\n@dp.expect_from_file('))
        edited = sdp_expect("run", "--format", "json", cwd=project)
        assert edited.returncode == 0, edited.stdout + edited.stderr
        rules = summary(json.loads(edited.stdout))["orders_silver"]["rules"]
        assert [name for name, _, _ in rules] == ["small", "recent", "valid_id", "valid_amount"]
        assert sorted(row["expectation"] for row in
                      spark().table("default.orders_silver_dq_metrics").collect()) == sorted(
            ["small", "recent", "valid_id", "valid_amount"])

        # The warm server holds the catalog: report reads through it
        report = sdp_expect("report", "--format", "json", cwd=project)
        assert report.returncode == 0, report.stdout + report.stderr
        assert summary(json.loads(report.stdout))["revenue_by_customer"] == \
            EXPECTED["revenue_by_customer"]
    finally:
        for opened in sessions:
            opened.stop()
        stopped = sdp_expect("serve", "--stop", cwd=project)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not process_alive(record.pid, project) and read_record(project) is None
    print(f"two cold runs at once {cold_pair.seconds:.1f} s, warm re-run {warm_seconds:.1f} s")
