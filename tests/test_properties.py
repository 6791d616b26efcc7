"""Laws that hold on every update, as properties over generated rows and rule sets.

Each hypothesis example is one real pipeline update in the shared Spark Connect
server: one source table of generated rows (NULLs, NaN, infinities, -0.0,
extreme integers, empty and non-ASCII strings) and a few datasets, each with a
generated rule set (constraints from a small grammar, actions warn / drop /
fail, rule names that are arbitrary text). The expected outcome comes from an
oracle in plain Python that evaluates the same constraints on the same rows
with Spark SQL semantics (three-valued logic; NaN equals NaN and is larger
than every other double; ``%`` keeps the dividend's sign; ``length`` counts
code points) and applies docs/semantics.md (expectations to metrics):

1. target = records kept, quarantine = records dropped, target + quarantine =
   query output, record for record;
2. ``_failed_expectations`` = the violated warn and drop rules, in declaration
   order;
3. ``<dataset>_dq_metrics``: one row per rule, counts equal to the oracle's,
   ``passed + failed = total``, ``dropped_records`` = quarantine size;
4. a violated fail rule fails the update with one ``[EXPECTATION_VIOLATION]``
   line naming exactly the fail rules that the shown record violated, and
   nothing of the dataset is written; no violation, no failure;
5. records of the quarantine written alike share a ``_quarantine_key`` and others do
   not; each names the update that quarantined it, and its start.

Rule names are data throughout: quotes, backticks, backslashes, spaces, SQL keywords
and comments, unicode, and Spark ``${...}`` variable references (which Spark would
substitute in SQL text: the compiler escapes ``$``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pytest
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st
from sdp_runner import MakePipeline

from sdp_expect import pipelines as dp
from sdp_expect.base.names import (
    QUARANTINE_COLUMNS,
    QUARANTINE_KEY_COLUMN,
    QUARANTINE_TIME_COLUMN,
    QUARANTINE_UPDATE_COLUMN,
)
from sdp_expect.base.violation import names_text

SCHEMA = "id INT, amount DOUBLE, qty BIGINT, name STRING"
COLUMNS = ["id", "amount", "qty", "name"]
FAILED = "_failed_expectations"

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
NAN, INF = float("nan"), float("inf")
DOUBLE_MAX = 1.7976931348623157e308

Row = tuple[Any, ...]  # (id, amount, qty, name), in COLUMNS order
Truth = Optional[bool]  # SQL boolean: TRUE, FALSE or NULL (None)

PROPERTY_SETTINGS = settings(
    max_examples=6,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------------------
# Spark SQL semantics in plain Python (the oracle's building blocks)
# ---------------------------------------------------------------------------------------
def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def sql_compare(a: Any, b: Any) -> Optional[int]:
    """-1, 0 or 1 as Spark orders two values of one type; None when either is NULL.

    Doubles: NaN = NaN, NaN is larger than every other value, -0.0 = 0.0.
    Strings: binary (UTF-8 byte order, which is code point order).
    """
    if a is None or b is None:
        return None
    if _is_nan(a) or _is_nan(b):
        return int(_is_nan(a)) - int(_is_nan(b))
    order: int = (a > b) - (a < b)
    return order


OPERATORS: dict[str, Callable[[int], bool]] = {
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "=": lambda c: c == 0,
    "<>": lambda c: c != 0,
}


def sql_and(a: Truth, b: Truth) -> Truth:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def sql_or(a: Truth, b: Truth) -> Truth:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def sql_not(a: Truth) -> Truth:
    return None if a is None else not a


def java_remainder(a: Optional[int], m: int) -> Optional[int]:
    """``a % m`` in Spark (Java): the result takes the dividend's sign."""
    if a is None:
        return None
    r = abs(a) % m
    return -r if a < 0 else r


# ---------------------------------------------------------------------------------------
# The constraint grammar: every node carries its SQL text and its Python meaning
# ---------------------------------------------------------------------------------------
class Term:
    """A value expression: SQL text, type family and its value on a row."""

    def __init__(self, sql: str, kind: str, value: Callable[[Row], Any]) -> None:
        self.sql = sql
        self.kind = kind  # "int" (INT/BIGINT, exact), "double" or "string"
        self.value = value

    def __repr__(self) -> str:
        return self.sql


class Expr:
    """A boolean expression: SQL text and its truth value on a row (None = NULL)."""

    def __init__(self, sql: str, truth: Callable[[Row], Truth]) -> None:
        self.sql = sql
        self.truth = truth

    def __repr__(self) -> str:
        return repr(self.sql)


def column(index: int, kind: str) -> Term:
    return Term(COLUMNS[index], kind, lambda r: r[index])


ID, AMOUNT, QTY, NAME = (column(0, "int"), column(1, "double"), column(2, "int"),
                         column(3, "string"))


def int_literal(k: int) -> Term:
    return Term(str(k), "int", lambda r: k)


def double_literal(x: float, cast: bool) -> Term:
    if math.isnan(x):
        text = "NaN"
    elif math.isinf(x):
        text = "Infinity" if x > 0 else "-Infinity"
    else:
        text = repr(x)
    sql = f"CAST('{text}' AS DOUBLE)" if cast or not math.isfinite(x) else f"{text}D"
    return Term(sql, "double", lambda r: x)


def sql_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def string_literal(s: str) -> Term:
    return Term(sql_string(s), "string", lambda r: s)


def coalesce(term: Term, default: Term) -> Term:
    return Term(f"coalesce({term.sql}, {default.sql})", term.kind,
                lambda r: default.value(r) if term.value(r) is None else term.value(r))


def remainder(term: Term, m: int) -> Term:
    return Term(f"{term.sql} % {m}", "int", lambda r: java_remainder(term.value(r), m))


def pmod(term: Term, m: int) -> Term:
    return Term(f"pmod({term.sql}, {m})", "int",
                lambda r: None if term.value(r) is None else term.value(r) % m)


def length(term: Term) -> Term:
    return Term(f"length({term.sql})", "int",
                lambda r: None if term.value(r) is None else len(term.value(r)))


def trim(term: Term) -> Term:
    """Spark's ``trim(str)`` removes the space character (U+0020) only."""
    return Term(f"trim({term.sql})", "string",
                lambda r: None if term.value(r) is None else term.value(r).strip(" "))


def compare(a: Term, op: str, b: Term) -> Expr:
    def truth(r: Row) -> Truth:
        c = sql_compare(a.value(r), b.value(r))
        return None if c is None else OPERATORS[op](c)

    return Expr(f"{a.sql} {op} {b.sql}", truth)


def is_null(term: Term, negated: bool) -> Expr:
    return Expr(f"{term.sql} IS {'NOT ' if negated else ''}NULL",
                lambda r: (term.value(r) is None) != negated)


def is_nan(term: Term) -> Expr:
    """``isnan(NULL)`` is FALSE, not NULL."""
    return Expr(f"isnan({term.sql})", lambda r: _is_nan(term.value(r)))


def between(term: Term, low: Term, high: Term) -> Expr:
    ge, le = compare(term, ">=", low), compare(term, "<=", high)
    return Expr(f"{term.sql} BETWEEN {low.sql} AND {high.sql}",
                lambda r: sql_and(ge.truth(r), le.truth(r)))


def in_list(term: Term, items: list[Term]) -> Expr:
    def truth(r: Row) -> Truth:
        result: Truth = False
        for item in items:
            result = sql_or(result, compare(term, "=", item).truth(r))
        return result

    return Expr(f"{term.sql} IN ({', '.join(i.sql for i in items)})", truth)


def starts_with(term: Term, prefix: str) -> Expr:
    return Expr(f"startswith({term.sql}, {sql_string(prefix)})",
                lambda r: None if term.value(r) is None else term.value(r).startswith(prefix))


def constant(sql: str, value: Truth) -> Expr:
    return Expr(sql, lambda r: value)


def negate(e: Expr) -> Expr:
    return Expr(f"NOT ({e.sql})", lambda r: sql_not(e.truth(r)))


def conjunction(a: Expr, b: Expr) -> Expr:
    return Expr(f"({a.sql}) AND ({b.sql})", lambda r: sql_and(a.truth(r), b.truth(r)))


def disjunction(a: Expr, b: Expr) -> Expr:
    return Expr(f"({a.sql}) OR ({b.sql})", lambda r: sql_or(a.truth(r), b.truth(r)))


def case_when(cond: Expr, then: Expr, otherwise: Expr) -> Expr:
    """A NULL condition takes the ELSE branch."""
    return Expr(f"CASE WHEN {cond.sql} THEN {then.sql} ELSE {otherwise.sql} END",
                lambda r: then.truth(r) if cond.truth(r) is True else otherwise.truth(r))


# -- strategies for the grammar ----------------------------------------------------------
int_values = st.one_of(
    st.sampled_from([0, 1, -1, 2, -3, INT_MIN, INT_MAX, LONG_MIN, LONG_MAX]),
    st.integers(INT_MIN, INT_MAX),
    st.integers(LONG_MIN, LONG_MAX),
)
double_values = st.one_of(
    st.sampled_from([0.0, -0.0, 1.5, -1.5, NAN, INF, -INF, 5e-324, DOUBLE_MAX, -DOUBLE_MAX]),
    st.floats(allow_nan=True, allow_infinity=True),
)
# Literal text may hold quotes and backslashes: they are escaped as Spark reads them.
string_values = st.one_of(
    st.sampled_from(["", " ", "a", "NULL", "ü", "🚀", "it's", "\\"]),
    st.text(st.sampled_from(list("aAz ü日🚀'\"`\\%_0")), max_size=4),
)
int_literals = int_values.map(int_literal)
double_literals = st.builds(double_literal, double_values, st.booleans())
string_literals = string_values.map(string_literal)
moduli = st.sampled_from([2, 3, 7])

int_terms = st.one_of(
    st.sampled_from([ID, QTY]),
    st.builds(remainder, st.sampled_from([ID, QTY]), moduli),
    st.builds(pmod, st.just(QTY), moduli),
    st.builds(coalesce, st.sampled_from([ID, QTY]), int_literals),
    st.just(length(NAME)),
    st.just(length(trim(NAME))),
)
double_terms = st.one_of(st.just(AMOUNT), st.builds(coalesce, st.just(AMOUNT), double_literals))
string_terms = st.one_of(
    st.just(NAME),
    st.just(trim(NAME)),
    st.builds(coalesce, st.just(NAME), string_literals),
)
TERMS = {"int": (int_terms, int_literals), "double": (double_terms, double_literals),
         "string": (string_terms, string_literals)}


@st.composite
def comparisons(draw: st.DrawFn) -> Expr:
    terms, literals = TERMS[draw(st.sampled_from(sorted(TERMS)))]
    left = draw(terms)
    right = draw(st.one_of(literals, terms))
    return compare(left, draw(st.sampled_from(sorted(OPERATORS))), right)


@st.composite
def betweens(draw: st.DrawFn) -> Expr:
    terms, literals = TERMS[draw(st.sampled_from(["int", "double"]))]
    return between(draw(terms), draw(literals), draw(literals))


@st.composite
def in_lists(draw: st.DrawFn) -> Expr:
    terms, literals = TERMS[draw(st.sampled_from(sorted(TERMS)))]
    return in_list(draw(terms), draw(st.lists(literals, min_size=1, max_size=3)))


any_terms = st.one_of(int_terms, double_terms, string_terms)
atoms = st.one_of(
    comparisons(),
    st.builds(is_null, any_terms, st.booleans()),
    st.builds(is_nan, double_terms),
    betweens(),
    in_lists(),
    st.builds(starts_with, string_terms, string_values),
    st.sampled_from([constant("TRUE", True), constant("FALSE", False),
                     constant("CAST(NULL AS BOOLEAN)", None)]),
)


def expressions(depth: int = 2) -> st.SearchStrategy[Expr]:
    if depth == 0:
        return atoms
    inner = expressions(depth - 1)
    return st.one_of(
        atoms,
        st.builds(negate, inner),
        st.builds(conjunction, inner, inner),
        st.builds(disjunction, inner, inner),
        st.builds(case_when, inner, inner, inner),
    )


constraints = expressions()


# ---------------------------------------------------------------------------------------
# Rows and rule names
# ---------------------------------------------------------------------------------------
row_ids = st.one_of(st.none(), st.sampled_from([0, 1, -1, INT_MIN, INT_MAX]),
                    st.integers(INT_MIN, INT_MAX))
row_amounts = st.one_of(
    st.none(),
    st.sampled_from([NAN, INF, -INF, 0.0, -0.0, 5e-324, DOUBLE_MAX, -DOUBLE_MAX, 1.5]),
    st.floats(allow_nan=True, allow_infinity=True),
)
row_qtys = st.one_of(st.none(), st.sampled_from([0, 1, -1, 2, -3, LONG_MIN, LONG_MAX]),
                     st.integers(LONG_MIN, LONG_MAX))
# Any text but lone surrogates (which Spark strings cannot hold).
row_names = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "a", "NULL", "ünïcödé", "🚀", "日本語", "it's", 'q"q', "`b`",
                     "\\", "a\nb", " pad ", "\u00a0"]),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=8),
)
rows_of = st.tuples(row_ids, row_amounts, row_qtys, row_names)


@st.composite
def rows_strategy(draw: st.DrawFn) -> list[Row]:
    """Source rows; an empty source now and then (its metrics count zeros)."""
    size = draw(st.sampled_from([8, 0, 4, 12]))
    return draw(st.lists(rows_of, min_size=size, max_size=size))


TRICKY_NAMES = [
    "it's", 'say "hi"', "with `backticks`", "``", "two  spaces", " leading", "trailing ",
    "ünïcödé ✓", "🚀", "日本語のルール", "SELECT", "select * from src; --", "DROP TABLE src",
    "NULL", "null", "TRUE", "a, b", "x.y", "$1", "%s", "{0}", "\\", "a'b`c\"d", "Rule",
    "rule", "rule ", FAILED, "passed_records", "[EXPECTATION_VIOLATION]",
    # Hazards for names embedded in generated SQL text: escapes, comments, LIKE wildcards.
    "\\u0041", "\\n", "\\'", "\\%", "50%_off", "-- comment", "/* c */", "'; DROP TABLE src; --",
    "$", "${", "{x}",
]
# Valid names (make_expectation): any string that is not blank. No control or line
# separator characters: the error line must stay one line.
rule_names = st.one_of(
    st.sampled_from(TRICKY_NAMES),
    st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1,
            max_size=12),
).filter(lambda s: s.strip() != "")


# ---------------------------------------------------------------------------------------
# Scenarios: one pipeline update
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    name: str
    constraint: Expr
    action: str  # warn, drop or fail


@dataclass(frozen=True)
class Dataset:
    name: str
    streaming: bool  # streaming table (dp.table) or materialized view
    rules: tuple[Rule, ...]  # declaration order
    quarantine: bool
    grouped: bool  # runs of one action declared as one expect_all* dict
    where: Optional[Expr]  # the query's own filter on the source


@dataclass(frozen=True)
class Scenario:
    rows: list[Row]
    datasets: tuple[Dataset, ...]


def passes(e: Expr, row: Row, null_passes: bool) -> bool:
    truth = e.truth(row)
    return null_passes if truth is None else truth


def fail_guard(rules: tuple[Rule, ...], null_passes: bool) -> Optional[Expr]:
    """A query filter that keeps only the records passing every fail rule."""
    fails = [r.constraint for r in rules if r.action == "fail"]
    if not fails:
        return None
    default = "true" if null_passes else "false"
    return Expr(" AND ".join(f"coalesce(({e.sql}), {default})" for e in fails),
                lambda row: all(passes(e, row, null_passes) for e in fails))


@st.composite
def scenarios(draw: st.DrawFn, actions: tuple[str, ...], null_passes: bool,
              names_from: st.SearchStrategy[str] = rule_names) -> Scenario:
    rows = draw(rows_strategy())
    datasets = []
    for index in range(draw(st.integers(2, 3))):
        count = draw(st.integers(1, 4))
        names = draw(st.lists(names_from, min_size=count, max_size=count, unique=True))
        rules = tuple(Rule(name, draw(constraints), draw(st.sampled_from(actions)))
                      for name in names)
        where = draw(st.sampled_from(["none", "fail guard", "none", "random"]))
        if where == "fail guard":
            query_filter = fail_guard(rules, null_passes)
        elif where == "random":
            query_filter = draw(constraints)
        else:
            query_filter = None
        datasets.append(Dataset(f"ds{index}", draw(st.booleans()), rules, draw(st.booleans()),
                                draw(st.booleans()), query_filter))
    return Scenario(rows, tuple(datasets))


# ---------------------------------------------------------------------------------------
# The oracle
# ---------------------------------------------------------------------------------------
@dataclass
class Expected:
    produced: list[Row]  # the query's output
    kept: list[Row]
    dropped: list[tuple[Row, tuple[str, ...]]]  # with the _failed_expectations names
    failed_counts: dict[str, int]
    fail_violations: dict[Any, str]  # row key -> violated fail rule names, as the line lists them


def oracle(dataset: Dataset, rows: list[Row], null_passes: bool) -> Expected:
    produced = [r for r in rows if dataset.where is None or dataset.where.truth(r) is True]
    kept, dropped = [], []
    failed_counts = {rule.name: 0 for rule in dataset.rules}
    fail_violations = {}
    for row in produced:
        violated = [rule for rule in dataset.rules
                    if not passes(rule.constraint, row, null_passes)]
        for rule in violated:
            failed_counts[rule.name] += 1
        if any(rule.action == "drop" for rule in violated):
            dropped.append((row, tuple(r.name for r in violated if r.action != "fail")))
        else:
            kept.append(row)
        fails = [r.name for r in violated if r.action == "fail"]
        if fails:
            fail_violations[key(row)] = names_text(fails)  # each name quoted
    return Expected(produced, kept, dropped, failed_counts, fail_violations)


# ---------------------------------------------------------------------------------------
# Declaring the datasets
# ---------------------------------------------------------------------------------------
SINGLE = {"warn": dp.expect, "drop": dp.expect_or_drop, "fail": dp.expect_or_fail}
GROUP = {"warn": dp.expect_all, "drop": dp.expect_all_or_drop, "fail": dp.expect_all_or_fail}


def declare(spark: Any, dataset: Dataset) -> None:
    """Declare one dataset as a user would, rules stacked top to bottom in order."""

    def query() -> Any:
        frame = (spark.readStream if dataset.streaming else spark.read).table("src")
        return frame if dataset.where is None else frame.where(dataset.where.sql)

    decorators = [dp.quarantine()] if dataset.quarantine else []
    runs: list[list[Rule]] = []
    for rule in dataset.rules:
        if dataset.grouped and runs and runs[-1][0].action == rule.action:
            runs[-1].append(rule)
        else:
            runs.append([rule])
    for run in runs:
        if dataset.grouped:
            decorators.append(GROUP[run[0].action]({r.name: r.constraint.sql for r in run}))
        else:
            decorators.extend(SINGLE[r.action](r.name, r.constraint.sql) for r in run)
    function = query
    for decorator in reversed(decorators):  # decorators apply bottom-up
        function = decorator(function)
    kind = dp.table if dataset.streaming else dp.materialized_view
    kind(name=dataset.name)(function)


# ---------------------------------------------------------------------------------------
# Comparing results
# ---------------------------------------------------------------------------------------
def canonical(value: Any) -> Any:
    return ("NaN",) if _is_nan(value) else value


def key(row: Row) -> tuple[Any, ...]:
    """A hashable, NaN-aware identity of a record (-0.0 and 0.0 are one key)."""
    return tuple(canonical(v) for v in row)


def as_row(record: dict[str, Any]) -> Row:
    return tuple(record[c] for c in COLUMNS)


def assert_same_records(what: str, expected: Counter[tuple[Any, ...]],
                        actual: Counter[tuple[Any, ...]], context: str) -> None:
    missing = sorted(map(repr, (expected - actual).elements()))
    extra = sorted(map(repr, (actual - expected).elements()))
    assert not missing and not extra, (
        f"{what}: records differ\n  missing: {missing}\n  unexpected: {extra}\n{context}")


def describe(scenario: Scenario, dataset: Dataset) -> str:
    rules = "\n".join(f"    {r.action:4} {r.name!r}: {r.constraint.sql}" for r in dataset.rules)
    return (f"dataset {dataset.name} ({'streaming table' if dataset.streaming else 'mv'}, "
            f"quarantine={dataset.quarantine}, where={dataset.where!r})\n{rules}\n"
            f"  source rows: {scenario.rows!r}")


def exact(row: Row) -> tuple[Any, ...]:
    """A record as its values are written: -0.0 and 0.0 apart, every NaN one."""
    return tuple(("NaN",) if _is_nan(v) else (type(v).__name__, repr(v)) for v in row)


def check_quarantine_keys(quarantined: list[dict[str, Any]], context: str) -> None:
    """Law 5: records written alike share a key and others do not (the key is a hash of
    the record's columns alone); every record names one update, and its start."""
    by_record: dict[tuple[Any, ...], set[str]] = {}
    by_key: dict[str, set[tuple[Any, ...]]] = {}
    for r in quarantined:
        record, record_key = exact(as_row(r)), r[QUARANTINE_KEY_COLUMN]
        assert isinstance(record_key, str) and len(record_key) == 64, (record_key, context)
        by_record.setdefault(record, set()).add(record_key)
        by_key.setdefault(record_key, set()).add(record)
    assert all(len(keys) == 1 for keys in by_record.values()), (by_record, context)
    assert all(len(records) == 1 for records in by_key.values()), (by_key, context)
    updates = {(r[QUARANTINE_UPDATE_COLUMN], r[QUARANTINE_TIME_COLUMN]) for r in quarantined}
    assert len(updates) <= 1 and None not in next(iter(updates), ()), (updates, context)


def check_laws(result: Any, scenario: Scenario, dataset: Dataset, expected: Expected) -> None:
    """Laws 1-3 for a dataset whose update succeeded."""
    context = describe(scenario, dataset)
    assert result.table(dataset.name).columns == COLUMNS, context
    target = Counter(key(as_row(r)) for r in result.rows(dataset.name))
    assert_same_records(f"{dataset.name} (target)", Counter(map(key, expected.kept)), target,
                        context)

    quarantine_name = f"{dataset.name}_quarantine"
    if dataset.quarantine:
        assert result.table(quarantine_name).columns == [*COLUMNS, *QUARANTINE_COLUMNS], context
        quarantined = result.rows(quarantine_name)
        check_quarantine_keys(quarantined, context)
        records = Counter(key(as_row(r)) for r in quarantined)
        assert_same_records(f"{dataset.name}: target + quarantine = query output",
                            Counter(map(key, expected.produced)), target + records, context)
        assert_same_records(
            f"{quarantine_name} (records with {FAILED})",
            Counter((key(row), names) for row, names in expected.dropped),
            Counter((key(as_row(r)), tuple(r[FAILED])) for r in quarantined), context)
    else:
        assert quarantine_name not in result.outputs, context

    metrics = result.rows(f"{dataset.name}_dq_metrics")
    assert sorted(m["expectation"] for m in metrics) == sorted(r.name for r in dataset.rules), (
        f"one metrics row per expectation: {metrics}\n{context}")
    by_name = {m["expectation"]: m for m in metrics}
    total, dropped = len(expected.produced), len(expected.dropped)
    for rule in dataset.rules:
        row = by_name[rule.name]
        failed = expected.failed_counts[rule.name]
        assert row == {
            "dataset": dataset.name, "expectation": rule.name, "action": rule.action,
            "constraint": rule.constraint.sql, "passed_records": total - failed,
            "failed_records": failed, "total_records": total, "dropped_records": dropped,
        }, f"metrics row of {rule.name!r} differs from the oracle\n{context}"
        assert row["passed_records"] + row["failed_records"] == row["total_records"], context
        if dataset.quarantine:
            assert row["dropped_records"] == sum(records.values()), context


def violation_reports(output: str, dataset: str) -> list[tuple[str, dict[str, Any], str]]:
    """Every ``[EXPECTATION_VIOLATION]`` line of a dataset: (names, record, line)."""
    prefix = (f"[EXPECTATION_VIOLATION] Flow '{dataset}' failed to meet the expectation. "
              "Violated expectations: ")
    separator = ". Output record: '"
    decoder = json.JSONDecoder()
    reports = []
    start = output.find(prefix)
    while start >= 0:
        body = start + len(prefix)
        line_end = output.find("\n", body)
        line_end = len(output) if line_end < 0 else line_end
        # Names hold no line breaks and the record is JSON: the line ends after it.
        cut = output.find(separator, body, line_end)
        while cut >= 0:
            try:
                record, end = decoder.raw_decode(output, cut + len(separator))
            except ValueError:
                record, end = None, 0
            if isinstance(record, dict) and output.startswith("'.", end):
                reports.append((output[body:cut], record, output[start:end + 2]))
                break
            cut = output.find(separator, cut + 1, line_end)
        # An occurrence that is not followed by a record on its line is the message
        # template quoted in a query plan, not a report.
        start = output.find(prefix, body)
    return reports


def json_row(record: dict[str, Any]) -> Row:
    """The record of an error line as a row (Spark writes NaN and infinities as strings)."""
    assert list(record) == COLUMNS, record
    amount = record["amount"]
    return (record["id"], float(amount) if isinstance(amount, str) else amount,
            record["qty"], record["name"])


def check_failed(result: Any, scenario: Scenario, dataset: Dataset, expected: Expected) -> None:
    """Law 4 for a dataset with a violated fail rule."""
    context = describe(scenario, dataset)
    reports = violation_reports(result.output, dataset.name)
    assert reports, f"no [EXPECTATION_VIOLATION] line for {dataset.name}\n{context}\n" \
                    f"{result.output[-3000:]}"
    for names, record, line in reports:
        assert "\n" not in line, f"the violation line is split: {line!r}"
        row = key(json_row(record))
        assert row in expected.fail_violations, (
            f"the reported record does not violate a fail rule: {line!r}\n{context}")
        assert names == expected.fail_violations[row], (
            f"wrong names in {line!r}; expected {expected.fail_violations[row]}\n{context}")
    companions = [dataset.name, f"{dataset.name}_dq_metrics"]
    if dataset.quarantine:
        companions.append(f"{dataset.name}_quarantine")
    for table in companions:
        if result.exists(table):
            assert result.rows(table) == [], f"{table} was written by a failed update\n{context}"


def run_scenario(make_pipeline: MakePipeline, scenario: Scenario, null_passes: bool) -> None:
    conf = {"sdp_expect.null_result": "pass"} if null_passes else {}

    def define(spark: Any) -> None:
        for dataset in scenario.datasets:
            declare(spark, dataset)

    pipeline = make_pipeline(define, conf=conf)
    pipeline.create_table("src", scenario.rows, SCHEMA)
    result = pipeline.run()
    expected = {d.name: oracle(d, scenario.rows, null_passes) for d in scenario.datasets}
    failing = sorted(name for name, e in expected.items() if e.fail_violations)
    event(f"datasets failing: {len(failing)} of {len(scenario.datasets)}")
    event(f"records dropped: {'some' if any(e.dropped for e in expected.values()) else 'none'}")
    assert result.ok == (not failing), (
        f"the oracle expects {'failures of ' + str(failing) if failing else 'success'}; "
        f"ok={result.ok}\n{result.output[-3000:]}")
    for dataset in scenario.datasets:
        if dataset.name in failing:
            check_failed(result, scenario, dataset, expected[dataset.name])
        else:
            assert not violation_reports(result.output, dataset.name), dataset.name
            check_laws(result, scenario, dataset, expected[dataset.name])


# ---------------------------------------------------------------------------------------
# Explicit examples: every edge value and tricky name, whatever hypothesis draws
# ---------------------------------------------------------------------------------------
EDGE_ROWS = [
    (1, NAN, LONG_MAX, "ünïcödé 🚀"),
    (INT_MIN, INF, LONG_MIN, ""),
    (INT_MAX, -INF, -3, " "),
    (0, -0.0, 0, None),
    (None, None, None, "it's \"q\" `b` \\"),
    (-7, 0.0, 7, "日本語"),
    (3, 1.5, -2, "a\nb"),
]


EDGE_NAMES = ["it's \"quoted\"", "with `backticks`", "ünïcödé ✓ 🚀", "SELECT * FROM src; --",
              "a, b", "NULL", " leading and trailing "]


def edge_scenario(actions: tuple[str, ...], null_passes: bool,
                  names: list[str] = EDGE_NAMES) -> Scenario:
    cycle = [a for a in ("warn", "drop", "fail") if a in actions]
    constraints = [
        compare(AMOUNT, ">=", double_literal(0.0, False)),
        compare(AMOUNT, "=", AMOUNT),
        compare(length(NAME), "<=", int_literal(3)),
        compare(remainder(QTY, 2), "=", int_literal(0)),
        between(ID, int_literal(-7), int_literal(INT_MAX)),
        compare(NAME, "<>", string_literal("")),
        negate(is_nan(AMOUNT)),
    ]
    rules = tuple(Rule(name, e, cycle[i % len(cycle)])
                  for i, (name, e) in enumerate(zip(names, constraints, strict=True)))
    datasets = [Dataset("ds0", False, rules, True, False, None),
                Dataset("ds1", True, rules[::-1], True, True, None)]
    if "fail" in actions:
        datasets.append(Dataset("ds2", False, rules, True, True,
                                fail_guard(rules, null_passes)))
    return Scenario(EDGE_ROWS, tuple(datasets))


WARN_DROP = ("warn", "drop")
ALL_ACTIONS = ("warn", "drop", "fail")


# ---------------------------------------------------------------------------------------
# The properties
# ---------------------------------------------------------------------------------------
@pytest.mark.timeout(900)
@PROPERTY_SETTINGS
@given(scenario=scenarios(WARN_DROP, null_passes=False))
@example(scenario=edge_scenario(WARN_DROP, null_passes=False))
def test_warn_and_drop_conserve_records_and_count_like_the_oracle(
        make_pipeline: MakePipeline, scenario: Scenario) -> None:
    run_scenario(make_pipeline, scenario, null_passes=False)


@pytest.mark.timeout(900)
@PROPERTY_SETTINGS
@given(scenario=scenarios(ALL_ACTIONS, null_passes=False))
@example(scenario=edge_scenario(ALL_ACTIONS, null_passes=False))
def test_fail_rules_fail_exactly_when_the_oracle_says_with_the_right_line(
        make_pipeline: MakePipeline, scenario: Scenario) -> None:
    run_scenario(make_pipeline, scenario, null_passes=False)


@pytest.mark.timeout(900)
@settings(PROPERTY_SETTINGS, max_examples=4)
@given(scenario=scenarios(ALL_ACTIONS, null_passes=True))
@example(scenario=edge_scenario(ALL_ACTIONS, null_passes=True))
def test_null_result_pass_makes_null_pass_in_all_four_places(
        make_pipeline: MakePipeline, scenario: Scenario) -> None:
    run_scenario(make_pipeline, scenario, null_passes=True)


# Spark substitutes ${...} references (to Spark confs, env:, system:) in SQL text before
# parsing it, expressions included (spark.sql.variable.substitute, on by default).
SPARK_VARIABLES = ["${spark.sql.shuffle.partitions}", "${env:HOME}", "${system:java.version}",
                   "${spark.sql.ansi.enabled}"]
variable_names = st.builds(lambda before, variable, after: before + variable + after,
                           st.sampled_from(["", "rule ", "it's "]),
                           st.sampled_from(SPARK_VARIABLES), st.sampled_from(["", " ✓", "'"]))


@pytest.mark.timeout(900)
@settings(PROPERTY_SETTINGS, max_examples=2, report_multiple_bugs=False,
          # no shrinking; the profile decides whether examples are generated (conftest.py)
          phases=[p for p in settings().phases if p in (Phase.explicit, Phase.generate)])
@given(scenario=scenarios(ALL_ACTIONS, null_passes=False, names_from=variable_names))
@example(scenario=edge_scenario(ALL_ACTIONS, null_passes=False, names=[
    "${spark.sql.shuffle.partitions}", "${env:HOME}", "it's ${system:java.version}",
    "${spark.sql.shuffle.partitions}'", "rule ${env:HOME} ✓", "plain", "${spark.app.name}"]))
def test_rule_names_that_look_like_spark_variables_stay_data(
        make_pipeline: MakePipeline, scenario: Scenario) -> None:
    run_scenario(make_pipeline, scenario, null_passes=False)
