"""Key rules (unique, references: docs/dataset-rules.md) on materialized views, through
real SDP runs, against a Python oracle."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from record_key import record_key
from sdp_runner import MakePipeline
from test_no_analysis import watched_rpcs

from sdp_expect import pipelines as dp
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.names import QUARANTINE_COLUMNS, QUARANTINE_KEY_COLUMN
from sdp_expect.base.violation import (
    TolerancePart,
    Violation,
    format_message,
    format_tolerance_message,
)
from sdp_expect.core.model import Action, parse_tolerance

SCHEMA = "id INT, a INT, b STRING, amount INT"
REF_SCHEMA = "a INT, b STRING"

Row = tuple[Optional[int], Optional[int], Optional[str], Optional[int]]


# --------------------------------------------------------------------------- the oracle


def unique_violations(data: list[Row], key: tuple[int, ...]) -> list[bool]:
    """Per record: True when it violates unique(key): another record has the same key,
    all non-NULL."""
    keys = [tuple(r[k] for k in key) for r in data]
    counts = Counter(k for k in keys if None not in k)
    return [None not in k and counts[k] > 1 for k in keys]


def reference_violations(data: list[Row], key: tuple[int, ...],
                         referenced: list[tuple[Any, ...]]) -> list[bool]:
    """Per record: True when its key is all non-NULL and absent from ``referenced``."""
    present = {r for r in referenced if None not in r}
    keys = [tuple(r[k] for k in key) for r in data]
    return [None not in k and k not in present for k in keys]


def metrics_of(result: Any, dataset: str) -> dict[str, dict[str, Any]]:
    return {row["expectation"]: row for row in result.rows(f"{dataset}_dq_metrics")}


# --------------------------------------------------------------------------- examples


def test_a_drop_unique_key_drops_every_record_of_a_duplicated_key_and_keeps_null_keys(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("once", dp.unique("a"))
        def orders() -> DataFrame:
            return spark.read.table("src")

    data: list[Row] = [(1, 10, "x", 1), (2, 10, "y", 2), (3, 11, "x", 3), (4, None, "x", 4),
                       (5, None, "y", 5)]
    pipeline = make_pipeline(define)
    pipeline.create_table("src", data, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    expected = pipeline.spark.createDataFrame([r for r in data if r[0] not in (1, 2)], SCHEMA)
    # Exactly the user's columns, same types and nullability.
    assert_df_equality(result.table("orders"), expected, ignore_row_order=True)
    quarantine = result.table("orders_quarantine")
    assert quarantine.columns == ["id", "a", "b", "amount", *QUARANTINE_COLUMNS]
    quarantined = result.rows("orders_quarantine")
    assert {r["id"]: r["_failed_expectations"] for r in quarantined} == {
        1: ["once"], 2: ["once"]}
    # The key is of the record's own columns, not of the key rule's flag beside them.
    assert {r["id"]: r[QUARANTINE_KEY_COLUMN] for r in quarantined} == {
        r[0]: record_key(dict(zip(["id", "a", "b", "amount"], r, strict=True)))
        for r in data[:2]}
    row = metrics_of(result, "orders")["once"]
    assert (row["constraint"], row["failed_records"], row["total_records"],
            row["dropped_records"]) == ("UNIQUE (a)", 2, 5, 2)


def test_a_reference_to_a_pipeline_dataset_waits_for_it_and_passes_null_keys(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        @dp.materialized_view
        @dp.expect("known", dp.references("customers", "a", "b", to=["a", "b"]))
        @dp.expect_or_drop("positive", "amount > 0")
        def orders() -> DataFrame:
            return spark.read.table("src")

    data: list[Row] = [(1, 1, "x", 1), (2, 1, "y", 1), (3, None, "y", 1), (4, 2, "x", -1),
                       (5, 1, "x", 2)]
    pipeline = make_pipeline(define)
    pipeline.create_table("src", data, SCHEMA)
    # (1, 'x') twice: the join must not multiply a record.
    pipeline.create_table("customers_src", [(1, "x"), (1, "x"), (2, None)], REF_SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    kept = [r for r in data if r[0] != 4]
    assert_df_equality(result.table("orders"), pipeline.spark.createDataFrame(kept, SCHEMA),
                       ignore_row_order=True)
    row = metrics_of(result, "orders")["known"]
    assert (row["constraint"], row["failed_records"], row["total_records"]) == (
        "REFERENCES customers (a, b)", 2, 5)  # (1, 'y') and (2, 'x')
    # The flow read the pipeline's dataset: it ran after it.
    assert result.flow_state("orders") == "COMPLETED"


@pytest.mark.parametrize("failing", ["unique", "references", "constraint"])
def test_a_failing_rule_beside_key_rules_stops_the_update_showing_the_record_s_own_columns(
        make_pipeline: MakePipeline, failing: str) -> None:
    # Key rules add their flags and the record's struct to each record (the prepared
    # relation): the violation line shows the record as the query gave it, nothing more.
    rules: dict[str, Any] = {"unique": dp.unique("a", "b"),
                             "references": dp.references("customers", "a", "b"),
                             "constraint": "amount < 3"}

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        @dp.materialized_view
        @dp.expect("known", dp.references("customers", "a"))
        @dp.expect_or_fail("once", rules[failing])
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 1, "x", 1), (2, 1, "x", 2), (3, 1, None, 3)], SCHEMA)
    pipeline.create_table("customers_src", [(1, "y")], REF_SCHEMA)
    result = pipeline.run()
    assert not result.ok
    assert result.flow_state("orders") == "FAILED"
    violators: dict[str, list[Row]] = {"unique": [(1, 1, "x", 1), (2, 1, "x", 2)],
                                       "references": [(1, 1, "x", 1), (2, 1, "x", 2)],
                                       "constraint": [(3, 1, None, 3)]}
    violating = violators[failing]
    lines = [format_message(Violation("orders", ("once",), json.dumps(
        dict(zip(("id", "a", "b", "amount"), row, strict=True)), separators=(",", ":"))))
        for row in violating]
    assert any(line in result.output for line in lines), result.output


def test_a_misspelt_key_column_or_unknown_reference_fails_that_rule_s_check_view(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("once", dp.unique("no_such_column"))
        @dp.expect("known", dp.references("no_such_table", "a"))
        @dp.expect("fine", dp.unique("id"))
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 1, "x", 1)], SCHEMA)
    result = pipeline.run(dry=True)
    assert not result.ok
    line = next(line for line in result.output.splitlines()
                if line.strip().startswith("Flows with errors:"))
    failed = sorted(f.strip() for f in line.split(":", 1)[1].split(",")
                    if "_sdpx_check_" in f)
    # the two rules' own views fail, the query's and the good rule's do not
    assert failed == ["_sdpx_check_orders_1", "_sdpx_check_orders_2"], result.output


@pytest.mark.parametrize(("streaming", "rule"), [
    (True, lambda: dp.unique("a")),
    (False, lambda: dp.unique("a")),
    (False, lambda: dp.references("customers", "a")),
])
def test_a_unique_key_on_a_streaming_table_and_key_rules_on_a_temporary_view_are_refused(
        make_pipeline: MakePipeline, streaming: bool, rule: Any) -> None:
    def define(spark: SparkSession) -> None:
        decorator = dp.table if streaming else dp.temporary_view

        @decorator
        @dp.expect_or_drop("once", rule())
        def events() -> DataFrame:
            return spark.readStream.table("src") if streaming else spark.read.table("src")

    pipeline = make_pipeline(define)
    with pytest.raises(SdpExpectError) as raised:
        pipeline.register()
    assert raised.value.code == "SDPX-DEF-114"
    assert raised.value.dataset == "events" and raised.value.expectation == "once"


@pytest.mark.parametrize(("rule", "code"), [
    (lambda: dp.unique(), "SDPX-VAL-014"),
    (lambda: dp.unique(""), "SDPX-VAL-015"),
    (lambda: dp.unique("a", 3), "SDPX-VAL-015"),  # type: ignore[arg-type]
    (lambda: dp.references("customers"), "SDPX-VAL-014"),
    (lambda: dp.references("", "a"), "SDPX-VAL-015"),
    (lambda: dp.references("customers", "a", "b", to="id"), "SDPX-VAL-016"),
])
def test_a_malformed_key_rule_is_a_coded_error_naming_the_rule(rule: Any, code: str) -> None:
    from sdp_expect.core.model import make_expectation

    with pytest.raises(SdpExpectError) as raised:
        make_expectation("k", rule(), Action.DROP, dataset="orders")
    assert (raised.value.code, raised.value.dataset, raised.value.expectation) == (
        code, "orders", "k")


def test_defining_key_rules_runs_no_query(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("once", dp.unique("id"), max_failed=5)
        @dp.expect("known", dp.references("customers", "a", "b"))
        @dp.expect_or_fail("id_known", "id IS NOT NULL")
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", [(1, 1, "x", 5)], SCHEMA)
    pipeline.create_table("customers_src", [(1, "x")], REF_SCHEMA)
    with watched_rpcs() as calls:
        pipeline.register()
    assert calls, "the spy saw no RPC at all; it is not watching"
    assert all(kind.startswith("command:") for _, kind in calls), calls
    result = pipeline.run()
    assert result.ok, result.output
    assert result.table("orders").count() == 1


# --------------------------------------------------------------------------- properties

KEYS = [(1,), (1, 2)]  # a, (a, b)


@st.composite
def unique_cases(draw: st.DrawFn) -> tuple[list[Row], int, str, Optional[str]]:
    """(records, key choice, action, max_failed): few distinct values, so keys collide;
    NULLs in either key column."""
    n = draw(st.integers(0, 12))
    data: list[Row] = [(i, draw(st.one_of(st.none(), st.integers(0, 3))),
                        draw(st.one_of(st.none(), st.sampled_from(["x", "y"]))), i)
                       for i in range(n)]
    key = draw(st.integers(0, 1))
    action = draw(st.sampled_from(["warn", "drop", "fail"]))
    max_failed = draw(st.one_of(st.none(), st.integers(0, 4).map(str),
                                st.sampled_from(["25%", "50%"])))
    return data, key, action, max_failed


def run_and_check(make_pipeline: MakePipeline, data: list[Row], refs: Optional[list[Any]],
                  key: int, action: str, max_failed: Optional[str]) -> None:
    columns = ["a", "b"][:len(KEYS[key])]
    rule: Any = (dp.unique(*columns) if refs is None
                 else dp.references("customers", *columns))
    decorator = {"warn": dp.expect, "drop": dp.expect_or_drop,
                 "fail": dp.expect_or_fail}[action]

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        @dp.materialized_view
        @dp.quarantine()
        @decorator("key", rule, max_failed=max_failed)
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", data, SCHEMA)
    pipeline.create_table("customers_src", refs or [], REF_SCHEMA)
    result = pipeline.run()
    bad = (unique_violations(data, KEYS[key]) if refs is None
           else reference_violations(data, KEYS[key], [tuple(r[:len(columns)]) for r in refs]))
    failed = sum(bad)
    tolerance = parse_tolerance(max_failed)
    total = len(data)
    exceeded = tolerance is not None and tolerance.exceeded(failed, total)
    if action != "warn" and (exceeded or (tolerance is None and action == "fail" and failed)):
        assert not result.ok, result.output
        if tolerance is not None:
            assert format_tolerance_message("orders", [TolerancePart(
                "key", failed, total, tolerance.text)]) in result.output
        else:
            assert "[EXPECTATION_VIOLATION]" in result.output
        return
    assert result.ok, result.output
    dropped = action == "drop"
    kept = [r for r, v in zip(data, bad, strict=True) if not (dropped and v)]
    assert_df_equality(result.table("orders"), pipeline.spark.createDataFrame(kept, SCHEMA),
                       ignore_row_order=True)
    quarantined = {r["id"]: r["_failed_expectations"] for r in result.rows("orders_quarantine")}
    expected = {r[0]: ["key"] for r, v in zip(data, bad, strict=True) if v}
    assert quarantined == (expected if dropped else {})
    row = metrics_of(result, "orders")["key"]
    assert (row["failed_records"], row["passed_records"], row["total_records"],
            row["dropped_records"]) == (failed, total - failed, total,
                                        failed if dropped else 0)
    assert row.get("tolerance_exceeded") == (None if tolerance is None else exceeded)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=unique_cases())
@example(case=([(0, 1, "x", 0), (1, 1, "x", 1), (2, 1, None, 2), (3, None, None, 3),
                (4, 2, "x", 4)], 1, "drop", None))
@example(case=([(0, 1, "x", 0), (1, 1, "x", 1), (2, 2, None, 2), (3, 3, None, 3)],
               0, "drop", "2"))     # 2 violations: at the tolerance
@example(case=([(0, 1, "x", 0), (1, 1, "x", 1), (2, 2, None, 2), (3, 3, None, 3)],
               0, "fail", "1"))     # just below: exceeded
@example(case=([(0, 1, "x", 0), (1, 1, "x", 1), (2, 1, None, 2), (3, 3, None, 3)],
               0, "fail", "3"))     # 3 violations, just above nothing: within
@example(case=([(0, 1, "x", 0), (1, 1, "x", 1), (2, 2, None, 2), (3, 3, None, 3)],
               0, "warn", "50%"))   # 2 of 4: at 50 %
def test_unique_agrees_with_the_oracle(make_pipeline: MakePipeline,
                                       case: tuple[list[Row], int, str, Optional[str]]) -> None:
    data, key, action, max_failed = case
    run_and_check(make_pipeline, data, None, key, action, max_failed)


@st.composite
def reference_cases(draw: st.DrawFn
                    ) -> tuple[list[Row], list[Any], int, str, Optional[str]]:
    data, key, action, max_failed = draw(unique_cases())
    refs = draw(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)),
                                   st.one_of(st.none(), st.sampled_from(["x", "y"]))),
                         max_size=6))
    return data, refs, key, action, max_failed


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=reference_cases())
@example(case=([(0, 1, "x", 0), (1, None, "x", 1), (2, 5, "y", 2)], [], 0, "drop", None))
@example(case=([(0, 1, "x", 0), (1, None, "x", 1), (2, 5, "y", 2)], [], 1, "warn", "1"))
@example(case=([(0, 1, "x", 0), (1, 1, "y", 1), (2, 5, None, 2)], [(1, "x"), (1, "x")],
               1, "fail", None))
@example(case=([(0, 1, "x", 0), (1, 2, "y", 1), (2, 5, None, 2)], [(1, "x")],
               0, "drop", "2"))     # 2 violations, at the tolerance
@example(case=([(0, 1, "x", 0), (1, 2, "y", 1), (2, 5, None, 2)], [(1, "x")],
               0, "drop", "1"))     # just above
def test_references_agree_with_the_oracle(
        make_pipeline: MakePipeline,
        case: tuple[list[Row], list[Any], int, str, Optional[str]]) -> None:
    data, refs, key, action, max_failed = case
    run_and_check(make_pipeline, data, refs, key, action, max_failed)


# --------------------------------------------------------------------------- rule files

RULES = """\
- name: order_once
  unique: [id]
  failureAction: drop
- name: customer_known
  references: {dataset: customers, columns: [a], to: [cid]}
  type: expect
"""


def key_rule_outcome(result: Any) -> None:
    assert result.ok, result.output
    assert sorted(r["id"] for r in result.rows("orders")) == [2, 3, 4]
    found = {name: (row["constraint"], row["failed_records"], row["dropped_records"])
             for name, row in metrics_of(result, "orders").items()}
    assert found == {"order_once": ("UNIQUE (id)", 2, 2),
                     "customer_known": ("FOREIGN KEY (a) REFERENCES customers (cid)", 1, 2)}


SOURCE = [(1, 1, "x", 1), (1, 2, "x", 1), (2, 1, "x", 1), (3, 9, "x", 1), (4, None, "x", 1)]


def test_a_rule_file_gives_key_rules(make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    rule_file = pipeline.path("rules.yml")
    rule_file.write_text(RULES, encoding="utf-8")

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        @dp.materialized_view
        @dp.expect_from_file(str(rule_file))
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline.definitions = define
    pipeline.create_table("src", SOURCE, SCHEMA)
    pipeline.create_table("customers_src", [(1,), (2,)], "cid INT")
    key_rule_outcome(pipeline.run())


def test_a_databricks_sql_file_takes_key_rules_from_its_rule_file(
        make_pipeline: MakePipeline, tmp_path: Path) -> None:
    """The SQL emitter: the same prepared relation as SQL text."""
    root = tmp_path / "project"
    (root / "databricks_sql").mkdir(parents=True)
    (root / "databricks_sql" / "rules.yml").write_text(RULES, encoding="utf-8")
    (root / "databricks_sql" / "pipeline.sql").write_text(textwrap.dedent("""\
        CREATE MATERIALIZED VIEW customers AS SELECT cid FROM customers_src;

        CREATE OR REFRESH MATERIALIZED VIEW orders
        TBLPROPERTIES ('sdp_expect.rules' = 'rules.yml')
        AS SELECT * FROM src;
        """))
    transformations = root / "transformations"
    transformations.mkdir()
    (transformations / "include_sql.py").write_text(
        "from sdp_expect import sql\n\nsql.include('../databricks_sql/pipeline.sql')\n")
    pipeline = make_pipeline(files=transformations)
    pipeline.create_table("src", SOURCE, SCHEMA)
    pipeline.create_table("customers_src", [(1,), (2,)], "cid INT")
    key_rule_outcome(pipeline.run())


def test_metrics_from_the_output_count_a_warn_key_rule_on_the_query(
        make_pipeline: MakePipeline) -> None:
    """With ``sdp_expect.metrics_from = output`` a warn key rule is still counted over the
    query's records: a duplicate that a drop rule removed still made its twin violate."""
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("once", dp.unique("a"))
        @dp.expect_or_drop("positive", "amount > 0")
        @dp.expect_or_drop("known", dp.references("src", "b", to="b"))
        def orders() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define, conf={"sdp_expect.metrics_from": "output",
                                           "sdp_expect.quarantine": "true"})
    pipeline.create_table("src", [(1, 7, "x", 1), (2, 7, "x", -1), (3, 8, None, 1)], SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    assert sorted(r["id"] for r in result.rows("orders")) == [1, 3]
    found = {name: (row["failed_records"], row["dropped_records"])
             for name, row in metrics_of(result, "orders").items()}
    assert found == {"once": (2, 1), "positive": (1, 1), "known": (0, 1)}


# --------------------------------------------------------------------------- streaming


def test_a_reference_on_a_streaming_table_joins_each_micro_batch_with_the_dataset(
        make_pipeline: MakePipeline) -> None:
    """A stream-static left join: each micro-batch against the referenced dataset as it
    is then; drop and warn, quarantine and cumulative metrics, over two updates."""
    import json

    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    inbox.mkdir(parents=True, exist_ok=True)

    def write(name: str, rows: list[tuple[Any, ...]]) -> None:
        (inbox / name).write_text("".join(
            json.dumps({"id": i, "customer_id": c}) + "\n" for i, c in rows))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        @dp.table
        @dp.quarantine()
        @dp.expect_or_drop("customer_known", dp.references("customers", "customer_id"))
        @dp.expect("positive_id", "id > 0")
        def orders() -> DataFrame:
            return spark.readStream.schema("id INT, customer_id INT").json(str(inbox))

    pipeline.definitions = define
    pipeline.create_table("customers_src", [(1,), (2,)], "customer_id INT")
    write("1.json", [(1, 1), (2, 3), (-3, None), (4, 2)])
    first = pipeline.run()
    assert first.ok, first.output
    assert sorted(r["id"] for r in first.rows("orders")) == [-3, 1, 4]
    assert first.table("orders").columns == ["id", "customer_id"]
    assert {r["id"]: r["_failed_expectations"] for r in first.rows("orders_quarantine")} == {
        2: ["customer_known"]}
    write("2.json", [(5, 9), (6, 1)])
    second = pipeline.run()
    assert second.ok, second.output
    assert sorted(r["id"] for r in second.rows("orders")) == [-3, 1, 4, 6]
    found = {name: (row["constraint"], row["failed_records"], row["total_records"],
                    row["dropped_records"])
             for name, row in metrics_of(second, "orders").items()}
    assert found == {"customer_known": ("REFERENCES customers (customer_id)", 2, 6, 2),
                     "positive_id": ("id > 0", 1, 6, 2)}


def test_a_declared_streaming_table_gives_its_reference_to_every_flow_into_it(
        make_pipeline: MakePipeline) -> None:
    import json

    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "1.json").write_text("".join(json.dumps({"id": i, "customer_id": c}) + "\n"
                                          for i, c in [(1, 1), (2, 3), (3, None)]))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def customers() -> DataFrame:
            return spark.read.table("customers_src")

        dp.create_streaming_table(
            "orders", quarantine=True,
            expect_all_or_drop={"customer_known": dp.references("customers", "customer_id")})

        @dp.append_flow(target="orders")
        def web() -> DataFrame:
            return spark.readStream.schema("id INT, customer_id INT").json(str(inbox))

    pipeline.definitions = define
    pipeline.create_table("customers_src", [(1,), (2,)], "customer_id INT")
    result = pipeline.run()
    assert result.ok, result.output
    assert sorted(r["id"] for r in result.rows("orders")) == [1, 3]
    assert [r["id"] for r in result.rows("orders_quarantine")] == [2]
    row = metrics_of(result, "orders")["customer_known"]
    assert (row["failed_records"], row["total_records"]) == (1, 3)
