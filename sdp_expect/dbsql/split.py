"""Split a Databricks SQL file, or a SQL notebook exported from Databricks, into statements.

This is the one place that decides where the statements of a file start and
end; :func:`sdp_expect.dbsql.parse.parse` and :func:`~sdp_expect.dbsql.parse.check`
(and so ``sql.include``, ``sdp-expect translate``, ``sdp-expect validate`` and
``sdp-expect migrate``) all read the list it gives.

A statement ends:

- at ``;`` (outside quotes and comments);
- at a notebook cell separator, a line ``-- COMMAND ----------`` (any number
  of dashes) starting at column 1: an exported notebook separates its cells
  so, usually without ``;``;
- for ``SET`` and ``USE``, at the end of their line, when no ``;`` ends them
  sooner (as in a Databricks notebook, where ``SET k = v`` needs no ``;``).

A statement never runs silently into the next one: a ``CREATE`` of a pipeline
statement (``CREATE [OR ...] {MATERIALIZED | STREAMING | LIVE | TEMPORARY |
INCREMENTAL | PRIVATE | TABLE | VIEW | FLOW} ...``), a ``SET key = value`` or a
``USE {CATALOG | SCHEMA | DATABASE}`` at the top level of another statement
(outside parentheses; ``SET`` and ``USE`` at the start of a line) means a ``;``
is missing. That is SDPX-SQL-302 at the second statement; both statements are
still read (:func:`~sdp_expect.dbsql.parse.check` reports their own errors too).

Notebook cells (a cell starts at the top of the file or after a separator):

- ``-- Databricks notebook source``, the first line of an export, is a comment;
- a cell whose first line is ``-- MAGIC %md`` (or ``%md-sandbox``) is markdown:
  its ``-- MAGIC`` lines are comments, nothing to read;
- a cell whose first line is ``-- MAGIC %sql`` holds SQL behind ``-- MAGIC``
  prefixes: the prefixes (and the ``%sql`` line) are blanked out, keeping every
  other character where it is, and the SQL is read like any other;
- a cell in another language (``%python``, ``%scala``, ``%r``, ``%sh``,
  ``%pip``, ``%run``, ...) is SDPX-SQL-307 at its first line: a SQL pipeline
  file cannot run it, and leaving it out silently would lose what it defines.

Separators and ``-- MAGIC`` lines are recognised as comment tokens starting at
column 1, so text inside a string or a block comment is never taken for one.
Nothing here imports pyspark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.sqltokens import Token, TokenKind, is_keyword, tokenize

__all__ = [
    "MARKDOWN_MAGICS",
    "NOTEBOOK_HEADER",
    "SQL_MAGIC",
    "SplitFile",
    "StatementTokens",
    "is_cell_separator",
    "split",
]

NOTEBOOK_HEADER = "-- Databricks notebook source"
"""The first line of a SQL notebook exported from Databricks."""
SQL_MAGIC = "sql"
"""The magic of a SQL cell (``-- MAGIC %sql``)."""
MARKDOWN_MAGICS = frozenset({"md", "md-sandbox"})
"""Magics of documentation cells, which hold nothing to run."""

_SEPARATOR = re.compile(r"--\s*COMMAND\s*-+")
_MAGIC = re.compile(r"--\s*MAGIC(?=\s|$)\s?")
_PIPELINE_WORDS = ("OR", "MATERIALIZED", "STREAMING", "LIVE", "TEMPORARY", "INCREMENTAL",
                   "PRIVATE", "TABLE", "VIEW", "FLOW")
_USE_WORDS = ("CATALOG", "SCHEMA", "DATABASE", "NAMESPACE")
_SQL_302 = "SDPX-SQL-302"
_SQL_307 = "SDPX-SQL-307"


@dataclass(frozen=True)
class StatementTokens:
    """The tokens of one statement (no comments, no ``;``), in file order.

    :param tokens: The tokens; never empty.
    """

    tokens: list[Token]


@dataclass
class SplitFile:
    """A file split into statements.

    :param source: The text the tokens' offsets point into: the file's text,
        with the ``-- MAGIC`` prefixes of ``%sql`` cells blanked out (every
        other character, and so every line and column, unchanged).
    :param items: The statements, and the errors found between them
        (SDPX-SQL-302 for a missing ``;``, SDPX-SQL-307 for a cell in another
        language), in file order.
    :param cells: How many notebook cells the file has (1 for a plain file).
    """

    source: str
    items: list[Union[StatementTokens, SdpExpectError]] = field(default_factory=list)
    cells: int = 1

    @property
    def statements(self) -> list[StatementTokens]:
        """Only the statements."""
        return [item for item in self.items if isinstance(item, StatementTokens)]


def is_cell_separator(token: Token) -> bool:
    """Whether ``token`` is a notebook cell separator (``-- COMMAND ---...`` at column 1).

    :param token: A token from :func:`~sdp_expect.base.sqltokens.tokenize` with comments kept.
    """
    return (token.kind is TokenKind.COMMENT and token.col == 1
            and _SEPARATOR.fullmatch(token.text.rstrip()) is not None)


def _is_header(token: Token) -> bool:
    """Whether ``token`` is the ``-- Databricks notebook source`` line of an export, which
    comes right before the first cell's magic line and must not hide it."""
    return (token.kind is TokenKind.COMMENT and token.col == 1
            and token.text.rstrip() == NOTEBOOK_HEADER)


def _magic(token: Token) -> Optional[re.Match[str]]:
    """The ``-- MAGIC`` prefix of a comment token at column 1, or None: only a comment token
    is looked at, so ``-- MAGIC`` inside a string or a block comment is never taken for one."""
    if token.kind is not TokenKind.COMMENT or token.col != 1:
        return None
    return _MAGIC.match(token.text)


@dataclass
class _Cell:
    """One notebook cell: its tokens (comments included, the separator left out) and, when
    its first line is ``-- MAGIC %lang``, that language in lower case and that line's
    comment token."""

    tokens: list[Token]
    magic: Optional[str] = None
    magic_token: Optional[Token] = None


def _cells(tokens: Sequence[Token]) -> list[_Cell]:
    """The cells of a file's tokens, separators left out; the tokens keep their comments,
    since separators and magic lines are comments."""
    cells = [_Cell([])]
    for token in tokens:
        if is_cell_separator(token):
            cells.append(_Cell([]))
        else:
            cells[-1].tokens.append(token)
    for cell in cells:
        # The export's header line comes right before the first cell's magic line.
        body = [t for t in cell.tokens if not _is_header(t)]
        if not body:
            continue
        first = body[0]
        found = _magic(first)
        if found is None:
            continue
        content = first.text[found.end():].strip()
        if content.startswith("%"):
            words = content[1:].split()
            cell.magic = words[0].lower() if words else ""
            cell.magic_token = first
    return cells


def _blank_sql_cells(text: str, cells: Sequence[_Cell]) -> str:
    """``text`` with the ``-- MAGIC`` prefixes (and ``%sql`` lines) of ``%sql`` cells as
    spaces, so that every other character keeps its line and column."""
    spans: list[tuple[int, int]] = []
    for cell in cells:
        if cell.magic != SQL_MAGIC or cell.magic_token is None:
            continue
        spans.append((cell.magic_token.start, cell.magic_token.end))
        for token in cell.tokens:
            found = _magic(token)
            if token is not cell.magic_token and found is not None:
                spans.append((token.start, token.start + found.end()))
    if not spans:
        return text
    pieces = []
    position = 0
    for start, end in spans:
        pieces.append(text[position:start])
        pieces.append(" " * (end - start))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def split(text: str, file: str) -> SplitFile:
    """The statements of a Databricks SQL file or exported SQL notebook, in file order.

    :param text: The file's content.
    :param file: The file as shown in messages.
    :raises SqlTokenError: A quote or comment is never closed (the caller
        reports it as SDPX-SQL-302).
    """
    tokens = tokenize(text, keep_comments=True)
    cells = _cells(tokens)
    source = _blank_sql_cells(text, cells)
    if source != text:
        tokens = tokenize(source, keep_comments=True)
        cells = _cells(tokens)
    result = SplitFile(source, cells=len(cells))
    for cell in cells:
        if cell.magic is not None and cell.magic_token is not None \
                and cell.magic not in MARKDOWN_MAGICS:
            result.items.append(_foreign_cell(cell.magic, cell.magic_token, file))
            continue
        result.items.extend(_statements(
            [t for t in cell.tokens if t.kind is not TokenKind.COMMENT], file))
    return result


def _foreign_cell(magic: str, token: Token, file: str) -> SdpExpectError:
    """SDPX-SQL-307 at the ``-- MAGIC %...`` line (``token``) of a cell in another language
    than SQL (``magic``, e.g. ``python``), with the fix for that language."""
    if magic in ("python", "py", "scala", "r"):
        fix = (f"move what the %{magic} cell does into a Python file of the pipeline (a source "
               "the SQL reads: a @dp.table or @dp.temporary_view), and delete the cell here; "
               "markdown cells (%md) may stay")
    else:
        fix = (f"delete the %{magic} cell (a pipeline does not run it) and do its work outside "
               "the pipeline or in a Python file of the pipeline; markdown cells (%md) may stay")
    return SdpExpectError(
        _SQL_307, f"a %{magic} notebook cell: a SQL pipeline file holds only SQL (and markdown) "
        "cells, so the pipeline would not run it", fix=fix,
        location=Location(file, token.line))


def _end_line(token: Token) -> int:
    """The line a token ends on (a string or quoted name may span lines), so that the token
    after it on that line is not taken for the first of its line."""
    return token.line + token.text.count("\n")


def _starts_statement(tokens: Sequence[Token], index: int, line_start: bool) -> bool:
    """Whether ``tokens[index]`` (a cell's tokens, no comments), at the top level of a
    statement, can only be the start of another pipeline statement, so that a ``;`` is
    missing before it. ``SET`` and ``USE`` count only first on their line (``line_start``),
    where a notebook writes them."""
    token = tokens[index]
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    if is_keyword(token, "CREATE"):
        return following is not None and is_keyword(following, *_PIPELINE_WORDS)
    if not line_start:
        return False
    if is_keyword(token, "USE"):
        return following is not None and is_keyword(following, *_USE_WORDS)
    if is_keyword(token, "SET"):
        # SET key = value: a (dotted) key, then '=', all on this line.
        position = index + 1
        while position < len(tokens) and tokens[position].line == token.line:
            current = tokens[position]
            if current.kind is TokenKind.OPERATOR and current.text == "=":
                return position > index + 1
            if current.kind not in (TokenKind.IDENT, TokenKind.QUOTED_IDENT, TokenKind.DOT):
                return False
            position += 1
    return False


def _statements(tokens: Sequence[Token], file: str
                ) -> list[Union[StatementTokens, SdpExpectError]]:
    """The statements of one cell (its tokens, without comments), and an error wherever a
    ``;`` is missing."""
    items: list[Union[StatementTokens, SdpExpectError]] = []
    current: list[Token] = []
    depth = 0
    end_line = 0

    def flush() -> None:
        nonlocal current, depth
        if current:
            items.append(StatementTokens(current))
        current = []
        depth = 0

    for index, token in enumerate(tokens):
        if token.kind is TokenKind.SEMICOLON:
            flush()
            continue
        line_start = token.line > end_line
        if current:
            first = current[0]
            if is_keyword(first, "SET", "USE") and line_start:
                flush()  # SET and USE end at the end of their line
            elif depth == 0 and _starts_statement(tokens, index, line_start):
                items.append(StatementTokens(current))
                items.append(_missing_semicolon(first, token, file))
                current = []
        current.append(token)
        if token.kind in (TokenKind.LPAREN, TokenKind.LBRACKET):
            depth += 1
        elif token.kind in (TokenKind.RPAREN, TokenKind.RBRACKET):
            depth = max(0, depth - 1)
        end_line = _end_line(token)
    flush()
    return items


def _missing_semicolon(first: Token, next_first: Token, file: str) -> SdpExpectError:
    """SDPX-SQL-302: the statement starting at ``first`` runs into the one starting at
    ``next_first``; the error is at the second, where the ``;`` is missing, and its fix
    names both lines."""
    word = next_first.text.upper()
    return SdpExpectError(
        _SQL_302,
        f"the statement at line {first.line} runs into the {word} statement at line "
        f"{next_first.line}: there is no ';' between them (a statement ends at ';' or at the "
        "end of its notebook cell)",
        fix=f"end the statement of line {first.line} with ';', or start a new notebook cell "
        f"(a line '-- COMMAND ----------') before line {next_first.line}",
        location=Location(file, next_first.line, next_first.col))
