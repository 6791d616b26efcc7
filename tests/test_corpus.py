"""A corpus of real-style Lakeflow / DLT pipelines, run over three updates each.

``tests/corpus/<name>/`` holds small projects written as users of Lakeflow
(Delta Live Tables) write them: ``spark-pipeline.yml`` (libraries and
configuration), transformation files (``import dlt`` Python, ``pyspark.pipelines``
Python, an exported Python notebook, exported SQL notebooks included with
``sql.include``), rule files, and ``arrivals/<update>/<source>/`` the files that
land before each update (``arrivals/fail/`` before a fourth update that violates
a fail rule).

Each project runs as a graph of the shared Spark Connect server
(``sdp_runner``, which loads the files as ``spark-pipelines`` does), three
updates with new files landing before each; after every update every table
of its catalog (targets, quarantines, ``_dq_batches``, ``_dq_metrics``) is read
with Spark and compared, row for row and count for count, with the
plain-Python oracle of ``corpus_oracle.py``. Two projects also run through the
true ``sdp-expect run`` command line (marker ``cli``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import OLDEST_LINE, sdp_expect, served, set_storage
from corpus_oracle import ORACLES, Expected, Table, batch_log_sums
from sdp_runner import Pipeline, RunResult, SparkServer, copy_project

from sdp_expect.names import EVENT_LOG_VIEW, HISTORY_TABLE

# The true command-line runs (2 min each) run on one line, the lowest (4.1), to keep CI
# within its time; the same projects run as graphs on every line above.
CORPUS = Path(__file__).resolve().parent / "corpus"
UPDATES = ("1", "2", "3")


# ---------------------------------------------------------------------------------------
# Projects
# ---------------------------------------------------------------------------------------
def spec_of(project: Path) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((project / "spark-pipeline.yml").read_text())
    return spec


def land(name: str, update: str, landing: Path) -> None:
    """The files of one update arrive in the landing folder."""
    arrivals = CORPUS / name / "arrivals" / update
    assert arrivals.is_dir(), arrivals
    for source in arrivals.iterdir():
        target = landing / source.name
        target.mkdir(parents=True, exist_ok=True)
        for file in source.iterdir():
            assert not (target / file.name).exists(), f"{file} landed twice"
            shutil.copy(file, target / file.name)


@dataclass
class CorpusProject:
    """One corpus project, copied, as a pipeline of the shared server."""

    name: str
    root: Path
    landing: Path
    pipeline: Pipeline
    snapshots: list[dict[str, Table]] = field(default_factory=list)
    expected: list[Expected] = field(default_factory=list)


def open_project(server: SparkServer, name: str, tmp: Path) -> CorpusProject:
    root = copy_project(CORPUS / name, tmp / name)
    spec = spec_of(root)
    # The harness loads transformations/ the way the spec's glob does.
    assert spec["libraries"] == [{"glob": {"include": "transformations/**"}}], spec
    landing = tmp / f"{name}-landing"
    landing.mkdir()
    conf = {key: str(value) for key, value in spec.get("configuration", {}).items()}
    conf["corpus.landing"] = str(landing)
    pipeline = Pipeline(server, tmp / f"{name}-runs", files=root / "transformations", conf=conf)
    return CorpusProject(name, root, landing, pipeline)


# ---------------------------------------------------------------------------------------
# Comparing the catalog with the oracle
# ---------------------------------------------------------------------------------------
def snapshot(result: RunResult) -> dict[str, Table]:
    """Every table of the pipeline's database, read through Spark (a batch log summed,
    as the oracle gives it: its rows depend on the micro-batches)."""
    tables = {}
    for table in result.spark.catalog.listTables(result.database):
        frame = result.table(table.name)
        if table.name.endswith("_dq_batches"):
            tables[table.name] = batch_log_sums(row.asDict() for row in frame.collect())
            continue
        tables[table.name] = Table(tuple(frame.columns), [tuple(row) for row in frame.collect()])
    return tables


def canonical(value: Any) -> Any:
    """One spelling per SQL value: 1, 1.0 and 1.00 of a DECIMAL are one number."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, Decimal)):
        return Decimal(value).normalize()
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return value


def records(table: Table) -> Counter[str]:
    return Counter(repr(tuple(canonical(v) for v in row)) for row in table.rows)


def assert_tables_equal(actual: dict[str, Table], expected: dict[str, Table], context: str
                        ) -> None:
    assert sorted(actual) == sorted(expected), f"{context}: the catalog's tables differ"
    problems = []
    for name in sorted(expected):
        want, got = expected[name], actual[name]
        if got.columns != want.columns:
            problems.append(f"{name}: columns {got.columns} != {want.columns}")
            continue
        missing, extra = records(want) - records(got), records(got) - records(want)
        if missing or extra:
            problems.append(f"{name} {want.columns}:\n    missing {sorted(missing.elements())}"
                            f"\n    unexpected {sorted(extra.elements())}")
    assert not problems, f"{context}:\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------------------------------
# Three updates of every project
# ---------------------------------------------------------------------------------------
_PROJECTS: dict[str, CorpusProject] = {}


@pytest.fixture(scope="module")
def corpus_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


def three_updates(server: SparkServer, tmp: Path, name: str) -> CorpusProject:
    """The project after three updates (run once per test session)."""
    if name not in _PROJECTS:
        project = open_project(server, name, tmp)
        for update in UPDATES:
            land(name, update, project.landing)
            result = project.pipeline.run()
            assert result.ok, f"{name}, update {update}: {result.output[-6000:]}"
            project.snapshots.append(snapshot(result))
            expected = ORACLES[name](project.landing)
            assert not expected.violations, (
                f"{name}, update {update}: the corpus data must not violate fail rules here: "
                f"{expected.violations}")
            project.expected.append(expected)
        _PROJECTS[name] = project
    return _PROJECTS[name]


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_every_table_after_each_of_three_updates(spark_server: SparkServer, corpus_tmp: Path,
                                                 name: str) -> None:
    project = three_updates(spark_server, corpus_tmp, name)
    for update, actual, expected in zip(UPDATES, project.snapshots, project.expected,
                                        strict=True):
        assert_tables_equal(actual, expected.tables, f"{name}, after update {update}")


def test_the_corpus_covers_what_it_is_for() -> None:
    """The corpus keeps its coverage: styles, spellings and settings (a textual check)."""
    text = {path.relative_to(CORPUS).as_posix(): path.read_text()
            for path in CORPUS.rglob("*") if path.suffix in (".py", ".sql", ".yml")}
    python = "\n".join(t for p, t in text.items() if p.endswith(".py"))
    sql = "\n".join(t for p, t in text.items() if p.endswith(".sql"))
    for needle in ["from sdp_expect import dlt", "from sdp_expect import pipelines as dp",
                   "dlt.table", "dlt.view", "dlt.read(", "dlt.read_stream(",
                   "dlt.create_streaming_table(", "dlt.append_flow(", "dlt.expect_all_or_drop(",
                   "dlt.expect_or_fail(", "dp.expect_from_file(", "dp.temporary_view",
                   "withColumn(", "withColumns(", "withColumnRenamed(", "unionByName(",
                   '"left"', '"inner"', '"full"', "groupBy(", "sql.include("]:
        assert needle in python, needle
    notebooks = [t for t in text.values() if t.startswith("# Databricks notebook source")]
    assert notebooks and all("# COMMAND ----------" in t and "# MAGIC %md" in t
                             for t in notebooks)
    sql_notebooks = [t for p, t in text.items() if p.endswith(".sql")]
    assert len(sql_notebooks) >= 3
    assert all(t.startswith("-- Databricks notebook source") for t in sql_notebooks)
    for statement in re.split(r"^-- COMMAND -+$", sql, flags=re.MULTILINE):
        assert not statement.rstrip().endswith(";"), statement
    for needle in ["CREATE OR REFRESH STREAMING TABLE", "CREATE OR REFRESH MATERIALIZED VIEW",
                   "CREATE OR REFRESH LIVE TABLE", "CREATE STREAMING LIVE TABLE",
                   "CREATE LIVE TABLE", "CREATE TEMPORARY LIVE VIEW",
                   "CREATE INCREMENTAL LIVE TABLE", "ON VIOLATION DROP ROW",
                   "ON VIOLATION FAIL UPDATE", "STREAM(LIVE.", "FULL OUTER JOIN", "LEFT JOIN",
                   "'sdp_expect.quarantine' = 'true'"]:
        assert needle in sql, needle


# ---------------------------------------------------------------------------------------
# A fourth update that violates a fail rule, one per family
# ---------------------------------------------------------------------------------------
VIOLATION = re.compile(r"\[EXPECTATION_VIOLATION\] Flow '([^']+)' failed to meet the "
                       r"expectation\. Violated expectations: '([^']*)'\. Output record: '(.*?)'\.")


@dataclass(frozen=True)
class FailCase:
    name: str
    dataset: str  # the dataset whose fail rule the new files violate
    streaming: bool
    # Materialized views downstream of it: SDP skips their flows.
    skipped: tuple[str, ...]


FAIL_CASES = [
    # Delta Live Tables Python: a payment larger than what the loan still owes.
    FailCase("loans", "loan_balances", streaming=False, skipped=()),
    # pyspark.pipelines Python: a ride without a start station.
    FailCase("bike_rides", "rides_clean", streaming=True,
             skipped=("station_daily_flow", "member_usage")),
    # Databricks SQL notebooks: an order without a customer.
    FailCase("retail_orders", "orders_silver", streaming=True,
             skipped=("order_totals", "sales_by_country", "customer_orders")),
]


def companions(dataset: str) -> list[str]:
    return [dataset, f"{dataset}_quarantine", f"{dataset}_dq_batches", f"{dataset}_dq_metrics"]


@pytest.mark.parametrize("case", FAIL_CASES, ids=[c.name for c in FAIL_CASES])
def test_a_fourth_update_that_violates_a_fail_rule(spark_server: SparkServer, corpus_tmp: Path,
                                                   case: FailCase) -> None:
    project = three_updates(spark_server, corpus_tmp, case.name)
    before = project.expected[-1].tables
    land(case.name, "fail", project.landing)
    result = project.pipeline.run()
    assert not result.ok, f"{case.name}: the update should fail"
    expected = ORACLES[case.name](project.landing)
    assert set(expected.violations) == {case.dataset}, expected.violations

    # The error line names the flow, the violated fail rules and a violating record.
    reports = [m for m in VIOLATION.finditer(result.output)]
    assert reports, result.output[-4000:]
    for flow, names, record in {(m[1], m[2], m[3]) for m in reports}:
        assert flow == case.dataset, flow
        shown = json.loads(record)
        candidates = [(n, row) for n, row in expected.violations[case.dataset]
                      if all(_same(row[k], v) for k, v in shown.items() if k in row)]
        assert candidates, f"{record} violates no fail rule of {case.dataset}"
        assert names in {n for n, _ in candidates}, (names, candidates)
    assert result.flow_state(case.dataset) == "FAILED", result.flow_events(case.dataset)
    for dataset in case.skipped:
        assert result.flow_state(dataset) == "SKIPPED", (dataset, result.flow_events(dataset))

    # What each table holds (README, "Coming from Databricks"): the failed dataset wrote
    # nothing of this update (a streaming table keeps its earlier batches, a materialized
    # view is empty) and its metrics are empty; the materialized views SDP skipped are
    # empty too (OSS SDP resets every materialized view when the update starts); every
    # other dataset holds this update's data.
    wanted = dict(expected.tables)
    for dataset, streaming in [(case.dataset, case.streaming),
                               *((d, False) for d in case.skipped)]:
        for table in companions(dataset):
            if table not in wanted:
                continue
            if table.endswith("_dq_metrics") or not streaming:
                wanted[table] = Table(wanted[table].columns, [])
            else:
                wanted[table] = before[table]
    assert_tables_equal(snapshot(result), wanted, f"{case.name}, failed fourth update")


def _same(value: Any, shown: Any) -> bool:
    """Whether a value of the error line's record (JSON) is the oracle's value."""
    if isinstance(value, dt.date):  # and datetime: "2024-06-04T08:00:00.000Z"
        return isinstance(shown, str) and shown.startswith(value.isoformat())
    if isinstance(shown, float):
        shown = Decimal(str(shown))
    return bool(canonical(value) == canonical(shown))


# ---------------------------------------------------------------------------------------
# The true command line: sdp-expect run, three updates
# ---------------------------------------------------------------------------------------
def cli_project(name: str, tmp: Path) -> tuple[Path, Path]:
    project = copy_project(CORPUS / name, tmp / name)
    landing = tmp / "landing"
    landing.mkdir()
    set_storage(project, tmp / "storage")
    spec = project / "spark-pipeline.yml"
    spec.write_text("\n".join(
        f"  corpus.landing: {landing}" if line.strip().startswith("corpus.landing:") else line
        for line in spec.read_text().splitlines()) + "\n")
    return project, landing


def metrics_of(expected: Expected) -> dict[str, dict[str, dict[str, Any]]]:
    """dataset -> rule -> its expected metrics row."""
    shown: dict[str, dict[str, dict[str, Any]]] = {}
    for name, table in expected.tables.items():
        if name.endswith("_dq_metrics"):
            for row in table.rows:
                record = dict(zip(table.columns, row, strict=True))
                shown.setdefault(record["dataset"], {})[record["expectation"]] = record
    return shown


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1800)
@OLDEST_LINE  # the 4.1 line selects it (-m ... or oldest_line), docs/testing.md
def test_cli_runs_the_dlt_loans_project_three_times(tmp_path: Path) -> None:
    """``sdp-expect run --format json``: exit status 0 and the oracle's numbers each time
    (through the project's warm server, ``serve``: one server start for the three runs)."""
    project, landing = cli_project("loans", tmp_path)
    with served(project, keep_tables=True) as warm:
        for update in UPDATES:
            _loans_update(project, landing, update, tmp_path)
    assert_catalog_sizes(warm.tables, ORACLES["loans"](landing))


def _loans_update(project: Path, landing: Path, update: str, tmp_path: Path) -> None:
    """One ``sdp-expect run`` of the loans project after ``update`` landed: the oracle's
    numbers."""
    land("loans", update, landing)
    done = sdp_expect("run", "--spec", str(project), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, f"update {update}:\n{done.stdout}\n{done.stderr[-6000:]}"
    summary = json.loads(done.stdout)
    assert summary["status"] == "COMPLETED" and summary["violations"] == []
    assert summary["server"]["warm"] is True
    expected = ORACLES["loans"](landing)
    want = metrics_of(expected)
    shown = {d["dataset"]: d for d in summary["datasets"]}
    assert set(shown) == set(want), f"update {update}"
    for dataset, rules in want.items():
        got = shown[dataset]
        assert got["status"] == "updated", (update, got)
        assert got["streaming"] == (f"{dataset}_dq_batches" in expected.tables)
        assert {r["expectation"]: (r["action"], r["constraint"], r["passed_records"],
                                   r["failed_records"], r["total_records"])
                for r in got["rules"]} == {
            rule: (m["action"], m["constraint"], m["passed_records"], m["failed_records"],
                   m["total_records"]) for rule, m in rules.items()}, (update, dataset)
        any_rule = next(iter(rules.values()))
        assert (got["total_records"], got["dropped_records"]) == (
            any_rule["total_records"], any_rule["dropped_records"]), (update, dataset)
        quarantine = expected.tables.get(f"{dataset}_quarantine")
        if quarantine is None:
            assert got["quarantine"] is None, (update, got)
        else:
            assert got["quarantine"]["records"] == len(quarantine.rows), (update, dataset)


def assert_catalog_sizes(actual: dict[str, list[dict[str, Any]]], expected: Expected) -> None:
    """The project's catalog, read by a plain Spark session, has the oracle's tables with
    as many rows; a batch log (its rows depend on the micro-batches) sums as the oracle's."""
    def log(name: str) -> bool:
        return name.endswith("_dq_batches")

    # The history table and its view grow with every run, not with the pipeline's data
    # (they are not pipeline datasets; tests/test_history.py checks them).
    history = {HISTORY_TABLE, EVENT_LOG_VIEW}
    assert {name: batch_log_sums(rows).rows if log(name) else len(rows)
            for name, rows in actual.items() if name not in history} == {
        name: table.rows if log(name) else len(table.rows)
        for name, table in expected.tables.items()}


def summary_lines(expected: Expected) -> list[str]:
    """The lines the text summary must show for each rule, as regular expressions."""
    lines = []
    for dataset, rules in metrics_of(expected).items():
        any_rule = next(iter(rules.values()))
        head = f"{any_rule['total_records']} records, {any_rule['dropped_records']} dropped"
        quarantine = expected.tables.get(f"{dataset}_quarantine")
        if quarantine is not None:
            head += f", quarantine {dataset}_quarantine: {len(quarantine.rows)} records"
        lines.append(rf"^{re.escape(dataset)}  (materialized view|streaming table)[^\n]*\n"
                     rf"  {re.escape(head)}$")
        for rule, m in rules.items():
            total = m["total_records"]
            percent = f"{100 * m['failed_records'] / total:.1f}%" if total else ""
            lines.append(rf"^    {re.escape(rule)}\s+{m['action']}\s+{m['passed_records']}\s+"
                         rf"{m['failed_records']}\s+{re.escape(percent)}")
    return lines


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1800)
@OLDEST_LINE  # the 4.1 line selects it (-m ... or oldest_line), docs/testing.md
def test_cli_runs_the_sql_notebook_project_three_times(tmp_path: Path) -> None:
    """``sdp-expect run`` (text) on SQL notebooks: exit status 0 and the oracle's summary
    (through the project's warm server, as above)."""
    project, landing = cli_project("retail_orders", tmp_path)
    with served(project, keep_tables=True) as warm:
        for update in UPDATES:
            land("retail_orders", update, landing)
            done = sdp_expect("run", "--spec", str(project), cwd=tmp_path)
            output = done.stdout
            assert done.returncode == 0, f"update {update}:\n{output}\n{done.stderr[-6000:]}"
            assert output.rstrip().endswith("sdp-expect run: COMPLETED (exit status 0)"), output
            assert "the project's Spark Connect server (sdp-expect serve" in output + done.stderr
            expected = ORACLES["retail_orders"](landing)
            summary = output[output.index("== Data quality"):]
            count = len(metrics_of(expected))
            assert f"{count} datasets with expectations" in summary, summary
            for line in summary_lines(expected):
                assert re.search(line, summary, flags=re.MULTILINE), (update, line, summary)
    assert_catalog_sizes(warm.tables, ORACLES["retail_orders"](landing))

