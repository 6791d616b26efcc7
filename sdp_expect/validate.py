"""Check rule files without running a pipeline (``sdp-expect validate``).

:func:`validate_paths` reads each rule file, or every rule file under a
directory, and collects every error with its file, rule and code. Nothing
here imports pyspark or starts Spark.

Which files are checked, and how, is decided by their suffix through
:data:`CHECKERS`; other modules plug in more kinds with
:func:`register_checker`. Today ``.yml``, ``.yaml`` and ``.json`` are rule
files. SQL files (``.sql``, with Databricks ``CONSTRAINT ... EXPECT``
clauses) are **not yet supported**: naming one gives a note saying it was not
checked, not an error. A file with any other suffix, named explicitly, is
read as a rule file (the format is decided by the content).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from sdp_expect.rules import check_file

__all__ = [
    "CHECKERS",
    "Checker",
    "FileResult",
    "NOT_YET_SUPPORTED",
    "ValidationIssue",
    "ValidationNote",
    "ValidationReport",
    "check_rule_file",
    "register_checker",
    "validate_paths",
]

StrPath = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class ValidationIssue:
    """One error found in a file.

    :param code: The error code, e.g. ``SDPX-VAL-006``.
    :param file: The file as named on the command line (or found under a directory).
    :param rule: The rule concerned (``'rule 3'``, ``"rule 'id > 0'"``), or
        ``None`` when the error concerns the whole file.
    :param message: What is wrong and how to fix it.
    :param expectation: The expectation's name, when known.
    """

    code: str
    file: str
    rule: Optional[str]
    message: str
    expectation: Optional[str] = None

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
    """

    rules: int
    errors: tuple[ValidationIssue, ...] = ()
    notes: tuple[ValidationNote, ...] = ()


Checker = Callable[[str], FileResult]
"""Checks one file, given its path as it should be shown (and opened)."""


def check_rule_file(path: str) -> FileResult:
    """Check one YAML or JSON rule file.

    :param path: The file, relative to the current directory or absolute.
    """
    result = check_file(path)
    errors = tuple(
        ValidationIssue(
            code=e.code,
            file=e.file,
            rule=e.rule,
            message=f"{e.detail}. Fix: {e.fix}.",
            expectation=e.expectation,
        )
        for e in result.errors
    )
    notes = () if result.complete else (
        ValidationNote(result.file, f"checking stopped after {len(errors)} errors"),
    )
    return FileResult(rules=result.rules, errors=errors, notes=notes)


CHECKERS: dict[str, Checker] = {
    ".yml": check_rule_file,
    ".yaml": check_rule_file,
    ".json": check_rule_file,
}
"""Suffix (lower case, with the dot) to checker; directories are searched for these suffixes."""

NOT_YET_SUPPORTED: dict[str, str] = {
    ".sql": "not checked: SQL files (CONSTRAINT ... EXPECT clauses) are not yet supported by "
    "sdp-expect validate",
}
"""Suffix to the note given when such a file is named explicitly."""


def register_checker(suffix: str, checker: Checker) -> None:
    """Check files ending in ``suffix`` with ``checker``, also when found under a directory.

    :param suffix: The file suffix with its dot, e.g. ``'.sql'`` (any case).
    :param checker: The function that checks one file.
    """
    key = suffix.lower()
    CHECKERS[key] = checker
    NOT_YET_SUPPORTED.pop(key, None)


@dataclass
class ValidationReport:
    """Everything :func:`validate_paths` found.

    :param errors: Every error, file by file in the order checked.
    :param notes: Things worth knowing that are not errors.
    :param files_checked: How many files were checked.
    :param rules_checked: How many rules those files hold, valid or not.
    """

    errors: list[ValidationIssue] = field(default_factory=list)
    notes: list[ValidationNote] = field(default_factory=list)
    files_checked: int = 0
    rules_checked: int = 0

    @property
    def ok(self) -> bool:
        """True when no error was found."""
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (the shape of :meth:`to_json`)."""
        return {
            "ok": self.ok,
            "files_checked": self.files_checked,
            "rules_checked": self.rules_checked,
            "errors": [asdict(e) for e in self.errors],
            "notes": [asdict(n) for n in self.notes],
        }

    def to_json(self) -> str:
        """The report as a JSON object: ok, files_checked, rules_checked, errors, notes."""
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        """The report for people: one line per error and note, then a summary line."""
        lines = [e.to_text() for e in self.errors]
        lines.extend(f"note: {n.file}: {n.message}" for n in self.notes)
        files = f"{self.files_checked} file{'' if self.files_checked == 1 else 's'}"
        rules = f"{self.rules_checked} rule{'' if self.rules_checked == 1 else 's'}"
        count = len(self.errors)
        found = f"{count} error{'' if count == 1 else 's'}" if count else "no errors"
        lines.append(f"checked {files}, {rules}: {found}")
        return "\n".join(lines) + "\n"

    def add(self, result: FileResult) -> None:
        """Count one checked file and keep its errors and notes.

        :param result: What its checker found.
        """
        self.files_checked += 1
        self.rules_checked += result.rules
        self.errors.extend(result.errors)
        self.notes.extend(result.notes)


def validate_paths(paths: Sequence[StrPath]) -> ValidationReport:
    """Check rule files and directories of rule files, collecting every error.

    :param paths: Files, or directories searched (recursively, skipping names
        that start with a dot) for files whose suffix has a checker in
        :data:`CHECKERS` (``.yml``, ``.yaml``, ``.json``), taken in sorted order.
    :returns: The report; ``report.ok`` is True when nothing is wrong.
    """
    report = ValidationReport()
    for path in paths:
        shown = os.fsdecode(path)
        if os.path.isdir(shown):
            _check_directory(shown, report)
        else:
            _check_named_file(shown, report)
    return report


def _check_named_file(path: str, report: ValidationReport) -> None:
    suffix = os.path.splitext(path)[1].lower()
    if suffix in NOT_YET_SUPPORTED and suffix not in CHECKERS:
        report.notes.append(ValidationNote(path, NOT_YET_SUPPORTED[suffix]))
        return
    report.add(CHECKERS.get(suffix, check_rule_file)(path))


def _check_directory(directory: str, report: ValidationReport) -> None:
    found, unreadable = _files_under(directory)
    for path in unreadable:
        report.errors.append(ValidationIssue(
            "SDPX-VAL-003", path, None,
            "cannot read the directory. Fix: check that it exists and is readable.",
        ))
    for path in found:
        report.add(CHECKERS[os.path.splitext(path)[1].lower()](path))
    if not found and not unreadable:
        suffixes = ", ".join(sorted(CHECKERS))
        report.notes.append(ValidationNote(directory, f"no files ending in {suffixes} here"))


def _files_under(directory: str) -> tuple[list[str], list[str]]:
    """Files under ``directory`` with a checked suffix (sorted), and unreadable directories."""
    found: list[str] = []
    unreadable: list[str] = []

    def failed(error: OSError) -> None:
        unreadable.append(os.fsdecode(error.filename) if error.filename else directory)

    for root, dirs, files in os.walk(directory, onerror=failed):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(
            os.path.join(root, name)
            for name in files
            if not name.startswith(".") and os.path.splitext(name)[1].lower() in CHECKERS
        )
    return sorted(found, key=_sort_key), sorted(unreadable)


def _sort_key(path: str) -> tuple[str, ...]:
    return tuple(path.replace(os.sep, "/").split("/"))
