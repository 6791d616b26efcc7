"""The pipeline spec, checked as ``spark-pipelines`` reads it, before Spark starts.

``spark-pipelines`` reads the spec once its Spark Connect session is up, and stops at
the first field it refuses: a field it does not know (``PIPELINE_SPEC_UNEXPECTED_FIELD``),
a missing ``name`` or ``storage`` (``PIPELINE_SPEC_MISSING_REQUIRED_FIELD``), a
``configuration`` that is not a mapping of strings to strings (a YAML ``true`` or ``2``
unquoted), a library that is not ``glob: {include: PATH}`` or whose ``include`` is a
glob other than a file path or a folder ending in ``/**``. Each is SDPX-PRJ-407 here,
at the spec's line, with Spark's own error class in the message, all of them at once.

The rules are those of ``pyspark.pipelines.cli.unpack_pipeline_spec`` (4.1 to 4.3),
written again because importing that module loads pandas and Spark Connect's client
(1.3 to 2 s on a two-core machine), more than the whole static check may take;
``tests/test_spec_check.py`` holds the two to the same verdicts (hypothesis, with
pyspark's function as the oracle).
"""

from __future__ import annotations

import glob
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from sdp_expect.base.errors import Location, SdpExpectError

__all__ = [
    "REQUIRED_SPEC_FIELDS",
    "SPEC_FIELDS",
    "allowed_glob",
    "key_lines",
    "spec_data_problems",
    "spec_problems",
]

SPEC_FIELDS = ("name", "storage", "catalog", "database", "schema", "configuration",
               "libraries")
"""The fields ``spark-pipelines`` accepts in a spec."""
REQUIRED_SPEC_FIELDS = ("name", "storage")
"""The fields it requires."""
CODE = "SDPX-PRJ-407"


def spec_problems(spec: Path) -> list[SdpExpectError]:
    """What ``spark-pipelines`` would refuse in the spec file ``spec``, each at its line;
    none when it cannot be read as a YAML mapping (said where the spec is loaded)."""
    import yaml

    try:
        text = spec.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        lines = key_lines(yaml.compose(text))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    if not isinstance(data, dict):
        return []
    return spec_data_problems(data, lines, spec.name)


def key_lines(root: Any) -> dict[str, int]:
    """The 1-based line of each top-level key of a composed YAML document, and of each
    key of its ``configuration`` as ``configuration.KEY`` (YAML's own nodes)."""
    import yaml

    lines: dict[str, int] = {}
    if not isinstance(root, yaml.MappingNode):
        return lines
    for key_node, value_node in root.value:
        key = str(key_node.value)
        lines[key] = key_node.start_mark.line + 1
        if key == "configuration" and isinstance(value_node, yaml.MappingNode):
            for setting, _ in value_node.value:
                lines[f"configuration.{setting.value}"] = setting.start_mark.line + 1
    return lines


def spec_data_problems(data: Mapping[Any, Any], lines: Mapping[str, int],
                       shown: str) -> list[SdpExpectError]:
    """What ``spark-pipelines`` would refuse in a spec's parsed YAML ``data``.

    :param data: The spec's top-level mapping.
    :param lines: The line of each key (:func:`key_lines`).
    :param shown: The spec's name in the errors.
    """
    problems: list[SdpExpectError] = []

    def problem(text: str, key: Optional[str] = None) -> None:
        line = lines.get(key) if key is not None else None
        problems.append(SdpExpectError(CODE, text, location=Location(shown, line)))

    for key in data:
        if key not in SPEC_FIELDS:
            problem(f"the field {key!r} is not one spark-pipelines knows "
                    f"(PIPELINE_SPEC_UNEXPECTED_FIELD; it knows {', '.join(SPEC_FIELDS)})",
                    str(key))
    for key in REQUIRED_SPEC_FIELDS:
        if key not in data:
            what = ("the pipeline's name" if key == "name" else
                    "where the pipeline keeps its checkpoints, e.g. "
                    "storage: file:///path/to/pipeline-storage")
            problem(f"the spec has no {key!r}, which spark-pipelines requires "
                    f"(PIPELINE_SPEC_MISSING_REQUIRED_FIELD): {what}")
    configuration = data.get("configuration", {})
    if not isinstance(configuration, dict):
        problem(f"configuration is a {type(configuration).__name__}, not a mapping of "
                "settings (PIPELINE_SPEC_FIELD_NOT_DICT)", "configuration")
    else:
        for key, value in configuration.items():
            where = f"configuration.{key}"
            if not isinstance(key, str):
                problem(f"the configuration key {key!r} is a {type(key).__name__}, not a "
                        "string (PIPELINE_SPEC_DICT_KEY_NOT_STRING): quote it", where)
            elif not isinstance(value, str):
                problem(f"configuration {key} is the YAML {_yaml_kind(value)} "
                        f"{_yaml_text(value) or 'null'}, not a string "
                        "(PIPELINE_SPEC_DICT_VALUE_NOT_STRING): quote it "
                        f"({key}: \"{_yaml_text(value)}\")", where)
    problems.extend(_library_problems(data.get("libraries", []), lines, shown))
    return problems


def _library_problems(libraries: Any, lines: Mapping[str, int],
                      shown: str) -> list[SdpExpectError]:
    location = Location(shown, lines.get("libraries"))
    if not isinstance(libraries, list):
        return [SdpExpectError(CODE, f"libraries is a {type(libraries).__name__}, not a list "
                               "of '- glob: {include: PATH}' entries", location=location)]
    problems = []
    for number, entry in enumerate(libraries, 1):
        include = (entry.get("glob") if isinstance(entry, dict) else None)
        include = include.get("include") if isinstance(include, dict) else None
        if not isinstance(include, str):
            problems.append(SdpExpectError(
                CODE, f"library {number} is not '- glob: {{include: PATH}}' with a text "
                "PATH (a file, or a folder ending in /**)", location=location))
        elif not allowed_glob(include):
            problems.append(SdpExpectError(
                CODE, f"library {number}'s include {include!r} is a glob spark-pipelines "
                "refuses (PIPELINE_SPEC_INVALID_GLOB_PATTERN): give a file path, or a "
                "folder ending in /** (every file below it)", location=location))
    return problems


def allowed_glob(pattern: str) -> bool:
    """Whether ``spark-pipelines`` accepts the library include ``pattern``: a path without
    wildcards, or a folder without them ending in ``/**``."""
    if not glob.has_magic(pattern):
        return True
    return pattern.endswith("/**") and not glob.has_magic(pattern[:-3])


def _yaml_kind(value: Any) -> str:
    """The YAML name of a scalar's type."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def _yaml_text(value: Any) -> str:
    """How a YAML scalar reads back as text: ``true``, not Python's ``True``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)
