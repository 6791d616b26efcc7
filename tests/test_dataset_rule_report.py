"""Fail rules on the dataset as a whole in the run summary and the report
(docs/row-count-rules.md, docs/aggregate-rules.md).

- a flow failed by row-count or aggregate rules that do not hold
  (``[EXPECTATION_DATASET_RULE_FAILED]``) is read from what Spark printed, exactly once,
  by the one reader beside its writer, and shown with each rule, what it observed and
  what it expects, in text, JSON and HTML; ``report`` shows it again from the history
  ``run`` kept;
- one true ``sdp-expect run`` (twice: text, then JSON after new input) of a project with
  warn rules that are violated, a fail rule that fails a second dataset and a warn row
  count on a streaming table, checked against values computed from the input and
  against the tables read with a plain Spark session.

The real output of ``spark-pipelines run`` is replayed from captures per Spark line
(``tests/fixtures/spark_output/capture.py dataset_rule``).
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

from sdp_expect.base.violation import (
    DatasetRuleFailure,
    DatasetRulePart,
    find_dataset_rule_failures,
    format_dataset_rule_failure,
)
from sdp_expect.quality.summary import FAILED, NO_SUCCESS, QualityReport, TableReading
from sdp_expect.report.as_json import report_dict
from sdp_expect.report.build import build_report
from sdp_expect.report.html import render_html
from sdp_expect.report.last_summaries import load_last_summaries, save_last_summaries
from sdp_expect.report.text import to_text
from sdp_expect.runtime.spark_pipelines import EventLog

FIXTURES = REPO / "tests" / "fixtures" / "spark_output"
REPLAY = """\
import os, sys
with open(os.environ["REPLAY"], encoding="utf-8") as handle:
    sys.stdout.write(handle.read())
sys.exit(1)
"""

# --------------------------------------------------------------------------- replayed runs

CAPTURES = sorted(FIXTURES.glob("dataset-rule-pyspark-*.txt"))
"""Real ``spark-pipelines run`` output of a flow failed by dataset rules, per Spark line
(``tests/fixtures/spark_output/capture.py dataset_rule``)."""
CAPTURED = DatasetRuleFailure("orders_silver", (
    DatasetRulePart("it's; odd: count", "3", "at least 5 and at most 10"),
    DatasetRulePart("positive", "false", "true"),
    DatasetRulePart("big_sum", None, "true")))
"""What capture.py's DATASET_RULE says of its 3 records (amounts 5, -12, 7): 3 records,
not 5 to 10; a sum of 0, not > 0; a sum over no record, NULL; ``few`` holds."""
CAPTURED_LINES = (
    "  FAILED: expectation 'it\\'s; odd: count' not met: observed 3, expected at least 5 "
    "and at most 10\n"
    "  FAILED: expectation 'positive' not met: observed false, expected true\n"
    "  FAILED: expectation 'big_sum' not met: observed NULL, expected true\n")
CAPTURED_ENTRY = {"dataset": "orders_silver", "rules": [
    {"expectation": "it's; odd: count", "observed": "3", "expected": "at least 5 and at most 10",
     "violated": True},
    {"expectation": "positive", "observed": "false", "expected": "true", "violated": True},
    {"expectation": "big_sum", "observed": None, "expected": "true", "violated": True}]}


def test_there_are_captures_of_the_oldest_and_the_newest_spark_line() -> None:
    versions = {".".join(p.name.split("-")[3].split(".")[:2]) for p in CAPTURES}
    assert {"4.1", "4.3"} <= versions, versions


def events_of(path: Path) -> EventLog:
    log = EventLog()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            log.feed(line)
    return log


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_sdp_expect_run_on_a_replayed_real_run_shows_the_one_dataset_rule_failure(
        path: Path, tmp_path: Path) -> None:
    log = events_of(path)
    assert log.dataset_rule_failures == [CAPTURED]  # Spark repeats it: read once
    assert log.violations == [] and log.tolerance_failures == []
    assert log.flows["spark_catalog.default.orders_silver"] == "FAILED", log.flows
    text_lines = path.read_text(encoding="utf-8").splitlines()
    assert len([line for line in text_lines if find_dataset_rule_failures(line)]) >= 2
    assert format_dataset_rule_failure(CAPTURED) in path.read_text(encoding="utf-8")

    project, env = replaying_project(tmp_path, REPLAY, path)
    text = sdp_expect("run", "--no-summary", "--port-wait", "0", cwd=project, env=env)
    assert text.returncode == 1, text.stdout + text.stderr
    listed = text.stdout[text.stdout.rindex("== Dataset rules not met"):]
    assert f"\norders_silver\n{CAPTURED_LINES}" in listed, listed
    assert listed.count("not met:") == 3, listed
    assert text.stdout.rstrip().endswith(
        "sdp-expect run: FAILED, 1 flow failed by dataset rules (exit status 1)"), \
        text.stdout[-2000:]
    as_json = sdp_expect("run", "--no-summary", "--port-wait", "0", "--format", "json",
                         cwd=project, env=env)
    document = json.loads(as_json.stdout)
    assert document["exit_code"] == 1
    assert document["violations"] == [] and document["tolerance_failures"] == []
    assert document["dataset_rule_failures"] == [CAPTURED_ENTRY]


def assert_shown(report: QualityReport, state: str, no_metrics: str) -> None:
    """Text, JSON and HTML show the one failure of the capture."""
    text = to_text(report)
    assert (f"orders_silver  materialized view, {state}\n{CAPTURED_LINES}"
            f"  {no_metrics}\n") in text, text
    assert text.count("not met:") == 3, text
    document = report_dict(report)
    assert document["dataset_rule_failures"] == [CAPTURED_ENTRY]
    assert document["tolerance_failures"] == [] and document["violations"] == []
    (entry,) = document["datasets"]
    assert entry["dataset_rule_failures"] == [CAPTURED_ENTRY]
    assert json.loads(json.dumps(document)) == document
    page = render_html(report)
    blocks = re.findall(r'<div class="violation dataset-rule-failure" '
                        r'data-dataset="orders_silver">(.*?)</div>', page, re.DOTALL)
    assert len(blocks) == 1, page
    items = re.findall(r'<li data-rule="([^"]*)" data-observed="([^"]*)" '
                       r'data-expected="([^"]*)">', blocks[0])
    assert [tuple(html.unescape(v) for v in item) for item in items] == [
        ("it's; odd: count", "3", "at least 5 and at most 10"), ("positive", "false", "true"),
        ("big_sum", "NULL", "true")]
    assert "1</b>flow failed by dataset rules" in page


def test_the_run_summary_and_report_show_the_failure_from_the_history(tmp_path: Path) -> None:
    """``run`` builds its summary from what the run said; ``report`` from what ``run``
    kept: the failed flow's metrics table is empty either way."""
    log = events_of(CAPTURES[-1])
    tables = TableReading(catalog="spark_catalog", database="default", metrics=[
        {"table": "orders_silver_dq_metrics", "comment": "", "rows": []}], quarantines=[],
        notes=[])
    run = build_report(tables, flows=log.flows, violations=log.violations,
                       tolerance_failures=log.tolerance_failures,
                       dataset_rule_failures=log.dataset_rule_failures, run_status="FAILED")
    assert [(d.dataset, d.status, d.has_numbers) for d in run.datasets] == [
        ("orders_silver", FAILED, False)]
    assert_shown(run, "FAILED in this run", "no metrics: a failed update records none")
    save_last_summaries(tmp_path, run)
    report = build_report(tables, last_summaries=load_last_summaries(tmp_path))
    assert [(d.dataset, d.status) for d in report.datasets] == [("orders_silver", NO_SUCCESS)]
    assert_shown(report, "no successful update recorded", "no metrics recorded")


def test_a_failure_of_a_dataset_without_metrics_is_shown_on_its_own() -> None:
    """A dataset with no metrics table (``@dp.metrics(False)``): the failure is still
    shown, under its own heading, once."""
    empty = TableReading(catalog="c", database="d", metrics=[], quarantines=[], notes=[])
    report = build_report(empty, flows={}, dataset_rule_failures=[CAPTURED],
                          run_status="FAILED")
    text = to_text(report)
    assert f"orders_silver  FAILED in this run\n{CAPTURED_LINES}" in text, text
    assert "No <dataset>_dq_metrics tables found" not in text
    page = render_html(report)
    assert page.count('class="violation dataset-rule-failure"') == 1
    assert report_dict(report)["dataset_rule_failures"] == [CAPTURED_ENTRY]


# --------------------------------------------------------------------------- one true run

ROWS = [(1, 5), (2, -12), (3, 7), (4, None), (5, -8), (6, 3)]
"""``src``: 6 records, amounts summing to -5."""
EVENTS_FIRST = [{"id": 1}, {"id": 2}, {"id": 3}]
EVENTS_SECOND = [{"id": 4}, {"id": 5}]
PROJECT = """\
    from pyspark.sql import SparkSession
    from sdp_expect import pipelines as dp

    spark = SparkSession.active()
    ROWS = ", ".join(f"({i}, {'NULL' if a is None else a})" for i, a in __ROWS__)
    INBOX = __INBOX__

    @dp.materialized_view
    def src():
        return spark.sql(f"SELECT * FROM VALUES {ROWS} AS t(id, amount)")

    @dp.materialized_view
    @dp.expect("at_most_4", dp.row_count(max=4))
    @dp.expect("revenue_positive", dp.aggregate("sum(amount) > 0"))
    @dp.expect("not_empty", dp.row_count(min=1))
    @dp.expect("amount_present", "amount IS NOT NULL")
    def orders():
        return spark.read.table("src")

    @dp.materialized_view
    @dp.expect_or_fail("at_least_10", dp.row_count(min=10))
    @dp.expect("amount_present", "amount IS NOT NULL")
    def checked():
        return spark.read.table("src")

    @dp.materialized_view
    def after_checked():
        return spark.read.table("checked")

    @dp.table
    @dp.expect("at_most_4", dp.row_count(max=4))
    def events():
        return spark.readStream.schema("id INT").json(INBOX)
    """


def _whole(rule: dict[str, Any]) -> tuple[Optional[str], Optional[bool]]:
    return rule.get("observed"), rule.get("violated")


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1800)
@NEWEST_LINE  # the real output of the 4.1 and 4.3 lines is replayed by the tests above
def test_sdp_expect_run_shows_dataset_rules_warn_and_fail_and_leaves_the_tables_as_documented(
        tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "first.json").write_text("".join(json.dumps(e) + "\n" for e in EVENTS_FIRST))
    code = PROJECT.replace("__ROWS__", repr(ROWS)).replace("__INBOX__", repr(str(inbox)))
    project = write_project(tmp_path / "project", code)
    # What the rules must say, from the input alone.
    count = len(ROWS)
    revenue = sum(a for _, a in ROWS if a is not None)
    missing = sum(1 for _, a in ROWS if a is None)
    assert (count, revenue > 0) == (6, False)  # the data is what the test means it to be

    # Through the project's warm server (one server start for both runs, CI's time).
    with served(project, keep_tables=True) as warm:
        run = sdp_expect("run", cwd=project)
        out = run.stdout
        assert run.returncode == 1, out + run.stderr
        summary = out[out.rindex("== Data quality"):]
        assert ("checked  materialized view, FAILED in this run\n"
                f"  FAILED: expectation 'at_least_10' not met: observed {count}, expected at "
                "least 10\n"
                "  no metrics: a failed update records none\n") in summary, summary
        assert f"    at_most_4: ROW COUNT <= 4: observed {count}, NOT MET" in summary, summary
        assert "    revenue_positive: sum(amount) > 0: observed false, NOT MET" in summary
        assert f"    not_empty: ROW COUNT >= 1: observed {count}, met" in summary
        assert summary.count("not met:") == 1, summary
        assert out.rstrip().endswith("sdp-expect run: FAILED, 1 flow failed by dataset rules "
                                     "(exit status 1)"), out[-2000:]
        # The streaming table after its first update: 3 records, within max=4.
        assert re.search(r"^events  streaming table, .*\n(?:.*\n)*?    at_most_4: ROW COUNT <= 4: "
                         rf"observed {len(EVENTS_FIRST)}, met$", summary, re.MULTILINE), summary

        (inbox / "second.json").write_text("".join(json.dumps(e) + "\n" for e in EVENTS_SECOND))
        again = sdp_expect("run", "--format", "json", cwd=project)
        assert again.returncode == 1, again.stdout + again.stderr
        document = json.loads(again.stdout)
    assert document["exit_code"] == 1 and document["status"] == "FAILED"
    entry = {"dataset": "checked", "rules": [
        {"expectation": "at_least_10", "observed": str(count), "expected": "at least 10",
         "violated": True}]}
    assert document["dataset_rule_failures"] == [entry]
    assert document["tolerance_failures"] == [] and document["violations"] == []
    datasets = {d["dataset"]: d for d in document["datasets"]}
    assert datasets["checked"]["status"] == "failed"
    assert datasets["checked"]["dataset_rule_failures"] == [entry]
    assert datasets["checked"]["rules"] == []
    assert [state for flow, state in document["flows"].items()
            if flow.endswith(".after_checked")] == ["SKIPPED"], document["flows"]
    orders = datasets["orders"]
    assert orders["status"] == "updated" and orders["dataset_rule_failures"] == []
    rules = {r["expectation"]: r for r in orders["rules"]}
    assert {name: _whole(r) for name, r in rules.items()} == {
        "at_most_4": (str(count), not count <= 4),
        "revenue_positive": (str(revenue > 0).lower(), True),
        "not_empty": (str(count), False),
        "amount_present": (None, None)}
    assert "observed" not in rules["amount_present"]  # a record rule's entry is as before
    assert (rules["at_most_4"]["failed_records"], rules["at_most_4"]["total_records"]) == (
        count, count)  # violated: every record counts as failed
    assert rules["not_empty"]["failed_records"] == 0
    assert rules["amount_present"]["failed_records"] == missing
    events = datasets["events"]
    assert events["streaming"] is True and events["status"] == "updated"
    seen = len(EVENTS_FIRST) + len(EVENTS_SECOND)
    (rule,) = events["rules"]
    assert _whole(rule) == (str(seen), not seen <= 4), rule  # cumulative: 3 + 2 > 4

    # The tables, read with a plain Spark session.
    tables = warm.tables
    assert sorted(r["id"] for r in tables["orders"]) == [i for i, _ in ROWS]  # warn: written
    assert tables.get("checked", []) == []  # the failed update wrote nothing
    assert tables.get("after_checked", []) == []
    assert tables.get("checked_dq_metrics", []) == []
    assert sorted(r["id"] for r in tables["events"]) == [
        e["id"] for e in EVENTS_FIRST + EVENTS_SECOND]
    metrics = {r["expectation"]: r for r in tables["orders_dq_metrics"]}
    assert (metrics["at_most_4"]["observed"], metrics["at_most_4"]["violated"]) == (
        str(count), True)
    (events_row,) = tables["events_dq_metrics"]
    assert (events_row["observed"], events_row["violated"]) == (str(seen), True)
