"""JSON Schemas shipped with sdp-expect, for editors.

``rule-file.schema.json`` (JSON Schema draft-07) describes rule files
(``docs/rule-files.md``): editors that read JSON Schema (VS Code's YAML and
JSON support, JetBrains IDEs) use it to complete keys and actions, show what
each key means, and mark mistakes while the file is written. ``sdp-expect
validate`` checks more than a schema can (the SQL of each constraint, names
used twice, keys written twice); ``docs/rule-files.md`` lists what.
``sdp-expect validate --schema`` prints it.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["RULE_FILE_SCHEMA", "rule_file_schema", "rule_file_schema_text"]

RULE_FILE_SCHEMA = "rule-file.schema.json"
"""The file name of the rule-file schema in this package."""


def rule_file_schema_text() -> str:
    """The rule-file JSON Schema as shipped: JSON text."""
    return resources.files(__name__).joinpath(RULE_FILE_SCHEMA).read_text(encoding="utf-8")


def rule_file_schema() -> dict[str, Any]:
    """The rule-file JSON Schema as data."""
    schema: dict[str, Any] = json.loads(rule_file_schema_text())
    return schema
