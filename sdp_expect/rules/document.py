"""From a rule file to a document: reading it safely, then parsing YAML or JSON within limits.

The file must be a regular file of at most :data:`MAX_FILE_BYTES`, UTF-8 text
without NUL bytes (read by :func:`sdp_expect.base.text_files.read_text`), and one
YAML or JSON document at most :data:`MAX_DEPTH` levels deep; YAML aliases may
add at most :data:`MAX_ALIAS_EXPANSION` nodes. Anything else is a
:class:`DocumentProblem`, never another exception. Keys written twice in one
mapping are kept aside (:class:`Document`), for the grammar to report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

from sdp_expect.base.text_files import TextFileProblem, read_text

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
    "MAX_FILE_BYTES",
    "MAX_NUMBER_DIGITS",
    "MAX_YAML_NODES",
    "Document",
    "DocumentProblem",
    "Duplicate",
    "parse",
    "read_document",
]

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

_MERGE_TAG = "tag:yaml.org,2002:merge"
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TAG_FIX = "remove the tag (!!...): a rule file holds only mappings, lists, text and null"
_DEPTH_FIX = f"nest mappings and lists at most {MAX_DEPTH} levels deep (rules need 4 at most)"


class DocumentProblem(Exception):
    """The file cannot become a document (code, detail and fix for a RuleError)."""

    def __init__(self, code: str, detail: str, fix: Optional[str] = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.fix = fix


@dataclass(frozen=True)
class Duplicate:
    """A key written more than once in one mapping."""

    key: object
    where: str


@dataclass
class Document:
    """A parsed document and the keys that its mappings hold more than once."""

    data: Any
    duplicates: dict[int, list[Duplicate]] = field(default_factory=dict)


def read_document(full: Path) -> Document:
    """Read and parse one rule file.

    :raises DocumentProblem: SDPX-VAL-003 when it cannot be read, SDPX-VAL-009
        when it is too big, not UTF-8 text, or not one document within the limits.
    """
    try:
        text = read_text(full, max_bytes=MAX_FILE_BYTES)
    except TextFileProblem as problem:
        raise _file_problem(problem, full) from None
    return parse(text)


def _file_problem(problem: TextFileProblem, full: Path) -> DocumentProblem:
    """The rule file's own wording of why it cannot be read."""
    if problem.kind == "missing":
        return DocumentProblem("SDPX-VAL-003", f"no such file (looked for {full})")
    if problem.kind == "unreadable":
        return DocumentProblem("SDPX-VAL-003", f"cannot read the file: {problem.detail}")
    if problem.kind == "directory":
        return DocumentProblem("SDPX-VAL-003", "this is a directory, not a rule file")
    if problem.kind == "not_regular":
        return DocumentProblem("SDPX-VAL-003", "this is not a regular file")
    if problem.kind == "too_big":
        return DocumentProblem(
            "SDPX-VAL-009",
            f"the file has {problem.size} bytes or more; a rule file may have at most "
            f"{MAX_FILE_BYTES} bytes (10 MiB)",
            "split the rules into several files",
        )
    if problem.kind == "utf16":
        return DocumentProblem("SDPX-VAL-009", "the file is UTF-16 text", "save it as UTF-8")
    if problem.kind == "nul":
        return DocumentProblem(
            "SDPX-VAL-009",
            f"the file contains a NUL byte (line {problem.line}): it is binary, not YAML or "
            "JSON text",
            "name a rule file: UTF-8 text in YAML or JSON",
        )
    return DocumentProblem(
        "SDPX-VAL-009", f"the file is not UTF-8 text (invalid byte at line {problem.line})",
        "save the file as UTF-8",
    )


# --------------------------------------------------------------------------- YAML


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


def _limit(detail: str, mark: Any, fix: str) -> DocumentProblem:
    return DocumentProblem("SDPX-VAL-009", f"{detail} (line {mark.line + 1})", fix)


def _too_deep(mark: Any) -> DocumentProblem:
    return _limit(f"the document nests more than {MAX_DEPTH} levels deep", mark, _DEPTH_FIX)


class _TrackingConstructor(_SafeConstructor):  # type: ignore[misc, unused-ignore]
    """The safe constructor, remembering keys written twice in one mapping."""

    def _init_tracking(self) -> None:
        self.duplicates: dict[int, list[Duplicate]] = {}

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
                self.duplicates.setdefault(id(data), []).append(Duplicate(key, where))
            else:
                seen[key] = line

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:
            line = node.start_mark.line + 1
            raise DocumentProblem("SDPX-VAL-009", f"not valid YAML: {_one_line(exc)} "
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
    """The loader class, parsing events with libyaml (fast, in C) when ``libyaml``, else
    with PyYAML's own parser (PyYAML may be built without libyaml)."""
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


def _parse_yaml(text: str) -> Document:
    loader = _YamlLoader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    return Document(data, loader.duplicates)


def _yaml_problem(exc: Exception) -> DocumentProblem:
    """The SDPX-VAL-009 problem for an exception raised while reading YAML."""
    if isinstance(exc, yaml.MarkedYAMLError):
        if exc.problem == "but found another document":
            return DocumentProblem(
                "SDPX-VAL-009", "the file holds more than one YAML document (a '---' line "
                "separates them)", "keep one document per rule file")
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        fix = _TAG_FIX if "constructor for the tag" in problem else None
        return DocumentProblem("SDPX-VAL-009", f"not valid YAML: {problem}{where}", fix)
    if isinstance(exc, yaml.reader.ReaderError):
        return DocumentProblem("SDPX-VAL-009", f"not valid YAML: character "
                                f"#x{exc.character:04x} at offset {exc.position}: {exc.reason}")
    return DocumentProblem("SDPX-VAL-009", f"not valid YAML: {_one_line(exc)}")


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


def _parse_json(text: str) -> Document:
    depth = _json_depth(text)
    if depth > MAX_DEPTH:
        raise DocumentProblem("SDPX-VAL-009", f"the document nests {depth} levels deep; "
                               f"at most {MAX_DEPTH} are allowed", _DEPTH_FIX)
    duplicates: dict[int, list[Duplicate]] = {}

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                duplicates.setdefault(id(obj), []).append(Duplicate(key, ""))
            obj[key] = value
        return obj

    data = json.loads(text, object_pairs_hook=build, parse_int=_json_int)
    return Document(data, duplicates)


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    return f"not valid JSON: {_one_line(exc)}"


def parse(text: str) -> Document:
    """Parse JSON when the text starts like JSON, else (or when JSON fails) YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return _parse_json(text)
        except DocumentProblem:
            raise
        except Exception as exc:  # any parser failure is a document error
            json_error = _json_problem(exc)
        try:  # YAML flow style ({a: b}) starts like JSON too
            return _parse_yaml(text)
        except Exception:
            raise DocumentProblem("SDPX-VAL-009", json_error) from None
    try:
        return _parse_yaml(text)
    except DocumentProblem:
        raise
    except Exception as exc:
        raise _yaml_problem(exc) from None
