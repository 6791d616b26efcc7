"""Summaries from structure (issue 11): one failure is one violation, everywhere.

When a fail expectation stops a streaming flow, Spark prints the error many
times and also the query plan, which quotes the message's SQL. ``sdp-expect
run`` must report exactly the one violation, with its dataset, rule names and
record, and ``report`` (text, JSON and HTML) must show the same one.

The output of real failing runs is kept in ``tests/fixtures/spark_output``, one
file per Spark line and kind of dataset, captured by
``tests/fixtures/spark_output/capture.py`` (see there to regenerate them). Each
run's data has one violating record: it violates ``valid_amount`` and
``it's, 'odd'`` and its note is shaped like a violation message. The tests
feed those files to the reader of ``sdp-expect run``, to the summary and the
report, and to the real ``sdp-expect run`` command (through a stand-in
``spark-pipelines`` that replays them); one true run of a failing streaming
table on the newest Spark line checks the whole chain.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pyspark
import pytest
from cli_helpers import REPO, replaying_project, sdp_expect, served

from sdp_expect.base.violation import TAG, Violation, find_all
from sdp_expect.quality.summary import FAILED, LAST_SUCCESS, NO_SUCCESS, TableReading
from sdp_expect.report.as_json import report_dict
from sdp_expect.report.build import build_report
from sdp_expect.report.html import render_html
from sdp_expect.report.last_summaries import load_last_summaries, save_last_summaries
from sdp_expect.report.text import to_text
from sdp_expect.runtime.spark_pipelines import EventLog

FIXTURES = REPO / "tests" / "fixtures" / "spark_output"
CAPTURES = sorted(FIXTURES.glob("pyspark-*-*.txt"))
DATASETS = {"streaming": "orders_stream", "materialized_view": "orders_silver"}
NAMES = ("valid_amount", "it's, 'odd'")
RECORD = ('{"order_id":3,"amount":-12.0,"note":"it\'s. odd [EXPECTATION_VIOLATION] Flow \'x\' '
          "failed to meet the expectation. Violated expectations: 'y'. Output record: '{}'. "
          'end"}')
SHOWN = "FAILED: expectations 'valid_amount', 'it\\'s, \\'odd\\'' violated by the record"
SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])


def capture_of(path: Path) -> tuple[tuple[int, int], str]:
    """``pyspark-4.1.4-streaming.txt`` -> ((4, 1), "streaming")."""
    found = re.fullmatch(r"pyspark-(\d+)\.(\d+)\.[^-]+-(\w+)\.txt", path.name)
    assert found, path.name
    return (int(found.group(1)), int(found.group(2))), found.group(3)


NEWEST = max(capture_of(path)[0] for path in CAPTURES)


def expected_violation(kind: str) -> Violation:
    return Violation(DATASETS[kind], NAMES, RECORD)


def read_capture(path: Path) -> EventLog:
    log = EventLog()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            log.feed(line)
    return log


def test_the_captures_cover_each_spark_line_and_both_kinds() -> None:
    found = {capture_of(path) for path in CAPTURES}
    for line in [(4, 1), (4, 2), NEWEST]:
        assert {(line, kind) for kind in DATASETS} <= found, found
    assert NEWEST >= (4, 3)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_the_reader_finds_exactly_the_one_violation_of_a_real_run(path: Path) -> None:
    _, kind = capture_of(path)
    dataset = DATASETS[kind]
    log = read_capture(path)
    assert log.violations == [expected_violation(kind)]
    # The flows' states are read from the events, names as SDP gives them.
    assert log.flows[f"spark_catalog.default.{dataset}"] == "FAILED", log.flows
    assert not any("'" in flow for flow in log.flows), log.flows
    if kind == "streaming":
        assert log.flows[f"spark_catalog.default.{dataset}_dq_metrics"] == "SKIPPED", log.flows
    lines = path.read_text(encoding="utf-8").splitlines()
    reported = [line for line in lines if find_all(line)]
    assert len(reported) >= 2  # Spark repeats the error: still one violation
    if kind == "streaming":
        # The failure prints the query plan, which quotes the message's SQL.
        plans = [line for line in lines if TAG in line and "concat_ws(" in line]
        assert plans, "the capture holds no query plan"
        assert all(find_all(line) == [] for line in plans)


def test_a_failed_flow_reported_completed_in_either_order_is_failed() -> None:
    """Spark reports a streaming flow that fails COMPLETED too, before or after FAILED."""
    path = next(p for p in CAPTURES if capture_of(p) == (NEWEST, "streaming"))
    events = [line for line in path.read_text(encoding="utf-8").splitlines()
              if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: Flow .*orders_stream\b", line)]
    completed = [line for line in events if "orders_stream has COMPLETED" in line]
    failed = [line for line in events if "'spark_catalog.default.orders_stream' has FAILED" in line]
    assert len(completed) == len(failed) == 1, events
    for order in (completed + failed, failed + completed):
        log = EventLog()
        for line in [*events[:2], *order]:
            log.feed(line)
        assert log.flows["spark_catalog.default.orders_stream"] == "FAILED", order
    retried = EventLog()
    for line in [*failed, events[0], *completed]:  # failed, queued again, completed
        retried.feed(line)
    assert retried.flows["spark_catalog.default.orders_stream"] == "COMPLETED"


def reading(dataset: str, streaming: bool) -> TableReading:
    """What the reader finds after the failed first update: an empty metrics table."""
    comment = (f"Data-quality metrics of {dataset}, cumulative since its last full refresh"
               if streaming else f"Data-quality metrics of {dataset} for the latest update")
    return TableReading(catalog="spark_catalog", database="default",
                        metrics=[{"table": f"{dataset}_dq_metrics", "comment": comment,
                                  "rows": []}], quarantines=[], notes=[])


def violations_in_html(page: str) -> list[tuple[str, list[str], str]]:
    """Each violation the page shows: dataset, rule names, record."""
    found = []
    for block in re.findall(r'<div class="violation" data-dataset="([^"]*)">(.*?)</div>', page,
                            re.DOTALL):
        dataset, body = block
        names = re.findall(r'<code class="expectation">(.*?)</code>', body)
        record = re.findall(r'<pre class="record">(.*?)</pre>', body, re.DOTALL)
        assert len(record) == 1, body
        found.append((html.unescape(dataset), [html.unescape(n) for n in names],
                      html.unescape(record[0])))
    return found


def assert_one_violation_in_text(text: str, kind: str) -> None:
    assert text.count("FAILED: expectation") == 1, text
    assert f"  {SHOWN}\n    {RECORD}\n" in text, text


def assert_one_violation_in_json(document: dict[str, Any], kind: str) -> None:
    dataset = DATASETS[kind]
    assert document["violations"] == [
        {"dataset": dataset, "expectations": list(NAMES), "record": json.loads(RECORD)}]
    shown = {d["dataset"]: d for d in document["datasets"]}
    assert shown[dataset]["violations"] == document["violations"]


def assert_one_violation_in_html(page: str, kind: str) -> None:
    assert violations_in_html(page) == [(DATASETS[kind], list(NAMES), RECORD)]
    assert page.count('class="violation"') == 1


def assert_one_violation_shown(text: str, document: dict[str, Any], page: str,
                               kind: str) -> None:
    """Text, JSON and HTML show the one violation of a capture, and no other."""
    assert_one_violation_in_text(text, kind)
    assert_one_violation_in_json(document, kind)
    assert_one_violation_in_html(page, kind)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_run_summary_and_report_show_the_one_violation(path: Path, tmp_path: Path) -> None:
    _, kind = capture_of(path)
    dataset = DATASETS[kind]
    log = read_capture(path)
    tables = reading(dataset, kind == "streaming")
    run = build_report(tables, flows=log.flows, violations=log.violations, run_status="FAILED")
    assert [d.status for d in run.datasets] == [FAILED]
    assert_one_violation_shown(to_text(run), report_dict(run), render_html(run), kind)
    # `report` shows what `run` kept of the last run: the same one violation.
    save_last_summaries(tmp_path, run)
    report = build_report(tables, last_summaries=load_last_summaries(tmp_path))
    assert [d.status for d in report.datasets] == [NO_SUCCESS]
    assert_one_violation_shown(to_text(report), report_dict(report), render_html(report), kind)


def test_report_shows_the_last_runs_violation_beside_earlier_numbers(tmp_path: Path) -> None:
    """A streaming table's metrics keep the numbers of its last successful update."""
    log = read_capture(next(p for p in CAPTURES if capture_of(p) == (NEWEST, "streaming")))
    tables = reading("orders_stream", True)
    tables.metrics[0]["rows"] = [{
        "dataset": "orders_stream", "expectation": name, "action": "fail", "constraint": "c",
        "passed_records": 2, "failed_records": 0, "total_records": 2, "dropped_records": 0}
        for name in ("valid_amount", "has_id", "it's, 'odd'")]
    save_last_summaries(tmp_path, build_report(tables, flows=log.flows, violations=log.violations))
    report = build_report(tables, last_summaries=load_last_summaries(tmp_path))
    assert [(d.status, len(d.rules)) for d in report.datasets] == [(LAST_SUCCESS, 3)]
    assert_one_violation_shown(to_text(report), report_dict(report), render_html(report),
                               "streaming")


REPLAY = """\
import os, sys
with open(os.environ["REPLAY"], encoding="utf-8") as handle:
    sys.stdout.write(handle.read())
sys.exit(1)
"""


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_sdp_expect_run_on_a_replayed_real_run_counts_one_violation(
        path: Path, tmp_path: Path) -> None:
    _, kind = capture_of(path)
    project, env = replaying_project(tmp_path, REPLAY, path)
    text = sdp_expect("run", "--no-summary", "--port-wait", "0", cwd=project, env=env)
    assert text.returncode == 1, text.stdout + text.stderr
    assert text.stdout.rstrip().endswith(
        "sdp-expect run: FAILED, 1 expectation violation (exit status 1)"), text.stdout[-2000:]
    listed = text.stdout[text.stdout.rindex("== Expectation violations"):]
    assert listed.count("FAILED: expectation") == 1 and SHOWN in listed, listed
    as_json = sdp_expect("run", "--no-summary", "--port-wait", "0", "--format", "json",
                         cwd=project, env=env)
    document = json.loads(as_json.stdout)
    assert document["exit_code"] == 1 and document["status"] == "FAILED"
    assert document["violations"] == [{"dataset": DATASETS[kind], "expectations": list(NAMES),
                                       "record": json.loads(RECORD)}]
    assert document["flows"][f"spark_catalog.default.{DATASETS[kind]}"] == "FAILED"


# --------------------------------------------------------------------------- one true run


def _capture_module() -> Any:
    spec = importlib.util.spec_from_file_location("spark_output_capture",
                                                  FIXTURES / "capture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1800)
@pytest.mark.skipif(SPARK < NEWEST, reason="one true run, on the newest Spark line only (CI time); "
                    "the real output of every line is replayed by the tests above")
def test_a_failing_streaming_table_is_one_violation_in_run_and_report(tmp_path: Path) -> None:
    project = _capture_module().write_project(tmp_path / "project", "streaming")
    # Through the project's warm server (one server start for the four commands, CI's time).
    with served(project):
        run = sdp_expect("run", cwd=project)
        out = run.stdout
        assert run.returncode == 1, out + run.stderr
        # Spark printed the plan, which quotes the message's SQL (issue 11): it is in the
        # log file, and the output fits on a screen (issue 12)
        log = Path(out[out.rindex("full log: ") + len("full log: "):].split("\n", 1)[0])
        logged = (project / log).read_text(encoding="utf-8")
        assert TAG in logged and "concat_ws(" in logged
        assert "concat_ws(" not in out and "Traceback" not in out
        assert len(out.splitlines()) <= 40, out
        assert out.rstrip().endswith("sdp-expect run: FAILED, 1 expectation violation "
                                     "(exit status 1)"), out[-3000:]
        summary = out[out.rindex("== Data quality"):]
        assert summary.count("FAILED: expectation") == 1, summary
        assert ("orders_stream  streaming table, counts since its last full refresh, "
                f"FAILED in this run\n  {SHOWN}\n    {RECORD}\n") in summary, summary
        again = sdp_expect("run", "--format", "json", cwd=project)
        document = json.loads(again.stdout)
        assert document["exit_code"] == 1
        assert document["flows"]["spark_catalog.default.orders_stream"] == "FAILED"
        page = tmp_path / "report.html"
        report = sdp_expect("report", "--html", str(page), cwd=project)
        assert report.returncode == 0, report.stdout + report.stderr
        as_json = sdp_expect("report", "--format", "json", cwd=project)
        assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    assert_one_violation_shown(report.stdout, json.loads(as_json.stdout),
                               page.read_text(encoding="utf-8"), "streaming")
    assert_one_violation_in_text(summary, "streaming")
    assert_one_violation_in_json(document, "streaming")
