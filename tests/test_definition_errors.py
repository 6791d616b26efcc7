"""Mistakes stop the pipeline while it is defined, with a code, the dataset, the
expectation and the fix (docs/semantics.md#errors-at-definition). Each case runs a real graph
registration: the error must come before any flow starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pyspark
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import Definitions, MakePipeline

from sdp_expect import SdpExpectError
from sdp_expect import pipelines as dp

SCHEMA = "id INT, amount INT"


def definition_error(make_pipeline: MakePipeline, define: Definitions,
                     conf: Optional[dict[str, str]] = None) -> SdpExpectError:
    pipeline = make_pipeline(define, conf=conf)
    pipeline.create_table("src", [(1, 5)], SCHEMA)
    result = pipeline.run()
    assert result.events == [], "no flow may start when the definition is wrong"
    assert isinstance(result.error, SdpExpectError), result.output
    return result.error


def assert_names(error: SdpExpectError, code: str, dataset: Optional[str] = None,
                 expectation: Optional[str] = None) -> None:
    message = str(error)
    assert error.code == code, message
    assert message.startswith(f"[{code}]")
    assert "Fix: " in message
    if dataset is not None:
        assert error.dataset == dataset
        assert f"dataset {dataset!r}" in message
    if expectation is not None:
        assert error.expectation == expectation
        assert f"expectation {expectation!r}" in message


def test_duplicate_name_within_a_dataset(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("valid", "id IS NOT NULL")
        @dp.expect_all_or_drop({"valid": "amount > 0"})
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-VAL-071", "orders", "valid")


def test_a_name_in_a_rule_file_and_in_a_decorator_of_one_dataset(
        make_pipeline: MakePipeline) -> None:
    rules = Path(__file__).resolve().parent / "fixtures" / "pipeline_rules" / "orders.yml"

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_from_file(str(rules))
        @dp.expect("valid_id", "id > 0")
        def checked() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-VAL-071", "checked", "valid_id")


def test_same_name_on_two_datasets_is_allowed(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("valid", "id IS NOT NULL")
        def first() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        @dp.expect_or_drop("valid", "amount > 0")
        def second() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5)], SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output


@pytest.mark.parametrize(
    ("name", "constraint", "code"),
    [
        ("", "id > 0", "SDPX-VAL-002"),
        ("   ", "id > 0", "SDPX-VAL-002"),
        (42, "id > 0", "SDPX-VAL-008"),
        (None, "id > 0", "SDPX-VAL-008"),
        ("rule", "", "SDPX-VAL-001"),
        ("rule", "  ", "SDPX-VAL-001"),
        ("rule", 5, "SDPX-VAL-008"),
        ("rule", None, "SDPX-VAL-008"),
        ("rule", lambda row: row.id > 0, "SDPX-VAL-008"),
    ],
)
def test_empty_or_non_string_name_or_constraint(make_pipeline: MakePipeline, name: Any,
                                                constraint: Any, code: str) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop(name, constraint)
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, code, "orders")


def test_a_column_object_is_not_a_constraint(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        # A Column where a string is expected: the mistake under test.
        @dp.expect("positive", F.col("amount") > 0)  # type: ignore[arg-type]
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-VAL-008", "orders", "positive")
    assert "string of Spark SQL" in str(error)


@pytest.mark.parametrize(
    ("constraint", "construct"),
    [
        ("id IN (SELECT id FROM src)", "subquer"),
        ("amount > avg(amount)", "aggregate"),
        ("row_number() OVER (ORDER BY id) = 1", "window"),
        ("explode(array(id)) > 0", "generat"),
        ("rand() < 0.5", "non-deterministic"),
        ("current_timestamp() > '2020-01-01'", "non-deterministic"),
    ],
)
def test_rejected_constructs_in_a_constraint(make_pipeline: MakePipeline, constraint: str,
                                             construct: str) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_fail("rule", constraint)
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-VAL-010", "orders", "rule")
    assert construct in str(error).lower()


def test_malformed_constraint(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("rule", "(amount > 0")
        def orders() -> DataFrame:
            return spark.read.table("src")

    assert_names(definition_error(make_pipeline, define), "SDPX-VAL-011", "orders", "rule")


def test_expect_all_given_two_strings_suggests_the_single_form(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        # Two strings where one mapping is expected: the mistake under test.
        @dp.expect_all_or_drop("valid_id", "id IS NOT NULL")  # type: ignore[arg-type]
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-DEF-101", "orders")
    assert "expect_or_drop(name, constraint)" in str(error)


@pytest.mark.parametrize("argument", [["id > 0"], "id > 0", 5])
def test_expect_all_given_anything_but_one_dict(make_pipeline: MakePipeline,
                                                argument: Any) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_all(argument)
        def orders() -> DataFrame:
            return spark.read.table("src")

    assert_names(definition_error(make_pipeline, define), "SDPX-DEF-101", "orders")


def test_expectation_decorator_above_the_dataset_decorator(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        # Applied to what the dataset decorator returns (None): the mistake under test.
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")  # type: ignore[arg-type]
        @dp.materialized_view
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-DEF-102", expectation="valid_id")
    assert "below the dataset decorator" in str(error)


def test_expectations_directly_on_an_append_flow(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        dp.create_streaming_table("events")

        @dp.append_flow(target="events")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def load_events() -> DataFrame:
            return spark.readStream.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-DEF-103", "events")
    assert "create_streaming_table" in str(error)


def test_expectations_on_a_flow_into_a_sink(make_pipeline: MakePipeline, tmp_path: Path) -> None:
    def define(spark: SparkSession) -> None:
        dp.create_sink("out", "parquet", {"path": str(tmp_path / "sink")})

        @dp.append_flow(target="out")
        @dp.expect("valid_id", "id IS NOT NULL")
        def to_sink() -> DataFrame:
            return spark.readStream.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-DEF-104", "out")
    assert "sinks do not support expectations" in str(error)


def test_streaming_table_given_expectations_after_a_flow_writes_into_it(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.append_flow(target="events")
        def load_events() -> DataFrame:
            return spark.readStream.table("src")

        dp.create_streaming_table("events", expect_all_or_drop={"valid_id": "id IS NOT NULL"})

    assert_names(definition_error(make_pipeline, define), "SDPX-DEF-105", "events")


def test_quarantine_on_a_temporary_view(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.temporary_view
        @dp.quarantine()
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def orders_view() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define)
    assert_names(error, "SDPX-DEF-106", "orders_view")
    assert "materialized view or streaming table" in str(error)


def test_dataset_decorator_on_something_that_is_not_a_function(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        # A string where a function is expected: the mistake under test.
        dp.materialized_view(query_function="SELECT 1")  # type: ignore[call-overload]

    assert_names(definition_error(make_pipeline, define), "SDPX-DEF-107")


@pytest.mark.parametrize(
    ("key", "value"),
    [("sdp_expect.null_result", "maybe"), ("sdp_expect.quarantine", "sometimes"),
     ("sdp_expect.metrics", "2")],
)
def test_configuration_values_it_does_not_understand(make_pipeline: MakePipeline, key: str,
                                                     value: str) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("valid_id", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    error = definition_error(make_pipeline, define, conf={key: value})
    assert error.code == "SDPX-CFG-201"
    assert key in str(error) and repr(value) in str(error)


def test_constraint_on_a_missing_column_fails_dry_run_naming_the_column(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("valid_customer", "customer_id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5)], SCHEMA)
    result = pipeline.run(dry=True)
    assert not result.ok
    assert "customer_id" in result.output
    assert "UNRESOLVED_COLUMN" in result.output


def test_a_correct_pipeline_passes_dry_run_and_writes_nothing(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.quarantine()
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 5)], SCHEMA)
    result = pipeline.run(dry=True)
    assert result.ok, result.output
    assert not result.exists("orders")


AUTO_CDC = tuple(int(part) for part in pyspark.__version__.split(".")[:2]) >= (4, 2)


def test_auto_cdc_flow_into_a_table_with_expectations(make_pipeline: MakePipeline) -> None:
    if not AUTO_CDC:
        # Spark 4.1 has no Auto CDC: the name must not appear out of nowhere either.
        with pytest.raises(AttributeError):
            _ = dp.create_auto_cdc_flow
        return

    def define(spark: SparkSession) -> None:
        dp.create_streaming_table("customers", expect_all_or_drop={"valid": "id IS NOT NULL"})
        dp.create_auto_cdc_flow(target="customers", source="src", keys=["id"],
                                sequence_by="amount")

    assert_names(definition_error(make_pipeline, define), "SDPX-DEF-108", "customers")
