"""The project's layout, checked before Spark starts: files that spark-pipelines
would refuse or misread inside the spec's libraries (sdp_expect.checks.layout)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from cli_helpers import sdp_expect

from sdp_expect.checks.layout import layout_problems
from sdp_expect.checks.validate import validate_paths

SPEC = "name: p\nlibraries:\n  - glob:\n      include: transformations/**\n"
DATABRICKS_SQL = textwrap.dedent("""\
    CREATE OR REFRESH MATERIALIZED VIEW orders (
      CONSTRAINT valid_id EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW
    ) AS SELECT * FROM raw_orders;
    """)
OPEN_SOURCE_SQL = "CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n FROM orders;\n"
RULES = "id IS NOT NULL:\n  action: drop\n"


def project(root: Path, files: dict[str, str]) -> Path:
    (root / "spark-pipeline.yml").write_text(SPEC)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "spark-pipeline.yml"


def test_the_recommended_layout_has_no_problem(tmp_path: Path) -> None:
    spec = project(tmp_path, {
        "transformations/orders.py": "from sdp_expect import pipelines as dp\n",
        "transformations/totals.sql": OPEN_SOURCE_SQL,
        "rules/orders.yml": RULES,
        "databricks_sql/orders.sql": DATABRICKS_SQL,
    })
    assert layout_problems(spec) == []
    assert validate_paths([tmp_path]).ok


def test_a_rule_file_and_databricks_sql_inside_the_libraries_are_named_with_the_fix(
        tmp_path: Path) -> None:
    spec = project(tmp_path, {
        "transformations/orders.py": "from sdp_expect import pipelines as dp\n",
        "transformations/rules/orders.yml": RULES,
        "transformations/notes.txt": "to do\n",
        "transformations/legacy/orders.sql": DATABRICKS_SQL,
        "transformations/totals.sql": OPEN_SOURCE_SQL,
    })
    problems = layout_problems(spec)
    assert [(p.code, p.place.file if p.place else None) for p in problems] == [
        ("SDPX-PRJ-402", "transformations/legacy/orders.sql"),
        ("SDPX-PRJ-401", "transformations/notes.txt"),
        ("SDPX-PRJ-401", "transformations/rules/orders.yml"),
    ]
    rule_file = problems[2]
    assert "a rule file inside the spec's libraries" in str(rule_file)
    assert "PIPELINE_UNSUPPORTED_DEFINITIONS_FILE_EXTENSION" in str(rule_file)
    assert "expect_from_file('../rules/orders.yml')" in (rule_file.fix or "")
    assert "sql.include" in (problems[0].fix or "")
    # validate names the same files, given the project folder or its spec
    for given in (tmp_path, spec):
        report = validate_paths([given])
        layout = [(e.code, Path(e.file).relative_to(tmp_path).as_posix())
                  for e in report.errors if e.code.startswith("SDPX-PRJ")]
        assert layout == [("SDPX-PRJ-402", "transformations/legacy/orders.sql"),
                          ("SDPX-PRJ-401", "transformations/notes.txt"),
                          ("SDPX-PRJ-401", "transformations/rules/orders.yml")]


def test_a_sql_file_with_only_sdp_expect_properties_is_databricks_sql(tmp_path: Path) -> None:
    """Registered by spark-pipelines as it is, its rule file would be ignored: silently
    no expectations. So it is named too."""
    spec = project(tmp_path, {"transformations/orders.sql": textwrap.dedent("""\
        CREATE MATERIALIZED VIEW orders
        TBLPROPERTIES ('sdp_expect.rules' = '../rules/orders.yml')
        AS SELECT * FROM raw_orders;
        """), "rules/orders.yml": RULES})
    assert [p.code for p in layout_problems(spec)] == ["SDPX-PRJ-402"]


def test_run_and_dry_run_say_it_before_spark_starts(tmp_path: Path) -> None:
    """Exit status 1, the coded lines, and no Spark: the commands return in seconds,
    with no log file of a run."""
    project(tmp_path, {"transformations/orders.py": "x = 1\n",
                       "transformations/rules/orders.yml": RULES})
    for action in ("run", "dry-run"):
        done = sdp_expect(action, cwd=tmp_path, timeout=120)
        assert done.returncode == 1, done.stderr
        assert ("[SDPX-PRJ-401] transformations/rules/orders.yml: a rule file inside the "
                "spec's libraries") in done.stderr
        assert "not started" in done.stderr
        assert not (tmp_path / ".sdp-expect" / "logs").exists()
    done = sdp_expect("dry-run", "--format", "json", cwd=tmp_path, timeout=120)
    document = json.loads(done.stdout)
    assert done.returncode == 1 and document["status"] == "NOT_STARTED"
    assert [(e["code"], e["place"]["file"]) for e in document["definition_errors"]] == [
        ("SDPX-PRJ-401", "transformations/rules/orders.yml")]
