"""The project's layout, checked before Spark starts (``run``, ``dry-run``, ``validate``).

``spark-pipelines`` registers every file that the spec's ``libraries`` globs
match: a ``.py`` file is imported, a ``.sql`` file registered as open-source
SDP SQL, and any other file stops the run with
``PIPELINE_UNSUPPORTED_DEFINITIONS_FILE_EXTENSION`` before a word from
sdp-expect. Two layouts go wrong that way, and both are found here from the
files alone, without Spark:

- a rule file (or any other file that is not ``.py`` or ``.sql``) inside a
  library folder: SDPX-PRJ-401;
- a Databricks SQL file meant for ``sdp_expect.sql.include`` inside a library
  folder (``CREATE OR REFRESH``, ``LIVE``, ``CONSTRAINT ... EXPECT`` or an
  ``sdp_expect.*`` property: what the SQL reader of :mod:`sdp_expect.dbsql`
  translates): open-source SDP would refuse it, or register it without its
  expectations: SDPX-PRJ-402;
- a setting of the spec's ``configuration`` still holding the placeholder that
  ``sdp-expect migrate`` wrote for a ``spark.conf.get(key)`` without a default
  (:data:`~sdp_expect.base.project.UNSET_VALUE`): SDPX-PRJ-403;
- a spec field that ``spark-pipelines`` refuses (an unknown field, no ``name`` or
  ``storage``, a configuration value that is not text, a glob it does not accept):
  SDPX-PRJ-407 (:mod:`sdp_expect.checks.spec`);
- a Python file of the libraries that does not parse (``spark-pipelines`` would import
  it once Spark had started, and stop there): SDPX-PRJ-406, at its line and column.
  Python's own parser reads it (``compile`` to a syntax tree: nothing is imported or
  run), so the verdict is the interpreter's.

The recommended layout keeps rule files and Databricks SQL folders beside
``transformations/``, not in it (docs/rule-files.md#where-rule-files-live).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.project import UNSET_VALUE, UsageProblem, library_files, load_project
from sdp_expect.base.text_files import TextFileProblem, read_text
from sdp_expect.checks.spec import key_lines, spec_problems
from sdp_expect.dbsql.parse import check
from sdp_expect.dbsql.statements import DatasetStatement

__all__ = ["RULE_FILE_SUFFIXES", "layout_problems", "python_syntax_problem"]

RULE_FILE_SUFFIXES = frozenset({".yml", ".yaml", ".json"})
"""The suffixes of rule files (docs/rule-files.md)."""

_TRANSLATED_WORDS = frozenset({"REFRESH", "LIVE", "PRIVATE"})
"""Opening keywords of a dataset statement that only Databricks SQL has."""


def layout_problems(spec: Path) -> list[SdpExpectError]:
    """Every file that the spec's ``libraries`` match and ``spark-pipelines`` would
    refuse or misread, in the order it finds them, each as a coded error naming the
    file (relative to the spec's folder) and the fix.

    :param spec: The pipeline spec file.
    """
    problems: list[SdpExpectError] = spec_problems(spec)
    folder = spec.parent
    try:
        configuration = load_project(spec).configuration
    except UsageProblem:
        configuration = {}  # an unreadable spec is reported where it is read
    unset = [key for key, value in configuration.items() if value == UNSET_VALUE]
    lines = _spec_lines(spec) if unset else {}
    for key in unset:
        problems.append(SdpExpectError(
            "SDPX-PRJ-403",
            f"configuration {key} is {UNSET_VALUE!r}, the placeholder sdp-expect migrate "
            f"wrote for a spark.conf.get({key!r}) without a default: the pipeline would "
            "run with it as the value",
            location=Location(spec.name, lines.get(f"configuration.{key}"))))
    for file in library_files(spec):
        shown = file.relative_to(folder).as_posix() if file.is_relative_to(folder) else str(file)
        suffix = file.suffix.lower()
        if file.suffix not in (".py", ".sql"):
            kind = ("a rule file" if suffix in RULE_FILE_SUFFIXES
                    else f"a {file.suffix or 'suffix-less'} file")
            problems.append(SdpExpectError(
                "SDPX-PRJ-401",
                f"{kind} inside the spec's libraries: spark-pipelines registers every file "
                "they match and stops at this one (PIPELINE_UNSUPPORTED_DEFINITIONS_FILE_"
                "EXTENSION)", location=Location(shown)))
        elif file.suffix == ".py":
            unparsed = python_syntax_problem(file, shown)
            if unparsed is not None:
                problems.append(unparsed)
        elif file.suffix == ".sql" and _is_databricks_sql(file):
            problems.append(SdpExpectError(
                "SDPX-PRJ-402",
                "a Databricks SQL file inside the spec's libraries: spark-pipelines would "
                "register it as open-source SQL, which refuses its Databricks statements or "
                "runs them without their expectations", location=Location(shown)))
    return problems


def python_syntax_problem(file: Path, shown: str) -> Optional[SdpExpectError]:
    """SDPX-PRJ-406 at the place Python's parser stops in ``file`` (named ``shown``), or
    ``None`` when it parses (or cannot be read: left to ``spark-pipelines`` to say)."""
    try:
        text = read_text(file, reject_binary=False, universal_newlines=True)
    except TextFileProblem:
        return None
    try:
        compile(text, str(file), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return SdpExpectError(
            "SDPX-PRJ-406", f"the file does not parse as Python: {error.msg}",
            location=Location(shown, error.lineno, error.offset))
    except ValueError as error:  # a NUL byte
        return SdpExpectError("SDPX-PRJ-406", f"the file does not parse as Python: {error}",
                              location=Location(shown))
    return None


def _spec_lines(spec: Path) -> dict[str, int]:
    import yaml

    try:
        return key_lines(yaml.compose(spec.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}


def _is_databricks_sql(file: Path) -> bool:
    """Whether the SQL reader finds Databricks-only dataset statements in ``file``: an
    unreadable file is left to ``spark-pipelines`` to report."""
    try:
        text = read_text(file, reject_binary=False, universal_newlines=True)
    except TextFileProblem:
        return False
    found = check(text, str(file), base_dir=str(file.parent))
    if found.constraints:
        return True
    return any(isinstance(statement, DatasetStatement)
               and (statement.checked
                    or _TRANSLATED_WORDS & set(statement.written_as.upper().split()))
               for statement in found.statements)
