"""The project's layout, checked before Spark starts: files that spark-pipelines
would refuse or misread inside the spec's libraries (sdp_expect.checks.layout)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from cli_helpers import sdp_expect

from sdp_expect.checks.layout import layout_problems
from sdp_expect.checks.validate import validate_paths

SPEC = ("name: p\nstorage: file:///tmp/p-storage\n"
        "libraries:\n  - glob:\n      include: transformations/**\n")
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


def test_a_library_that_matches_no_file_is_named(tmp_path: Path) -> None:
    """A misspelt folder: spark-pipelines logs 'Found 0 files' and runs without it. A
    glob spark-pipelines refuses is SDPX-PRJ-407 alone (not also 'matches nothing')."""
    project(tmp_path, {"transformations/orders.py": "x = 1\n"})
    (tmp_path / "empty").mkdir()
    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text(SPEC + "  - glob:\n      include: transformation/**\n"
                    "  - glob:\n      include: empty/**\n"
                    "  - glob:\n      include: transformations/*.py\n"
                    "  - glob:\n      include: transformations/orders.py\n")
    problems = layout_problems(spec)
    assert [(p.code, p.place.line if p.place else None) for p in problems] == [
        ("SDPX-PRJ-407", 3), ("SDPX-PRJ-408", 3), ("SDPX-PRJ-408", 3)], problems
    assert "'transformation/**' matches no file" in str(problems[1])
    assert "'empty/**' matches no file" in str(problems[2])


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


BROKEN_PYTHON = "from pyspark import pipelines as dp\n\ndef a(:\n    pass\n"
"""A pipeline file with a syntax error at line 3, column 7 (the ``:``)."""
BROKEN_LINE = ("[SDPX-PRJ-406] transformations/broken.py:3:7: the file does not parse as "
               "Python: invalid syntax. Fix: correct the Python at the line and column shown")


def test_a_python_file_that_does_not_parse_stops_run_and_dry_run_before_spark(
        tmp_path: Path) -> None:
    """Its file, line and column, and the source line with a caret under the place as
    Python prints it; nothing starts (no log of a run)."""
    project(tmp_path, {"transformations/orders.py": "x = 1\n",
                       "transformations/broken.py": BROKEN_PYTHON})
    for action in ("run", "dry-run"):
        done = sdp_expect(action, cwd=tmp_path, timeout=120)
        assert done.returncode == 1, done.stderr
        lines = done.stderr.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(BROKEN_LINE))
        assert lines[at + 1:at + 3] == ["    def a(:", "          ^"], done.stderr
        assert "not started" in done.stderr
        assert not (tmp_path / ".sdp-expect" / "logs").exists()


RULE_ERRORS = ("from sdp_expect import pipelines as dp\n\n\n"
               "@dp.materialized_view\n"
               "@dp.expect_or_drop(\"summed\", \"sum(amount) > 0\")\n"
               "@dp.expect_from_file(\"../rules/bad.yml\")\n"
               "def orders():\n"
               "    return None\n")
"""A pipeline file that parses, with an aggregate rule at line 5 and a rule file (with an
aggregate too) named at line 6."""


def test_rule_errors_of_python_files_and_their_rule_files_stop_run_before_spark(
        tmp_path: Path) -> None:
    """The rules written in the Python files, and the rule files they name, are checked as
    ``validate`` checks them before Spark starts: each error with its code, file and line
    (the Python one with its source line), in both formats; nothing starts."""
    project(tmp_path, {"transformations/orders.py": RULE_ERRORS,
                       "rules/bad.yml": "- name: bad\n  constraint: count(*) > 1\n"})
    for action in ("run", "dry-run"):
        done = sdp_expect(action, cwd=tmp_path, timeout=120)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stderr.splitlines()
        at = next(i for i, line in enumerate(lines)
                  if line.startswith("[SDPX-VAL-010] transformations/orders.py:5:2"))
        assert lines[at + 1] == '    @dp.expect_or_drop("summed", "sum(amount) > 0")', lines
        assert any(line.startswith("[SDPX-VAL-010] rules/bad.yml") for line in lines), lines
        assert "not started: 2 problem(s)" in done.stderr
        assert not (tmp_path / ".sdp-expect" / "logs").exists()
    done = sdp_expect("dry-run", "--format", "json", cwd=tmp_path, timeout=120)
    document = json.loads(done.stdout)
    assert done.returncode == 1 and document["status"] == "NOT_STARTED"
    assert [(e["code"], e["place"]["file"], e["place"].get("line"))
            for e in document["definition_errors"]] == [
        ("SDPX-VAL-010", "transformations/orders.py", 5),
        ("SDPX-VAL-010", "rules/bad.yml", None)], document
    report = validate_paths([tmp_path])
    assert sorted((e.code, Path(e.file).name) for e in report.errors) == [
        ("SDPX-VAL-010", "bad.yml"), ("SDPX-VAL-010", "orders.py")]


def test_validate_with_no_path_checks_the_project_around_it(tmp_path: Path) -> None:
    """``sdp-expect validate`` in a project's folder (or below it) checks that project:
    the spec and its Python files are counted, the broken one placed by line and column;
    outside any project it is a usage error."""
    root = tmp_path / "project"
    root.mkdir()
    project(root, {"transformations/orders.py": "x = 1\n",
                   "transformations/broken.py": BROKEN_PYTHON,
                   "rules/orders.yml": RULES})
    done = sdp_expect("validate", cwd=root / "transformations", timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "checked 4 files, 1 rule: 1 error", done.stdout
    assert f"[SDPX-PRJ-406] {root / 'transformations' / 'broken.py'}, line 3, column 7: " \
           "the file does not parse as Python: invalid syntax." in done.stdout, done.stdout
    github = sdp_expect("validate", "--format", "github", cwd=root, timeout=120)
    assert f"file={root / 'transformations' / 'broken.py'},line=3,col=7" in github.stdout, \
        github.stdout
    (root / "transformations" / "broken.py").write_text("x = 2\n")
    fixed = sdp_expect("validate", cwd=root, timeout=120)
    assert fixed.returncode == 0 and fixed.stdout.splitlines()[-1] == (
        "checked 4 files, 1 rule: no errors"), fixed.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lost = sdp_expect("validate", cwd=elsewhere, timeout=120)
    assert lost.returncode == 2 and "give a PATH" in lost.stderr, lost.stderr


def test_validate_of_a_project_reads_as_rules_only_what_names_rules(tmp_path: Path) -> None:
    """In a project folder, the YAML and JSON files read as rule files are those its files
    name and those in a ``rules/`` folder; data (JSON Lines a flow reads) is not read as
    rules but counted in a note that names it; named explicitly, it is read."""
    project(tmp_path, {
        "transformations/orders.py": ("from sdp_expect import pipelines as dp\n\n\n"
                                      "@dp.materialized_view\n"
                                      "@dp.expect_from_file(\"../conf/orders.yml\")\n"
                                      "def orders():\n    return None\n"),
        "conf/orders.yml": "- name: bad\n  constraint: count(*) > 1\n",
        "rules/more.yml": RULES,
        "data/orders/part-0.json": '{"id": 1}\n{"id": 2}\n',
        "data/settings.yaml": "a: [1\n"})
    report = validate_paths([tmp_path])
    assert [(e.code, Path(e.file).name) for e in report.errors] == [
        ("SDPX-VAL-010", "orders.yml")], report.errors
    # the spec, orders.py, conf/orders.yml (named by it), rules/more.yml
    assert (report.files_checked, report.rules_checked) == (4, 2), report
    [note] = [n.message for n in report.notes if "not read as rule files" in n.message]
    assert note.startswith("2 YAML or JSON file(s)") and \
        "data/orders/part-0.json, data/settings.yaml;" in note, note
    named = validate_paths([tmp_path / "data" / "orders" / "part-0.json"])
    assert [e.code for e in named.errors] == ["SDPX-VAL-009"], named.errors


def test_a_named_python_file_is_parsed_not_read_as_rules(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text(BROKEN_PYTHON)
    report = validate_paths([path])
    assert [(e.code, e.line, e.column) for e in report.errors] == [("SDPX-PRJ-406", 3, 7)]
    assert report.files_checked == 1 and report.rules_checked == 0
