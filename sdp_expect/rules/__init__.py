"""Rule files: expectations kept in YAML or JSON, outside the pipeline code.

A rule file holds rules in the mapping, list or grouped format, optionally
under a top-level ``expectations:`` key (``docs/rule-files.md`` has the
grammar). :func:`load` reads one file and returns its rules as
:class:`~sdp_expect.core.model.Expectation` values in file order, or raises
:class:`RuleFileError` listing every mistake in that file.
:func:`check_file` does the same without raising (for ``sdp-expect
validate``), and :func:`as_kwargs` turns rules into the dicts that
``expect_all*`` and ``create_streaming_table`` take.

Reading is defensive, because a rule file is input: the file must be a
regular file of at most :data:`MAX_FILE_BYTES`, UTF-8 text without NUL
bytes, one YAML or JSON document at most :data:`MAX_DEPTH` levels deep, and
YAML aliases may add at most :data:`MAX_ALIAS_EXPANSION` nodes. Anything
else is an :class:`~sdp_expect.base.errors.SdpExpectError`; no input makes
:func:`load` raise another exception.

The package reads a file in three steps, one module each:
:mod:`~sdp_expect.rules.document` (the file to a YAML or JSON document,
within the limits), :mod:`~sdp_expect.rules.grammar` (the document to rules
and errors) and :mod:`~sdp_expect.rules.errors` (the errors), with
:mod:`~sdp_expect.rules.describe` rendering values for messages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional, Union

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.text_files import os_reason
from sdp_expect.core.model import Action, DatasetCheck, Expectation, RuleNames, WholeCheck
from sdp_expect.rules.describe import kind_of
from sdp_expect.rules.document import (
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_YAML_NODES,
    DocumentProblem,
    read_document,
)
from sdp_expect.rules.errors import RuleError, RuleFileError
from sdp_expect.rules.grammar import MAX_ERRORS, Reader, RuleEntry, RuleFileCheck, StopReading

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "MAX_ERRORS",
    "MAX_FILE_BYTES",
    "MAX_YAML_NODES",
    "RuleEntry",
    "RuleError",
    "RuleFileCheck",
    "RuleFileError",
    "as_kwargs",
    "check_file",
    "load",
]

StrPath = Union[str, "os.PathLike[str]"]


def check_file(
    path: StrPath,
    *,
    base_dir: Optional[StrPath] = None,
    dataset: Optional[str] = None,
) -> RuleFileCheck:
    """Read one rule file and report its rules and every mistake in it, without raising.

    :param path: The rule file; a relative path is taken from ``base_dir``.
    :param base_dir: The directory relative paths start from (default: the
        current directory).
    :param dataset: The dataset the rules are for, named in error messages.
    :returns: A :class:`RuleFileCheck`; its ``errors`` are empty when the file is valid.
    """
    try:
        shown = os.fsdecode(path)
    except TypeError:
        error = RuleError("SDPX-VAL-003", f"the path is {kind_of(path)}, not a path",
                          place=Location("?"))
        return RuleFileCheck("?", 0, (), (error,))
    try:
        document = read_document(_resolve(shown, base_dir))
    except DocumentProblem as problem:
        error = RuleError(problem.code, problem.detail, place=Location(shown), dataset=dataset,
                          fix=problem.fix)
        return RuleFileCheck(shown, 0, (), (error,))
    reader = Reader(shown, dataset, document)
    try:
        reader.read(document.data)
    except StopReading:
        return RuleFileCheck(shown, reader.rules, (), tuple(reader.errors), complete=False)
    return RuleFileCheck(shown, reader.rules, tuple(reader.entries), tuple(reader.errors),
                         warnings=tuple(reader.warnings))


def _resolve(shown: str, base_dir: Optional[StrPath]) -> Path:
    try:
        base = Path(os.fsdecode(base_dir)) if base_dir is not None else Path.cwd()
    except (OSError, TypeError) as exc:
        detail = f"cannot resolve the path: {os_reason(exc)}"
        raise DocumentProblem("SDPX-VAL-003", detail) from None
    return base / shown


def load(
    path: StrPath,
    tag: Optional[str] = None,
    *,
    base_dir: Optional[StrPath] = None,
    dataset: Optional[str] = None,
) -> list[Expectation]:
    """Read the rules of one YAML or JSON rule file, in file order.

    The format is decided by the content, not the file name. The whole file is
    checked whatever ``tag`` is; each returned expectation's ``place`` names
    the file and the rule, e.g. ``Location('rules/orders.yml', rule=3)``.

    :param path: The rule file; a relative path is taken from ``base_dir``.
    :param tag: Keep only list entries whose ``tag`` equals it or whose
        ``tags`` contain it (mapping and grouped rules carry no tags);
        ``None`` keeps every rule.
    :param base_dir: The directory relative paths start from (default: the
        current directory).
    :param dataset: The dataset the rules are for, named in error messages.
    :raises RuleFileError: listing every mistake in the file (codes
        SDPX-VAL-001, -002, -003, -006, -008, -009, -010, -011, -012, -013, -071).
    """
    result = check_file(path, base_dir=base_dir, dataset=dataset)
    result.raise_errors()
    if tag is not None and not isinstance(tag, str):
        raise SdpExpectError("SDPX-VAL-008", f"the tag is {kind_of(tag)}, not text",
                             location=Location(result.file), dataset=dataset,
                             fix="pass the tag as a string")
    return result.select(tag)


def as_kwargs(expectations: Iterable[Expectation]
              ) -> dict[str, dict[str, Union[str, DatasetCheck, WholeCheck]]]:
    """Group rules into the keyword arguments of ``expect_all*`` / ``create_streaming_table``.

    :param expectations: The rules, e.g. from :func:`load`.
    :returns: ``{"expect_all": {...}, "expect_all_or_drop": {...},
        "expect_all_or_fail": {...}}`` holding only the non-empty ones, each
        ``{name: constraint}`` in the order given (a key rule's value is the rule itself,
        :func:`~sdp_expect.pipelines.unique` / :func:`~sdp_expect.pipelines.references`,
        and a row count's or aggregate's, :func:`~sdp_expect.pipelines.row_count` /
        :func:`~sdp_expect.pipelines.aggregate`).
    :raises SdpExpectError: SDPX-VAL-071 when two rules share a name; SDPX-DEF-113 for a
        rule with a tolerance (``max_failed``), which the dicts cannot carry.
    """
    grouped: dict[str, dict[str, Union[str, DatasetCheck, WholeCheck]]] = {
        action.group_decorator: {} for action in Action}
    names = RuleNames()
    for expectation in expectations:
        clash = names.clash(expectation.name, expectation.place)
        if clash is not None:
            raise clash
        if expectation.max_failed is not None:
            raise SdpExpectError(
                "SDPX-DEF-113",
                f"as_kwargs cannot pass max_failed={expectation.max_failed.text!r} on: "
                "{name: constraint} dicts carry no tolerance",
                expectation=expectation.name, location=expectation.place,
                fix="attach the rule file to a materialized view with "
                "@dp.expect_from_file(path), which keeps each rule's tolerance, or remove "
                "max_failed from the rule")
        group = Action(expectation.action).group_decorator  # also an action given as text
        rule = expectation.check or expectation.whole
        grouped[group][expectation.name] = expectation.constraint if rule is None else rule
    return {key: rules for key, rules in grouped.items() if rules}
