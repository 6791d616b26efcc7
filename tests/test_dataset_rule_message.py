"""The ``[EXPECTATION_DATASET_RULE_FAILED]`` message: its writer and its reader, without Spark.

:func:`sdp_expect.base.violation.format_dataset_rule_message` writes what Spark raises for a
flow whose fail rules on the dataset as a whole do not hold (``tests/test_aggregate_rules.py``
checks it against real runs; ``tests/test_dataset_rule_report.py`` reads real captures);
:func:`~sdp_expect.base.violation.find_dataset_rule_failures` reads it back for ``sdp-expect
run``. The reader must be the exact inverse of the writer, whatever the names, the
observed values and the bounds, and must read nothing else: text around it is skipped,
and a cut message reads as nothing rather than as a wrong value.
"""

from __future__ import annotations

from typing import Optional

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sdp_expect.base.violation import (
    DATASET_RULE_TAG,
    TAG,
    TOLERANCE_TAG,
    DatasetRuleFailure,
    DatasetRulePart,
    dataset_rule_message_sql,
    find_all,
    find_dataset_rule_failures,
    find_tolerance_failures,
    format_dataset_rule_failure,
    format_dataset_rule_message,
    parse_dataset_rule_message,
)
from sdp_expect.core.model import RowCount

TRICKY = [
    "it's", "a; b", "'; '", "a': observed 0, expected at least 1", ": observed ", ";", "'",
    "\\", "\\'", " ", "x ", "ünïcödé ✓", "日本語", "emoji 🎉", DATASET_RULE_TAG, TOLERANCE_TAG,
    TAG, "\\u0024", "x\ny", "tab\there", "a\u2028b", "nul\x00", "del\x7f", "%s", "{0}", ".",
    "NULL", "true",
]
names = st.one_of(st.sampled_from(TRICKY), st.text(min_size=1, max_size=15))
BIG = 2**63 - 1
counts = st.integers(0, BIG)


@st.composite
def bounds(draw: st.DrawFn) -> RowCount:
    low = draw(st.one_of(st.none(), counts))
    high = draw(st.one_of(st.none(), counts) if low is not None else counts)
    if low is not None and high is not None and high < low:
        low, high = high, low
    return RowCount(min=low, max=high)


row_count_parts = st.builds(
    DatasetRulePart, name=names, observed=counts.map(str),
    expected=bounds().map(lambda rule: rule.bound_text))
aggregate_parts = st.builds(DatasetRulePart, name=names,
                            observed=st.sampled_from([None, "false", "true"]),
                            expected=st.just("true"))
parts = st.one_of(row_count_parts, aggregate_parts)
failures = st.builds(DatasetRuleFailure, dataset=names,
                     parts=st.lists(parts, min_size=1, max_size=5).map(tuple))
garbage = st.one_of(st.just(""), st.text(max_size=30).map(lambda t: t + " "))


@given(failures, garbage, garbage)
@settings(max_examples=400, deadline=None)
@example(DatasetRuleFailure("orders", (DatasetRulePart("not_empty", "0", "at least 1"),)),
         "", "")
@example(DatasetRuleFailure("it's; x", (
    DatasetRulePart("a': observed 0, expected true", "3", "at least 5 and at most 10"),
    DatasetRulePart("positive", None, "true"), DatasetRulePart("b", "false", "true"),
    DatasetRulePart("c", "11", "at most 10"))), "Error: ", " SQLSTATE: P0001")
def test_the_reader_gives_back_what_was_written(expected: DatasetRuleFailure, before: str,
                                                after: str) -> None:
    message = format_dataset_rule_failure(expected)
    assert message == format_dataset_rule_message(
        expected.dataset, [(p.name, p.observed, p.expected) for p in expected.parts])
    assert "\n" not in message and "\r" not in message, message  # one output line
    assert parse_dataset_rule_message(message) == expected
    # Inside any text, as Spark's event and its final exception print it, repeated: once.
    framed = f"{before}[USER_RAISED_EXCEPTION] {message} SQLSTATE: P0001{after}"
    assert find_dataset_rule_failures(framed) == [expected]
    assert find_dataset_rule_failures(f"{framed}\n{framed}\n") == [expected]
    assert find_all(framed) == [] and find_tolerance_failures(framed) == []  # no other kind


@given(failures, failures)
@settings(max_examples=100, deadline=None)
def test_two_messages_in_one_text_are_both_read_in_order(first: DatasetRuleFailure,
                                                         second: DatasetRuleFailure) -> None:
    text = f"{format_dataset_rule_failure(first)} {format_dataset_rule_failure(second)}"
    expected = [first] if first == second else [first, second]
    assert find_dataset_rule_failures(text) == expected


def _inside(failure: DatasetRuleFailure) -> bool:
    """Whether a name holds the tag (then a cut message may hold a whole one)."""
    return any(DATASET_RULE_TAG in text for text in (failure.dataset,
                                                     *(p.name for p in failure.parts)))


@given(failures, st.integers(min_value=1))
@settings(max_examples=300, deadline=None)
def test_a_cut_or_glued_message_is_not_read(failure: DatasetRuleFailure, cut: int) -> None:
    message = format_dataset_rule_failure(failure)
    cut_message = message[:len(message) - 1 - cut % len(message)]
    read: Optional[DatasetRuleFailure] = parse_dataset_rule_message(cut_message)
    assert read is None or _inside(failure), (cut_message, read)
    assert parse_dataset_rule_message("x" + message) is None or _inside(failure)
    assert parse_dataset_rule_message(message + "x") is None or _inside(failure)


@given(failures, st.integers(min_value=0))
@settings(max_examples=200, deadline=None)
def test_a_message_cut_inside_a_value_never_reads_as_another_value(
        failure: DatasetRuleFailure, where: int) -> None:
    """Cut at any point and followed by the end of a line (as a truncated log line is):
    nothing is read, not a shorter count or bound."""
    message = format_dataset_rule_failure(failure)
    line = message[:where % len(message)] + "\n"
    assert find_dataset_rule_failures(line) == [] or _inside(failure)


def test_the_message_s_sql_as_a_plan_quotes_it_is_not_read() -> None:
    """A query plan quotes the SQL of the message: a quoted name and a value must follow
    where it has SQL, so a plan never reads as a failure."""
    sql = dataset_rule_message_sql("orders", [("NOT _sdpx_ok_0", "not_empty",
                                                "_sdpx_obs_0", "at least 1")])
    plan = sql.replace("'", "")
    assert DATASET_RULE_TAG in plan
    assert find_dataset_rule_failures(plan) == []
    assert find_dataset_rule_failures(sql) == []


def test_values_and_bounds_follow_the_grammar_to_the_letter() -> None:
    good = format_dataset_rule_message("o", [("r", "0", "at least 1")])
    assert good == ("[EXPECTATION_DATASET_RULE_FAILED] Flow 'o' failed: dataset rules not met: "
                    "'r': observed 0, expected at least 1.")
    assert parse_dataset_rule_message(good) == DatasetRuleFailure(
        "o", (DatasetRulePart("r", "0", "at least 1"),))
    for bad in (good.replace("observed 0", "observed 00"),
                good.replace("observed 0", "observed -1"),
                good.replace("observed 0", "observed null"),
                good.replace("observed 0", "observed 0.5"),
                good.replace("least 1", "least 01"), good.replace("least 1", "least"),
                good.replace("at least 1", "at most 1 and at least 0"),
                good.replace("at least 1", "TRUE"), good.replace("'r'", "r"),
                good.replace("1.", "1"), good.replace("1.", "1;."),
                good.replace("'o'", "'o\\x'"), good.replace(": observed", ":observed")):
        assert bad != good
        assert parse_dataset_rule_message(bad) is None, bad
    several = format_dataset_rule_message("o", [
        DatasetRulePart("r", "3", "at least 5 and at most 10"),
        DatasetRulePart("s", None, "true"), DatasetRulePart("t", "false", "true")])
    assert several.endswith("'r': observed 3, expected at least 5 and at most 10; "
                            "'s': observed NULL, expected true; "
                            "'t': observed false, expected true.")
    parsed = parse_dataset_rule_message(several)
    assert parsed is not None
    assert [(p.name, p.observed, p.expected) for p in parsed.parts] == [
        ("r", "3", "at least 5 and at most 10"), ("s", None, "true"), ("t", "false", "true")]
    assert parse_dataset_rule_message(several.replace("; ", ";")) is None
