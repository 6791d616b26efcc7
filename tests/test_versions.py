"""Each Spark line's own additions still work through ``sdp_expect.pipelines``.

Spark 4.2 added ``create_auto_cdc_flow`` (SCD type 1), 4.3 added SCD type 2.
Expectations go on the change feed's source view; the flow then applies only
the records that passed. (The target's table format must support MERGE.)
"""

from __future__ import annotations

from typing import Any, Optional

import pyspark
import pytest
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
def test_auto_cdc_with_rules_on_its_source_view_defines_and_dry_runs(
        make_pipeline: MakePipeline, scd_type: Optional[int]) -> None:
    """Auto CDC needs a target format with MERGE (Delta Lake, Iceberg), which plain
    Spark lacks: here the graph with rules on the source view must pass a dry run,
    and a real run must stop with Spark's own explanation, not an sdp-expect error."""
    options = {} if scd_type is None else {"stored_as_scd_type": scd_type}
    pipeline = auto_cdc_pipeline(make_pipeline, **options)
    dry = pipeline.run(dry=True)
    assert dry.ok, dry.output
    assert {name: kind for name, kind in dry.outputs.items()
            if not name.startswith("_sdpx_check_")} == {"customer_changes": "TemporaryView",
                                                       "customers": "StreamingTable"}
    run = pipeline.run()
    assert not run.ok
    assert "AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE" in run.output, run.output
    assert "SDPX-" not in run.output
