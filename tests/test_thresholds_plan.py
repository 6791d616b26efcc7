"""Tolerances (``max_failed``, docs/thresholds.md) without Spark: the value's grammar, its
coded errors, the Python oracle of "exceeded", and the compiled plan."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.names import METRICS_COLUMNS, TOLERANCE_METRICS_COLUMNS
from sdp_expect.base.options import PipelineOptions
from sdp_expect.base.violation import TOLERANCE_TAG, TolerancePart, format_tolerance_message
from sdp_expect.core.model import (
    Action,
    DatasetKind,
    DatasetRules,
    Tolerance,
    make_expectation,
    parse_tolerance,
)
from sdp_expect.core.planner import (
    NO_RETRY_CONF,
    PlanState,
    Step,
    plan_dataset,
    plan_declared_table,
)
from sdp_expect.emit.sql import flow_select

# --------------------------------------------------------------------------- the value


@pytest.mark.parametrize(("written", "text", "numerator", "denominator", "fraction"), [
    (0, "0", 0, 1, False),
    ("0", "0", 0, 1, False),
    (10.0, "10", 10, 1, False),
    (10, "10", 10, 1, False),
    ("007", "7", 7, 1, False),
    ("1%", "1%", 1, 100, True),
    ("0%", "0%", 0, 100, True),
    ("0.5%", "0.5%", 5, 1000, True),
    ("12.25%", "12.25%", 1225, 10000, True),
    ("012.50%", "12.50%", 1250, 10000, True),
    ("100%", "100%", 100, 100, True),
    ("100.000000%", "100.000000%", 100000000, 100000000, True),
    ("0.000001%", "0.000001%", 1, 100000000, True),
    (2**63 - 1, str(2**63 - 1), 2**63 - 1, 1, False),
])
def test_a_tolerance_is_a_count_or_a_percentage(written: Any, text: str, numerator: int,
                                                denominator: int, fraction: bool) -> None:
    assert parse_tolerance(written) == Tolerance(text, numerator, denominator, fraction)


def test_no_tolerance_is_none() -> None:
    assert parse_tolerance(None) is None


@pytest.mark.parametrize(("written", "code"), [
    (-1, "SDPX-VAL-012"),
    ("-1", "SDPX-VAL-012"),
    ("-1%", "SDPX-VAL-012"),
    ("1.5", "SDPX-VAL-012"),
    (0.01, "SDPX-VAL-012"),
    (0.5, "SDPX-VAL-012"),
    (-1.0, "SDPX-VAL-012"),
    (float("inf"), "SDPX-VAL-012"),
    (True, "SDPX-VAL-012"),
    ("", "SDPX-VAL-012"),
    ("%", "SDPX-VAL-012"),
    ("1 percent", "SDPX-VAL-012"),
    (" 10", "SDPX-VAL-012"),
    ("1 %", "SDPX-VAL-012"),
    ("+1", "SDPX-VAL-012"),
    ("5.%", "SDPX-VAL-012"),
    ("1e3", "SDPX-VAL-012"),
    (".5%", "SDPX-VAL-012"),
    ("0.0000001%", "SDPX-VAL-012"),
    ([1], "SDPX-VAL-012"),
    (2**63, "SDPX-VAL-012"),
    ("100.1%", "SDPX-VAL-013"),
    ("101%", "SDPX-VAL-013"),
    ("150%", "SDPX-VAL-013"),
])
def test_a_mistaken_tolerance_is_a_coded_error_with_the_fix(written: Any, code: str) -> None:
    with pytest.raises(SdpExpectError) as raised:
        make_expectation("amount_present", "amount IS NOT NULL", "fail", dataset="orders",
                         max_failed=written)
    assert raised.value.code == code
    assert raised.value.dataset == "orders"
    assert raised.value.expectation == "amount_present"
    assert "Fix:" in str(raised.value)


def test_a_float_is_refused_because_it_is_ambiguous() -> None:
    with pytest.raises(SdpExpectError, match="max_failed='1%'"):
        parse_tolerance(0.01)


@pytest.mark.parametrize(("tolerance", "failed", "total", "exceeded"), [
    ("10", 9, 1000, False), ("10", 10, 1000, False), ("10", 11, 1000, True),
    ("0", 0, 5, False), ("0", 1, 5, True),
    ("1%", 0, 100, False), ("1%", 1, 100, False), ("1%", 2, 100, True),
    ("1%", 1, 99, True), ("1%", 1, 101, False),
    ("0.5%", 5, 1000, False), ("0.5%", 6, 1000, True), ("0.5%", 4, 1000, False),
    ("0%", 0, 0, False), ("1%", 0, 0, False),
    ("100%", 7, 7, False), ("0%", 1, 1, True),
])
def test_exactly_at_the_tolerance_is_within_it(tolerance: str, failed: int, total: int,
                                               exceeded: bool) -> None:
    parsed = parse_tolerance(tolerance)
    assert parsed is not None
    assert parsed.exceeded(failed, total) is exceeded


percentages = st.builds(
    lambda whole, decimals: (f"{whole}.{decimals}%" if decimals else f"{whole}%"),
    st.integers(0, 100), st.one_of(st.just(""), st.from_regex(r"[0-9]{1,6}", fullmatch=True)),
).filter(lambda text: Fraction(text[:-1]) <= 100)


@given(percentages, st.integers(0, 10**12), st.integers(0, 10**12))
def test_a_fraction_is_exceeded_exactly_as_rational_arithmetic_says(
        text: str, failed: int, total: int) -> None:
    tolerance = parse_tolerance(text)
    assert tolerance is not None
    assert tolerance.exceeded(failed, total) is (Fraction(failed) >
                                                 Fraction(text[:-1]) / 100 * total)


@given(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
def test_a_count_is_exceeded_when_more_records_fail(limit: int, failed: int) -> None:
    tolerance = parse_tolerance(limit)
    assert tolerance is not None
    assert tolerance.exceeded(failed, failed) is (failed > limit)


# --------------------------------------------------------------------------- the plan


def _rules(*rules: tuple[str, str, Action, Any]) -> DatasetRules:
    dataset = DatasetRules("orders")
    for name, constraint, action, max_failed in rules:
        dataset.add(make_expectation(name, constraint, action, dataset="orders",
                                     max_failed=max_failed))
    return dataset


DEFAULTS = PipelineOptions()


def _plan(rules: DatasetRules, kind: DatasetKind = DatasetKind.MATERIALIZED_VIEW,
          options: PipelineOptions = DEFAULTS) -> Any:
    return plan_dataset(rules, kind, options, state=PlanState(options))


def test_a_fail_tolerance_guards_the_target_and_its_companions_and_is_not_retried() -> None:
    plan = _plan(_rules(("amount_present", "amount IS NOT NULL", Action.FAIL, "1%")),
                 options=PipelineOptions(quarantine=True))
    flows = {spec.name: spec.query for spec in plan.datasets}
    target = flow_select(plan, flows["orders"], "src")
    # The guard: a one-row aggregate over the same query, cross-joined to its records.
    assert "CROSS JOIN" in target and "count(1) AS _sdpx_total" in target
    assert TOLERANCE_TAG in target
    # A fail rule with a tolerance is not the record-level check.
    assert "[EXPECTATION_VIOLATION]" not in target
    assert dict(flows["orders"].spark_conf) == NO_RETRY_CONF
    metrics = flows["orders_dq_metrics"]
    assert metrics.step is Step.METRICS_FROM_QUERY
    assert TOLERANCE_TAG in flow_select(plan, metrics, "src")
    assert dict(metrics.spark_conf) == NO_RETRY_CONF


def test_a_fail_tolerance_with_a_quarantine_guards_the_quarantine() -> None:
    plan = _plan(_rules(("amount_present", "amount IS NOT NULL", Action.FAIL, 3),
                        ("known_region", "region IS NOT NULL", Action.DROP, None)),
                 options=PipelineOptions(quarantine=True))
    flows = {spec.name: spec.query for spec in plan.datasets}
    quarantine = flow_select(plan, flows["orders_quarantine"], "src")
    assert "CROSS JOIN" in quarantine and TOLERANCE_TAG in quarantine
    # The quarantine names a fail rule with a tolerance: its violators are written.
    assert "'amount_present'" in quarantine.split("AS _failed_expectations")[0]


def test_a_warn_tolerance_adds_no_guard_and_no_retry_setting() -> None:
    plan = _plan(_rules(("recent", "year >= 2020", Action.WARN, "0.5%")))
    flows = {spec.name: spec.query for spec in plan.datasets}
    assert flow_select(plan, flows["orders"], "src") == "SELECT * FROM src"
    assert dict(flows["orders"].spark_conf) == {}
    metrics = flow_select(plan, flows["orders_dq_metrics"], "src")
    assert TOLERANCE_TAG not in metrics
    assert "'max_failed', _sdpx_rule.rule_max_failed" in metrics
    assert "'tolerance_exceeded'" in metrics


def test_a_fail_rule_without_tolerance_keeps_its_record_level_check() -> None:
    plan = _plan(_rules(("amount_present", "amount IS NOT NULL", Action.FAIL, "1%"),
                        ("id_present", "id IS NOT NULL", Action.FAIL, None)))
    target = flow_select(plan, plan.datasets[0].query, "src")
    assert "[EXPECTATION_VIOLATION]" in target and TOLERANCE_TAG in target
    assert "Violated expectations: " in target
    record_check = target.split("AS _sdpx_guarded")[1]
    assert "id IS NOT NULL" in record_check and "amount IS NOT NULL" not in record_check


def test_metrics_keep_their_columns_without_tolerances() -> None:
    plan = _plan(_rules(("amount_present", "amount IS NOT NULL", Action.FAIL, None)))
    metrics = flow_select(plan, plan.datasets[-1].query, "src")
    assert "max_failed" not in metrics and "tolerance_exceeded" not in metrics
    assert TOLERANCE_METRICS_COLUMNS == ("max_failed", "tolerance_exceeded")
    assert METRICS_COLUMNS[-1] == "dropped_records"


@pytest.mark.parametrize(("kind", "action"), [
    (DatasetKind.STREAMING_TABLE, Action.DROP), (DatasetKind.STREAMING_TABLE, Action.FAIL),
    *((DatasetKind.TEMPORARY_VIEW, action) for action in Action)])
def test_a_tolerance_that_cannot_be_enforced_is_refused(kind: DatasetKind,
                                                       action: Action) -> None:
    rules = _rules(("amount_present", "amount IS NOT NULL", action, "1%"))
    with pytest.raises(SdpExpectError) as raised:
        _plan(rules, kind)
    assert raised.value.code == "SDPX-DEF-113"
    assert raised.value.expectation == "amount_present"
    assert kind.value in str(raised.value) and action.value in str(raised.value)


def test_a_warn_tolerance_on_a_streaming_table_is_judged_in_its_metrics() -> None:
    plan = _plan(_rules(("amount_present", "amount IS NOT NULL", Action.WARN, "1%")),
                 DatasetKind.STREAMING_TABLE)
    metrics = next(spec for spec in plan.datasets if spec.name == "orders_dq_metrics")
    text = flow_select(plan, metrics.query, "src")
    assert "tolerance_exceeded" in text and "raise_error" not in text
    assert "sum(_records)" in text  # judged on the batch log's cumulative counts
    assert not plan.no_retry


def test_a_warn_tolerance_on_a_sql_streaming_table_is_translated() -> None:
    from sdp_expect import sql

    translated = sql.translate("""\
CREATE STREAMING TABLE orders (
  CONSTRAINT amount_present EXPECT (amount IS NOT NULL)
) TBLPROPERTIES ('sdp_expect.max_failed.amount_present' = '5')
AS SELECT * FROM STREAM(src);
""", "orders.sql")
    assert "tolerance_exceeded" in translated and TOLERANCE_TAG not in translated


def test_a_tolerance_on_a_declared_streaming_table_is_refused() -> None:
    options = PipelineOptions()
    rules = _rules(("amount_present", "amount IS NOT NULL", Action.DROP, 5))
    with pytest.raises(SdpExpectError) as raised:
        plan_declared_table(rules, options, state=PlanState(options))
    assert raised.value.code == "SDPX-DEF-113"


def test_the_message_names_the_rule_the_counts_the_rate_and_the_tolerance() -> None:
    message = format_tolerance_message("orders", [TolerancePart("amount_present", 3, 200, "1%")])
    assert message == ("[EXPECTATION_TOLERANCE_EXCEEDED] Flow 'orders' failed: expectations "
                       "over their tolerance: 'amount_present': 3 of 200 records failed (1.5%), "
                       "more than max_failed '1%'.")


def test_expect_all_gives_each_rule_the_tolerance() -> None:
    from sdp_expect import pipelines as dp

    def orders() -> None: ...

    dp.expect_all_or_fail({"a": "a > 0", "b": "b > 0"}, max_failed="2%")(orders)  # type: ignore[arg-type]
    dp.expect_or_drop("c", "c > 0", max_failed=3)(orders)  # type: ignore[arg-type]
    pending = orders.__sdp_expect__  # type: ignore[attr-defined]
    rules = [e for source in pending.sources for e in source("orders")]
    assert [(e.name, e.action, e.max_failed.text if e.max_failed else None) for e in rules] == [
        ("c", Action.DROP, "3"), ("a", Action.FAIL, "2%"), ("b", Action.FAIL, "2%")]


def test_expect_all_with_a_mistaken_tolerance_is_refused_with_the_rule() -> None:
    from sdp_expect import pipelines as dp

    def orders() -> None: ...

    dp.expect_all({"a": "a > 0"}, max_failed="200%")(orders)  # type: ignore[arg-type]
    pending = orders.__sdp_expect__  # type: ignore[attr-defined]
    with pytest.raises(SdpExpectError) as raised:
        pending.sources[0]("orders")
    assert (raised.value.code, raised.value.expectation) == ("SDPX-VAL-013", "a")


def test_as_kwargs_refuses_a_rule_with_a_tolerance() -> None:
    from sdp_expect import rules

    tolerant = make_expectation("a", "a > 0", "drop", max_failed="1%")
    with pytest.raises(SdpExpectError) as raised:
        rules.as_kwargs([tolerant])
    assert (raised.value.code, raised.value.expectation) == ("SDPX-DEF-113", "a")


# --------------------------------------------------------------------------- Databricks SQL


def _sql_rules(text: str, tmp_path: Any = None) -> DatasetRules:
    from sdp_expect.dbsql.parse import parse
    from sdp_expect.dbsql.statements import DatasetStatement

    found = [s for s in parse(text, "orders.sql", base_dir=None if tmp_path is None
                              else str(tmp_path)) if isinstance(s, DatasetStatement)]
    return found[0].rules


def test_a_table_property_gives_a_constraint_its_tolerance() -> None:
    rules = _sql_rules("""\
CREATE MATERIALIZED VIEW orders (
  CONSTRAINT amount_present EXPECT (amount IS NOT NULL) ON VIOLATION FAIL UPDATE,
  CONSTRAINT `Known Region` EXPECT (region IS NOT NULL) ON VIOLATION DROP ROW
) TBLPROPERTIES ('sdp_expect.max_failed.amount_present' = '1%',
                 'sdp_expect.max_failed.Known Region' = '10', 'other' = 'x')
AS SELECT * FROM src;
""")
    assert [(e.name, e.max_failed.text if e.max_failed else None)
            for e in rules.expectations] == [("amount_present", "1%"), ("Known Region", "10")]
    python = _rules(("amount_present", "amount IS NOT NULL", Action.FAIL, "1%"),
                    ("Known Region", "region IS NOT NULL", Action.DROP, 10))
    assert rules.expectations == python.expectations


def test_a_table_property_of_a_rule_file_s_rule(tmp_path: Any) -> None:
    (tmp_path / "rules.yml").write_text("- {name: r, constraint: a > 0}\n", encoding="utf-8")
    rules = _sql_rules("CREATE MATERIALIZED VIEW orders TBLPROPERTIES ("
                       "'sdp_expect.rules' = 'rules.yml', 'sdp_expect.max_failed.r' = '3') "
                       "AS SELECT * FROM src;", tmp_path)
    assert [(e.name, e.max_failed) for e in rules.expectations] == [
        ("r", Tolerance("3", 3))]


@pytest.mark.parametrize(("properties", "code"), [
    ("'sdp_expect.max_failed.nope' = '1%'", "SDPX-SQL-304"),
    ("'sdp_expect.max_failed.AMOUNT_PRESENT' = '1%'", "SDPX-SQL-304"),
    ("'sdp_expect.max_failed.amount_present' = '101%'", "SDPX-VAL-013"),
    ("'sdp_expect.max_failed.amount_present' = '-1'", "SDPX-VAL-012"),
    ("'sdp_expect.max_failed' = '1%'", "SDPX-SQL-304"),
])
def test_a_mistaken_tolerance_property_is_a_coded_error(properties: str, code: str) -> None:
    with pytest.raises(SdpExpectError) as raised:
        _sql_rules(f"""\
CREATE MATERIALIZED VIEW orders (
  CONSTRAINT amount_present EXPECT (amount IS NOT NULL) ON VIOLATION FAIL UPDATE
) TBLPROPERTIES ({properties})
AS SELECT * FROM src;
""")
    assert raised.value.code == code
    assert raised.value.location is not None and "orders.sql:3" in raised.value.location


def test_a_tolerance_on_a_sql_streaming_table_is_refused() -> None:
    from sdp_expect import sql

    with pytest.raises(SdpExpectError) as raised:
        sql.translate("""\
CREATE STREAMING TABLE orders (
  CONSTRAINT amount_present EXPECT (amount IS NOT NULL) ON VIOLATION DROP ROW
) TBLPROPERTIES ('sdp_expect.max_failed.amount_present' = '5')
AS SELECT * FROM STREAM(src);
""", "orders.sql")
    assert raised.value.code == "SDPX-DEF-113"
    assert "MATERIALIZED VIEW" in raised.value.fix


def test_the_translation_holds_the_guard() -> None:
    from sdp_expect import sql

    translated = sql.translate("""\
CREATE MATERIALIZED VIEW orders (
  CONSTRAINT amount_present EXPECT (amount IS NOT NULL) ON VIOLATION FAIL UPDATE
) TBLPROPERTIES ('sdp_expect.max_failed.amount_present' = '1%')
AS SELECT * FROM src;
""", "orders.sql")
    assert TOLERANCE_TAG in translated and "CROSS JOIN" in translated
    assert "sdp_expect.max_failed" not in translated
