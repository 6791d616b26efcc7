"""The ``sdp-expect`` run, dry-run and report commands without Spark.

``run`` and ``dry-run`` are driven against a stand-in ``spark-pipelines``
(``$SDP_EXPECT_SPARK_PIPELINES``) that writes what it was given to a file and replays
event lines, so option passing, defaults, streaming, colours and exit codes
are checked in milliseconds. The summary and the HTML page are built from
table readings written here. The true runs are in test_cli_run_report.py.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import fake_args, fake_commands, process_alive, sdp_expect

from sdp_expect import cli
from sdp_expect.base.project import Project, find_spec
from sdp_expect.base.violation import Violation
from sdp_expect.cli.quarantine import chosen_quarantines, quarantine_json, quarantine_text
from sdp_expect.quality.summary import FAILED, LAST_SUCCESS, NO_SUCCESS, UPDATED, TableReading
from sdp_expect.report.as_json import to_json
from sdp_expect.report.build import build_report, quarantine_info
from sdp_expect.report.html import render_html
from sdp_expect.report.text import to_text
from sdp_expect.runtime.spark_pipelines import EventLog, build_command, user_confs

VIOLATION_LINE = (
    "pyspark.errors.exceptions.connect.SparkRuntimeException: [USER_RAISED_EXCEPTION] "
    "[EXPECTATION_VIOLATION] Flow 'checked' failed to meet the expectation. Violated "
    "expectations: 'amount_not_negative', 'small'. Output record: '{\"id\":2,\"note\":\"it's. "
    "odd\",\"amount\":-3}'. SQLSTATE: P0001")
EVENTS = """\
2026-01-01 10:00:00: Flow spark_catalog.default.raw is QUEUED.
2026-01-01 10:00:01: Flow spark_catalog.default.checked is RUNNING.
2026-01-01 10:00:02: Flow spark_catalog.default.checked has FAILED.
Error: {violation}
  (the rest of Spark's message: plans, stack traces)
2026-01-01 10:00:03: Flow spark_catalog.default.after is SKIPPED.
2026-01-01 10:00:04: Run is FAILED.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "my project"
    (root / "transformations").mkdir(parents=True)
    (root / "spark-pipeline.yml").write_text(
        f"name: fake\nstorage: {(root / 'storage').as_uri()}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n")
    # A library must match a file (SDPX-PRJ-408); the fake spark-pipelines reads none.
    (root / "transformations" / "pipeline.py").write_text("")
    return root


@pytest.fixture
def fake_env(tmp_path: Path) -> dict[str, str]:
    return fake_commands(tmp_path)


def with_events(env: dict[str, str], tmp_path: Path, text: str, rc: int) -> dict[str, str]:
    events = tmp_path / "events.txt"
    events.write_text(text)
    return dict(env, FAKE_LINES=str(events), FAKE_RC=str(rc))


def test_dry_run_passes_options_on_and_adds_defaults_the_user_did_not_set(
        project: Path, fake_env: dict[str, str], tmp_path: Path) -> None:
    env = with_events(fake_env, tmp_path, "2026-01-01 10:00:00: Run is COMPLETED.\n", 0)
    # --port-wait: the old name of --wait, still accepted
    result = sdp_expect("dry-run", "--port-wait", "0", "--conf", "spark.sql.warehouse.dir=/wh",
                        "--full-refresh-all", "--conf=a.b=c", "-c", "x.y=z", "--master",
                        "local[2]", "--driver-memory=2g", "--spec", str(project), cwd=tmp_path,
                        env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    args = fake_args(env)
    server = fake_args(env, "FAKE_SERVER_ARGS")
    spec = str((project / "spark-pipeline.yml").resolve())
    confs = user_confs(server["argv"])
    port = int(confs["spark.connect.grpc.binding.port"])
    # spark-pipelines runs on the project's server, with its token; the options that set
    # up Spark went to the server
    assert args["argv"] == ["dry-run", "--spec", spec, "--conf", "spark.sql.warehouse.dir=/wh",
                            "--full-refresh-all", "--conf=a.b=c", "-c", "x.y=z",
                            "--remote", f"sc://localhost:{port}"]
    assert args["token"] and args["token"] == server["token"]
    assert args["connect"] is None  # a Spark Connect client's state is not inherited
    argv = server["argv"]
    assert argv[:2] == ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    assert argv[argv.index("--master") + 1] == "local[2]" and argv.count("--master") == 1
    assert "--driver-memory=2g" in argv and argv[-1] == "spark-internal"
    assert confs["spark.sql.warehouse.dir"] == "/wh" and confs["a.b"] == "c"
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    folder = str(project.resolve())
    assert confs["spark.sdp_expect.server.project"] == folder
    opts = server["opts"]
    assert "-Dspark.sql.catalogImplementation=hive" in opts
    assert (f'"-Dspark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName='
            f'{folder}/metastore_db;create=true"') in opts
    assert f'"-Dderby.system.home={folder}"' in opts and "-Dspark.log.level=WARN" in opts
    # a run killed during a flow's first offsets write must not block the next one
    assert "-Dspark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart=false" in opts
    # The user's --conf wins over the default (it is not a property: it is a --conf)
    assert "spark-warehouse" not in opts and "-Da.b=c" not in opts
    assert server["pythonpath"].split(os.pathsep)[0] == folder
    assert args["pythonpath"].split(os.pathsep)[0] == folder
    assert "Run is COMPLETED" in result.stdout
    assert result.stdout.rstrip().endswith("sdp-expect dry-run: COMPLETED (exit status 0)")
    assert "Data quality" not in result.stdout
    assert "\x1b[" not in result.stdout
    # The run's server is gone with it, and so is its record
    assert not process_alive(server["pid"], project)
    assert not (project / ".sdp-expect" / "server.json").exists()


def test_run_with_remote_adds_no_local_catalog(project: Path, fake_env: dict[str, str],
                                               tmp_path: Path) -> None:
    result = sdp_expect("run", "--no-summary", "--remote", "sc://localhost:1", cwd=project,
                        env=fake_env)
    assert result.returncode == 0, result.stdout + result.stderr
    args = fake_args(fake_env)
    assert args["argv"][-2:] == ["--remote", "sc://localhost:1"]
    assert not args["opts"]


def test_violation_is_shown_with_its_record_and_exit_status_1(
        project: Path, fake_env: dict[str, str], tmp_path: Path) -> None:
    env = with_events(fake_env, tmp_path, EVENTS.format(violation=VIOLATION_LINE), 1)
    result = sdp_expect("run", "--port-wait", "0", "--no-summary", cwd=project, env=env)
    assert result.returncode == 1
    out = result.stdout
    assert "Error: " + VIOLATION_LINE in out  # streamed as it came
    assert "the rest of Spark's message" not in out  # that is in the log file only
    summary = out[out.index("== Expectation violations"):]
    assert "FAILED: expectations 'amount_not_negative', 'small' violated by the record" in summary
    assert '{"id":2,"note":"it\'s. odd","amount":-3}' in summary
    assert out.rstrip().endswith("sdp-expect run: FAILED, 1 expectation violation "
                                 "(exit status 1)")
    assert "\x1b[" not in out

    colored = sdp_expect("run", "--port-wait", "0", "--no-summary", "--color", "always",
                         cwd=project, env=env)
    assert "\x1b[1;31mError: " + VIOLATION_LINE + "\x1b[0m" in colored.stdout
    assert "\x1b[31m2026-01-01 10:00:02: Flow spark_catalog.default.checked has FAILED.\x1b[0m" \
        in colored.stdout


def test_json_format_keeps_stdout_for_the_document(project: Path, fake_env: dict[str, str],
                                                    tmp_path: Path) -> None:
    env = with_events(fake_env, tmp_path, EVENTS.format(violation=VIOLATION_LINE), 1)
    result = sdp_expect("run", "--port-wait", "0", "--no-summary", "--format", "json",
                        cwd=project, env=env)
    assert result.returncode == 1
    document = json.loads(result.stdout)
    assert document["exit_code"] == 1 and document["status"] == "FAILED"
    assert document["violations"] == [{"dataset": "checked",
                                       "expectations": ["amount_not_negative", "small"],
                                       "record": {"id": 2, "note": "it's. odd", "amount": -3}}]
    assert document["flows"]["spark_catalog.default.after"] == "SKIPPED"
    assert VIOLATION_LINE in result.stderr  # the events went to stderr


@pytest.mark.parametrize(("child", "expected"), [(2, 2), (3, 1), (1, 1)])
def test_exit_status_of_spark_pipelines(project: Path, fake_env: dict[str, str], tmp_path: Path,
                                        child: int, expected: int) -> None:
    env = with_events(fake_env, tmp_path, "", child)
    result = sdp_expect("dry-run", "--port-wait", "0", cwd=project, env=env)
    assert result.returncode == expected


def test_usage_errors_exit_2(tmp_path: Path, fake_env: dict[str, str]) -> None:
    nowhere = sdp_expect("run", cwd=tmp_path, env=fake_env)
    assert nowhere.returncode == 2
    assert "no spark-pipeline.yml" in nowhere.stderr and "--spec" in nowhere.stderr
    missing = sdp_expect("report", "--spec", "missing.yml", cwd=tmp_path, env=fake_env)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert sdp_expect("migrate", str(tmp_path / "nope"), str(tmp_path / "out"),
                      cwd=tmp_path).returncode == 2
    assert sdp_expect("report", "--bogus", cwd=tmp_path).returncode == 2
    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text("name: p\n")
    negative = sdp_expect("quarantine", "--sample", "-1", cwd=tmp_path, env=fake_env)
    assert negative.returncode == 2 and "--sample must be 0 or more" in negative.stderr


def test_every_command_explains_itself() -> None:
    assert cli.main(["--version"]) == 0
    for command in ("run", "dry-run", "report", "quarantine", "migrate"):
        with pytest.raises(SystemExit) as done:
            cli.build_parser().parse_args([command, "--help"])
        assert done.value.code == 0
    result = sdp_expect("--help", cwd=Path.cwd())
    assert "Exit status: 0 ok; 1" in result.stdout
    for command in ("run", "dry-run", "report", "quarantine", "migrate"):
        assert command in result.stdout
        help_text = sdp_expect(command, "--help", cwd=Path.cwd()).stdout
        assert "Exit status: 0" in help_text and "2 usage error" in help_text


def test_spec_is_found_in_parent_folders_and_relative_spec_is_absolute(project: Path) -> None:
    inner = project / "transformations"
    assert find_spec(None, inner) == (project / "spark-pipeline.yml").resolve()
    invocation = build_command("run", Project(spec=find_spec(str(project))), [],
                               executable="spark-pipelines", environ={"PATH": "/bin"})
    assert invocation.command[:3] == ["spark-pipelines", "run", "--spec"]
    assert Path(invocation.command[3]).is_absolute()
    assert invocation.confs["spark.sql.catalogImplementation"] == "hive"


def test_event_log_reads_states_and_violations_once() -> None:
    log = EventLog()
    for line in [*EVENTS.format(violation=VIOLATION_LINE).splitlines(), VIOLATION_LINE]:
        log.feed(line)
    assert log.run_state == "FAILED"
    assert log.flows == {"spark_catalog.default.raw": "QUEUED",
                         "spark_catalog.default.checked": "FAILED",
                         "spark_catalog.default.after": "SKIPPED"}
    assert log.violations == [Violation("checked", ("amount_not_negative", "small"),
                                        '{"id":2,"note":"it\'s. odd","amount":-3}')]


# --------------------------------------------------------------------------- summaries


def metrics(dataset: str, rows: list[tuple[str, str, int, int]], dropped: int,
            comment: str = "") -> dict[str, Any]:
    total = rows[0][2] + rows[0][3] if rows else 0
    return {"table": f"{dataset}_dq_metrics", "comment": comment, "rows": [
        {"dataset": dataset, "expectation": name, "action": action, "constraint": f"{name} ok",
         "passed_records": passed, "failed_records": failed, "total_records": total,
         "dropped_records": dropped} for name, action, passed, failed in rows]}


READING = TableReading(
    catalog="spark_catalog", database="default",
    metrics=[metrics("orders", [("recent", "warn", 7, 3), ("valid_id", "drop", 8, 2)], 2),
             metrics("events", [("positive", "drop", 0, 0)], 0,
                     "Data-quality metrics of events, cumulative since its last full refresh"),
             metrics("gold", [], 0)],
    quarantines=[{"table": "orders_quarantine", "dataset": "orders", "records": 2,
                  "by_rule": {"valid_id": 2, "recent": 1},
                  "by_update": [{"update": "u-2", "started": "2026-12-07 21:40:00.000001",
                                 "records": 1},
                                {"update": None, "started": None, "records": 1}],
                  "columns": ["id", "_failed_expectations"],
                  "sample": [{"id": None, "_failed_expectations": ["recent", "valid_id"]},
                             {"id": 5, "_failed_expectations": ["valid_id"]}]}],
    notes=[])


def test_run_summary_text_and_json() -> None:
    violation = Violation("gold", ("positive_revenue",), '{"revenue":-1}')
    report = build_report(READING, flows={"spark_catalog.default.orders_dq_metrics": "COMPLETED",
                                          "spark_catalog.default.gold": "FAILED"},
                          violations=[violation], run_status="FAILED")
    states = {d.dataset: d.status for d in report.datasets}
    assert states == {"events": "not run", "gold": FAILED, "orders": UPDATED}
    text = to_text(report)
    assert "\x1b[" not in text
    assert textwrap.dedent("""\
        orders  materialized view, updated in this run
          10 records, 2 dropped, quarantine orders_quarantine: 2 records
            rule      action  passed  failed  failed %
            recent    warn         7       3     30.0%
            valid_id  drop         8       2     20.0%
        """) in text
    assert "events  streaming table, counts since its last full refresh" in text
    assert "    positive  drop         0       0         -" in text
    assert ("gold  materialized view, FAILED in this run\n"
            "  FAILED: expectation 'positive_revenue' violated by the record\n"
            '    {"revenue":-1}\n'
            "  no metrics: a failed update records none") in text
    assert "\x1b[1;31m" in to_text(report, color=True)
    document = json.loads(to_json(report))
    orders = next(d for d in document["datasets"] if d["dataset"] == "orders")
    assert orders["rules"][0] == {"expectation": "recent", "action": "warn",
                                  "constraint": "recent ok", "passed_records": 7,
                                  "failed_records": 3, "total_records": 10,
                                  "failure_percentage": 30.0, "max_failed": None,
                                  "tolerance_exceeded": None}
    assert orders["quarantine"]["records"] == 2 and orders["dropped_records"] == 2
    assert document["violations"][0]["record"] == {"revenue": -1}


def test_quarantine_shows_the_records_per_failed_rule_and_a_sample() -> None:
    found = chosen_quarantines(READING, None)
    assert [(dataset, q.table, q.records, q.by_rule) for dataset, q in found] == [
        ("orders", "orders_quarantine", 2, {"valid_id": 2, "recent": 1})]
    assert chosen_quarantines(READING, "orders") == found
    text = quarantine_text(READING, found)
    assert textwrap.dedent("""\
        == Quarantines in spark_catalog.default

        orders_quarantine  dataset orders: 2 records
          failed rule  records
          valid_id           2
          recent             1
          update       started                     records
          u-2          2026-12-07 21:40:00.000001        1
          (not named)                                    1
          sample (2 of 2):
            {"id": null, "_failed_expectations": ["recent", "valid_id"]}
            {"id": 5, "_failed_expectations": ["valid_id"]}
        """) == text
    document = json.loads(quarantine_json(READING, found, spec="/p/spark-pipeline.yml"))
    assert document["command"] == "quarantine" and document["database"] == "default"
    assert document["quarantines"] == [{
        "dataset": "orders", "table": "orders_quarantine", "records": 2,
        "by_rule": {"valid_id": 2, "recent": 1},
        "by_update": READING.quarantines[0]["by_update"],
        "columns": ["id", "_failed_expectations"],
        "sample": READING.quarantines[0]["sample"]}]
    # `report --format json` carries the counts per rule too.
    orders = next(d for d in json.loads(to_json(build_report(READING)))["datasets"]
                  if d["dataset"] == "orders")
    assert orders["quarantine"]["by_rule"] == {"valid_id": 2, "recent": 1}
    assert orders["quarantine"]["by_update"] == READING.quarantines[0]["by_update"]


def test_quarantine_of_a_dataset_without_one_names_those_that_have_one() -> None:
    with pytest.raises(LookupError) as missing:
        chosen_quarantines(READING, "events")
    assert str(missing.value).startswith(
        "dataset 'events' has no quarantine in spark_catalog.default "
        "(datasets with one: orders); a dataset has one with @dp.quarantine()")
    # The run's summary does not count the quarantines per rule: not counted, not "none".
    assert quarantine_info({"table": "t", "records": 3}).by_rule is None
    assert quarantine_info({"table": "t", "records": 3}).by_update is None
    empty = TableReading(catalog="c", database="d", metrics=[], quarantines=[], notes=[])
    assert "no quarantine: no dataset has one" in quarantine_text(empty, [])


def test_report_uses_kept_numbers_for_a_dataset_emptied_by_a_failed_update() -> None:
    history = {"datasets": {"gold": {"recorded_at": "2026-01-01T10:00:00+00:00", "summary": {
        "total_records": 4, "dropped_records": 0, "streaming": False,
        "rules": [{"expectation": "positive_revenue", "action": "fail", "constraint": "r > 0",
                   "passed_records": 4, "failed_records": 0}]}}},
        "last_run": {"violations": [{"dataset": "gold", "expectations": ["positive_revenue"],
                                     "record": '{"revenue":-1}'}]}}
    report = build_report(READING, last_summaries=history)
    gold = report.dataset("gold")
    assert gold is not None and gold.status == LAST_SUCCESS
    assert gold.recorded_at == "2026-01-01T10:00:00+00:00"
    assert [r.passed_records for r in gold.rules] == [4]
    assert gold.violations[0].record == '{"revenue":-1}'
    assert "kept by sdp-expect run at 2026-01-01T10:00:00+00:00" in to_text(report)
    assert build_report(READING).dataset("gold").status == NO_SUCCESS  # type: ignore[union-attr]


def test_html_page_escapes_names_and_loads_nothing() -> None:
    reading = TableReading(catalog="c", database="d", metrics=[
        metrics("<script>alert(1)</script>", [("a<b", "warn", 1, 1)], 0)], quarantines=[],
        notes=[])
    page = render_html(build_report(reading), pipeline="p&q")
    assert "<script>" not in page and "&lt;script&gt;" in page and "a&lt;b" in page
    assert "http://" not in page and "https://" not in page and "url(" not in page
    assert page.startswith("<!DOCTYPE html>") and "<title>Data quality · p&amp;q</title>" in page


def test_report_before_any_run_says_so_without_starting_spark(project: Path) -> None:
    result = sdp_expect("report", "--html", str(project / "dq.html"), cwd=project)
    assert result.returncode == 1
    assert "no catalog in" in result.stderr and "sdp-expect run" in result.stderr
    assert not (project / "metastore_db").exists() and not (project / "dq.html").exists()


def test_a_new_catalog_with_another_catalog_s_checkpoints_is_refused_until_a_full_refresh(
        project: Path, fake_env: dict[str, str], tmp_path: Path) -> None:
    """A second clone of a project (or one whose metastore_db/ was deleted) shares the
    spec's absolute storage: its streaming flows would resume another catalog's
    checkpoints (seen: `Wrong basePath` for the Delta example run from a second clone).
    The run stops before Spark starts, with SDPX-PRJ-409, until it refreshes the tables
    that have checkpoints; a catalog that already exists is never refused."""
    env = with_events(fake_env, tmp_path, "2026-01-01 10:00:00: Run is COMPLETED.\n", 0)
    for table in ("orders", "events"):
        (project / "storage" / "_checkpoints" / "spark_catalog" / "default" / table / "flow"
         / "0").mkdir(parents=True)

    def run(*options: str) -> Any:
        return sdp_expect("run", "--no-summary", "--wait", "0", *options, "--spec",
                          str(project), cwd=tmp_path, env=env)

    refused = run()
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "SDPX-PRJ-409" in refused.stderr
    assert "spark_catalog.default.events, spark_catalog.default.orders" in refused.stderr
    assert "--full-refresh-all" in refused.stderr
    assert not Path(env["FAKE_ARGS"]).exists()  # nothing started
    partly = run("--full-refresh", "orders")
    assert partly.returncode == 1 and "spark_catalog.default.events from" in partly.stderr
    assert "default.orders" not in partly.stderr
    for options in (["--full-refresh-all"], ["--full-refresh", "default.events,orders"]):
        ran = run(*options)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert fake_args(env)["argv"][0] == "run"
    (project / "metastore_db").mkdir()  # the catalog exists: its own checkpoints resume
    assert run().returncode == 0
    (project / "metastore_db").rmdir()
    assert run("--remote", "sc://localhost:1").returncode == 0  # another catalog's run
