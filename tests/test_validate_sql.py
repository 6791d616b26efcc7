"""``sdp-expect validate`` on Databricks SQL files: every error, coded, without Spark."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from cli_helpers import assert_runs_without_pyspark, repo_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdp_expect.base.errors import ERROR_CATALOGUE
from sdp_expect.checks.validate import ValidationReport, validate_paths
from sdp_expect.cli import main

REPO = Path(__file__).resolve().parent.parent
SQL_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sql"
LAKEFLOW = SQL_FIXTURES / "lakeflow_docs"
PIPELINE_SQL = SQL_FIXTURES / "pipeline" / "orders.sql"
EXAMPLE_SQL = REPO / "examples" / "sql" / "databricks_sql"
VALID_SQL = [
    PIPELINE_SQL,
    LAKEFLOW / "customers.sql",
    LAKEFLOW / "several_constraints.sql",
    LAKEFLOW / "warn_drop_fail.sql",
    EXAMPLE_SQL / "silver.sql",
    EXAMPLE_SQL / "gold.sql",
]


def write(folder: Path, text: str, name: str = "orders.sql") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def check(folder: Path, text: str, name: str = "orders.sql") -> ValidationReport:
    return validate_paths([write(folder, text, name)])


def codes(report: ValidationReport) -> list[str]:
    return [e.code for e in report.errors]


def mv(constraints: str, name: str = "orders", rest: str = "") -> str:
    """A materialized view with these CONSTRAINT clauses."""
    return f"CREATE OR REFRESH MATERIALIZED VIEW {name} (\n{constraints}\n){rest}\nAS SELECT 1;\n"


# --------------------------------------------------------------------------- valid files


@pytest.mark.parametrize("path", VALID_SQL, ids=lambda p: p.name)
def test_lakeflow_style_files_validate_clean(path: Path) -> None:
    report = validate_paths([path])
    assert report.ok, report.to_text()
    assert report.rules_checked > 0


def test_valid_file_exits_0_and_counts_constraints_and_referenced_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # orders.sql: 10 CONSTRAINT clauses, and rules/orders.yml (2 rules) by 'sdp_expect.rules'.
    assert main(["validate", str(PIPELINE_SQL)]) == 0
    out = capsys.readouterr().out
    assert out == "checked 2 files, 12 rules: no errors\n"


def test_a_statement_that_is_not_a_pipeline_statement_is_an_error(tmp_path: Path) -> None:
    """Open-source SDP refuses these in a pipeline's SQL file when the pipeline is
    defined; validate says so first, at each one's line, and reads on."""
    report = check(tmp_path, """
        CREATE FUNCTION f(x INT) RETURNS INT RETURN x + 1;
        CREATE TABLE plain (id INT) USING parquet;
        SELECT 1;
        DROP TABLE whatever;
        INSERT INTO t VALUES (1);
        SET spark.sql.shuffle.partitions = 4;
        USE CATALOG main;
    """)
    assert [error.code for error in report.errors] == ["SDPX-SQL-308"] * 5
    assert report.files_checked == 1 and report.rules_checked == 0


# --------------------------------------------------------------------------- one test per code


def test_val_010_rejected_construct(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT total EXPECT (sum(amount) > 0)"))
    [error] = report.errors
    assert error.code == "SDPX-VAL-010"
    assert error.rule == "line 2, dataset 'orders', expectation 'total'"
    assert error.expectation == "total"
    assert "aggregate function 'sum'" in error.message and "Fix: " in error.message


@pytest.mark.parametrize(
    "constraint",
    ["(SELECT max(id) FROM t) > 0", "row_number() OVER (ORDER BY id) = 1", "rand() < 0.5",
     "size(explode(xs)) > 0", "current_date() > d"],
    ids=["subquery", "window", "nondeterministic", "generator", "clock"],
)
def test_val_010_every_construct_rule_files_reject(tmp_path: Path, constraint: str) -> None:
    report = check(tmp_path, mv(f"  CONSTRAINT c EXPECT ({constraint})"))
    assert codes(report) == ["SDPX-VAL-010"]


def test_val_011_malformed_constraint(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (amount = ) ON VIOLATION DROP ROW"))
    assert codes(report) == ["SDPX-VAL-011"]
    assert report.errors[0].expectation == "c"


def test_val_001_empty_constraint(tmp_path: Path) -> None:
    assert codes(check(tmp_path, mv("  CONSTRAINT c EXPECT ()"))) == ["SDPX-VAL-001"]


def test_val_002_empty_name(tmp_path: Path) -> None:
    assert codes(check(tmp_path, mv("  CONSTRAINT `` EXPECT (id > 0)"))) == ["SDPX-VAL-002"]


def test_val_071_two_constraints_share_a_name(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0),\n  CONSTRAINT c EXPECT (b > 0)"))
    [error] = report.errors
    assert error.code == "SDPX-VAL-071"
    assert error.rule == "line 3, dataset 'orders', expectation 'c'"
    assert "orders.sql:2 and " in error.message


def test_val_071_a_constraint_and_the_rule_file_share_a_name(tmp_path: Path) -> None:
    write(tmp_path, "- {name: c, constraint: b > 0}\n", "rules/r.yml")
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                                rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'rules/r.yml')"))
    assert codes(report) == ["SDPX-VAL-071"]
    assert "rules/r.yml, rule 1" in report.errors[0].message


def test_sql_301_databricks_only_construct(tmp_path: Path) -> None:
    report = validate_paths([LAKEFLOW / "read_files.sql"])
    [error] = report.errors
    assert error.code == "SDPX-SQL-301"
    assert error.file == str(LAKEFLOW / "read_files.sql")
    assert error.rule == "line 4, column 27"
    assert "read_files()" in error.message and "spark.readStream" in error.message
    assert report.rules_checked == 1  # its constraint is still read and checked


def test_sql_301_check_constraint_names_the_expectation(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT pk CHECK (id > 0)"))
    assert codes(report) == ["SDPX-SQL-301"]
    assert report.errors[0].rule == "line 2, column 17, dataset 'orders', expectation 'pk'"


def test_sql_302_syntax_error_with_line_and_column(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0) ON VIOLATION SKIP"))
    [error] = report.errors
    assert error.code == "SDPX-SQL-302"
    assert error.rule == "line 2, column 44, dataset 'orders', expectation 'c'"
    assert "found 'SKIP'" in error.message


def test_sql_302_an_unclosed_quote_is_one_error_for_the_file(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a = 'x)") + mv("  CONSTRAINT d EXPECT ()"))
    assert codes(report) == ["SDPX-SQL-302"]
    assert report.errors[0].rule == "line 2, column 28"


def test_sql_304_unknown_sdp_expect_property(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                                rest="\nTBLPROPERTIES ('sdp_expect.quarantin' = 'true')"))
    assert codes(report) == ["SDPX-SQL-304"]
    assert "'sdp_expect.quarantin'" in report.errors[0].message
    assert report.errors[0].rule == "line 4, column 16, dataset 'orders'"


def test_sql_304_a_tag_without_a_rule_file(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                                rest="\nTBLPROPERTIES ('sdp_expect.rules.tag' = 'x')"))
    assert codes(report) == ["SDPX-SQL-304"]
    assert report.errors[0].rule == "line 1, dataset 'orders'"


def test_sql_305_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.sql"
    path.write_bytes("CREATE MATERIALIZED VIEW café AS SELECT 1".encode("latin-1"))
    report = validate_paths([path])
    assert codes(report) == ["SDPX-SQL-305"]
    assert report.errors[0].rule is None and report.files_checked == 1


@pytest.mark.skipif(
    not hasattr(os, "mkfifo"),
    reason="os.mkfifo exists only on POSIX systems (Linux, macOS): this test needs a named "
    "pipe to show that validate refuses a .sql path that is not a regular file without "
    "blocking on it; the unreadable-file cases above run everywhere",
)
def test_sql_305_not_a_regular_file_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.sql"
    os.mkfifo(fifo)
    assert codes(validate_paths([fifo])) == ["SDPX-SQL-305"]  # and does not hang


# --------------------------------------------------------------------------- rule files named


def test_val_003_a_missing_rule_file_names_the_sql_file_and_line(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                                rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'rules/none.yml')"))
    [error] = report.errors
    assert error.code == "SDPX-VAL-003"
    assert error.file == str(tmp_path / "orders.sql")
    assert error.rule == "line 4, column 16, dataset 'orders'"
    assert "'rules/none.yml'" in error.message and "no such file" in error.message
    assert report.files_checked == 1


def test_errors_of_a_named_rule_file_name_the_rule_file(tmp_path: Path) -> None:
    write(tmp_path, "- {name: a, constraint: x, failureAction: skip}\n- 7\n", "sql/rules/r.yml")
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                                rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'rules/r.yml')"),
                   "sql/orders.sql")
    assert [(e.code, e.file, e.rule) for e in report.errors] == [
        ("SDPX-VAL-006", str(tmp_path / "sql" / "rules" / "r.yml"), "rule 1"),
        ("SDPX-VAL-008", str(tmp_path / "sql" / "rules" / "r.yml"), "rule 2"),
    ]
    assert (report.files_checked, report.rules_checked) == (2, 3)


def test_a_rule_file_that_is_not_yaml_is_reported_with_the_rule_file(tmp_path: Path) -> None:
    write(tmp_path, "- [unclosed\n", "r.yml")
    report = check(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                                rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'r.yml')"))
    assert [(e.code, e.file) for e in report.errors] == [("SDPX-VAL-009", str(tmp_path / "r.yml"))]


def test_the_rule_file_path_starts_at_the_sql_file_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "- {name: r, constraint: b > 0}\n", "project/rules/r.yml")
    sql = write(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                             rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'rules/r.yml')"),
                "project/orders.sql")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = validate_paths([os.path.relpath(sql)])
    assert report.ok, report.to_text()
    assert (report.files_checked, report.rules_checked) == (2, 2)


def test_a_rule_file_named_twice_and_found_in_the_directory_is_checked_once(
    tmp_path: Path,
) -> None:
    write(tmp_path, "- {name: r, constraint: b > 0, failureAction: skip}\n", "rules/r.yml")
    props = "\nTBLPROPERTIES ('sdp_expect.rules' = 'rules/r.yml')"
    write(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)", rest=props)
          + mv("  CONSTRAINT d EXPECT (a > 1)", name="other", rest=props))
    report = validate_paths([tmp_path, tmp_path / "rules" / "r.yml"])
    assert codes(report) == ["SDPX-VAL-006"]
    assert (report.files_checked, report.rules_checked) == (2, 3)


# --------------------------------------------------------------------------- every error


def test_three_bad_constraints_in_three_statements_give_three_errors(tmp_path: Path) -> None:
    report = check(tmp_path, mv("  CONSTRAINT a EXPECT (sum(x) > 0)", name="one")
                   + mv("  CONSTRAINT b EXPECT (x = )", name="two")
                   + mv("  CONSTRAINT c EXPECT ()", name="three"))
    assert codes(report) == ["SDPX-VAL-010", "SDPX-VAL-011", "SDPX-VAL-001"]
    assert [e.expectation for e in report.errors] == ["a", "b", "c"]
    assert report.rules_checked == 3


def test_every_bad_constraint_of_one_statement_is_reported(tmp_path: Path) -> None:
    report = check(tmp_path, mv(",\n".join([
        "  CONSTRAINT a EXPECT (sum(x) > 0)",
        "  CONSTRAINT ok EXPECT (x > 0)",
        "  CONSTRAINT b EXPECT (x = ) ON VIOLATION DROP ROW",
        "  CONSTRAINT ok EXPECT (y > 0)",
        "  CONSTRAINT c EXPECT (z > 0) ON VIOLATION EXPLODE",
    ]), rest="\nTBLPROPERTIES ('sdp_expect.bogus' = 'x')"))
    assert codes(report) == ["SDPX-VAL-010", "SDPX-VAL-011", "SDPX-VAL-071", "SDPX-SQL-302",
                             "SDPX-SQL-304"]
    assert [e.rule.split(",")[0] for e in report.errors if e.rule] == [
        "line 2", "line 4", "line 5", "line 6", "line 8"]
    assert report.rules_checked == 5


def test_errors_come_in_line_order_and_statements_after_an_error_are_read(
    tmp_path: Path,
) -> None:
    report = check(tmp_path, "CREATE OR DELETE x AS SELECT 1;\n"
                   + mv("  CONSTRAINT a EXPECT (x > 0)", rest=" LOCATION '/tmp/x'")
                   + mv("  CONSTRAINT b EXPECT (rand() > 0)", name="two")
                   + "CREATE MATERIALIZED VIEW v (CONSTRAINT c EXPECT (x > 0)) "
                   "AS SELECT * FROM read_files('/x');\n")
    assert codes(report) == ["SDPX-SQL-302", "SDPX-SQL-301", "SDPX-VAL-010", "SDPX-SQL-301"]


def test_auto_cdc_follows_the_installed_spark_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "CREATE FLOW f AS AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY ts;\n"
    real_version = importlib.metadata.version

    def version(spark: str) -> Callable[[str], str]:
        def fake(name: str) -> str:
            if name.startswith("pyspark"):
                if spark == "none":
                    raise importlib.metadata.PackageNotFoundError(name)
                return spark
            return real_version(name)
        return fake

    for spark, expected in (("4.1.0", ["SDPX-SQL-301"]), ("4.3.0", []), ("none", [])):
        monkeypatch.setattr(importlib.metadata, "version", version(spark))
        assert codes(check(tmp_path, text)) == expected, spark


# --------------------------------------------------------------------------- directories, JSON


def test_directory_with_rule_files_and_sql_files(tmp_path: Path) -> None:
    write(tmp_path, "- {name: a, constraint: x > 0}\n", "rules/good.yml")
    write(tmp_path, "- {name: a, constraint: x > 0, action: drop}\n", "rules/bad.yml")
    write(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                       rest="\nTBLPROPERTIES ('sdp_expect.rules' = '../rules/good.yml')"),
          "sql/silver.sql")
    write(tmp_path, mv("  CONSTRAINT g EXPECT (count(*) > 0)", name="gold"), "sql/gold.sql")
    write(tmp_path, "not looked at", "sql/notes.txt")
    report = validate_paths([tmp_path])
    assert [(e.code, Path(e.file).name) for e in report.errors] == [
        ("SDPX-VAL-006", "bad.yml"), ("SDPX-VAL-010", "gold.sql")]
    assert (report.files_checked, report.rules_checked) == (4, 4)


def test_json_output_keeps_its_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, mv("  CONSTRAINT c EXPECT (sum(a) > 0)"))
    assert main(["validate", "--format", "json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"ok", "files_checked", "rules_checked", "errors", "notes"}
    assert report["ok"] is False and report["files_checked"] == 1
    assert report["errors"] == [{
        "code": "SDPX-VAL-010",
        "file": str(path),
        "rule": "line 2, dataset 'orders', expectation 'c'",
        "message": report["errors"][0]["message"],
        "expectation": "c",
    }]
    assert report["errors"][0]["message"].startswith("uses the aggregate function 'sum'")


def test_real_subprocess_without_pyspark(tmp_path: Path) -> None:
    write(tmp_path, "- {name: r, constraint: b > 0}\n", "rules/r.yml")
    write(tmp_path, mv("  CONSTRAINT c EXPECT (a > 0)",
                       rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'rules/r.yml')")
          + "CREATE FLOW f AS AUTO CDC INTO t FROM s KEYS (id) SEQUENCE BY ts;\n"
          + mv("  CONSTRAINT d EXPECT (rand() > 0)", name="other"))
    done = subprocess.run(
        [sys.executable, "-m", "sdp_expect.cli", "validate", "--format", "json", str(tmp_path)],
        capture_output=True, text=True, env=repo_env(), timeout=60,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert "SDPX-VAL-010" in [e["code"] for e in report["errors"]]
    assert (report["files_checked"], report["rules_checked"]) == (2, 3)
    assert_runs_without_pyspark(
        "from sdp_expect.checks.validate import validate_paths\n"
        f"report = validate_paths([{str(tmp_path)!r}])\n"
        "assert not report.ok\n"
    )


# --------------------------------------------------------------------------- speed


def constraints_sql(count: int) -> str:
    """One materialized view with ``count`` varied, valid constraints."""
    shapes = ("col_{i} IS NOT NULL", "amount_{i} >= 0 AND amount_{i} < 1000000",
              "status_{i} IN ('open', 'shipped', 'closed')",
              "length(trim(code_{i})) = 3 OR upper(code_{i}) LIKE 'X%'",
              "CASE WHEN kind_{i} = 'a' THEN price_{i} > 0 ELSE true END")
    actions = ("", " ON VIOLATION DROP ROW", " ON VIOLATION FAIL UPDATE")
    return mv(",\n".join(
        f"  CONSTRAINT rule_{i:04d} EXPECT ({shapes[i % 5].format(i=i)}){actions[i % 3]}"
        for i in range(count)
    ))


def test_1000_constraints_are_all_read_and_checked(tmp_path: Path) -> None:
    # How fast: benchmarks/validate_speed.py (figures in docs/cli.md), not a timed test.
    path = write(tmp_path, constraints_sql(1000))
    report = validate_paths([path])
    assert report.ok and report.rules_checked == 1000
    broken = write(tmp_path, constraints_sql(1000).replace("(col_995 IS NOT NULL)",
                                                           "(col_995 IS NOT)"), "broken.sql")
    assert [e.expectation for e in validate_paths([broken]).errors] == ["rule_0995"]


# --------------------------------------------------------------------------- robustness

SEED_TEXTS = [path.read_text(encoding="utf-8") for path in VALID_SQL[:3]] + [
    mv("  CONSTRAINT c EXPECT (a > 0) ON VIOLATION DROP ROW",
       rest="\nTBLPROPERTIES ('sdp_expect.rules' = 'r.yml', 'sdp_expect.rules.tag' = 't')"),
    "CREATE FLOW f AS INSERT INTO LIVE.t BY NAME SELECT * FROM STREAM(LIVE.s);",
]
FRAGMENTS = [
    "(", ")", ",", ";", "'", '"', "`", "/*", "*/", "--", "\n", " ", "=", ".", "\x00", "é", "\ud7ff",
    "CONSTRAINT", "EXPECT", "ON VIOLATION", "DROP ROW", "FAIL UPDATE", "CHECK", "AS", "CREATE",
    "OR REFRESH", "STREAMING TABLE", "MATERIALIZED VIEW", "LIVE.", "FLOW", "AUTO CDC", "INTO",
    "BY NAME", "TBLPROPERTIES", "'sdp_expect.rules'", "'sdp_expect.quarantine'",
    "'sdp_expect.rules.tag'", "'r.yml'", "'/'", "'..'", "''", "COMMENT", "CLUSTER BY",
    "PARTITIONED BY", "USING", "LOCATION", "read_files(", "sum(", "rand()", "SELECT",
    "IF NOT EXISTS", "TEMPORARY", "PRIVATE", "VIEW", "SET", "USE", "APPLY CHANGES", "MASK",
    "ROW FILTER",
]


@st.composite
def mutated_sql(draw: st.DrawFn) -> str:
    """A seed text with a few fragments inserted and slices removed, or any text."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(max_size=300))
    text = draw(st.sampled_from(SEED_TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
    return text


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "r.yml").write_text("- {name: r, constraint: b > 0, tag: t}\n", encoding="utf-8")
    return folder


@settings(max_examples=int(os.environ.get("SDPX_FUZZ_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mutated_sql())
def test_no_sql_text_makes_validate_crash(fuzz_dir: Path, text: str) -> None:
    path = fuzz_dir / "fuzz.sql"
    path.write_text(text, encoding="utf-8")
    report = validate_paths([path])  # raises nothing
    for error in report.errors:
        assert error.code in ERROR_CATALOGUE
        assert error.file in (str(path), str(fuzz_dir / "r.yml"))
        assert error.message and "Fix: " in error.message
    assert json.loads(report.to_json())["ok"] is report.ok
    assert report.to_text().splitlines()[-1].startswith("checked ")
