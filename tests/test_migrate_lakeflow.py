"""``sdp-expect migrate`` on Lakeflow-style projects, then the migrated projects RUN.

The projects under tests/fixtures/lakeflow/ are written as public Lakeflow
pipelines are: exported notebooks (``# Databricks notebook source``, ``# COMMAND
----------`` cells, ``# MAGIC %md`` cells), Auto Loader sources, ``df.column``
access, ``/Volumes/...`` paths, SQL notebooks without ``;``. Each goes through
migrate with no hand edit and then runs in the shared Spark server
(tests/sdp_runner.py), with its tables checked. ``loan_risk`` holds what migrate
cannot translate: the report names each construct with its file, line and fix,
and the dry-run that migrate makes of its result fails at the source lines.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pyspark
import pytest
from cli_helpers import NEWEST_LINE, REPO, sdp_expect, served

from sdp_expect.base.databricks_functions import DATABRICKS_ONLY_SQL_FUNCTIONS
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.table_formats import DELTA, release_for
from sdp_expect.migrate import CHANGED, NOT_CONVERTED, MigrationResult, migrate

LAKEFLOW = REPO / "tests" / "fixtures" / "lakeflow"

LOANS = [{"loan_id": 1, "grade": "A", "loan_amount": 1000.0, "addr_state": "ca"},
         {"loan_id": 2, "grade": "B", "loan_amount": 2500.5, "addr_state": "ny"},
         {"loan_id": 3, "grade": "A", "loan_amount": -5.0, "addr_state": "tx"},
         {"loan_id": 4, "grade": "D", "loan_amount": 300.0, "addr_state": "wa"}]


def _json_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _data(name: str, root: Path) -> Path:
    """The files that the project's Databricks volume held, under ``root``."""
    if name == "loans_dlt":
        _json_lines(root / "landing" / "loans" / "part-0.json", LOANS)
    elif name == "bike_rides_dp":
        (root / "raw" / "rides").mkdir(parents=True)
        (root / "raw" / "rides" / "rides-0.csv").write_text(
            "ride_id,start_station,duration_min\nr1,s1,10\nr2,s1,20\n,s2,5\nr4,s2,0\n")
    else:
        _json_lines(root / "raw" / "status" / "status-0.json",
                    [{"station_id": 1, "num_bikes_available": 5},
                     {"station_id": None, "num_bikes_available": 3},
                     {"station_id": 2, "num_bikes_available": -1}])
        _json_lines(root / "raw" / "info" / "info-0.json",
                    [{"station_id": 1, "name": "Main St"}, {"station_id": 2, "name": "Park"}])
    return root


def _migrated(name: str, tmp_path: Path) -> MigrationResult:
    src = Path(shutil.copytree(LAKEFLOW / name, tmp_path / "src"))
    data = _data(name, tmp_path / "data")
    return migrate(src, tmp_path / "dst", data_root=str(data))


def _where(result: MigrationResult, kind: str) -> dict[tuple[str, int | None], str]:
    found: dict[tuple[str, int | None], str] = {}
    for finding in result.of(kind):
        found[(finding.file, finding.line)] = found.get((finding.file, finding.line), "") \
            + finding.message + "\n"
    return found


# --------------------------------------------------------------------------- the list


def test_databricks_only_functions_are_not_in_this_spark(spark_server: Any) -> None:
    spark = spark_server.session()
    registry = {row[0].split(".")[-1].lower() for row in spark.sql("SHOW FUNCTIONS").collect()}
    assert len(registry) > 300  # the real registry was read
    present = sorted(name for name in DATABRICKS_ONLY_SQL_FUNCTIONS
                     if name in registry or spark.catalog.functionExists(name))
    assert present == [], f"open-source Spark has these now: take them off the list: {present}"


# --------------------------------------------------------------------------- the reports


def test_python_notebook_report(tmp_path: Path) -> None:
    result = _migrated("loans_dlt", tmp_path)
    assert result.of(NOT_CONVERTED) == []  # markdown cells are not findings
    changed = _where(result, CHANGED)
    file = "transformations/loans_pipeline.py"
    assert "Auto Loader -> spark.readStream.format(\"json\")" in changed[(file, 24)]
    assert "cloudFiles.schemaLocation: dropped" in changed[(file, 24)]
    assert "loans.loan_id -> loans[\"loan_id\"]" in changed[(file, 38)]
    assert "loan_stats.grade -> loan_stats[\"grade\"]" in changed[(file, 46)]
    assert "/Volumes/main/lending/landing -> spark.conf.get(\"sdp_expect.migrate.data_root\")" \
        in changed[(file, 12)]
    text = (tmp_path / "dst" / file).read_text()
    assert "loans.select(loans[\"loan_id\"], loans[\"grade\"], loans[\"loan_amount\"]" in text
    assert 'LANDING = spark.conf.get("sdp_expect.migrate.data_root")' in text
    assert "cloudFiles" not in text.replace("# MAGIC", "")
    assert result.configuration["spark.sql.streaming.schemaInference"] == "true"
    assert result.configuration["sdp_expect.migrate.data_root"] == str(tmp_path / "data" /
                                                                      "landing")


def test_what_cannot_be_translated_is_named_with_file_line_and_fix(tmp_path: Path) -> None:
    src = Path(shutil.copytree(LAKEFLOW / "loan_risk", tmp_path / "src"))
    result = migrate(src, tmp_path / "dst")
    missing = _where(result, NOT_CONVERTED)
    file = "loan_risk.py"
    assert "cloudFiles.schemaEvolutionMode has no open-source equivalent" in missing[(file, 16)]
    assert "Fix: give the full schema with .schema(" in missing[(file, 16)]
    assert "rescuedDataColumn has no open-source equivalent" in missing[(file, 17)]
    assert "ai_classify() in" in missing[(file, 23)] and "UNRESOLVED_ROUTINE" in missing[(file, 23)]
    assert (file, 25) not in missing  # withColumn over a dataset: sdp-expect makes it wait
    # format("delta") is kept, and the spec says the project's tables are Delta.
    assert (file, 31) not in missing
    assert _where(result, CHANGED)[(file, 31)].startswith('format("delta") kept:')
    assert result.configuration["sdp_expect.format"] == "delta"
    assert "notebook magic cell (%sql)" in missing[(file, 35)]
    assert not any("%md" in message for message in missing.values())
    roots = [f for f in result.of(NOT_CONVERTED) if f.file == "spark-pipeline.yml"]
    assert len(roots) == 1  # two paths under one mount: one setting, reported once
    assert "dbfs:/mnt/lending" in roots[0].message and "loan_risk.py:18" in roots[0].message \
        and "loan_risk.py:31" in roots[0].message


def test_a_delta_project_is_converted_whole_and_says_its_format(tmp_path: Path) -> None:
    """``USING DELTA`` in a SQL notebook is kept, and its statement is checked as the run
    of the spec migrate writes (``sdp_expect.format: delta``) sees it: not refused as a
    Delta dataset in a parquet pipeline (SDPX-DEF-120). The project runs on Delta in
    ``test_migrate_formats.py``."""
    src = Path(shutil.copytree(LAKEFLOW / "orders_delta", tmp_path / "src"))
    result = migrate(src, tmp_path / "dst", data_root=str(tmp_path / "data"))
    assert result.of(NOT_CONVERTED) == [], result.of(NOT_CONVERTED)
    assert result.configuration["sdp_expect.format"] == "delta"
    changed = _where(result, CHANGED)
    assert changed[("transformations/revenue.sql", 10)].startswith("USING DELTA kept:")
    assert [s.name for s in result.sql_statements["transformations/revenue.sql"]] == [
        "revenue_by_country"]


def test_sql_notebook_sources_move_into_python(tmp_path: Path) -> None:
    result = _migrated("station_status_sql", tmp_path)
    assert result.of(NOT_CONVERTED) == []
    changed = _where(result, CHANGED)
    assert "cloud_files(...) -> STREAM(station_status_raw_files)" in \
        changed[("station_status.sql", 10)]
    assert "read_files(...) -> STREAM(station_info_raw_files)" in \
        changed[("station_status.sql", 15)]
    sql = (tmp_path / "dst" / "station_status.sql").read_text()
    assert "AS SELECT * FROM STREAM(station_info_raw_files)" in sql
    sources = (tmp_path / "dst" / "databricks_file_sources.py").read_text()
    assert 'spark.readStream.format("json")' in sources
    assert 'spark.conf.get("sdp_expect.migrate.data_root") + "/status"' in sources
    assert result.line_maps["databricks_file_sources.py"][-1] == ("station_status.sql", 15)


# --------------------------------------------------------------------------- the runs


EXPECTED: dict[str, dict[str, list[tuple[Any, ...]]]] = {
    "loans_dlt": {
        "loans_clean": [(1, "A", 1000.0, "CA"), (2, "B", 2500.5, "NY"), (4, "D", 300.0, "WA")],
        "loan_stats": [("A", 1000.0, 1), ("B", 2500.5, 1), ("D", 300.0, 1)],
    },
    "bike_rides_dp": {
        "rides_raw": [("r1", "s1", 10), ("r2", "s1", 20), ("r4", "s2", 0)],
        "rides_per_station": [("s1", 2, 15.0)],
    },
    "station_status_sql": {
        "station_status_clean": [(1, "Main St", 5), (2, "Park", -1)],
    },
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_migrated_project_runs(name: str, tmp_path: Path,
                               make_pipeline: Callable[..., Any]) -> None:
    result = _migrated(name, tmp_path)
    assert result.of(NOT_CONVERTED) == [], result.of(NOT_CONVERTED)
    pipeline = make_pipeline(files=tmp_path / "dst", conf=result.configuration)
    run = pipeline.run()
    assert run.ok, run.output
    for table, rows in EXPECTED[name].items():
        assert sorted(tuple(row.values()) for row in run.rows(table)) == rows, table


# --------------------------------------------------------------------------- true CLI runs


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1200)
@NEWEST_LINE
def test_migrate_checks_its_result_and_the_project_runs(tmp_path: Path) -> None:
    src = Path(shutil.copytree(LAKEFLOW / "loans_dlt", tmp_path / "src"))
    data = _data("loans_dlt", tmp_path / "data")
    done = sdp_expect("migrate", str(src), str(tmp_path / "dst"), "--data-root", str(data),
                      cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing: every construct was converted, and the dry-run passed" in done.stdout
    with served(tmp_path / "dst", keep_tables=True) as warm:
        run = sdp_expect("run", "--format", "json", cwd=tmp_path / "dst")
    assert run.returncode == 0, run.stdout + run.stderr
    tables = warm.tables
    assert sorted((r["grade"], r["total_amount"], r["loans"]) for r in tables["loan_stats"]) \
        == EXPECTED["loans_dlt"]["loan_stats"]
    summary = {d["dataset"]: d for d in json.loads(run.stdout)["datasets"]}
    assert summary["loans_clean"]["dropped_records"] == 1


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(1200)
def test_a_failing_dry_run_is_reported_at_the_source_line(tmp_path: Path) -> None:
    src = Path(shutil.copytree(LAKEFLOW / "loan_risk", tmp_path / "src"))
    done = sdp_expect("migrate", str(src), str(tmp_path / "dst"), "--format", "json",
                      cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["complete"] is False and report["dry_run"]["ok"] is False
    errors = report["dry_run"]["errors"]
    try:  # loan_risk reads a Delta table: the migrated spec says the tables are Delta
        release_for(DELTA, pyspark.__version__)
    except SdpExpectError:
        # No Delta for this pyspark line: the dry-run stops before Spark starts, and
        # says why with the code (docs/formats.md).
        assert [e["file"] for e in errors] == ["."], errors  # the project, not a file
        assert "SDPX-PRJ-404" in errors[0]["message"], errors
        return
    assert errors and all(e["file"] == "loan_risk.py" for e in errors), errors
    # The first definition that fails: loans_bronze, whose files (the data root's
    # setting, not given) are not there. Its line in the migrated file (16: migrate
    # added four lines above it) is mapped back to the source's (12).
    assert [(e["line"], "PATH_NOT_FOUND" in e["message"],
             e["message"].endswith("(migrated file loan_risk.py:16)")) for e in errors] == [
        (12, True, True)], errors
    text = sdp_expect("migrate", str(src), str(tmp_path / "dst2"), "--no-check",
                      cwd=tmp_path).stdout
    assert "every construct was converted" not in text
