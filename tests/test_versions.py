"""Each Spark line's own additions still work through ``sdp_expect.pipelines``.

Spark 4.2 added ``create_auto_cdc_flow`` (SCD type 1), 4.3 added SCD type 2.
Expectations go on the change feed's source view; the flow then applies only
the records that passed, where the target's table format offers MERGE (SDPX-DEF-119
says where it does not: docs/formats.md#auto-cdc).
"""

from __future__ import annotations

from typing import Any, Optional

import pyspark
import pytest
from pyspark import pipelines as sdp
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, Pipeline

from sdp_expect import SdpExpectError
from sdp_expect import pipelines as dp

SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
CHANGES = "id INT, name STRING, seq INT, op STRING"
ROWS = [
    (1, "ann", 1, "upsert"),
    (2, "bob", 1, "upsert"),
    (1, "anna", 2, "upsert"),
    (None, "nobody", 3, "upsert"),  # dropped by the source view's rule
    (3, None, 1, "upsert"),         # dropped: a change without a name
    (2, "bob", 2, "delete"),
]


def auto_cdc_pipeline(make_pipeline: MakePipeline, **flow_options: Any) -> Pipeline:
    def define(spark: SparkSession) -> None:
        @dp.temporary_view
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_drop("has_name", "name IS NOT NULL")
        def customer_changes() -> DataFrame:
            return spark.readStream.table("changes")

        dp.create_streaming_table("customers")
        dp.create_auto_cdc_flow(target="customers", source="customer_changes", keys=["id"],
                                sequence_by="seq", apply_as_deletes="op = 'delete'",
                                except_column_list=["op"], **flow_options)

    pipeline = make_pipeline(define)
    pipeline.create_table("changes", ROWS, CHANGES)
    return pipeline


@pytest.mark.skipif(SPARK >= (4, 2), reason="Spark 4.2+ has create_auto_cdc_flow: this test "
                    "checks the error Spark 4.1 users get (it runs on the 4.1 line of CI)")
def test_spark_41_has_no_auto_cdc_and_says_so() -> None:
    with pytest.raises(AttributeError, match="create_auto_cdc_flow") as caught:
        _ = dp.create_auto_cdc_flow
    assert isinstance(caught.value, SdpExpectError) and caught.value.code == "SDPX-DEF-109"
    assert f"arrived in Spark 4.2; the installed pyspark is {pyspark.__version__}" in str(
        caught.value)
    assert not hasattr(dp, "create_auto_cdc_flow")


@pytest.mark.skipif(SPARK != (4, 2), reason="only Spark 4.2 has Auto CDC without SCD type 2: "
                    "this test checks the error its users get (it runs on the 4.2 line of CI)")
def test_spark_42_says_scd_type_2_needs_spark_43(make_pipeline: MakePipeline) -> None:
    pipeline = auto_cdc_pipeline(make_pipeline, stored_as_scd_type=2)
    result = pipeline.run(dry=True)
    assert not result.ok
    assert "[SDPX-DEF-109]" in result.output, result.output
    assert "SCD type 2 in create_auto_cdc_flow arrived in Spark 4.3" in result.output


@pytest.mark.skipif(SPARK < (4, 2), reason="create_auto_cdc_flow arrived in Spark 4.2; on 4.1 "
                    "test_spark_41_has_no_auto_cdc_and_says_so checks the error instead")
@pytest.mark.parametrize("scd_type", [
    None,
    pytest.param(2, marks=pytest.mark.skipif(
        SPARK < (4, 3), reason="SCD type 2 arrived in Spark 4.3; on 4.2 "
        "test_spark_42_says_scd_type_2_needs_spark_43 checks the error instead")),
])
def test_auto_cdc_into_a_parquet_table_is_refused_at_definition_not_during_the_run(
        make_pipeline: MakePipeline, scd_type: Optional[int]) -> None:
    """Auto CDC needs a target whose table offers MERGE, which Spark's parquet tables
    lack: plain SDP passes the dry run and fails the run when the flow starts (retried
    first); with sdp-expect the definition stops, in the dry run already, with
    SDPX-DEF-119 naming the table and its format (docs/formats.md#auto-cdc)."""
    options: dict[str, Any] = {} if scd_type is None else {"stored_as_scd_type": scd_type}
    plain = make_pipeline()
    plain.create_table("changes", ROWS, CHANGES)

    def define_plain(spark: SparkSession) -> None:
        @sdp.temporary_view
        def customer_changes() -> DataFrame:
            return spark.readStream.table("changes")

        sdp.create_streaming_table("customers")
        sdp.create_auto_cdc_flow(target="customers", source="customer_changes", keys=["id"],
                                 sequence_by="seq", **options)

    plain.definitions = define_plain
    assert plain.run(dry=True).ok
    run = plain.run()
    assert not run.ok and "AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE" in run.output, run.output
    dry = auto_cdc_pipeline(make_pipeline, **options).run(dry=True)
    assert not dry.ok
    assert "[SDPX-DEF-119]" in dry.output, dry.output
    assert "'customers' writes a table stored as parquet" in dry.output
    assert "AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE" in dry.output
