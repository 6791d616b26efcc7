"""Tolerances (``max_failed``, docs/thresholds.md) on materialized views, through real SDP
runs: at, just below and just above the tolerance, against a Python oracle."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, Pipeline, RunResult

from sdp_expect import pipelines as dp
from sdp_expect.base.violation import TolerancePart, format_tolerance_message
from sdp_expect.core.model import parse_tolerance

SCHEMA = "id INT, amount INT, region STRING"


def rows(total: int, failed: int) -> list[tuple[Any, ...]]:
    """``total`` records, the first ``failed`` without an amount."""
    return [(i, None if i < failed else i, "eu" if i % 3 else None) for i in range(total)]


def run_fail_tolerance(make_pipeline: MakePipeline, data: list[tuple[Any, ...]],
                       max_failed: Any, *, quarantine: bool = False) -> tuple[Pipeline, RunResult]:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("amount_present", "amount IS NOT NULL", max_failed=max_failed)
        def orders() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        def downstream() -> DataFrame:
            return spark.read.table("orders")

    pipeline = make_pipeline(define, conf={"sdp_expect.quarantine": str(quarantine).lower()})
    pipeline.create_table("src", data, SCHEMA)
    return pipeline, pipeline.run()


def metrics(result: RunResult, dataset: str) -> dict[str, dict[str, Any]]:
    return {row["expectation"]: row for row in result.rows(f"{dataset}_dq_metrics")}


@pytest.mark.parametrize(("max_failed", "failed"), [
    ("1%", 1),     # 1 of 100: at the tolerance
    ("1%", 0),     # below
    (2, 2),        # a count, at it
    ("2", 1),      # below
])
def test_a_fail_tolerance_not_exceeded_writes_every_record_and_counts(
        make_pipeline: MakePipeline, max_failed: Any, failed: int) -> None:
    data = rows(100, failed)
    pipeline, result = run_fail_tolerance(make_pipeline, data, max_failed)
    assert result.ok, result.output
    expected = pipeline.spark.createDataFrame(data, SCHEMA)
    assert_df_equality(result.table("orders"), expected, ignore_row_order=True)
    assert_df_equality(result.table("downstream"), expected, ignore_row_order=True)
    row = metrics(result, "orders")["amount_present"]
    tolerance = parse_tolerance(max_failed)
    assert tolerance is not None
    assert row == {"dataset": "orders", "expectation": "amount_present", "action": "fail",
                   "constraint": "amount IS NOT NULL", "passed_records": 100 - failed,
                   "failed_records": failed, "total_records": 100, "dropped_records": 0,
                   "max_failed": tolerance.text, "tolerance_exceeded": False}


@pytest.mark.parametrize(("max_failed", "failed", "total", "rate"), [
    ("1%", 2, 100, "2.0%"),   # just above 1 of 100
    ("1%", 1, 99, "1.01%"),   # 1 of 99 is above 1 %
    (2, 3, 100, "3.0%"),      # just above a count
    ("0", 1, 10, "10.0%"),
    ("1%", 1, 64, "1.563%"),  # 1.5625: Spark's round is half up
])
def test_a_fail_tolerance_exceeded_fails_the_update_and_skips_downstream(
        make_pipeline: MakePipeline, max_failed: Any, failed: int, total: int,
        rate: str) -> None:
    _, result = run_fail_tolerance(make_pipeline, rows(total, failed), max_failed,
                                   quarantine=True)
    assert not result.ok
    tolerance = parse_tolerance(max_failed)
    assert tolerance is not None
    message = format_tolerance_message(
        "orders", [TolerancePart("amount_present", failed, total, tolerance.text)])
    assert f"({rate})" in message
    assert message in result.output, result.output
    assert result.flow_state("orders") == "FAILED"
    assert result.flow_state("downstream") == "SKIPPED"
    # Not retried: only new data or new code can make it pass.
    assert len([e for e in result.flow_events("orders") if "is RUNNING" in e]) == 1
    assert result.table("orders").count() == 0


def test_the_quarantine_of_an_update_over_its_tolerance_gets_nothing(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_fail("amount_present", "amount IS NOT NULL", max_failed="1%")
        @dp.expect_or_drop("has_region", "region IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows(100, 1), SCHEMA)
    first = pipeline.run()
    assert first.ok, first.output
    # 1 record without an amount is within 1 %: written (region 'eu'? id 0 has none:
    # dropped, and the quarantine names both rules).
    quarantined = {r["id"]: r["_failed_expectations"] for r in first.rows("orders_quarantine")}
    assert quarantined[0] == ["amount_present", "has_region"]
    assert len(quarantined) == 34
    assert first.table("orders").count() == 66
    pipeline.create_table("src", rows(100, 2), SCHEMA)
    second = pipeline.run()
    assert not second.ok
    assert second.table("orders").count() == 0
    assert second.table("orders_quarantine").count() == 0


def test_a_fail_rule_without_tolerance_still_stops_at_the_first_record(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("amount_present", "amount IS NOT NULL", max_failed=5)
        @dp.expect_or_fail("id_small", "id < 50")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows(60, 1), SCHEMA)
    result = pipeline.run()
    assert not result.ok
    assert "[EXPECTATION_VIOLATION] Flow 'orders' failed to meet the expectation. " \
           "Violated expectations: 'id_small'." in result.output


def test_a_warn_tolerance_exceeded_is_reported_in_the_metrics(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_all({"amount_present": "amount IS NOT NULL",
                        "has_region": "region IS NOT NULL"}, max_failed="10%")
        @dp.expect("id_known", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", rows(30, 3), SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    assert result.table("orders").count() == 30
    found = {name: (r["failed_records"], r["max_failed"], r["tolerance_exceeded"])
             for name, r in metrics(result, "orders").items()}
    # 3 of 30 is 10 %: at the tolerance. Regions: ids 0, 3, ..., 27 have none: 10 of 30.
    assert found == {"amount_present": (3, "10%", False), "has_region": (10, "10%", True),
                     "id_known": (0, None, None)}


@pytest.mark.parametrize(("failed", "ok"), [(3, True), (4, False)])
def test_a_drop_tolerance_drops_within_it_and_fails_above_it(
        make_pipeline: MakePipeline, failed: int, ok: bool) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("amount_present", "amount IS NOT NULL", max_failed=3)
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    data = rows(20, failed)
    pipeline.create_table("src", data, SCHEMA)
    result = pipeline.run()
    assert result.ok is ok, result.output
    if ok:
        kept = pipeline.spark.createDataFrame([r for r in data if r[1] is not None], SCHEMA)
        assert_df_equality(result.table("orders"), kept, ignore_row_order=True)
        assert result.table("orders_quarantine").count() == failed
        row = metrics(result, "orders")["amount_present"]
        assert (row["dropped_records"], row["max_failed"], row["tolerance_exceeded"]) == (
            failed, "3", False)
    else:
        assert format_tolerance_message("orders", [TolerancePart(
            "amount_present", failed, 20, "3")]) in result.output
        assert result.table("orders_quarantine").count() == 0


@pytest.mark.parametrize("metrics_from", ["query", "output"])
def test_metrics_count_a_fail_rule_within_its_tolerance_from_the_query_or_the_output(
        make_pipeline: MakePipeline, metrics_from: str) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_fail("amount_present", "amount IS NOT NULL", max_failed="20%")
        @dp.expect_or_drop("has_region", "region IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define, conf={"sdp_expect.metrics_from": metrics_from})
    pipeline.create_table("src", rows(30, 4), SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    found = {name: (r["failed_records"], r["total_records"], r["dropped_records"],
                    r["max_failed"], r["tolerance_exceeded"])
             for name, r in metrics(result, "orders").items()}
    # Ids 0..3 have no amount; ids 0, 3, 6, ... have no region (10 of 30, dropped).
    assert found == {"amount_present": (4, 30, 10, "20%", False),
                     "has_region": (10, 30, 10, None, None)}


@pytest.mark.parametrize(("failed", "ok"), [(1, True), (2, False)])
def test_a_rule_file_gives_a_rule_its_tolerance(make_pipeline: MakePipeline, failed: int,
                                                 ok: bool) -> None:
    pipeline = make_pipeline()
    rule_file = pipeline.path("rules.yml")
    rule_file.parent.mkdir(parents=True, exist_ok=True)
    rule_file.write_text("- name: amount_present\n  constraint: amount IS NOT NULL\n"
                         "  failureAction: fail\n  max_failed: 1%\n", encoding="utf-8")

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_from_file(str(rule_file))
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline.definitions = define
    pipeline.create_table("src", rows(100, failed), SCHEMA)
    result = pipeline.run()
    assert result.ok is ok, result.output
    if ok:
        row = metrics(result, "orders")["amount_present"]
        assert (row["failed_records"], row["max_failed"], row["tolerance_exceeded"]) == (
            1, "1%", False)
    else:
        assert format_tolerance_message("orders", [TolerancePart(
            "amount_present", 2, 100, "1%")]) in result.output


def sql_project(root: Path, sql_text: str) -> Path:
    """A project whose Python file includes one Databricks SQL file."""
    (root / "databricks_sql").mkdir(parents=True)
    (root / "databricks_sql" / "pipeline.sql").write_text(textwrap.dedent(sql_text))
    transformations = root / "transformations"
    transformations.mkdir()
    (transformations / "include_sql.py").write_text(
        "from sdp_expect import sql\n\nsql.include('../databricks_sql/pipeline.sql')\n")
    return transformations


@pytest.mark.parametrize(("failed", "ok"), [(1, True), (2, False)])
def test_a_databricks_sql_table_property_gives_a_constraint_its_tolerance(
        make_pipeline: MakePipeline, tmp_path: Path, failed: int, ok: bool) -> None:
    values = ", ".join(f"({i}, {'NULL' if i < failed else i})" for i in range(100))
    files = sql_project(tmp_path / "project", f"""\
        CREATE MATERIALIZED VIEW src AS SELECT * FROM VALUES {values} AS t(id, amount);

        CREATE OR REFRESH MATERIALIZED VIEW orders (
          CONSTRAINT amount_present EXPECT (amount IS NOT NULL) ON VIOLATION FAIL UPDATE
        ) TBLPROPERTIES ('sdp_expect.max_failed.amount_present' = '1%')
        AS SELECT * FROM LIVE.src;

        CREATE LIVE TABLE downstream AS SELECT * FROM LIVE.orders;
        """)
    result = make_pipeline(files=files).run()
    assert result.ok is ok, result.output
    if ok:
        assert result.table("downstream").count() == 100
        row = metrics(result, "orders")["amount_present"]
        assert (row["failed_records"], row["max_failed"], row["tolerance_exceeded"]) == (
            1, "1%", False)
    else:
        assert format_tolerance_message("orders", [TolerancePart(
            "amount_present", 2, 100, "1%")]) in result.output
        assert result.flow_state("downstream") == "SKIPPED"


# --------------------------------------------------------------------------- property


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, int, str]:
    """(records, records without an amount, max_failed)."""
    total = draw(st.integers(0, 40))
    failed = draw(st.integers(0, total))
    max_failed = draw(st.one_of(st.integers(0, 5).map(str),
                                st.sampled_from(["0%", "2.5%", "5%", "10%", "50%"])))
    return total, failed, max_failed


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
@example(case=(100, 1, "1%"))   # at the tolerance
@example(case=(100, 0, "1%"))   # below
@example(case=(100, 2, "1%"))   # just above
@example(case=(10, 3, "3"))     # at a count
@example(case=(10, 4, "3"))     # just above
def test_a_fail_tolerance_fails_exactly_when_the_oracle_says(
        make_pipeline: MakePipeline, case: tuple[int, int, str]) -> None:
    total, failed, max_failed = case
    tolerance = parse_tolerance(max_failed)
    assert tolerance is not None
    _, result = run_fail_tolerance(make_pipeline, rows(total, failed), max_failed)
    assert result.ok is not tolerance.exceeded(failed, total), result.output
    if result.ok:
        assert result.table("orders").count() == total
        row = metrics(result, "orders")["amount_present"]
        assert (row["failed_records"], row["tolerance_exceeded"]) == (failed, False)
    else:
        assert format_tolerance_message("orders", [TolerancePart(
            "amount_present", failed, total, tolerance.text)]) in result.output


BIG = 2**63 - 1


@st.composite
def big_cases(draw: st.DrawFn) -> tuple[str, int, int]:
    """(max_failed, failed, total) up to what a BIGINT counts."""
    whole = draw(st.integers(0, 100))
    decimals = "" if whole == 100 else draw(st.from_regex(r"[0-9]{0,6}", fullmatch=True))
    text = f"{whole}.{decimals}%" if decimals else f"{whole}%"
    if draw(st.booleans()):
        text = str(draw(st.integers(0, BIG)))
    total = draw(st.integers(0, BIG))
    failed = draw(st.integers(0, total))
    return text, failed, total


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(big_cases(), min_size=1, max_size=50))
@example([("1%", 1, 100), ("1%", 2, 100), ("0.5%", 5, 1000), ("0.5%", 6, 1000),
          ("100%", BIG, BIG), ("0.000001%", BIG, BIG), ("0.000001%", 92233720368, BIG),
          ("0.000001%", 92233720369, BIG), (str(BIG), BIG, BIG), ("0", 1, BIG)])
def test_spark_computes_exceeded_as_the_python_oracle(
        make_pipeline: MakePipeline, batch: list[tuple[str, int, int]]) -> None:
    """The SQL of "exceeded" (DECIMAL(38, 0), no floating point, no overflow) against
    :meth:`Tolerance.exceeded`, in one query of literals, up to BIGINT's largest count."""
    spark = make_pipeline().spark
    checks = []
    for text, failed, total in batch:
        tolerance = parse_tolerance(text)
        assert tolerance is not None
        checks.append(tolerance.exceeded_sql(f"CAST({failed} AS BIGINT)",
                                             f"CAST({total} AS BIGINT)"))
    found = spark.sql(f"SELECT array({', '.join(checks)}) AS e").collect()[0]["e"]
    expected = []
    for text, failed, total in batch:
        tolerance = parse_tolerance(text)
        assert tolerance is not None
        expected.append(tolerance.exceeded(failed, total))
    assert found == expected


def test_a_warn_tolerance_on_a_streaming_table_is_judged_on_its_cumulative_counts(
        make_pipeline: MakePipeline) -> None:
    """A streaming table's metrics add up since its last full refresh, and so does the
    judgement of a warn tolerance on them (docs/thresholds.md#the-records-checked)."""
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.expect("amount_present", "amount IS NOT NULL", max_failed="10%")
        @dp.expect("id_known", "id IS NOT NULL", max_failed=1)
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

    def write(name: str, data: list[tuple[Any, ...]]) -> None:
        inbox.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(dict(zip(("id", "amount", "region"), row, strict=True)))
                 for row in data]
        (inbox / name).write_text("".join(line + "\n" for line in lines))

    pipeline.definitions = define
    # Update 1: 1 of 10 without amount (10 %: at the tolerance), 2 without id (over 1).
    write("1.json", [(None if i < 2 else i, None if i == 5 else i, "eu") for i in range(10)])
    first = pipeline.run()
    assert first.ok, first.output
    found = {name: (r["failed_records"], r["total_records"], r["max_failed"],
                    r["tolerance_exceeded"]) for name, r in metrics(first, "orders").items()}
    assert found == {"amount_present": (1, 10, "10%", False), "id_known": (2, 10, "1", True)}
    # Update 2: 2 of 5 more without amount: 3 of 15 since the start (20 %), exceeded.
    write("2.json", [(20 + i, None if i < 2 else i, "eu") for i in range(5)])
    second = pipeline.run()
    assert second.ok, second.output
    assert second.table("orders").count() == 15  # warn rules keep every record
    cumulative = {name: (r["failed_records"], r["total_records"], r["tolerance_exceeded"])
                  for name, r in metrics(second, "orders").items()}
    assert cumulative == {"amount_present": (3, 15, True), "id_known": (2, 15, True)}
