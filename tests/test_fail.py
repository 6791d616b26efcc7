"""Fail expectations (docs/semantics.md#several-expectations, #fail) on real SDP runs."""

from __future__ import annotations

import json
from typing import Any

from batch_log import by_batch
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline

from sdp_expect import pipelines as dp

SCHEMA = "id INT, amount INT, region STRING, note STRING"


def violation_line(dataset: str, names: str, record: str) -> str:
    return (
        f"[EXPECTATION_VIOLATION] Flow '{dataset}' failed to meet the expectation. "
        f"Violated expectations: {names}. Output record: '{record}'."
    )


def test_error_line_names_only_the_violated_fail_rules_in_declaration_order(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("z_amount_positive", "amount > 0")
        @dp.expect("warn_rule", "amount > 100")
        @dp.expect_or_fail("a_region_known", "region IS NOT NULL")
        @dp.expect_or_fail("id_small", "id < 100")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(7, -1, None, "it's \"quoted\"")], SCHEMA)
    result = pipeline.run()
    assert not result.ok
    record = json.dumps({"id": 7, "amount": -1, "region": None, "note": "it's \"quoted\""},
                        separators=(",", ":"))
    line = violation_line("orders", "'z_amount_positive', 'a_region_known'", record)
    assert line in result.output, result.output
    assert any(line in event for event in result.events)


def test_failed_flow_is_not_retried_and_independent_flows_complete(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("amount_positive", "amount > 0")
        def checked() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        def downstream() -> DataFrame:
            return spark.read.table("checked")

        @dp.materialized_view
        def independent() -> DataFrame:
            return spark.read.table("src").select("id")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5, "eu", None), (2, -5, "us", None)], SCHEMA)
    result = pipeline.run()
    assert not result.ok
    running = [e for e in result.flow_events("checked") if "is RUNNING" in e]
    assert len(running) == 1, result.flow_events("checked")
    assert result.flow_state("checked") == "FAILED"
    assert result.flow_state("independent") == "COMPLETED"
    assert result.flow_state("downstream") == "SKIPPED"
    assert result.table("independent").count() == 2


def test_user_spark_conf_can_still_set_retries_on_a_flow_with_fail_rules(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view(spark_conf={"spark.sql.pipelines.maxFlowRetryAttempts": "1"})
        @dp.expect_or_fail("amount_positive", "amount > 0")
        def checked() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(2, -5, "us", None)], SCHEMA)
    result = pipeline.run()
    assert not result.ok
    running = [e for e in result.flow_events("checked") if "is RUNNING" in e]
    assert len(running) == 2, result.flow_events("checked")


def test_materialized_view_is_empty_after_a_failed_update(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("amount_positive", "amount > 0")
        @dp.quarantine()
        @dp.expect_or_drop("has_region", "region IS NOT NULL")
        def checked() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5, "eu", None), (3, 5, None, None)], SCHEMA)
    first = pipeline.run()
    assert first.ok, first.output
    assert first.table("checked").count() == 1
    assert first.table("checked_quarantine").count() == 1
    pipeline.create_table("src", [(1, 5, "eu", None), (2, -5, "us", None),
                                  (3, 5, None, None)], SCHEMA)
    second = pipeline.run()
    assert not second.ok
    # OSS SDP recomputes a materialized view at every update: after a failed one it is
    # empty until the next successful update, and no record of the update reached
    # the quarantine either.
    assert second.table("checked").count() == 0
    assert second.table("checked_quarantine").count() == 0


def test_fail_also_drop_record_fails_on_partitioned_parquet(make_pipeline: MakePipeline) -> None:
    """The drop rule is on the partition column: pruning must not hide the record."""
    pipeline = make_pipeline()
    path = pipeline.path("orders_parquet")
    rows = [(1, 5, "eu", None), (2, -5, "us", None), (3, 7, "eu", None)]
    pipeline.spark.createDataFrame(rows, SCHEMA).write.partitionBy("region").parquet(str(path))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("only_eu", "region = 'eu'")
        @dp.expect_or_fail("amount_positive", "amount > 0")
        def orders() -> DataFrame:
            return spark.read.parquet(str(path))

    pipeline.definitions = define
    result = pipeline.run()
    assert not result.ok
    assert "Violated expectations: 'amount_positive'" in result.output
    assert '"id":2' in result.output


def test_fail_also_drop_record_fails_on_null_partition_value(make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    path = pipeline.path("orders_parquet")
    rows = [(1, 5, "eu", None), (2, None, None, None)]
    pipeline.spark.createDataFrame(rows, SCHEMA).write.partitionBy("region").parquet(str(path))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("has_region", "region IS NOT NULL")
        @dp.expect_or_fail("has_amount", "amount IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.parquet(str(path))

    pipeline.definitions = define
    result = pipeline.run()
    assert not result.ok
    assert "Violated expectations: 'has_amount'" in result.output


def test_inferred_not_null_filter_does_not_hide_a_fail_record(make_pipeline: MakePipeline) -> None:
    """``amount > 10`` lets Catalyst infer ``isnotnull(amount)``; the fail check still runs."""

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("large", "amount > 10")
        @dp.expect_or_fail("has_amount", "amount IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 50, "eu", None), (2, None, "us", None)], SCHEMA)
    result = pipeline.run()
    assert not result.ok
    assert "Violated expectations: 'has_amount'" in result.output


def test_fail_rule_on_a_filtered_parquet_source_still_sees_every_record(
        make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    path = pipeline.path("orders_flat")
    rows = [(1, 50, "eu", None), (2, -1, "us", None)]
    pipeline.spark.createDataFrame(rows, SCHEMA).write.parquet(str(path))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("eu_only", "region = 'eu'")
        @dp.expect_or_drop("id_one", "id = 1")
        @dp.expect_or_fail("amount_positive", "amount > 0")
        def orders() -> DataFrame:
            return spark.read.parquet(str(path))

    pipeline.definitions = define
    result = pipeline.run()
    assert not result.ok
    assert "Violated expectations: 'amount_positive'" in result.output


def test_streaming_table_keeps_batches_committed_before_a_failed_update(
        make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    inbox.mkdir()

    def write(name: str, rows: list[tuple[Any, ...]]) -> None:
        keys = ["id", "amount", "region", "note"]
        lines = [json.dumps(dict(zip(keys, r, strict=True))) for r in rows]
        (inbox / name).write_text("\n".join(lines) + "\n")

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.quarantine()
        @dp.expect_or_drop("has_region", "region IS NOT NULL")
        @dp.expect_or_fail("amount_positive", "amount > 0")
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

    pipeline.definitions = define
    write("1.json", [(1, 5, "eu", None), (2, 6, None, None)])
    first = pipeline.run()
    assert first.ok, first.output
    write("2.json", [(3, 7, "eu", None), (4, -1, "eu", None)])
    second = pipeline.run()
    assert not second.ok
    expected = pipeline.spark.createDataFrame([(1, 5, "eu", None)], SCHEMA)
    assert_df_equality(second.table("orders"), expected, ignore_row_order=True,
                       ignore_nullable=True)
    # The quarantine and the batch log keep their committed batches too; the
    # metrics view, recomputed by OSS SDP at every update, is skipped and empty
    # until the next successful update.
    assert [row["id"] for row in second.rows("orders_quarantine")] == [2]
    assert [r["_records"] for r in by_batch(second.rows("orders_dq_batches"))] == [2]
    assert second.table("orders_dq_metrics").count() == 0
    # The source is fixed (the failed batch was never committed, so its file is
    # read again): the next update counts every record exactly once.
    write("2.json", [(3, 7, "eu", None), (4, 1, None, None)])
    third = pipeline.run()
    assert third.ok, third.output
    assert sorted(row["id"] for row in third.rows("orders")) == [1, 3]
    assert sorted(row["id"] for row in third.rows("orders_quarantine")) == [2, 4]
    metrics = {row["expectation"]: row for row in third.rows("orders_dq_metrics")}
    assert (metrics["has_region"]["failed_records"], metrics["has_region"]["total_records"],
            metrics["has_region"]["dropped_records"]) == (2, 4, 2)
    assert metrics["amount_positive"]["failed_records"] == 0


WIDE_COLUMNS = [f"c{i}" for i in range(120)]
"""More columns than ``spark.sql.codegen.maxFields`` (100): Spark evaluates such a
query's filters without generated code, expression by expression."""


def test_a_fail_rule_sees_only_the_records_the_query_keeps_on_a_wide_table(
        make_pipeline: MakePipeline) -> None:
    """The query's own filter leaves out a record with a NULL result (``upper(region) =
    'EU' OR amount > 100`` on a NULL region and a small amount: Spark neither infers
    ``isnotnull(region)`` from it nor skips parquet row groups with it). Spark combines
    adjacent filters into one conjunction, and without generated code a conjunction with
    a NULL left side evaluates its right side: the fail check would then stop the
    update for a record that is not in the dataset (sdp_expect.core.compiler.CHECK_BARRIER).
    Batch and streaming."""
    schema = SCHEMA + ", " + ", ".join(f"{c} INT" for c in WIDE_COLUMNS)
    rows = [(1, 5, "eu", "kept", *range(120)), (None, 7, None, "left out", *range(120)),
            (3, 9, "us", "left out too", *range(120))]

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("has_id", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src").where("upper(region) = 'EU' OR amount > 100")

        @dp.table
        @dp.expect_or_fail("has_id", "id IS NOT NULL")
        @dp.expect_or_drop("small", "amount < 100")
        def orders_stream() -> DataFrame:
            return spark.readStream.table("src").where("upper(region) = 'EU' OR amount > 100")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows, schema)
    result = pipeline.run()
    assert result.ok, result.output[-3000:]
    expected = pipeline.spark.createDataFrame(rows[:1], schema)
    for dataset in ("orders", "orders_stream"):
        assert_df_equality(result.table(dataset), expected, ignore_nullable=True)
        metrics = result.rows(f"{dataset}_dq_metrics")
        assert {(m["expectation"], m["passed_records"], m["total_records"])
                for m in metrics} >= {("has_id", 1, 1)}, metrics
