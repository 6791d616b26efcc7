"""A corpus of real-style Lakeflow / DLT pipelines, run over three updates each.

``tests/corpus/<name>/`` holds small projects written as users of Lakeflow
(Delta Live Tables) write them: ``spark-pipeline.yml`` (libraries and
configuration), transformation files (``import dlt`` Python, ``pyspark.pipelines``
Python, an exported Python notebook, exported SQL notebooks included with
``sql.include``), rule files, and ``arrivals/<update>/<source>/`` the files that
land before each update (``arrivals/fail/`` before a fourth update that violates
a fail rule).

Each project runs through the true command line, ``sdp-expect run --format json
--remote URL``, on the shared Spark Connect server of the test session (a
database of the project's own, ``database:`` in its spec): the command loads the
project's files as ``spark-pipelines`` does and prints the summary, and no test
starts a Spark of its own. Three updates run with new files landing before each;
after every update every table of the project's database (targets, quarantines,
``_dq_batches``, ``_dq_metrics``) is read with Spark and compared, row for row and
count for count, with the plain-Python oracle of ``corpus_oracle.py``, and the
run's JSON summary (each dataset's rules and counts, its quarantine, its status)
with the oracle's numbers. It runs on every pyspark line (docs/testing.md).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import sdp_expect, set_storage
from corpus_oracle import ORACLES, Expected, Table, batch_log_sums
from pyspark.sql.connect.session import SparkSession
from sdp_runner import SparkServer, copy_project

from sdp_expect.base.names import EVENT_LOG_VIEW, HISTORY_TABLE

CORPUS = Path(__file__).resolve().parent / "corpus"
UPDATES = ("1", "2", "3")


# ---------------------------------------------------------------------------------------
# Projects
# ---------------------------------------------------------------------------------------
def spec_of(project: Path) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((project / "spark-pipeline.yml").read_text())
    return spec


def land(name: str, update: str, landing: Path) -> None:
    """The files of one update arrive in the landing folder."""
    arrivals = CORPUS / name / "arrivals" / update
    assert arrivals.is_dir(), arrivals
    for source in arrivals.iterdir():
        target = landing / source.name
        target.mkdir(parents=True, exist_ok=True)
        for file in source.iterdir():
            assert not (target / file.name).exists(), f"{file} landed twice"
            shutil.copy(file, target / file.name)


@dataclass
class CorpusProject:
    """One corpus project, copied, run with ``sdp-expect run`` on the shared server.

    :param root: The copy (its spec names its own storage, landing folder, database).
    :param spark: A session of the shared server, to read the project's tables.
    :param summaries: The JSON summary of each update's run.
    """

    name: str
    root: Path
    landing: Path
    database: str
    server: SparkServer
    spark: SparkSession
    summaries: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Table]] = field(default_factory=list)
    expected: list[Expected] = field(default_factory=list)

    def run(self) -> tuple[int, dict[str, Any], str]:
        """One ``sdp-expect run --format json`` of the project on the shared server: its
        exit status, its JSON summary and its standard error (the events)."""
        done = sdp_expect("run", "--spec", str(self.root), "--format", "json",
                          "--remote", self.server.url, cwd=self.root.parent)
        try:
            summary: dict[str, Any] = json.loads(done.stdout)
        except ValueError:
            pytest.fail(f"{self.name}: no JSON summary (exit {done.returncode}):\n"
                        f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
        return done.returncode, summary, done.stderr


def open_project(server: SparkServer, name: str, tmp: Path) -> CorpusProject:
    root = copy_project(CORPUS / name, tmp / name / "project")
    landing = tmp / name / "landing"
    landing.mkdir()
    set_storage(root, tmp / name / "storage")
    database = f"corpus_{name}_{uuid.uuid4().hex[:8]}"
    spec = root / "spark-pipeline.yml"
    lines = spec.read_text().splitlines()
    assert not any(line.startswith(("database:", "schema:", "catalog:")) for line in lines)
    spec.write_text("\n".join(
        f"  corpus.landing: {landing}" if line.strip().startswith("corpus.landing:") else line
        for line in lines) + f"\ndatabase: {database}\n")
    assert spec_of(root)["configuration"]["corpus.landing"] == str(landing)
    spark = server.session()
    spark.sql(f"CREATE DATABASE `{database}`")
    return CorpusProject(name, root, landing, database, server, spark)


# ---------------------------------------------------------------------------------------
# Comparing the catalog with the oracle
# ---------------------------------------------------------------------------------------
NOT_PIPELINE_TABLES = {HISTORY_TABLE, EVENT_LOG_VIEW}
"""The history table and its view grow with every run, not with the pipeline's data (they
are not pipeline datasets; tests/test_history.py checks them)."""


def snapshot(project: CorpusProject) -> dict[str, Table]:
    """Every table of the project's database, read through Spark (a batch log summed,
    as the oracle gives it: its rows depend on the micro-batches)."""
    tables = {}
    for table in project.spark.catalog.listTables(project.database):
        if table.name in NOT_PIPELINE_TABLES:
            continue
        name = f"`{project.database}`.`{table.name}`"
        # The command's own session wrote it: this session's cached file list is stale.
        project.spark.catalog.refreshTable(name)
        frame = project.spark.read.table(name)
        if table.name.endswith("_dq_batches"):
            tables[table.name] = batch_log_sums(row.asDict() for row in frame.collect())
            continue
        tables[table.name] = Table(tuple(frame.columns), [tuple(row) for row in frame.collect()])
    return tables


def canonical(value: Any) -> Any:
    """One spelling per SQL value: 1, 1.0 and 1.00 of a DECIMAL are one number."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, Decimal)):
        return Decimal(value).normalize()
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return value


def records(table: Table) -> Counter[str]:
    return Counter(repr(tuple(canonical(v) for v in row)) for row in table.rows)


def assert_tables_equal(actual: dict[str, Table], expected: dict[str, Table], context: str
                        ) -> None:
    assert sorted(actual) == sorted(expected), f"{context}: the catalog's tables differ"
    problems = []
    for name in sorted(expected):
        want, got = expected[name], actual[name]
        if got.columns != want.columns:
            problems.append(f"{name}: columns {got.columns} != {want.columns}")
            continue
        missing, extra = records(want) - records(got), records(got) - records(want)
        if missing or extra:
            problems.append(f"{name} {want.columns}:\n    missing {sorted(missing.elements())}"
                            f"\n    unexpected {sorted(extra.elements())}")
    assert not problems, f"{context}:\n  " + "\n  ".join(problems)


def metrics_of(expected: Expected) -> dict[str, dict[str, dict[str, Any]]]:
    """dataset -> rule -> its expected metrics row."""
    shown: dict[str, dict[str, dict[str, Any]]] = {}
    for name, table in expected.tables.items():
        if name.endswith("_dq_metrics"):
            for row in table.rows:
                record = dict(zip(table.columns, row, strict=True))
                shown.setdefault(record["dataset"], {})[record["expectation"]] = record
    return shown


# ---------------------------------------------------------------------------------------
# Three updates of every project
# ---------------------------------------------------------------------------------------
_PROJECTS: dict[str, CorpusProject] = {}


@pytest.fixture(scope="module")
def corpus_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


def three_updates(server: SparkServer, tmp: Path, name: str) -> CorpusProject:
    """The project after three updates (run once per test session)."""
    if name not in _PROJECTS:
        project = open_project(server, name, tmp)
        for update in UPDATES:
            land(name, update, project.landing)
            code, summary, events = project.run()
            assert code == 0 and summary["status"] == "COMPLETED", (
                f"{name}, update {update}: exit {code}\n{events[-6000:]}")
            project.summaries.append(summary)
            project.snapshots.append(snapshot(project))
            expected = ORACLES[name](project.landing)
            assert not expected.violations, (
                f"{name}, update {update}: the corpus data must not violate fail rules here: "
                f"{expected.violations}")
            project.expected.append(expected)
        _PROJECTS[name] = project
    return _PROJECTS[name]


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_every_table_after_each_of_three_updates(spark_server: SparkServer, corpus_tmp: Path,
                                                 name: str) -> None:
    project = three_updates(spark_server, corpus_tmp, name)
    for update, actual, expected in zip(UPDATES, project.snapshots, project.expected,
                                        strict=True):
        assert_tables_equal(actual, expected.tables, f"{name}, after update {update}")


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_the_summary_of_each_of_three_updates(spark_server: SparkServer, corpus_tmp: Path,
                                              name: str) -> None:
    """The JSON summary of ``sdp-expect run`` shows the oracle's numbers: each dataset with
    expectations, updated, its rules (action, constraint, passed, failed, total), its
    records and dropped records, its quarantine; no violation."""
    project = three_updates(spark_server, corpus_tmp, name)
    for update, summary, expected in zip(UPDATES, project.summaries, project.expected,
                                         strict=True):
        assert summary["violations"] == [] and summary["database"] == project.database
        want = metrics_of(expected)
        shown = {d["dataset"]: d for d in summary["datasets"]}
        assert set(shown) == set(want), f"{name}, update {update}"
        for dataset, rules in want.items():
            got = shown[dataset]
            context = (name, update, dataset)
            assert got["status"] == "updated", (context, got)
            assert got["streaming"] == (f"{dataset}_dq_batches" in expected.tables), context
            assert {r["expectation"]: (r["action"], r["constraint"], r["passed_records"],
                                       r["failed_records"], r["total_records"])
                    for r in got["rules"]} == {
                rule: (m["action"], m["constraint"], m["passed_records"],
                       m["failed_records"], m["total_records"])
                for rule, m in rules.items()}, context
            any_rule = next(iter(rules.values()))
            assert (got["total_records"], got["dropped_records"]) == (
                any_rule["total_records"], any_rule["dropped_records"]), context
            quarantine = expected.tables.get(f"{dataset}_quarantine")
            if quarantine is None:
                assert got["quarantine"] is None, (context, got)
            else:
                assert got["quarantine"]["records"] == len(quarantine.rows), context


def test_the_corpus_covers_what_it_is_for() -> None:
    """The corpus keeps its coverage: styles, spellings and settings (a textual check)."""
    text = {path.relative_to(CORPUS).as_posix(): path.read_text()
            for path in CORPUS.rglob("*") if path.suffix in (".py", ".sql", ".yml")}
    python = "\n".join(t for p, t in text.items() if p.endswith(".py"))
    sql = "\n".join(t for p, t in text.items() if p.endswith(".sql"))
    for needle in ["from sdp_expect import dlt", "from sdp_expect import pipelines as dp",
                   "dlt.table", "dlt.view", "dlt.read(", "dlt.read_stream(",
                   "dlt.create_streaming_table(", "dlt.append_flow(", "dlt.expect_all_or_drop(",
                   "dlt.expect_or_fail(", "dp.expect_from_file(", "dp.temporary_view",
                   "withColumn(", "withColumns(", "withColumnRenamed(", "unionByName(",
                   '"left"', '"inner"', '"full"', "groupBy(", "sql.include("]:
        assert needle in python, needle
    notebooks = [t for t in text.values() if t.startswith("# Databricks notebook source")]
    assert notebooks and all("# COMMAND ----------" in t and "# MAGIC %md" in t
                             for t in notebooks)
    sql_notebooks = [t for p, t in text.items() if p.endswith(".sql")]
    assert len(sql_notebooks) >= 3
    assert all(t.startswith("-- Databricks notebook source") for t in sql_notebooks)
    for statement in re.split(r"^-- COMMAND -+$", sql, flags=re.MULTILINE):
        assert not statement.rstrip().endswith(";"), statement
    for needle in ["CREATE OR REFRESH STREAMING TABLE", "CREATE OR REFRESH MATERIALIZED VIEW",
                   "CREATE OR REFRESH LIVE TABLE", "CREATE STREAMING LIVE TABLE",
                   "CREATE LIVE TABLE", "CREATE TEMPORARY LIVE VIEW",
                   "CREATE INCREMENTAL LIVE TABLE", "ON VIOLATION DROP ROW",
                   "ON VIOLATION FAIL UPDATE", "STREAM(LIVE.", "FULL OUTER JOIN", "LEFT JOIN",
                   "'sdp_expect.quarantine' = 'true'"]:
        assert needle in sql, needle


# ---------------------------------------------------------------------------------------
# A fourth update that violates a fail rule, one per family
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FailCase:
    name: str
    dataset: str  # the dataset whose fail rule the new files violate
    streaming: bool
    # Materialized views downstream of it: SDP skips their flows.
    skipped: tuple[str, ...]


FAIL_CASES = [
    # Delta Live Tables Python: a payment larger than what the loan still owes.
    FailCase("loans", "loan_balances", streaming=False, skipped=()),
    # pyspark.pipelines Python: a ride without a start station.
    FailCase("bike_rides", "rides_clean", streaming=True,
             skipped=("station_daily_flow", "member_usage")),
    # Databricks SQL notebooks: an order without a customer.
    FailCase("retail_orders", "orders_silver", streaming=True,
             skipped=("order_totals", "sales_by_country", "customer_orders")),
]


def companions(dataset: str) -> list[str]:
    return [dataset, f"{dataset}_quarantine", f"{dataset}_dq_batches", f"{dataset}_dq_metrics"]


@pytest.mark.parametrize("case", FAIL_CASES, ids=[c.name for c in FAIL_CASES])
def test_a_fourth_update_that_violates_a_fail_rule(spark_server: SparkServer, corpus_tmp: Path,
                                                   case: FailCase) -> None:
    project = three_updates(spark_server, corpus_tmp, case.name)
    before = project.expected[-1].tables
    land(case.name, "fail", project.landing)
    code, summary, events = project.run()
    assert code == 1 and summary["status"] == "FAILED", (
        f"{case.name}: the update should fail (exit {code})\n{events[-4000:]}")
    expected = ORACLES[case.name](project.landing)
    assert set(expected.violations) == {case.dataset}, expected.violations

    # The summary names the dataset, the violated fail rules and a violating record.
    assert summary["violations"], events[-4000:]
    for violation in summary["violations"]:
        assert violation["dataset"] == case.dataset, violation
        shown = violation["record"]
        candidates = [(n, row) for n, row in expected.violations[case.dataset]
                      if all(_same(row[k], v) for k, v in shown.items() if k in row)]
        assert candidates, f"{shown} violates no fail rule of {case.dataset}"
        assert set(violation["expectations"]) <= {n for n, _ in candidates}, (
            violation, candidates)
    flows = {flow.rsplit(".", 1)[-1]: state for flow, state in summary["flows"].items()}
    assert flows[case.dataset] == "FAILED", summary["flows"]
    for dataset in case.skipped:
        assert flows[dataset] == "SKIPPED", (dataset, summary["flows"])
    statuses = {d["dataset"]: d["status"] for d in summary["datasets"]}
    assert statuses[case.dataset] == "failed", statuses

    # What each table holds (README, "Coming from Databricks"): the failed dataset wrote
    # nothing of this update (a streaming table keeps its earlier batches, a materialized
    # view is empty) and its metrics are empty; the materialized views SDP skipped are
    # empty too (OSS SDP resets every materialized view when the update starts); every
    # other dataset holds this update's data.
    wanted = dict(expected.tables)
    for dataset, streaming in [(case.dataset, case.streaming),
                               *((d, False) for d in case.skipped)]:
        for table in companions(dataset):
            if table not in wanted:
                continue
            if table.endswith("_dq_metrics") or not streaming:
                wanted[table] = Table(wanted[table].columns, [])
            else:
                wanted[table] = before[table]
    assert_tables_equal(snapshot(project), wanted, f"{case.name}, failed fourth update")


def _same(value: Any, shown: Any) -> bool:
    """Whether a value of the error line's record (JSON) is the oracle's value."""
    if isinstance(value, dt.date):  # and datetime: "2024-06-04T08:00:00.000Z"
        return isinstance(shown, str) and shown.startswith(value.isoformat())
    if isinstance(shown, float):
        shown = Decimal(str(shown))
    return bool(canonical(value) == canonical(shown))
