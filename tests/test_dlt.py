"""``from sdp_expect import dlt``: the Delta Live Tables names on open-source SDP."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline

from sdp_expect import dlt

SCHEMA = "id INT, amount INT"


def test_dlt_table_kind_follows_the_query_and_rules_apply(make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    inbox.mkdir()
    (inbox / "1.json").write_text(
        "\n".join(json.dumps({"id": i, "amount": a}) for i, a in [(1, 5), (None, 6), (3, -1)])
    )

    def define(spark: SparkSession) -> None:
        @dlt.table
        @dlt.expect_or_drop("valid_id", "id IS NOT NULL")
        def events() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

        @dlt.view
        @dlt.expect_or_drop("not_negative", "amount >= 0")
        def events_view() -> DataFrame:
            return dlt.read("LIVE.events")

        @dlt.table(name="events_batch")
        @dlt.expect_all({"small": "amount < 6"})
        def batch() -> DataFrame:
            return dlt.read("events_view")

        @dlt.table
        def events_copy() -> DataFrame:
            return dlt.read_stream("events")

    pipeline.definitions = define
    result = pipeline.run()
    assert result.ok, result.output
    assert result.outputs["events"] == "StreamingTable"
    assert result.outputs["events_view"] == "TemporaryView"
    assert result.outputs["events_batch"] == "MaterializedView"
    assert result.outputs["events_copy"] == "StreamingTable"
    assert sorted(r["id"] for r in result.rows("events")) == [1, 3]
    assert [r["id"] for r in result.rows("events_batch")] == [1]
    assert sorted(r["id"] for r in result.rows("events_copy")) == [1, 3]


def test_dlt_table_over_sql_text_with_stream_is_a_streaming_table(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dlt.table
        def numbers() -> DataFrame:
            return spark.readStream.table("src")

        @dlt.table
        def numbers_sql() -> DataFrame:
            return spark.sql("SELECT * FROM STREAM(numbers)")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5)], SCHEMA)
    result = pipeline.run(dry=True)
    assert result.outputs["numbers_sql"] == "StreamingTable", result.output
