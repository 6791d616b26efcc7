"""Rule files: expectations kept in YAML or JSON, outside the pipeline code.

A rule file holds rules in the mapping, list or grouped format, optionally
under a top-level ``expectations:`` key (``docs/rule-files.md`` has the
grammar). :func:`load` reads one file and returns its rules as
:class:`~sdp_expect.model.Expectation` values in file order, or raises
:class:`RuleFileError` listing every mistake in that file.
:func:`check_file` does the same without raising (for ``sdp-expect
validate``), and :func:`as_kwargs` turns rules into the dicts that
``expect_all*`` and ``create_streaming_table`` take.

Reading is defensive, because a rule file is input: the file must be a
regular file of at most :data:`MAX_FILE_BYTES`, UTF-8 text without NUL
bytes, one YAML or JSON document at most :data:`MAX_DEPTH` levels deep, and
YAML aliases may add at most :data:`MAX_ALIAS_EXPANSION` nodes. Anything
else is an :class:`~sdp_expect.errors.SdpExpectError`; no input makes
:func:`load` raise another exception.
"""

from __future__ import annotations

import datetime
import difflib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import yaml

from sdp_expect.errors import Location, SdpExpectError
from sdp_expect.model import Action, Expectation, make_expectation, parse_action

# libyaml parses events in C without recursion; composing stays in Python, where it is bounded.
_EventSource: Any = yaml.cyaml.CParser if yaml.__with_libyaml__ else None
_Composer: Any = yaml.composer.Composer
_ConstructorError: Any = yaml.constructor.ConstructorError
_SafeConstructor: Any = yaml.constructor.SafeConstructor
_ScalarNode: Any = yaml.nodes.ScalarNode
_AliasEvent: Any = yaml.events.AliasEvent

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

MAX_FILE_BYTES = 10 * 1024 * 1024
"""A rule file larger than this (10 MiB) is rejected without being read (SDPX-VAL-009)."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists allowed in a document, aliases expanded."""
MAX_ALIAS_EXPANSION = 100_000
"""Most nodes that YAML aliases may add to a document when expanded ("billion laughs")."""
MAX_YAML_NODES = 500_000
"""Most values (scalars, mappings, lists) in one YAML document: about 40,000 rules.

This bounds the memory and time that composing a hostile 10 MiB YAML file takes
(JSON, parsed in C, needs no such bound).
"""
MAX_NUMBER_DIGITS = 1000
"""Longest number literal accepted; longer ones are rejected as not a valid document."""
MAX_ERRORS = 1000
"""Checking a file stops after this many errors (a huge broken file must not exhaust memory)."""

_GROUPS: dict[str, Action] = {
    "expect": Action.WARN,
    "expect_or_drop": Action.DROP,
    "expect_or_fail": Action.FAIL,
    "expect_all": Action.WARN,
    "expect_all_or_drop": Action.DROP,
    "expect_all_or_fail": Action.FAIL,
}
_TYPES: dict[str, Action] = {
    "expect": Action.WARN,
    "expect_or_drop": Action.DROP,
    "expect_or_fail": Action.FAIL,
}
_KWARGS: dict[Action, str] = {
    Action.WARN: "expect_all",
    Action.DROP: "expect_all_or_drop",
    Action.FAIL: "expect_all_or_fail",
}
_WRAPPER = "expectations"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TAG_FIX = "remove the tag (!!...): a rule file holds only mappings, lists, text and null"
_DEPTH_FIX = f"nest mappings and lists at most {MAX_DEPTH} levels deep (rules need 4 at most)"


# --------------------------------------------------------------------------- errors


class RuleError(SdpExpectError):
    """One mistake in a rule file, naming the file and the rule.

    Its ``location`` is ``'<file>'`` or ``'<file>, <rule>'``, for example
    ``'rules/orders.yml, rule 3'`` or ``"rules/orders.yml, rule 'id > 0'"``.

    :param code: A code from :data:`~sdp_expect.errors.ERROR_CATALOGUE`.
    :param detail: What exactly is wrong.
    :param file: The file as the user named it.
    :param rule: ``'rule 3'`` (list position, from 1), ``"rule 'key'"`` (a
        mapping key), ``"group 'expect_or_drop'"``, or ``None`` for the whole file.
    :param dataset: The dataset the rules are for, when known.
    :param expectation: The expectation's name, when known.
    :param fix: What to do instead; defaults to the catalogue's fix.
    """

    def __init__(
        self,
        code: str,
        detail: Optional[str] = None,
        *,
        file: str,
        rule: Optional[str] = None,
        dataset: Optional[str] = None,
        expectation: Optional[str] = None,
        fix: Optional[str] = None,
    ) -> None:
        self.file = file
        self.rule = rule
        location = file if rule is None else f"{file}, {rule}"
        super().__init__(
            code, detail, dataset=dataset, expectation=expectation, fix=fix, location=location
        )

    def with_context(
        self, *, dataset: Optional[str] = None, location: Union[Location, str, None] = None
    ) -> RuleError:
        """Return the same error with the dataset filled in where missing.

        :param dataset: The dataset, used when the error has none.
        :param location: Ignored: a rule error always knows its file and rule.
        """
        return RuleError(
            self.code,
            self.detail,
            file=self.file,
            rule=self.rule,
            dataset=self.dataset if self.dataset is not None else dataset,
            expectation=self.expectation,
            fix=self.fix,
        )


class RuleFileError(SdpExpectError):
    """Every mistake found in one rule file; its code is the first mistake's code.

    :param file: The file as the user named it.
    :param errors: The mistakes, in file order (at least one).
    :param complete: False when checking stopped after :data:`MAX_ERRORS` errors.
    """

    def __init__(
        self, file: str, errors: Sequence[SdpExpectError], *, complete: bool = True
    ) -> None:
        if not errors:
            raise ValueError("RuleFileError needs at least one error")
        self.file = file
        self.errors: list[SdpExpectError] = list(errors)
        self.complete = complete
        count = len(self.errors)
        stopped = "" if complete else " (checking stopped there; there may be more)"
        super().__init__(
            self.errors[0].code,
            f"{count} error{'' if count == 1 else 's'} in the rule file{stopped}",
            dataset=self.errors[0].dataset,
            fix="correct each error listed",
            location=file,
        )

    def render(self, *, with_location: bool = True) -> str:
        """Return the message: a heading line, then one line per error."""
        lines = [f"[{self.code}] {self.location}: {self.detail}:" if with_location
                 else f"[{self.code}] {self.detail}:"]
        lines.extend(f"  - {error.render()}" for error in self.errors)
        return "\n".join(lines)

    def with_context(
        self, *, dataset: Optional[str] = None, location: Union[Location, str, None] = None
    ) -> RuleFileError:
        """Return the same errors with the dataset filled in where missing.

        :param dataset: The dataset, used by each error that has none.
        :param location: Used by each error that has no location.
        """
        errors = [e.with_context(dataset=dataset, location=location) for e in self.errors]
        return RuleFileError(self.file, errors, complete=self.complete)


class _StopReading(Exception):
    """Internal: :data:`MAX_ERRORS` errors were found; the rest of the file is not checked."""


class _DocumentProblem(Exception):
    """Internal: the file cannot become a document (code and detail for a RuleError)."""

    def __init__(self, code: str, detail: str, fix: Optional[str] = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.fix = fix


# --------------------------------------------------------------------------- describing values


def _describe(value: object) -> str:
    """A short, safe rendering of a parsed value (never walks a container)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 4 * MAX_NUMBER_DIGITS else "a huge integer"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str):
        return repr(value if len(value) <= 80 else value[:77] + "...")
    return _kind(value)


def _kind(value: object) -> str:
    """The kind of a parsed value, with its article: 'an integer', 'a list', ..."""
    if value is None:
        return "null"
    kinds: list[tuple[type, str]] = [
        (bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "text"),
        (datetime.datetime, "a timestamp"), (datetime.date, "a date"), (bytes, "binary data"),
        (list, "a list"), (dict, "a mapping"), (set, "a set"), (tuple, "a pair"),
    ]
    for kind, word in kinds:
        if isinstance(value, kind):
            return word
    return f"a {type(value).__name__}"


def _is_scalar(value: object) -> bool:
    """True for values that quoting would turn into the intended text."""
    return value is None or isinstance(value, (bool, int, float, str, datetime.date))


def _key_label(key: object) -> str:
    """The rule label for a mapping key: ``rule 'total_price >= 0'``, ``rule with key 1``."""
    return f"rule {_describe(key)}" if isinstance(key, str) else f"rule with key {_describe(key)}"


# --------------------------------------------------------------------------- reading the file


def _read_bytes(full: Path) -> bytes:
    """The file's bytes, after checking that it is a regular file of allowed size."""
    try:
        info = full.stat()
    except FileNotFoundError:
        raise _DocumentProblem("SDPX-VAL-003", f"no such file (looked for {full})") from None
    except (OSError, ValueError) as exc:
        raise _DocumentProblem("SDPX-VAL-003", f"cannot read the file: {_os_reason(exc)}") from None
    if stat.S_ISDIR(info.st_mode):
        raise _DocumentProblem("SDPX-VAL-003", "this is a directory, not a rule file")
    if not stat.S_ISREG(info.st_mode):
        raise _DocumentProblem("SDPX-VAL-003", "this is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise _too_big(info.st_size)
    try:
        with full.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _DocumentProblem("SDPX-VAL-003", f"cannot read the file: {_os_reason(exc)}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _too_big(len(raw))
    return raw


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _too_big(size: int) -> _DocumentProblem:
    return _DocumentProblem(
        "SDPX-VAL-009",
        f"the file has {size} bytes or more; a rule file may have at most "
        f"{MAX_FILE_BYTES} bytes (10 MiB)",
        "split the rules into several files",
    )


def _decode(raw: bytes) -> str:
    """The file's text: UTF-8 without NUL bytes; a leading byte order mark is dropped."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise _DocumentProblem("SDPX-VAL-009", "the file is UTF-16 text", "save it as UTF-8")
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise _DocumentProblem(
            "SDPX-VAL-009",
            f"the file contains a NUL byte (line {line}): it is binary, not YAML or JSON text",
            "name a rule file: UTF-8 text in YAML or JSON",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _DocumentProblem(
            "SDPX-VAL-009", f"the file is not UTF-8 text (invalid byte at line {line})",
            "save the file as UTF-8",
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


# --------------------------------------------------------------------------- YAML


@dataclass(frozen=True)
class _Duplicate:
    """A key written more than once in one mapping."""

    key: object
    where: str


class _BoundedComposer(_Composer):  # type: ignore[misc, unused-ignore]
    """PyYAML's composer, refusing deep nesting, recursive aliases and alias bombs.

    The depth counted is that of the document with its aliases expanded, so
    chains of merge keys cannot nest deeper than :data:`MAX_DEPTH` either.
    """

    def _init_limits(self) -> None:
        self._depth = 0
        self._nodes = 0
        self._expansion = 0
        self._height: dict[Any, int] = {}
        self._weight: dict[Any, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(_AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            self._check_alias(node, mark)
            return node
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise _limit(f"the document holds more than {MAX_YAML_NODES} values",
                         self.peek_event().start_mark, "split the rules into several files")
        return super().compose_node(parent, index)

    def _check_alias(self, node: Any, mark: Any) -> None:
        if isinstance(node, _ScalarNode):
            self._expansion += 1
        elif node not in self._height:
            raise _limit("an alias refers to a mapping or list that contains it", mark,
                         "remove the alias: a rule file cannot hold recursive structures")
        elif self._depth + self._height[node] > MAX_DEPTH:
            raise _too_deep(mark)
        else:
            self._expansion += self._weight[node]
        if self._expansion > MAX_ALIAS_EXPANSION:
            raise _limit(f"aliases expand the document by more than {MAX_ALIAS_EXPANSION} "
                         "nodes", mark, "write the rules out with fewer aliases (*name)")

    def compose_sequence_node(self, anchor: Any) -> Any:
        self._enter()
        node = super().compose_sequence_node(anchor)
        self._leave(node, node.value)
        return node

    def compose_mapping_node(self, anchor: Any) -> Any:
        self._enter()
        node = super().compose_mapping_node(anchor)
        self._leave(node, [part for pair in node.value for part in pair])
        return node

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _too_deep(self.peek_event().start_mark)

    def _leave(self, node: Any, children: list[Any]) -> None:
        self._depth -= 1
        self._height[node] = 1 + max((self._height.get(c, 0) for c in children), default=0)
        self._weight[node] = 1 + sum(self._weight.get(c, 1) for c in children)


def _limit(detail: str, mark: Any, fix: str) -> _DocumentProblem:
    return _DocumentProblem("SDPX-VAL-009", f"{detail} (line {mark.line + 1})", fix)


def _too_deep(mark: Any) -> _DocumentProblem:
    return _limit(f"the document nests more than {MAX_DEPTH} levels deep", mark, _DEPTH_FIX)


class _TrackingConstructor(_SafeConstructor):  # type: ignore[misc, unused-ignore]
    """The safe constructor, remembering keys written twice in one mapping."""

    def _init_tracking(self) -> None:
        self.duplicates: dict[int, list[_Duplicate]] = {}

    def construct_tracked_map(self, node: Any) -> Iterator[dict[Any, Any]]:
        data: dict[Any, Any] = {}
        yield data
        self._note_duplicates(node, data)
        data.update(self.construct_mapping(node))

    def _note_duplicates(self, node: Any, data: dict[Any, Any]) -> None:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, _ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                where = f"lines {seen[key]} and {line}"
                self.duplicates.setdefault(id(data), []).append(_Duplicate(key, where))
            else:
                seen[key] = line

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:
            line = node.start_mark.line + 1
            raise _DocumentProblem("SDPX-VAL-009", f"not valid YAML: {_one_line(exc)} "
                                   f"(line {line})") from None

    def construct_bounded_int(self, node: Any) -> Any:
        if isinstance(node.value, str) and len(node.value) > MAX_NUMBER_DIGITS:
            raise _ConstructorError(None, None, _number_problem(), node.start_mark)
        return self.construct_yaml_int(node)


def _number_problem() -> str:
    return f"a number has more than {MAX_NUMBER_DIGITS} digits"


_TrackingConstructor.add_constructor(
    "tag:yaml.org,2002:map", _TrackingConstructor.construct_tracked_map
)
_TrackingConstructor.add_constructor(
    "tag:yaml.org,2002:int", _TrackingConstructor.construct_bounded_int
)


def _yaml_loader_class(libyaml: bool) -> type:
    """The loader class, parsing events with libyaml (fast, in C) or with PyYAML's own parser.

    :param libyaml: Use libyaml's event parser; PyYAML may be built without it.
    """
    def __init__(self: Any, text: str) -> None:
        if libyaml:
            _EventSource.__init__(self, text)
        else:
            yaml.reader.Reader.__init__(self, text)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
        _BoundedComposer.__init__(self)
        _TrackingConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._init_limits()
        self._init_tracking()

    pure = (yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser)
    source: tuple[Any, ...] = (_EventSource,) if libyaml else pure
    bases = (_BoundedComposer, *source, _TrackingConstructor, yaml.resolver.Resolver)
    return type("_RuleFileLoader", bases, {"__init__": __init__})


_YamlLoader = _yaml_loader_class(libyaml=_EventSource is not None)


@dataclass
class _Document:
    """A parsed document and the keys that its mappings hold more than once."""

    data: Any
    duplicates: dict[int, list[_Duplicate]] = field(default_factory=dict)


def _parse_yaml(text: str) -> _Document:
    loader = _YamlLoader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    return _Document(data, loader.duplicates)


def _yaml_problem(exc: Exception) -> _DocumentProblem:
    """The SDPX-VAL-009 problem for an exception raised while reading YAML."""
    if isinstance(exc, yaml.MarkedYAMLError):
        if exc.problem == "but found another document":
            return _DocumentProblem(
                "SDPX-VAL-009", "the file holds more than one YAML document (a '---' line "
                "separates them)", "keep one document per rule file")
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        fix = _TAG_FIX if "constructor for the tag" in problem else None
        return _DocumentProblem("SDPX-VAL-009", f"not valid YAML: {problem}{where}", fix)
    if isinstance(exc, yaml.reader.ReaderError):
        return _DocumentProblem("SDPX-VAL-009", f"not valid YAML: character "
                                f"#x{exc.character:04x} at offset {exc.position}: {exc.reason}")
    return _DocumentProblem("SDPX-VAL-009", f"not valid YAML: {_one_line(exc)}")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# --------------------------------------------------------------------------- JSON


def _json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, found without parsing it."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = deepest = 0
    for char in brackets:
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _json_int(digits: str) -> int:
    if len(digits) > MAX_NUMBER_DIGITS:
        raise ValueError(_number_problem())
    return int(digits)


def _parse_json(text: str) -> _Document:
    depth = _json_depth(text)
    if depth > MAX_DEPTH:
        raise _DocumentProblem("SDPX-VAL-009", f"the document nests {depth} levels deep; "
                               f"at most {MAX_DEPTH} are allowed", _DEPTH_FIX)
    duplicates: dict[int, list[_Duplicate]] = {}

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                duplicates.setdefault(id(obj), []).append(_Duplicate(key, ""))
            obj[key] = value
        return obj

    data = json.loads(text, object_pairs_hook=build, parse_int=_json_int)
    return _Document(data, duplicates)


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    return f"not valid JSON: {_one_line(exc)}"


def _parse(text: str) -> _Document:
    """Parse JSON when the text starts like JSON, else (or when JSON fails) YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return _parse_json(text)
        except _DocumentProblem:
            raise
        except Exception as exc:  # any parser failure is a document error
            json_error = _json_problem(exc)
        try:  # YAML flow style ({a: b}) starts like JSON too
            return _parse_yaml(text)
        except Exception:
            raise _DocumentProblem("SDPX-VAL-009", json_error) from None
    try:
        return _parse_yaml(text)
    except _DocumentProblem:
        raise
    except Exception as exc:
        raise _yaml_problem(exc) from None


# --------------------------------------------------------------------------- the grammar


@dataclass(frozen=True)
class RuleEntry:
    """One valid rule of a file and the tags it carries.

    :param expectation: The rule.
    :param tags: Its ``tag`` and ``tags`` values (empty outside the list format).
    """

    expectation: Expectation
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuleFileCheck:
    """What :func:`check_file` found in one file.

    :param file: The file as the user named it.
    :param rules: How many rules the file holds, valid or not.
    :param entries: The valid rules, in file order.
    :param errors: Every mistake, in file order; empty when the file is valid.
    :param complete: False when checking stopped after :data:`MAX_ERRORS` errors.
    :param warnings: Things that are not errors but probably mistakes, each a
        sentence naming its rule: keys the grammar does not know, which are
        ignored (a misspelt ``failureAction`` leaves the rule a warn rule).
    """

    file: str
    rules: int
    entries: tuple[RuleEntry, ...]
    errors: tuple[RuleError, ...]
    complete: bool = True
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the file has no errors."""
        return not self.errors

    def select(self, tag: Optional[str] = None) -> list[Expectation]:
        """The valid rules, keeping only those carrying ``tag`` when one is given.

        :param tag: Keep rules whose ``tag`` equals it or whose ``tags`` hold it;
            ``None`` keeps every rule.
        """
        return [e.expectation for e in self.entries if tag is None or tag in e.tags]

    def raise_errors(self) -> None:
        """Raise :class:`RuleFileError` listing every error, when the file has any."""
        if self.errors:
            raise RuleFileError(self.file, self.errors, complete=self.complete)


class _Reader:
    """Walks a parsed document, collecting rules and errors in file order."""

    def __init__(self, file: str, dataset: Optional[str], document: _Document) -> None:
        self.file = file
        self.dataset = dataset
        self.duplicates = document.duplicates
        self.errors: list[RuleError] = []
        self.entries: list[RuleEntry] = []
        self.names: dict[str, tuple[int, str]] = {}
        self.rules = 0
        self.warnings: list[str] = []
        self.group: Optional[str] = None

    def error(self, code: str, detail: str, rule: Optional[str] = None,
              fix: Optional[str] = None, expectation: Optional[str] = None) -> None:
        """Record one error; stop reading once there are :data:`MAX_ERRORS`."""
        self.errors.append(RuleError(code, detail, file=self.file, rule=rule,
                                     dataset=self.dataset, expectation=expectation, fix=fix))
        if len(self.errors) >= MAX_ERRORS:
            raise _StopReading

    def not_text(self, what: str, value: object, rule: Optional[str], example: str) -> None:
        """Report SDPX-VAL-008 for ``value``, which must be text.

        :param what: What holds the value, e.g. ``'name'`` or ``'the constraint key'``.
        :param example: How the quoted value is written, with ``{}`` for the value.
        """
        if _is_scalar(value):
            shown = _describe(value)
            noun = "key" if "key" in what else "value"
            self.error("SDPX-VAL-008", f"{what} is {shown} ({_kind(value)}), not text", rule,
                       fix=f"quote the {noun} so that it is read as text: "
                       + example.format(f'"{shown}"'))
        else:
            self.error("SDPX-VAL-008", f"{what} is {_kind(value)}, not text", rule,
                       fix="write it as one quoted string")

    # -- the document ----------------------------------------------------------------

    def read(self, data: Any) -> None:
        if isinstance(data, dict) and _WRAPPER in data:
            self.check_duplicates(data, None)
            data = self.unwrap(data)
            if data is None:
                return
        if isinstance(data, list):
            self.read_list(data)
        elif isinstance(data, dict) and data and all(
            isinstance(k, str) and k in _GROUPS for k in data
        ):
            self.check_duplicates(data, None)
            self.read_groups(data)
        elif isinstance(data, dict):
            self.read_mapping(data)
        else:
            self.error("SDPX-VAL-008", _not_a_document(data),
                       fix="write a mapping (constraint: {action, name}) or a list of rules")

    def unwrap(self, data: dict[Any, Any]) -> Any:
        others = [k for k in data if k != _WRAPPER]
        if others:
            self.error("SDPX-VAL-008", f"beside 'expectations:' the document has other "
                       f"top-level keys ({', '.join(_describe(k) for k in others[:5])})",
                       fix="put every rule under 'expectations:' and remove the other keys")
        inner = data[_WRAPPER]
        if isinstance(inner, (list, dict)):
            return inner
        self.error("SDPX-VAL-008", f"'expectations:' holds {_describe(inner)}; it must hold "
                   "a mapping or a list of rules",
                   fix="put the rules under 'expectations:', indented, or remove the key")
        return None

    def check_duplicates(self, mapping: dict[Any, Any], rule: Optional[str]) -> None:
        """Report keys written twice in a mapping that is not a list of rules (SDPX-VAL-009)."""
        for dup in self.duplicates.get(id(mapping), []):
            where = f" ({dup.where})" if dup.where else ""
            self.error("SDPX-VAL-009", f"the key {_describe(dup.key)} is written more than "
                       f"once in one mapping{where}; only the last would be kept", rule,
                       fix="remove or rename the repeated key")

    def check_body(self, body: dict[Any, Any], rule: str, known: tuple[str, ...]) -> None:
        """Check the mapping of one rule: no repeated keys, every key text.

        A key that is not in ``known`` is ignored, as the grammar says nothing of
        it, but recorded as a warning (with the known key it most resembles).
        """
        self.check_duplicates(body, rule)
        for key in body:
            if not isinstance(key, str):
                self.not_text("the key", key, rule, "{}")
            elif key not in known:
                self.warnings.append(_unknown_key_warning(rule, key, known))

    def repeated(self, mapping: dict[Any, Any]) -> dict[object, str]:
        """The keys of a mapping of rules that are written more than once, with where."""
        return {d.key: d.where for d in self.duplicates.get(id(mapping), [])}

    def repeated_key(self, what: str, key: object, where: str, label: str) -> None:
        lines = f" ({where})" if where else ""
        self.error("SDPX-VAL-071", f"the {what} {_describe(key)} is a key more than once"
                   f"{lines}; a mapping keeps only the last, so a rule would be lost", label,
                   fix=f"write each {what} once; to check one constraint under two names, "
                   "use the list format")

    # -- the list format -------------------------------------------------------------

    def read_list(self, items: list[Any]) -> None:
        for index, entry in enumerate(items, start=1):
            self.rules += 1
            label = f"rule {index}"
            if not isinstance(entry, dict):
                self.error("SDPX-VAL-008", f"the rule is {_describe(entry)}, not a mapping",
                           label, fix="write each list entry as a mapping with constraint "
                           "and name, e.g. '- name: valid_id' / '  constraint: id IS NOT NULL'")
                continue
            self.read_list_entry(entry, label)

    def read_list_entry(self, entry: dict[Any, Any], label: str) -> None:
        before = len(self.errors)
        self.check_body(entry, label, _LIST_KEYS)
        action = self.list_action(entry, label)
        constraint, bad_constraint = self.text_field(entry, ("constraint", "expression"), label)
        name, bad_name = self.text_field(entry, ("name", "message"), label)
        tags = self.tags(entry, label)
        if not bad_constraint:
            self.build(label, name, constraint, action, tags,
                       ok=len(self.errors) == before, claim=not bad_name)

    def list_action(self, entry: dict[Any, Any], label: str) -> Action:
        if "action" in entry:
            self.error("SDPX-VAL-006", "a list entry takes failureAction, not action (action "
                       "belongs to the mapping format)", label,
                       fix=f"write failureAction: {_action_hint(entry['action'])}")
        chosen = None
        failure = entry.get("failureAction")
        if failure is not None:
            chosen = self.parse_action(failure, "failureAction", label)
        kind = entry.get("type")
        if kind is not None:
            typed = _TYPES.get(kind.strip().lower()) if isinstance(kind, str) else None
            if typed is None:
                self.error("SDPX-VAL-006", f"unknown type {_describe(kind)}", label,
                           fix="use type expect, expect_or_drop or expect_or_fail, or "
                           "failureAction warn, drop or fail")
            chosen = chosen or typed
        return chosen or Action.WARN

    def parse_action(self, value: object, key: str, label: str) -> Optional[Action]:
        try:
            return parse_action(value)
        except SdpExpectError:
            self.error("SDPX-VAL-006", f"unknown {key} {_describe(value)}", label,
                       fix=f"use {key}: warn, drop or fail")
            return None

    def text_field(self, entry: dict[Any, Any], keys: tuple[str, ...],
                   label: str) -> tuple[Optional[str], bool]:
        """The first of ``keys`` holding text, and whether any of them holds a non-text value.

        A null value counts as absent.
        """
        found: Optional[str] = None
        bad = False
        for key in keys:
            value = entry.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                self.not_text(key, value, label, key + ": {}")
                bad = True
            elif found is None:
                found = value
        return found, bad

    def tags(self, entry: dict[Any, Any], label: str) -> tuple[str, ...]:
        tags: list[str] = []
        tag = entry.get("tag")
        if tag is not None and not isinstance(tag, str):
            self.not_text("tag", tag, label, "tag: {}")
        elif tag is not None:
            tags.append(tag)
        many = entry.get("tags")
        if many is None:
            return tuple(tags)
        if not isinstance(many, list) or not all(isinstance(t, str) for t in many):
            self.error("SDPX-VAL-008", f"tags is {_kind(many)}; it must be a list of text",
                       label, fix="write tags as a list of strings, e.g. tags: [finance, daily]")
            return tuple(tags)
        return tuple(tags + many)

    # -- the mapping format ----------------------------------------------------------

    def read_mapping(self, mapping: dict[Any, Any]) -> None:
        repeated = self.repeated(mapping)
        for key, body in mapping.items():
            self.rules += 1
            label = _key_label(key)
            before = len(self.errors)
            if key in repeated:
                self.repeated_key("constraint", key, repeated[key], label)
            if not isinstance(key, str):
                self.not_text("the constraint key", key, label, "{}")
            action, name, bad_name = self.mapping_body(body, label)
            if isinstance(key, str):
                self.build(label, name, key, action, (), ok=len(self.errors) == before,
                           claim=not bad_name)

    def mapping_body(self, body: Any, label: str) -> tuple[Action, Optional[str], bool]:
        """The action and name of a mapping-format rule, and whether the name is invalid."""
        if body is None:
            return Action.WARN, None, False
        if not isinstance(body, dict):
            hint = f" such as {{action: {_action_hint(body)}}}" if isinstance(body, str) else ""
            self.error("SDPX-VAL-008", f"the rule's value is {_describe(body)}, not a mapping",
                       label, fix=f"in the mapping format the key is the constraint and the "
                       f"value a mapping{hint} with action and name, or nothing")
            return Action.WARN, None, False
        self.check_body(body, label, _MAPPING_KEYS)
        for wrong in ("failureAction", "type"):
            if wrong in body:
                self.error("SDPX-VAL-006", f"the mapping format takes action, not {wrong} "
                           f"({wrong} belongs to the list format)", label,
                           fix=f"write action: {_action_hint(body[wrong])}")
        action = body.get("action")
        parsed = Action.WARN if action is None else self.parse_action(action, "action", label)
        name, bad_name = self.text_field(body, ("name",), label)
        return parsed or Action.WARN, name, bad_name

    # -- the grouped format ----------------------------------------------------------

    def read_groups(self, groups: dict[str, Any]) -> None:
        for group, rules in groups.items():
            if not isinstance(rules, dict):
                self.error("SDPX-VAL-008", f"the group holds {_describe(rules)}; it must be "
                           "a mapping of name to constraint", f"group {group!r}",
                           fix=f"write {group}: {{name: constraint, ...}}")
                continue
            self.group = group
            self.read_group(rules, _GROUPS[group])

    def read_group(self, rules: dict[Any, Any], action: Action) -> None:
        repeated = self.repeated(rules)
        for name, constraint in rules.items():
            self.rules += 1
            label = _key_label(name)
            before = len(self.errors)
            if name in repeated:
                self.repeated_key("name", name, repeated[name], label)
            if not isinstance(name, str):
                self.not_text("the name key", name, label, "{}")
            if constraint is not None and not isinstance(constraint, str):
                self.not_text("the constraint", constraint, label, "name: {}")
            elif isinstance(name, str):
                self.build(label, name, constraint, action, (), ok=len(self.errors) == before)

    # -- one rule --------------------------------------------------------------------

    def build(self, label: str, name: Optional[str], constraint: Optional[str],
              action: Action, tags: tuple[str, ...], *, ok: bool, claim: bool = True) -> None:
        """Check one rule's parts and keep it when the whole rule is valid.

        :param name: ``None`` names the rule by its constraint.
        :param constraint: ``None`` when the rule has none (SDPX-VAL-001).
        :param ok: False when an error was already reported for this rule.
        :param claim: False when the name was invalid: skip the duplicate-name check.
        """
        if constraint is None or not constraint.strip():
            missing = "no constraint" if constraint is None else "an empty constraint"
            self.error("SDPX-VAL-001", f"the rule has {missing}", label,
                       fix="add constraint: followed by a Spark SQL boolean expression, "
                       "e.g. constraint: \"amount >= 0\"", expectation=name)
            return
        name = constraint if name is None else name
        try:
            expectation = make_expectation(name, constraint, action, dataset=self.dataset,
                                           origin=f"{self.file}, {label}")
        except SdpExpectError as exc:
            self.error(exc.code, exc.detail, label, exc.fix, exc.expectation)
            ok = False
        unique = self.claim(name, label) if claim else True
        if ok and unique:
            self.entries.append(RuleEntry(expectation, tags))

    def claim(self, name: str, label: str) -> bool:
        """Record ``name`` for the current rule; report SDPX-VAL-071 when an earlier rule has it."""
        where = label if self.group is None else f"{label} of group {self.group!r}"
        first, first_where = self.names.setdefault(name, (self.rules, where))
        if first == self.rules:
            return True
        self.error("SDPX-VAL-071", f"the name {_describe(name)} is already used by {first_where}",
                   label, expectation=name,
                   fix="give each rule of the file its own name")
        return False


def _not_a_document(data: object) -> str:
    if data is None:
        return "the file holds no rules (it is empty, only comments, or null)"
    return f"the document is {_describe(data)}, neither a mapping nor a list"


def _action_hint(value: object) -> str:
    """The action to suggest in a fix: the value itself when it is a known action."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in {a.value for a in Action}:
            return lowered
        if lowered in _TYPES:
            return _TYPES[lowered].value
    return "warn, drop or fail"


# --------------------------------------------------------------------------- public API


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
        error = RuleError("SDPX-VAL-003", f"the path is {_kind(path)}, not a path", file="?")
        return RuleFileCheck("?", 0, (), (error,))
    try:
        document = _parse(_decode(_read_bytes(_resolve(shown, base_dir))))
    except _DocumentProblem as problem:
        error = RuleError(problem.code, problem.detail, file=shown, dataset=dataset,
                          fix=problem.fix)
        return RuleFileCheck(shown, 0, (), (error,))
    reader = _Reader(shown, dataset, document)
    try:
        reader.read(document.data)
    except _StopReading:
        return RuleFileCheck(shown, reader.rules, (), tuple(reader.errors), complete=False)
    return RuleFileCheck(shown, reader.rules, tuple(reader.entries), tuple(reader.errors),
                         warnings=tuple(reader.warnings))


_LIST_KEYS = ("name", "message", "constraint", "expression", "failureAction", "type", "tag",
              "tags", "action")
_MAPPING_KEYS = ("action", "name", "failureAction", "type")


def _unknown_key_warning(rule: str, key: str, known: tuple[str, ...]) -> str:
    """The warning for a rule key the grammar does not know (it is ignored).

    :param rule: The rule, e.g. ``'rule 3'``.
    :param key: The unknown key.
    :param known: The keys this format knows.
    """
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
    return f"{rule}: the key {key!r} is not part of the grammar and is ignored{hint}"


def _resolve(shown: str, base_dir: Optional[StrPath]) -> Path:
    try:
        base = Path(os.fsdecode(base_dir)) if base_dir is not None else Path.cwd()
    except (OSError, TypeError) as exc:
        detail = f"cannot resolve the path: {_os_reason(exc)}"
        raise _DocumentProblem("SDPX-VAL-003", detail) from None
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
    checked whatever ``tag`` is; each returned expectation's ``origin`` names
    the file and the rule, e.g. ``'rules/orders.yml, rule 3'``.

    :param path: The rule file; a relative path is taken from ``base_dir``.
    :param tag: Keep only list entries whose ``tag`` equals it or whose
        ``tags`` contain it (mapping and grouped rules carry no tags);
        ``None`` keeps every rule.
    :param base_dir: The directory relative paths start from (default: the
        current directory).
    :param dataset: The dataset the rules are for, named in error messages.
    :raises RuleFileError: listing every mistake in the file (codes
        SDPX-VAL-001, -002, -003, -006, -008, -009, -010, -011, -071).
    """
    result = check_file(path, base_dir=base_dir, dataset=dataset)
    result.raise_errors()
    if tag is not None and not isinstance(tag, str):
        raise SdpExpectError("SDPX-VAL-008", f"the tag is {_kind(tag)}, not text",
                             location=result.file, dataset=dataset, fix="pass the tag as a string")
    return result.select(tag)


def as_kwargs(expectations: Iterable[Expectation]) -> dict[str, dict[str, str]]:
    """Group rules into the keyword arguments of ``expect_all*`` / ``create_streaming_table``.

    :param expectations: The rules, e.g. from :func:`load`.
    :returns: ``{"expect_all": {...}, "expect_all_or_drop": {...},
        "expect_all_or_fail": {...}}`` holding only the non-empty ones, each
        ``{name: constraint}`` in the order given.
    :raises SdpExpectError: SDPX-VAL-071 when two rules share a name.
    """
    grouped: dict[str, dict[str, str]] = {key: {} for key in _KWARGS.values()}
    seen: dict[str, Optional[str]] = {}
    for expectation in expectations:
        if expectation.name in seen:
            where = [o for o in (seen[expectation.name], expectation.origin) if o]
            raise SdpExpectError(
                "SDPX-VAL-071",
                "two rules share a name" + (f" ({' and '.join(where)})" if where else ""),
                expectation=expectation.name,
            )
        seen[expectation.name] = expectation.origin
        grouped[_KWARGS[expectation.action]][expectation.name] = expectation.constraint
    return {key: rules for key, rules in grouped.items() if rules}
