"""Check rule files and Databricks SQL files without running a pipeline (``sdp-expect validate``).

:func:`validate_paths` reads each file, or every such file under a directory,
and collects every error with its file, place and code. Nothing here imports
pyspark or starts Spark.

Which files are checked, and how, is decided by their suffix through
:data:`CHECKERS`; other modules plug in more kinds with
:func:`register_checker`:

- ``.yml``, ``.yaml`` and ``.json`` are rule files (:func:`check_rule_file`,
  the grammar of ``docs/rule-files.md``);
- ``.sql`` files are Databricks SQL pipeline files (:func:`check_sql_file`, in
  :mod:`sdp_expect.checks.sql_files`): each statement is read as
  ``sdp_expect.sql.include`` reads it, every ``CONSTRAINT ... EXPECT`` is
  checked as a rule file's constraint is, and a rule file that a
  ``'sdp_expect.rules'`` table property names is checked too, as a file of its
  own (its errors name the rule file).

A file with any other suffix, named explicitly, is read as a rule file (the
format is decided by the content). Each file is checked once, however often it
is named or referenced.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence, Union

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import SPEC_FILE_NAMES, library_files, spec_in
from sdp_expect.checks.layout import layout_problems
from sdp_expect.checks.python_rules import read_python_file
from sdp_expect.checks.results import (
    Checker,
    FileResult,
    ReferencedFile,
    ValidationIssue,
    ValidationNote,
    check_rule_file,
    rule_file_result,
)
from sdp_expect.checks.sql_files import check_sql_file

__all__ = [
    "CHECKERS",
    "Checker",
    "FileResult",
    "PIPELINE_SPECS",
    "ReferencedFile",
    "ValidationIssue",
    "ValidationNote",
    "ValidationReport",
    "check_python_file",
    "check_rule_file",
    "check_sql_file",
    "register_checker",
    "rule_file_result",
    "validate_paths",
]

StrPath = Union[str, "os.PathLike[str]"]


CHECKERS: dict[str, Checker] = {
    ".yml": check_rule_file,
    ".yaml": check_rule_file,
    ".json": check_rule_file,
    ".sql": check_sql_file,
}
"""Suffix (lower case, with the dot) to checker; directories are searched for these suffixes."""


def register_checker(suffix: str, checker: Checker) -> None:
    """Check files ending in ``suffix`` with ``checker``, also when found under a directory.

    :param suffix: The file suffix with its dot, e.g. ``'.sql'`` (any case).
    :param checker: The function that checks one file.
    """
    CHECKERS[suffix.lower()] = checker


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
    _seen: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

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
            # line and column stay out: the JSON keeps its shape (the place is in "rule");
            # --format github and sarif place each error by them
            "errors": [{k: v for k, v in asdict(e).items() if k not in ("line", "column")}
                       for e in self.errors],
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
        """Count one checked file and keep its errors and notes, then those of its references.

        A referenced file already in the report is not counted again.

        :param result: What its checker found.
        """
        self.files_checked += 1
        self.rules_checked += result.rules
        self.errors.extend(result.errors)
        self.notes.extend(result.notes)
        for reference in result.references:
            if self.first_time(reference.path):
                self.add(reference.result)

    def check(self, path: str, checker: Checker) -> None:
        """Check ``path`` with ``checker`` and add the result, unless the file is in the report.

        :param path: The file as shown.
        :param checker: The function that checks it.
        """
        if self.first_time(path):
            self.add(checker(path))

    def first_time(self, path: str) -> bool:
        """True the first time a file is named (by its real path); remembers it.

        :param path: The file as shown.
        """
        key = _real_path(path)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def validate_paths(paths: Sequence[StrPath]) -> ValidationReport:
    """Check rule files and directories of rule files, collecting every error.

    :param paths: Files, or directories searched (recursively, skipping names
        that start with a dot) for files whose suffix has a checker in
        :data:`CHECKERS` (``.yml``, ``.yaml``, ``.json``, ``.sql``), taken in
        sorted order. A file named twice, or found again as the rule file of a
        SQL file, is checked once.
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


PIPELINE_SPECS = frozenset(SPEC_FILE_NAMES)
"""File names of pipeline specs: never rule files, so not checked (a note when named)."""


def _check_named_file(path: str, report: ValidationReport) -> None:
    suffix = os.path.splitext(path)[1].lower()
    if os.path.basename(path) in PIPELINE_SPECS:
        report.notes.append(ValidationNote(
            path, "a pipeline spec: its libraries checked for files that spark-pipelines "
            "refuses or cannot parse (not read as a rule file)"))
        _check_project(Path(path), report)
        return
    if suffix == ".py":
        report.check(path, check_python_file)
        return
    report.check(path, CHECKERS.get(suffix, check_rule_file))


def check_python_file(path: str) -> FileResult:
    """A Python file, without importing it: whether it parses (SDPX-PRJ-406 where it does
    not), and the rules its sdp-expect decorators and arguments write with literals, each
    checked as the model checks it, at its call (:mod:`sdp_expect.checks.python_rules`);
    a rule file it names with ``expect_from_file`` is checked as a file of its own."""
    found = read_python_file(Path(path), path)
    if not found.parsed:
        return FileResult(rules=0, errors=tuple(_issue(e, path) for e in found.errors))
    folder = os.path.dirname(path)
    references = tuple(ReferencedFile(shown, check_rule_file(shown)) for shown in dict.fromkeys(
        use.path if os.path.isabs(use.path) else os.path.join(folder, use.path)
        for use in found.rule_files))
    notes = (ValidationNote(path, f"{found.computed} rule(s) with a computed name, constraint "
                            "or tolerance: checked when the pipeline is defined"),
             ) if found.computed else ()
    return FileResult(rules=found.rules, errors=tuple(_issue(e, path) for e in found.errors),
                      notes=notes, references=references)


def _issue(problem: SdpExpectError, shown: str) -> ValidationIssue:
    """A coded error of a file as the report lists it: placed by its line and column."""
    place = problem.place
    line = place.line if place is not None else None
    column = place.column if place is not None else None
    parts = [] if line is None else [f"line {line}"] + ([] if column is None
                                                        else [f"column {column}"])
    if problem.dataset is not None:
        parts.append(f"dataset {problem.dataset!r}")
    if problem.expectation is not None:
        parts.append(f"expectation {problem.expectation!r}")
    return ValidationIssue(problem.code, shown, ", ".join(parts) or None,
                           f"{problem.detail}. Fix: {problem.fix}.",
                           expectation=problem.expectation, line=line, column=column)


def _check_project(spec: Path, report: ValidationReport) -> None:
    """The spec (counted as a checked file), the files in its libraries that
    ``spark-pipelines`` would refuse, misread or stop at (:mod:`sdp_expect.checks.layout`),
    as errors of the files concerned, and its Python files with their rules
    (:func:`check_python_file`)."""
    if not report.first_time(str(spec)):
        return
    report.files_checked += 1
    for problem in layout_problems(spec):
        place = problem.place
        shown = str(spec.parent / place.file) if place is not None and place.file else str(spec)
        report.errors.append(_issue(problem, shown))
    for file in library_files(spec, ".py"):
        report.check(str(file), check_python_file)


def _check_directory(directory: str, report: ValidationReport) -> None:
    spec = spec_in(Path(directory))
    if spec is not None:
        _check_project(spec, report)
    found, unreadable = _files_under(directory)
    for path in unreadable:
        report.errors.append(ValidationIssue(
            "SDPX-VAL-003", path, None,
            "cannot read the directory. Fix: check that it exists and is readable.",
        ))
    if spec is not None:
        found = _project_files(found, spec.parent, report)
    for path in found:
        report.check(path, CHECKERS[os.path.splitext(path)[1].lower()])
    if not found and not unreadable and spec is None:
        suffixes = ", ".join(sorted(CHECKERS))
        report.notes.append(ValidationNote(directory, f"no files ending in {suffixes} here"))


UNNAMED_SHOWN = 3
"""How many of a project's unnamed YAML and JSON files the note names."""


def _project_files(found: list[str], folder: Path, report: ValidationReport) -> list[str]:
    """Of the files found under a project's folder, those :func:`_check_directory` checks:
    every SQL file (a SQL file may name a rule file), then the YAML and JSON files that
    the project's files name (checked already, or by a SQL file of ``found``) or that lie
    in a folder named ``rules`` (the layout docs/rule-files.md recommends). A project also
    holds data, configuration and tool files in those formats (JSON Lines that a flow
    reads, say): they are not rule files, so they are not read, and a note says how many
    and where (name a file or folder to check it as rules)."""
    rule_suffixes = frozenset(suffix for suffix, checker in CHECKERS.items()
                              if checker is check_rule_file)
    code = [path for path in found if os.path.splitext(path)[1].lower() not in rule_suffixes]
    for path in code:
        report.check(path, CHECKERS[os.path.splitext(path)[1].lower()])
    chosen, unnamed = [], []
    for path in found:
        if os.path.splitext(path)[1].lower() not in rule_suffixes:
            continue
        parts = Path(path).resolve().relative_to(folder.resolve()).parts[:-1] \
            if Path(path).resolve().is_relative_to(folder.resolve()) else ()
        if "rules" in parts:
            chosen.append(path)
        elif report.first_time(path):  # not named by a file checked before
            unnamed.append(path)
    if unnamed:
        shown = ", ".join(os.path.relpath(path, folder) for path in unnamed[:UNNAMED_SHOWN])
        more = f" and {len(unnamed) - UNNAMED_SHOWN} more" if len(unnamed) > UNNAMED_SHOWN else ""
        report.notes.append(ValidationNote(str(folder), (
            f"{len(unnamed)} YAML or JSON file(s) in the project that no pipeline file names "
            f"and that are not in a rules/ folder, not read as rule files: {shown}{more}; "
            "name a file or folder to check it as rules (sdp-expect validate PATH)")))
    return chosen


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
            if not name.startswith(".") and name not in PIPELINE_SPECS
            and os.path.splitext(name)[1].lower() in CHECKERS
        )
    return sorted(found, key=_sort_key), sorted(unreadable)


def _sort_key(path: str) -> tuple[str, ...]:
    return tuple(path.replace(os.sep, "/").split("/"))


def _real_path(path: str) -> str:
    """The file's canonical path (symbolic links resolved), or ``path`` when it has none."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path
