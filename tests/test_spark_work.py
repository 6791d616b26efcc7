"""The benchmarks' reader of Spark's event log (benchmarks/spark_work.py): what it sums
per run and per streaming flow, on events in the shape Spark writes them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from spark_work import FlowWork, summarise, summarise_streaming

PROGRESS = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"
SQL = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecution"


def progress(query: str, name: str, batch_ms: int, planning_ms: int, add_ms: int
             ) -> dict[str, Any]:
    return {"Event": PROGRESS, "progress": {
        "id": query, "name": name, "batchDuration": batch_ms,
        "durationMs": {"queryPlanning": planning_ms, "addBatch": add_ms, "walCommit": 5}}}


def job(stages: list[int], query: str | None) -> dict[str, Any]:
    properties = {} if query is None else {"sql.streaming.queryId": query}
    return {"Event": "SparkListenerJobStart", "Stage IDs": stages, "Properties": properties}


def task(stage: int, run_ms: int, cpu_ns: int) -> dict[str, Any]:
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage,
            "Task Metrics": {"Executor Run Time": run_ms, "Executor CPU Time": cpu_ns}}


def test_each_flow_gets_its_own_micro_batches_and_the_tasks_of_its_jobs() -> None:
    events = [
        job([1], "q-target"), task(1, 40, 10_000_000),
        progress("q-target", "spark_catalog.db.orders", 500, 20, 300),
        job([2, 3], "q-log"), task(2, 60, 20_000_000), task(3, 5, 1_000_000),
        progress("q-log", "spark_catalog.db.orders_to_dq_batches", 700, 30, 400),
        job([4], None), task(4, 1000, 900_000_000),  # a batch query: no flow's work
        job([5], "q-target"), task(5, 50, 12_000_000),
        progress("q-target", "spark_catalog.db.orders", 300, 10, 200),
    ]
    work = summarise_streaming(events)
    assert work == {
        "orders": FlowWork(micro_batches=2, batch_s=0.8, planning_s=0.03, add_batch_s=0.5,
                           tasks=2, task_s=0.09, cpu_s=0.022),
        "orders_to_dq_batches": FlowWork(micro_batches=1, batch_s=0.7, planning_s=0.03,
                                         add_batch_s=0.4, tasks=2, task_s=0.065, cpu_s=0.021),
    }


def test_a_query_that_reported_no_progress_is_not_a_flow() -> None:
    events = [job([1], "q-unknown"), task(1, 40, 10_000_000)]
    assert summarise_streaming(events) == {}


def test_busy_time_is_the_union_of_the_sql_executions() -> None:
    events = [
        {"Event": SQL + "Start", "executionId": 1, "time": 1000},
        {"Event": SQL + "Start", "executionId": 2, "time": 1500},
        {"Event": SQL + "End", "executionId": 1, "time": 2000},
        {"Event": SQL + "End", "executionId": 2, "time": 2500},
        {"Event": SQL + "Start", "executionId": 3, "time": 4000},
        {"Event": SQL + "End", "executionId": 3, "time": 4100},
        job([1], None), task(1, 70, 30_000_000),
    ]
    work = summarise(events)
    assert (work.sql_executions, work.jobs, work.tasks) == (3, 1, 1)
    assert work.busy_s == 1.6  # 1.0-2.5 s and 4.0-4.1 s
    assert (work.task_s, work.cpu_s) == (0.07, 0.03)
