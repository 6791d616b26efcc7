"""Check Databricks SQL pipeline files without Spark (``sdp-expect validate x.sql``).

:func:`check_sql_file` reads one ``.sql`` file (an exported Databricks notebook
too: cells, ``-- MAGIC``, statements without ``;``) with
:func:`sdp_expect.dbsql.parse.check`, the reader of ``sdp_expect.sql.include``,
``sdp-expect translate`` and ``sdp-expect migrate``, in a mode that collects
every error instead of stopping at the first (:func:`read_sql_file` gives what
it read): each statement is read on its own, and in a dataset's
column list each ``CONSTRAINT name EXPECT (expr) [ON VIOLATION ...]`` is
checked as a rule file's constraint is (:func:`sdp_expect.core.model.make_expectation`:
SDPX-VAL-010, -011, -001, -002; SDPX-VAL-071 for a name used twice in a
dataset). Databricks-only constructs are SDPX-SQL-301, syntax errors -302 (a
statement that runs into the next one without ``;`` among them),
``sdp_expect.*`` properties it does not understand -304, a file it cannot
read -305, a notebook cell in another language than SQL -307.

A rule file named by a ``TBLPROPERTIES ('sdp_expect.rules' = 'rules/x.yml')``
(relative to the SQL file's folder) is checked as a file of its own: its
errors name the rule file and its rules count. When it cannot be read, the
error (SDPX-VAL-003) names the SQL file and the line of the property.

A statement that is not a pipeline statement (``CREATE FUNCTION``, ``SELECT``,
...) is not an error: Spark judges it when the pipeline runs. What only the
whole pipeline shows (a ``CREATE FLOW`` into a table declared elsewhere,
SDPX-DEF-105, -106, -108, a ``SET`` of an unknown ``sdp_expect.*`` key) is
checked by ``sdp-expect translate`` and when the pipeline is defined.

Nothing here imports pyspark: whether ``AUTO CDC`` may pass on to Spark is
decided from the installed pyspark's version number
(:func:`sdp_expect.dbsql.parse.sql_auto_cdc_available`).
"""

from __future__ import annotations

import os
from typing import Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.checks.results import (
    FileResult,
    ReferencedFile,
    ValidationIssue,
    rule_file_result,
)
from sdp_expect.dbsql.parse import Findings, RuleFileUse, check, read_file
from sdp_expect.rules import RuleFileCheck, RuleFileError

__all__ = ["check_sql_file", "read_sql_file"]

_UNREADABLE = "SDPX-VAL-003"


def read_sql_file(path: str) -> Findings:
    """Read one Databricks SQL file as ``sdp-expect validate`` does, collecting every error.

    The statements are those ``sql.include``, ``sdp-expect translate`` and
    ``sdp-expect migrate`` read (one reader, :mod:`sdp_expect.dbsql.split`);
    ``.summary`` lists them.

    :param path: The file, relative to the current directory or absolute; errors
        name it as given. A file that cannot be read gives its one SDPX-SQL-305.
    """
    try:
        text = read_file(path, path)
    except SdpExpectError as error:
        return Findings(errors=[error])
    folder = os.path.dirname(path) or os.curdir
    return check(text, path, base_dir=folder)


def check_sql_file(path: str) -> FileResult:
    """Check one Databricks SQL file, and the rule files its statements name.

    :param path: The file, relative to the current directory or absolute; errors
        name it as given.
    :returns: ``rules`` is the number of ``CONSTRAINT`` clauses read, valid or
        not; each rule file named is a :class:`~sdp_expect.checks.results.ReferencedFile`.
    """
    findings = read_sql_file(path)
    references = tuple(
        ReferencedFile(shown, rule_file_result(use.check, shown))
        for use in findings.rule_files
        if not _unreadable(use.check)
        for shown in [_rule_file_shown(use.check.file, path)]
    )
    return FileResult(findings.constraints, tuple(_issues(findings, path)),
                      references=references)


def _issues(findings: Findings, path: str) -> list[ValidationIssue]:
    """The SQL file's errors by line; a rule file's only when it cannot be read.

    A rule file's other errors are those of the rule file, reported with it.
    """
    found = [(_line_and_column(error.place, path), _issue(error, path))
             for error in findings.errors if not isinstance(error, RuleFileError)]
    found += [((use.position.line, use.position.column), _unreadable_issue(use, path))
              for use in findings.rule_files if _unreadable(use.check)]
    found.sort(key=lambda pair: pair[0])
    return [issue for _, issue in found]


def _issue(error: SdpExpectError, path: str) -> ValidationIssue:
    """One error of the SQL file."""
    numbers = _line_and_column(error.place, path)
    return ValidationIssue(
        code=error.code,
        file=path,
        rule=_place(error.place, path, error.dataset, error.expectation),
        message=f"{error.detail}. Fix: {error.fix}.",
        expectation=error.expectation,
        line=numbers[0] if numbers else None,
        column=numbers[1] if len(numbers) > 1 else None,
    )


def _unreadable_issue(use: RuleFileUse, path: str) -> ValidationIssue:
    """SDPX-VAL-003 at the property that names a rule file which cannot be read."""
    problem = use.check.errors[0]
    where = use.position
    return ValidationIssue(
        code=problem.code,
        file=path,
        rule=_place(where.at_column(), path, use.dataset, None),
        message=f"the rule file {use.check.file!r} named by 'sdp_expect.rules' cannot be "
        f"read: {problem.detail}. Fix: write the path of the rule file relative to the "
        "folder of this SQL file, and check that the file is readable.",
        line=where.line, column=where.column,
    )


def _unreadable(check: RuleFileCheck) -> bool:
    """True when the rule file could not be read at all (missing, a directory, no permission)."""
    return len(check.errors) == 1 and check.errors[0].code == _UNREADABLE and not check.rules


def _rule_file_shown(name: str, path: str) -> str:
    """A rule file that the SQL file ``path`` names (``name``, relative to that file's
    folder) as the report names it: from the current directory."""
    return name if os.path.isabs(name) else os.path.join(os.path.dirname(path), name)


def _place(place: Optional[Location], path: str, dataset: Optional[str],
           expectation: Optional[str]) -> Optional[str]:
    """``"line 5, column 3, dataset 'orders', expectation 'valid_id'"``: what is known."""
    parts = []
    numbers = _line_and_column(place, path)
    if numbers:
        parts.append(f"line {numbers[0]}")
    if len(numbers) > 1:
        parts.append(f"column {numbers[1]}")
    if dataset is not None:
        parts.append(f"dataset {dataset!r}")
    if expectation is not None:
        parts.append(f"expectation {expectation!r}")
    return ", ".join(parts) or None


def _line_and_column(place: Optional[Location], path: str) -> tuple[int, ...]:
    """``(line,)`` or ``(line, column)`` of an error in ``path``; ``()`` elsewhere."""
    if place is None or place.file != path or place.line is None:
        return ()
    return (place.line,) if place.column is None else (place.line, place.column)
