"""Databricks SQL files in a migration: which files are pipeline files, the
statements ``sdp_expect.sql`` reads in them, and what in them cannot be translated.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Optional

from sdp_expect.errors import Location, SdpExpectError
from sdp_expect.migrate.result import NOT_CONVERTED, Finding

if TYPE_CHECKING:
    from sdp_expect.dbsql.statements import StatementSummary

__all__ = ["is_pipeline_sql", "read_sql", "scan_sql", "sql_findings"]


_PIPELINE_SQL = re.compile(
    r"\bCREATE\b[\s\S]*?\b(STREAMING\s+(LIVE\s+)?TABLE|MATERIALIZED\s+VIEW|LIVE\s+(TABLE|VIEW)"
    r"|TEMPORARY\s+(LIVE\s+)?VIEW|FLOW)\b", re.I)


def is_pipeline_sql(text: str) -> bool:
    """Whether SQL text declares pipeline datasets or flows.

    The statements are those the reader of ``sdp_expect.sql`` finds (the SQL of
    a notebook's ``%sql`` cells included; comments and markdown cells left out).
    """
    from sdp_expect.dbsql.split import split
    from sdp_expect.sqltokens import SqlTokenError

    try:
        code = " ".join(t.text for statement in split(text, "<sql>").statements
                        for t in statement.tokens)
    except SqlTokenError:
        code = text
    return bool(_PIPELINE_SQL.search(code))


def scan_sql(text: str, file: str, base_dir: str,
             conf: Optional[dict[str, str]] = None) -> list[Finding]:
    """Every Databricks SQL construct that sdp-expect cannot translate, with its line.

    The file is read by the reader of ``sdp_expect.sql`` (:func:`read_sql`);
    every coded error is reported.
    """
    return read_sql(text, file, base_dir, conf)[1]


def read_sql(text: str, file: str, base_dir: str, conf: Optional[dict[str, str]] = None
             ) -> tuple[list[StatementSummary], list[Finding]]:
    """The statements of a Databricks SQL file, and what in it cannot be translated.

    The statements are those ``sql.include``, ``sdp-expect translate`` and
    ``sdp-expect validate`` read (:func:`sdp_expect.dbsql.parse.check`: cells of
    an exported notebook, ``SET`` without ``;``, legacy spellings). Each
    statement read is then translated for one pipeline, without Spark
    (:func:`sdp_expect.sql.translation_errors`); every coded error of either
    step is a :data:`NOT_CONVERTED` finding at its line, in line order.

    :param text: The file's content.
    :param file: The file as shown (relative to SRC).
    :param base_dir: The file's folder (where ``'sdp_expect.rules'`` paths start).
    :param conf: The pipeline's configuration.
    """
    from sdp_expect.dbsql.parse import check
    from sdp_expect.sql import translation_errors

    read = check(text, file, base_dir=base_dir)
    errors = [*read.errors, *translation_errors(read.statements, file, conf=conf)]
    findings = [Finding(NOT_CONVERTED, file, _line_of(error), _error_text(error, file))
                for error in errors]
    findings.sort(key=lambda finding: finding.line or 0)
    return read.summary, findings


def _line_of(error: Any) -> Optional[int]:
    place = getattr(error, "place", None)
    return place.line if isinstance(place, Location) else None


def _error_text(error: Any, file: str) -> str:
    """The error without its place (the finding shows the file and line apart)."""
    if isinstance(error, SdpExpectError):
        return error.render(with_location=False)
    return str(error)


def sql_findings(text: str, file: str) -> list[Finding]:
    """Databricks-only SQL functions and ``USING DELTA`` in a SQL file's statements."""
    from sdp_expect.databricks_functions import DATABRICKS_ONLY_SQL_FUNCTIONS
    from sdp_expect.dbsql.split import split
    from sdp_expect.migrate.python_rewrites import DELTA_FIX
    from sdp_expect.sqltokens import SqlTokenError, TokenKind

    findings: list[Finding] = []
    try:
        statements = split(text, file).statements
    except SqlTokenError:
        return findings
    for statement in statements:
        tokens = statement.tokens
        for index, token in enumerate(tokens[:-1]):
            name = token.text.lower()
            if (token.kind is TokenKind.IDENT and name in DATABRICKS_ONLY_SQL_FUNCTIONS
                    and tokens[index + 1].kind is TokenKind.LPAREN
                    and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
                findings.append(Finding(NOT_CONVERTED, file, token.line, f"{token.text}() is a "
                                        "Databricks-only SQL function (open-source Spark stops "
                                        "the flow with UNRESOLVED_ROUTINE). Fix: "
                                        f"{DATABRICKS_ONLY_SQL_FUNCTIONS[name]}"))
            if token.kind is TokenKind.IDENT and name == "using" \
                    and tokens[index + 1].text.lower() == "delta":
                findings.append(Finding(NOT_CONVERTED, file, token.line,
                                        f"USING DELTA: {DELTA_FIX}"))
    return findings
