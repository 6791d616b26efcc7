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
- a library ``include`` that matches no file (a misspelt folder: ``spark-pipelines``
  logs "Found 0 files" and runs without it): SDPX-PRJ-408;
- a setting of sdp-expect (``sdp_expect.*``) it does not know, or a value the setting
  does not take: SDPX-CFG-206, SDPX-CFG-201, SDPX-CFG-204 (:mod:`sdp_expect.checks.settings`);
- a spec field that ``spark-pipelines`` refuses (an unknown field, no ``name`` or
  ``storage``, a configuration value that is not text, a glob it does not accept):
  SDPX-PRJ-407 (:mod:`sdp_expect.checks.spec`);

:func:`project_problems`, what ``run`` and ``dry-run`` check before they start Spark,
adds the Python files of the libraries, each parsed once without importing it
(:func:`~sdp_expect.checks.python_rules.read_python_file`): one that does not parse
(``spark-pipelines`` would import it once Spark had started, and stop there),
SDPX-PRJ-406 at its line and column; the rules its decorators write with literals,
each checked as the model checks it, at its call; and the rule files it names with
``expect_from_file``, checked as the pipeline's definition would read them.
``sdp-expect validate`` reports the same, file by file with its counts
(:mod:`sdp_expect.checks.validate`).

The recommended layout keeps rule files and Databricks SQL folders beside
``transformations/``, not in it (docs/rule-files.md#where-rule-files-live).
"""

from __future__ import annotations

import os
from pathlib import Path

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.project import (
    UNSET_VALUE,
    UsageProblem,
    library_files,
    library_globs,
    load_project,
)
from sdp_expect.base.text_files import TextFileProblem, read_text
from sdp_expect.checks.python_rules import read_python_file
from sdp_expect.checks.settings import settings_problems
from sdp_expect.checks.spec import allowed_glob, key_lines, spec_problems
from sdp_expect.dbsql.parse import check
from sdp_expect.dbsql.statements import DatasetStatement
from sdp_expect.rules import check_file

__all__ = ["RULE_FILE_SUFFIXES", "layout_problems", "project_problems"]

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
    lines = _spec_lines(spec)
    problems.extend(settings_problems(configuration, lines, spec.name))
    for key in unset:
        problems.append(SdpExpectError(
            "SDPX-PRJ-403",
            f"configuration {key} is {UNSET_VALUE!r}, the placeholder sdp-expect migrate "
            f"wrote for a spark.conf.get({key!r}) without a default: the pipeline would "
            "run with it as the value",
            location=Location(spec.name, lines.get(f"configuration.{key}"))))
    for include, matches in library_globs(spec):
        if not matches and allowed_glob(include):  # else SDPX-PRJ-407 says it
            problems.append(SdpExpectError(
                "SDPX-PRJ-408",
                f"the library include {include!r} matches no file: spark-pipelines would "
                "say 'Found 0 files' in its log and run the pipeline without whatever it was "
                "meant to hold", location=Location(spec.name, lines.get("libraries"))))
    for file in library_files(spec):
        shown = _shown(file, folder)
        suffix = file.suffix.lower()
        if file.suffix not in (".py", ".sql"):
            kind = ("a rule file" if suffix in RULE_FILE_SUFFIXES
                    else f"a {file.suffix or 'suffix-less'} file")
            problems.append(SdpExpectError(
                "SDPX-PRJ-401",
                f"{kind} inside the spec's libraries: spark-pipelines registers every file "
                "they match and stops at this one (PIPELINE_UNSUPPORTED_DEFINITIONS_FILE_"
                "EXTENSION)", location=Location(shown)))
        elif file.suffix == ".sql" and _is_databricks_sql(file):
            problems.append(SdpExpectError(
                "SDPX-PRJ-402",
                "a Databricks SQL file inside the spec's libraries: spark-pipelines would "
                "register it as open-source SQL, which refuses its Databricks statements or "
                "runs them without their expectations", location=Location(shown)))
    return problems


def project_problems(spec: Path) -> list[SdpExpectError]:
    """What ``run`` and ``dry-run`` check before Spark starts: :func:`layout_problems`,
    then, for each Python file of the libraries, where it does not parse, its rules'
    errors and those of the rule files it names (each rule file once), every file named
    relative to the spec's folder.

    :param spec: The pipeline spec file.
    """
    problems = layout_problems(spec)
    folder = spec.parent
    seen: set[Path] = set()
    for file in library_files(spec, ".py"):
        found = read_python_file(file, _shown(file, folder))
        problems.extend(found.errors)
        for use in found.rule_files:
            rule_file = Path(os.path.normpath(file.parent / use.path))
            if rule_file not in seen:
                seen.add(rule_file)
                problems.extend(check_file(_shown(rule_file, folder), base_dir=folder).errors)
    return problems


def _shown(file: Path, folder: Path) -> str:
    """``file`` as errors name it: relative to the spec's ``folder`` when under it."""
    return file.relative_to(folder).as_posix() if file.is_relative_to(folder) else str(file)


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
