"""Tests of the static constraint checker (sdp_expect.core.constraint_check)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sdp_runner import SparkServer

from sdp_expect.core.constraint_check import ConstraintProblem, check_constraint

MALFORMED = "SDPX-VAL-011"
REJECTED = "SDPX-VAL-010"

VALID = [
    "order_id IS NOT NULL",
    "amount >= 0",
    "year(ts) >= 2020",
    "CASE WHEN a > 0 THEN true ELSE b END",
    "a IN (1, 2, 3)",
    "name RLIKE '^[a-z]+$'",
    "x BETWEEN 0 AND 120",
    "`weird col` = 'it''s ; -- not a comment'",
    "coalesce(a, b) > 0 -- trailing comment",
    "arr[0] > 1",
    "m['k'] = 'v'",
    "s.field IS NULL",
    "CAST(x AS INT) > 0",
    "x::int > 0",
    "array_contains(tags, 'a')",
    "exists(arr, x -> x > 0)",
    "date'2020-01-01' <= d",
]

# Valid Spark SQL that looks like a rejected construct at first sight.
LOOKALIKES = [
    "from_date <= to_date",
    "`select` = 1",
    "t.`select` IS NULL",
    "s.select > 0",
    "'SELECT * FROM t' = query_text",
    '"rand()" <> label',
    "comment = 'sum(x) OVER (w); current_date'",
    "x > 0 /* SELECT 1; */",
    "x > 0 -- current_timestamp; SELECT",
    "s.count > 0 AND rank < 3 AND first IS NOT NULL AND max >= min",
    "`current_date` IS NOT NULL",
    "t.current_date < t.current_timestamp",
    "unix_timestamp(ts) > 0",
    "unix_timestamp(ts, 'yyyy') > 0",
    "name LIKE ANY ('a%', 'b%')",
    "name NOT ILIKE SOME ('%x')",
    "name like any ('a%')",
    "EXISTS(arr, x -> x IS NULL)",
    "aggregate(arr, 0, (acc, x) -> acc + x) > 0",
    "array_max(a) > array_min(a)",
    "greatest(a, b) = least(c, d)",
    "transform(arr, count -> count + 1) IS NOT NULL",
    "(values > 0)",
    "(table IS NULL)",
    "CAST(from AS INT) > 0",
    "coalesce(values, 0) > 0",
    "mydb.sum(x) > 0",
    "my_catalog.my_db.rand() > 0",
    "CAST(x AS STRUCT<>) IS NOT NULL",
    "x::array<array<int>> IS NOT NULL",
    "CAST(x AS map<string, array<int>>) IS NOT NULL",
    "cast(x AS array<int>) = array(1)",
    "x::map<string,array<int>> IS NULL OR x::struct<a:int> IS NULL",
    "CAST(x AS DECIMAL(10, 2)) > 0",
    "hash(*) IS NOT NULL",
    "raw:a.b::int > 0",
    "-x < +y AND ~z = 1 AND !w",
    "2 * /* c */ 3 > 1",
    "x IS DISTINCT FROM y",
    "INTERVAL '1' DAY > INTERVAL '2' HOUR",
    "X'1F' = b",
    "r'\\d+' = p",
    "over_limit = false",
    "named_struct('a', 1).a = 1",
    "overlay(s PLACING 'x' FROM 1) <> s",
    "trim(BOTH 'x' FROM s) <> ''",
    "extract(YEAR FROM ts) > 2000",
    "substring(s FROM 2 FOR 3) = 'abc'",
    "position('a' IN s) > 0",
    "position(from IN s) > 0",
    "trim(FROM s) = 'a'",
    "TRIM(from s) <> ''",
    "f(from[0]) > 0",
    "f(table) AND (values) AND (from)",
]


@pytest.mark.parametrize("constraint", VALID + LOOKALIKES)
def test_valid_constraints_pass(constraint: str) -> None:
    assert check_constraint(constraint) is None


# -- SDPX-VAL-011: not well-formed -------------------------------------------------------------


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        ("x = 'abc", "unterminated string literal at line 1, column 5"),
        ('x = "abc\\"', "unterminated string literal at line 1, column 5"),
        ("`weird col = 1", "unterminated quoted identifier at line 1, column 1"),
        ("x = 1 /* note", "unterminated comment at line 1, column 7"),
        ("x = 1 /* a /* nested */", "unterminated comment at line 1, column 7"),
        ("(a > 0", "unbalanced parentheses at line 1, column 1 ('(' is never closed)"),
        ("a > 0)", "unbalanced parentheses at line 1, column 6 (')' closes nothing)"),
        ("f(g(x) > 0", "unbalanced parentheses at line 1, column 2 ('(' is never closed)"),
        ("arr[0 > 1", "unbalanced brackets at line 1, column 4 ('[' is never closed)"),
        ("arr0] > 1", "unbalanced brackets at line 1, column 5 (']' closes nothing)"),
        (
            "f(a] > 0",
            "mismatched brackets at line 1, column 4: ']' closes the '(' at line 1, column 2",
        ),
        (
            "a[0) > 0",
            "mismatched brackets at line 1, column 4: ')' closes the '[' at line 1, column 2",
        ),
        ("a > 0;", "unexpected ';' at line 1, column 6: a constraint is a single expression"),
        (
            "a > 0; DROP TABLE t",
            "unexpected ';' at line 1, column 6: a constraint is a single expression",
        ),
        ("a > 0\n  ;", "unexpected ';' at line 2, column 3: a constraint is a single expression"),
        ("-- just a comment", "the constraint is empty: it holds only whitespace or comments"),
        ("/* a */ /* b */\n", "the constraint is empty: it holds only whitespace or comments"),
        ("", "the constraint is empty: it holds only whitespace or comments"),
        ("a IN (1,, 2)", "unexpected ',' at line 1, column 9: a value is missing before it"),
        ("f(, a)", "unexpected ',' at line 1, column 3: a value is missing before it"),
        (", a", "unexpected ',' at line 1, column 1: a value is missing before it"),
        ("a >=", "missing operand after '>=' at line 1, column 3"),
        ("amount >", "missing operand after '>' at line 1, column 8"),
        ("f(a >) > 0", "missing operand after '>' at line 1, column 5"),
        ("a IN (1 >, 2)", "missing operand after '>' at line 1, column 9"),
        ("x::array<int> >", "missing operand after '>' at line 1, column 15"),
        ("a >>", "missing operand after '>>' at line 1, column 3"),
        ("a = 1 AND b =", "missing operand after '=' at line 1, column 13"),
        ("a = 1 -- b\n AND c <> d ||", "missing operand after '||' at line 2, column 13"),
        ("f(a +) > 0", "missing operand after '+' at line 1, column 5"),
        ("a IN (1 -, 2)", "missing operand after '-' at line 1, column 9"),
        ("= 1", "missing operand before '=' at line 1, column 1"),
        ("2*/*c*/3 > 1", "unexpected '*/' at line 1, column 2: no comment is open"),
        ("a > 0 */", "unexpected '*/' at line 1, column 7: no comment is open"),
        ("f(> 1)", "missing operand before '>' at line 1, column 3"),
        ("a IN (1, / 2)", "missing operand before '/' at line 1, column 10"),
        ("a > 0 AND", "missing operand after 'AND' at line 1, column 7"),
        ("a IS NOT", "missing operand after 'NOT' at line 1, column 6"),
        ("a IS NULL or", "missing operand after 'or' at line 1, column 11"),
        ("(a and) OR b", "missing operand after 'and' at line 1, column 4"),
        ("coalesce(a LIKE, b)", "missing operand after 'LIKE' at line 1, column 12"),
        ("a IN (1, 2) AND -- more to come\n", "missing operand after 'AND' at line 1, column 13"),
    ],
)
def test_malformed_constraints_are_reported_with_their_position(
    constraint: str, message: str
) -> None:
    assert check_constraint(constraint) == ConstraintProblem(MALFORMED, message)


# Keywords that are operators may also be column names: `and` alone, `x AND and`,
# `f(and)` are valid. Spark's own parser is the judge (test below).
KEYWORD_CASES = [
    "and", "not", "in", "x and not", "a.and", "and and b", "x or and", "x = 1 and `and`",
    "array(x, and)", "x is not null", "x between 1 and 2", "t.not", "not not", "x and and",
    "not in", "x and (not)", "f(and)",
    "x and", "x or", "x not", "x in", "x is", "x like", "x between", "x is not",
    "x like 'a' escape", "x in (1,2) and", "x is null and", "x rlike", "x div", "`x` and",
    "'a' like", "x[0] in", "case when a then b else c end and", "(x and) or y",
    "coalesce(x and, y)",
    # '>' (and '>>') need an operand, unless they close a type: array<int>, map<a, array<b>>.
    "x >", "x >>", "f(x >)", "(x >) or y", "x::array<int>", "(x::array<array<int>>) is null",
    "cast(x as map<int, array<int>>) is null", "x::struct<a:int>", "x::array<int> >",
]


def test_keyword_operators_without_operand_agree_with_spark_s_parser(
    spark_server: SparkServer,
) -> None:
    """Reported exactly where Spark's parser fails the constraint as sdp-expect wraps it
    (anything else Spark reports, e.g. an unknown column, is not a syntax error)."""
    spark = spark_server.session()
    for text in KEYWORD_CASES:
        try:
            _ = spark.sql(f"SELECT coalesce(({text}), false) FROM VALUES (1) AS t(x)").schema
            syntax_error = False
        except Exception as error:
            syntax_error = "PARSE_SYNTAX_ERROR" in str(error)
        problem = check_constraint(text)
        assert (problem is not None) == syntax_error, (text, problem)
        assert problem is None or problem.code == MALFORMED


def test_well_formedness_is_reported_before_a_rejected_construct() -> None:
    problem = check_constraint("sum(x) > 0;")
    assert problem is not None and problem.code == MALFORMED


# -- SDPX-VAL-010: rejected constructs ---------------------------------------------------------

REJECTED_CASES = {
    "subquery": [
        ("id IN (SELECT id FROM t)", "uses a subquery (SELECT)"),
        ("EXISTS (SELECT 1 FROM t WHERE t.a = a)", "uses a subquery (SELECT)"),
        ("x = (select max(v) from t)", "uses a subquery (SELECT)"),
        ("x IN (VALUES 1, 2)", "uses a subquery (VALUES)"),
        ("x = (values (1))", "uses a subquery (VALUES)"),
        ("x IN (TABLE allowed_ids)", "uses a subquery (TABLE)"),
        ("x IN (FROM t |> SELECT a)", "uses a subquery (FROM)"),
        ("x IN (FROM `t`)", "uses a subquery (FROM)"),
        ("EXISTS (WITH c AS (SELECT 1) SELECT * FROM c)", "uses a subquery (WITH)"),
        ("a AND (TABLE t)", "uses a subquery (TABLE)"),
        ("a OR (FROM t |> WHERE b)", "uses a subquery (FROM)"),
    ],
    "window": [
        ("my_udaf(x) OVER (PARTITION BY k) > 0", "uses a window (OVER)"),
        ("f(x) over w > 0", "uses a window (OVER)"),
        ("row_number() OVER (ORDER BY ts) = 1", "uses the window function 'row_number'"),
        ("RANK() OVER (ORDER BY a) < 3", "uses the window function 'rank'"),
        ("lag(x) OVER (ORDER BY ts) < x", "uses the window function 'lag'"),
        ("ntile(4) over w = 1", "uses the window function 'ntile'"),
        ("first_value(x) IGNORE NULLS OVER w > 0", "uses the window function 'first_value'"),
    ],
    "aggregate": [
        ("sum(amount) > 0", "uses the aggregate function 'sum'"),
        ("COUNT(*) > 0", "uses the aggregate function 'count'"),
        ("Avg (x) > 1", "uses the aggregate function 'avg'"),
        ("max /* biggest */ (x) < 10", "uses the aggregate function 'max'"),
        ("`min`(x) > 0", "uses the aggregate function 'min'"),
        ("system.builtin.max(x) > 0", "uses the aggregate function 'max'"),
        ("any(flag)", "uses the aggregate function 'any'"),
        ("some(flag) AND x", "uses the aggregate function 'some'"),
        ("every(flag)", "uses the aggregate function 'every'"),
        ("regr_slope(y, x) > 0", "uses the aggregate function 'regr_slope'"),
        ("percentile_approx(x, 0.5) > 0", "uses the aggregate function 'percentile_approx'"),
        ("size(collect_set(x)) > 1", "uses the aggregate function 'collect_set'"),
        ("count(DISTINCT x) FILTER (WHERE y) > 0", "uses the aggregate function 'count'"),
        ("first(x) IS NULL", "uses the aggregate function 'first'"),
        ("transform(arr, x -> max(x)) IS NULL", "uses the aggregate function 'max'"),
    ],
    "generator": [
        ("explode(arr) > 0", "uses the generator function 'explode'"),
        ("posexplode_outer(arr) IS NULL", "uses the generator function 'posexplode_outer'"),
        ("stack(2, a, b) IS NULL", "uses the generator function 'stack'"),
        ("json_tuple(j, 'a') IS NULL", "uses the generator function 'json_tuple'"),
        ("inline(arr) IS NULL", "uses the generator function 'inline'"),
        ("range(10) IS NULL", "uses the table-valued function 'range'"),
        ("variant_explode(v) IS NULL", "uses the generator function 'variant_explode'"),
    ],
    "non-deterministic": [
        ("rand() < 0.5", "uses the non-deterministic function 'rand'"),
        ("RANDN(42) < 0.5", "uses the non-deterministic function 'randn'"),
        ("uuid() IS NOT NULL", "uses the non-deterministic function 'uuid'"),
        ("system.builtin.rand() > 0", "uses the non-deterministic function 'rand'"),
        ("builtin.`uuid`() IS NOT NULL", "uses the non-deterministic function 'uuid'"),
        ("current_date() > d", "uses the non-deterministic function 'current_date'"),
        ("d < current_date", "uses the non-deterministic function 'current_date'"),
        ("ts <= CURRENT_TIMESTAMP", "uses the non-deterministic function 'current_timestamp'"),
        ("ts <= LocalTimestamp", "uses the non-deterministic function 'localtimestamp'"),
        ("ts <= now()", "uses the non-deterministic function 'now'"),
        ("t < current_time", "uses the non-deterministic function 'current_time'"),
        (
            "unix_timestamp() > ts",
            "uses the non-deterministic function 'unix_timestamp' "
            "without arguments (it reads the clock)",
        ),
        (
            "unix_timestamp( /* now */ ) > ts",
            "uses the non-deterministic function "
            "'unix_timestamp' without arguments (it reads the clock)",
        ),
        ("shuffle(arr)[0] = 1", "uses the non-deterministic function 'shuffle'"),
        ("input_file_name() LIKE '%.csv'", "uses the non-deterministic function 'input_file_name'"),
        (
            "monotonically_increasing_id() > 0",
            "uses the non-deterministic function 'monotonically_increasing_id'",
        ),
        (
            "reflect('java.util.UUID', 'randomUUID') IS NOT NULL",
            "uses the non-deterministic function 'reflect'",
        ),
        ("uniform(0, 10) > 5", "uses the non-deterministic function 'uniform'"),
    ],
}


@pytest.mark.parametrize(
    ("constraint", "message"),
    [case for cases in REJECTED_CASES.values() for case in cases],
)
def test_rejected_constructs_are_named_in_the_problem(constraint: str, message: str) -> None:
    assert check_constraint(constraint) == ConstraintProblem(REJECTED, message)


def test_every_rejected_class_has_several_cases() -> None:
    assert all(len(cases) >= 5 for cases in REJECTED_CASES.values())


def test_the_first_rejected_construct_in_reading_order_is_reported() -> None:
    assert check_constraint("rand() > 0 AND sum(x) > 0") == ConstraintProblem(
        REJECTED, "uses the non-deterministic function 'rand'"
    )
    assert check_constraint("sum(x) > 0 AND rand() > 0") == ConstraintProblem(
        REJECTED, "uses the aggregate function 'sum'"
    )


# -- generated constraints ---------------------------------------------------------------------


def any_case(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word.upper(), word.lower(), word.capitalize()])


GAP = st.sampled_from(
    [
        " ",
        "  ",
        "\n",
        "\t",
        " \r\n ",
        " /* c; */ ",
        " /* a /* nested ; */ b */ ",
        " -- note; 'x' SELECT\n",
        " /**/ ",
    ]
)

COLUMNS = st.sampled_from(
    [
        "amount",
        "order_id",
        "from_date",
        "select_count",
        "rank",
        "first",
        "max",
        "count_",
        "s.field",
        "s.count",
        "s.select",
        "t.`select`",
        "`weird col`",
        "`a``b`",
        "`select`",
        "`current_date`",
        "`sum`",
        "`x;--/*`",
        "values",
        "arr[0]",
        "m['k;']",
        "s.a.b",
    ]
)

STRING_CONTENT = st.text(alphabet="ab ;-/*()`\"'\\%_", max_size=8)


@st.composite
def string_literals(draw: st.DrawFn) -> str:
    content = draw(STRING_CONTENT)
    quote = draw(st.sampled_from(["'", '"']))
    body = content.replace("\\", "\\\\")
    body = body.replace(quote, draw(st.sampled_from([quote * 2, "\\" + quote])))
    return quote + body + quote


LITERALS = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.sampled_from(["1.5", ".5", "1e3", "2.5E-3", "10L", "1.5D", "2BD", "3S", "1Y", "0.0F"]),
    string_literals(),
    st.sampled_from(
        [
            "DATE'2020-01-01'",
            "TIMESTAMP '2020-01-01 00:00:00'",
            "X'1F'",
            "r'\\d+;'",
            "INTERVAL '1' DAY",
            "NULL",
            "TRUE",
            "false",
        ]
    ),
)

ONE_ARG_FUNCTIONS = [
    "abs",
    "upper",
    "lower",
    "length",
    "year",
    "trim",
    "to_date",
    "size",
    "isnull",
    "hex",
]
TWO_ARG_FUNCTIONS = ["coalesce", "concat", "greatest", "least", "nvl", "ifnull", "round"]
COMPARISONS = ["=", "==", "<=>", "!=", "<>", "<", "<=", ">", ">="]
ARITHMETIC = ["+", "-", "*", "/", "%", "||"]


@st.composite
def call(draw: st.DrawFn, args: list[st.SearchStrategy[str]]) -> str:
    names = ONE_ARG_FUNCTIONS if len(args) == 1 else TWO_ARG_FUNCTIONS
    name = draw(st.sampled_from(names).flatmap(any_case))
    parts = [draw(arg) for arg in args]
    separator = "," + draw(GAP)
    return f"{name}{draw(st.sampled_from(['', ' ']))}({separator.join(parts)})"


def values(leaf: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Value expressions whose leaves are drawn from ``leaf``."""

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(
                lambda a, op, b, g: f"{a}{g}{op}{g}{b}",
                inner,
                st.sampled_from(ARITHMETIC),
                inner,
                GAP,
            ),
            st.builds(lambda a: f"({a})", inner),
            call([inner]),
            call([inner, inner]),
            st.builds(
                lambda a, b, c, w, t, e, n: f"{c} {w} {a} > 0 {t} {b} {e} {a} {n}",
                inner,
                inner,
                any_case("case"),
                any_case("when"),
                any_case("then"),
                any_case("else"),
                any_case("end"),
            ),
            st.builds(
                lambda a, c, t: f"{c}({a} AS {t})",
                inner,
                any_case("cast"),
                st.sampled_from(["INT", "string", "DECIMAL(10, 2)", "array<int>"]),
            ),
            st.builds(lambda a: f"{a}::bigint", inner),
        )

    return st.recursive(leaf, extend, max_leaves=6)


def predicates(value: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Boolean expressions built on ``value`` expressions."""
    simple = st.one_of(
        st.builds(
            lambda a, op, b, g: f"{a}{g}{op}{g}{b}", value, st.sampled_from(COMPARISONS), value, GAP
        ),
        st.builds(
            lambda a, k: f"{a} {k}",
            value,
            st.sampled_from(["IS NULL", "is not null", "IS NOT TRUE"]),
        ),
        st.builds(lambda a, b, c: f"{a} IN ({b}, {c})", value, value, value),
        st.builds(
            lambda a, b, c, k: f"{a} {k} {b} AND {c}", value, value, value, any_case("between")
        ),
        st.builds(lambda a, s: f"{a} LIKE {s}", value, string_literals()),
        st.builds(
            lambda a, s, q: f"{a} LIKE {q} ({s}, '%')",
            value,
            string_literals(),
            st.sampled_from(["ANY", "some", "ALL"]),
        ),
        st.builds(lambda a: f"exists(arr, x -> x > {a})", value),
        st.builds(lambda a: f"array_contains(tags, {a})", value),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(
                lambda a, op, b, g: f"{a}{g}{op}{g}{b}",
                inner,
                st.sampled_from(["AND", "and", "OR", "Or"]),
                inner,
                GAP,
            ),
            st.builds(lambda a, n: f"{n} ({a})", inner, any_case("not")),
            st.builds(lambda a: f"({a})", inner),
        )

    return st.recursive(simple, extend, max_leaves=4)


VALID_VALUES = values(st.one_of(COLUMNS, LITERALS))
VALID_CONSTRAINTS = st.builds(
    lambda lead, body, tail: lead + body + tail,
    st.sampled_from(["", " ", "\n", "/* lead */ ", "-- lead\n"]),
    predicates(VALID_VALUES),
    st.sampled_from(["", " ", "\n", " -- trailing; comment", " /* tail */"]),
)


@given(VALID_CONSTRAINTS)
def test_generated_valid_constraints_pass(constraint: str) -> None:
    assert check_constraint(constraint) is None


HOLE = "\u27e6HOLE\u27e7"

REJECTED_FRAGMENTS = [
    ("sum(amount)", "uses the aggregate function 'sum'"),
    ("COUNT(*)", "uses the aggregate function 'count'"),
    ("`Max` /* c */ (a)", "uses the aggregate function 'max'"),
    ("collect_list(a)[0]", "uses the aggregate function 'collect_list'"),
    ("any(flag)", "uses the aggregate function 'any'"),
    ("regr_count(a, b)", "uses the aggregate function 'regr_count'"),
    ("system.builtin.rand()", "uses the non-deterministic function 'rand'"),
    ("Rand(1)", "uses the non-deterministic function 'rand'"),
    ("uuid()", "uses the non-deterministic function 'uuid'"),
    ("current_date", "uses the non-deterministic function 'current_date'"),
    ("CURRENT_TIMESTAMP()", "uses the non-deterministic function 'current_timestamp'"),
    (
        "unix_timestamp()",
        "uses the non-deterministic function 'unix_timestamp' without "
        "arguments (it reads the clock)",
    ),
    ("(SELECT max(v) FROM t)", "uses a subquery (SELECT)"),
    ("(VALUES 1)", "uses a subquery (VALUES)"),
    ("(TABLE t)", "uses a subquery (TABLE)"),
    ("row_number() OVER (ORDER BY a)", "uses the window function 'row_number'"),
    ("my_agg(a) OVER w", "uses a window (OVER)"),
    ("lead(a, 1) OVER (PARTITION BY b ORDER BY c)", "uses the window function 'lead'"),
    ("explode(arr)", "uses the generator function 'explode'"),
    ("stack(2, a, b)", "uses the generator function 'stack'"),
]


def with_one_hole() -> st.SearchStrategy[str]:
    """Valid constraints in which exactly one operand is the placeholder ``HOLE``."""
    plain = VALID_VALUES
    holed_value = st.deferred(
        lambda: st.one_of(
            st.just(HOLE),
            st.builds(
                lambda a, op, b: f"{a} {op} {b}", holed_value, st.sampled_from(ARITHMETIC), plain
            ),
            st.builds(
                lambda a, op, b: f"{a} {op} {b}", plain, st.sampled_from(ARITHMETIC), holed_value
            ),
            st.builds(lambda a: f"({a})", holed_value),
            call([holed_value]),
            call([plain, holed_value]),
            st.builds(lambda a, b: f"CASE WHEN {b} > 0 THEN {a} ELSE {b} END", holed_value, plain),
            st.builds(lambda a: f"CAST({a} AS INT)", holed_value),
        )
    )
    plain_predicate = predicates(plain)
    holed_predicate = st.deferred(
        lambda: st.one_of(
            st.builds(
                lambda a, op, b: f"{a} {op} {b}", holed_value, st.sampled_from(COMPARISONS), plain
            ),
            st.builds(
                lambda a, op, b: f"{a} {op} {b}", plain, st.sampled_from(COMPARISONS), holed_value
            ),
            st.builds(lambda a: f"{a} IS NULL", holed_value),
            st.builds(lambda a, b: f"{a} IN ({b}, 1)", plain, holed_value),
            st.builds(lambda a, b: f"{a} AND {b}", holed_predicate, plain_predicate),
            st.builds(lambda a, b: f"{b} OR {a}", holed_predicate, plain_predicate),
            st.builds(lambda a: f"NOT ({a})", holed_predicate),
        )
    )
    return holed_predicate


@given(with_one_hole(), st.sampled_from(REJECTED_FRAGMENTS))
def test_a_rejected_construct_anywhere_in_a_valid_constraint_is_reported(
    template: str, fragment: tuple[str, str]
) -> None:
    assert template.count(HOLE) == 1
    text, message = fragment
    assert check_constraint(template.replace(HOLE, text)) == ConstraintProblem(REJECTED, message)


@given(st.text(max_size=80))
def test_check_constraint_never_raises(text: str) -> None:
    problem = check_constraint(text)
    assert problem is None or problem.code in (MALFORMED, REJECTED)


# -- scale -------------------------------------------------------------------------------------


def test_a_thousand_valid_constraints_all_pass() -> None:
    constraints = (VALID + LOOKALIKES) * (1000 // len(VALID + LOOKALIKES) + 1)
    constraints = constraints[:1000]
    results = [check_constraint(c) for c in constraints]
    assert results == [None] * 1000


@pytest.mark.parametrize(
    ("constraint", "code"),
    [
        ("(" * 50_000 + "a" + ")" * 50_000, None),
        (" AND ".join(f"c{i} >= {i}" for i in range(10_000)), None),
        ("x IN (" + ", ".join(f"'v{i};'" for i in range(15_000)) + ")", None),
        (" AND ".join(f"c{i} >= {i}" for i in range(10_000)) + " AND sum(x) > 0", REJECTED),
        ("(" * 100_000 + "a", MALFORMED),
    ],
)
def test_a_100_kb_constraint_checks_in_linear_time(constraint: str, code: str | None) -> None:
    assert len(constraint) >= 100_000
    problem = check_constraint(constraint)
    assert (problem.code if problem else None) == code
