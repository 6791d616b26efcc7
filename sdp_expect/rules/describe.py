"""Short, safe renderings of parsed values for messages: ``'id > 0'``, ``an integer``, ``a list``.

A rule file is input, so a value is never walked or rendered whole: a huge
integer or a long text is shortened, a container named by its kind.
"""

from __future__ import annotations

import datetime

from sdp_expect.rules.document import MAX_NUMBER_DIGITS

__all__ = ["describe", "is_scalar", "key_label", "kind_of"]


def describe(value: object) -> str:
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
    return kind_of(value)


def kind_of(value: object) -> str:
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


def is_scalar(value: object) -> bool:
    """True for values that quoting would turn into the intended text."""
    return value is None or isinstance(value, (bool, int, float, str, datetime.date))


def key_label(key: object) -> str:
    """The rule label for a mapping key: ``rule 'total_price >= 0'``, ``rule with key 1``."""
    return f"rule {describe(key)}" if isinstance(key, str) else f"rule with key {describe(key)}"
