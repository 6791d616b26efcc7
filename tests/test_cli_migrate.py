"""``sdp-expect migrate``: Databricks Lakeflow / DLT projects to open-source SDP.

The fixtures under tests/fixtures/cli/ are written as the Lakeflow docs write
pipelines: ``from pyspark import pipelines as dp``, ``import dlt``, ``spark``
used without being defined, ``LIVE.`` names, SQL with ``CREATE OR REFRESH ...
CONSTRAINT ... EXPECT``, a Databricks Asset Bundle. One migrated project is
run end to end with ``sdp-expect run``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPO, Tables, sdp_expect, served

from sdp_expect.migrate import is_pipeline_sql, migrate_python

FIXTURES = REPO / "tests" / "fixtures" / "cli"
PROJECT = FIXTURES / "databricks_project"
DATABRICKS_ONLY = FIXTURES / "databricks_only"


def tree_hash(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the hash of its bytes, and its mode."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            + oct(p.stat().st_mode) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A copy of the Databricks-only fixture (so that even a bug cannot touch the repo)."""
    return Path(shutil.copytree(DATABRICKS_ONLY, tmp_path / "src"))


def test_every_databricks_only_construct_is_reported_with_file_and_line(
        src: Path, tmp_path: Path) -> None:
    before = tree_hash(src)
    result = sdp_expect("migrate", str(src), str(tmp_path / "dst"), "--format", "json",
                        "--no-check", cwd=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr  # written, but incomplete
    assert tree_hash(src) == before  # SRC is never modified
    report = json.loads(result.stdout)
    found = {(f["file"], f["line"]): f["message"] for f in report["not_converted"]}
    expected = {
        ("ingest.py", 8): "argument private= of dlt.table is Databricks-only",
        ("ingest.py", 15): "dlt.apply_changes is not available",
        ("ingest.py", 21): "dbutils is Databricks-only",
        ("notebook.py", 2): "notebook magic cell (%pip)",
        ("notebook.py", 10): "argument row_filter= of dp.table",
        ("notebook.py", 16): "notebook magic cell (%sql)",
        ("ingest.sql", 6): "APPLY CHANGES INTO is Databricks-only",
        ("ingest.sql", 17): "ai_summarize() is a Databricks-only SQL function",
    }
    for where, words in expected.items():
        assert where in found and words in found[where], (where, found)
    roots = [f["message"] for f in report["not_converted"] if f["file"] == "spark-pipeline.yml"]
    assert len(roots) == 2  # one setting per volume, each reported once
    assert any("stands for /Volumes/main/raw/orders (used at ingest.py:5)" in m for m in roots)
    assert any("argument path= of dlt.table" in f["message"] for f in report["not_converted"]
               if (f["file"], f["line"]) == ("ingest.py", 8))
    changed = {(f["file"], f["line"]): f["message"] for f in report["changed"]}
    assert changed[("ingest.py", 5)].startswith("/Volumes/main/raw/orders -> spark.conf.get(")
    assert changed[("ingest.py", 10)].startswith('Auto Loader -> spark.readStream.format("json")')
    assert changed[("ingest.sql", 2)].startswith("read_files(...) -> STREAM(raw_events_files)")
    # USING DELTA is kept: the spec says the project's tables are Delta (docs/formats.md).
    assert changed[("ingest.sql", 16)].startswith("USING DELTA kept:")
    assert any(f["message"].startswith("configuration sdp_expect.format: delta")
               for f in report["changed"] if f["file"] == "spark-pipeline.yml")
    assert changed[("notebook.py", 6)] == (
        "`import pyspark.pipelines as dp, os` -> `import os; from sdp_expect import pipelines "
        "as dp`")
    assert changed[("ingest.py", 22)].startswith('"LIVE.raw_orders" -> "raw_orders"')
    text = sdp_expect("migrate", str(src), str(tmp_path / "dst2"), "--no-check",
                      cwd=tmp_path).stdout
    assert "  ingest.py:8: argument path= of dlt.table is Databricks-only" in text
    assert "  ingest.sql:6: [SDPX-SQL-301] APPLY CHANGES INTO is Databricks-only" in text
    assert "Dry-run: not run (--no-check)" in text


def test_destination_must_be_new_and_outside_the_source(src: Path, tmp_path: Path) -> None:
    before = tree_hash(src)
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    for dst in (full, src / "inside"):
        result = sdp_expect("migrate", str(src), str(dst), cwd=tmp_path)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "sdp-expect migrate: error:" in result.stderr
    assert (full / "keep.txt").read_text() == "mine"
    assert tree_hash(src) == before


def test_python_is_rewritten_minimally() -> None:
    source = (PROJECT / "transformations" / "orders_silver.py").read_bytes()
    migrated = migrate_python(source, "orders_silver.py", frozenset({"utilities"}))
    diff = [line for line in difflib.unified_diff(source.decode().splitlines(),
                                                  migrated.text.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert diff == [
        "-import dlt",
        "+from sdp_expect import dlt",
        "+from pyspark.sql import SparkSession",
        "+",
        "+# Spark 4.1 does not define `spark` in pipeline files (4.2+ does).",
        "+spark = SparkSession.active()",
        '-    return spark.read.table("LIVE.orders_bronze")',
        '+    return spark.read.table("orders_bronze")',
    ]
    assert migrated.pipeline
    already = migrate_python(b"import dlt\nfrom pyspark.sql import SparkSession\n"
                             b"spark = SparkSession.active()\n", "x.py")
    assert already.text == ("from sdp_expect import dlt\nfrom pyspark.sql import SparkSession\n"
                            "spark = SparkSession.active()\n")


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("migrate")
    src = Path(shutil.copytree(PROJECT, root / "databricks"))
    before = tree_hash(src)
    result = sdp_expect("migrate", str(src), str(root / "oss"), "--no-check", cwd=root)
    assert tree_hash(src) == before
    return result, root / "oss", before


@pytest.fixture(scope="module")
def migrated_run(migrated: tuple[Any, Path, dict[str, str]]) -> tuple[Any, Tables]:
    """The migrated project's run, and its tables read through the same warm server."""
    _, dst, _ = migrated
    with served(dst, keep_tables=True) as warm:
        run = sdp_expect("run", "--format", "json", cwd=dst)
    return run, warm.tables


def test_migrate_prints_what_it_changed(migrated: tuple[Any, Path, dict[str, str]]) -> None:
    result, dst, _ = migrated
    out = result.stdout
    assert result.returncode == 3, out + result.stderr  # the bundle's Databricks settings
    for line in (
            "transformations/orders_bronze.py:3: `from pyspark import pipelines as dp` -> "
            "`from sdp_expect import pipelines as dp`",
            "transformations/orders_silver.py:2: `import dlt` -> `from sdp_expect import dlt`",
            "transformations/orders_silver.py:11: \"LIVE.orders_bronze\" -> \"orders_bronze\"",
            "transformations/customer_totals.sql: kept as written; registered by "
            "databricks_sql.py",
            "resources/orders.pipeline.yml:6: pipeline setting `catalog` not carried over",
            "resources/orders.pipeline.yml:8: pipeline setting `serverless` not carried over",
            "explorations/peek.sql: no pipeline dataset in it"):
        assert line in out, out
    assert out.count("added `spark = SparkSession.active()`") == 2
    assert (dst / "transformations" / "customer_totals.sql").read_bytes() == \
        (PROJECT / "transformations" / "customer_totals.sql").read_bytes()
    assert 'sql.include("transformations/customer_totals.sql")' in \
        (dst / "databricks_sql.py").read_text()
    spec = (dst / "spark-pipeline.yml").read_text()
    assert "include: transformations/orders_bronze.py" in spec
    assert "include: databricks_sql.py" in spec and "orders.region: eu" in spec


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1200)
def test_migrated_project_runs_and_gives_the_expected_tables(
        migrated: tuple[Any, Path, dict[str, str]], migrated_run: tuple[Any, Tables]) -> None:
    run, tables = migrated_run
    assert run.returncode == 0, run.stdout + run.stderr
    summary = json.loads(run.stdout)
    shown = {d["dataset"]: d for d in summary["datasets"]}
    silver, totals = shown["orders_silver"], shown["customer_totals"]
    assert (silver["total_records"], silver["dropped_records"]) == (4, 1)
    assert [(r["expectation"], r["action"], r["passed_records"], r["failed_records"])
            for r in silver["rules"]] == [("positive_amount", "warn", 3, 1),
                                          ("valid_id", "drop", 3, 1)]
    assert (totals["total_records"], totals["dropped_records"]) == (3, 1)
    assert [(r["expectation"], r["action"], r["passed_records"], r["failed_records"])
            for r in totals["rules"]] == [("known_customer", "drop", 2, 1)]
    assert sorted(r["order_id"] for r in tables["orders_silver"]) == [1, 2, 4]
    assert sorted((r["customer"], float(r["total"]), r["orders"])
                  for r in tables["customer_totals"]) == [("alice", 10.0, 1), ("bob", -5.0, 1)]
    assert len(tables["orders_bronze"]) == 4


def test_spark_goes_after_the_leading_comments_when_no_import_comes_first() -> None:
    source = (b"# Databricks notebook source\ntry:\n    import dlt\nexcept ImportError:\n"
              b"    dlt = None\n\n@dlt.table\ndef x():\n    return spark.range(1)\n")
    migrated = migrate_python(source, "nb.py")
    assert migrated.text.splitlines()[:5] == [
        "# Databricks notebook source",
        "from pyspark.sql import SparkSession",
        "# Spark 4.1 does not define `spark` in pipeline files (4.2+ does).",
        "spark = SparkSession.active()",
        "",
    ]
    assert "    from sdp_expect import dlt" in migrated.text
    compile(migrated.text, "nb.py", "exec")


@pytest.mark.parametrize("text", [
    "CREATE OR REFRESH STREAMING TABLE t AS SELECT * FROM STREAM(s)",
    "CREATE OR REFRESH LIVE TABLE t AS SELECT 1",
    "CREATE TEMPORARY LIVE VIEW v AS SELECT 1",
    "CREATE TEMPORARY VIEW v AS SELECT 1",
    "CREATE STREAMING TABLE t;\nCREATE FLOW f AS INSERT INTO t BY NAME SELECT * FROM STREAM(s)",
    "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(s) KEYS (id) SEQUENCE BY ts",
    # With errors the statement is still a dataset: migrate rewrites or reports them.
    "CREATE OR REFRESH STREAMING TABLE raw AS SELECT * FROM cloud_files('/data', 'json')",
    "CREATE MATERIALIZED VIEW m LOCATION '/x' AS SELECT 1",
    "CREATE MATERIALIZED VIEW m COMMENT 'never closed AS SELECT 1",
    "-- Databricks notebook source\n-- MAGIC %sql\n-- MAGIC CREATE LIVE TABLE a AS SELECT 1",
])
def test_a_sql_file_declaring_a_dataset_or_a_flow_is_a_pipeline_file(text: str) -> None:
    assert is_pipeline_sql(text)


@pytest.mark.parametrize("text", [
    "SELECT * FROM t",
    "CREATE TABLE t (id INT, flow STRING)",
    "CREATE VIEW v AS SELECT 1",
    "-- CREATE STREAMING TABLE t\nSELECT 1 /* CREATE MATERIALIZED VIEW m */",
    "SELECT 'CREATE MATERIALIZED VIEW m'",
    "CREATE TABLE t AS SELECT 1; SELECT x AS live, y AS view FROM t",
    "",
])
def test_a_sql_file_without_a_dataset_or_a_flow_is_not_a_pipeline_file(text: str) -> None:
    assert not is_pipeline_sql(text)
