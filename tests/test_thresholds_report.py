"""Tolerances in the run summary and the report (docs/thresholds.md): real SDP runs of
materialized views with tolerances, their tables read as ``sdp-expect run`` and
``report`` read them, shown as text, JSON and HTML.

- a flow failed by rules over their tolerance (``[EXPECTATION_TOLERANCE_EXCEEDED]``)
  is read from what Spark printed, exactly once, and shown with each rule, its
  counts, its rate and its tolerance; ``report`` shows it again from the history
  ``run`` kept;
- a warn rule over its tolerance is flagged on its rule line, in its JSON entry and
  in the HTML rules table; rules without tolerance look as before.

Pipelines run in the shared server of ``tests/sdp_runner.py``; the real output of
``spark-pipelines run`` (captured per Spark line by
``tests/fixtures/spark_output/capture.py tolerance``) is replayed to the real
``sdp-expect run``; one true ``sdp-expect run`` checks the whole chain.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any, Optional

import pytest
from cli_helpers import (
    NEWEST_LINE,
    REPO,
    replaying_project,
    sdp_expect,
    served,
    write_project,
)
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, Pipeline, RunResult

from sdp_expect import pipelines as dp
from sdp_expect.base.violation import (
    ToleranceFailure,
    TolerancePart,
    find_tolerance_failures,
    format_tolerance_message,
)
from sdp_expect.quality.summary import FAILED, NO_SUCCESS, UPDATED, QualityReport, TableReading
from sdp_expect.report.as_json import report_dict
from sdp_expect.report.build import build_report
from sdp_expect.report.html import render_html
from sdp_expect.report.last_summaries import load_last_summaries, save_last_summaries
from sdp_expect.report.reader import _collect
from sdp_expect.report.text import to_text
from sdp_expect.runtime.spark_pipelines import EventLog

SCHEMA = "id INT, amount INT, region STRING"
FIXTURES = REPO / "tests" / "fixtures" / "spark_output"
REPLAY = """\
import os, sys
with open(os.environ["REPLAY"], encoding="utf-8") as handle:
    sys.stdout.write(handle.read())
sys.exit(1)
"""
ODD = "it's; odd: rule"
"""A rule name with the message's separators and a quote."""


def rows(total: int, no_amount: int, no_region: int) -> list[tuple[Any, ...]]:
    """``total`` records: the first ``no_amount`` without an amount, the last
    ``no_region`` without a region."""
    return [(i, None if i < no_amount else i, None if i >= total - no_region else "eu")
            for i in range(total)]


def read(pipeline: Pipeline) -> TableReading:
    """The pipeline's tables, as ``sdp-expect run`` reads them after a run."""
    return TableReading.from_json(_collect(pipeline.spark, catalog=None,
                                           database=pipeline.database, sample=20))


def events_of(result: RunResult) -> EventLog:
    """What ``sdp-expect run`` gathers from the lines Spark printed."""
    log = EventLog()
    for line in result.output.splitlines():
        log.feed(line)
    return log


def shown(result: RunResult, *flows: str) -> dict[str, str]:
    return {f"spark_catalog.{result.database}.{flow}": result.flow_state(flow) for flow in flows}


def rule_line(text: str, rule: str) -> Optional[str]:
    return next((line for line in text.splitlines() if line.startswith(f"    {rule} ")), None)


def html_rows(page: str) -> dict[str, dict[str, str]]:
    """Each rule row of the page: its data attributes and its tolerance cell."""
    found = {}
    for attributes, body in re.findall(r"<tr (data-rule=[^>]*)>(.*?)</tr>", page, re.DOTALL):
        data = {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"',
                                                          attributes)}
        cell = re.search(r'<td class="tolerance">(.*?)</td>', body)
        data["cell"] = re.sub(r"<[^>]+>", "", cell.group(1)) if cell else "(none)"
        found[data["rule"]] = data
    return found


# --------------------------------------------------------------------------- warn


def test_a_warn_rule_over_its_tolerance_is_flagged_in_text_json_and_html(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("region_known", "region IS NOT NULL", max_failed="10%")
        @dp.expect("amount_present", "amount IS NOT NULL", max_failed=5)
        @dp.expect_or_drop("id_small", "id < 28", max_failed=2)
        @dp.expect("id_known", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        @dp.expect("positive", "amount > 0")
        def plain() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    # 30 records: 4 without an amount (within 5), 4 without a region (13.3 %: over 10 %),
    # ids 28 and 29 dropped (2: at the tolerance).
    pipeline.create_table("src", rows(30, 4, 4), SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    report = build_report(read(pipeline),
                          flows=shown(result, "orders_dq_metrics", "plain_dq_metrics"),
                          violations=[], run_status="COMPLETED")
    assert [(d.dataset, d.status) for d in report.datasets] == [("orders", UPDATED),
                                                                ("plain", UPDATED)]
    assert report.tolerance_failures == []

    text = to_text(report)
    assert rule_line(text, "region_known") == (
        "    region_known    warn        26       4     13.3%  10% EXCEEDED")
    assert rule_line(text, "amount_present") == (
        "    amount_present  warn        26       4     13.3%  5")
    assert rule_line(text, "id_small") == "    id_small        drop        28       2      6.7%  2"
    assert rule_line(text, "id_known") == "    id_known        warn        30       0      0.0%"
    assert "    rule            action  passed  failed  failed %  max_failed\n" in text
    # A dataset without tolerances: as before, no column for them.
    assert ("plain  materialized view, updated in this run\n"
            "  30 records, 0 dropped\n"
            "    rule      action  passed  failed  failed %\n"
            "    positive  warn        26       4     13.3%\n") in text, text
    assert "EXCEEDED" in to_text(report, color=True)

    document = report_dict(report)
    assert document["tolerance_failures"] == []
    entries = {d["dataset"]: {r["expectation"]: r for r in d["rules"]}
               for d in document["datasets"]}
    assert {name: (r["max_failed"], r["tolerance_exceeded"])
            for name, r in entries["orders"].items()} == {
        "region_known": ("10%", True), "amount_present": ("5", False),
        "id_small": ("2", False), "id_known": (None, None)}
    assert entries["plain"]["positive"] == {
        "expectation": "positive", "action": "warn", "constraint": "amount > 0",
        "passed_records": 26, "failed_records": 4, "total_records": 30,
        "failure_percentage": 13.33, "max_failed": None, "tolerance_exceeded": None}
    assert json.loads(json.dumps(document)) == document

    page = render_html(report)
    found = html_rows(page)
    assert {name: (r.get("max-failed"), r.get("tolerance-exceeded"), r["cell"])
            for name, r in found.items()} == {
        "region_known": ("10%", "true", "10% exceeded"),
        "amount_present": ("5", "false", "5"), "id_small": ("2", "false", "2"),
        "id_known": (None, None, ""), "positive": (None, None, "(none)")}
    assert page.count("<th>max_failed</th>") == 1  # the dataset with tolerances only
    assert "1</b>warn rule over tolerance" in page

    # `report` reads the same tables: the same flags.
    again = build_report(read(pipeline))
    assert to_text(again).count("EXCEEDED") == 1
    assert {r.expectation: r.tolerance_exceeded for r in again.datasets[0].rules} == {
        "region_known": True, "amount_present": False, "id_small": False, "id_known": None}


# --------------------------------------------------------------------------- fail and drop


def assert_shown(report: QualityReport, expected: ToleranceFailure, lines: list[str],
                 state: str) -> None:
    """Text, JSON and HTML show the one failure, and nothing of a violated record."""
    text = to_text(report)
    assert f"orders  materialized view, {state}\n" + "".join(
        f"  {line}\n" for line in lines) in text, text
    assert text.count("over its tolerance") == len(expected.parts), text
    assert "violated by the record" not in text
    document = report_dict(report)
    entry = {"dataset": "orders", "rules": [
        {"expectation": p.name, "failed_records": p.failed, "total_records": p.total,
         "failure_percentage": round(100 * p.failed / p.total, 2), "max_failed": p.tolerance}
        for p in expected.parts]}
    assert document["tolerance_failures"] == [entry]
    assert document["violations"] == []
    orders = next(d for d in document["datasets"] if d["dataset"] == "orders")
    assert orders["tolerance_failures"] == [entry]
    page = render_html(report)
    blocks = re.findall(r'<div class="violation tolerance-failure" data-dataset="orders">'
                        r"(.*?)</div>", page, re.DOTALL)
    assert len(blocks) == 1, page
    items = re.findall(r'<li data-rule="([^"]*)" data-failed="(\d+)" data-total="(\d+)" '
                       r'data-max-failed="([^"]*)">', blocks[0])
    assert [(html.unescape(n), int(f), int(t), html.unescape(m)) for n, f, t, m in items] == [
        (p.name, p.failed, p.total, p.tolerance) for p in expected.parts]
    assert 'class="violation"' not in page


def test_a_flow_over_fail_and_drop_tolerances_is_shown_in_run_and_report(
        make_pipeline: MakePipeline, tmp_path: Path) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_fail(ODD, "amount IS NOT NULL", max_failed="1%")
        @dp.expect_or_drop("region_known", "region IS NOT NULL", max_failed=2)
        @dp.expect("positive", "amount > 0", max_failed="50%")
        def orders() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        def downstream() -> DataFrame:
            return spark.read.table("orders")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows(200, 3, 7), SCHEMA)
    result = pipeline.run()
    assert not result.ok
    expected = ToleranceFailure("orders", (TolerancePart(ODD, 3, 200, "1%"),
                                           TolerancePart("region_known", 7, 200, "2")))
    log = events_of(result)
    assert log.tolerance_failures == [expected]  # Spark repeats it: read once
    assert log.violations == []
    lines = ["FAILED: expectation 'it\\'s; odd: rule' over its tolerance: 3 of 200 records "
             "failed (1.5%), more than max_failed '1%'",
             "FAILED: expectation 'region_known' over its tolerance: 7 of 200 records "
             "failed (3.5%), more than max_failed '2'"]

    tables = read(pipeline)
    run = build_report(tables, flows=shown(result, "orders", "orders_dq_metrics"),
                       violations=log.violations, tolerance_failures=log.tolerance_failures,
                       run_status="FAILED")
    assert [(d.dataset, d.status, d.has_numbers) for d in run.datasets] == [
        ("orders", FAILED, False)]
    assert_shown(run, expected, lines, "FAILED in this run")
    # `report` shows what `run` kept of the last run: the same failure.
    save_last_summaries(tmp_path, run)
    report = build_report(tables, last_summaries=load_last_summaries(tmp_path))
    assert [(d.dataset, d.status) for d in report.datasets] == [("orders", NO_SUCCESS)]
    assert_shown(report, expected, lines, "no successful update recorded")


# --------------------------------------------------------------------------- one true run

TOLERANCE_PROJECT = """\
    from pyspark.sql import SparkSession
    from sdp_expect import pipelines as dp

    spark = SparkSession.active()
    ROWS = ", ".join(f"({i}, {'NULL' if i <= 3 else i}, {'NULL' if i > 17 else repr('eu')})"
                     for i in range(1, 21))

    @dp.materialized_view
    def src():
        return spark.sql(f"SELECT * FROM VALUES {ROWS} AS t(id, amount, region)")

    @dp.materialized_view
    @dp.expect("region_known", "region IS NOT NULL", max_failed="10%")
    @dp.expect_or_drop("amount_present", "amount IS NOT NULL", max_failed=2)
    def checked():
        return spark.read.table("src")

    @dp.materialized_view
    @dp.expect("region_known", "region IS NOT NULL", max_failed="10%")
    @dp.expect_or_drop("amount_present", "amount IS NOT NULL", max_failed=3)
    def kept():
        return spark.read.table("src")
    """
"""20 records, 3 without an amount, 3 without a region (15 %). ``checked``: the warn
rule is over its tolerance, and so is the drop rule (3 > 2): the flow fails. ``kept``:
the same warn rule, the drop rule within its tolerance (3): updated, the warn flagged."""


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1800)
@NEWEST_LINE  # the real output of the 4.1 and 4.3 lines is replayed by the tests above
def test_sdp_expect_run_shows_tolerances_in_its_text_and_json_summary(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", TOLERANCE_PROJECT)
    # Through the project's warm server (one server start for both runs, CI's time).
    with served(project):
        run = sdp_expect("run", cwd=project)
        out = run.stdout
        assert run.returncode == 1, out + run.stderr
        message = format_tolerance_message("checked", [TolerancePart("amount_present", 3, 20, "2")])
        assert message in out  # the event's error line
        summary = out[out.rindex("== Data quality"):]
        assert ("checked  materialized view, FAILED in this run\n"
                "  FAILED: expectation 'amount_present' over its tolerance: 3 of 20 records "
                "failed (15.0%), more than max_failed '2'\n"
                "  no metrics: a failed update records none\n") in summary, summary
        assert ("kept  materialized view, updated in this run\n"
                "  20 records, 3 dropped\n"
                "    rule            action  passed  failed  failed %  max_failed\n") in summary
        assert re.search(r"^    region_known    warn        17       3     15\.0%  10% EXCEEDED$",
                         summary, re.MULTILINE), summary
        assert re.search(r"^    amount_present  drop        17       3     15\.0%  3$", summary,
                         re.MULTILINE), summary
        assert summary.count("EXCEEDED") == 1
        assert out.rstrip().endswith("sdp-expect run: FAILED, 1 flow over its tolerance "
                                     "(exit status 1)"), out[-2000:]

        again = sdp_expect("run", "--format", "json", cwd=project)
        assert again.returncode == 1, again.stdout + again.stderr
        document = json.loads(again.stdout)
    assert document["exit_code"] == 1 and document["status"] == "FAILED"
    entry = {"dataset": "checked", "rules": [
        {"expectation": "amount_present", "failed_records": 3, "total_records": 20,
         "failure_percentage": 15.0, "max_failed": "2"}]}
    assert document["tolerance_failures"] == [entry]
    assert document["violations"] == []
    datasets = {d["dataset"]: d for d in document["datasets"]}
    assert datasets["checked"]["status"] == "failed"
    assert datasets["checked"]["tolerance_failures"] == [entry]
    assert datasets["kept"]["status"] == "updated"
    assert datasets["kept"]["tolerance_failures"] == []
    assert {r["expectation"]: (r["failed_records"], r["max_failed"], r["tolerance_exceeded"])
            for r in datasets["kept"]["rules"]} == {
        "region_known": (3, "10%", True), "amount_present": (3, "3", False)}


# --------------------------------------------------------------------------- replayed runs

TOLERANCE_CAPTURES = sorted(FIXTURES.glob("tolerance-pyspark-*.txt"))
"""Real ``spark-pipelines run`` output of a flow over its tolerances, per Spark line
(``tests/fixtures/spark_output/capture.py tolerance``)."""
CAPTURED = ToleranceFailure("orders_silver", (TolerancePart("it's; odd: rule", 1, 3, "10%"),
                                              TolerancePart("has_note", 1, 3, "0")))
CAPTURED_LINES = ("  FAILED: expectation 'it\\'s; odd: rule' over its tolerance: 1 of 3 records "
                  "failed (33.333%), more than max_failed '10%'\n"
                  "  FAILED: expectation 'has_note' over its tolerance: 1 of 3 records failed "
                  "(33.333%), more than max_failed '0'\n")


def test_there_are_captures_of_the_oldest_and_the_newest_spark_line() -> None:
    versions = {".".join(p.name.split("-")[2].split(".")[:2]) for p in TOLERANCE_CAPTURES}
    assert {"4.1", "4.3"} <= versions, versions


@pytest.mark.parametrize("path", TOLERANCE_CAPTURES, ids=[p.stem for p in TOLERANCE_CAPTURES])
def test_sdp_expect_run_on_a_replayed_real_run_shows_the_one_tolerance_failure(
        path: Path, tmp_path: Path) -> None:
    log = EventLog()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            log.feed(line)
    assert log.tolerance_failures == [CAPTURED]
    assert log.violations == []  # a record's note shaped like a violation is not one
    assert log.flows["spark_catalog.default.orders_silver"] == "FAILED", log.flows
    text_lines = path.read_text(encoding="utf-8").splitlines()
    assert len([line for line in text_lines if find_tolerance_failures(line)]) >= 2

    project, env = replaying_project(tmp_path, REPLAY, path)
    text = sdp_expect("run", "--no-summary", "--port-wait", "0", cwd=project, env=env)
    assert text.returncode == 1, text.stdout + text.stderr
    listed = text.stdout[text.stdout.rindex("== Expectations over their tolerance"):]
    assert f"\norders_silver\n{CAPTURED_LINES}" in listed, listed
    assert listed.count("over its tolerance:") == 2, listed
    assert text.stdout.rstrip().endswith(
        "sdp-expect run: FAILED, 1 flow over its tolerance (exit status 1)"), text.stdout[-2000:]
    as_json = sdp_expect("run", "--no-summary", "--port-wait", "0", "--format", "json",
                         cwd=project, env=env)
    document = json.loads(as_json.stdout)
    assert document["exit_code"] == 1 and document["violations"] == []
    assert document["tolerance_failures"] == [{"dataset": "orders_silver", "rules": [
        {"expectation": "it's; odd: rule", "failed_records": 1, "total_records": 3,
         "failure_percentage": 33.33, "max_failed": "10%"},
        {"expectation": "has_note", "failed_records": 1, "total_records": 3,
         "failure_percentage": 33.33, "max_failed": "0"}]}]
