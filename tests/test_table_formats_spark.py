"""Pipelines on a table format (Delta Lake): a Spark Connect server per format, started
with the jars and settings ``sdp-expect run`` gives a project whose spec says
``sdp_expect.format`` (:func:`sdp_expect.runtime.format_jars.format_setup`), and
real graphs in it: several flows into one streaming table (exact there, unlike
parquet), a materialized view declared with the format over two updates, every
companion stored in the format, and the history table written and read back.

A format runs on the pyspark lines it has a release for (docs/formats.md); on the
others its tests are skipped with the reason. The jars come from the jar cache
(fetched once; the setup script fills it on a fresh machine). The corpus on the format
is ``test_corpus_formats.py``.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from cli_helpers import read_stored_tables, sdp_expect, sdp_expect_script, set_storage, user_env
from fault_oracle import (
    FIXTURES,
    GroupProcess,
    assert_tables_match,
    make_records,
    oracle,
    write_file,
)
from format_server import TEST_SPEED, provider
from last_good_project import FAILING_MESSAGE, UPDATES, LastGoodProject, Tables
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import Pipeline, SparkServer, committed_batches, copy_project

from sdp_expect import pipelines as dp
from sdp_expect.base import names
from sdp_expect.base.spark_version import spark_has
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT
from sdp_expect.quality.history_table import read_history, record_history
from sdp_expect.runtime.run_output import CAUSED_BY

REPO = Path(__file__).resolve().parent.parent
SCHEMA = "id INT, amount INT, source STRING"
COLUMNS = ["id", "amount", "source"]


pytestmark = pytest.mark.table_formats


def _pipeline(format_server_of: tuple[str, SparkServer], tmp_path: Path) -> Pipeline:
    name, server = format_server_of
    return Pipeline(server, tmp_path, conf={KEY_TABLE_FORMAT: name})


def _write_json(folder: Path, file: str, rows: list[tuple[Any, ...]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text("".join(
        json.dumps(dict(zip(COLUMNS, row, strict=True))) + "\n" for row in rows))


def _flows_into_orders(sources: list[Path]) -> Any:
    def define(spark: SparkSession) -> None:
        dp.create_streaming_table(
            "orders", expect_all={"small": "amount < 10"},
            expect_all_or_drop={"valid_id": "id IS NOT NULL", "not_negative": "amount >= 0"},
            quarantine=True)
        for number, folder in enumerate(sources):
            def flow(folder: Path = folder) -> DataFrame:
                return spark.readStream.schema(SCHEMA).json(str(folder))
            dp.append_flow(target="orders", name=f"from_{number}")(flow)
    return define


def _oracle(rows: list[tuple[Any, ...]]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """What the rules keep and quarantine, computed apart from Spark."""
    def failed(row: tuple[Any, ...]) -> bool:
        return row[0] is None or row[1] is None or row[1] < 0
    return [r for r in rows if not failed(r)], [r for r in rows if failed(r)]


def test_several_flows_into_one_streaming_table_count_every_record(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """SDPX-DEF-112 is for parquet: on a transactional format every flow's records are in
    the table, its quarantine and its metrics, over updates and a full refresh. Three
    flows on the 4.1 line, two on the others (each update on Delta costs tens of
    seconds on CI's two cores: docs/testing.md)."""
    flows = 2 if spark_has((4, 2)) else 3
    name, _ = format_server_of
    pipeline = _pipeline(format_server_of, tmp_path)
    sources = [pipeline.path(f"source{n}") for n in range(flows)]
    pipeline.definitions = _flows_into_orders(sources)
    sent: list[tuple[Any, ...]] = []
    batches: list[list[tuple[Any, ...]]] = [
        [(1, 5, "a"), (None, 3, "a"), (2, -1, "a")], [(3, 12, "b"), (4, None, "b")]]
    for update, rows in enumerate(batches):
        for number, folder in enumerate(sources):
            own = [(None if r[0] is None else r[0] + 100 * number, r[1], f"{r[2]}{number}")
                   for r in rows]
            _write_json(folder, f"{update}.json", own)
            sent += own
        result = pipeline.run()
        assert result.ok, result.output
        kept, quarantined = _oracle(sent)
        spark = pipeline.spark
        assert_df_equality(result.table("orders"), spark.createDataFrame(kept, SCHEMA),
                           ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(result.table("orders_quarantine").drop(*names.QUARANTINE_COLUMNS),
                           spark.createDataFrame(quarantined, SCHEMA),
                           ignore_row_order=True, ignore_nullable=True)
        metrics = {row["expectation"]: row for row in result.rows("orders_dq_metrics")}
        assert metrics["valid_id"]["total_records"] == len(sent)
        assert metrics["not_negative"]["dropped_records"] == len(quarantined)
        assert metrics["small"]["failed_records"] == sum(
            1 for r in sent if r[1] is None or r[1] >= 10)
    for table in ("orders", "orders_quarantine", "orders_dq_metrics", "orders_dq_batches"):
        assert provider(pipeline.spark, f"`{pipeline.database}`.{table}") == name, table
    again = pipeline.run(full_refresh_all=True)
    assert again.ok, again.output
    kept, quarantined = _oracle(sent)
    assert sorted(r["id"] for r in again.rows("orders")) == sorted(r[0] for r in kept)
    assert again.table("orders_quarantine").count() == len(quarantined)
    metrics = {row["expectation"]: row for row in again.rows("orders_dq_metrics")}
    assert metrics["valid_id"]["total_records"] == len(sent)


@pytest.mark.usefixtures("own_jvm")
@pytest.mark.timeout(900)
def test_a_run_killed_mid_update_then_a_complete_run_hold_each_flow_s_records_once(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """Two flows into one streaming table with rules and a quarantine, on the format,
    through ``sdp-expect run`` as a user runs it (the project's own server): the run is
    SIGKILLed with its process group (the server's JVM included) after the first flow
    committed some of the update's micro-batches and not all, more files arrive, and the
    next run completes. Then the table, its quarantine, batch log and metrics hold every
    record of both flows once, as the oracle of ``tests/test_faults.py`` computes them."""
    name, server = format_server_of
    project = copy_project(FIXTURES / "flows", tmp_path / "flows")
    storage = tmp_path / "storage"
    set_storage(project, storage)
    spec = project / "spark-pipeline.yml"
    spec.write_text(spec.read_text() + f"  {KEY_TABLE_FORMAT}: {name}\n")
    rng = random.Random(20261206)
    records: list[dict[str, Any]] = []
    per_file, flows = 20, {"a": {"orders": "from_a"}, "b": {"orders": "from_b"}}

    def add_files(count: int) -> None:
        for _ in range(count):
            index = len(records) // per_file
            batch = make_records(rng, len(records), per_file)
            write_file(project / f"inbox_{'ab'[index % 2]}", index, batch)
            records.extend(batch)

    def commits(system: str) -> int:
        return committed_batches(storage, flows[system])["from_" + system]

    add_files(6)  # three micro-batches a flow (each costs seconds on Delta: few, then)
    # The format server's settings for speed (a Delta log replayed in 2 tasks, not 50)
    command = [sdp_expect_script(), "run", *(argument for key, value in TEST_SPEED.get(name, ())
                                            for argument in ("--conf", f"{key}={value}"))]
    run = GroupProcess(command, project, user_env())
    deadline = time.monotonic() + 400
    while commits("a") < 1 and run.process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    exited = run.process.poll()
    run.kill()
    assert exited is None and commits("a") >= 1, f"no kill moment:\n{run.output[-4000:]}"
    left = {system: commits(system) for system in flows}
    assert left["a"] < 3, (left, "the kill landed after the update: nothing was cut short")
    add_files(2)  # more data arrives before the run that completes
    final = GroupProcess(command, project, user_env())
    assert final.wait(600) == 0, f"killed at {left}\n{final.output[-5000:]}"
    tables = read_stored_tables(server.session(), project / "spark-warehouse", name)
    assert_tables_match(tables, oracle(records), f"killed at {left}: ")


def test_a_view_declared_with_the_format_updates_again_and_again(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """``format="delta"`` as Lakeflow code writes it: SDP would set the provider again on
    the second update, which Delta refuses after emptying the view; sdp-expect leaves
    the project's own format undeclared, so each update succeeds and is right."""
    name, _ = format_server_of
    pipeline = _pipeline(format_server_of, tmp_path)
    pipeline.create_table("raw", [(1, 5, "a"), (2, -1, "a"), (3, 7, "b")], SCHEMA)

    def define(spark: SparkSession) -> None:
        @dp.materialized_view(format=name)
        @dp.expect_or_drop("not_negative", "amount >= 0")
        @dp.quarantine()
        def orders() -> DataFrame:
            return spark.read.table("raw")

    pipeline.definitions = define
    for update in range(3):
        result = pipeline.run()
        assert result.ok, (update, result.output)
        assert sorted(r["id"] for r in result.rows("orders")) == [1, 3]
        assert [r["id"] for r in result.rows("orders_quarantine")] == [2]
    assert provider(pipeline.spark, f"`{pipeline.database}`.orders") == name


def test_the_history_table_is_written_and_read_in_the_format(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """The history's values are literals, never named parameters (which Spark 4.1 leaves
    unbound under Delta's SQL parser): a pipeline name with a quote and a backslash."""
    name, _ = format_server_of
    pipeline = _pipeline(format_server_of, tmp_path)
    pipeline.create_table("raw", [(1, 5, "a"), (2, -1, "a")], SCHEMA)

    def define(spark: SparkSession) -> None:
        @dp.materialized_view()
        @dp.expect("not_negative", "amount >= 0")
        def orders() -> DataFrame:
            return spark.read.table("raw")

    pipeline.definitions = define
    title = "it's a \\ pipeline"
    for _ in range(2):
        assert pipeline.run().ok
        written = record_history(pipeline.spark, pipeline=title, database=pipeline.database,
                                 recent_updates=5)
        assert written.rows == 1
    rows = read_history(pipeline.spark, database=pipeline.database, pipeline=title)
    assert [(r["pipeline"], r["failed_records"], r["total_records"]) for r in rows] == [
        (title, 1, 2), (title, 1, 2)]
    assert len({r["update_id"] for r in rows}) == 2
    assert provider(pipeline.spark, f"`{pipeline.database}`.sdp_expect_dq_history") == name


def test_the_format_s_example_runs_again_and_again_through_sdp_expect_run(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """``examples/<format>`` (what ``scripts/run-example.sh delta`` runs), written as
    Lakeflow code is (``import dlt``, ``format="delta"``, two flows into one streaming
    table): ``sdp-expect run`` twice on the format's server, then every table, read
    through Spark, holds what the example's data and rules give, stored in the format."""
    name, server = format_server_of
    example = REPO / "examples" / name
    assert example.is_dir(), f"no example for {name}"
    project = copy_project(example, tmp_path / name)
    set_storage(project, tmp_path / "storage")
    database = f"example_{uuid.uuid4().hex[:8]}"
    spec = project / "spark-pipeline.yml"
    spec.write_text(spec.read_text() + f"database: {database}\n")
    spark = server.session()
    spark.sql(f"CREATE DATABASE `{database}`")
    for _ in range(2):
        done = sdp_expect("run", "--format", "json", "--remote", server.url, cwd=project)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
        summary = json.loads(done.stdout)
        silver = next(d for d in summary["datasets"] if d["dataset"] == "orders_silver")
        assert (silver["total_records"], silver["dropped_records"]) == (10, 4), silver
    counts = {table: spark.read.table(f"`{database}`.{table}").count() for table in (
        "orders_bronze", "orders_silver", "orders_silver_quarantine", "revenue_by_customer",
        "orders_silver_dq_metrics", "revenue_by_customer_dq_metrics")}
    assert counts == {"orders_bronze": 10, "orders_silver": 6, "orders_silver_quarantine": 4,
                      "revenue_by_customer": 6, "orders_silver_dq_metrics": 3,
                      "revenue_by_customer_dq_metrics": 1}
    assert {provider(spark, f"`{database}`.{table}") for table in counts} == {name}


def test_a_failed_update_leaves_the_last_good_data_in_every_view(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """Good, good, a fail rule violated, good again, through ``sdp-expect run``: after the
    failed update the view, its quarantine and metrics, and the view downstream read
    exactly as after the last good one (restored to the version before the update's
    ``TRUNCATE``), the run exits non-zero with the violation's line, and the next good
    update is right again."""
    name, server = format_server_of
    project = LastGoodProject.create(server, tmp_path / "project",
                                     f"configuration:\n  {KEY_TABLE_FORMAT}: {name}\n")
    last_good = None
    for number, (kind, rows) in enumerate(UPDATES):
        status, summary, events = project.update(rows)
        if kind == "good":
            assert status == 0, events[-3000:]
            assert summary["restored"] == []
            last_good = Tables.of(rows)
            assert project.tables() == last_good, number
            continue
        assert status == 1, events[-3000:]  # as on parquet
        # Delta's writer wraps the fail rule's error in [TASK_WRITE_FAILED]; the message
        # is shown under it, as its own line (tests/test_wrapped_failures.py).
        assert f"{CAUSED_BY}{FAILING_MESSAGE}" in events.splitlines(), events[-3000:]
        restored = {entry["table"]: entry for entry in summary["restored"]}
        assert set(restored) == {"orders", "orders_quarantine", "orders_dq_metrics", "totals"}
        assert all(entry["version"] is not None for entry in restored.values()), restored
        assert project.tables() == last_good, number
        # The history's rows of the failed update say so, and to which version the
        # view went back: one per rule of the restored metrics, with no counts.
        newest = project.history()[-1]
        assert sorted((r["dataset"], r["expectation"], r["outcome"], r["restored_version"],
                       r["total_records"], r["failed_records"]) for r in newest) == [
            ("orders", rule, "FAILED", restored["orders"]["version"], None, None)
            for rule in ("amount_known", "valid_id")], newest
        event = project.server.session().sql(
            "SELECT details:flow_progress.status::string AS status, "
            "details:flow_progress.restored_version::bigint AS version "
            f"FROM `{project.database}`.`{names.EVENT_LOG_VIEW}` "
            f"WHERE origin.update_id = '{newest[0]['update_id']}'").collect()
        assert [(r["status"], r["version"]) for r in event] == [
            ("FAILED", restored["orders"]["version"])], event
    # Every good update's rows are COMPLETED, and the restored one made no point in the
    # rules' trends: three updates recorded counts, one recorded the failure.
    outcomes = [{r["outcome"] for r in update} for update in project.history()]
    assert outcomes == [{"COMPLETED"}, {"COMPLETED"}, {"FAILED"}, {"COMPLETED"}], outcomes
