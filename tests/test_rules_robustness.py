"""No input makes the rule-file loader raise anything but SdpExpectError, or hang.

Property tests over generated documents, round trips of generated valid rule
files, a byte-level fuzz of valid files, and the hostile inputs by name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sdp_expect import rules
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.core.model import Action
from sdp_expect.rules import MAX_DEPTH, MAX_FILE_BYTES, RuleFileError, document, load

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rules"
# SDPX_FUZZ_EXAMPLES=5000 runs a longer fuzz; the default keeps the suite fast.
FAST = settings(
    max_examples=int(os.environ.get("SDPX_FUZZ_EXAMPLES", "120")),
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ACTIONS = ["warn", "drop", "fail"]
GRAMMAR_WORDS = [
    "name", "message", "constraint", "expression", "action", "failureAction", "type", "tag",
    "tags", "expectations", "expect", "expect_or_drop", "expect_or_fail", "expect_all",
    "expect_all_or_drop", "expect_all_or_fail", *ACTIONS, "expect_or_explode",
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("robustness")


def outcome(path: Path) -> str:
    """Load ``path``: 'ok' or the error code; any other exception fails the test."""
    try:
        got = load(path)
    except SdpExpectError as error:
        assert str(error).startswith(f"[{error.code}]")
        if isinstance(error, RuleFileError):
            assert error.errors and all(isinstance(e, SdpExpectError) for e in error.errors)
        return error.code
    assert isinstance(got, list)
    return "ok"


def outcome_of_bytes(scratch: Path, data: bytes, name: str = "doc.yml") -> str:
    path = scratch / name
    path.write_bytes(data)
    return outcome(path)


# --------------------------------------------------------------------------- generated documents

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**1001), max_value=10**1001),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(GRAMMAR_WORDS),
)
keys = st.one_of(st.sampled_from(GRAMMAR_WORDS), st.text(max_size=12))
yaml_keys = st.one_of(keys, st.integers(-5, 5), st.booleans(), st.none())


def trees(key_strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=5),
            st.dictionaries(key_strategy, children, max_size=5),
        ),
        max_leaves=25,
    )


@FAST
@given(tree=trees(keys))
def test_generated_json_documents_load_or_raise_sdp_errors(scratch: Path, tree: Any) -> None:
    text = json.dumps(tree)
    assert outcome_of_bytes(scratch, text.encode("utf-8"), "doc.json") in _POSSIBLE


@FAST
@given(tree=trees(yaml_keys))
def test_generated_yaml_documents_load_or_raise_sdp_errors(scratch: Path, tree: Any) -> None:
    text = yaml.safe_dump(tree, allow_unicode=True)
    assert outcome_of_bytes(scratch, text.encode("utf-8")) in _POSSIBLE


_POSSIBLE = {"ok", "SDPX-VAL-001", "SDPX-VAL-002", "SDPX-VAL-006", "SDPX-VAL-008",
             "SDPX-VAL-009", "SDPX-VAL-010", "SDPX-VAL-011", "SDPX-VAL-071"}


# --------------------------------------------------------------------------- round trips

names = st.text(min_size=1, max_size=20).filter(lambda s: bool(s.strip()))
columns = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
constraints = st.builds(
    lambda col, op, n: f"{col} {op} {n}",
    columns,
    st.sampled_from([">", ">=", "=", "<>", "<"]),
    st.integers(-1000, 1000),
) | st.builds(lambda col: f"{col} IS NOT NULL", columns)
rule_sets = st.lists(
    st.tuples(names, constraints, st.sampled_from(list(Action))),
    max_size=8,
    unique_by=(lambda r: r[0], lambda r: r[1]),
)
TYPE_OF = {Action.WARN: "expect", Action.DROP: "expect_or_drop", Action.FAIL: "expect_or_fail"}


def as_list(rule_set: list[tuple[str, str, Action]]) -> Any:
    return [{"name": n, "constraint": c, "failureAction": a.value} for n, c, a in rule_set]


def as_typed_list(rule_set: list[tuple[str, str, Action]]) -> Any:
    return [{"message": n, "expression": c, "type": TYPE_OF[a]} for n, c, a in rule_set]


def as_mapping(rule_set: list[tuple[str, str, Action]]) -> Any:
    return {c: {"action": a.value, "name": n} for n, c, a in rule_set}


def as_grouped(rule_set: list[tuple[str, str, Action]]) -> Any:
    groups: dict[str, dict[str, str]] = {}
    for n, c, a in rule_set:
        groups.setdefault(TYPE_OF[a], {})[n] = c
    return groups


def grouped_order(rule_set: list[tuple[str, str, Action]]) -> list[tuple[str, str, Action]]:
    order = list(dict.fromkeys(a for _, _, a in rule_set))
    return [r for a in order for r in rule_set if r[2] is a]


FORMATS: dict[str, tuple[Callable[[Any], Any], bool]] = {
    "list": (as_list, False),
    "typed-list": (as_typed_list, False),
    "mapping": (as_mapping, False),
    "grouped": (as_grouped, True),
    "wrapped-list": (lambda r: {"expectations": as_list(r)}, False),
    "wrapped-mapping": (lambda r: {"expectations": as_mapping(r)}, False),
}


# YAML 1.1 reads these as line breaks; PyYAML's emitter writes them raw when allow_unicode is on.
YAML_BREAKS = ("\x85", "\u2028", "\u2029")


@FAST
@given(rule_set=rule_sets, form=st.sampled_from(sorted(FORMATS)), as_json=st.booleans(),
       raw_unicode=st.booleans())
def test_valid_rule_files_round_trip(
    scratch: Path, rule_set: list[tuple[str, str, Action]], form: str, as_json: bool,
    raw_unicode: bool,
) -> None:
    build, regrouped = FORMATS[form]
    document = build(rule_set)
    if as_json:
        text = json.dumps(document, ensure_ascii=not raw_unicode)
    else:
        assume(not raw_unicode or not any(c in n for n, _, _ in rule_set for c in YAML_BREAKS))
        text = yaml.safe_dump(document, allow_unicode=raw_unicode, sort_keys=False)
    path = scratch / ("round.json" if as_json else "round.yml")
    path.write_text(text, encoding="utf-8")
    got = [(e.name, e.constraint, e.action) for e in load(path)]
    assert got == (grouped_order(rule_set) if regrouped else rule_set)


# --------------------------------------------------------------------------- byte-level fuzz

VALID_FILES = sorted(p for p in FIXTURES.rglob("*")
                     if p.is_file() and not p.name.startswith("invalid"))
mutations = st.lists(
    st.tuples(
        st.sampled_from(["delete", "insert", "flip", "truncate", "nul", "repeat"]),
        st.integers(min_value=0, max_value=10**6),
        st.integers(min_value=0, max_value=255),
    ),
    min_size=1,
    max_size=8,
)


def mutate(data: bytes, ops: list[tuple[str, int, int]]) -> bytes:
    for op, where, byte in ops:
        at = where % (len(data) + 1)
        if op == "delete":
            data = data[:at] + data[at + 1:]
        elif op == "insert":
            data = data[:at] + bytes([byte]) + data[at:]
        elif op == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ (1 << (byte % 8))]) + data[at + 1:]
        elif op == "truncate":
            data = data[:at]
        elif op == "nul":
            data = data[:at] + b"\0" + data[at:]
        elif op == "repeat":
            data = data[:at] + data[at:at + 1 + byte % 16] * 4 + data[at:]
    return data


@FAST
@given(source=st.sampled_from(VALID_FILES), ops=mutations)
def test_mutated_files_load_or_raise_sdp_errors(
    scratch: Path, source: Path, ops: list[tuple[str, int, int]]
) -> None:
    data = mutate(source.read_bytes(), ops)
    assert outcome_of_bytes(scratch, data, "mutated" + source.suffix) in _POSSIBLE


def test_fuzz_sources_are_valid_before_mutation() -> None:
    assert len(VALID_FILES) >= 10
    assert all(outcome(p) == "ok" for p in VALID_FILES)


# --------------------------------------------------------------------------- hostile inputs


def code_of(path: Path) -> str:
    with pytest.raises(RuleFileError) as caught:
        load(path)
    return caught.value.code


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "image.yml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    assert code_of(path) == "SDPX-VAL-009"


def test_non_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yml"
    path.write_bytes("- {name: café, constraint: a > 0}\n".encode("latin-1"))
    assert code_of(path) == "SDPX-VAL-009"


def test_utf16_text(tmp_path: Path) -> None:
    path = tmp_path / "utf16.yml"
    path.write_bytes("- {name: n, constraint: a > 0}\n".encode("utf-16"))
    assert code_of(path) == "SDPX-VAL-009"


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'[{"name": "n", "constraint": "a > 0"}]')
    assert [e.name for e in load(path)] == ["n"]


def test_file_over_ten_mib_is_rejected_without_being_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.yml"
    with path.open("wb") as handle:
        handle.truncate(11 * 1024 * 1024)  # sparse: 11 MiB on paper
    assert path.stat().st_size > MAX_FILE_BYTES

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was opened")

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(RuleFileError) as caught:
        load(path)
    assert caught.value.code == "SDPX-VAL-009"
    assert "10 MiB" in str(caught.value)


def test_file_of_exactly_ten_mib_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yml"
    head = b"- {name: n, constraint: a > 0}\n"
    path.write_bytes(head + b"#" * (MAX_FILE_BYTES - len(head) - 1) + b"\n")
    assert [e.name for e in load(path)] == ["n"]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("[" * 10_000 + "]" * 10_000, "deep.json"),
        ('{"a":' * 10_000 + "1" + "}" * 10_000, "deep_objects.json"),
        ("# yaml\n" + "[" * 10_000 + "]" * 10_000, "deep_flow.yml"),
        ("- " * 10_000 + "x\n", "deep_block.yml"),
        ("".join(" " * i + f"k{i}:\n" for i in range(1_000)) + " " * 1_000 + "v\n",
         "deep_mapping.yml"),
    ],
    ids=["json-lists", "json-objects", "yaml-flow", "yaml-block-lists", "yaml-block-mappings"],
)
def test_deep_nesting_is_rejected_without_recursion_error(
    tmp_path: Path, text: str, name: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleFileError) as caught:
        load(path)
    assert caught.value.code == "SDPX-VAL-009"
    assert "levels deep" in str(caught.value)


@pytest.mark.parametrize("prefix", ["", "# yaml\n"], ids=["json", "yaml"])
def test_depth_limit_is_one_hundred_levels(tmp_path: Path, prefix: str) -> None:
    path = tmp_path / "depth.txt"
    path.write_text(prefix + "[" * MAX_DEPTH + "]" * MAX_DEPTH, encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-008"  # parsed: a list whose rule is a list
    path.write_text(prefix + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-009"


def test_billion_laughs(tmp_path: Path) -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    path = tmp_path / "laughs.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(RuleFileError) as caught:
        load(path)
    assert caught.value.code == "SDPX-VAL-009"
    assert "aliases" in str(caught.value)


def test_merge_key_chain_counts_as_nesting(tmp_path: Path) -> None:
    lines = ["a0: &a0 {x: 1}"] + [f"a{i}: &a{i} {{<<: *a{i - 1}}}" for i in range(1, 2_000)]
    path = tmp_path / "merges.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-009"


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "aliases.yml"
    path.write_text("- &first {name: a, constraint: a > 0}\n- {<<: *first, name: b}\n",
                    encoding="utf-8")
    assert [(e.name, e.constraint) for e in load(path)] == [("a", "a > 0"), ("b", "a > 0")]


def test_recursive_alias(tmp_path: Path) -> None:
    path = tmp_path / "loop.yml"
    path.write_text("&loop [*loop]\n", encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-009"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.yml"
    path.write_bytes(b"")
    assert code_of(path) == "SDPX-VAL-008"


def test_only_comments(tmp_path: Path) -> None:
    path = tmp_path / "comments.yml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-008"


def test_expectations_null(tmp_path: Path) -> None:
    path = tmp_path / "null.yml"
    path.write_text("expectations: null\n", encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-008"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('[{"name": ' + "9" * 5_000 + ', "constraint": "a"}]', "digits.json"),
        ("- {name: 0x" + "f" * 5_000 + ", constraint: a}\n", "hex.yml"),
        ("- {name: " + "9" * 5_000 + ", constraint: a}\n", "digits.yml"),
        ("- {name: 2024-02-30, constraint: a}\n", "bad_date.yml"),
        ("- {name: !!int nine, constraint: a}\n", "bad_int.yml"),
    ],
    ids=["json-digits", "yaml-hex", "yaml-digits", "yaml-impossible-date", "yaml-int-tag"],
)
def test_unreadable_numbers_and_dates(tmp_path: Path, text: str, name: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-009"


@pytest.mark.parametrize(
    "text",
    ['[{"name": 1e999, "constraint": "a"}]', '[{"name": NaN, "constraint": "a"}]',
     '[{"name": 123456789012345678901234567890, "constraint": "a"}]'],
    ids=["infinity", "nan", "big-integer"],
)
def test_numbers_where_text_belongs(tmp_path: Path, text: str) -> None:
    path = tmp_path / "numbers.json"
    path.write_text(text, encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-008"


def test_lone_surrogate_in_json_text(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.json"
    path.write_text('[{"name": "\\ud800", "constraint": "a > 0"}]', encoding="utf-8")
    assert [e.name for e in load(path)] == ["\ud800"]


@pytest.mark.parametrize(
    "text",
    ["!!python/object:os.system {}\n", "- !!python/name:os.system\n", "- !custom {a: b}\n",
     "? [a, b]\n: c\n", "- {name: \"a\x07\", constraint: a}\n"],
    ids=["python-object", "python-name", "local-tag", "list-key", "control-character"],
)
def test_unsafe_or_exotic_yaml(tmp_path: Path, text: str) -> None:
    path = tmp_path / "exotic.yml"
    path.write_text(text, encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-009"


def test_fifo_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yml"
    os.mkfifo(path)
    assert code_of(path) == "SDPX-VAL-003"  # and no hang waiting for a writer


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "locked.yml"
    path.write_text("[]\n", encoding="utf-8")

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", denied)
    assert code_of(path) == "SDPX-VAL-003"


@pytest.mark.parametrize("path", ["bad\0name.yml", 42], ids=["nul-in-path", "not-a-path"])
def test_impossible_paths(path: Any) -> None:
    with pytest.raises(RuleFileError) as caught:
        load(path)
    assert caught.value.code == "SDPX-VAL-003"


def test_check_file_never_raises_on_hostile_input(tmp_path: Path) -> None:
    path = tmp_path / "x.yml"
    path.write_bytes(b"\xff\xfe\0garbage")
    result = rules.check_file(path)
    assert not result.ok and result.rules == 0


def test_the_same_limits_hold_without_libyaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [(e.name, e.action) for e in load(FIXTURES / "same" / "list.yml")]
    monkeypatch.setattr(document, "_YamlLoader", document._yaml_loader_class(libyaml=False))
    assert [(e.name, e.action) for e in load(FIXTURES / "same" / "list.yml")] == expected
    hostile = {
        "deep.yml": "- " * 10_000 + "x\n",
        "laughs.yml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i > 1 else "*a"] * 10) + "]\n"
            for i in range(1, 9)
        ),
        "two.yml": "a: 1\n---\nb: 2\n",
    }
    for name, text in hostile.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert code_of(path) == "SDPX-VAL-009", name


def test_checking_stops_after_max_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("[" + ",".join(["1"] * 200_000) + "]", encoding="utf-8")
    with pytest.raises(RuleFileError) as caught:
        load(path)
    assert len(caught.value.errors) == rules.MAX_ERRORS
    assert not caught.value.complete
    assert "checking stopped" in str(caught.value).splitlines()[0]


def test_yaml_documents_with_too_many_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(document, "MAX_YAML_NODES", 50)
    path = tmp_path / "many.yml"
    path.write_text("- {name: a, constraint: a > 0}\n" * 10, encoding="utf-8")
    assert [e.name for e in rules.check_file(path).select()] == []  # 10 rules, 51 values
    assert code_of(path) == "SDPX-VAL-009"
    path.write_text("- {name: a, constraint: a > 0}\n" * 8 + "- {name: b, constraint: b}\n",
                    encoding="utf-8")
    assert code_of(path) == "SDPX-VAL-071"  # 46 values: read, and the names clash
