"""Warn, drop and fail, alone and mixed, through real SDP runs.

What they mean: docs/semantics.md, sections Expectations to Several expectations.
"""

from __future__ import annotations

from typing import Any, Optional

from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import Definitions, MakePipeline, Pipeline, RunResult

from sdp_expect import pipelines as dp

ORDERS_SCHEMA = "id INT, amount INT, status STRING"
ORDERS = [
    (1, 10, "open"),
    (2, -5, "open"),
    (None, 7, "closed"),
    (4, None, "open"),
    (5, 0, None),
]


def orders_pipeline(make_pipeline: MakePipeline, define: Definitions,
                    conf: Optional[dict[str, str]] = None) -> Pipeline:
    pipeline = make_pipeline(define, conf=conf)
    pipeline.create_table("orders", ORDERS, ORDERS_SCHEMA)
    return pipeline


def expected(pipeline: Pipeline, rows: list[tuple[Any, ...]]) -> DataFrame:
    return pipeline.spark.createDataFrame(rows, ORDERS_SCHEMA)


def metrics_by_name(result: RunResult, dataset: str) -> dict[str, dict[str, Any]]:
    return {row["expectation"]: row for row in result.rows(f"{dataset}_dq_metrics")}


def test_warn_writes_every_record_and_counts_the_violations(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("positive_amount", "amount > 0")
        def silver() -> DataFrame:
            return spark.read.table("orders")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    assert_df_equality(result.table("silver"), expected(pipeline, ORDERS), ignore_row_order=True)
    metrics = metrics_by_name(result, "silver")["positive_amount"]
    # -5, NULL and 0 violate; NULL is a violation.
    assert (metrics["passed_records"], metrics["failed_records"]) == (2, 3)
    assert (metrics["total_records"], metrics["dropped_records"]) == (5, 0)


def test_drop_removes_records_whose_constraint_is_false_or_null(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("positive_amount", "amount > 0")
        def silver() -> DataFrame:
            return spark.read.table("orders")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    keep = [(1, 10, "open"), (None, 7, "closed")]
    assert_df_equality(result.table("silver"), expected(pipeline, keep), ignore_row_order=True)
    metrics = metrics_by_name(result, "silver")["positive_amount"]
    assert (metrics["failed_records"], metrics["dropped_records"]) == (3, 3)


def test_fail_rule_that_holds_writes_every_record(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("known_status", "status IS NOT NULL OR id = 5")
        def silver() -> DataFrame:
            return spark.read.table("orders")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    assert_df_equality(result.table("silver"), expected(pipeline, ORDERS), ignore_row_order=True)


def test_warn_drop_and_fail_stacked_apply_each_rule_independently(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("open_status", "status = 'open'")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_fail("id_or_amount", "id IS NOT NULL OR amount IS NOT NULL")
        @dp.expect_or_drop("amount_not_negative", "amount >= 0")
        def silver() -> DataFrame:
            return spark.read.table("orders")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    keep = [(1, 10, "open"), (5, 0, None)]
    assert_df_equality(result.table("silver"), expected(pipeline, keep), ignore_row_order=True)
    metrics = metrics_by_name(result, "silver")
    assert set(metrics) == {"open_status", "valid_id", "id_or_amount", "amount_not_negative"}
    assert metrics["open_status"]["failed_records"] == 2  # closed and NULL status
    assert metrics["valid_id"]["failed_records"] == 1
    assert metrics["amount_not_negative"]["failed_records"] == 2
    assert metrics["id_or_amount"]["failed_records"] == 0
    assert {m["action"] for m in metrics.values()} == {"warn", "drop", "fail"}
    assert {m["dropped_records"] for m in metrics.values()} == {3}


def test_expect_all_dicts_give_each_rule_its_own_counts(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_all({"has_status": "status IS NOT NULL", "small": "amount < 100"})
        @dp.expect_all_or_drop({"valid_id": "id IS NOT NULL", "has_amount": "amount IS NOT NULL"})
        @dp.expect_all_or_fail({"id_positive": "id > 0 OR id IS NULL"})
        def silver() -> DataFrame:
            return spark.read.table("orders")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    keep = [(1, 10, "open"), (2, -5, "open"), (5, 0, None)]
    assert_df_equality(result.table("silver"), expected(pipeline, keep), ignore_row_order=True)
    metrics = metrics_by_name(result, "silver")
    assert {name: m["action"] for name, m in metrics.items()} == {
        "has_status": "warn", "small": "warn", "valid_id": "drop", "has_amount": "drop",
        "id_positive": "fail",
    }
    assert metrics["has_status"]["failed_records"] == 1
    assert metrics["small"]["failed_records"] == 1  # NULL amount
    assert metrics["has_amount"]["failed_records"] == 1


def test_forty_stacked_decorators_all_apply(make_pipeline: MakePipeline) -> None:
    thresholds = list(range(-20, 20))

    def define(spark: SparkSession) -> None:
        def query() -> DataFrame:
            return spark.read.table("orders")

        for threshold in thresholds:
            query = dp.expect(f"above_{threshold}", f"coalesce(amount, 0) > {threshold}")(query)
        query = dp.expect_or_drop("not_negative", "amount >= 0")(query)
        dp.materialized_view(name="silver")(query)

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    metrics = metrics_by_name(result, "silver")
    assert len(metrics) == 41
    amounts = [row[1] if row[1] is not None else 0 for row in ORDERS]
    for threshold in thresholds:
        failing = sum(1 for amount in amounts if not amount > threshold)
        assert metrics[f"above_{threshold}"]["failed_records"] == failing
    assert result.table("silver").count() == 3


def test_name_comment_and_spark_conf_arguments_pass_through(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view(name="orders_clean", comment="clean orders",
                              spark_conf={"spark.sql.shuffle.partitions": "3"})
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def any_function_name() -> DataFrame:
            return spark.read.table("orders")

        @dp.table(name="orders_stream", comment="a stream")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def another_name() -> DataFrame:
            return spark.readStream.table("orders_clean")

        @dp.temporary_view(name="orders_view")
        @dp.expect_or_drop("has_status", "status IS NOT NULL")
        def third_name() -> DataFrame:
            return spark.read.table("orders_clean")

        @dp.materialized_view(name="from_view")
        def fourth_name() -> DataFrame:
            return spark.read.table("orders_view")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    assert result.outputs["orders_clean"] == "MaterializedView"
    assert result.outputs["orders_stream"] == "StreamingTable"
    assert result.outputs["orders_view"] == "TemporaryView"
    assert result.table("orders_clean").count() == 4
    assert result.table("orders_stream").count() == 4
    assert result.table("from_view").count() == 3
    assert not result.exists("any_function_name")
    assert result.exists("orders_clean_dq_metrics")


def test_a_dataset_without_rules_is_left_exactly_as_pyspark_defines_it(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def plain() -> DataFrame:
            return spark.read.table("orders")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    assert set(result.outputs) == {"plain"}
    assert_df_equality(result.table("plain"), expected(pipeline, ORDERS), ignore_row_order=True)


def test_temporary_view_with_drop_rule_read_by_a_materialized_view(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.temporary_view
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_fail("amount_known_for_open", "status <> 'open' OR status IS NULL OR "
                           "amount IS NOT NULL OR id = 4")
        def orders_checked() -> DataFrame:
            return spark.read.table("orders")

        @dp.materialized_view
        def orders_gold() -> DataFrame:
            return spark.read.table("orders_checked").where("amount IS NOT NULL")

    pipeline = orders_pipeline(make_pipeline, define)
    result = pipeline.run()
    assert result.ok, result.output
    keep = [(1, 10, "open"), (2, -5, "open"), (5, 0, None)]
    assert_df_equality(result.table("orders_gold"), expected(pipeline, keep),
                       ignore_row_order=True)
    # A view has no quarantine and no metrics table (docs/semantics.md#quarantine, #metrics).
    assert {n for n in result.outputs if not n.startswith("_sdpx_check_")} == {
        "orders_checked", "orders_gold"}
