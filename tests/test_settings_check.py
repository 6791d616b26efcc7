"""The settings of sdp-expect in a spec's configuration, checked before Spark starts
(``sdp_expect.checks.settings``): a key it does not know (SDPX-CFG-206, with the nearest
one), a value a setting does not take (SDPX-CFG-201, SDPX-CFG-204), each at its line,
all at once, in ``validate``, ``run`` and ``dry-run``; the verdict on a value is the one
the pipeline's definition gives (``read_options``, ``table_format``)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import REPO, sdp_expect
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.options import SETTING_PREFIXES, read_options
from sdp_expect.base.project import load_project
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT, table_format
from sdp_expect.checks.layout import layout_problems
from sdp_expect.checks.settings import KNOWN_KEYS, settings_problems
from sdp_expect.checks.validate import validate_paths

SPEC = """\
name: shop
storage: file:///tmp/shop-storage
configuration:
  sdp_expect.quarantine: "maybe"
  sdp_expect.format: "orc"
  sdp_expect.metricz: "true"
  sdp_expect.metrics: "false"
  sdp_expect.alert.max_rate: "5%"
  sdp_expect.migrate.data_root: /data
  spark.sql.shuffle.partitions: "4"
libraries:
  - glob:
      include: transformations/**
"""


def _project(root: Path, spec: str = SPEC) -> Path:
    (root / "spark-pipeline.yml").write_text(spec)
    (root / "transformations").mkdir()
    (root / "transformations" / "orders.py").write_text("x = 1\n")
    return root / "spark-pipeline.yml"


def test_every_setting_problem_is_named_at_its_line(tmp_path: Path) -> None:
    problems = layout_problems(_project(tmp_path))
    assert [(p.code, p.place.line if p.place else None) for p in problems] == [
        ("SDPX-CFG-201", 4), ("SDPX-CFG-204", 5), ("SDPX-CFG-206", 6)], problems
    assert "did you mean sdp_expect.metrics?" in str(problems[2])
    report = validate_paths([tmp_path])
    assert [e.code for e in report.errors] == ["SDPX-CFG-201", "SDPX-CFG-204",
                                               "SDPX-CFG-206"], report.errors


def test_run_and_dry_run_stop_on_them_before_spark(tmp_path: Path) -> None:
    _project(tmp_path)
    for action in ("run", "dry-run"):
        done = sdp_expect(action, "--format", "json", cwd=tmp_path, timeout=120)
        document = json.loads(done.stdout)
        assert done.returncode == 1 and document["status"] == "NOT_STARTED", done.stderr
        assert [e["code"] for e in document["definition_errors"]] == [
            "SDPX-CFG-201", "SDPX-CFG-204", "SDPX-CFG-206"], document
        assert not (tmp_path / ".sdp-expect" / "logs").exists()


def test_the_repository_s_projects_use_only_settings_sdp_expect_knows() -> None:
    """No false alarm: every spec of the examples, the corpus and the fixtures passes."""
    specs = [spec for folder in ("examples", "tests/corpus", "tests/fixtures")
             for spec in (REPO / folder).rglob("spark-pipeline.yml")]
    assert len(specs) > 10, specs
    for spec in specs:
        configuration = load_project(spec).configuration
        assert settings_problems(configuration, {}, spec.name) == [], spec


_WORDS = st.sampled_from(["true", "false", "TRUE", " false ", "pass", "fail", "query",
                          "output", "error", "allow", "delta", "Parquet", "iceberg", "orc",
                          "", "yes", "1"])


@given(key=st.sampled_from(KNOWN_KEYS), value=st.one_of(_WORDS, st.text(max_size=8)))
def test_a_value_is_refused_exactly_when_the_definition_refuses_it(key: str,
                                                                     value: str) -> None:
    """The oracle: the readers the pipeline's definition uses."""
    try:
        if key == KEY_TABLE_FORMAT:
            table_format({key: value})
        else:
            read_options({key: value}.get)
        refused = None
    except SdpExpectError as error:
        refused = error.code
    found = settings_problems({key: value}, {}, "spark-pipeline.yml")
    assert [p.code for p in found] == ([] if refused is None else [refused])


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.", min_size=1, max_size=20))
def test_any_other_key_of_sdp_expect_is_unknown(rest: str) -> None:
    key = "sdp_expect." + rest
    found = settings_problems({key: "true"}, {}, "spark-pipeline.yml")
    if key in KNOWN_KEYS:
        assert [p.code for p in found] in ([], ["SDPX-CFG-201"])
    elif key.startswith(SETTING_PREFIXES):
        assert found == []
    else:
        assert [p.code for p in found] == ["SDPX-CFG-206"]


def test_a_default_format_other_than_the_named_one_is_refused_at_its_line() -> None:
    """``spark.sql.sources.default`` set in the spec wins over the server's: another format
    than ``sdp_expect.format`` would store the tables in it (SDPX-CFG-205)."""
    lines = {"configuration.spark.sql.sources.default": 7}
    mismatch = {"sdp_expect.format": "delta", "spark.sql.sources.default": "parquet"}
    found = settings_problems(mismatch, lines, "spark-pipeline.yml")
    assert [(p.code, p.place.line if p.place else None) for p in found] == [
        ("SDPX-CFG-205", 7)], found
    for agreeing in ({"sdp_expect.format": "delta", "spark.sql.sources.default": "Delta"},
                     {"spark.sql.sources.default": "orc"}):
        assert settings_problems(agreeing, lines, "spark-pipeline.yml") == [], agreeing
