"""Properties of the Databricks SQL translator, over generated statements.

Each example is one dataset statement (kind, name, constraints, properties,
query) written out as Databricks SQL with random spacing, keyword case,
comments between the tokens and quoting of the names. Whatever the writing:

- the parser reads back exactly the statement that was generated (names,
  constraint texts as written, actions, order, settings);
- the translation equals the translation of the plainest writing of the same
  statement, comments and whitespace aside;
- the translation has no Databricks-only syntax left, and every constraint
  that something reads (a filter, the quarantine, the metrics) reaches it
  inside ``coalesce(...)`` as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from hypothesis import given, settings
from hypothesis import strategies as st
from sql_text import statements_of

from sdp_expect import sql
from sdp_expect.base.sqltokens import TokenKind, tokenize
from sdp_expect.core.model import Action
from sdp_expect.dbsql.parse import parse
from sdp_expect.dbsql.statements import DatasetStatement, DatasetType

# --------------------------------------------------------------------------- generated statements

KINDS: list[tuple[tuple[str, ...], DatasetType]] = [
    (("CREATE", "OR", "REFRESH", "STREAMING", "TABLE"), DatasetType.STREAMING_TABLE),
    (("CREATE", "STREAMING", "TABLE"), DatasetType.STREAMING_TABLE),
    (("CREATE", "OR", "REFRESH", "STREAMING", "LIVE", "TABLE"), DatasetType.STREAMING_TABLE),
    (("CREATE", "OR", "REFRESH", "MATERIALIZED", "VIEW"), DatasetType.MATERIALIZED_VIEW),
    (("CREATE", "MATERIALIZED", "VIEW"), DatasetType.MATERIALIZED_VIEW),
    (("CREATE", "OR", "REFRESH", "LIVE", "TABLE"), DatasetType.MATERIALIZED_VIEW),
    (("CREATE", "TEMPORARY", "LIVE", "VIEW"), DatasetType.TEMPORARY_VIEW),
    (("CREATE", "TEMPORARY", "VIEW"), DatasetType.TEMPORARY_VIEW),
]
ACTIONS = {
    Action.WARN: (),
    Action.DROP: ("ON", "VIOLATION", "DROP", "ROW"),
    Action.FAIL: ("ON", "VIOLATION", "FAIL", "UPDATE"),
}
SEPARATORS = [" ", "  ", "\n", "\t", "\n  ", " /* c */ ", "/* EXPECT ( ; ' */",
              " /* a /* nested */ b */ ", " -- c\n", "\n-- CONSTRAINT x EXPECT (y); '\n"]
TRICKY_TEXT = st.text(alphabet="ab EXPECT;-/*()'\"`\\\n", max_size=12)
IDENTIFIER = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
QUOTABLE = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
                   max_size=10).filter(lambda s: s.strip() != "")


def single_quoted(content: str, doubled: bool) -> str:
    body = content.replace("\\", "\\\\").replace("'", "''" if doubled else "\\'")
    return f"'{body}'"


def double_quoted(content: str) -> str:
    return '"' + content.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def literals(draw: st.DrawFn) -> str:
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return str(draw(st.integers(-1000, 1000)))
    if choice == 1:
        return single_quoted(draw(TRICKY_TEXT), draw(st.booleans()))
    if choice == 2:
        return double_quoted(draw(TRICKY_TEXT))
    return draw(st.sampled_from(["a", "amount", "b.c", "`odd col`", "NULL", "true"]))


def expressions() -> st.SearchStrategy[str]:
    comparison = st.builds(lambda a, op, b: f"{a} {op} {b}", literals(),
                           st.sampled_from(["=", "<>", ">=", "<", "IS DISTINCT FROM"]),
                           literals())
    base = st.one_of(
        comparison,
        st.builds(lambda a: f"{a} IS NOT NULL", literals()),
        st.builds(lambda a, b, c: f"a IN ({a}, {b}, {c})", literals(), literals(), literals()),
        st.builds(lambda s: f"note LIKE {s}", literals()),
    )
    return st.recursive(base, lambda inner: st.one_of(
        st.builds(lambda x, y: f"({x}) AND ({y})", inner, inner),
        st.builds(lambda x, y: f"{x} OR ({y})", inner, inner),
        st.builds(lambda x: f"NOT ({x})", inner),
        st.builds(lambda x: f"CASE WHEN {x} THEN true ELSE false END", inner),
        st.builds(lambda x: f"coalesce(({x}), false)", inner),
    ), max_leaves=6)


@dataclass(frozen=True)
class Rule:
    name: str
    quoted: bool
    constraint: str
    action: Action


@dataclass(frozen=True)
class Spec:
    header: tuple[str, ...]
    type: DatasetType
    name: str
    quoted_name: bool
    live_prefix: bool
    rules: tuple[Rule, ...]
    quarantine: bool
    metrics: Optional[bool]
    other_property: bool
    query: str


@st.composite
def rules(draw: st.DrawFn) -> tuple[Rule, ...]:
    count = draw(st.integers(0, 4))
    quoted = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    names = draw(st.lists(st.one_of(IDENTIFIER.map(lambda n: f"c_{n}"), QUOTABLE),
                          min_size=count, max_size=count, unique=True))
    return tuple(
        Rule(name, quoted[i] or not re.fullmatch(r"[a-z_][a-z0-9_]*", name),
             draw(expressions()), draw(st.sampled_from(list(Action))))
        for i, name in enumerate(names)
    )


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    header, kind = draw(st.sampled_from(KINDS))
    quoted_name = draw(st.booleans())
    name = draw(QUOTABLE) if quoted_name else "t_" + draw(IDENTIFIER)
    streaming = kind is DatasetType.STREAMING_TABLE
    source = draw(st.sampled_from(["src", "LIVE.src", "`LIVE`.src", "live.src"]))
    query = (f"SELECT * FROM STREAM({source})" if streaming
             else f"SELECT a, amount FROM {source} WHERE note <> ';'")
    is_view = kind is DatasetType.TEMPORARY_VIEW
    return Spec(
        header=header, type=kind, name=name, quoted_name=quoted_name,
        live_prefix=draw(st.booleans()) and not quoted_name,
        rules=draw(rules()),
        quarantine=False if is_view else draw(st.booleans()),
        metrics=None if is_view else draw(st.sampled_from([None, True, False])),
        other_property=draw(st.booleans()),
        query=query,
    )


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class Writer:
    """Writes a spec as Databricks SQL, formatting each gap and keyword with ``pick``."""

    def __init__(self, pick: Callable[[list[str]], str], case: Callable[[str], str]) -> None:
        self.pick = pick
        self.case = case
        self.parts: list[str] = []

    def gap(self) -> None:
        self.parts.append(self.pick(SEPARATORS))

    def word(self, *words: str) -> None:
        for word in words:
            self.parts.append(self.case(word))
            self.gap()

    def raw(self, text: str) -> None:
        self.parts.append(text)
        self.gap()

    def write(self, spec: Spec) -> str:
        self.word(*spec.header)
        name = quote(spec.name) if spec.quoted_name else spec.name
        self.raw(("LIVE." if spec.live_prefix else "") + name)
        if spec.rules:
            self.raw("(")
            for index, rule in enumerate(spec.rules):
                if index:
                    self.raw(",")
                self.word("CONSTRAINT")
                self.raw(quote(rule.name) if rule.quoted else rule.name)
                self.word("EXPECT")
                self.raw("(")
                self.raw(rule.constraint)
                self.raw(")")
                self.word(*ACTIONS[rule.action])
            self.raw(")")
        properties = []
        if spec.quarantine:
            properties.append("'sdp_expect.quarantine' = 'true'")
        if spec.metrics is not None:
            properties.append(f"sdp_expect.metrics = {str(spec.metrics).lower()}")
        if spec.other_property:
            properties.append("'owner.team' = 'it''s; -- data'")
        if properties:
            self.word("TBLPROPERTIES")
            self.raw("(" + ", ".join(properties) + ")")
        self.word("AS")
        self.parts.append(spec.query)
        return "".join(self.parts)


@st.composite
def written(draw: st.DrawFn) -> tuple[Spec, str, str]:
    """A spec, a randomly formatted writing of it, and its plainest writing."""
    spec = draw(specs())

    def pick(options: list[str]) -> str:
        return draw(st.sampled_from(options))

    def case(word: str) -> str:
        style = draw(st.integers(0, 3))
        if style == 0:
            return word.upper()
        if style == 1:
            return word.lower()
        if style == 2:
            return word.title()
        return "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(word))

    messy = Writer(pick, case).write(spec) + draw(st.sampled_from(["", ";", " ;\n-- end\n"]))
    plain = Writer(lambda options: " ", str.upper).write(spec)
    return spec, messy, plain


# --------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(written())
def test_parsing_reads_back_the_generated_statement(example: tuple[Spec, str, str]) -> None:
    spec, messy, _ = example
    (statement,) = parse(messy, "gen.sql")
    assert isinstance(statement, DatasetStatement)
    assert statement.type is spec.type
    assert statement.name.parts == (spec.name,)
    assert [(e.name, e.constraint, e.action) for e in statement.rules.expectations] == [
        (r.name, r.constraint, r.action) for r in spec.rules]
    assert (statement.rules.quarantine is not None) == spec.quarantine
    assert statement.rules.metrics == spec.metrics
    assert statement.table_properties == (
        ["'owner.team' = 'it''s; -- data'"] if spec.other_property else [])
    assert statement.query is not None
    assert statement.query.text == re.sub(r"(?i)`?live`?\.", "", spec.query)


@settings(max_examples=150, deadline=None)
@given(written())
def test_translation_does_not_depend_on_spacing_case_comments_or_quoting(
        example: tuple[Spec, str, str]) -> None:
    _, messy, plain = example
    assert statements_of(sql.translate(messy, "gen.sql")) == statements_of(
        sql.translate(plain, "gen.sql"))


@settings(max_examples=150, deadline=None)
@given(written())
def test_translation_is_open_source_sql_holding_each_constraint_as_written(
        example: tuple[Spec, str, str]) -> None:
    spec, messy, _ = example
    out = sql.translate(messy, "gen.sql")
    words = {t.text.upper() for t in tokenize(out) if t.kind is TokenKind.IDENT}
    assert not words & {"CONSTRAINT", "EXPECT", "REFRESH", "VIOLATION", "LIVE"}
    assert not re.search(r"(?i)\bCREATE\s+(OR|PRIVATE|LIVE|STREAMING\s+LIVE)\b",
                         "\n".join(statements_of(out)))
    reported = spec.type is not DatasetType.TEMPORARY_VIEW and (
        spec.metrics is not False or spec.quarantine)
    for rule in spec.rules:
        if rule.action is Action.WARN and not reported:
            continue  # no filter, quarantine or metrics reads a warn rule here
        embedded = f"({rule.constraint}\n)" if "--" in rule.constraint else f"({rule.constraint})"
        # As written, parenthesised: in the kept records' filter as it is, wherever
        # NULL must count as a violation (quarantine, metrics) inside coalesce(..., false)
        # (RuleLogic.passes(in_filter=...)).
        assert embedded in out
        if reported:
            assert f"coalesce({embedded}, false)" in out
