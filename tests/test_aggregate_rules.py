"""Rules on the dataset as a whole (row count, aggregate: docs/row-count-rules.md,
docs/aggregate-rules.md), through real SDP runs, against a Python oracle; and their
refusals, planned without Spark."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any, Optional

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline
from test_no_analysis import watched_rpcs

from sdp_expect import pipelines as dp
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.options import PipelineOptions
from sdp_expect.base.violation import format_dataset_rule_message
from sdp_expect.core.compiler import RuleLogic
from sdp_expect.core.model import (
    Action,
    Aggregate,
    DatasetKind,
    DatasetRules,
    RowCount,
    make_expectation,
)
from sdp_expect.core.planner import PlanState, Step, plan_dataset
from sdp_expect.quality.summary import TableReading
from sdp_expect.report.as_json import report_dict
from sdp_expect.report.build import build_report
from sdp_expect.report.html import render_html
from sdp_expect.report.reader import _collect
from sdp_expect.report.text import to_text

SCHEMA = "id INT, amount INT, status STRING"
Row = tuple[int, Optional[int], Optional[str]]


def metrics_of(result: Any, dataset: str) -> dict[str, dict[str, Any]]:
    return {row["expectation"]: row for row in result.rows(f"{dataset}_dq_metrics")}


def rows(n: int) -> list[Row]:
    return [(i, i % 3 - 1, "paid" if i % 2 else "open") for i in range(n)]


# --------------------------------------------------------------------------- the oracle


def sql_sum(values: list[Optional[int]]) -> Optional[int]:
    """SQL's sum: NULL over no non-NULL value."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def expected_row(holds: bool, observed: Optional[str], total: int, dropped: int = 0
                 ) -> tuple[Any, ...]:
    """(passed, failed, total, dropped, observed, violated) of a dataset rule's metrics row
    (docs/semantics.md#rules-on-the-dataset-as-a-whole); ``dropped`` is the dataset's."""
    failed = 0 if holds else total
    return (total - failed, failed, total, dropped, observed, not holds)


def row_of(metrics: dict[str, dict[str, Any]], name: str) -> tuple[Any, ...]:
    row = metrics[name]
    return (row["passed_records"], row["failed_records"], row["total_records"],
            row["dropped_records"], row["observed"], row["violated"])


# --------------------------------------------------------------------------- row count


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 6), low=st.integers(0, 5), span=st.one_of(st.none(), st.integers(0, 3)),
       fail=st.booleans())
@example(n=0, low=1, span=None, fail=True)     # empty: just below min
@example(n=2, low=2, span=0, fail=True)        # exactly at both bounds
@example(n=3, low=2, span=0, fail=True)        # just above max
@example(n=1, low=2, span=1, fail=False)       # just below min, warn
@example(n=0, low=0, span=0, fail=True)        # empty within [0, 0]
def test_a_row_count_agrees_with_the_oracle(make_pipeline: MakePipeline, n: int, low: int,
                                            span: Optional[int], fail: bool) -> None:
    high = None if span is None else low + span
    rule = RowCount(low, high)

    def define(spark: SparkSession) -> None:
        decorator = dp.expect_or_fail if fail else dp.expect

        @dp.materialized_view
        @dp.quarantine()
        @decorator("count_ok", dp.row_count(min=low, max=high))
        @dp.expect_or_drop("positive", "amount > 0")
        def orders() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        def downstream() -> DataFrame:
            return spark.read.table("orders")

    data = rows(n)
    pipeline = make_pipeline(define)
    pipeline.create_table("src", data, SCHEMA)
    result = pipeline.run()
    holds = low <= n and (high is None or n <= high)
    assert holds == rule.holds(n)
    kept = [r for r in data if r[1] is not None and r[1] > 0]
    if fail and not holds:
        assert not result.ok
        said = format_dataset_rule_message("orders", [("count_ok", str(n), rule.bound_text)])
        assert said in result.output, result.output
        assert result.flow_state("orders") == "FAILED"
        # nothing of the update is written, and the reader is not refreshed
        assert result.flow_state("orders_quarantine") == "FAILED"
        assert result.flow_state("downstream") != "COMPLETED"
        for table in ("orders", "orders_quarantine", "orders_dq_metrics", "downstream"):
            assert not result.exists(table) or result.table(table).count() == 0, table
        return
    assert result.ok, result.output
    assert_df_equality(result.table("orders"), pipeline.spark.createDataFrame(kept, SCHEMA),
                       ignore_row_order=True)
    # the rule puts no record at fault: the quarantine names only the drop rule
    assert all(r["_failed_expectations"] == ["positive"]
               for r in result.rows("orders_quarantine"))
    metrics = metrics_of(result, "orders")
    assert row_of(metrics, "count_ok") == expected_row(holds, str(n), n,
                                                            n - len(kept))
    assert metrics["count_ok"]["constraint"] == rule.text
    assert metrics["count_ok"]["action"] == ("fail" if fail else "warn")
    # a record rule's row: the new columns are NULL, its counts as ever
    assert row_of(metrics, "positive") == (len(kept), n - len(kept), n, n - len(kept),
                                           None, None)


# --------------------------------------------------------------------------- aggregate


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(amounts=st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=5),
       fail=st.booleans())
@example(amounts=[], fail=False)               # sum over no record: NULL, a violation
@example(amounts=[None, None], fail=True)      # NULL again, fail
@example(amounts=[1, -1], fail=True)           # 0: just not > 0
@example(amounts=[1, None], fail=True)         # 1: holds
def test_an_aggregate_agrees_with_the_oracle(make_pipeline: MakePipeline,
                                             amounts: list[Optional[int]], fail: bool) -> None:
    def define(spark: SparkSession) -> None:
        decorator = dp.expect_or_fail if fail else dp.expect

        @dp.materialized_view
        @decorator("revenue_positive", dp.aggregate("sum(amount) > 0"))
        @dp.expect("some_paid", dp.aggregate("count_if(status = 'paid') >= 1"))
        def orders() -> DataFrame:
            return spark.read.table("src")

    data: list[Row] = [(i, a, "paid" if i == 1 else "open") for i, a in enumerate(amounts)]
    pipeline = make_pipeline(define)
    pipeline.create_table("src", data, SCHEMA)
    result = pipeline.run()
    total = sql_sum(amounts)
    value = None if total is None else total > 0
    holds = value is True
    shown = None if value is None else str(value).lower()
    if fail and not holds:
        assert not result.ok
        said = format_dataset_rule_message("orders", [("revenue_positive", shown, "true")])
        assert said in result.output, result.output
        assert result.flow_state("orders") == "FAILED"
        assert not result.exists("orders") or result.table("orders").count() == 0
        return
    assert result.ok, result.output
    assert result.table("orders").count() == len(data)
    metrics = metrics_of(result, "orders")
    n = len(data)
    assert row_of(metrics, "revenue_positive") == expected_row(holds, shown, n)
    paid = n > 1
    assert row_of(metrics, "some_paid") == expected_row(paid, str(paid).lower(), n)
    assert metrics["revenue_positive"]["constraint"] == "sum(amount) > 0"


def test_null_result_pass_makes_a_null_aggregate_pass(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("revenue_positive", dp.aggregate("sum(amount) > 0"))
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define, conf={"sdp_expect.null_result": "pass"})
    pipeline.create_table("src", [], SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    assert row_of(metrics_of(result, "orders"), "revenue_positive") == (0, 0, 0, 0, None, False)


def test_a_misspelt_column_in_an_aggregate_fails_its_check_view(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("bad", dp.aggregate("sum(no_such_column) > 0"))
        @dp.expect("fine", dp.row_count(min=1))
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows(2), SCHEMA)
    result = pipeline.run(dry=True)
    assert not result.ok
    line = next(line for line in result.output.splitlines()
                if line.strip().startswith("Flows with errors:"))
    failed = sorted(f.strip() for f in line.split(":", 1)[1].split(",")
                    if "_sdpx_check_" in f)
    assert failed == ["_sdpx_check_orders_1"], result.output


def test_defining_dataset_rules_runs_no_query(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("not_empty", dp.row_count(min=1))
        @dp.expect("revenue_positive", dp.aggregate("sum(amount) > 0"))
        @dp.expect_or_drop("once", dp.unique("id"), max_failed=5)
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows(4), SCHEMA)
    with watched_rpcs() as calls:
        pipeline.register()
    assert calls, "the spy saw no RPC at all; it is not watching"
    assert all(kind.startswith("command:") for _, kind in calls), calls
    result = pipeline.run()
    assert result.ok, result.output
    assert result.table("orders").count() == 4


# --------------------------------------------------------------------------- the report


def test_the_summary_and_the_report_show_a_dataset_rule_s_verdict(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("not_empty", dp.row_count(min=1))
        @dp.expect("revenue_positive", dp.aggregate("sum(amount) > 0"))
        @dp.expect("positive", "amount > 0")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [], SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    reading = TableReading.from_json(_collect(pipeline.spark, catalog=None,
                                              database=pipeline.database, sample=5))
    report = build_report(reading, flows={
        f"spark_catalog.{pipeline.database}.orders_dq_metrics": "COMPLETED"},
        violations=[], run_status="COMPLETED")
    lines = to_text(report).splitlines()
    assert "    not_empty: ROW COUNT >= 1: observed 0, NOT MET" in lines, lines
    assert "    revenue_positive: sum(amount) > 0: observed NULL, NOT MET" in lines, lines
    rules = {r["expectation"]: r for r in report_dict(report)["datasets"][0]["rules"]}
    assert (rules["not_empty"]["observed"], rules["not_empty"]["violated"]) == ("0", True)
    assert "observed" not in rules["positive"]  # a record rule's entry is as before
    page = render_html(report)
    assert 'data-observed="0" data-violated="true">observed 0: not met' in page


# --------------------------------------------------------------------------- SQL files

SQL_RULES = """\
- name: not_empty
  row_count: {min: 1}
  failureAction: fail
- name: revenue_positive
  aggregate: "sum(amount) > 0"
- name: amount_present
  constraint: amount IS NOT NULL
  failureAction: drop
"""


def sql_project(tmp_path: Path, properties: str = "") -> Path:
    root = tmp_path / "project"
    (root / "databricks_sql").mkdir(parents=True)
    (root / "databricks_sql" / "rules.yml").write_text(SQL_RULES, encoding="utf-8")
    (root / "databricks_sql" / "pipeline.sql").write_text(textwrap.dedent(f"""\
        CREATE OR REFRESH MATERIALIZED VIEW orders
        TBLPROPERTIES ('sdp_expect.rules' = 'rules.yml'{properties})
        AS SELECT * FROM src;
        """))
    transformations = root / "transformations"
    transformations.mkdir()
    (transformations / "include_sql.py").write_text(
        "from sdp_expect import sql\n\nsql.include('../databricks_sql/pipeline.sql')\n")
    return transformations


def test_a_databricks_sql_file_takes_dataset_rules_from_its_rule_file(
        make_pipeline: MakePipeline, tmp_path: Path) -> None:
    """The SQL emitter: the same guard and metrics as SQL text."""
    pipeline = make_pipeline(files=sql_project(tmp_path))
    pipeline.create_table("src", [(1, -2, "x"), (2, None, "y")], SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    assert [r["id"] for r in result.rows("orders")] == [1]
    metrics = metrics_of(result, "orders")
    assert row_of(metrics, "not_empty") == expected_row(True, "2", 2, 1)
    assert row_of(metrics, "revenue_positive") == expected_row(False, "false", 2, 1)
    pipeline.create_table("src", [], SCHEMA)
    empty = pipeline.run()
    assert not empty.ok
    assert format_dataset_rule_message("orders", [("not_empty", "0", "at least 1")]) in (
        empty.output)


def test_a_sql_tolerance_property_on_a_dataset_rule_is_refused(
        make_pipeline: MakePipeline, tmp_path: Path) -> None:
    files = sql_project(tmp_path, ", 'sdp_expect.max_failed.not_empty' = '1'")
    pipeline = make_pipeline(files=files)
    with pytest.raises(SdpExpectError) as raised:
        pipeline.register()
    assert (raised.value.code, raised.value.dataset, raised.value.expectation) == (
        "SDPX-DEF-116", "orders", "not_empty")


# --------------------------------------------------------------------------- streaming


def test_a_warn_row_count_on_a_streaming_table_counts_the_records_since_the_last_refresh(
        make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    inbox.mkdir(parents=True, exist_ok=True)

    def write(name: str, ids: list[int]) -> None:
        (inbox / name).write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.expect("few", dp.row_count(min=1, max=4))
        @dp.expect("positive", "id > 0")
        def events() -> DataFrame:
            return spark.readStream.schema("id INT").json(str(inbox))

    pipeline.definitions = define
    write("1.json", [1, 2, -3])
    first = pipeline.run()
    assert first.ok, first.output
    assert row_of(metrics_of(first, "events"), "few") == expected_row(True, "3", 3)
    write("2.json", [4, 5])
    second = pipeline.run()
    assert second.ok, second.output
    assert sorted(r["id"] for r in second.rows("events")) == [-3, 1, 2, 4, 5]
    metrics = metrics_of(second, "events")
    assert row_of(metrics, "few") == expected_row(False, "5", 5)
    assert metrics["positive"]["failed_records"] == 1


# --------------------------------------------------------------------------- refusals


def plan(kind: DatasetKind, *rules: Any) -> None:
    dataset = DatasetRules("orders")
    for name, rule, action in rules:
        dataset.add(make_expectation(name, rule, action, dataset="orders"))
    options = PipelineOptions()
    plan_dataset(dataset, kind, options, state=PlanState(options))


@pytest.mark.parametrize(("kind", "rule", "action"), [
    (DatasetKind.STREAMING_TABLE, RowCount(1), Action.FAIL),
    (DatasetKind.STREAMING_TABLE, Aggregate("sum(amount) > 0"), Action.WARN),
    (DatasetKind.STREAMING_TABLE, Aggregate("sum(amount) > 0"), Action.FAIL),
    (DatasetKind.TEMPORARY_VIEW, RowCount(1), Action.WARN),
    (DatasetKind.TEMPORARY_VIEW, Aggregate("sum(amount) > 0"), Action.FAIL),
])
def test_a_dataset_rule_where_it_cannot_be_judged_is_refused(
        kind: DatasetKind, rule: Any, action: Action) -> None:
    with pytest.raises(SdpExpectError) as raised:
        plan(kind, ("whole", rule, action))
    assert (raised.value.code, raised.value.dataset, raised.value.expectation) == (
        "SDPX-DEF-117", "orders", "whole")
    assert raised.value.fix and "materialized view" in raised.value.fix


def test_a_warn_row_count_on_a_streaming_table_is_planned() -> None:
    plan(DatasetKind.STREAMING_TABLE, ("few", RowCount(max=9), Action.WARN))


@pytest.mark.parametrize(("rule", "action", "max_failed", "code"), [
    (RowCount(1), Action.DROP, None, "SDPX-DEF-115"),
    (Aggregate("sum(amount) > 0"), Action.DROP, None, "SDPX-DEF-115"),
    (RowCount(1), Action.FAIL, "1", "SDPX-DEF-116"),
    (Aggregate("sum(amount) > 0"), Action.WARN, "1%", "SDPX-DEF-116"),
    (RowCount(), Action.WARN, None, "SDPX-VAL-018"),
    (RowCount(-1), Action.WARN, None, "SDPX-VAL-018"),
    (RowCount(3, 2), Action.WARN, None, "SDPX-VAL-020"),
    (RowCount(1.5), Action.WARN, None, "SDPX-VAL-018"),  # type: ignore[arg-type]
    (RowCount(True), Action.WARN, None, "SDPX-VAL-018"),
    (RowCount(max=2**63), Action.WARN, None, "SDPX-VAL-018"),
    (Aggregate(""), Action.WARN, None, "SDPX-VAL-001"),
    (Aggregate(3), Action.WARN, None, "SDPX-VAL-008"),  # type: ignore[arg-type]
    (Aggregate("amount > 0"), Action.WARN, None, "SDPX-VAL-019"),
    (Aggregate("sum(amount) > rand()"), Action.WARN, None, "SDPX-VAL-010"),
    (Aggregate("sum(amount) OVER () > 0"), Action.WARN, None, "SDPX-VAL-010"),
    (Aggregate("sum(amount) > (SELECT 1)"), Action.WARN, None, "SDPX-VAL-010"),
    (Aggregate("sum(amount > 0"), Action.WARN, None, "SDPX-VAL-011"),
])
def test_a_malformed_dataset_rule_is_a_coded_error_naming_the_rule(
        rule: Any, action: Action, max_failed: Optional[str], code: str) -> None:
    with pytest.raises(SdpExpectError) as raised:
        make_expectation("whole", rule, action, dataset="orders", max_failed=max_failed)
    assert (raised.value.code, raised.value.dataset, raised.value.expectation) == (
        code, "orders", "whole")


def test_the_decorators_give_dataset_rules_and_refuse_drop() -> None:
    assert dp.row_count(min=1) == RowCount(1, None)
    assert dp.aggregate("sum(a) > 0") == Aggregate("sum(a) > 0")
    expectation = make_expectation("n", dp.row_count(min=1, max=10), "fail")
    assert (expectation.constraint, expectation.whole, expectation.stops_at_first) == (
        "ROW COUNT BETWEEN 1 AND 10", RowCount(1, 10), False)


def test_a_dataset_rule_is_no_per_record_rule_and_its_metrics_count_the_query() -> None:
    dataset = DatasetRules("orders")
    dataset.add(make_expectation("n", RowCount(1), Action.FAIL))
    dataset.add(make_expectation("sum", Aggregate("sum(amount) > 0"), Action.WARN))
    dataset.add(make_expectation("p", "amount > 0", Action.DROP))
    options = PipelineOptions(metrics_from_output=True)
    planned = plan_dataset(dataset, DatasetKind.MATERIALIZED_VIEW, options,
                           state=PlanState(options), )
    metrics = [d for d in planned.datasets if d.name == "orders_dq_metrics"]
    assert metrics and metrics[0].query is not None
    assert metrics[0].query.step is Step.METRICS_FROM_QUERY
    logic = RuleLogic(dataset, null_passes=options.null_passes)
    # the quarantine names the record rule only; the guard carries the fail rule
    assert "'n'" not in logic.failed_names() and "'sum'" not in logic.failed_names()
    assert logic.needs_tolerance_guard()
    assert "[EXPECTATION_DATASET_RULE_FAILED]" in logic.tolerance_guard_column()
