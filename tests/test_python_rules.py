"""The rules of a Python pipeline file read from its source, without importing it
(``sdp_expect.checks.python_rules``, ``sdp-expect validate``): every spelling of a rule
is found at its call and checked by the model's own check, a computed rule is counted
apart, a rule file named by ``expect_from_file`` is checked with the file."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path
from typing import Any, Optional

from cli_helpers import sdp_expect
from hypothesis import example, given
from hypothesis import strategies as st

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.checks.python_rules import read_python_rules
from sdp_expect.checks.validate import validate_paths
from sdp_expect.core.model import Action, make_expectation

PIPELINE = textwrap.dedent('''\
    from pyspark import pipelines as plain
    from sdp_expect import dlt
    from sdp_expect import pipelines as dp
    from sdp_expect.pipelines import expect_or_fail as must

    LIMIT = "amount < 10"


    @dp.materialized_view(name="orders_clean")
    @dp.expect("valid_id", "id IS NOT NULL")
    @dp.expect_or_drop("summed", "sum(amount) > 0")
    @dp.expect_all_or_drop({"": "amount > 0", "known": "status IN ('a', 'b')"})
    @must("limited", LIMIT)
    @dp.expect_from_file("../rules/orders.yml")
    def orders():
        return None


    @dlt.table
    @dlt.expect_or_fail("open_paren", "(amount > 0")
    def payments():
        return None


    dp.create_streaming_table("events", expect_all={"recent": "ts > rand()"},
                              expect_all_or_fail={"has_id": "id IS NOT NULL"})


    @plain.table
    def untouched():  # pyspark's own decorators declare no rules
        return None
    ''')
RULE_FILE = "- name: bad\n  constraint: count(*) > 1\n  failureAction: drop\n"


def test_every_spelling_is_read_at_its_call_and_checked_by_the_model(tmp_path: Path) -> None:
    found = read_python_rules(ast.parse(PIPELINE), "orders.py")
    errors = [(e.code, e.place.line if e.place else None, e.dataset, e.expectation)
              for e in found.errors]
    assert errors == [
        ("SDPX-VAL-010", 11, "orders_clean", "summed"),  # an aggregate
        ("SDPX-VAL-002", 12, "orders_clean", ""),  # an empty name
        ("SDPX-VAL-011", 20, "payments", "open_paren"),  # not well formed
        ("SDPX-VAL-010", 25, "events", "recent"),  # not deterministic
    ], errors
    # valid_id, summed, "", known, open_paren, recent, has_id; `limited` is computed
    assert (found.rules, found.computed) == (7, 1)
    assert [(u.path, u.line, u.column) for u in found.rule_files] == [
        ("../rules/orders.yml", 14, 2)]
    assert found.errors[0].place is not None and found.errors[0].place.column == 2


def test_validate_checks_a_project_s_python_rules_and_the_rule_files_they_name(
        tmp_path: Path) -> None:
    (tmp_path / "spark-pipeline.yml").write_text(
        "name: p\nstorage: file:///tmp/p-storage\n"
        "libraries:\n  - glob:\n      include: transformations/**\n")
    (tmp_path / "transformations").mkdir()
    (tmp_path / "transformations" / "orders.py").write_text(PIPELINE)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "orders.yml").write_text(RULE_FILE)
    report = validate_paths([tmp_path])
    codes = [(e.code, Path(e.file).name, e.line) for e in report.errors]
    assert codes == [("SDPX-VAL-010", "orders.py", 11), ("SDPX-VAL-002", "orders.py", 12),
                     ("SDPX-VAL-011", "orders.py", 20), ("SDPX-VAL-010", "orders.py", 25),
                     ("SDPX-VAL-010", "orders.yml", None)], codes
    # the spec, the Python file and the rule file (named by it, and found in the folder)
    assert (report.files_checked, report.rules_checked) == (3, 8)
    assert [n.message for n in report.notes] == [
        "1 rule(s) with a computed name, constraint or tolerance: checked when the pipeline "
        "is defined"]
    github = sdp_expect("validate", "--format", "github", cwd=tmp_path, timeout=120)
    assert github.returncode == 1, github.stdout + github.stderr
    first = github.stdout.splitlines()[0]
    assert first.startswith(f"::error file={tmp_path / 'transformations' / 'orders.py'},"
                            "line=11,col=2,title=SDPX-VAL-010::"), first


# ---------------------------------------------------------------------------------------
# The law: whatever literal rule is written, in whichever spelling, the source reading
# finds it and gives the model's own verdict on it.
# ---------------------------------------------------------------------------------------
_constraints = st.one_of(
    st.sampled_from(["id IS NOT NULL", "sum(x) > 0", "(a > 1", "", "  ", "x > rand()",
                     "name = 'it''s'", "a -- comment", "b = \"q\"", "c IN (1, 2)"]),
    st.text(max_size=12))
_names = st.one_of(st.sampled_from(["valid_id", "", " ", "naïve ✓", "it's"]),
                   st.text(max_size=8))
_tolerances = st.one_of(st.none(), st.integers(-2, 20), st.sampled_from(["1%", "x", "150%"]))
_spellings = st.sampled_from(["single", "group", "argument", "dlt", "imported"])


def _source(spelling: str, action: Action, name: str, constraint: str,
            tolerance: Optional[Any]) -> str:
    extra = "" if tolerance is None else f", max_failed={tolerance!r}"
    if spelling == "single":
        return (f"from sdp_expect import pipelines as dp\n@dp.materialized_view\n"
                f"@dp.{action.decorator}({name!r}, {constraint!r}{extra})\ndef t():\n  pass\n")
    if spelling == "dlt":
        return (f"from sdp_expect import dlt\n@dlt.table\n"
                f"@dlt.{action.decorator}({name!r}, {constraint!r}{extra})\ndef t():\n  pass\n")
    if spelling == "imported":
        return (f"from sdp_expect.pipelines import {action.decorator} as rule\n"
                f"@rule({name!r}, {constraint!r}{extra})\ndef t():\n  pass\n")
    rules = json.dumps({name: constraint}, ensure_ascii=False)
    if spelling == "group":
        return (f"from sdp_expect import pipelines as dp\n@dp.materialized_view\n"
                f"@dp.{action.group_decorator}({rules}{extra})\ndef t():\n  pass\n")
    return (f"import sdp_expect.pipelines as dp\n"
            f"dp.create_streaming_table('t', {action.group_decorator}={rules})\n")


def _verdict(action: Action, name: str, constraint: str,
             tolerance: Optional[Any]) -> Optional[str]:
    try:
        make_expectation(name, constraint, action, dataset="t", max_failed=tolerance)
    except SdpExpectError as error:
        return error.code
    return None


@given(_spellings, st.sampled_from(list(Action)), _names, _constraints, _tolerances)
@example("single", Action.DROP, "valid_id", "sum(x) > 0", None)
@example("argument", Action.FAIL, "", "id > 0", None)
@example("group", Action.WARN, "it's", "name = 'it''s'", 3)
@example("dlt", Action.DROP, "naïve ✓", "(a > 1", "1%")
def test_a_literal_rule_in_any_spelling_gets_the_model_s_verdict(
        spelling: str, action: Action, name: str, constraint: str,
        tolerance: Optional[Any]) -> None:
    if spelling == "argument":
        tolerance = None  # a dataset call's groups take no tolerance
    source = _source(spelling, action, name, constraint, tolerance)
    found = read_python_rules(ast.parse(source), "t.py")
    assert (found.rules, found.computed) == (1, 0), source
    codes = [e.code for e in found.errors]
    expected = _verdict(action, name, constraint, tolerance)
    assert codes == ([] if expected is None else [expected]), source
    assert all(e.dataset == "t" for e in found.errors), source
