"""Databricks SQL files in a migration: which files are pipeline files, the
statements ``sdp_expect.sql`` reads in them, and what in them cannot be translated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.migrate.result import CHANGED, NOT_CONVERTED, Finding

if TYPE_CHECKING:
    from sdp_expect.dbsql.statements import StatementSummary

__all__ = ["is_pipeline_sql", "read_sql", "scan_sql", "sql_findings"]


_PIPELINE_KINDS = frozenset({"streaming table", "materialized view", "temporary view", "flow"})
"""What a statement of a pipeline file declares: a dataset or a flow, in any spelling
(``LIVE TABLE`` is a materialized view, ``LIVE VIEW`` a temporary view). A persisted
``CREATE VIEW`` alone does not make a pipeline file."""
_SHOWN = "<sql>"


def is_pipeline_sql(text: str) -> bool:
    """Whether SQL text declares pipeline datasets or flows.

    The statements are those the reader of ``sdp_expect.sql`` finds
    (:func:`sdp_expect.dbsql.parse.check`: the SQL of a notebook's ``%sql``
    cells included, comments and markdown cells left out, legacy spellings
    read). Each counts by what its opening keywords declare, with errors or not:
    a ``read_files()`` that migrate rewrites, or a Databricks-only clause it
    reports, is still in a pipeline file. A text whose quote or comment is
    never closed is judged by the text before it.
    """
    from sdp_expect.base.sqltokens import SqlTokenError
    from sdp_expect.dbsql.split import split

    if _declares_pipeline(text):
        return True
    try:
        split(text, _SHOWN)
    except SqlTokenError as error:
        return _declares_pipeline(text[:_offset(text, error.line, error.col)])
    return False


def _declares_pipeline(text: str) -> bool:
    """Whether a statement of ``text`` declares a dataset or a flow. ``AUTO CDC`` passes
    whatever the Spark installed: what a statement declares does not depend on it."""
    from sdp_expect.dbsql.parse import check

    return any(kind in _PIPELINE_KINDS for kind in check(text, _SHOWN, auto_cdc=True).declared)


def _offset(text: str, line: int, column: int) -> int:
    """The offset of a 1-based ``line`` and ``column`` of ``text``, as the tokenizer counts
    them (lines end at ``\\n``), to cut the text where an unclosed quote starts."""
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


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


def sql_findings(text: str, file: str) -> tuple[list[Finding], bool]:
    """Databricks-only SQL functions and ``USING DELTA`` in a SQL file's statements, and
    whether the file uses Delta (then the spec says the project's tables are Delta:
    ``USING DELTA`` is kept, and said as a change)."""
    from sdp_expect.base.databricks_functions import DATABRICKS_ONLY_SQL_FUNCTIONS
    from sdp_expect.base.sqltokens import SqlTokenError, TokenKind
    from sdp_expect.dbsql.split import split
    from sdp_expect.migrate.python_rewrites import DELTA_KEPT

    findings: list[Finding] = []
    delta = False
    try:
        statements = split(text, file).statements
    except SqlTokenError:
        return findings, delta
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
                delta = True
                findings.append(Finding(CHANGED, file, token.line, f"USING DELTA {DELTA_KEPT}"))
    return findings, delta
