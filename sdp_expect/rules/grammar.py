"""The grammar of a rule file: walking a parsed document into rules and errors, in file order.

``docs/rule-files.md`` describes the three formats (mapping, list, grouped),
optionally under a top-level ``expectations:`` key. :class:`Reader` reports
every mistake it meets and goes on, up to :data:`MAX_ERRORS`.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any, Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.core.model import (
    DECORATORS,
    GROUP_DECORATORS,
    Action,
    Aggregate,
    DatasetCheck,
    Expectation,
    Reference,
    RowCount,
    RuleNames,
    UniqueKey,
    WholeCheck,
    either,
    make_expectation,
    parse_action,
)
from sdp_expect.rules.describe import describe, is_scalar, key_label, kind_of
from sdp_expect.rules.document import Document
from sdp_expect.rules.errors import RuleError, RuleFileError

__all__ = ["MAX_ERRORS", "RuleEntry", "RuleFileCheck", "Reader", "StopReading"]

MAX_ERRORS = 1000
"""Checking a file stops after this many errors (a huge broken file must not exhaust memory)."""

_GROUPS: dict[str, Action] = {**DECORATORS, **GROUP_DECORATORS}
_TYPES = DECORATORS
_WRAPPER = "expectations"
_LIST_KEYS = ("name", "message", "constraint", "expression", "failureAction", "type", "tag",
              "tags", "max_failed", "action", "unique", "references", "row_count",
              "aggregate")
_REFERENCE_KEYS = ("dataset", "columns", "to")
_ROW_COUNT_KEYS = ("min", "max")
_RULE_KINDS = ("unique", "references", "row_count", "aggregate")
"""The keys that give a rule in place of a constraint (docs/dataset-rules.md,
docs/row-count-rules.md, docs/aggregate-rules.md)."""
_MAPPING_KEYS = ("action", "name", "failureAction", "type", "max_failed")


class StopReading(Exception):
    """:data:`MAX_ERRORS` errors were found; the rest of the file is not checked."""


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
    """What :func:`~sdp_expect.rules.check_file` found in one file.

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


class Reader:
    """Walks a parsed document, collecting rules and errors in file order."""

    def __init__(self, file: str, dataset: Optional[str], document: Document) -> None:
        self.file = file
        self.dataset = dataset
        self.duplicates = document.duplicates
        self.errors: list[RuleError] = []
        self.entries: list[RuleEntry] = []
        self.names = RuleNames()
        self.rules = 0
        self.warnings: list[str] = []
        self.group: Optional[str] = None

    def error(self, code: str, detail: str, place: Optional[Location] = None,
              fix: Optional[str] = None, expectation: Optional[str] = None) -> None:
        """Record one error (``place`` None: of the whole file); stop reading once there
        are :data:`MAX_ERRORS`."""
        self.errors.append(RuleError(code, detail, place=place or Location(self.file),
                                     dataset=self.dataset, expectation=expectation, fix=fix))
        if len(self.errors) >= MAX_ERRORS:
            raise StopReading

    def not_text(self, what: str, value: object, place: Optional[Location],
                 example: str) -> None:
        """Report SDPX-VAL-008 for ``value``, which must be text.

        :param what: What holds the value, e.g. ``'name'`` or ``'the constraint key'``.
        :param example: How the quoted value is written, with ``{}`` for the value.
        """
        if is_scalar(value):
            shown = describe(value)
            noun = "key" if "key" in what else "value"
            self.error("SDPX-VAL-008", f"{what} is {shown} ({kind_of(value)}), not text", place,
                       fix=f"quote the {noun} so that it is read as text: "
                       + example.format(f'"{shown}"'))
        else:
            self.error("SDPX-VAL-008", f"{what} is {kind_of(value)}, not text", place,
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
                       f"top-level keys ({', '.join(describe(k) for k in others[:5])})",
                       fix="put every rule under 'expectations:' and remove the other keys")
        inner = data[_WRAPPER]
        if isinstance(inner, (list, dict)):
            return inner
        self.error("SDPX-VAL-008", f"'expectations:' holds {describe(inner)}; it must hold "
                   "a mapping or a list of rules",
                   fix="put the rules under 'expectations:', indented, or remove the key")
        return None

    def check_duplicates(self, mapping: dict[Any, Any], place: Optional[Location]) -> None:
        """Report keys written twice in a mapping that is not a list of rules (SDPX-VAL-009)."""
        for dup in self.duplicates.get(id(mapping), []):
            where = f" ({dup.where})" if dup.where else ""
            self.error("SDPX-VAL-009", f"the key {describe(dup.key)} is written more than "
                       f"once in one mapping{where}; only the last would be kept", place,
                       fix="remove or rename the repeated key")

    def check_body(self, body: dict[Any, Any], place: Location, known: tuple[str, ...]) -> None:
        """Check the mapping of one rule: no repeated keys, every key text.

        A key that is not in ``known`` is ignored, as the grammar says nothing of
        it, but recorded as a warning (with the known key it most resembles).
        """
        self.check_duplicates(body, place)
        for key in body:
            if not isinstance(key, str):
                self.not_text("the key", key, place, "{}")
            elif key not in known:
                self.warnings.append(_unknown_key_warning(place, key, known))

    def repeated(self, mapping: dict[Any, Any]) -> dict[object, str]:
        """The keys of a mapping of rules that are written more than once, with where."""
        return {d.key: d.where for d in self.duplicates.get(id(mapping), [])}

    def repeated_key(self, what: str, key: object, where: str, place: Location) -> None:
        lines = f" ({where})" if where else ""
        self.error("SDPX-VAL-071", f"the {what} {describe(key)} is a key more than once"
                   f"{lines}; a mapping keeps only the last, so a rule would be lost", place,
                   fix=f"write each {what} once; to check one constraint under two names, "
                   "use the list format")

    # -- the list format -------------------------------------------------------------

    def read_list(self, items: list[Any]) -> None:
        for index, entry in enumerate(items, start=1):
            self.rules += 1
            place = Location(self.file, rule=index)
            if not isinstance(entry, dict):
                self.error("SDPX-VAL-008", f"the rule is {describe(entry)}, not a mapping",
                           place, fix="write each list entry as a mapping with constraint "
                           "and name, e.g. '- name: valid_id' / '  constraint: id IS NOT NULL'")
                continue
            self.read_list_entry(entry, place)

    def read_list_entry(self, entry: dict[Any, Any], place: Location) -> None:
        before = len(self.errors)
        self.check_body(entry, place, _LIST_KEYS)
        action = self.list_action(entry, place)
        constraint, bad_constraint = self.text_field(entry, ("constraint", "expression"), place)
        name, bad_name = self.text_field(entry, ("name", "message"), place)
        tags = self.tags(entry, place)
        key_rule, bad_key = self.key_rule(entry, place, constraint is not None or bad_constraint)
        if bad_key:
            return
        if key_rule is not None:
            self.build(place, name, key_rule, action, tags,
                       ok=len(self.errors) == before, claim=not bad_name,
                       max_failed=entry.get("max_failed"))
        elif not bad_constraint:
            self.build(place, name, constraint, action, tags,
                       ok=len(self.errors) == before, claim=not bad_name,
                       max_failed=entry.get("max_failed"))

    def key_rule(self, entry: dict[Any, Any], place: Location, has_constraint: bool
                 ) -> tuple[Optional[DatasetCheck | WholeCheck], bool]:
        """The entry's rule in place of a constraint: a key rule (``unique: [cols]`` or
        ``references: {dataset, columns, to}``, docs/dataset-rules.md), a row count
        (``row_count: {min, max}``) or an aggregate (``aggregate: "sum(a) > 0"``); and
        whether it is malformed (an error reported). A null value counts as absent."""
        given = [key for key in _RULE_KINDS if entry.get(key) is not None]
        if not given:
            return None, False
        if has_constraint or len(given) > 1:
            both = ["constraint", *given] if has_constraint else given
            self.error("SDPX-VAL-017", f"the rule has {' and '.join(both)}", place,
                       fix="give each rule one of constraint, unique, references, row_count "
                       "and aggregate: write two rules to check two things")
            return None, True
        if given == ["row_count"]:
            return self.row_count(entry["row_count"], place)
        if given == ["aggregate"]:
            expression = entry["aggregate"]
            if not isinstance(expression, str):
                self.not_text("aggregate", expression, place, "aggregate: {}")
                return None, True
            return Aggregate(expression), False
        if given == ["unique"]:
            columns = self.column_list(entry["unique"], "unique", place)
            return (None, True) if columns is None else (UniqueKey(columns), False)
        body = entry["references"]
        if not isinstance(body, dict):
            self.error("SDPX-VAL-008", f"references is {kind_of(body)}, not a mapping", place,
                       fix="write references: {dataset: customers, columns: [customer_id]} "
                       "(and to: [id] when the referenced columns have other names)")
            return None, True
        self.check_body(body, place, _REFERENCE_KEYS)
        columns = self.column_list(body.get("columns", []), "references' columns", place)
        to = (columns if body.get("to") is None
              else self.column_list(body["to"], "references' to", place))
        if columns is None or to is None:
            return None, True
        return Reference(body.get("dataset"), columns, to), False  # type: ignore[arg-type]

    def row_count(self, body: object, place: Location) -> tuple[Optional[RowCount], bool]:
        """``row_count: {min, max}`` (docs/row-count-rules.md): the bounds are checked by
        the model (SDPX-VAL-018); a whole number written with a point (``1.0``) is that
        number, as JSON reads it."""
        if not isinstance(body, dict):
            self.error("SDPX-VAL-008", f"row_count is {kind_of(body)}, not a mapping", place,
                       fix="write row_count: {min: 1} or row_count: {min: 1, max: 10000000}")
            return None, True
        self.check_body(body, place, _ROW_COUNT_KEYS)

        def bound(value: Any) -> Any:
            return int(value) if isinstance(value, float) and value.is_integer() else value

        return RowCount(bound(body.get("min")), bound(body.get("max"))), False

    def column_list(self, value: object, what: str, place: Location
                    ) -> Optional[tuple[str, ...]]:
        """A key's columns: a list (its items are checked by the model, SDPX-VAL-014/-015);
        None after an error for anything else."""
        if value is None:
            return ()
        if not isinstance(value, list):
            self.error("SDPX-VAL-008", f"{what} is {kind_of(value)}, not a list of column "
                       "names", place, fix=f"write {what.split(chr(39))[0]} as a list, e.g. "
                       "[order_id] or [region, order_id]")
            return None
        return tuple(value)

    def list_action(self, entry: dict[Any, Any], place: Location) -> Action:
        if "action" in entry:
            self.error("SDPX-VAL-006", "a list entry takes failureAction, not action (action "
                       "belongs to the mapping format)", place,
                       fix=f"write failureAction: {_action_hint(entry['action'])}")
        chosen = None
        failure = entry.get("failureAction")
        if failure is not None:
            chosen = self.parse_action(failure, "failureAction", place)
        kind = entry.get("type")
        if kind is not None:
            typed = _TYPES.get(kind.strip().lower()) if isinstance(kind, str) else None
            if typed is None:
                self.error("SDPX-VAL-006", f"unknown type {describe(kind)}", place,
                           fix=f"use type {either(_TYPES)}, or failureAction {either(Action)}")
            chosen = chosen or typed
        return chosen or Action.WARN

    def parse_action(self, value: object, key: str, place: Location) -> Optional[Action]:
        try:
            return parse_action(value)
        except SdpExpectError:
            self.error("SDPX-VAL-006", f"unknown {key} {describe(value)}", place,
                       fix=f"use {key}: {either(Action)}")
            return None

    def text_field(self, entry: dict[Any, Any], keys: tuple[str, ...],
                   place: Location) -> tuple[Optional[str], bool]:
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
                self.not_text(key, value, place, key + ": {}")
                bad = True
            elif found is None:
                found = value
        return found, bad

    def tags(self, entry: dict[Any, Any], place: Location) -> tuple[str, ...]:
        tags: list[str] = []
        tag = entry.get("tag")
        if tag is not None and not isinstance(tag, str):
            self.not_text("tag", tag, place, "tag: {}")
        elif tag is not None:
            tags.append(tag)
        many = entry.get("tags")
        if many is None:
            return tuple(tags)
        if not isinstance(many, list) or not all(isinstance(t, str) for t in many):
            self.error("SDPX-VAL-008", f"tags is {kind_of(many)}; it must be a list of text",
                       place, fix="write tags as a list of strings, e.g. tags: [finance, daily]")
            return tuple(tags)
        return tuple(tags + many)

    # -- the mapping format ----------------------------------------------------------

    def read_mapping(self, mapping: dict[Any, Any]) -> None:
        repeated = self.repeated(mapping)
        for key, body in mapping.items():
            self.rules += 1
            place = Location(self.file, label=key_label(key))
            before = len(self.errors)
            if key in repeated:
                self.repeated_key("constraint", key, repeated[key], place)
            if not isinstance(key, str):
                self.not_text("the constraint key", key, place, "{}")
            action, name, bad_name = self.mapping_body(body, place)
            if isinstance(key, str):
                self.build(place, name, key, action, (), ok=len(self.errors) == before,
                           claim=not bad_name,
                           max_failed=body.get("max_failed") if isinstance(body, dict) else None)

    def mapping_body(self, body: Any, place: Location) -> tuple[Action, Optional[str], bool]:
        """The action and name of a mapping-format rule, and whether the name is invalid."""
        if body is None:
            return Action.WARN, None, False
        if not isinstance(body, dict):
            hint = f" such as {{action: {_action_hint(body)}}}" if isinstance(body, str) else ""
            self.error("SDPX-VAL-008", f"the rule's value is {describe(body)}, not a mapping",
                       place, fix=f"in the mapping format the key is the constraint and the "
                       f"value a mapping{hint} with action and name, or nothing")
            return Action.WARN, None, False
        self.check_body(body, place, _MAPPING_KEYS)
        for wrong in ("failureAction", "type"):
            if wrong in body:
                self.error("SDPX-VAL-006", f"the mapping format takes action, not {wrong} "
                           f"({wrong} belongs to the list format)", place,
                           fix=f"write action: {_action_hint(body[wrong])}")
        action = body.get("action")
        parsed = Action.WARN if action is None else self.parse_action(action, "action", place)
        name, bad_name = self.text_field(body, ("name",), place)
        return parsed or Action.WARN, name, bad_name

    # -- the grouped format ----------------------------------------------------------

    def read_groups(self, groups: dict[str, Any]) -> None:
        for group, rules in groups.items():
            if not isinstance(rules, dict):
                self.error("SDPX-VAL-008", f"the group holds {describe(rules)}; it must be "
                           "a mapping of name to constraint",
                           Location(self.file, label=f"group {group!r}"),
                           fix=f"write {group}: {{name: constraint, ...}}")
                continue
            self.group = group
            self.read_group(rules, _GROUPS[group])

    def read_group(self, rules: dict[Any, Any], action: Action) -> None:
        repeated = self.repeated(rules)
        for name, constraint in rules.items():
            self.rules += 1
            place = Location(self.file, label=key_label(name))
            before = len(self.errors)
            if name in repeated:
                self.repeated_key("name", name, repeated[name], place)
            if not isinstance(name, str):
                self.not_text("the name key", name, place, "{}")
            if constraint is not None and not isinstance(constraint, str):
                self.not_text("the constraint", constraint, place, "name: {}")
            elif isinstance(name, str):
                self.build(place, name, constraint, action, (), ok=len(self.errors) == before)

    # -- one rule --------------------------------------------------------------------

    def build(self, place: Location, name: Optional[str],
              constraint: Optional[str | DatasetCheck | WholeCheck],
              action: Action, tags: tuple[str, ...], *, ok: bool, claim: bool = True,
              max_failed: object = None) -> None:
        """Check one rule's parts and keep it when the whole rule is valid.

        :param name: ``None`` names the rule by its constraint.
        :param constraint: ``None`` when the rule has none (SDPX-VAL-001); a key rule in
            place of a constraint (its text is then the default name).
        :param ok: False when an error was already reported for this rule.
        :param claim: False when the name was invalid: skip the duplicate-name check.
        :param max_failed: The rule's tolerance as written (docs/thresholds.md), or None.
        """
        if isinstance(constraint, (UniqueKey, Reference, RowCount, Aggregate)):
            if name is None:
                try:  # its text, as the metrics show it
                    name = constraint.text
                except TypeError:  # a column that is no text: SDPX-VAL-015 below
                    name = "key rule"
        elif constraint is None or not constraint.strip():
            missing = "no constraint" if constraint is None else "an empty constraint"
            self.error("SDPX-VAL-001", f"the rule has {missing}", place,
                       fix="add constraint: followed by a Spark SQL boolean expression, "
                       "e.g. constraint: \"amount >= 0\"", expectation=name)
            return
        if name is None:
            assert isinstance(constraint, str)
            name = constraint
        try:
            expectation = make_expectation(name, constraint, action, dataset=self.dataset,
                                           place=place, max_failed=max_failed)
        except SdpExpectError as exc:
            self.error(exc.code, exc.detail, place, exc.fix, exc.expectation)
            ok = False
        unique = self.claim(name, place) if claim else True
        if ok and unique:
            self.entries.append(RuleEntry(expectation, tags))

    def claim(self, name: str, place: Location) -> bool:
        """Record ``name`` for the current rule; report SDPX-VAL-071 when an earlier rule has it."""
        # Two groups of the grouped format may each have a rule of one key: say which group.
        where = place if self.group is None else dataclasses.replace(
            place, label=f"{place.part} of group {self.group!r}")
        clash = self.names.clash(name, where)
        if clash is None:
            return True
        self.error(clash.code, clash.detail, place, expectation=name,
                   fix="give each rule of the file its own name")
        return False


def _not_a_document(data: object) -> str:
    if data is None:
        return "the file holds no rules (it is empty, only comments, or null)"
    return f"the document is {describe(data)}, neither a mapping nor a list"


def _action_hint(value: object) -> str:
    """The action to suggest in a fix: the value itself when it is a known action."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in {a.value for a in Action}:
            return lowered
        if lowered in _TYPES:
            return _TYPES[lowered].value
    return either(Action)



def _unknown_key_warning(place: Location, key: str, known: tuple[str, ...]) -> str:
    """The warning for a rule key the grammar does not know (it is ignored), naming the
    rule and the known key ``key`` most resembles (a misspelt ``failureAction``)."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
    return f"{place.part}: the key {key!r} is not part of the grammar and is ignored{hint}"
