"""The ``[EXPECTATION_TOLERANCE_EXCEEDED]`` message: its writer and its reader, without Spark.

:func:`sdp_expect.base.violation.format_tolerance_message` writes what Spark raises for a
flow over its tolerance (``tests/test_thresholds.py`` checks it against real runs);
:func:`~sdp_expect.base.violation.find_tolerance_failures` reads it back for ``sdp-expect
run``. The reader must be the exact inverse of the writer, whatever the names, the
counts and the tolerances, and must read nothing else.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sdp_expect.base.violation import (
    TAG,
    TOLERANCE_TAG,
    ToleranceFailure,
    TolerancePart,
    find_all,
    find_tolerance_failures,
    format_tolerance_failure,
    format_tolerance_message,
    parse_tolerance_message,
    rate_text,
    tolerance_message_sql,
)

TRICKY = [
    "it's", "a; b", "'; '", "a': 1 of 2 records failed (50.0%), more than max_failed '1%'",
    ": ", ";", "'", "\\", "\\'", " ", "x ", "ünïcödé ✓", "日本語", "emoji 🎉", TOLERANCE_TAG,
    TAG, "\\u0024", "x\ny", "tab\there", "a\u2028b", "nul\x00", "del\x7f", "%s", "{0}", ".",
]
names = st.one_of(st.sampled_from(TRICKY), st.text(min_size=1, max_size=15))
BIG = 2**63 - 1
tolerances = st.one_of(
    st.integers(0, BIG).map(str),
    st.from_regex(r"(100|[1-9]?[0-9])(\.[0-9]{1,6})?%", fullmatch=True),
    names)  # the reader gives back any text: it does not judge the tolerance


@st.composite
def parts(draw: st.DrawFn) -> TolerancePart:
    total = draw(st.integers(1, BIG))
    return TolerancePart(draw(names), draw(st.integers(0, total)), total, draw(tolerances))


failures = st.builds(ToleranceFailure, dataset=names,
                     parts=st.lists(parts(), min_size=1, max_size=4).map(tuple))


@given(failures)
@settings(max_examples=400, deadline=None)
@example(ToleranceFailure("orders", (TolerancePart("amount_present", 3, 200, "1%"),)))
@example(ToleranceFailure("it's; x", (TolerancePart("a': 1 of", 3, 200, "1%"),
                                      TolerancePart("b", 5, 5, "0"))))
def test_the_reader_gives_back_what_was_written(expected: ToleranceFailure) -> None:
    message = format_tolerance_failure(expected)
    assert message == format_tolerance_message(expected.dataset, expected.parts)
    assert "\n" not in message and "\r" not in message, message  # one output line
    assert parse_tolerance_message(message) == expected
    # As Spark's event and its final exception print it, repeated: once.
    framed = f"Error: [USER_RAISED_EXCEPTION] {message} SQLSTATE: P0001"
    assert find_tolerance_failures(framed) == [expected]
    assert find_tolerance_failures(f"{framed}\n{framed}\n") == [expected]
    assert find_all(framed) == []  # not an [EXPECTATION_VIOLATION]


@given(failures, failures)
@settings(max_examples=100, deadline=None)
def test_two_messages_in_one_text_are_both_read_in_order(first: ToleranceFailure,
                                                         second: ToleranceFailure) -> None:
    text = f"{format_tolerance_failure(first)} {format_tolerance_failure(second)}"
    expected = [first] if first == second else [first, second]
    assert find_tolerance_failures(text) == expected


@given(failures, st.integers(min_value=1))
@settings(max_examples=300, deadline=None)
def test_a_cut_or_glued_message_is_not_read(failure: ToleranceFailure, cut: int) -> None:
    message = format_tolerance_failure(failure)
    inside = any(TOLERANCE_TAG in text for text in
                 (failure.dataset, *(p.name for p in failure.parts),
                  *(p.tolerance for p in failure.parts)))
    assert parse_tolerance_message(message[:len(message) - 1 - cut % len(message)]) is None \
        or inside
    assert parse_tolerance_message("x" + message) is None or inside
    assert parse_tolerance_message(message + "x") is None or inside


def test_the_message_s_sql_as_a_plan_quotes_it_is_not_read() -> None:
    """A query plan quotes the SQL of the message: a quoted name must follow where it has
    SQL, so a plan never reads as a failure."""
    sql = tolerance_message_sql("orders", [("failed_0 > 1", "amount_present", "failed_0", "1")],
                                "total")
    plan = sql.replace("'", "")
    assert TOLERANCE_TAG in plan
    assert find_tolerance_failures(plan) == []
    assert find_tolerance_failures(sql) == []


def test_counts_and_rate_follow_the_grammar_to_the_letter() -> None:
    good = format_tolerance_message("o", [TolerancePart("r", 3, 200, "1%")])
    assert good == ("[EXPECTATION_TOLERANCE_EXCEEDED] Flow 'o' failed: expectations over "
                    "their tolerance: 'r': 3 of 200 records failed (1.5%), more than "
                    "max_failed '1%'.")
    for bad in (good.replace("3 of", "03 of"), good.replace("200", "-200"),
                good.replace("(1.5%)", "(1.5)"), good.replace("(1.5%)", "(x%)"),
                good.replace("'r'", "r"), good.replace("'1%'.", "'1%'"),
                good.replace("'o'", "'o\\x'"), good.replace("'1%'.", "'1%';.")):
        assert bad != good
        assert parse_tolerance_message(bad) is None, bad
    two = format_tolerance_message("o", [TolerancePart("r", 3, 200, "1%"),
                                         TolerancePart("s", 9, 200, "2%")])
    parsed = parse_tolerance_message(two)
    assert parsed is not None and [p.name for p in parsed.parts] == ["r", "s"]
    assert parse_tolerance_message(two.replace("; ", ";")) is None
    # The rate is Spark's text of a DOUBLE: the reader takes an exponent too.
    assert parse_tolerance_message(good.replace("(1.5%)", "(1.0E-4%)")) is not None


def test_the_rate_is_rounded_half_up_as_spark_rounds_it() -> None:
    assert [rate_text(f, t) for f, t in [(3, 200), (1, 99), (2, 100), (1, 3), (1, 64),
                                          (1, 200_000), (0, 5), (7, 7)]] == [
        "1.5%", "1.01%", "2.0%", "33.333%", "1.563%", "0.001%", "0.0%", "100.0%"]
