"""The ``[EXPECTATION_VIOLATION]`` message: format, Spark, parse, and back.

:mod:`sdp_expect.base.violation` writes the SQL that builds the message and reads
the message back. These properties check the round trip through real Spark
(the shared Spark Connect server): whatever the rule names, the dataset's name
and the record, parsing the error Spark raises gives back exactly the names
(in declaration order), the dataset and the record as Spark wrote it; and the
query plan, which quotes the message's SQL, never parses as a violation.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, cast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from sdp_expect.base import violation
from sdp_expect.base.violation import TAG, Violation, find_all, format_message, parse, quote
from sdp_expect.core.compiler import RuleLogic
from sdp_expect.core.model import Action, DatasetRules, Expectation
from sdp_expect.core.planner import Step
from sdp_expect.emit import python as emit_python

if TYPE_CHECKING:
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame

TRICKY = [
    "it's", "a, b", "', '", "a', 'b", "${x}", "$x", "\\", "\\'", "'", ",", " ", "x ",
    "ünïcödé ✓", "日本語", "emoji 🎉", "'. Output record: '{}'.", TAG, "\\u0024",
    "x\ny", "tab\there", "%s", "<errorMessage>", "{0}", "a\u2028b", "nul\x00", "del\x7f",
]
SPARK_TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=15)
names = st.one_of(st.sampled_from(TRICKY), SPARK_TEXT).filter(lambda s: s.strip() != "")
any_names = st.one_of(names, st.text(min_size=1, max_size=15))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8)


@st.composite
def violations(draw: Any, text: Any = any_names) -> Violation:
    record = draw(st.dictionaries(st.text(), json_values, max_size=4))
    as_text = json.dumps(record, separators=(",", ":"), ensure_ascii=draw(st.booleans()))
    return Violation(dataset=draw(text), expectations=tuple(draw(st.lists(text, min_size=1,
                                                                          max_size=4))),
                     record=as_text)


# --------------------------------------------------------------------------- without Spark


@given(violations())
@settings(max_examples=300, deadline=None)
def test_parse_gives_back_what_was_formatted(expected: Violation) -> None:
    message = format_message(expected)
    assert "\n" not in message and "\r" not in message, message  # one output line
    assert parse(message) == expected
    framed = f"org.apache.spark.SparkRuntimeException: [USER_RAISED_EXCEPTION] {message} " \
             "SQLSTATE: P0001"
    assert find_all(framed) == [expected]
    assert find_all(f"{framed}\n{framed}\n") == [expected]  # repeated: once


@given(violations(), st.integers(min_value=1))
@settings(max_examples=200, deadline=None)
def test_a_cut_or_changed_message_does_not_parse(expected: Violation, cut: int) -> None:
    message = format_message(expected)
    assert parse(message[:len(message) - 1 - cut % len(message)]) is None \
        or TAG in expected.record
    # What Spark prints where the message is glued to other text is not a message.
    assert parse("x" + message) is None or TAG in expected.record
    assert parse(message + "x") is None or TAG in expected.record


def test_names_are_quoted_readably_and_unambiguously() -> None:
    assert quote("valid_amount") == "'valid_amount'"
    assert quote("it's") == "'it\\'s'"
    assert quote("a\nb") == "'a\\u000ab'"
    message = format_message(Violation("orders_silver", ("valid_amount",),
                                       '{"order_id":3,"amount":-12.0}'))
    assert message == ("[EXPECTATION_VIOLATION] Flow 'orders_silver' failed to meet the "
                       "expectation. Violated expectations: 'valid_amount'. Output record: "
                       "'{\"order_id\":3,\"amount\":-12.0}'.")
    two = format_message(Violation("d", ("a, b", "c"), "{}"))
    assert "Violated expectations: 'a, b', 'c'. " in two
    assert parse(two) == Violation("d", ("a, b", "c"), "{}")


def test_what_plans_and_logs_print_is_not_a_violation() -> None:
    # The line of the report in issue 11: the message template of the earlier format,
    # as a streaming query's plan printed it.
    old_plan = (
        "+- ~Filter CASE WHEN NOT coalesce((amount#4 >= cast(0 as double)), false) THEN "
        "cast(raise_error(USER_RAISED_EXCEPTION, map(errorMessage, concat([EXPECTATION_VIOLATION] "
        "Flow 'orders_stream' failed to meet the expectation. Violated expectations: ', "
        "concat_ws(, , CASE WHEN NOT coalesce((amount#4 >= cast(0 as double)), false) THEN "
        "valid_amount END), '. Output record: ', to_json((ignoreNullFields,false), "
        "struct(order_id, order_id#3, amount, amount#4), Some(Etc/UTC)), '.)), NullType) as "
        "boolean) ELSE true END")
    assert find_all(old_plan) == []
    real = format_message(Violation("d", ("r",), '{"a":1}'))
    for text in (real.replace("'{\"a\":1}'", "'{\"a\":1'"),  # not JSON
                 real.replace("'{\"a\":1}'", "'[1]'"),  # not an object
                 real.replace("'r'", "'r\\x'"),  # not an escape of the format
                 real.replace("'r'", "'\\u0072'"),  # not the one way to write the name
                 real.replace("'r'", ""),  # no name
                 json.dumps(real),  # quoted in JSON: the record's quotes are escaped
                 real.replace("Flow 'd'", "Flow d")):
        assert find_all(text) == [], text


# --------------------------------------------------------------------------- through Spark


def _logic(dataset: str, rule_names: list[str]) -> RuleLogic:
    """Fail rule ``i`` is violated by a record whose ``bad`` has ``1`` at position ``i``."""
    rules = DatasetRules(dataset, [
        Expectation(name, f"substr(bad, {i + 1}, 1) = '0'", Action.FAIL)
        for i, name in enumerate(rule_names)])
    return RuleLogic(rules)


def _target_pieces(dataset: str, rule_names: list[str]) -> emit_python.Pieces:
    """What a dataset's own flow applies (``Step.TARGET``) for :func:`_logic`'s rules."""
    return emit_python.Pieces.of(_logic(dataset, rule_names), [Step.TARGET])


SCHEMA = "bad STRING, note STRING, n BIGINT, x DOUBLE"


@st.composite
def cases(draw: Any) -> tuple[str, list[str], str, tuple[Any, ...]]:
    rule_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    flags = draw(st.lists(st.booleans(), min_size=len(rule_names), max_size=len(rule_names))
                 .filter(any))
    row = ("".join("1" if flag else "0" for flag in flags),
           draw(st.none() | st.sampled_from(TRICKY) | st.text(
               st.characters(exclude_categories=["Cs"]), max_size=30)),
           draw(st.none() | st.integers(-2**63, 2**63 - 1)),
           draw(st.none() | st.floats(allow_nan=False, allow_infinity=False)))
    return draw(names), rule_names, row[0], row


@pytest.fixture(scope="module")
def spark(spark_server: Any) -> Any:
    return spark_server.session()


@given(case=cases())
@example(case=("d ${x}, 'e'", TRICKY, "1" * len(TRICKY),
               ("1" * len(TRICKY), f"it's. odd {TAG} Flow 'x'. Output record: '{{}}'. end",
                None, 1.5)))
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_parse_of_what_spark_raises_gives_back_names_dataset_and_record(
        spark: Any, case: tuple[str, list[str], str, tuple[Any, ...]]) -> None:
    dataset, rule_names, flags, row = case
    frame = spark.createDataFrame([row], SCHEMA)
    record = frame.selectExpr(violation.RECORD_SQL).first()[0]  # the record as Spark writes it
    expected = Violation(dataset, tuple(n for n, f in zip(rule_names, flags, strict=True)
                                        if f == "1"), record)
    with pytest.raises(Exception) as raised:
        emit_python.target(_target_pieces(dataset, rule_names), frame).collect()
    message = str(raised.value)
    assert find_all(message) == [expected], message
    assert format_message(expected) in message  # Python's format is exactly Spark's
    decoded = json.loads(record)
    assert list(decoded) == ["bad", "note", "n", "x"]
    assert [decoded["bad"], decoded["note"], decoded["n"]] == list(row[:3])
    # Java may print a double with a last digit of its own: equal to 15 digits.
    assert (decoded["x"] is None) == (row[3] is None)
    assert row[3] is None or math.isclose(decoded["x"], row[3], rel_tol=1e-15, abs_tol=1e-300)


@given(dataset=names, rule_names=st.lists(names, min_size=1, max_size=4, unique=True))
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_the_plan_spark_prints_never_parses_as_a_violation(
        spark: Any, dataset: str, rule_names: list[str]) -> None:
    source = spark.range(3).selectExpr("CAST(id AS STRING) AS bad", "id")
    # A Spark Connect DataFrame (what the spark fixture gives), which has _explain_string.
    target = cast("ConnectDataFrame",
                  emit_python.target(_target_pieces(dataset, rule_names), source))
    plan = target._explain_string(extended=True)
    assert TAG in plan and "concat_ws(" in plan, plan  # the plan quotes the message's SQL
    assert find_all(plan) == [], plan
    for line in plan.splitlines():
        assert parse(line) is None, line


def test_the_compiler_raises_the_message_of_the_module(spark: Any) -> None:
    frame = spark.createDataFrame([("01", "n", 1, 2.5)], SCHEMA)
    with pytest.raises(Exception) as raised:
        frame.where(F.expr(_logic("orders_silver", ["a", "valid_amount"]).guarded("true"))) \
            .collect()
    assert "[USER_RAISED_EXCEPTION] [EXPECTATION_VIOLATION] Flow 'orders_silver' failed to meet " \
           "the expectation. Violated expectations: 'valid_amount'. Output record: " \
           "'{\"bad\":\"01\",\"note\":\"n\",\"n\":1,\"x\":2.5}'." in str(raised.value)
