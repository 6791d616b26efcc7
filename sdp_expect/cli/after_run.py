"""What ``sdp-expect run`` does once the pipeline's flows are done: read the data-quality
tables for the summary, and append the update's rows to the history table.

``spark-pipelines`` ends a run about two seconds after its last flow completes (SDP's
scheduler looks at its flows once a second, and ends the run on a later look). A run
through a Spark Connect server (the project's own, or a ``--remote``) therefore starts
this work as soon as every flow has completed, in a thread, while the pipeline program
is still ending (:class:`AfterFlows`); the summary is then built from the run's final
events. A run whose flows did not all complete (a failure, a retry, a cancelled run)
and a run on a local catalog (whose metastore admits one process at a time) do it after
the program has ended, as before.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from sdp_expect.base.definitions import DefinedDataset
from sdp_expect.base.project import Project
from sdp_expect.base.table_formats import run_format
from sdp_expect.cli.history import record_run_history
from sdp_expect.quality.history_table import (
    HistoryError,
    HistoryWrite,
    on_server,
    updated_metrics_tables,
)
from sdp_expect.quality.last_good import (
    DONE_STATES,
    Restored,
    restore_last_good,
    restored_metrics,
    views_to_restore,
)
from sdp_expect.quality.summary import QualityReport, ReadError, TableReading
from sdp_expect.quality.trends import RECENT_UPDATES
from sdp_expect.report.build import build_report, completed_metrics_tables
from sdp_expect.report.reader import read_tables, read_through_server
from sdp_expect.runtime.spark_pipelines import EventLog, Invocation, Outcome, full_refresh_of

__all__ = ["AfterFlows", "Done", "all_flows_completed", "finish", "read_run_tables",
           "report_of", "restore_views"]

def all_flows_completed(flows: Mapping[str, str]) -> bool:
    """Every flow of the run is done and at least one completed (SDP queues every flow
    of the run when it starts, so the flows seen are all of them)."""
    return (any(state == "COMPLETED" for state in flows.values())
            and all(state in DONE_STATES for state in flows.values()))


def read_run_tables(project: Project, invocation: Invocation, sample: int, *,
                    token: Optional[str]) -> TableReading:
    """Read the metrics and quarantine tables through the server the run went to: the
    project's (with its ``token``, while it is still up), or the user's ``--remote``;
    a local catalog in a process of its own.

    :raises ReadError: when the tables cannot be read.
    """
    if invocation.server_url and token is not None:
        return read_through_server(invocation.server_url, token, catalog=project.catalog,
                                   database=project.database, sample=sample)
    remote = None if invocation.local else invocation.remote
    return read_tables(project.folder, {} if remote else invocation.confs,
                       catalog=project.catalog, database=project.database,
                       remote=remote, sample=sample)


def report_of(reading: TableReading, outcome: Outcome) -> QualityReport:
    """The run's summary: the tables as read, with what the run said."""
    events = outcome.events
    return build_report(reading, flows=events.flows, violations=events.violations,
                        tolerance_failures=events.tolerance_failures,
                        dataset_rule_failures=events.dataset_rule_failures,
                        run_status=events.run_state or ("COMPLETED" if outcome.returncode == 0
                                                        else "FAILED"))


@dataclass
class Done:
    """What was read and written after the flows.

    :param reading: The tables as read (``None``: they could not be read, see ``problems``).
    :param recorded: False when the history could not be written.
    :param written: The history rows written (``None``: nothing to record, or a failure).
    :param problems: What went wrong, one line each, for stderr.
    :param flows: The flows' states the history's datasets were chosen by.
    :param restored: The materialized views of a failed update and what became of each
        (brought back to the last good update's version, or why not).
    """

    reading: Optional[TableReading] = None
    recorded: bool = True
    written: Optional[HistoryWrite] = None
    problems: list[str] = field(default_factory=list)
    flows: dict[str, str] = field(default_factory=dict)
    restored: list[Restored] = field(default_factory=list)


PARQUET_KEEPS_NO_VERSION = (
    "it is empty until the next good update: its table format ({format}) keeps no earlier "
    "version to go back to. Fix: store the project's tables in Delta Lake "
    "(sdp_expect.format: delta in the spec's configuration; docs/formats.md), and a failed "
    "update leaves the last good data in place")
"""Why a view of a failed update was not restored, when the format keeps no versions."""


def restore_views(project: Project, outcome: Outcome, datasets: Sequence[DefinedDataset],
                  token: Optional[str]) -> tuple[list[Restored], list[str]]:
    """After a run whose flows did not all complete: bring the materialized views whose
    flows did not complete, and their companions, back to the last good update
    (:mod:`sdp_expect.quality.last_good`), through the server the run went to.

    :param datasets: The datasets the run's definitions file records.
    :returns: What became of each view, and the problems to say (one line each).
    """
    named, every = full_refresh_of(outcome.invocation.command)
    views = views_to_restore(datasets, outcome.events.flows, full_refresh=named,
                             full_refresh_all=every)
    if not views:
        return [], []
    chosen = run_format(project.configuration, outcome.invocation.confs)
    if not chosen.restorable:
        why = PARQUET_KEEPS_NO_VERSION.format(format=chosen.name)
        return [Restored(view, reason=why) for view in views], []
    invocation = outcome.invocation
    url = invocation.server_url if token is not None else (
        None if invocation.local else invocation.remote)
    if not url:
        return [Restored(view, reason="sdp-expect run restores through a Spark Connect "
                         "server, and this run had none") for view in views], []
    try:
        return on_server(url, token, lambda spark: restore_last_good(
            spark, views, catalog=project.catalog, database=project.database)), []
    except HistoryError as error:
        return [], [f"sdp-expect run: could not bring back the last good data of "
                    f"{', '.join(views)}: {error}"]


def _read_and_record(project: Project, outcome: Outcome, sample: int,
                     token: Optional[str],
                     datasets: Sequence[DefinedDataset] = ()) -> Done:
    """After the run: bring back the last good data of the views a failure emptied, read
    the tables, then record the datasets the report shows updated."""
    done = Done(flows=dict(outcome.events.flows))
    if not all_flows_completed(outcome.events.flows):
        done.restored, problems = restore_views(project, outcome, datasets, token)
        done.problems.extend(problems)
    try:
        done.reading = read_run_tables(project, outcome.invocation, sample, token=token)
    except ReadError as error:
        done.problems.append(f"sdp-expect run: cannot read the metrics tables: {error}")
        return done
    done.recorded, done.written = record_run_history(
        project, outcome.invocation,
        updated_metrics_tables(report_of(done.reading, outcome)), token=token,
        recent_updates=RECENT_UPDATES, say=done.problems.append,
        restored=restored_metrics(datasets, done.restored))
    return done


def _read_while_recording(project: Project, outcome: Outcome, sample: int,
                          token: Optional[str]) -> Done:
    """Every flow completed: the history records the datasets whose metrics flows
    completed (what the report will show as updated) in a thread of its own, while this
    one reads the tables. Two sessions on the server, side by side."""
    done = Done(flows=dict(outcome.events.flows))
    history_problems: list[str] = []

    def record() -> None:
        done.recorded, done.written = record_run_history(
            project, outcome.invocation, completed_metrics_tables(outcome.events.flows),
            token=token, recent_updates=RECENT_UPDATES, say=history_problems.append)

    recorder = threading.Thread(target=record, name="sdp-expect: the history", daemon=True)
    recorder.start()
    try:
        done.reading = read_run_tables(project, outcome.invocation, sample, token=token)
    except ReadError as error:
        done.problems.append(f"sdp-expect run: cannot read the metrics tables: {error}")
    recorder.join()
    done.problems.extend(history_problems)
    return done


class AfterFlows:
    """The reading and the history write, started in a thread when every flow has
    completed (:meth:`flows_changed`, called with the flows' states after each event),
    for a run through a Spark Connect server."""

    def __init__(self, project: Project, invocation: Invocation, sample: int, *,
                 token: Optional[str]) -> None:
        self._project, self._invocation = project, invocation
        self._sample, self._token = sample, token
        self._thread: Optional[threading.Thread] = None
        self._done: Optional[Done] = None

    @staticmethod
    def applies(invocation: Invocation, token: Optional[str]) -> bool:
        """Whether a run can start early: it goes through a Spark Connect server."""
        return bool(invocation.server_url and token is not None) or (
            not invocation.local and bool(invocation.remote))

    def flows_changed(self, flows: Mapping[str, str]) -> None:
        """Start the work when every flow has completed (once)."""
        if self._thread is not None or not all_flows_completed(flows):
            return
        snapshot = Outcome(returncode=0, events=EventLog(flows=dict(flows)),
                           invocation=self._invocation, rule_errors=[])

        def work() -> None:
            self._done = _read_while_recording(self._project, snapshot, self._sample,
                                               self._token)

        self._thread = threading.Thread(target=work, name="sdp-expect: after the flows",
                                        daemon=True)
        self._thread.start()

    def result(self) -> Optional[Done]:
        """What the early work did (waits for it); ``None`` when it never started."""
        if self._thread is None:
            return None
        self._thread.join()
        return self._done


def finish(project: Project, outcome: Outcome, sample: int, *, token: Optional[str],
           early: Optional[AfterFlows], datasets: Sequence[DefinedDataset] = ()) -> Done:
    """The reading and the history write of a run that has ended: the early work's when
    it started and the flows are as it saw them, otherwise done now (with, for a run
    whose flows did not all complete, the last good data of the views it emptied
    brought back first: :func:`restore_views`, over ``datasets``, the definitions
    file's).

    When the flows changed after the early work started (SDP does not change a completed
    flow's state; this is a guard), the tables are read again for the summary, and the
    history keeps what the early work wrote: the counts of flows that had completed. The
    early history recorded the tables whose metrics flows completed; the report built
    from the run's end shows the same datasets as updated unless a table was empty (it
    adds no rows) or not sdp-expect's (not recorded), the two cases
    :func:`~sdp_expect.quality.history_table.record_history` leaves out itself.
    """
    done = early.result() if early is not None else None
    if done is None:
        return _read_and_record(project, outcome, sample, token, datasets)
    if done.flows != outcome.events.flows and done.reading is not None:
        try:
            done.reading = read_run_tables(project, outcome.invocation, sample, token=token)
        except ReadError as error:
            done.reading = None
            done.problems.append(f"sdp-expect run: cannot read the metrics tables: {error}")
    return done
