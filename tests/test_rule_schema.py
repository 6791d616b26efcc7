"""The JSON Schema of rule files (sdp_expect/schemas/rule-file.schema.json) agrees with
``sdp-expect validate``.

Every document validate accepts is valid for the schema, and every document it
rejects is invalid for it, apart from the checks a JSON Schema cannot express:
:data:`SCHEMA_CANNOT_CHECK`, each with its reason (docs/rule-files.md lists the same).
Both judge the same document: validate reads the file, and the schema is applied
to the document validate's reader made of it (YAML 1.1, as PyYAML reads it). The
documents are the grammar's fixture files, the cases below (every row of the
grammar and every error code) and generated documents (a hypothesis property).
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jsonschema
import pytest
import yaml
from cli_helpers import copy_distribution, repo_env
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sdp_expect.checks.validate import validate_paths
from sdp_expect.core.model import DECORATORS, GROUP_DECORATORS, Action
from sdp_expect.rules.document import DocumentProblem, read_document
from sdp_expect.rules.grammar import _LIST_KEYS, _MAPPING_KEYS
from sdp_expect.schemas import RULE_FILE_SCHEMA, rule_file_schema, rule_file_schema_text

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
SCHEMA = rule_file_schema()
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
DEFINITIONS: dict[str, Any] = SCHEMA["definitions"]


@dataclass(frozen=True)
class CannotCheck:
    """A check of validate that the schema cannot make.

    :param name: What is checked.
    :param codes: The error codes validate reports for it.
    :param reason: Why a JSON Schema cannot express it.
    :param duplicates_only: True when it applies only to a document with a key
        written twice in one mapping (the reader keeps them aside).
    """

    name: str
    codes: frozenset[str]
    reason: str
    duplicates_only: bool = False


SCHEMA_CANNOT_CHECK = (
    CannotCheck(
        "the SQL of a constraint", frozenset({"SDPX-VAL-010", "SDPX-VAL-011", "SDPX-VAL-019"}),
        "a constraint (a list entry's constraint, a mapping-format key, a group's value) must "
        "be one well-formed Spark SQL expression without subqueries, aggregate, window, "
        "generator or non-deterministic functions, and an aggregate rule's expression one "
        "that calls an aggregate function; a JSON Schema sees only a string, and a "
        "regular expression cannot parse SQL (nested parentheses, quoting)",
    ),
    CannotCheck(
        "names used twice", frozenset({"SDPX-VAL-071"}),
        "two rules of a file must not share a name, and a name is derived: name, else "
        "message, else the constraint, across list entries, mapping keys and groups; "
        "uniqueItems compares whole values, not one derived part of each",
    ),
    CannotCheck(
        "keys written twice", frozenset({"SDPX-VAL-009", "SDPX-VAL-071"}),
        "a key written twice in one mapping (a constraint of the mapping format, a name in "
        "a group, a key of a rule) would silently lose a rule; parsing keeps only the last "
        "value, and a schema sees the parsed document",
        duplicates_only=True,
    ),
    CannotCheck(
        "to as many as columns", frozenset({"SDPX-VAL-016"}),
        "a references rule's to must list as many columns as its columns; draft-07 cannot "
        "compare the lengths of two arrays",
    ),
    CannotCheck(
        "min at most max", frozenset({"SDPX-VAL-020"}),
        "a row_count's min must not be above its max; draft-07 cannot compare two values "
        "of a document",
    ),
)
"""What validate checks and the schema cannot: the exception list of docs/rule-files.md."""

NOT_A_DOCUMENT = CannotCheck(
    "the file itself", frozenset({"SDPX-VAL-003", "SDPX-VAL-009"}),
    "a schema judges a document; a file that cannot be read, is not UTF-8 text, is too "
    "large, is not one YAML or JSON document, nests too deep or uses !!python tags never becomes "
    "one (editors report syntax errors themselves)",
)
"""Files that are no document at all: validate rejects them, the schema has nothing to judge."""


@dataclass(frozen=True)
class Verdicts:
    """What validate and the schema say of one file."""

    codes: frozenset[str]
    """validate's error codes (empty: accepted)."""
    schema_errors: Optional[list[str]]
    """The schema's errors (empty: valid); None when the file is no document."""
    excused: frozenset[str]
    """The codes of the checks in :data:`SCHEMA_CANNOT_CHECK` that apply to this document."""
    applied: tuple[str, ...]
    """The names of those checks that explain a difference between the two."""


def verdicts(path: Path) -> Verdicts:
    report = validate_paths([path])
    codes = frozenset(e.code for e in report.errors)
    try:
        document = read_document(path)
    except DocumentProblem:
        return Verdicts(codes, None, frozenset(), (NOT_A_DOCUMENT.name,))
    found = [c for c in SCHEMA_CANNOT_CHECK if document.duplicates or not c.duplicates_only]
    excused = frozenset(code for c in found for code in c.codes)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(document.data)]
    applied = tuple(c.name for c in found if codes & c.codes) if not errors else ()
    return Verdicts(codes, errors, excused, applied)


def assert_agree(path: Path) -> Verdicts:
    """validate and the schema agree on ``path``, modulo :data:`SCHEMA_CANNOT_CHECK`."""
    got = verdicts(path)
    if got.schema_errors is None:
        assert got.codes, "validate accepted a file that is no YAML or JSON document"
        assert got.codes <= NOT_A_DOCUMENT.codes
        return got
    schema_ok = not got.schema_errors
    validate_ok_but_for_exceptions = got.codes <= got.excused
    assert schema_ok == validate_ok_but_for_exceptions, (
        f"{path.read_text(encoding='utf-8', errors='replace')!r}: validate: "
        f"{sorted(got.codes) or 'valid'}; schema: {got.schema_errors or 'valid'}"
    )
    return got


# --------------------------------------------------------------------------- the schema itself


def test_the_schema_is_a_valid_draft_7_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"


def test_the_schema_ships_in_the_package_and_validate_prints_it() -> None:
    shipped = REPO / "sdp_expect" / "schemas" / RULE_FILE_SCHEMA
    assert rule_file_schema_text() == shipped.read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "sdp_expect.cli", "validate", "--schema"],
                          capture_output=True, text=True, env=repo_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shipped.read_text(encoding="utf-8")


def test_the_built_package_ships_the_schema(tmp_path: Path) -> None:
    source = copy_distribution(tmp_path / "source")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
         "--disable-pip-version-check", "--wheel-dir", str(tmp_path / "wheel"), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "wheel").glob("sdp_expect-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read(f"sdp_expect/schemas/{RULE_FILE_SCHEMA}").decode("utf-8")
    assert shipped == rule_file_schema_text()


def words_of(definition: dict[str, Any]) -> list[str]:
    return [branch["const"] for branch in definition["anyOf"] if "const" in branch]


def any_case(words: list[str]) -> str:
    """The pattern of ``words`` in any case with spaces around (value.strip().lower())."""
    spelled = ("".join(f"[{c.upper()}{c}]" if c.isalpha() else re.escape(c) for c in word)
               for word in words)
    return rf"^\s*(?:{'|'.join(spelled)})\s*$"


def pattern_of(definition: dict[str, Any]) -> str:
    (pattern,) = [branch["pattern"] for branch in definition["anyOf"] if "pattern" in branch]
    assert isinstance(pattern, str)
    return pattern


def test_the_actions_are_the_models() -> None:
    words = [action.value for action in Action]
    assert words_of(DEFINITIONS["action"]) == words
    assert pattern_of(DEFINITIONS["action"]) == any_case(words)


def test_the_types_and_groups_are_the_models() -> None:
    types = list(DECORATORS)
    assert words_of(DEFINITIONS["decorator"]) == types
    assert pattern_of(DEFINITIONS["decorator"]) == any_case(types)
    groups = [*DECORATORS, *GROUP_DECORATORS]
    assert DEFINITIONS["groupNamesOnly"]["propertyNames"]["enum"] == groups
    assert list(DEFINITIONS["groupedFormat"]["properties"]) == groups


def test_the_keys_of_a_rule_are_the_grammars() -> None:
    # Keys outside these are ignored by the grammar (a note), and allowed by the schema.
    assert set(DEFINITIONS["listRule"]["properties"]) == set(_LIST_KEYS)
    assert set(DEFINITIONS["mappingRule"]["properties"]) == set(_MAPPING_KEYS)
    assert "additionalProperties" not in DEFINITIONS["listRule"]
    assert "additionalProperties" not in DEFINITIONS["mappingRule"]


@pytest.mark.parametrize(
    ("value", "valid"),
    [("drop", True), ("DROP", True), (" Fail\n", True), ("warn ", True), ("dropped", False),
     ("", False), ("expect_or_drop", False), ("d rop", False), (1, False)],
)
def test_an_action_in_any_case(value: object, valid: bool) -> None:
    definition = {"definitions": DEFINITIONS, "allOf": [{"$ref": "#/definitions/action"}]}
    assert jsonschema.Draft7Validator(definition).is_valid(value) is valid
    parsed = isinstance(value, str) and value.strip().lower() in {a.value for a in Action}
    assert parsed is valid


# --------------------------------------------------------------------------- the fixtures

# Every rule file of the tests and the examples: the files in their rules folders.
FIXTURE_FILES = sorted(
    path
    for root in (TESTS / "fixtures", TESTS / "corpus", REPO / "examples")
    for path in root.rglob("*.*")
    if path.is_file() and {"rules", "pipeline_rules"} & set(path.relative_to(root).parts[:-1])
)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_schema_and_validate_agree_on_the_fixture_files(path: Path) -> None:
    assert_agree(path)


def test_the_fixture_files_hold_valid_and_invalid_files() -> None:
    assert len(FIXTURE_FILES) >= 25
    outcomes = [bool(verdicts(p).codes) for p in FIXTURE_FILES]
    assert any(outcomes) and not all(outcomes)


# --------------------------------------------------------------------------- the cases
# Every row of docs/rule-files.md, each error code, and each exception: (id, text, suffix).

CASES: list[tuple[str, str, str]] = [
    # the list format
    ("list", "- {name: n, constraint: id > 0, failureAction: drop}\n", ".yml"),
    ("list-alternative-keys", "- {message: n, expression: id > 0, type: expect_or_fail}\n", ".yml"),
    ("list-both-spellings", "- {name: n, message: '', constraint: a, expression: ''}\n", ".yml"),
    ("list-name-default", "- constraint: id > 0\n", ".yml"),
    ("list-null-name-message", "- {name: null, message: m, constraint: a}\n", ".yml"),
    ("list-null-actions", "- {constraint: a, failureAction: null, type: null}\n", ".yml"),
    ("list-action-case", "- {constraint: a, failureAction: ' DROP ', type: Expect_Or_Fail}\n",
     ".yml"),
    ("list-tags", "- {name: n, constraint: a, tag: x, tags: [y, z]}\n", ".yml"),
    ("list-null-tags", "- {name: n, constraint: a, tag: null, tags: null}\n", ".yml"),
    ("list-empty-tags", "- {name: n, constraint: a, tags: []}\n", ".yml"),
    ("list-unknown-keys", "- {name: n, constraint: a, description: why, owner: {1: x}}\n", ".yml"),
    ("list-with-schema-modeline",  # docs/rule-files.md, "Editors: the JSON Schema"
     "# yaml-language-server: $schema=../.vscode/sdp-expect-rules.schema.json\n"
     "- name: valid_id\n  constraint: id IS NOT NULL\n  failureAction: drop\n", ".yml"),
    ("list-json", '[{"name": "n", "constraint": "a > 0", "failureAction": "fail"}]', ".json"),
    ("empty-list", "[]\n", ".yml"),
    # the mapping format
    ("mapping", "id > 0:\n  action: fail\n  name: positive\n", ".yml"),
    ("mapping-null-body", "id > 0:\nid < 9: null\n", ".yml"),
    ("mapping-null-action-name", "id > 0: {action: null, name: null}\n", ".yml"),
    ("mapping-action-case", "id > 0: {action: Warn}\n", ".yml"),
    ("mapping-unknown-keys", "a > 0: {action: fail, severity: [high]}\n", ".yml"),
    ("mapping-group-name-as-key", "expect_or_drop: {valid: id > 0}\nid IS NOT NULL:\n", ".yml"),
    ("empty-mapping", "{}\n", ".yml"),
    # the grouped format
    ("grouped", '{"expect_or_drop": {"valid_id": "id IS NOT NULL"}, "expect": {"r": "r"}}',
     ".json"),
    ("grouped-all", "expect_all_or_fail: {a: a > 0}\nexpect_all: {b: b > 0}\n", ".yml"),
    ("grouped-empty-group", "expect: {}\n", ".yml"),
    # the wrapper
    ("wrapped-list", "expectations:\n  - {name: n, constraint: a}\n", ".yml"),
    ("wrapped-mapping", "expectations:\n  a > 0: {action: drop}\n", ".yml"),
    ("wrapped-grouped", "expectations:\n  expect_or_drop: {n: a > 0}\n", ".yml"),
    ("wrapped-mapping-with-key-expectations", "expectations:\n  expectations:\n", ".yml"),
    ("wrapped-empty", "expectations: []\n", ".yml"),
    # SDPX-VAL-001
    ("001-list-missing", "- name: n\n", ".yml"),
    ("001-list-blank", "- {name: n, constraint: '  '}\n", ".yml"),
    ("001-list-null", "- {name: n, constraint: null}\n", ".yml"),
    ("001-expression-empty", "- {name: n, expression: ''}\n", ".yml"),
    ("001-constraint-empty-expression-set", "- {name: n, constraint: '', expression: a}\n",
     ".yml"),
    ("001-mapping-empty-key", "'': {action: drop}\n", ".yml"),
    ("001-mapping-blank-key", "' ': {action: drop}\n", ".yml"),
    ("001-grouped-null", "expect_or_drop: {n: null}\n", ".yml"),
    ("001-grouped-blank", "expect_or_drop: {n: ' '}\n", ".yml"),
    # SDPX-VAL-002
    ("002-list-empty-name", "- {name: '', constraint: a}\n", ".yml"),
    ("002-list-blank-message", "- {message: ' ', constraint: a}\n", ".yml"),
    ("002-mapping-empty-name", "a > 0: {name: ''}\n", ".yml"),
    ("002-grouped-blank-name", "expect: {' ': a > 0}\n", ".yml"),
    # SDPX-VAL-006
    ("006-mapping-action", "id > 0: {action: skip}\n", ".yml"),
    ("006-failure-action", "- {name: n, constraint: a, failureAction: quarantine}\n", ".yml"),
    ("006-failure-action-number", "- {name: n, constraint: a, failureAction: 1}\n", ".yml"),
    ("006-failure-action-a-type", "- {name: n, constraint: a, failureAction: expect}\n", ".yml"),
    ("006-type", "- {name: n, constraint: a, type: expect_or_explode}\n", ".yml"),
    ("006-type-group-name", "- {name: n, constraint: a, type: expect_all}\n", ".yml"),
    ("006-type-when-failure-action-wins",
     "- {name: n, constraint: a, failureAction: drop, type: nope}\n", ".yml"),
    ("006-list-action", "- {name: n, constraint: a, action: drop}\n", ".yml"),
    ("006-list-null-action", "- {name: n, constraint: a, action: null}\n", ".yml"),
    ("006-mapping-failure-action", "id > 0: {failureAction: fail}\n", ".yml"),
    ("006-mapping-type", "id > 0: {type: null}\n", ".yml"),
    # SDPX-VAL-008
    ("008-text", "just some text\n", ".yml"),
    ("008-number", "42\n", ".yml"),
    ("008-empty-file", "", ".yml"),
    ("008-comments-only", "# nothing\n", ".yml"),
    ("008-json-null", "null", ".json"),
    ("008-expectations-null", "expectations:\n", ".yml"),
    ("008-expectations-text", "expectations: rules.yml\n", ".yml"),
    ("008-expectations-beside", "expectations: []\nversion: 2\n", ".yml"),
    ("008-expectations-beside-number-key", "expectations: []\n5: x\n", ".yml"),
    ("008-list-rule-text", "- id > 0\n", ".yml"),
    ("008-list-rule-null", "- null\n", ".yml"),
    ("008-list-rule-list", "- [a, b]\n", ".yml"),
    ("008-mapping-rule-text", "id > 0: drop\n", ".yml"),
    ("008-mapping-rule-list", "id > 0: [drop]\n", ".yml"),
    ("008-name-number", "- name: 2024\n  constraint: year = 2024\n", ".yml"),
    ("008-constraint-boolean", "- name: always\n  constraint: true\n", ".yml"),
    ("008-constraint-yes", "- name: always\n  constraint: yes\n", ".yml"),
    ("008-message-number", "- {message: 12, constraint: a}\n", ".yml"),
    ("008-message-number-beside-name", "- {name: n, message: 12, constraint: a}\n", ".yml"),
    ("008-expression-float", "- {name: n, expression: 1.5}\n", ".yml"),
    ("008-expression-number-beside-constraint", "- {name: n, constraint: a, expression: 1}\n",
     ".yml"),
    ("008-name-date", "- {name: 2024-01-31, constraint: a}\n", ".yml"),
    ("008-name-binary", "- {name: !!binary aGVsbG8=, constraint: a}\n", ".yml"),
    ("008-mapping-name-number", "id > 0: {name: 7}\n", ".yml"),
    ("008-mapping-key-number", "2024: {action: drop}\n", ".yml"),
    ("008-mapping-key-boolean", "true:\n", ".yml"),
    ("008-mapping-key-null", "null: {name: n}\n", ".yml"),
    ("008-mapping-key-date", "2024-01-31:\n", ".yml"),
    ("008-rule-key-number", "- {name: n, constraint: a, 7: x}\n", ".yml"),
    ("008-mapping-rule-key-number", "a > 0: {7: x}\n", ".yml"),
    ("008-grouped-name-and-constraint", "expect: {2024: year = 2024, n: true}\n", ".yml"),
    ("008-group-list", "expect_or_drop: [id > 0]\n", ".yml"),
    ("008-group-null", "expect_or_drop:\n", ".yml"),
    ("008-group-beside-number-key", "expect: {a: a}\n1: x\n", ".yml"),
    ("008-tag-number", "- {name: n, constraint: a, tag: 5}\n", ".yml"),
    ("008-tags-text", "- {name: n, constraint: a, tags: finance}\n", ".yml"),
    ("008-tags-mixed", "- {name: n, constraint: a, tags: [finance, 3]}\n", ".yml"),
    ("008-tags-null-item", "- {name: n, constraint: a, tags: [null]}\n", ".yml"),
    ("008-set", "!!set {a: null}\n", ".yml"),
    # SDPX-VAL-010 and -011: the SQL of a constraint
    ("sql-010-subquery", "- {name: n, constraint: 'id IN (SELECT id FROM other)'}\n", ".yml"),
    ("sql-010-rand-key", "rand() > 0.5: {action: drop}\n", ".yml"),
    ("sql-010-aggregate-group", "expect: {total: sum(a) > 0}\n", ".yml"),
    ("sql-011-unclosed", "- {name: n, constraint: '(a > 0'}\n", ".yml"),
    ("sql-011-json-schema-key", '{"$schema": "rule-file.schema.json"}', ".json"),
    # tolerances (docs/thresholds.md): SDPX-VAL-012 and -013
    ("list-max-failed", "- {name: n, constraint: a, failureAction: fail, max_failed: 1%}\n"
     "- {name: m, constraint: b, max_failed: 10}\n- {name: o, constraint: c, max_failed: '10'}\n"
     "- {name: p, constraint: d, max_failed: 0.5%}\n- {name: q, constraint: e, max_failed: null}\n"
     "- {name: r, constraint: f, max_failed: 100.000000%}\n"
     "- {name: s, constraint: g, max_failed: 9223372036854775807}\n"
     "- {name: t, constraint: h, max_failed: 10.0}\n", ".yml"),
    ("mapping-max-failed", "a > 0: {action: drop, max_failed: 0}\nb > 0: {max_failed: 0%}\n",
     ".yml"),
    ("list-max-failed-json", '[{"name": "n", "constraint": "a", "max_failed": "12.25%"}]',
     ".json"),
    ("012-negative", "- {name: n, constraint: a, max_failed: -1}\n", ".yml"),
    ("012-fraction-number", "- {name: n, constraint: a, max_failed: 0.01}\n", ".yml"),
    ("012-boolean", "a > 0: {max_failed: true}\n", ".yml"),
    ("012-not-whole", "- {name: n, constraint: a, max_failed: '1.5'}\n", ".yml"),
    ("012-spaces", "- {name: n, constraint: a, max_failed: '1 %'}\n", ".yml"),
    ("012-decimals", "- {name: n, constraint: a, max_failed: 0.0000001%}\n", ".yml"),
    ("012-too-many", "- {name: n, constraint: a, max_failed: 9223372036854775808}\n", ".yml"),
    ("012-too-many-text", "- {name: n, constraint: a, max_failed: '9223372036854775808'}\n",
     ".yml"),
    ("012-list", "- {name: n, constraint: a, max_failed: [1]}\n", ".yml"),
    ("012-newline", '[{"name": "n", "constraint": "a", "max_failed": "1%\\n"}]', ".json"),
    ("013-above", "- {name: n, constraint: a, max_failed: 100.5%}\n", ".yml"),
    ("013-mapping", "a > 0: {action: fail, max_failed: 101%}\n", ".yml"),
    # SDPX-VAL-071: names used twice
    ("071-list", "- {name: n, constraint: a > 0}\n- {name: n, constraint: b > 0}\n", ".yml"),
    ("071-mapping", "a > 0: {name: n}\nb > 0: {name: n}\n", ".yml"),
    ("071-default-name", "a > 0:\nb > 0: {name: a > 0}\n", ".yml"),
    ("071-across-groups", '{"expect": {"n": "a > 0"}, "expect_or_fail": {"n": "b > 0"}}',
     ".json"),
    # keys written twice
    ("twice-mapping-key", "id > 0: {action: drop}\nid > 0: {action: fail}\n", ".yml"),
    ("twice-mapping-key-json", '{"id > 0": {"action": "drop"}, "id > 0": null}', ".json"),
    ("twice-group-name", '{"expect_or_fail": {"v": "ts IS NOT NULL", "v": "ts > 0"}}', ".json"),
    ("twice-rule-key", "- name: n\n  name: m\n  constraint: a\n", ".yml"),
    ("twice-wrapper", "expectations: []\nexpectations: []\n", ".yml"),
    # key rules (docs/dataset-rules.md)
    ("list-unique", "- {name: n, unique: [a], failureAction: drop}\n- {unique: [a, b]}\n"
     "- {name: m, unique: [c], constraint: null, max_failed: 1%}\n", ".yml"),
    ("list-references",
     "- {name: n, references: {dataset: c, columns: [a]}, type: expect_or_fail}\n"
     "- {references: {dataset: db.c, columns: [a, b], to: [x, y], note: why}}\n"
     "- {name: m, references: {dataset: c, columns: [a], to: null}, unique: null}\n", ".yml"),
    ("list-references-json",
     '[{"name": "n", "references": {"dataset": "c", "columns": ["a"], "to": ["id"]}}]', ".json"),
    ("008-unique-text", "- {name: n, unique: a}\n", ".yml"),
    ("008-references-list", "- {name: n, references: [c, a]}\n", ".yml"),
    ("008-references-columns-text", "- {name: n, references: {dataset: c, columns: a}}\n",
     ".yml"),
    ("008-references-to-text", "- {name: n, references: {dataset: c, columns: [a], to: b}}\n",
     ".yml"),
    ("008-references-key-number", "- {name: n, references: {dataset: c, columns: [a], 1: x}}\n",
     ".yml"),
    ("014-unique-empty", "- {name: n, unique: []}\n", ".yml"),
    ("014-references-no-columns", "- {name: n, references: {dataset: c}}\n", ".yml"),
    ("014-references-null-columns", "- {name: n, references: {dataset: c, columns: null}}\n",
     ".yml"),
    ("014-references-empty-to", "- {name: n, references: {dataset: c, columns: [a], to: []}}\n",
     ".yml"),
    ("015-unique-number", "- {name: n, unique: [1]}\n", ".yml"),
    ("015-unique-blank", "- {name: n, unique: [' ']}\n", ".yml"),
    ("015-references-no-dataset", "- {name: n, references: {columns: [a]}}\n", ".yml"),
    ("015-references-empty-dataset", "- {name: n, references: {dataset: '', columns: [a]}}\n",
     ".yml"),
    ("015-references-dataset-number", "- {name: n, references: {dataset: 5, columns: [a]}}\n",
     ".yml"),
    ("016-to-longer", "- {name: n, references: {dataset: c, columns: [a], to: [x, y]}}\n",
     ".yml"),
    ("017-unique-and-constraint", "- {name: n, unique: [a], constraint: a > 0}\n", ".yml"),
    ("017-unique-and-expression", "- {name: n, unique: [a], expression: ''}\n", ".yml"),
    ("017-unique-and-references",
     "- {name: n, unique: [a], references: {dataset: c, columns: [a]}}\n", ".yml"),
    # rules on the dataset as a whole (docs/row-count-rules.md, docs/aggregate-rules.md)
    ("list-row-count",
     "- {name: n, row_count: {min: 1}, failureAction: fail}\n- {row_count: {max: 10, note: x}}\n"
     "- {name: m, row_count: {min: 0, max: 0}, type: expect, max_failed: null}\n"
     "- {name: k, row_count: {min: 5, max: 5}, failureAction: Fail, type: expect_or_drop}\n",
     ".yml"),
    ("list-row-count-whole-float", "- {name: n, row_count: {min: 1.0, max: null}}\n", ".yml"),
    ("list-aggregate",
     "- {name: n, aggregate: 'sum(amount) > 0', failureAction: FAIL}\n"
     "- {aggregate: \"count_if(s = 'p') >= 1\", unique: null, failureAction: warn}\n", ".yml"),
    ("list-aggregate-json",
     '[{"name": "n", "aggregate": "avg(a) BETWEEN 1 AND 9", "type": "expect_or_fail"}]',
     ".json"),
    ("008-row-count-list", "- {name: n, row_count: [1, 2]}\n", ".yml"),
    ("008-row-count-key-number", "- {name: n, row_count: {min: 1, 2: x}}\n", ".yml"),
    ("008-aggregate-number", "- {name: n, aggregate: 5}\n", ".yml"),
    ("018-row-count-empty", "- {name: n, row_count: {}}\n", ".yml"),
    ("018-row-count-null-bounds", "- {name: n, row_count: {min: null, max: null}}\n", ".yml"),
    ("018-row-count-negative", "- {name: n, row_count: {min: -1}}\n", ".yml"),
    ("018-row-count-fraction", "- {name: n, row_count: {min: 1.5}}\n", ".yml"),
    ("018-row-count-text", "- {name: n, row_count: {min: '1'}}\n", ".yml"),
    ("018-row-count-boolean", "- {name: n, row_count: {max: true}}\n", ".yml"),
    ("018-row-count-too-large", "- {name: n, row_count: {max: 9223372036854775808}}\n",
     ".yml"),
    ("020-row-count-min-above-max", "- {name: n, row_count: {min: 3, max: 2}}\n", ".yml"),
    ("001-aggregate-blank", "- {name: n, aggregate: ' '}\n", ".yml"),
    ("019-aggregate-without-aggregate", "- {name: n, aggregate: amount > 0}\n", ".yml"),
    ("010-aggregate-window", "- {name: n, aggregate: 'sum(a) OVER () > 0'}\n", ".yml"),
    ("011-aggregate-unbalanced", "- {name: n, aggregate: 'sum(a > 0'}\n", ".yml"),
    ("017-row-count-and-aggregate",
     "- {name: n, row_count: {min: 1}, aggregate: 'sum(a) > 0'}\n", ".yml"),
    ("017-aggregate-and-constraint", "- {name: n, aggregate: 'sum(a) > 0', constraint: a}\n",
     ".yml"),
    ("017-row-count-and-unique", "- {name: n, row_count: {min: 1}, unique: [a]}\n", ".yml"),
    ("def-115-row-count-drop", "- {name: n, row_count: {min: 1}, failureAction: drop}\n",
     ".yml"),
    ("def-115-aggregate-type-drop",
     "- {name: n, aggregate: 'sum(a) > 0', type: Expect_Or_Drop, failureAction: null}\n",
     ".yml"),
    ("def-116-row-count-max-failed", "- {name: n, row_count: {min: 1}, max_failed: 1}\n",
     ".yml"),
    ("071-key-rule-default-name", "- {unique: [a]}\n- {name: UNIQUE (a), constraint: a > 0}\n",
     ".yml"),
    # no document
    ("not-a-document-syntax", "a: [1, 2\n", ".yml"),
    ("not-a-document-two", "a: 1\n---\nb: 2\n", ".yml"),
    ("not-a-document-python-tag", "!!python/object/apply:os.system ['echo pwned']\n", ".yml"),
    ("not-a-document-json", '[{"name": "n" "constraint": "a"}]', ".json"),
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("schema")


def case_file(directory: Path, case: tuple[str, str, str]) -> Path:
    ident, text, suffix = case
    path = directory / f"{ident}{suffix}"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_schema_and_validate_agree_on_the_cases(scratch: Path, case: tuple[str, str, str]) -> None:
    assert_agree(case_file(scratch, case))


def test_the_cases_show_every_code_and_every_exception(scratch: Path) -> None:
    got = {c[0]: verdicts(case_file(scratch, c)) for c in CASES}
    codes = {code for v in got.values() for code in v.codes}
    assert codes == {"SDPX-VAL-001", "SDPX-VAL-002", "SDPX-VAL-006", "SDPX-VAL-008",
                     "SDPX-VAL-009", "SDPX-VAL-010", "SDPX-VAL-011", "SDPX-VAL-012",
                     "SDPX-VAL-013", "SDPX-VAL-014", "SDPX-VAL-015", "SDPX-VAL-016",
                     "SDPX-VAL-017", "SDPX-VAL-018", "SDPX-VAL-019", "SDPX-VAL-020",
                     "SDPX-VAL-071", "SDPX-DEF-115", "SDPX-DEF-116"}
    # Each exception is needed: some case is rejected by validate for it alone, and
    # accepted by the schema.
    for check in (*SCHEMA_CANNOT_CHECK, NOT_A_DOCUMENT):
        shown = [ident for ident, v in got.items() if v.codes and v.applied == (check.name,)]
        assert shown, f"no case shows {check.name!r}"
    # The ids say which cases validate rejects: those named by a code or an exception.
    rejected = {ident for ident, v in got.items() if v.codes}
    assert rejected == {ident for ident in got
                        if ident.startswith(("0", "sql-", "twice-", "not-", "def-"))}


def test_the_docs_list_the_same_exceptions() -> None:
    text = (REPO / "docs" / "rule-files.md").read_text(encoding="utf-8")
    section = text.split("## Editors: the JSON Schema", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "SDPX-" in line]
    documented = [frozenset(re.findall(r"SDPX-[A-Z]+-\d+", row)) for row in rows]
    assert documented == [c.codes for c in (*SCHEMA_CANNOT_CHECK, NOT_A_DOCUMENT)]


# --------------------------------------------------------------------------- generated documents

GROUPS = [*DECORATORS, *GROUP_DECORATORS]


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten: many generated documents are valid, or nearly so."""
    return st.integers(0, 9).flatmap(lambda i: bad if i == 0 else good)


odd = st.sampled_from([None, 0, 2024, True, 1.5, [], ["a"], {}, {"a": "b"},
                       datetime.date(2024, 1, 31)])
blank = st.sampled_from(["", " ", "\t\n", "\x85"])
# Constraints: valid SQL, SQL that validate rejects (an exception of the schema), blank text.
good_sql = st.sampled_from(["a > 0", "id IS NOT NULL", "status IN ('open', 'x')"])
bad_sql = st.sampled_from(["(a > 0", "rand() > 0.5", "sum(a) > 0"])
constraint = mostly(good_sql, st.one_of(bad_sql, blank, odd))
good_name = st.sampled_from(["n", "m", "valid_id", "a > 0"])
name = mostly(good_name, st.one_of(blank, odd))
text = mostly(st.sampled_from(["x", "y"]), st.one_of(blank, odd, st.text(max_size=3)))
action = mostly(st.sampled_from([*(a.value for a in Action), "DROP", " Fail\n"]),
                st.one_of(st.sampled_from(["explode", "", "expect_or_drop"]), odd))
decorator = mostly(st.sampled_from([*DECORATORS, "EXPECT_OR_FAIL"]),
                   st.one_of(st.sampled_from(["expect_all", "nope", "drop"]), odd))
mistake = st.sampled_from([{"action": "drop"}, {7: "x"}, {"failure_action": "fail"}])
max_failed = mostly(
    st.one_of(st.integers(0, 2**63 - 1), st.integers(0, 100).map(str),
              st.sampled_from(["1%", "0.5%", "100%", "100.000000%", "0%", "007%", "12.345678%",
                               "9223372036854775807", 10.0, None])),
    st.one_of(odd, st.integers(-5, -1), st.sampled_from(
        ["100.1%", "101%", "1 %", " 1", "1.5", "5.%", ".5%", "1e3", "0.0000001%", "%", "",
         "9223372036854775808", 2**63, 0.5, float("inf"), "1%\n", "-1%"]),
        st.text(alphabet="0123456789.% ", max_size=6)),
)

bound = mostly(st.one_of(st.none(), st.integers(0, 9), st.just(2.0)),
               st.one_of(odd, st.integers(-3, -1), st.just(2**63)))
row_count_body = mostly(st.fixed_dictionaries({}, optional={"min": bound, "max": bound}),
                        st.one_of(odd, st.just({"min": 1, 5: "x"})))
aggregate = mostly(st.sampled_from(["sum(a) > 0", "count(1) >= 1", "max(b) IS NULL"]),
                   st.one_of(st.sampled_from(["a > 0", "(sum(a) > 0", "sum(a) OVER () > 0"]),
                             blank, odd))
whole_rule = st.builds(
    lambda required, optional: {**required, **optional},
    st.one_of(st.fixed_dictionaries({"row_count": row_count_body}),
              st.fixed_dictionaries({"aggregate": aggregate})),
    st.fixed_dictionaries({}, optional={
        "name": name, "failureAction": action, "type": decorator,
        "max_failed": mostly(st.none(), max_failed), "constraint": mostly(st.none(), constraint),
        "unique": mostly(st.none(), st.just(["a"])),
    }),
)

list_rule = st.builds(
    lambda required, optional, extra: {**required, **optional, **extra},
    mostly(st.fixed_dictionaries({"constraint": constraint}),
           st.fixed_dictionaries({}, optional={"expression": constraint})),
    st.fixed_dictionaries({}, optional={
        "name": name, "message": name, "expression": constraint, "failureAction": action,
        "type": decorator, "tag": text, "tags": mostly(st.lists(text, max_size=2), odd),
        "description": odd, "max_failed": max_failed,
    }),
    mostly(st.just({}), mistake),
)
mapping_body = mostly(
    st.one_of(st.none(), st.fixed_dictionaries({}, optional={
        "action": action, "name": name, "severity": odd, "max_failed": max_failed})),
    st.one_of(odd, st.sampled_from([{"failureAction": "drop"}, {"type": None}, {7: "x"}])),
)
rules = st.one_of(
    st.lists(mostly(st.one_of(list_rule, whole_rule), odd), max_size=3),
    st.dictionaries(mostly(good_sql, st.one_of(bad_sql, blank, st.sampled_from(
        [*GROUPS, "expectations", 2024, True, None, datetime.date(2024, 1, 31)]))),
        mapping_body, max_size=3),
    st.dictionaries(st.sampled_from(GROUPS),
                    mostly(st.dictionaries(mostly(good_name, st.one_of(blank, st.just(2024))),
                                           constraint, max_size=3),
                           odd),
                    min_size=1, max_size=3),
)
documents = mostly(
    st.one_of(rules, st.builds(lambda r: {"expectations": r}, rules)),
    st.one_of(st.builds(lambda r: {"expectations": r}, odd),
              st.builds(lambda r, k: {"expectations": r, k: "x"}, rules,
                        st.sampled_from(["version", 5])),
              odd, st.text(max_size=5)),
)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document=documents, as_json=st.booleans())
# A rule with a mistake of shape (an action, a tolerance) that the schema finds and one in
# its expression or bounds that only validate finds: validate names the first (found by
# this property once, when it named the second only)
@example(document=[{"aggregate": "a > 0", "failureAction": "drop"}], as_json=False)
@example(document=[{"row_count": {"min": 5, "max": 1}, "max_failed": 3}], as_json=False)
@example(document=[{"references": {"dataset": "c", "columns": ["a", "b"], "to": ["x"]},
                    "max_failed": "many"}], as_json=True)
@example(document=[{"constraint": "a >", "max_failed": "-1"}], as_json=False)
def test_schema_and_validate_agree_on_generated_documents(document: Any, as_json: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        if as_json:
            try:
                text = json.dumps(document, default=str)
            except TypeError:  # keys JSON cannot hold (a date); YAML can
                as_json = False
        if not as_json:
            text = yaml.safe_dump(document, allow_unicode=False, sort_keys=False)
        path = Path(directory) / ("rules.json" if as_json else "rules.yml")
        path.write_text(text, encoding="utf-8")
        assert_agree(path)
