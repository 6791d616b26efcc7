"""The Databricks SQL example (examples/sql) with the true ``spark-pipelines`` command.

The project is copied to a temporary folder, run and inspected;
``sdp-expect translate`` prints what the files become. (That a second run
works with the persisted catalog is shown for the Python example in
``test_cli_e2e.py``; one run here keeps the suite fast.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import OLDEST_LINE, user_env
from sdp_runner import copy_project

from sdp_expect import sql

REPO = Path(__file__).resolve().parent.parent
HIVE = ["--conf", "spark.sql.catalogImplementation=hive"]

pytestmark = pytest.mark.usefixtures("own_jvm")


def command(name: str) -> str:
    found = shutil.which(name, path=os.path.dirname(sys.executable))
    assert found, f"{name} is not installed next to this Python"
    return found


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([command(args[0]), *args[1:]], cwd=project, env=user_env(),
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    project = copy_project(REPO / "examples" / "sql", tmp_path / "sql")
    spec = project / "spark-pipeline.yml"
    storage = (tmp_path / "storage").as_uri()
    spec.write_text("\n".join(
        f"storage: {storage}" if line.startswith("storage:") else line
        for line in spec.read_text().splitlines()) + "\n")
    return project


@OLDEST_LINE  # the line scripts/run-example.sh runs it on
def test_sql_example_runs_and_shows_its_tables(example: Path) -> None:
    result = run(example, "spark-pipelines", *HIVE, "run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Run is COMPLETED" in result.stdout + result.stderr
    shown = run(example, sys.executable, str(REPO / "scripts" / "show_tables.py"), ".")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    for table, rows in [("orders_silver", 6), ("orders_silver_quarantine", 4),
                        ("orders_silver_dq_metrics", 3), ("orders_stream_silver", 6),
                        ("orders_stream_silver_quarantine", 4),
                        ("orders_stream_silver_dq_metrics", 2),
                        ("revenue_by_customer", 6), ("revenue_by_customer_dq_metrics", 1)]:
        assert f"== {table} ({rows} rows)" in shown.stdout, shown.stdout


def test_translate_command_prints_the_example_s_open_source_sql(
        example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = ["databricks_sql/gold.sql", "databricks_sql/silver.sql"]
    result = run(example, "sdp-expect", "translate", *files, "--spec", "spark-pipeline.yml")
    assert result.returncode == 0, result.stderr
    monkeypatch.chdir(example)
    expected = sql.translate_files(files, conf={"sdp_expect.quarantine": "true"})
    assert result.stdout == "\n".join(t.text for t in expected)
    assert "CREATE FLOW orders_stream_silver_to_quarantine" in result.stdout
