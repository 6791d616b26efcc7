"""True ``sdp-expect`` runs on the project's own Spark server (issue 17), with Spark.

* Two projects run at the same time on one machine: each run starts a server of
  its own on a free port, neither waits for the other.
* ``sdp-expect serve`` keeps a project's server warm: a re-run uses it and writes
  the same tables as a cold run (the first project's, above; compared through Spark
  with chispa); after an edit the warm run runs the new code; ``report`` reads through the server.

The fast checks of the same machinery, without Spark, are in test_local_server.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
import pytest
from chispa import assert_df_equality
from cli_helpers import NEWEST_LINE, REPO, sdp_expect, sdp_expect_script, set_storage, user_env
from pyspark.sql import SparkSession
from sdp_runner import copy_project

from sdp_expect import names
from sdp_expect.cli.local_server import read_record

SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
EXAMPLE = "spark42" if SPARK >= (4, 2) else "spark41"

pytestmark = [pytest.mark.usefixtures("own_jvm"), pytest.mark.timeout(1800)]


def example_copy(root: Path) -> Path:
    project = copy_project(REPO / "examples" / EXAMPLE, root / EXAMPLE)
    set_storage(project, root / "storage")
    return project


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """Each dataset's numbers in a run's JSON document (not the run's own details)."""
    return {d["dataset"]: {"total": d["total_records"], "dropped": d["dropped_records"],
                           "rules": [(r["expectation"], r["passed_records"],
                                      r["failed_records"]) for r in d["rules"]],
                           "quarantine": (d["quarantine"] or {}).get("records")}
            for d in document["datasets"]}


EXPECTED = {"orders_silver": {"total": 10, "dropped": 4,
                              "rules": [("recent", 7, 3), ("valid_id", 8, 2),
                                        ("valid_amount", 7, 3)],
                              "quarantine": 4},
            "revenue_by_customer": {"total": 6, "dropped": 0,
                                    "rules": [("revenue_not_negative", 6, 0)],
                                    "quarantine": None}}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass(frozen=True)
class ColdPair:
    """Two copies of the example, run cold at the same time (``sdp-expect run``)."""

    projects: list[Path]
    outputs: list[tuple[int, str, str]]  # exit status, stdout, stderr
    seconds: float  # the wall time of both


@pytest.fixture(scope="module")
def cold_pair(tmp_path_factory: pytest.TempPathFactory) -> ColdPair:
    """The module's cold runs: both tests start from them (the warm test from the first
    project's), so the example is run cold here twice at once, not once more alone."""
    root = tmp_path_factory.mktemp("parallel")
    projects = [example_copy(root / name) for name in ("first", "second")]
    began = time.monotonic()
    runs = [subprocess.Popen([sdp_expect_script(), "run", "--format", "json"], cwd=project,
                             env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for project in projects]
    outputs = [(run, *run.communicate(timeout=900)) for run in runs]
    return ColdPair(projects, [(run.returncode, out, err) for run, out, err in outputs],
                    time.monotonic() - began)


@NEWEST_LINE
def test_two_projects_run_at_the_same_time(cold_pair: ColdPair) -> None:
    projects = cold_pair.projects
    documents = []
    for code, out, err in cold_pair.outputs:
        assert code == 0, out + err
        assert "waiting" not in err
        documents.append(json.loads(out))
    first, second = documents
    # Each ran on a server of its own, on its own port: not Spark's fixed 15002
    assert first["server"]["port"] != second["server"]["port"]
    assert 15002 not in (first["server"]["port"], second["server"]["port"])
    assert not first["server"]["warm"] and not second["server"]["warm"]
    # Neither waited for the other: the two pipelines ran at the same time
    assert first["started_at"] < second["finished_at"], (first, second)
    assert second["started_at"] < first["finished_at"], (first, second)
    for project, document in zip(projects, documents, strict=True):
        assert summary(document) == EXPECTED
        assert Path(document["log"]).parent == project / ".sdp-expect" / "logs"
        assert (project / "metastore_db").is_dir() and (project / "spark-warehouse").is_dir()
        assert not alive(document["server"]["pid"])  # stopped with its run
        assert read_record(project) is None


def session(url: str, token: str) -> SparkSession:
    """A new Spark Connect session on the project's server.

    New for every reading, as every run's is: a session keeps the file listing of the
    tables it read, and a later run of the pipeline rewrites their files.
    """
    created: SparkSession = SparkSession.builder.remote(f"{url}/;token={token}").create()
    return created


def read_tables(spark: SparkSession) -> dict[str, Any]:
    """Every table of the default database: its schema and rows (not the history table
    and its view, which every run appends to: tests/test_history.py)."""
    found = {}
    for table in spark.catalog.listTables("default"):
        if table.name in (names.HISTORY_TABLE, names.EVENT_LOG_VIEW):
            continue
        frame = spark.table(f"default.`{table.name}`")
        found[table.name] = (frame.schema, frame.collect())
    return found


@NEWEST_LINE
def test_a_warm_run_writes_what_a_cold_run_writes(cold_pair: ColdPair) -> None:
    project = cold_pair.projects[0]
    code, out, err = cold_pair.outputs[0]
    assert code == 0, out + err
    cold_run = json.loads(out)
    assert cold_run["server"]["warm"] is False and summary(cold_run) == EXPECTED
    served = sdp_expect("serve", "--background", cwd=project)
    assert served.returncode == 0, served.stdout + served.stderr
    record = read_record(project)
    assert record is not None
    sessions: list[SparkSession] = []

    def spark() -> SparkSession:
        sessions.append(session(record.url, record.token))
        return sessions[-1]

    try:
        before = read_tables(spark())  # the cold run's tables, as it left them
        assert {"orders_silver", "orders_silver_quarantine", "orders_silver_dq_metrics",
                "revenue_by_customer_dq_metrics"} <= set(before)

        began = time.monotonic()
        warm = sdp_expect("run", "--format", "json", cwd=project)
        warm_seconds = time.monotonic() - began
        assert warm.returncode == 0, warm.stdout + warm.stderr
        warm_run = json.loads(warm.stdout)
        assert warm_run["server"] == {"url": record.url, "port": record.port,
                                      "pid": record.pid, "warm": True}
        assert "a local Spark Connect server on port" not in warm.stderr  # none started
        assert summary(warm_run) == summary(cold_run)
        reader = spark()
        after = read_tables(reader)
        assert set(after) == set(before)
        for name, (schema, rows) in before.items():
            assert_df_equality(reader.table(f"default.`{name}`"),
                               reader.createDataFrame(rows, schema),
                               ignore_row_order=True, ignore_nullable=False)

        # An edit: the warm server runs the new definition, not one it remembers
        silver = project / "transformations" / "silver.py"
        silver.write_text(silver.read_text().replace(
            "@dp.expect_from_file(", '@dp.expect("small", "amount < 100")\n@dp.expect_from_file('))
        edited = sdp_expect("run", "--format", "json", cwd=project)
        assert edited.returncode == 0, edited.stdout + edited.stderr
        rules = summary(json.loads(edited.stdout))["orders_silver"]["rules"]
        assert [name for name, _, _ in rules] == ["small", "recent", "valid_id", "valid_amount"]
        assert sorted(row["expectation"] for row in
                      spark().table("default.orders_silver_dq_metrics").collect()) == sorted(
            ["small", "recent", "valid_id", "valid_amount"])

        # The warm server holds the catalog: report reads through it
        report = sdp_expect("report", "--format", "json", cwd=project)
        assert report.returncode == 0, report.stdout + report.stderr
        assert summary(json.loads(report.stdout))["revenue_by_customer"] == \
            EXPECTED["revenue_by_customer"]
    finally:
        for opened in sessions:
            opened.stop()
        stopped = sdp_expect("serve", "--stop", cwd=project)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not alive(record.pid) and read_record(project) is None
    print(f"two cold runs at once {cold_pair.seconds:.1f} s, warm re-run {warm_seconds:.1f} s")
