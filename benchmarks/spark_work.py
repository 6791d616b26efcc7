"""The work a Spark server did between two moments, read from its event log.

A pipeline update's wall clock is not a measure of its work on open-source SDP:
the update loop looks at its flows once per
``spark.sql.pipelines.execution.streamstate.pollingInterval`` (1 s, whole
seconds), so an update lasts whole seconds plus registration, and two runs of
the same code differ by a second. What the server did is in Spark's own event
log (``spark.eventLog.enabled``): one JSON object per line, written by Spark's
``EventLoggingListener``. This module reads the lines written since an offset
and sums them: SQL executions and jobs started, the tasks' run and CPU time,
and the time during which at least one SQL execution was running (the wall
clock without the loop's idle waits).

Read, not parsed back: the event log is Spark's structured record of what ran,
written for the history server; no printed plan is read.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

_SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
_SQL_END = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd"
_PROGRESS = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"


def server_conf(folder: Path) -> list[tuple[str, str]]:
    """The Spark settings that make a server write an uncompressed event log into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    return [("spark.eventLog.enabled", "true"), ("spark.eventLog.compress", "false"),
            ("spark.eventLog.rolling.enabled", "false"),  # one file, not a folder of parts
            ("spark.eventLog.dir", folder.as_uri())]


@dataclass(frozen=True)
class Work:
    """What the server did in a stretch of its event log."""

    sql_executions: int
    """SQL executions started (each a plan the server planned and ran)."""
    jobs: int
    """Spark jobs started."""
    tasks: int
    """Tasks ended."""
    task_s: float
    """The tasks' run time, summed (``Executor Run Time``), in seconds."""
    cpu_s: float
    """The tasks' CPU time, summed (``Executor CPU Time``), in seconds."""
    busy_s: float
    """Seconds during which at least one SQL execution was running."""


@dataclass(frozen=True)
class FlowWork:
    """What one streaming query (an SDP flow) did in a stretch of the event log: its
    micro-batches' progress (``StreamingQueryProgress``) and the tasks of its jobs."""

    micro_batches: int
    """Micro-batches that reported progress."""
    batch_s: float
    """Their durations (``batchDuration``: offsets, planning, the batch, the commits), summed."""
    planning_s: float
    """Of which planning the micro-batch (``durationMs.queryPlanning``), summed."""
    add_batch_s: float
    """Of which running the micro-batch into the sink (``durationMs.addBatch``), summed."""
    tasks: int
    """Tasks ended of the query's jobs (``sql.streaming.queryId`` of the job)."""
    task_s: float
    """Their run time (``Executor Run Time``), summed, in seconds."""
    cpu_s: float
    """Their CPU time (``Executor CPU Time``), summed, in seconds."""


class EventLog:
    """The event log of one server: the one file Spark writes into ``folder``.

    :param folder: The server's ``spark.eventLog.dir``.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _file(self) -> Optional[Path]:
        files = [p for p in self.folder.iterdir() if p.is_file()]
        if len(files) > 1:
            raise RuntimeError(f"more than one event log in {self.folder}: "
                               f"{sorted(p.name for p in files)}")
        return files[0] if files else None

    def offset(self) -> int:
        """Where the log ends now (0 before the server wrote it)."""
        path = self._file()
        return path.stat().st_size if path else 0

    def _events(self, offset: int) -> list[dict[str, Any]]:
        path = self._file()
        if path is None:
            return []
        with open(path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
        # A line still being written has no newline yet: leave it for the next read.
        complete = text[: text.rfind("\n") + 1]
        return [json.loads(line) for line in complete.splitlines() if line.strip()]

    def _settled(self, offset: int, settle_s: float) -> list[dict[str, Any]]:
        """The events logged after ``offset``, once every SQL execution begun has ended.

        Spark's listener writes from a queue of its own, so the last events of a
        run may land a moment after the run returned: wait (up to ``settle_s``)
        until every SQL execution started since ``offset`` has its end event.
        """
        deadline = time.monotonic() + settle_s
        while True:
            events = self._events(offset)
            started = {e["executionId"] for e in events if e["Event"] == _SQL_START}
            ended = {e["executionId"] for e in events if e["Event"] == _SQL_END}
            if started <= ended or time.monotonic() > deadline:
                return events
            time.sleep(0.1)

    def work_since(self, offset: int, settle_s: float = 10.0) -> Work:
        """The work logged after ``offset`` (:meth:`_settled`)."""
        return summarise(self._settled(offset, settle_s))

    def streaming_since(self, offset: int, settle_s: float = 10.0) -> dict[str, FlowWork]:
        """The work of each streaming query logged after ``offset`` (:meth:`_settled`)."""
        return summarise_streaming(self._settled(offset, settle_s))


def summarise(events: list[dict[str, Any]]) -> Work:
    """The :class:`Work` of a list of event-log events."""
    starts = {e["executionId"]: e["time"] for e in events if e["Event"] == _SQL_START}
    spans = sorted((starts[e["executionId"]], e["time"]) for e in events
                   if e["Event"] == _SQL_END and e["executionId"] in starts)
    busy_ms, reach = 0, None
    for begin, end in spans:  # the union of the executions' spans
        if reach is None or begin > reach:
            busy_ms += end - begin
            reach = end
        elif end > reach:
            busy_ms += end - reach
            reach = end
    metrics = [e.get("Task Metrics") or {} for e in events if e["Event"] == "SparkListenerTaskEnd"]
    return Work(
        sql_executions=len(starts),
        jobs=sum(1 for e in events if e["Event"] == "SparkListenerJobStart"),
        tasks=len(metrics),
        task_s=sum(m.get("Executor Run Time", 0) for m in metrics) / 1e3,
        cpu_s=sum(m.get("Executor CPU Time", 0) for m in metrics) / 1e9,
        busy_s=busy_ms / 1e3,
    )


def summarise_streaming(events: list[dict[str, Any]]) -> dict[str, FlowWork]:
    """The :class:`FlowWork` of each streaming query in a list of event-log events, by
    the query's name without its catalog and schema (SDP names a flow's query after the
    flow: ``spark_catalog.<schema>.<flow>``)."""
    progress = [e["progress"] for e in events if e["Event"] == _PROGRESS]
    names = {p["id"]: p["name"].rsplit(".", 1)[-1] for p in progress if p.get("name")}
    stage_query: dict[int, str] = {}
    for e in events:
        if e["Event"] == "SparkListenerJobStart":
            query = (e.get("Properties") or {}).get("sql.streaming.queryId")
            if query in names:
                stage_query.update((stage, names[query]) for stage in e["Stage IDs"])
    tasks: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stage_query:
            tasks.setdefault(stage_query[e["Stage ID"]], []).append(e.get("Task Metrics") or {})
    out = {}
    for name in sorted(set(names.values())):
        own = [p for p in progress if names.get(p["id"]) == name]
        metrics = tasks.get(name, [])
        out[name] = FlowWork(
            micro_batches=len(own),
            batch_s=sum(p.get("batchDuration", 0) for p in own) / 1e3,
            planning_s=sum(p["durationMs"].get("queryPlanning", 0) for p in own) / 1e3,
            add_batch_s=sum(p["durationMs"].get("addBatch", 0) for p in own) / 1e3,
            tasks=len(metrics),
            task_s=sum(m.get("Executor Run Time", 0) for m in metrics) / 1e3,
            cpu_s=sum(m.get("Executor CPU Time", 0) for m in metrics) / 1e9,
        )
    return out
