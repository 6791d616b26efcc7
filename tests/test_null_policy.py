"""NULL is a violation everywhere; ``sdp_expect.null_result: pass`` makes it pass
everywhere: target filter, quarantine, fail check and metrics (docs/semantics.md#null)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, RunResult

from sdp_expect import pipelines as dp

SCHEMA = "id INT, amount INT"
ROWS = [(1, 5), (2, None), (3, -1)]


def define(spark: SparkSession) -> None:
    @dp.materialized_view
    @dp.quarantine()
    @dp.expect("amount_small", "amount < 3")
    @dp.expect_or_drop("amount_not_negative", "amount >= 0")
    def dropped() -> DataFrame:
        return spark.read.table("src")

    @dp.materialized_view
    @dp.expect_or_fail("amount_known_or_small", "amount < 100")
    def failing() -> DataFrame:
        return spark.read.table("src").where("id <> 3")


def run(make_pipeline: MakePipeline, conf: dict[str, str]) -> RunResult:
    pipeline = make_pipeline(define, conf=conf)
    pipeline.create_table("src", ROWS, SCHEMA)
    return pipeline.run()


def ids(result: RunResult, table: str) -> list[int]:
    return sorted(row["id"] for row in result.rows(table))


def test_null_is_a_violation_in_all_four_places_by_default(make_pipeline: MakePipeline) -> None:
    result = run(make_pipeline, {})
    assert not result.ok  # the NULL amount fails the fail rule ...
    assert "Violated expectations: 'amount_known_or_small'" in result.output
    assert '"amount":null' in result.output
    # ... while the independent dataset is computed: NULL dropped and quarantined.
    assert ids(result, "dropped") == [1]
    assert ids(result, "dropped_quarantine") == [2, 3]
    metrics = {r["expectation"]: r for r in result.rows("dropped_dq_metrics")}
    assert metrics["amount_not_negative"]["failed_records"] == 2
    assert metrics["amount_small"]["failed_records"] == 2  # 5 and NULL
    quarantine = {r["id"]: r["_failed_expectations"] for r in result.rows("dropped_quarantine")}
    assert quarantine[2] == ["amount_small", "amount_not_negative"]
    assert quarantine[3] == ["amount_not_negative"]


def test_null_result_pass_makes_null_pass_in_all_four_places(make_pipeline: MakePipeline) -> None:
    result = run(make_pipeline, {"sdp_expect.null_result": "pass"})
    assert result.ok, result.output
    assert ids(result, "dropped") == [1, 2]
    assert ids(result, "dropped_quarantine") == [3]
    assert ids(result, "failing") == [1, 2]
    metrics = {r["expectation"]: r for r in result.rows("dropped_dq_metrics")}
    assert metrics["amount_not_negative"]["failed_records"] == 1
    assert metrics["amount_small"]["failed_records"] == 1
    assert metrics["amount_small"]["passed_records"] == 2
