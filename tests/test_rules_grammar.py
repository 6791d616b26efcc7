"""The rule-file grammar of design/RULE_FILES.md, row by row, and its error codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sdp_expect import rules
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.core.model import Action, Aggregate, Expectation, RowCount
from sdp_expect.rules import RuleError, RuleFileError, as_kwargs, check_file, load

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rules"
SAME = FIXTURES / "same"

WARN, DROP, FAIL = Action.WARN, Action.DROP, Action.FAIL

CANONICAL = [
    ("order_key_present", "order_key IS NOT NULL", FAIL),
    ("price_not_negative", "total_price >= 0", DROP),
    ("status_known", "status IN ('open', 'shipped')", DROP),
    ("recent_order", "order_date >= '2020-01-01'", WARN),
]


def triples(expectations: list[Expectation]) -> list[tuple[str, str, Action]]:
    return [(e.name, e.constraint, e.action) for e in expectations]


def write(tmp_path: Path, text: str, name: str = "rules.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_text(
    tmp_path: Path, text: str, name: str = "rules.yml", **kwargs: Any
) -> list[Expectation]:
    return load(write(tmp_path, text, name), **kwargs)


def failure(tmp_path: Path, text: str, name: str = "rules.yml") -> RuleFileError:
    with pytest.raises(RuleFileError) as caught:
        load_text(tmp_path, text, name)
    return caught.value


def codes(tmp_path: Path, text: str, name: str = "rules.yml") -> list[str]:
    return [e.code for e in failure(tmp_path, text, name).errors]


def only_error(tmp_path: Path, text: str, name: str = "rules.yml") -> SdpExpectError:
    errors = failure(tmp_path, text, name).errors
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


# --------------------------------------------------------------------------- the examples


def test_example_mapping_format() -> None:
    assert triples(load(FIXTURES / "example_mapping.yml")) == [
        ("order_key_present", "order_key IS NOT NULL", FAIL),
        ("price_not_negative", "total_price >= 0", DROP),
    ]


def test_example_list_format() -> None:
    assert triples(load(FIXTURES / "example_list.yml")) == [
        ("price_not_negative", "total_price >= 0", WARN),
        ("amount_reconciled", "amount_reconciled", FAIL),
    ]


def test_example_grouped_format() -> None:
    assert triples(load(FIXTURES / "example_grouped.json")) == [
        ("valid_id", "id IS NOT NULL", DROP),
        ("valid_ts", "ts IS NOT NULL", FAIL),
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in SAME.iterdir()))
def test_every_format_gives_the_same_rules(name: str) -> None:
    assert triples(load(SAME / name)) == CANONICAL


def test_format_is_decided_by_content_not_extension() -> None:
    assert triples(load(SAME / "json_content.yml")) == triples(load(SAME / "list.json"))
    assert triples(load(SAME / "yaml_content.json")) == triples(load(SAME / "wrapped_list.yml"))


# --------------------------------------------------------------------------- mapping format


def test_mapping_key_is_the_constraint_value_has_action_and_name(tmp_path: Path) -> None:
    got = load_text(tmp_path, "id > 0:\n  action: drop\n  name: positive_id\n")
    assert triples(got) == [("positive_id", "id > 0", DROP)]


def test_mapping_action_defaults_to_warn(tmp_path: Path) -> None:
    assert triples(load_text(tmp_path, "id > 0:\n  name: positive_id\n")) == [
        ("positive_id", "id > 0", WARN)
    ]


def test_mapping_name_defaults_to_the_constraint(tmp_path: Path) -> None:
    assert triples(load_text(tmp_path, "id > 0:\n  action: fail\n")) == [("id > 0", "id > 0", FAIL)]


def test_mapping_null_value_is_a_warn_named_by_its_constraint(tmp_path: Path) -> None:
    assert triples(load_text(tmp_path, "id > 0:\nid < 9: null\n")) == [
        ("id > 0", "id > 0", WARN),
        ("id < 9", "id < 9", WARN),
    ]


def test_mapping_null_action_is_warn(tmp_path: Path) -> None:
    assert triples(load_text(tmp_path, "id > 0:\n  action: null\n")) == [("id > 0", "id > 0", WARN)]


def test_mapping_action_is_case_insensitive(tmp_path: Path) -> None:
    assert load_text(tmp_path, "id > 0: {action: DROP}\n")[0].action is DROP


def test_mapping_keeps_key_order(tmp_path: Path) -> None:
    got = load_text(tmp_path, "c > 0:\na > 0:\nb > 0:\n")
    assert [e.name for e in got] == ["c > 0", "a > 0", "b > 0"]


def test_mapping_place_names_file_and_key(tmp_path: Path) -> None:
    write(tmp_path, "total_price >= 0: {action: drop}\n", "orders.yml")
    got = load("orders.yml", base_dir=tmp_path)
    assert str(got[0].place) == "orders.yml, rule 'total_price >= 0'"


# --------------------------------------------------------------------------- list format


def test_list_constraint_and_name(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- name: positive_id\n  constraint: id > 0\n")
    assert triples(got) == [("positive_id", "id > 0", WARN)]


def test_list_expression_and_message_stand_for_constraint_and_name(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- message: positive_id\n  expression: id > 0\n")
    assert triples(got) == [("positive_id", "id > 0", WARN)]


@pytest.mark.parametrize(("value", "action"), [("warn", WARN), ("drop", DROP), ("fail", FAIL)])
def test_list_failure_action(tmp_path: Path, value: str, action: Action) -> None:
    got = load_text(tmp_path, f"- {{name: n, constraint: id > 0, failureAction: {value}}}\n")
    assert got[0].action is action


@pytest.mark.parametrize(
    ("value", "action"),
    [("expect", WARN), ("expect_or_drop", DROP), ("expect_or_fail", FAIL)],
)
def test_list_type(tmp_path: Path, value: str, action: Action) -> None:
    got = load_text(tmp_path, f"- {{name: n, constraint: id > 0, type: {value}}}\n")
    assert got[0].action is action


def test_list_failure_action_wins_over_type(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- {name: n, constraint: id > 0, failureAction: drop, "
                    "type: expect_or_fail}\n")
    assert got[0].action is DROP


def test_list_entry_with_neither_is_a_warn(tmp_path: Path) -> None:
    assert load_text(tmp_path, "- {name: n, constraint: id > 0}\n")[0].action is WARN


@pytest.mark.parametrize("key", ["failureAction", "type"])
def test_list_null_failure_action_or_type_is_a_warn(tmp_path: Path, key: str) -> None:
    got = load_text(tmp_path, f"- {{name: n, constraint: id > 0, {key}: null}}\n")
    assert got[0].action is WARN


def test_list_null_failure_action_lets_type_decide(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- {name: n, constraint: id > 0, failureAction: null, "
                    "type: expect_or_fail}\n")
    assert got[0].action is FAIL


def test_list_name_defaults_to_the_constraint(tmp_path: Path) -> None:
    assert triples(load_text(tmp_path, "- constraint: id > 0\n")) == [("id > 0", "id > 0", WARN)]


def test_list_constraint_wins_over_expression(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- {name: n, constraint: id > 0, expression: id > 1}\n")
    assert got[0].constraint == "id > 0"


def test_list_keeps_list_order(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- {name: c, constraint: c}\n- {name: a, constraint: a}\n")
    assert [e.name for e in got] == ["c", "a"]


def test_list_place_names_file_and_position_from_one(tmp_path: Path) -> None:
    write(tmp_path, "- {name: a, constraint: a}\n- {name: b, constraint: b}\n"
          "- {name: c, constraint: c}\n", "orders.yml")
    got = load("orders.yml", base_dir=tmp_path)
    assert [str(e.place) for e in got] == [f"orders.yml, rule {i}" for i in (1, 2, 3)]


# --------------------------------------------------------------------------- wrapper


def test_wrapper_around_the_list_format(tmp_path: Path) -> None:
    got = load_text(tmp_path, "expectations:\n  - {name: n, constraint: id > 0}\n")
    assert triples(got) == [("n", "id > 0", WARN)]


def test_wrapper_around_the_mapping_format(tmp_path: Path) -> None:
    got = load_text(tmp_path, "expectations:\n  id > 0: {action: fail}\n")
    assert triples(got) == [("id > 0", "id > 0", FAIL)]


def test_wrapper_around_the_grouped_format(tmp_path: Path) -> None:
    got = load_text(tmp_path, "expectations:\n  expect_or_drop: {n: id > 0}\n")
    assert triples(got) == [("n", "id > 0", DROP)]


def test_empty_list_and_mapping_hold_no_rules(tmp_path: Path) -> None:
    assert load_text(tmp_path, "[]\n") == []
    assert load_text(tmp_path, "{}\n") == []
    assert load_text(tmp_path, "expectations: []\n") == []


# --------------------------------------------------------------------------- grouped format


@pytest.mark.parametrize(
    ("group", "action"),
    [
        ("expect", WARN), ("expect_or_drop", DROP), ("expect_or_fail", FAIL),
        ("expect_all", WARN), ("expect_all_or_drop", DROP), ("expect_all_or_fail", FAIL),
    ],
)
def test_grouped_keys(tmp_path: Path, group: str, action: Action) -> None:
    got = load_text(tmp_path, json.dumps({group: {"valid_id": "id IS NOT NULL"}}), "g.json")
    assert triples(got) == [("valid_id", "id IS NOT NULL", action)]


def test_grouped_order_is_groups_then_names_as_written(tmp_path: Path) -> None:
    text = ('{"expect_or_fail": {"z": "z > 0", "a": "a > 0"}, "expect": {"m": "m > 0"},'
            ' "expect_or_drop": {"b": "b > 0"}}')
    assert [e.name for e in load_text(tmp_path, text, "g.json")] == ["z", "a", "m", "b"]


def test_grouped_place_names_the_rule_key(tmp_path: Path) -> None:
    write(tmp_path, '{"expect_or_drop": {"valid_id": "id IS NOT NULL"}}', "g.json")
    assert str(load("g.json", base_dir=tmp_path)[0].place) == "g.json, rule 'valid_id'"


def test_a_mapping_with_other_keys_is_the_mapping_format(tmp_path: Path) -> None:
    got = load_text(tmp_path, "expect_or_drop:\n  action: drop\nid > 0:\n")
    assert triples(got) == [("expect_or_drop", "expect_or_drop", DROP), ("id > 0", "id > 0", WARN)]


# --------------------------------------------------------------------------- unknown keys
# Inside a rule, keys the grammar does not name are ignored (docs/rule-files.md, "Other
# keys"); at the top level every key of a mapping is a rule (or a group), and beside
# `expectations:` no other key may stand (SDPX-VAL-008, below).


def test_unknown_keys_of_a_list_entry_are_ignored(tmp_path: Path) -> None:
    got = load_text(tmp_path, "- name: n\n  constraint: a > 0\n  failureAction: drop\n"
                    "  description: why\n  owner: {team: x}\n")
    assert triples(got) == [("n", "a > 0", DROP)]


def test_unknown_keys_of_a_mapping_format_rule_are_ignored(tmp_path: Path) -> None:
    got = load_text(tmp_path, "a > 0:\n  action: fail\n  name: n\n  severity: [high]\n")
    assert triples(got) == [("n", "a > 0", FAIL)]


def test_unknown_keys_of_a_wrapped_list_entry_are_ignored(tmp_path: Path) -> None:
    got = load_text(tmp_path, '{"expectations": [{"name": "n", "constraint": "a", "why": 1}]}',
                    "r.json")
    assert triples(got) == [("n", "a", WARN)]


def test_unknown_keys_are_reported_as_warnings_with_the_nearest_known_key(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "- name: a\n  constraint: x > 0\n  failure_action: fail\n"
                 "- {name: b, constraint: y, colour: red}\n")
    checked = check_file(path)
    assert checked.ok and [e.expectation.action for e in checked.entries] == [WARN, WARN]
    assert checked.warnings == (
        "rule 1: the key 'failure_action' is not part of the grammar and is ignored; "
        "did you mean 'failureAction'?",
        "rule 2: the key 'colour' is not part of the grammar and is ignored; known keys: "
        "name, message, constraint, expression, failureAction, type, tag, tags, max_failed, "
        "action, unique, references, row_count, aggregate",
    )
    mapping = check_file(write(tmp_path, "a > 0:\n  acton: drop\n", "m.yml"))
    assert mapping.warnings == ("rule 'a > 0': the key 'acton' is not part of the grammar "
                                "and is ignored; did you mean 'action'?",)
    assert check_file(write(tmp_path, "- {name: n, constraint: a}\n", "ok.yml")).warnings == ()


def test_a_rule_takes_a_tolerance_in_the_list_and_the_mapping_format(tmp_path: Path) -> None:
    """docs/thresholds.md: max_failed, per rule, parsed as the decorators parse it."""
    listed = check_file(write(tmp_path, "- {name: a, constraint: x > 0, failureAction: fail, "
                              "max_failed: 1%}\n- {name: b, constraint: y, max_failed: 10}\n"))
    assert listed.ok
    assert [e.expectation.max_failed.text if e.expectation.max_failed else None
            for e in listed.entries] == ["1%", "10"]
    mapping = check_file(write(tmp_path, "a > 0: {action: drop, max_failed: 0.5%}\nb > 0:\n",
                               "m.yml"))
    assert mapping.ok
    assert [e.expectation.max_failed.text if e.expectation.max_failed else None
            for e in mapping.entries] == ["0.5%", None]
    wrong = check_file(write(tmp_path, "- {name: a, constraint: x, max_failed: 150%}\n"
                             "- {name: b, constraint: y, max_failed: -3}\n", "w.yml"))
    assert [(e.code, e.expectation, str(e.place)) for e in wrong.errors] == [
        ("SDPX-VAL-013", "a", f"{wrong.file}, rule 1"),
        ("SDPX-VAL-012", "b", f"{wrong.file}, rule 2")]


def test_an_unknown_key_that_is_not_text_is_still_an_error(tmp_path: Path) -> None:
    assert only_error(tmp_path, "- {name: n, constraint: a, 7: x}\n").code == "SDPX-VAL-008"


def test_an_unknown_top_level_key_beside_groups_makes_the_mapping_format(
    tmp_path: Path,
) -> None:
    # Not all keys are groups: each top-level key is a constraint, and a group's
    # {name: constraint} mapping is then a rule body whose keys are ignored.
    got = load_text(tmp_path, "expect_or_drop: {valid: id > 0}\nid IS NOT NULL:\n")
    assert triples(got) == [("expect_or_drop", "expect_or_drop", WARN),
                            ("id IS NOT NULL", "id IS NOT NULL", WARN)]


# --------------------------------------------------------------------------- SDPX-VAL-001


@pytest.mark.parametrize(
    "text",
    [
        "- name: n\n",
        "- {name: n, constraint: ''}\n",
        "- {name: n, constraint: '   '}\n",
        "- {name: n, constraint: null}\n",
        "- {name: n, expression: ''}\n",
        "'': {action: drop}\n",
        "expect_or_drop: {n: null}\n",
        "expect_or_drop: {n: ''}\n",
    ],
    ids=["list-missing", "list-empty", "list-blank", "list-null", "expression-empty",
         "mapping-empty-key", "grouped-null", "grouped-empty"],
)
def test_val_001_no_constraint(tmp_path: Path, text: str) -> None:
    assert only_error(tmp_path, text).code == "SDPX-VAL-001"


# --------------------------------------------------------------------------- SDPX-VAL-006


def test_val_006_unknown_action_in_mapping(tmp_path: Path) -> None:
    error = only_error(tmp_path, "id > 0: {action: skip}\n")
    assert error.code == "SDPX-VAL-006"
    assert "skip" in str(error)


def test_val_006_unknown_failure_action(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- {name: n, constraint: id > 0, failureAction: quarantine}\n")
    assert error.code == "SDPX-VAL-006"
    assert "quarantine" in str(error)


def test_val_006_failure_action_not_text(tmp_path: Path) -> None:
    assert only_error(tmp_path, "- {name: n, constraint: id > 0, failureAction: 1}\n").code == (
        "SDPX-VAL-006"
    )


def test_val_006_unknown_type(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- {name: n, constraint: id > 0, type: expect_or_explode}\n")
    assert error.code == "SDPX-VAL-006"
    assert "expect_or_explode" in str(error)


def test_val_006_unknown_type_even_when_failure_action_wins(tmp_path: Path) -> None:
    text = "- {name: n, constraint: id > 0, failureAction: drop, type: nope}\n"
    assert only_error(tmp_path, text).code == "SDPX-VAL-006"


def test_val_006_list_entry_using_action_suggests_failure_action(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- {name: n, constraint: id > 0, action: drop}\n")
    assert error.code == "SDPX-VAL-006"
    assert "failureAction: drop" in str(error)


def test_val_006_mapping_rule_using_failure_action_suggests_action(tmp_path: Path) -> None:
    error = only_error(tmp_path, "id > 0: {failureAction: fail}\n")
    assert error.code == "SDPX-VAL-006"
    assert "action: fail" in str(error)


# --------------------------------------------------------------------------- SDPX-VAL-008


@pytest.mark.parametrize(
    "text",
    ["just some text\n", "42\n", "true\n", "'[not, a, list]'\n"],
    ids=["text", "number", "boolean", "quoted"],
)
def test_val_008_document_neither_mapping_nor_list(tmp_path: Path, text: str) -> None:
    assert only_error(tmp_path, text).code == "SDPX-VAL-008"


@pytest.mark.parametrize(
    "text",
    ["expectations:\n", "expectations: null\n", "expectations: rules.yml\n", "expectations: 3\n"],
    ids=["empty", "null", "text", "number"],
)
def test_val_008_expectations_holds_something_else(tmp_path: Path, text: str) -> None:
    error = only_error(tmp_path, text)
    assert error.code == "SDPX-VAL-008"
    assert "expectations" in str(error)


def test_val_008_expectations_beside_other_keys(tmp_path: Path) -> None:
    assert only_error(tmp_path, "expectations: []\nversion: 2\n").code == "SDPX-VAL-008"


@pytest.mark.parametrize(
    "text",
    ["- id > 0\n", "- [a, b]\n", "- 7\n", "- null\n"],
    ids=["text", "list", "number", "null"],
)
def test_val_008_list_rule_not_a_mapping(tmp_path: Path, text: str) -> None:
    assert only_error(tmp_path, text).code == "SDPX-VAL-008"


def test_val_008_mapping_rule_not_a_mapping(tmp_path: Path) -> None:
    error = only_error(tmp_path, "id > 0: drop\n")
    assert error.code == "SDPX-VAL-008"
    assert "{action: drop}" in str(error)


def test_val_008_name_2024_says_to_quote(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- name: 2024\n  constraint: year = 2024\n")
    assert error.code == "SDPX-VAL-008"
    assert 'quote the value' in str(error)
    assert 'name: "2024"' in str(error)


def test_val_008_constraint_true_says_to_quote(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- name: always\n  constraint: true\n")
    assert error.code == "SDPX-VAL-008"
    assert 'constraint: "true"' in str(error)


@pytest.mark.parametrize(
    "text",
    [
        "- {message: 12, constraint: a}\n",
        "- {name: n, expression: 1.5}\n",
        "- {name: [a], constraint: a}\n",
        "- {name: n, constraint: {a: b}}\n",
        "id > 0: {name: 7}\n",
        "- {name: 2024-01-31, constraint: a}\n",
    ],
    ids=["message", "expression", "name-list", "constraint-mapping", "mapping-name", "date"],
)
def test_val_008_field_not_text(tmp_path: Path, text: str) -> None:
    assert only_error(tmp_path, text).code == "SDPX-VAL-008"


@pytest.mark.parametrize(
    "text",
    ["2024: {action: drop}\n", "true:\n", "null: {name: n}\n"],
    ids=["integer", "boolean", "null"],
)
def test_val_008_mapping_key_not_text(tmp_path: Path, text: str) -> None:
    error = only_error(tmp_path, text)
    assert error.code == "SDPX-VAL-008"
    assert "quote the key" in str(error)


def test_val_008_grouped_name_and_constraint_not_text(tmp_path: Path) -> None:
    assert codes(tmp_path, "expect: {2024: year = 2024, n: true}\n") == ["SDPX-VAL-008"] * 2


def test_val_008_group_not_a_mapping(tmp_path: Path) -> None:
    assert only_error(tmp_path, "expect_or_drop: [id > 0]\n").code == "SDPX-VAL-008"


@pytest.mark.parametrize(
    "text",
    ["- {name: n, constraint: a, tag: 5}\n", "- {name: n, constraint: a, tags: finance}\n",
     "- {name: n, constraint: a, tags: [finance, 3]}\n"],
    ids=["tag-number", "tags-text", "tags-mixed"],
)
def test_val_008_tags_not_text(tmp_path: Path, text: str) -> None:
    assert only_error(tmp_path, text).code == "SDPX-VAL-008"


# --------------------------------------------------------------------------- SDPX-VAL-071


def test_val_071_list_entries_share_a_name(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- {name: n, constraint: a > 0}\n- {name: n, constraint: b > 0}\n")
    assert error.code == "SDPX-VAL-071"
    assert isinstance(error, RuleError) and error.rule == "rule 2"
    assert "rule 1" in str(error)


def test_val_071_mapping_rules_share_a_name(tmp_path: Path) -> None:
    assert only_error(tmp_path, "a > 0: {name: n}\nb > 0: {name: n}\n").code == "SDPX-VAL-071"


def test_val_071_default_name_collides_with_a_given_name(tmp_path: Path) -> None:
    assert only_error(tmp_path, "a > 0:\nb > 0: {name: a > 0}\n").code == "SDPX-VAL-071"


def test_val_071_names_shared_across_groups(tmp_path: Path) -> None:
    text = '{"expect": {"n": "a > 0"}, "expect_or_fail": {"n": "b > 0"}}'
    assert only_error(tmp_path, text, "g.json").code == "SDPX-VAL-071"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("id > 0: {action: drop}\nid > 0: {action: fail}\n", "rules.yml"),
        ('{"id > 0": {"action": "drop"}, "id > 0": null}', "rules.json"),
    ],
    ids=["yaml", "json"],
)
def test_val_071_a_constraint_key_written_twice(tmp_path: Path, text: str, name: str) -> None:
    error = only_error(tmp_path, text, name)
    assert error.code == "SDPX-VAL-071"
    assert "more than once" in str(error)


def test_val_071_a_grouped_name_written_twice(tmp_path: Path) -> None:
    text = '{"expect_or_fail": {"valid_ts": "ts IS NOT NULL", "valid_ts": "ts > 0"}}'
    assert only_error(tmp_path, text, "g.json").code == "SDPX-VAL-071"


def test_val_071_as_kwargs_rejects_shared_names() -> None:
    twice = [Expectation("n", "a > 0", WARN), Expectation("n", "b > 0", DROP)]
    with pytest.raises(SdpExpectError) as caught:
        as_kwargs(twice)
    assert caught.value.code == "SDPX-VAL-071"


# --------------------------------------------------------------------------- other codes


def test_val_003_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError) as caught:
        load(tmp_path / "missing.yml")
    assert caught.value.code == "SDPX-VAL-003"


def test_val_003_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError) as caught:
        load("rules/orders.yml", base_dir=tmp_path / "nowhere")
    assert caught.value.code == "SDPX-VAL-003"


def test_val_003_a_directory_is_not_a_rule_file(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError) as caught:
        load(tmp_path)
    assert caught.value.code == "SDPX-VAL-003"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("a: [1, 2\n", "rules.yml"),
        ("a: 1\n---\nb: 2\n", "rules.yml"),
        ("!!python/object/apply:os.system ['echo pwned']\n", "rules.yml"),
        ("- name: n\n  name: m\n  constraint: a\n", "rules.yml"),
        ('[{"name": "n", "name": "m", "constraint": "a"}]', "rules.json"),
        ("expectations: []\nexpectations: []\n", "rules.yml"),
    ],
    ids=["syntax", "two-documents", "python-tag", "key-twice-in-rule", "json-key-twice",
         "wrapper-twice"],
)
def test_val_009_not_a_valid_document(tmp_path: Path, text: str, name: str) -> None:
    assert only_error(tmp_path, text, name).code == "SDPX-VAL-009"


def test_val_009_json_errors_give_json_positions(tmp_path: Path) -> None:
    error = only_error(tmp_path, '[\n  {"name": "n",\n   "constraint": "a" "x"}\n]', "r.json")
    assert error.code == "SDPX-VAL-009"
    assert "not valid JSON" in str(error)
    assert "line 3, column 22" in str(error)


def test_val_009_yaml_errors_give_yaml_positions(tmp_path: Path) -> None:
    error = only_error(tmp_path, "- name: n\n  constraint: a\n\t- x\n")
    assert "not valid YAML" in str(error)
    assert "line 3" in str(error)


def test_val_002_empty_name(tmp_path: Path) -> None:
    assert only_error(tmp_path, "- {name: '', constraint: a > 0}\n").code == "SDPX-VAL-002"


def test_val_010_rejected_construct_in_constraint(tmp_path: Path) -> None:
    text = "- {name: n, constraint: 'id IN (SELECT id FROM other)'}\n"
    assert only_error(tmp_path, text).code == "SDPX-VAL-010"


def test_val_011_malformed_constraint(tmp_path: Path) -> None:
    assert only_error(tmp_path, "- {name: n, constraint: '(a > 0'}\n").code == "SDPX-VAL-011"


# --------------------------------------------------------------------------- all errors


def test_every_error_of_a_file_is_reported() -> None:
    with pytest.raises(RuleFileError) as caught:
        load(FIXTURES / "invalid.yml")
    error = caught.value
    assert [e.code for e in error.errors] == ["SDPX-VAL-006", "SDPX-VAL-008", "SDPX-VAL-006"]
    assert error.code == "SDPX-VAL-006"
    assert isinstance(error, SdpExpectError)
    assert [e.location for e in error.errors] == [
        f"{FIXTURES / 'invalid.yml'}, rule {i}" for i in (1, 2, 3)
    ]
    message = str(error)
    assert message.count("[SDPX-VAL-") == 4  # the heading and one line per error
    assert "failureAction" in message and 'name: "2024"' in message and "explode" in message


def test_errors_name_the_dataset_when_given(tmp_path: Path) -> None:
    write(tmp_path, "- {name: n, constraint: ''}\n")
    with pytest.raises(RuleFileError) as caught:
        load(tmp_path / "rules.yml", dataset="orders")
    assert "dataset 'orders'" in str(caught.value.errors[0])


def test_with_context_keeps_every_error(tmp_path: Path) -> None:
    error = failure(tmp_path, "- {name: n, constraint: ''}\n- 5\n")
    again = error.with_context(dataset="orders")
    assert isinstance(again, RuleFileError)
    assert [e.code for e in again.errors] == ["SDPX-VAL-001", "SDPX-VAL-008"]
    assert all(e.dataset == "orders" for e in again.errors)


def test_rule_file_error_needs_an_error() -> None:
    with pytest.raises(ValueError):
        RuleFileError("rules.yml", [])


# --------------------------------------------------------------------------- paths


def test_relative_path_is_resolved_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    write(tmp_path / "rules", "- {name: n, constraint: a > 0}\n", "orders.yml")
    got = load("rules/orders.yml", base_dir=tmp_path)
    assert str(got[0].place) == "rules/orders.yml, rule 1"


def test_absolute_path_ignores_base_dir(tmp_path: Path) -> None:
    path = write(tmp_path, "- {name: n, constraint: a > 0}\n")
    assert triples(load(path, base_dir=tmp_path / "elsewhere")) == [("n", "a > 0", WARN)]


def test_relative_path_defaults_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "- {name: n, constraint: a > 0}\n", "here.yml")
    monkeypatch.chdir(tmp_path)
    assert [e.name for e in load("here.yml")] == ["n"]


# --------------------------------------------------------------------------- tags


def test_tag_keeps_entries_whose_tag_or_tags_match() -> None:
    assert [e.name for e in load(FIXTURES / "tagged.yml", "silver")] == [
        "order_key_present", "price_not_negative"
    ]
    assert [e.name for e in load(FIXTURES / "tagged.yml", tag="bronze")] == ["order_key_present"]
    assert [e.name for e in load(FIXTURES / "tagged.yml", "finance")] == ["amount_reconciled"]


def test_no_tag_keeps_every_entry() -> None:
    assert len(load(FIXTURES / "tagged.yml")) == 4


def test_unknown_tag_keeps_nothing() -> None:
    assert load(FIXTURES / "tagged.yml", "gold") == []


def test_mapping_and_grouped_rules_carry_no_tags() -> None:
    assert load(SAME / "mapping.yml", "silver") == []
    assert load(SAME / "grouped.json", "silver") == []


def test_the_whole_file_is_checked_whatever_the_tag(tmp_path: Path) -> None:
    text = "- {name: a, constraint: a, tag: x}\n- {name: b, constraint: '', tag: y}\n"
    write(tmp_path, text)
    with pytest.raises(RuleFileError):
        load(tmp_path / "rules.yml", "x")


def test_tag_must_be_text() -> None:
    with pytest.raises(SdpExpectError) as caught:
        load(FIXTURES / "tagged.yml", 3)  # type: ignore[arg-type]
    assert caught.value.code == "SDPX-VAL-008"


# --------------------------------------------------------------------------- as_kwargs


def test_as_kwargs_groups_by_action_in_order() -> None:
    got = as_kwargs(load(SAME / "list.yml"))
    assert got == {
        "expect_all": {"recent_order": "order_date >= '2020-01-01'"},
        "expect_all_or_drop": {
            "price_not_negative": "total_price >= 0",
            "status_known": "status IN ('open', 'shipped')",
        },
        "expect_all_or_fail": {"order_key_present": "order_key IS NOT NULL"},
    }
    assert list(got["expect_all_or_drop"]) == ["price_not_negative", "status_known"]


def test_as_kwargs_leaves_out_empty_actions() -> None:
    got = as_kwargs(load(FIXTURES / "example_grouped.json"))
    assert got == {
        "expect_all_or_drop": {"valid_id": "id IS NOT NULL"},
        "expect_all_or_fail": {"valid_ts": "ts IS NOT NULL"},
    }


def test_as_kwargs_of_nothing_is_empty() -> None:
    assert as_kwargs([]) == {}


def test_check_file_counts_rules_and_keeps_valid_ones() -> None:
    result = rules.check_file(FIXTURES / "invalid.yml")
    assert result.rules == 3
    assert not result.ok
    assert result.entries == ()
    good = rules.check_file(FIXTURES / "tagged.yml")
    assert good.ok and good.rules == 4
    assert good.entries[0].tags == ("bronze", "silver")


def test_a_rule_file_gives_rules_on_the_dataset_as_a_whole() -> None:
    got = [(e.name, e.action, e.whole) for e in load(FIXTURES / "dataset_rules.yml")]
    assert got == [
        ("not_empty", FAIL, RowCount(1)),
        ("not_too_many", WARN, RowCount(1, 10_000_000)),
        ("ROW COUNT <= 500", WARN, RowCount(max=500)),
        ("revenue_positive", FAIL, Aggregate("sum(amount) > 0")),
        ("count_if(status = 'paid') >= 1", WARN, Aggregate("count_if(status = 'paid') >= 1")),
        ("amount_present", DROP, None),
        ("order_once", WARN, None),
    ]


def test_each_mistake_in_a_dataset_rule_is_reported_with_its_code() -> None:
    result = rules.check_file(FIXTURES / "invalid_dataset_rules.yml")
    assert [(e.code, e.rule) for e in result.errors] == [
        ("SDPX-VAL-018", "rule 1"), ("SDPX-VAL-020", "rule 2"), ("SDPX-VAL-019", "rule 3"),
        ("SDPX-DEF-115", "rule 4"), ("SDPX-DEF-116", "rule 5"), ("SDPX-VAL-017", "rule 6")]


def test_as_kwargs_passes_rules_on_the_dataset_as_a_whole_as_rule_objects() -> None:
    got = as_kwargs(load(FIXTURES / "dataset_rules.yml"))
    assert got["expect_all_or_fail"]["not_empty"] == RowCount(1)
    assert got["expect_all_or_fail"]["revenue_positive"] == Aggregate("sum(amount) > 0")
    assert got["expect_all"]["not_too_many"] == RowCount(1, 10_000_000)
    assert got["expect_all_or_drop"] == {"amount_present": "amount IS NOT NULL"}
