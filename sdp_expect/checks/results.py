"""What a checker of ``sdp-expect validate`` finds in one file.

The values :mod:`sdp_expect.checks.validate` collects into its report and that each
checker (rule files here, Databricks SQL files in
:mod:`sdp_expect.checks.sql_files`) returns. Kept apart from both so that the
checkers and the report that calls them do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from sdp_expect.rules import RuleFileCheck, check_file

__all__ = [
    "Checker",
    "FileResult",
    "ReferencedFile",
    "ValidationIssue",
    "ValidationNote",
    "check_rule_file",
    "rule_file_result",
]


@dataclass(frozen=True)
class ValidationIssue:
    """One error found in a file.

    :param code: The error code, e.g. ``SDPX-VAL-006``.
    :param file: The file as named on the command line (or found under a
        directory, or named by a SQL file's ``'sdp_expect.rules'``).
    :param rule: The place concerned: in a rule file the rule (``'rule 3'``,
        ``"rule 'id > 0'"``); in a SQL file the line and what is known of the
        dataset and expectation (``"line 5, column 3, dataset 'orders',
        expectation 'valid_id'"``); ``None`` when the error concerns the whole file.
    :param message: What is wrong and how to fix it.
    :param expectation: The expectation's name, when known.
    :param line: The line in ``file``, when known (a SQL file's errors), for the
        formats that place an error (``--format github``, ``sarif``).
    :param column: The column on that line, when known.
    """

    code: str
    file: str
    rule: Optional[str]
    message: str
    expectation: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None

    def to_text(self) -> str:
        """One line: ``[CODE] file, rule: message``."""
        where = self.file if self.rule is None else f"{self.file}, {self.rule}"
        return f"[{self.code}] {where}: {self.message}"


@dataclass(frozen=True)
class ValidationNote:
    """Something the user should know that is not an error (e.g. a file not checked).

    :param file: The file or directory concerned.
    :param message: The note.
    """

    file: str
    message: str


@dataclass(frozen=True)
class FileResult:
    """What a checker found in one file.

    :param rules: How many rules (or constraints) the file holds, valid or not.
    :param errors: Every error found, in file order.
    :param notes: Anything else worth knowing about the file.
    :param references: Other files that this one names and that were checked
        with it (the rule files of a SQL file's ``'sdp_expect.rules'``).
    """

    rules: int
    errors: tuple[ValidationIssue, ...] = ()
    notes: tuple[ValidationNote, ...] = ()
    references: tuple[ReferencedFile, ...] = ()


@dataclass(frozen=True)
class ReferencedFile:
    """A file that a checked file names, and what checking it found.

    :param path: The file as shown (a path from the current directory, or absolute).
    :param result: What its checker found.
    """

    path: str
    result: FileResult


Checker = Callable[[str], FileResult]
"""Checks one file, given its path as it should be shown (and opened)."""


def check_rule_file(path: str) -> FileResult:
    """Check one YAML or JSON rule file.

    :param path: The file, relative to the current directory or absolute.
    """
    return rule_file_result(check_file(path), path)


def rule_file_result(result: RuleFileCheck, shown: str) -> FileResult:
    """What :func:`sdp_expect.rules.check_file` found, as a :class:`FileResult`.

    :param result: The rule file's check.
    :param shown: The file as the report names it.
    """
    errors = tuple(
        ValidationIssue(
            code=e.code,
            file=shown,
            rule=e.rule,
            message=f"{e.detail}. Fix: {e.fix}.",
            expectation=e.expectation,
        )
        for e in result.errors
    )
    notes = tuple(ValidationNote(shown, warning) for warning in result.warnings)
    if not result.complete:
        notes += (ValidationNote(shown, f"checking stopped after {len(errors)} errors"),)
    return FileResult(rules=result.rules, errors=errors, notes=notes)
