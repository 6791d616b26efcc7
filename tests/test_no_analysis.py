"""No Spark action and no analysis while the pipeline is defined (docs/semantics.md#metrics).

The client's RPCs are watched while a pipeline with every kind of companion
dataset is registered: commands (define dataset, define flow) are expected;
a query execution (``ExecutePlan`` of a relation) or an ``AnalyzePlan`` is not.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from pyspark.sql import DataFrame
from pyspark.sql.connect.proto.base_pb2_grpc import SparkConnectServiceStub
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline

from sdp_expect import dlt
from sdp_expect import pipelines as dp


@contextlib.contextmanager
def watched_rpcs() -> Iterator[list[tuple[str, str]]]:
    calls: list[tuple[str, str]] = []
    original = SparkConnectServiceStub.__getattribute__

    def spy(self: Any, name: str) -> Any:
        method = original(self, name)
        if name not in ("ExecutePlan", "AnalyzePlan"):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            request = args[0] if args else None
            kind = ""
            if name == "ExecutePlan" and request is not None:
                kind = request.plan.WhichOneof("op_type") or ""
                if kind == "command":
                    kind = "command:" + (request.plan.command.WhichOneof("command_type") or "")
            elif request is not None:
                kind = request.WhichOneof("analyze") or ""
            calls.append((name, kind))
            return method(*args, **kwargs)

        return call

    SparkConnectServiceStub.__getattribute__ = spy  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        SparkConnectServiceStub.__getattribute__ = original  # type: ignore[method-assign]


def test_defining_a_pipeline_with_every_companion_runs_no_query(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect("recent", "id > 0")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_fail("valid_amount", "amount >= 0")
        def silver() -> DataFrame:
            return spark.read.table("src")

        # A tolerance's guard (docs/thresholds.md) over another dataset of the pipeline.
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_fail("amount_known", "amount IS NOT NULL", max_failed="1%")
        @dp.expect_or_drop("small_id", "id < 100", max_failed=10)
        @dp.expect("positive", "amount > 0", max_failed=0)
        def gold() -> DataFrame:
            return spark.read.table("silver")

        @dp.table
        @dp.quarantine()
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def stream() -> DataFrame:
            return spark.readStream.table("silver")

        dp.create_streaming_table("merged", expect_all_or_drop={"valid_id": "id IS NOT NULL"},
                                  quarantine=True)

        @dp.append_flow(target="merged")
        def merge_in() -> DataFrame:
            return spark.readStream.table("silver")

        @dlt.table
        @dlt.expect_or_drop("valid_id", "id IS NOT NULL")
        def legacy() -> DataFrame:
            return dlt.read("silver")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5)], "id INT, amount INT")
    with watched_rpcs() as calls:
        pipeline.register()
    assert calls, "the spy saw no RPC at all; it is not watching"
    assert all(kind.startswith("command:") for _, kind in calls), calls
    assert not [c for c in calls if c[0] == "AnalyzePlan"], calls
    # and the definitions are real: the run works
    result = pipeline.run()
    assert result.ok, result.output
    assert result.table("gold").count() == 1
