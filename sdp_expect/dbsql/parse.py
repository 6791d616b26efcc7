"""Read a Databricks SQL pipeline file into the statement model.

:func:`sdp_expect.dbsql.split.split` scans the text once with
:func:`sdp_expect.base.sqltokens.tokenize` (so quotes, backticks and comments are
never mistaken for SQL) and splits it into statements: at ``;``, at the cell
separators of an exported notebook, at the end of a ``SET`` line, with an
error wherever a statement would run into the next one. Each statement is
then read by a small recursive-descent parser that knows the pipeline
statements of Databricks SQL, current and legacy spellings:

- ``CREATE [OR REFRESH] [PRIVATE | TEMPORARY] {STREAMING TABLE | MATERIALIZED
  VIEW | [STREAMING | INCREMENTAL] LIVE TABLE} [IF NOT EXISTS] name [( column
  definitions and CONSTRAINT name EXPECT (expr) [ON VIOLATION {DROP ROW |
  FAIL UPDATE}] )] [COMMENT | TBLPROPERTIES | PARTITIONED BY | CLUSTER BY |
  USING ...] [AS query]``;
- ``CREATE [OR REPLACE] [TEMPORARY] [[STREAMING | INCREMENTAL] LIVE] VIEW name
  [(columns)] [COMMENT ...] [TBLPROPERTIES ...] AS query``;
- ``CREATE FLOW name [COMMENT '...'] AS INSERT INTO target BY NAME query``;
- ``SET`` and ``USE``, kept as written.

Anything else is passed on for Spark to judge. Keywords are matched without
regard to case. Constraints, queries and column definitions are kept as the
user wrote them; ``LIVE.`` qualifiers (also `` `LIVE`.x ``) are removed.
Databricks-only constructs raise SDPX-SQL-301 naming the construct and what to
do instead; syntax errors raise SDPX-SQL-302 with the file, line and column.

:func:`parse` raises the first error. :func:`check` reads the same way but
collects every error of the file (for ``sdp-expect validate``): an error ends
its statement and reading goes on with the next one; in a dataset's column
list, an error in one ``CONSTRAINT`` clause does not stop the next clauses.

This module holds the entry points. The reading itself is in
:mod:`~sdp_expect.dbsql.statement_reader` (one statement, its header and
dataset type), :mod:`~sdp_expect.dbsql.dataset_clauses` (a dataset's
``CONSTRAINT`` and other clauses), :mod:`~sdp_expect.dbsql.table_properties`
(its ``sdp_expect.*`` properties) and :mod:`~sdp_expect.dbsql.cursor` (the
token cursor they share); :class:`Findings` and :class:`RuleFileUse` are
defined in :mod:`~sdp_expect.dbsql.findings`, which those readers fill in.
Nothing here imports pyspark.
"""

from __future__ import annotations

from typing import Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.spark_version import AUTO_CDC_IN_SQL, spark_has
from sdp_expect.base.sqltokens import SqlTokenError
from sdp_expect.base.text_files import TextFileProblem, read_text
from sdp_expect.dbsql.cursor import Cursor
from sdp_expect.dbsql.findings import Findings, RuleFileUse
from sdp_expect.dbsql.split import SplitFile, split
from sdp_expect.dbsql.statement_reader import StatementReader
from sdp_expect.dbsql.statements import Position, Statement

__all__ = [
    "Findings",
    "RuleFileUse",
    "check",
    "parse",
    "read_file",
    "sql_auto_cdc_available",
]

_SQL_302 = "SDPX-SQL-302"


def sql_auto_cdc_available() -> bool:
    """True when the installed Spark reads ``AUTO CDC`` in SQL (4.3 and later, or unknown).

    Read from the installed distribution, without importing pyspark.
    """
    return spark_has(AUTO_CDC_IN_SQL)


# --------------------------------------------------------------------------------- file


def read_file(path: str, shown: str) -> str:
    """A SQL file's text (UTF-8, a byte order mark dropped), or SDPX-SQL-305.

    Only a regular file is opened (a named pipe or a device would block or never end).
    It is read as it always was (see :func:`~sdp_expect.base.text_files.read_text`): of
    any size, NUL bytes kept, and line ends read as ``\\n``.

    :param path: The file to open.
    :param shown: The file as shown in messages.
    """
    try:
        return read_text(path, reject_binary=False, universal_newlines=True)
    except TextFileProblem as problem:
        reason = "not a regular file" if problem.kind in ("directory", "not_regular") \
            else problem.detail
        raise SdpExpectError("SDPX-SQL-305", f"cannot read {shown}: {reason}",
                             location=Location(shown)) from None


def parse(text: str, file: str, *, base_dir: Optional[str] = None,
          auto_cdc: Optional[bool] = None) -> list[Statement]:
    """Read the statements of one Databricks SQL file.

    :param text: The file's content.
    :param file: The file as shown in messages, e.g. ``databricks_sql/orders.sql``.
    :param base_dir: The folder that relative ``'sdp_expect.rules'`` paths start
        from (the SQL file's folder); default: the current directory.
    :param auto_cdc: Whether ``AUTO CDC`` flows may pass on to Spark; default:
        :func:`sql_auto_cdc_available`.
    :raises SdpExpectError: SDPX-SQL-301 (a Databricks-only construct), -302 (a
        syntax error), -304 (an ``sdp_expect.*`` property it does not
        understand), and the expectation model's codes (SDPX-VAL-*).
    """
    pieces = _split(text, file)
    allow_cdc = sql_auto_cdc_available() if auto_cdc is None else auto_cdc
    statements: list[Statement] = []
    for item in pieces.items:
        if isinstance(item, SdpExpectError):
            raise item
        statements.append(StatementReader(Cursor(item.tokens, pieces.source, file), base_dir,
                                     allow_cdc).read())
    return statements


def check(text: str, file: str, *, base_dir: Optional[str] = None,
          auto_cdc: Optional[bool] = None) -> Findings:
    """Read one Databricks SQL file as :func:`parse` does, collecting every error.

    An error ends its statement; reading goes on with the next one. In a
    dataset's column list, an error in one ``CONSTRAINT`` clause is kept and
    the next clauses are read; a Databricks-only function is reported and the
    statement read further. A text that cannot be split into statements (an
    unclosed quote or comment) gives its one SDPX-SQL-302.

    :param text: The file's content.
    :param file: The file as shown in messages.
    :param base_dir: The folder that relative ``'sdp_expect.rules'`` paths start
        from; default: the current directory.
    :param auto_cdc: Whether ``AUTO CDC`` flows may pass on to Spark; default:
        :func:`sql_auto_cdc_available`.
    """
    findings = Findings()
    try:
        pieces = _split(text, file)
    except SdpExpectError as error:
        findings.errors.append(error)
        return findings
    allow_cdc = sql_auto_cdc_available() if auto_cdc is None else auto_cdc
    for item in pieces.items:
        if isinstance(item, SdpExpectError):
            findings.errors.append(item)
            continue
        current = item.tokens
        before = len(findings.errors)
        reader = StatementReader(Cursor(current, pieces.source, file), base_dir, allow_cdc,
                                 findings)
        statement: Optional[Statement] = None
        try:
            statement = reader.read()
        except SdpExpectError as error:
            start = Position(file, current[0].line, current[0].col)
            findings.errors.append(error.with_context(location=start.at_line()))
        findings.declared.append(reader.declared)
        if statement is not None and len(findings.errors) == before:
            findings.statements.append(statement)
    return findings


def _split(text: str, file: str) -> SplitFile:
    """The file's statements (:func:`sdp_expect.dbsql.split.split`); an unclosed quote or
    comment becomes SDPX-SQL-302 at its start, since no statement after it can be read."""
    try:
        return split(text, file)
    except SqlTokenError as error:
        raise SdpExpectError(_SQL_302, error.message,
                             location=Position(file, error.line, error.col).at_column()) from None
