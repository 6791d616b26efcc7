"""Streaming tables: rules on every flow into a table, and updates over time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, RunResult

from sdp_expect import SdpExpectError
from sdp_expect import pipelines as dp

SCHEMA = "id INT, amount INT, source STRING"
COLUMNS = ["id", "amount", "source"]


def write_json(folder: Path, name: str, rows: list[tuple[Any, ...]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(dict(zip(COLUMNS, row, strict=True))) for row in rows]
    (folder / name).write_text("\n".join(lines) + "\n")


def metrics_by_name(result: RunResult, dataset: str) -> dict[str, dict[str, Any]]:
    return {row["expectation"]: row for row in result.rows(f"{dataset}_dq_metrics")}


WEB_ROWS = [(1, 10, "web"), (None, 5, "web"), (3, -1, "web")]
SHOP_ROWS = [(4, 7, "shop"), (5, None, "shop")]
KEPT = [(1, 10, "web"), (4, 7, "shop")]
QUARANTINED = {
    (None, 5, "web"): ["valid_id"],
    (3, -1, "web"): ["not_negative"],
    (5, None, "shop"): ["small", "not_negative"],
}


def _orders_rules() -> None:
    dp.create_streaming_table(
        "orders",
        expect_all={"small": "amount < 10"},
        expect_all_or_drop={"valid_id": "id IS NOT NULL", "not_negative": "amount >= 0"},
        quarantine=True,
    )


def _two_flows(web: Path, shop: Path) -> Any:
    def define(spark: SparkSession) -> None:
        _orders_rules()

        @dp.append_flow(target="orders")
        def from_web() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(web))

        @dp.append_flow(target="orders", name="from_shop")
        def shop_flow() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(shop))

    return define


def test_two_flows_into_a_parquet_streaming_table_are_refused_where_defined(
        make_pipeline: MakePipeline) -> None:
    """Spark's parquet file sink keeps one commit log per table and assumes one
    writer: the second flow's batches would be skipped as "already committed"
    and the table, its quarantine and its metrics would count one flow's records.
    The second flow is refused before anything runs (docs/semantics.md#several-flows)."""
    pipeline = make_pipeline()
    web, shop = pipeline.path("web"), pipeline.path("shop")
    write_json(web, "1.json", WEB_ROWS)
    write_json(shop, "1.json", SHOP_ROWS)
    pipeline.definitions = _two_flows(web, shop)
    result = pipeline.run()
    assert result.events == [], "no flow may start when the definition is wrong"
    error = result.error
    assert isinstance(error, SdpExpectError), result.output
    assert error.code == "SDPX-DEF-112"
    assert error.dataset == "orders"
    assert error.place is not None and error.place.line is not None
    message = str(error)
    assert "'from_web', 'from_shop'" in message and "parquet" in message
    assert "spark.sql.sources.default" in message  # no format= given: the session's
    assert "delta" in message and "sdp_expect.multiple_flows_on_file_formats" in message


def test_one_flow_over_a_union_is_exact_on_parquet(make_pipeline: MakePipeline) -> None:
    """The fix SDPX-DEF-112 names: one flow reading both sources. Every record of
    both sources is kept, quarantined or counted exactly once, read through Spark."""
    pipeline = make_pipeline()
    web, shop = pipeline.path("web"), pipeline.path("shop")
    write_json(web, "1.json", WEB_ROWS)
    write_json(shop, "1.json", SHOP_ROWS)

    def define(spark: SparkSession) -> None:
        _orders_rules()

        @dp.append_flow(target="orders")
        def from_both() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(web)).unionByName(
                spark.readStream.schema(SCHEMA).json(str(shop)))

    pipeline.definitions = define
    result = pipeline.run()
    assert result.ok, result.output
    kept = pipeline.spark.createDataFrame(KEPT, SCHEMA)
    assert_df_equality(result.table("orders"), kept, ignore_row_order=True,
                       ignore_nullable=True)
    quarantine = {(r["id"], r["amount"], r["source"]): r["_failed_expectations"]
                  for r in result.rows("orders_quarantine")}
    assert quarantine == QUARANTINED
    metrics = metrics_by_name(result, "orders")
    assert {name: (row["total_records"], row["failed_records"])
            for name, row in metrics.items()} == {
        "small": (5, 2), "valid_id": (5, 1), "not_negative": (5, 2)}

    # A second update with new files in both sources: every table adds exactly them.
    write_json(web, "2.json", [(6, 3, "web"), (7, -5, "web")])
    write_json(shop, "2.json", [(8, 50, "shop")])
    second = pipeline.run()
    assert second.ok, second.output
    assert_df_equality(second.table("orders"), pipeline.spark.createDataFrame(
        [*KEPT, (6, 3, "web"), (8, 50, "shop")], SCHEMA), ignore_row_order=True,
        ignore_nullable=True)
    quarantine = {(r["id"], r["amount"], r["source"]): r["_failed_expectations"]
                  for r in second.rows("orders_quarantine")}
    assert quarantine == {**QUARANTINED, (7, -5, "web"): ["not_negative"]}
    assert {name: (row["total_records"], row["failed_records"], row["dropped_records"])
            for name, row in metrics_by_name(second, "orders").items()} == {
        "small": (8, 3, 4), "valid_id": (8, 1, 4), "not_negative": (8, 3, 4)}


def test_two_flows_allowed_by_the_setting_each_get_the_rules(
        make_pipeline: MakePipeline) -> None:
    """``sdp_expect.multiple_flows_on_file_formats = allow`` is for a user whose storage
    is safe; on this machine's parquet it is not, so only what each flow wrote is
    checked: whatever a flow wrote is right, and each flow was compiled with the rules
    and its own companion flows."""
    pipeline = make_pipeline(conf={"sdp_expect.multiple_flows_on_file_formats": "allow"})
    web, shop = pipeline.path("web"), pipeline.path("shop")
    write_json(web, "1.json", WEB_ROWS)
    write_json(shop, "1.json", SHOP_ROWS)
    pipeline.definitions = _two_flows(web, shop)
    result = pipeline.run()
    assert result.ok, result.output
    for flow in ("from_web", "from_shop"):
        assert result.flows[flow] == "orders"
        assert result.flows[f"{flow}_to_quarantine"] == "orders_quarantine"
        # The batch log's flow is registered as SQL (its watermark): its events say it ran.
        assert result.flow_state(f"{flow}_to_dq_batches") == "COMPLETED", result.output
    target = {(r["id"], r["amount"], r["source"]) for r in result.rows("orders")}
    assert target and target <= set(KEPT)
    for row in result.rows("orders_quarantine"):
        key = (row["id"], row["amount"], row["source"])
        assert row["_failed_expectations"] == QUARANTINED[key]
    metrics = metrics_by_name(result, "orders")
    assert set(metrics) == {"small", "valid_id", "not_negative"}
    for row in metrics.values():
        assert row["passed_records"] + row["failed_records"] == row["total_records"] <= 5


def test_streaming_table_over_two_updates_counts_each_record_once(
        make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.quarantine()
        @dp.expect("small", "amount < 100")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

    pipeline.definitions = define
    write_json(inbox, "1.json", [(1, 10, "a"), (None, 20, "a"), (3, 300, "a")])
    first = pipeline.run()
    assert first.ok, first.output
    first_metrics = metrics_by_name(first, "orders")
    assert first_metrics["valid_id"]["total_records"] == 3

    write_json(inbox, "2.json", [(4, 40, "b"), (None, 500, "b")])
    second = pipeline.run()
    assert second.ok, second.output
    kept = pipeline.spark.createDataFrame([(1, 10, "a"), (3, 300, "a"), (4, 40, "b")], SCHEMA)
    assert_df_equality(second.table("orders"), kept, ignore_row_order=True,
                       ignore_nullable=True)
    assert second.table("orders_quarantine").count() == 2
    metrics = metrics_by_name(second, "orders")
    # Cumulative since the last full refresh: 5 records, each counted once.
    assert metrics["valid_id"]["total_records"] == 5
    assert metrics["valid_id"]["failed_records"] == 2
    assert metrics["small"]["failed_records"] == 2
    assert metrics["small"]["dropped_records"] == 2

    third = pipeline.run()  # nothing new arrived
    assert third.ok, third.output
    assert metrics_by_name(third, "orders")["valid_id"]["total_records"] == 5
    assert third.table("orders").count() == 3
    # The batch log: one row per micro-batch (one per update here), each written by
    # the update that read it (the batch without data that ends the update moves the
    # watermark past it), none by the update that read nothing.
    log = sorted(third.rows("orders_dq_batches"), key=lambda r: r["_batch_time"])
    assert [(r["_records"], r["_dropped"], r["_failed"]) for r in log] == [
        (3, 1, {"small": 1, "valid_id": 1}), (2, 1, {"small": 1, "valid_id": 1})]


def test_the_batch_log_grows_with_the_micro_batches_not_the_records(
        make_pipeline: MakePipeline) -> None:
    """Four files of 50 records, one micro-batch each: four rows of counts, in one update."""
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.expect("small", "amount < 40")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_fail("known_source", "source IS NOT NULL")
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(
                str(inbox))

    files = [[(None if (f + i) % 7 == 0 else i, i, f"f{f}") for i in range(50)]
             for f in range(4)]
    for number, rows in enumerate(files):
        write_json(inbox, f"{number}.json", rows)
    pipeline.definitions = define
    result = pipeline.run()
    assert result.ok, result.output
    log = sorted(result.rows("orders_dq_batches"), key=lambda r: r["_batch_time"])
    expected = [(50, sum(r[0] is None for r in rows),
                 {"small": sum(r[1] >= 40 for r in rows),
                  "valid_id": sum(r[0] is None for r in rows)}) for rows in files]
    # One row per micro-batch; the files' order within the stream is Spark's.
    def key(records: int, dropped: int, failed: dict[str, int]) -> Any:
        return (records, dropped, sorted(failed.items()))

    assert sorted(key(r["_records"], r["_dropped"], r["_failed"]) for r in log) == sorted(
        key(*e) for e in expected)
    metrics = metrics_by_name(result, "orders")
    assert {m["total_records"] for m in metrics.values()} == {200}
    assert metrics["valid_id"]["failed_records"] == sum(e[1] for e in expected)
    assert metrics["small"]["failed_records"] == sum(e[2]["small"] for e in expected)
    assert metrics["known_source"]["failed_records"] == 0


def test_full_refresh_counts_again_from_the_data_present(make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

    pipeline.definitions = define
    write_json(inbox, "1.json", [(1, 10, "a"), (None, 20, "a")])
    assert pipeline.run().ok
    write_json(inbox, "2.json", [(2, 10, "b")])
    assert pipeline.run().ok
    refreshed = pipeline.run(full_refresh_all=True)
    assert refreshed.ok, refreshed.output
    assert refreshed.table("orders").count() == 2
    assert metrics_by_name(refreshed, "orders")["valid_id"]["total_records"] == 3


def test_companion_tables_of_a_streaming_table_take_its_format(make_pipeline: MakePipeline) -> None:
    """Flows append to the quarantine and the batch log as they do to the table."""
    pipeline = make_pipeline()
    source = pipeline.path("in")
    write_json(source, "1.json", [(1, 10, "web"), (None, 5, "web")])

    def define(spark: SparkSession) -> None:
        @dp.table(format="json")
        @dp.quarantine()
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(source))

    pipeline.definitions = define
    result = pipeline.run()
    assert result.ok, result.output
    for table in ("orders", "orders_quarantine", "orders_dq_batches"):
        described = result.spark.sql(
            f"DESCRIBE TABLE EXTENDED `{result.database}`.`{table}`").collect()
        provider = {row[0]: row[1] for row in described}.get("Provider")
        assert provider == "json", (table, provider)
    assert [row["id"] for row in result.rows("orders_quarantine")] == [None]
