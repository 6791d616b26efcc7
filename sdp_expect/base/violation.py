"""The ``[EXPECTATION_VIOLATION]``, ``[EXPECTATION_TOLERANCE_EXCEEDED]`` and
``[EXPECTATION_DATASET_RULE_FAILED]`` messages: their format and their parser, side by side.

A record that violates fail expectations stops its flow with Spark's
``raise_error`` and this message (Lakeflow's wording), on one line::

    [EXPECTATION_VIOLATION] Flow 'orders_silver' failed to meet the expectation.
    Violated expectations: 'valid_amount'. Output record: '{"order_id":3,"amount":-12.0}'.

The message is built by Spark, from the SQL that :func:`message_sql` writes
(the compiler wraps it in ``raise_error``), and read back by :func:`parse`
(``sdp-expect run`` feeds it every output line). Both follow one grammar, so
that the names and the record come back exactly as they were:

- the flow and every violated expectation are *quoted names*
  (:func:`quote`): between single quotes, with ``\\`` and ``'`` escaped by a
  backslash and control and line-separator characters written ``\\uXXXX``; a
  plain name reads as itself (``'valid_amount'``), and a name holding
  ``', '`` or a quote cannot be confused with two names or with the end of
  the list;
- violated expectations are the quoted names of the fail rules the record
  violated, in declaration order, separated by ``, ``;
- the record is ``to_json(struct(*))`` of the record (a JSON object, nulls
  kept) between single quotes; the message ends with ``'.``.

:func:`parse` accepts only text that follows this grammar to the letter: each
name in its one canonical quoted form, the record a JSON object that decodes,
and the message starting the text or after a space and followed by the end of
the text or a space. A query plan that
Spark prints when a streaming query fails holds the message *template*
(``concat([EXPECTATION_VIOLATION] Flow 'x' ... Violated expectations: ,
concat_ws(, , CASE WHEN ... END), . Output record: ', to_json(...), '.)``):
where a quoted name must follow there is SQL instead, so a plan never reads as
a violation. The round trip (format, then Spark, then parse) is tested in
``tests/test_violation_line.py``.

A fail or drop rule over its tolerance (docs/thresholds.md) stops its flow with
the second message of this module, also on one line::

    [EXPECTATION_TOLERANCE_EXCEEDED] Flow 'orders' failed: expectations over their
    tolerance: 'amount_present': 3 of 200 records failed (1.5%), more than max_failed '1%'.

written by :func:`tolerance_message_sql` (its Python twin:
:func:`format_tolerance_message`) and read back by :func:`find_tolerance_failures`,
with the same quoted names: the rules over their tolerance in declaration order,
separated by ``; ``, each with its violations, the records checked, the rate (Spark's
text of a DOUBLE, not read back: the counts say it exactly) and its tolerance as
written. The error message in Spark's event is the only channel from a failed flow
to ``sdp-expect run``; ``tests/test_tolerance_message.py`` checks that the reader is
the exact inverse of the writer.

A fail rule on the dataset as a whole (a row count or an aggregate,
docs/row-count-rules.md) that does not hold stops its flow with the third message::

    [EXPECTATION_DATASET_RULE_FAILED] Flow 'orders' failed: dataset rules not met:
    'not_empty': observed 0, expected at least 1.

written by :func:`dataset_rule_message_sql` (its Python twin:
:func:`format_dataset_rule_message`) and read back by :func:`find_dataset_rule_failures`:
the rules in declaration order, separated by ``; ``, each a quoted name with what it
observed (the record count; an aggregate's value ``true``, ``false`` or ``NULL``) and
what it expects (a row count's bounds, ``at least 1``, ``at most 10``, ``at least 1 and
at most 10``; an aggregate's ``true``). ``tests/test_dataset_rule_message.py`` checks
that the reader is the exact inverse of the writer.

This module imports no pyspark (``sdp-expect run`` and ``report`` use it);
:func:`message_sql`, called by the compiler only, takes the compiler's SQL
string literal escape.
"""

from __future__ import annotations

import decimal
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, TypeVar

from sdp_expect.base.sqltokens import sql_string  # the one SQL literal escape

__all__ = [
    "RECORD_SQL",
    "TAG",
    "DATASET_RULE_TAG",
    "TOLERANCE_TAG",
    "DatasetRuleFailure",
    "DatasetRulePart",
    "ToleranceFailure",
    "TolerancePart",
    "dataset_rule_message_sql",
    "find_dataset_rule_failures",
    "find_tolerance_failures",
    "format_dataset_rule_failure",
    "format_dataset_rule_message",
    "format_tolerance_failure",
    "format_tolerance_message",
    "parse_tolerance_message",
    "rate_text",
    "tolerance_message_sql",
    "Violation",
    "find_all",
    "format_message",
    "message_sql",
    "names_text",
    "parse",
    "parse_dataset_rule_message",
    "quote",
    "record_sql",
]

TAG = "[EXPECTATION_VIOLATION]"
"""Where the message starts."""
_FLOW = f"{TAG} Flow "
_NAMES = " failed to meet the expectation. Violated expectations: "
_SEPARATOR = ", "
_RECORD = ". Output record: '"
_END = "'."
_JSON_OPTIONS = "map('ignoreNullFields', 'false')"
RECORD_SQL = f"to_json(struct(*), {_JSON_OPTIONS})"
"""The record in the message: every column, nulls included, as one JSON object."""


def record_sql(struct_column: Optional[str] = None) -> str:
    """The record in the message as SQL: :data:`RECORD_SQL`, or, where the record is one
    struct column of the relation (``_sdpx_rec`` beside the key rules' columns,
    docs/dataset-rules.md), that struct alone, so that the message shows the record's
    own columns and nothing sdp-expect added."""
    if struct_column is None:
        return RECORD_SQL
    return f"to_json({struct_column}, {_JSON_OPTIONS})"

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
"""Characters written as ``\\uXXXX`` in a quoted name: controls, surrogates, line breaks."""
_QUOTED = re.compile(r"'((?:[^'\\]|\\\\|\\'|\\u[0-9a-f]{4})*)'")
_ESCAPE = re.compile(r"\\(\\|'|u[0-9a-f]{4})")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Violation:
    """A record that violated fail expectations, as its message says.

    :param dataset: The dataset whose flow failed.
    :param expectations: The fail expectations the record violated, in declaration order.
    :param record: The record as Spark wrote it: JSON text of one object.
    """

    dataset: str
    expectations: tuple[str, ...]
    record: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "expectations", tuple(self.expectations))

    def record_value(self) -> Any:
        """The record parsed from its JSON text, else the text itself."""
        try:
            return json.loads(self.record)
        except ValueError:
            return self.record


# --------------------------------------------------------------------------- the format


def quote(name: str) -> str:
    """``name`` as a quoted name of the message: ``'it\\'s'``; decoded by :func:`parse`."""
    out = []
    for char in name:
        if char in "\\'":
            out.append("\\" + char)
        elif unicodedata.category(char) in _ESCAPED_CATEGORIES:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "'" + "".join(out) + "'"


def names_text(names: Sequence[str]) -> str:
    """Names as the message lists them: ``'a', 'b'``."""
    return _SEPARATOR.join(quote(name) for name in names)


def _head(dataset: str) -> str:
    return f"{_FLOW}{quote(dataset)}{_NAMES}"


def format_message(violation: Violation) -> str:
    """The message Spark raises for ``violation`` (what :func:`message_sql` builds)."""
    return (f"{_head(violation.dataset)}{names_text(violation.expectations)}"
            f"{_RECORD}{violation.record}{_END}")


def message_sql(dataset: str, checks: Sequence[tuple[str, str]],
                record: str = RECORD_SQL) -> str:
    """The SQL expression (STRING) of the message for the current record.

    :param dataset: The dataset the flow writes.
    :param checks: Per fail expectation, in declaration order: the SQL condition that is
        TRUE when the record violates it (never NULL), and its name.
    :param record: The SQL of the record's JSON text (:func:`record_sql`).
    """
    names = ", ".join(f"CASE WHEN {condition} THEN {sql_string(quote(name))} END"
                      for condition, name in checks)
    return (f"concat({sql_string(_head(dataset))}, concat_ws({sql_string(_SEPARATOR)}, {names}), "
            f"{sql_string(_RECORD)}, {record}, {sql_string(_END)})")


# --------------------------------------------------------------------------- tolerances

TOLERANCE_TAG = "[EXPECTATION_TOLERANCE_EXCEEDED]"
"""Where the message of a tolerance exceeded starts (docs/thresholds.md)."""
_TOLERANCE_HEAD = " failed: expectations over their tolerance: "
_PART_SEPARATOR = "; "


@dataclass(frozen=True)
class TolerancePart:
    """One rule over its tolerance, as the message says it.

    :param name: The rule.
    :param failed: The records that violated it.
    :param total: The records checked.
    :param tolerance: Its tolerance as written (``"1%"``, ``"10"``).
    """

    name: str
    failed: int
    total: int
    tolerance: str


@dataclass(frozen=True)
class ToleranceFailure:
    """A flow failed by rules over their tolerance, as its message says.

    :param dataset: The dataset whose flow failed.
    :param parts: The fail and drop rules over their tolerance, in declaration order.
    """

    dataset: str
    parts: tuple[TolerancePart, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))


def rate_text(failed: int, total: int) -> str:
    """The rate as :func:`tolerance_message_sql` writes it: percent, rounded to 3 places
    as Spark's ``round`` of a DOUBLE prints it.

    Spark rounds the DOUBLE's shortest decimal text half up (``BigDecimal(d).setScale(3,
    HALF_UP)``); Python's ``round`` rounds the binary value half to even, which differs
    on ties (1 of 64 records is 1.5625 %: Spark writes ``1.563%``).
    """
    if not total:
        return "0.0%"
    exact = decimal.Decimal(repr(failed * 100 / total))
    return f"{float(exact.quantize(_THOUSANDTH, rounding=decimal.ROUND_HALF_UP))!r}%"


_THOUSANDTH = decimal.Decimal("0.001")


def format_tolerance_message(dataset: str, parts: Sequence[TolerancePart]) -> str:
    """The message Spark raises when the rules ``parts`` are over their tolerance (what
    :func:`tolerance_message_sql` builds)."""
    said = _PART_SEPARATOR.join(
        f"{quote(p.name)}: {p.failed} of {p.total} records failed "
        f"({rate_text(p.failed, p.total)}), more than max_failed {quote(p.tolerance)}"
        for p in parts)
    return f"{TOLERANCE_TAG} Flow {quote(dataset)}{_TOLERANCE_HEAD}{said}."


def format_tolerance_failure(failure: ToleranceFailure) -> str:
    """The message of ``failure`` (:func:`format_tolerance_message`); read back by
    :func:`parse_tolerance_message`."""
    return format_tolerance_message(failure.dataset, failure.parts)


def tolerance_message_sql(dataset: str, checks: Sequence[tuple[str, str, str, str]],
                          total: str) -> str:
    """The SQL expression (STRING) of the message for the one-row counts of a flow.

    :param dataset: The dataset the flow writes.
    :param checks: Per fail or drop rule with a tolerance, in declaration order: the SQL
        condition that is TRUE when it is exceeded, the rule's name, the SQL of its
        violation count (BIGINT), and its tolerance as written.
    :param total: The SQL of the records checked (BIGINT).
    """
    parts = ", ".join(
        f"CASE WHEN {condition} THEN concat({sql_string(quote(name) + ': ')}, "
        f"CAST({failed} AS STRING), ' of ', CAST({total} AS STRING), ' records failed (', "
        f"CAST(round(CAST({failed} AS DOUBLE) * 100 / {total}, 3) AS STRING), "
        f"'%), more than max_failed ', {sql_string(quote(tolerance))}) END"
        for condition, name, failed, tolerance in checks)
    head = f"{TOLERANCE_TAG} Flow {quote(dataset)}{_TOLERANCE_HEAD}"
    return (f"concat({sql_string(head)}, concat_ws({sql_string(_PART_SEPARATOR)}, {parts}), "
            "'.')")


# --------------------------------------------------------------------------- dataset rules

DATASET_RULE_TAG = "[EXPECTATION_DATASET_RULE_FAILED]"
"""Where the message of a fail rule on the dataset as a whole starts
(docs/row-count-rules.md)."""
_DATASET_RULE_HEAD = " failed: dataset rules not met: "


@dataclass(frozen=True)
class DatasetRulePart:
    """One fail rule on the dataset as a whole that does not hold, as the message says it.

    :param name: The rule.
    :param observed: What it observed: the record count (``"0"``), an aggregate's value
        (``"true"``, ``"false"``), or None for NULL.
    :param expected: What it expects: a row count's bounds (``"at least 1"``, ``"at most
        10"``, ``"at least 1 and at most 10"``), an aggregate's ``"true"``.
    """

    name: str
    observed: Optional[str]
    expected: str


@dataclass(frozen=True)
class DatasetRuleFailure:
    """A flow failed by fail rules on the dataset as a whole, as its message says.

    :param dataset: The dataset whose flow failed.
    :param parts: The rules that do not hold, in declaration order.
    """

    dataset: str
    parts: tuple[DatasetRulePart, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))


def format_dataset_rule_message(
        dataset: str,
        parts: Sequence[DatasetRulePart | tuple[str, Optional[str], str]]) -> str:
    """The message Spark raises when the fail rules on the dataset as a whole ``parts``
    (each a :class:`DatasetRulePart` or its ``(name, observed or None, expected)``) do not
    hold (what :func:`dataset_rule_message_sql` builds)."""
    said = _PART_SEPARATOR.join(
        f"{quote(name)}: observed {'NULL' if observed is None else observed}, "
        f"expected {expected}"
        for name, observed, expected in (
            (p.name, p.observed, p.expected) if isinstance(p, DatasetRulePart) else p
            for p in parts))
    return f"{DATASET_RULE_TAG} Flow {quote(dataset)}{_DATASET_RULE_HEAD}{said}."


def format_dataset_rule_failure(failure: DatasetRuleFailure) -> str:
    """The message of ``failure`` (:func:`format_dataset_rule_message`); read back by
    :func:`find_dataset_rule_failures`."""
    return format_dataset_rule_message(failure.dataset, failure.parts)


def dataset_rule_message_sql(dataset: str,
                             checks: Sequence[tuple[str, str, str, str]]) -> str:
    """The SQL expression (STRING) of the message for the one-row counts of a flow.

    :param dataset: The dataset the flow writes.
    :param checks: Per fail rule on the dataset as a whole, in declaration order: the SQL
        condition that is TRUE when it does not hold, the rule's name, the SQL (STRING)
        of what it observed, and what it expects, as text.
    """
    parts = ", ".join(
        f"CASE WHEN {condition} THEN concat({sql_string(quote(name) + ': observed ')}, "
        f"coalesce({observed}, 'NULL'), {sql_string(', expected ' + expected)}) END"
        for condition, name, observed, expected in checks)
    head = f"{DATASET_RULE_TAG} Flow {quote(dataset)}{_DATASET_RULE_HEAD}"
    return (f"concat({sql_string(head)}, concat_ws({sql_string(_PART_SEPARATOR)}, {parts}), "
            "'.')")


# --------------------------------------------------------------------------- the parser


def _unescape(escape: re.Match[str]) -> str:
    code = escape.group(1)
    return code if len(code) == 1 else chr(int(code[1:], 16))


def _unquote(text: str, start: int) -> Optional[tuple[str, int]]:
    """The quoted name at ``start`` and where it ends, if it is one in its canonical form."""
    found = _QUOTED.match(text, start)
    if found is None:
        return None
    name = _ESCAPE.sub(_unescape, found.group(1))
    if quote(name) != found.group(0):
        return None
    return name, found.end()


_Item = TypeVar("_Item")


def _separated(text: str, start: int,
               item_at: Callable[[str, int], Optional[tuple[_Item, int]]],
               separator: str) -> Optional[tuple[list[_Item], int]]:
    """One or more items read by ``item_at`` from ``start``, separated by ``separator``,
    and where the last ends; None when an item does not read (the list of both messages:
    the violated rules' names, the parts over their tolerance)."""
    items: list[_Item] = []
    at = start
    while True:
        item = item_at(text, at)
        if item is None:
            return None
        items.append(item[0])
        at = item[1]
        if not text.startswith(separator, at):
            return items, at
        at += len(separator)


def _parse_at(text: str, start: int) -> Optional[tuple[Violation, int]]:
    """The message starting at ``start`` and where it ends, if one starts there."""
    if not text.startswith(_FLOW, start):
        return None
    flow = _unquote(text, start + len(_FLOW))
    if flow is None or not text.startswith(_NAMES, flow[1]):
        return None
    listed = _separated(text, flow[1] + len(_NAMES), _unquote, _SEPARATOR)
    if listed is None:
        return None
    names, at = listed
    if not text.startswith(_RECORD, at):
        return None
    at += len(_RECORD)
    try:
        record, end = _DECODER.raw_decode(text, at)
    except ValueError:
        return None
    if not isinstance(record, dict) or not text.startswith(_END, end):
        return None
    after = end + len(_END)
    if after < len(text) and not text[after].isspace():
        return None
    return Violation(dataset=flow[0], expectations=tuple(names), record=text[at:end]), after


_Message = TypeVar("_Message")


def _find_each(text: str, tag: str,
               message_at: Callable[[str, int], Optional[tuple[_Message, int]]]) -> list[_Message]:
    """Every message read by ``message_at`` where ``tag`` starts the text or follows a
    space, once each, in order (the one search loop of the three readers); where it does
    not read, the search goes on after the tag."""
    found: list[_Message] = []
    at = text.find(tag)
    while at >= 0:
        parsed = message_at(text, at) if at == 0 or text[at - 1].isspace() else None
        if parsed is None:
            at = text.find(tag, at + 1)
            continue
        message, end = parsed
        if message not in found:
            found.append(message)
        at = text.find(tag, end)
    return found


def _ends_message(text: str, at: int) -> Optional[int]:
    """Where a message that ends with ``.`` at ``at`` ends, if the ``.`` is there and is
    followed by the end of the text or a space."""
    if not text.startswith(".", at):
        return None
    after = at + 1
    if after < len(text) and not text[after].isspace():
        return None
    return after


def find_all(text: str) -> list[Violation]:
    """Every violation message in ``text``, once each, in order.

    A message starts at ``[EXPECTATION_VIOLATION]`` at the start of the text or
    after a space; text that does not follow the grammar (a query plan quoting
    the message's SQL) is skipped, and so is anything inside a record.
    """
    return _find_each(text, TAG, _parse_at)


def parse(text: str) -> Optional[Violation]:
    """The first violation message in ``text`` (one output line, or an error message)."""
    found = find_all(text)
    return found[0] if found else None


# --------------------------------------------------------------------------- the tolerance parser

_TOLERANCE_FLOW = f"{TOLERANCE_TAG} Flow "
_COUNT = re.compile(r"0|[1-9][0-9]*")
_RATE = re.compile(r" \(([0-9]+(?:\.[0-9]+)?(?:E-?[0-9]+)?)%\), more than max_failed ")
"""The rate between the counts and the tolerance: Spark's text of a DOUBLE (not read: the
counts say it exactly)."""


def _count_at(text: str, start: int) -> Optional[tuple[int, int]]:
    found = _COUNT.match(text, start)
    if found is None:
        return None
    return int(found.group(0)), found.end()


def _tolerance_part_at(text: str, start: int) -> Optional[tuple[TolerancePart, int]]:
    """One ``'rule': F of T records failed (R%), more than max_failed 'tolerance'``."""
    name = _unquote(text, start)
    if name is None or not text.startswith(": ", name[1]):
        return None
    failed = _count_at(text, name[1] + 2)
    if failed is None or not text.startswith(" of ", failed[1]):
        return None
    total = _count_at(text, failed[1] + 4)
    if total is None or not text.startswith(" records failed", total[1]):
        return None
    rate = _RATE.match(text, total[1] + len(" records failed"))
    if rate is None:
        return None
    tolerance = _unquote(text, rate.end())
    if tolerance is None:
        return None
    return TolerancePart(name[0], failed[0], total[0], tolerance[0]), tolerance[1]


def _flow_message_at(text: str, start: int, flow: str, head: str,
                     part_at: Callable[[str, int], Optional[tuple[_Item, int]]]
                     ) -> Optional[tuple[str, tuple[_Item, ...], int]]:
    """A ``<tag> Flow '<dataset>'<head><part>; <part>.`` message starting at ``start``
    (``flow`` is the tag and `` Flow ``): its dataset, its parts (each read by
    ``part_at``) and where it ends; None when none starts there."""
    if not text.startswith(flow, start):
        return None
    dataset = _unquote(text, start + len(flow))
    if dataset is None or not text.startswith(head, dataset[1]):
        return None
    listed = _separated(text, dataset[1] + len(head), part_at, _PART_SEPARATOR)
    if listed is None:
        return None
    parts, at = listed
    after = _ends_message(text, at)
    if after is None:
        return None
    return dataset[0], tuple(parts), after


def _tolerance_at(text: str, start: int) -> Optional[tuple[ToleranceFailure, int]]:
    """The tolerance message starting at ``start`` and where it ends, if one starts there."""
    found = _flow_message_at(text, start, _TOLERANCE_FLOW, _TOLERANCE_HEAD, _tolerance_part_at)
    if found is None:
        return None
    return ToleranceFailure(dataset=found[0], parts=found[1]), found[2]


def find_tolerance_failures(text: str) -> list[ToleranceFailure]:
    """Every ``[EXPECTATION_TOLERANCE_EXCEEDED]`` message in ``text``, once each, in order.

    The reader of what :func:`tolerance_message_sql` makes Spark raise (and
    :func:`format_tolerance_message` writes), by the grammar of :func:`find_all`: a
    message starts at the tag at the start of the text or after a space, names are
    quoted names in their canonical form, counts are digits without leading zeros, and
    the message ends with ``.`` before the end of the text or a space. Text that does
    not follow it (a query plan quoting the message's SQL) is skipped.
    """
    return _find_each(text, TOLERANCE_TAG, _tolerance_at)


def parse_tolerance_message(text: str) -> Optional[ToleranceFailure]:
    """The first tolerance message in ``text`` (one output line, or an error message)."""
    found = find_tolerance_failures(text)
    return found[0] if found else None


# ------------------------------------------------------------------- the dataset rule parser

_DATASET_RULE_FLOW = f"{DATASET_RULE_TAG} Flow "
_OBSERVED = re.compile(r"0|[1-9][0-9]*|true|false|NULL")
"""What a rule on the dataset as a whole observed: a record count, an aggregate's value."""
_EXPECTED = re.compile(r"true|at least (?:0|[1-9][0-9]*)(?: and at most (?:0|[1-9][0-9]*))?"
                       r"|at most (?:0|[1-9][0-9]*)")
"""What it expects: an aggregate's ``true``, a row count's bounds (``RowCount.bound_text``)."""


def _dataset_rule_part_at(text: str, start: int) -> Optional[tuple[DatasetRulePart, int]]:
    """One ``'rule': observed O, expected E``."""
    name = _unquote(text, start)
    if name is None or not text.startswith(": observed ", name[1]):
        return None
    observed = _OBSERVED.match(text, name[1] + len(": observed "))
    if observed is None or not text.startswith(", expected ", observed.end()):
        return None
    expected = _EXPECTED.match(text, observed.end() + len(", expected "))
    if expected is None:
        return None
    value = observed.group(0)
    return (DatasetRulePart(name[0], None if value == "NULL" else value, expected.group(0)),
            expected.end())


def _dataset_rule_at(text: str, start: int) -> Optional[tuple[DatasetRuleFailure, int]]:
    """The dataset rule message starting at ``start`` and where it ends, if one starts there."""
    found = _flow_message_at(text, start, _DATASET_RULE_FLOW, _DATASET_RULE_HEAD,
                             _dataset_rule_part_at)
    if found is None:
        return None
    return DatasetRuleFailure(dataset=found[0], parts=found[1]), found[2]


def find_dataset_rule_failures(text: str) -> list[DatasetRuleFailure]:
    """Every ``[EXPECTATION_DATASET_RULE_FAILED]`` message in ``text``, once each, in order.

    The reader of what :func:`dataset_rule_message_sql` makes Spark raise (and
    :func:`format_dataset_rule_message` writes), by the grammar of :func:`find_all`: a
    message starts at the tag at the start of the text or after a space, names are
    quoted names in their canonical form, an observed value is a count (digits without
    leading zeros), ``true``, ``false`` or ``NULL``, what is expected is ``true`` or a row
    count's bounds, and the message ends with ``.`` before the end of the text or a
    space. Text that does not follow it (a query plan quoting the message's SQL, a cut
    message) is skipped.
    """
    return _find_each(text, DATASET_RULE_TAG, _dataset_rule_at)


def parse_dataset_rule_message(text: str) -> Optional[DatasetRuleFailure]:
    """The first dataset rule message in ``text`` (one output line, or an error message)."""
    found = find_dataset_rule_failures(text)
    return found[0] if found else None
