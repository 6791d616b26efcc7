"""What ``sdp-expect migrate`` found and did, and the files it writes in DST.

Every part of the migration (:mod:`~sdp_expect.migrate.python_files`,
:mod:`~sdp_expect.migrate.sql_files`, :mod:`~sdp_expect.migrate.bundle`) reports
:class:`Finding` values; :func:`sdp_expect.migrate.migrate` gathers them in a
:class:`MigrationResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from sdp_expect.dbsql.statements import StatementSummary

__all__ = [
    "CHANGED",
    "NOTE",
    "NOT_CONVERTED",
    "SKIPPED_FOLDERS",
    "SPEC_FILE",
    "SQL_INCLUDE_FILE",
    "Finding",
    "MigrationError",
    "MigrationResult",
]

CHANGED = "changed"
"""A finding: something migrate rewrote."""
NOT_CONVERTED = "not converted"
"""A finding: something migrate left as is and the user must change."""
NOTE = "note"
"""A finding: something worth knowing that needs no change."""

SQL_INCLUDE_FILE = "databricks_sql.py"
"""The generated Python file that registers the Databricks SQL files."""
SPEC_FILE = "spark-pipeline.yml"
"""The generated spec file."""
SKIPPED_FOLDERS = {".git", ".hg", ".svn", "__pycache__", ".databricks", ".venv", "venv",
                   ".ipynb_checkpoints", "metastore_db", "spark-warehouse", ".sdp-expect",
                   ".pytest_cache", ".mypy_cache", ".ruff_cache"}
"""Folders that are never copied."""



class MigrationError(Exception):
    """The migration cannot start (a usage mistake: bad SRC or DST)."""


@dataclass(frozen=True)
class Finding:
    """One thing migrate did or could not do.

    :param kind: :data:`CHANGED`, :data:`NOT_CONVERTED` or :data:`NOTE`.
    :param file: The file, relative to SRC (and DST).
    :param line: The 1-based line, when it concerns one.
    :param message: What was done, or what is wrong and how to fix it.
    """

    kind: str
    file: str
    line: Optional[int]
    message: str

    @property
    def where(self) -> str:
        """``file:line`` (or ``file``)."""
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class MigrationResult:
    """What :func:`~sdp_expect.migrate.migrate` did.

    :param src: The source project.
    :param dst: The new project.
    :param findings: Everything changed, not converted or noted, in file order.
    :param python_files: The pipeline's Python files (relative paths), as listed in the spec.
    :param sql_files: The Databricks SQL files included through ``sdp_expect.sql``.
    :param sql_statements: The statements read from each of them, as ``sql.include``
        reads them (:func:`~sdp_expect.migrate.sql_files.read_sql`).
    :param copied: Every file written to DST (relative paths).
    :param name: The pipeline's name.
    """

    src: Path
    dst: Path
    findings: list[Finding] = field(default_factory=list)
    python_files: list[str] = field(default_factory=list)
    sql_files: list[str] = field(default_factory=list)
    sql_statements: dict[str, list[StatementSummary]] = field(default_factory=dict)
    copied: list[str] = field(default_factory=list)
    name: str = ""
    line_maps: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """For each rewritten or generated file of DST, per line (0-based index): the SRC
    file and 1-based line it comes from."""
    configuration: dict[str, str] = field(default_factory=dict)
    """The pipeline configuration written to spark-pipeline.yml."""
    check: Optional[Any] = None
    """The dry-run of the result (:class:`sdp_expect.migrate.check.CheckResult`), if run."""

    def of(self, kind: str) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]

    @property
    def complete(self) -> bool:
        """True when nothing was left unconverted."""
        return not self.of(NOT_CONVERTED)
