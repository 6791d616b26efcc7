"""The quarantine key of a record, computed in plain Python (docs/semantics.md#quarantine):
SHA-256 of the record as one JSON object, every column in order, NULLs included.

Only for records of integers, ASCII strings and NULLs, which Python's ``json`` writes
exactly as Spark's ``to_json`` does; the laws over other types (doubles, times) say
instead that equal records share a key and different ones do not.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping


def record_key(record: Mapping[str, Any]) -> str:
    """The key Spark gives ``record`` (its columns in order)."""
    for column, value in record.items():
        assert value is None or isinstance(value, int) or (
            isinstance(value, str) and value.isascii() and value.isprintable()), (
            f"{column}={value!r}: this oracle knows integers, printable ASCII and NULL")
    text = json.dumps(dict(record), separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
