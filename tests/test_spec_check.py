"""The pipeline spec checked before Spark (SDPX-PRJ-407, ``sdp_expect.checks.spec``):
the same verdict as ``spark-pipelines``' own reader (``unpack_pipeline_spec``, the
oracle) on generated specs, and ``run`` / ``dry-run`` / ``validate`` stopping at a
spec without ``storage`` before a server starts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cli_helpers import sdp_expect
from hypothesis import example, given
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.pipelines.cli import unpack_pipeline_spec

from sdp_expect.checks.spec import REQUIRED_SPEC_FIELDS, SPEC_FIELDS, spec_data_problems

_scalars = st.one_of(st.text(max_size=6), st.booleans(), st.integers(-3, 3), st.none(),
                     st.floats(allow_nan=False, allow_infinity=False))
_includes = st.one_of(
    st.sampled_from(["transformations/**", "a.py", "t/*.py", "t/**/*.py", "*", "x/**",
                     "x*/**", "q?.sql", "[ab].py", ""]),
    st.integers(0, 2), st.none())
_libraries = st.one_of(
    st.lists(st.one_of(
        st.fixed_dictionaries({"glob": st.fixed_dictionaries({"include": _includes})}),
        st.fixed_dictionaries({"glob": st.just("x")}),
        st.fixed_dictionaries({"file": st.just("a.py")}),
        st.just("transformations/**")), max_size=3),
    st.none(), st.just("transformations/**"))
_configurations = st.one_of(
    st.dictionaries(st.one_of(st.text(min_size=1, max_size=5), st.integers(0, 3)),
                    _scalars, max_size=3),
    st.none(), st.lists(st.text(max_size=3), max_size=2))


@st.composite
def specs(draw: st.DrawFn) -> dict[Any, Any]:
    """A spec mapping: each field of spark-pipelines present or not, with values of
    every YAML type, and sometimes a field it does not know."""
    data: dict[Any, Any] = {}
    for key in SPEC_FIELDS:
        if draw(st.booleans()):
            data[key] = draw({"configuration": _configurations,
                              "libraries": _libraries}.get(key, _scalars))
    if draw(st.integers(0, 4)) == 0:
        data[draw(st.sampled_from(["librarys", "storage_location", "target", "edition"]))] = "x"
    return data


def _spark_pipelines_verdict(data: dict[Any, Any]) -> tuple[bool, str]:
    """Whether spark-pipelines' reader accepts the spec, and its error class if not."""
    try:
        unpack_pipeline_spec(data)
    except PySparkException as error:
        return False, str(error.getCondition())
    except (KeyError, TypeError, AttributeError) as error:  # a shape its reader does not expect
        return False, type(error).__name__
    return True, ""


@given(specs())
@example({"name": "p"})
@example({"name": "p", "storage": "s", "configuration": {"a": True}})
@example({"name": "p", "storage": "s", "libraries": [{"glob": {"include": "t/**/*.py"}}]})
@example({"name": "p", "storage": "s", "libraries": [{"glob": {"include": "t/**"}}],
          "configuration": {"k": "v"}, "schema": "db", "catalog": "c"})
def test_the_spec_check_agrees_with_spark_pipelines(data: dict[Any, Any]) -> None:
    accepted, condition = _spark_pipelines_verdict(data)
    problems = spec_data_problems(data, {}, "spark-pipeline.yml")
    assert (not problems) == accepted, (condition, [p.detail for p in problems])
    assert all(p.code == "SDPX-PRJ-407" for p in problems)
    if condition.startswith("PIPELINE_SPEC_"):  # Spark's own class is named
        assert any(condition in p.detail for p in problems), (condition, problems)


def test_the_required_fields_are_among_the_known_ones() -> None:
    assert set(REQUIRED_SPEC_FIELDS) <= set(SPEC_FIELDS)


SPEC_WITHOUT_STORAGE = """\
# no storage
name: shop
libraries:
  - glob:
      include: transformations/**
configuration:
  spark.sql.ansi.enabled: true
"""


def test_a_spec_without_storage_stops_run_dry_run_and_validate_before_spark(
        tmp_path: Path) -> None:
    """Every problem of the spec at once, at its line (the source line shown below it),
    with Spark's error class; no server starts (no log of a run), in well under the
    seconds a server takes to start."""
    (tmp_path / "spark-pipeline.yml").write_text(SPEC_WITHOUT_STORAGE)
    (tmp_path / "transformations").mkdir()
    (tmp_path / "transformations" / "orders.py").write_text("x = 1\n")
    for action in ("run", "dry-run"):
        started = time.monotonic()
        done = sdp_expect(action, cwd=tmp_path, timeout=120)
        seconds = time.monotonic() - started
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stderr.splitlines()
        assert lines[0].startswith(
            "[SDPX-PRJ-407] spark-pipeline.yml: the spec has no 'storage', which "
            "spark-pipelines requires (PIPELINE_SPEC_MISSING_REQUIRED_FIELD)"), done.stderr
        assert lines[1].startswith(
            "[SDPX-PRJ-407] spark-pipeline.yml:7: configuration spark.sql.ansi.enabled is "
            "the YAML boolean true, not a string (PIPELINE_SPEC_DICT_VALUE_NOT_STRING): quote "
            'it (spark.sql.ansi.enabled: "true")'), done.stderr
        assert lines[2] == "    spark.sql.ansi.enabled: true", done.stderr
        assert lines[-1] == (f"sdp-expect {action}: not started: 2 problem(s) in the spec or "
                             "its libraries that spark-pipelines would refuse or stop at")
        assert not (tmp_path / ".sdp-expect" / "logs").exists()
        assert seconds < 10, seconds  # a server takes 8 to 15 s alone; the check, a second
    done = sdp_expect("validate", cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("[SDPX-PRJ-407]") == 2, done.stdout
    assert done.stdout.splitlines()[-1] == "checked 2 files, 0 rules: 2 errors", done.stdout
