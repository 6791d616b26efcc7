"""The clauses of a dataset statement, each read with the statement's cursor.

- In the column list, ``CONSTRAINT name EXPECT (expr) [ON VIOLATION {DROP ROW |
  FAIL UPDATE}]`` becomes one expectation of the dataset's rules; ``CHECK``,
  ``PRIMARY KEY``, ``FOREIGN KEY`` and ``UNIQUE`` constraints are SDPX-SQL-301.
- Between the name (or the column list) and ``AS``: ``COMMENT``,
  ``TBLPROPERTIES`` (its ``sdp_expect.*`` entries go to
  :mod:`sdp_expect.dbsql.table_properties`), ``PARTITIONED BY``, ``CLUSTER BY``
  and ``USING`` are kept as written; ``LOCATION``, row filters, refresh
  schedules and ``CLUSTER BY AUTO | NONE`` are SDPX-SQL-301.

Internal to :mod:`sdp_expect.dbsql`, whose reader starts in
:mod:`sdp_expect.dbsql.parse`. Nothing here imports pyspark.
"""

from __future__ import annotations

from typing import Sequence

from sdp_expect.base.sqltokens import Token, TokenKind, is_keyword, matching_paren
from sdp_expect.core.model import Action, make_expectation
from sdp_expect.dbsql.cursor import Cursor, shown, split_top_level
from sdp_expect.dbsql.statements import DatasetStatement
from sdp_expect.dbsql.table_properties import Properties

__all__ = ["read_clause", "read_constraint"]


def read_constraint(cursor: Cursor, statement: DatasetStatement, element: Sequence[Token],
                     end: Token) -> None:
    """``CONSTRAINT name EXPECT (expr) [ON VIOLATION ...]``: one more rule of the dataset.

    ``end`` is the ``,`` or ``)`` after the clause's tokens, where a clause that
    stops too early is reported.
    """
    dataset = statement.name.dataset
    keyword = element[2]
    if not is_keyword(keyword, "EXPECT"):
        raise cursor.unsupported(
            keyword, f"a {keyword.text.upper()} constraint",
            "remove it (open-source SDP datasets do not take CHECK, PRIMARY KEY, FOREIGN "
            "KEY or UNIQUE constraints); to check records write CONSTRAINT name EXPECT "
            "(condition)", dataset=dataset)
    name = element[1].value
    origin = cursor.position(element[0]).at_line()
    if len(element) < 4 or element[3].kind is not TokenKind.LPAREN:
        found = element[3] if len(element) > 3 else None
        raise cursor.error(found if found is not None else element[-1],
                           f"expected '(' after EXPECT, found {shown(found)}",
                           dataset=dataset)
    close = matching_paren(element, 3)
    if close is None:
        raise cursor.error(element[3], "'(' is never closed", dataset=dataset)
    inner = element[4:close]
    constraint = cursor.source[inner[0].start:inner[-1].end] if inner else ""
    rest = list(element[close + 1:])
    action = Action.WARN
    if rest:
        words = [t.text.upper() if t.kind is TokenKind.IDENT else t.text for t in rest]
        if words == ["ON", "VIOLATION", "DROP", "ROW"]:
            action = Action.DROP
        elif words == ["ON", "VIOLATION", "FAIL", "UPDATE"]:
            action = Action.FAIL
        else:
            bad = _first_mismatch(rest, end)
            raise cursor.error(bad, f"expected ON VIOLATION DROP ROW, ON VIOLATION FAIL "
                               f"UPDATE, ',' or ')' after the constraint, found "
                               f"{shown(bad)}", dataset=dataset)
    statement.checked = True
    statement.rules.add(make_expectation(name, constraint, action, dataset=dataset,
                                         place=origin))


def _first_mismatch(rest: Sequence[Token], end: Token) -> Token:
    """Where an ``ON VIOLATION ...`` clause (the tokens after a constraint's closing
    parenthesis) goes wrong, so that the error points at the first word no clause allows
    there, or at the ``,`` or ``)`` after it when the clause is cut short."""
    expected = [("ON",), ("VIOLATION",), ("DROP", "FAIL")]
    for index, token in enumerate(rest):
        if index < len(expected):
            if not is_keyword(token, *expected[index]):
                return token
            continue
        previous = rest[2].text.upper()
        if index == 3 and is_keyword(token, "ROW" if previous == "DROP" else "UPDATE"):
            continue
        return token
    return end


def read_clause(cursor: Cursor, statement: DatasetStatement, properties: Properties) -> None:
    """One clause between the name (or column list) and ``AS``; ``sdp_expect.*`` entries of
    ``TBLPROPERTIES`` go to ``properties``, applied once the whole statement is read."""
    token = cursor.tokens[cursor.i]
    dataset = statement.name.dataset
    if cursor.at("COMMENT"):
        cursor.take("COMMENT")
        statement.comment = cursor.expect_kind(TokenKind.STRING, "a string after COMMENT").text
    elif cursor.at("TBLPROPERTIES"):
        cursor.take("TBLPROPERTIES")
        if not cursor.at_kind(TokenKind.LPAREN):
            raise cursor.error(cursor.peek(), "expected '(' after TBLPROPERTIES, found "
                               f"{shown(cursor.peek())}", dataset=dataset)
        close = cursor.matching(cursor.i)
        inner = cursor.tokens[cursor.i + 1:close]
        cursor.i = close + 1
        for prop, comma in split_top_level(inner):
            if not prop:
                raise cursor.error(comma, "empty entry in TBLPROPERTIES", dataset=dataset)
            properties.read(cursor, prop, statement)
    elif cursor.at_sequence("PARTITIONED", "BY"):
        cursor.i += 2
        statement.partitioned_by = _parenthesised(cursor, "PARTITIONED BY", dataset)
    elif cursor.at_sequence("CLUSTER", "BY"):
        cursor.i += 2
        if cursor.at("AUTO", "NONE"):
            raise cursor.unsupported(
                cursor.tokens[cursor.i], f"CLUSTER BY {cursor.tokens[cursor.i].text.upper()}",
                "name the clustering columns, CLUSTER BY (col, ...), or remove the clause",
                dataset=dataset)
        statement.cluster_by = _parenthesised(cursor, "CLUSTER BY", dataset)
    elif cursor.at("USING"):
        cursor.take("USING")
        statement.using = cursor.expect_kind(TokenKind.IDENT, "a format after USING").text
    elif cursor.at("LOCATION"):
        raise cursor.unsupported(
            token, "LOCATION", "remove LOCATION: open-source SDP keeps pipeline datasets "
            "where the catalog puts them", dataset=dataset)
    elif cursor.at("WITH") or cursor.at_sequence("ROW", "FILTER"):
        raise cursor.unsupported(
            token, "a ROW FILTER", "remove the row filter: row filters are a Unity Catalog "
            "feature; filter the rows in the query instead", dataset=dataset)
    elif cursor.at("SCHEDULE", "TRIGGER", "REFRESH"):
        raise cursor.unsupported(
            token, f"{token.text.upper()} (a refresh schedule)", "remove it and run "
            "spark-pipelines run from your own scheduler", dataset=dataset)
    else:
        raise cursor.error(token, f"unexpected {shown(token)}; expected COMMENT, "
                           "TBLPROPERTIES, PARTITIONED BY, CLUSTER BY, USING or AS <query>",
                           dataset=dataset)


def _parenthesised(cursor: Cursor, clause: str, dataset: str) -> str:
    """A ``( ... )`` list as written; the ``clause`` it belongs to and the ``dataset``
    name its error."""
    token = cursor.peek()
    if token is None or token.kind is not TokenKind.LPAREN:
        raise cursor.error(token, f"expected '(' after {clause}, found {shown(token)}",
                           dataset=dataset)
    close = cursor.matching(cursor.i)
    text = cursor.text(cursor.tokens[cursor.i], cursor.tokens[close])
    cursor.i = close + 1
    return text
