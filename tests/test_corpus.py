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
with the oracle's numbers. It runs on the newest and the 4.2 line; the 4.1 line runs
the same projects and oracle on Delta Lake instead (``test_corpus_formats.py``, the
``corpus_parquet`` marker: docs/testing.md).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from corpus_oracle import ORACLES, Table
from corpus_project import (
    CORPUS,
    UPDATES,
    CorpusProject,
    assert_tables_equal,
    canonical,
    land,
    metrics_of,
    snapshot,
)
from corpus_project import three_updates as run_three_updates
from sdp_runner import SparkServer

pytestmark = pytest.mark.corpus_parquet

# ---------------------------------------------------------------------------------------
# Three updates of every project
# ---------------------------------------------------------------------------------------
_PROJECTS: dict[str, CorpusProject] = {}


@pytest.fixture(scope="module")
def corpus_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus")


def three_updates(server: SparkServer, tmp: Path, name: str) -> CorpusProject:
    """The project after three updates on the shared server (once per test session)."""
    return run_three_updates(server, tmp, name, _PROJECTS)


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
