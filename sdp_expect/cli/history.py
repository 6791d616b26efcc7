"""``sdp-expect history record`` and ``history show``: the history table
(docs/history.md), and what ``sdp-expect run`` calls to write it after its summary.

``record`` is for a pipeline run with ``spark-pipelines run`` directly: one command
after the update appends that update's rows, as ``sdp-expect run`` does. Both read the
catalog the way ``sdp-expect report`` does: through the project's warm server
(``sdp-expect serve``) when it is up, else through ``--remote``, else in a Spark
process of their own on the project's catalog (``metastore_db/``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from sdp_expect.base import names
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import Project, UsageProblem
from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import EXIT_ALERT, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from sdp_expect.cli.webhook import alert_settings, deliver
from sdp_expect.quality.alerts import AlertSettings, evaluate_alerts
from sdp_expect.quality.history_table import (
    HistoryError,
    HistoryWrite,
    history_format,
    recent_in_own_process,
    recent_through,
    record_in_own_process,
    record_through,
    show_in_own_process,
    show_through,
)
from sdp_expect.quality.trends import RECENT_UPDATES, rule_trends
from sdp_expect.report.comparison import alert_lines, comparison_lines, trend_dict
from sdp_expect.runtime.catalog_access import (
    CatalogAccess,
    add_catalog_arguments,
    catalog_access,
    catalog_project,
    catalog_turn,
)
from sdp_expect.runtime.local_server import ServerProblem
from sdp_expect.runtime.spark_pipelines import Invocation

__all__ = ["HISTORY_DESCRIPTION", "add_history", "command_history", "print_rows",
           "record_run_history"]

HISTORY_DESCRIPTION = f"""\
The data-quality history: the table {names.HISTORY_TABLE} in the pipeline's
catalog and database, one row per dataset, expectation and update with that
update's own counts (for a streaming table the records the update read, not the
running total). `sdp-expect run` appends to it after every run; a full refresh
of the pipeline keeps it (docs/history.md).

  sdp-expect history record   after `spark-pipelines run`: append the update's rows
  sdp-expect history show     print the recorded rows, newest update first
  sdp-expect history alerts   compare the newest recorded update with the recent
                              ones and check the alerts (docs/alerts.md)

Exit status: 0 done; 1 the catalog could not be read or written; 2 usage error;
4 (alerts --fail-on alert) an alert fired.
"""

RECORD_DESCRIPTION = f"""\
Append the last update's data-quality counts to {names.HISTORY_TABLE} (created
if absent, in the pipeline's table format): for every dataset with a
<dataset>_dq_metrics table, or those given with --dataset. Run it once after
each `spark-pipelines run` (`sdp-expect run` does it for you). A dataset whose
metrics table is empty (its update failed) is not recorded. It cannot tell
which datasets the update refreshed: after `spark-pipelines run --refresh A`
record only A (`--dataset A`), or the other materialized views are recorded
again with their earlier counts.

Exit status: 0 recorded; 1 the catalog could not be read or written; 2 usage error.
"""

ALERTS_DESCRIPTION = """\
Compare each rule of the pipeline's newest recorded update with its recent
updates, and check the alerts of the pipeline settings (sdp_expect.alert.*),
as `sdp-expect run` does after its summary: for a pipeline run with
`spark-pipelines run` and recorded with `sdp-expect history record`
(docs/alerts.md).

Exit status: 0 done; 1 the catalog could not be read; 2 usage error or a bad
setting (SDPX-CFG-202); 4 with --fail-on alert: an alert fired.
"""


def add_history(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``history`` with its ``record`` and ``show`` subcommands."""
    parser = subparsers.add_parser(
        "history", help="the data-quality history table: record an update, show the rows",
        description=HISTORY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(title="actions", metavar="ACTION")
    record = actions.add_parser(
        "record", help="append the last update's counts (after spark-pipelines run)",
        description=RECORD_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_catalog_arguments(record)
    record.add_argument("--dataset", action="append", metavar="NAME",
                        help="record only this dataset (repeatable); default: every dataset "
                        "with a metrics table")
    record.add_argument("--format", choices=("text", "json"), default="text",
                        help="what to print: text (default) or one JSON document")
    record.set_defaults(handler=lambda args: command_history(args, "record"))
    show = actions.add_parser(
        "show", help="print the recorded rows, newest update first",
        description=f"Print the rows of {names.HISTORY_TABLE}, newest update first.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_catalog_arguments(show)
    show.add_argument("--format", choices=("text", "json"), default="text",
                      help="text (default) or a JSON list of rows")
    show.add_argument("--updates", type=int, metavar="N",
                      help="only the newest N updates (default: all)")
    show.set_defaults(handler=lambda args: command_history(args, "show"))
    alerts = actions.add_parser(
        "alerts", help="check the alerts of the newest recorded update (docs/alerts.md)",
        description=ALERTS_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_catalog_arguments(alerts)
    alerts.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or one JSON document")
    alerts.add_argument("--fail-on", choices=("alert",), dest="fail_on",
                        help="alert: exit with status 4 when an alert fired")
    alerts.add_argument("--alert-webhook", metavar="URL", dest="alert_webhook",
                        help="POST each alert as JSON to this URL (instead of the setting "
                        "sdp_expect.alert.webhook)")
    alerts.set_defaults(handler=lambda args: command_history(args, "alerts"))
    parser.set_defaults(handler=lambda args: _no_action(parser))


def _no_action(parser: argparse.ArgumentParser) -> int:
    parser.print_usage(sys.stderr)
    write_text(sys.stderr, "sdp-expect history: error: an action is required (record, show "
               "or alerts)\n")
    return EXIT_USAGE


def command_history(args: argparse.Namespace, action: str) -> int:
    """``sdp-expect history record|show``: the exit status."""
    try:
        project, given = catalog_project(args)
        if action == "show" and args.updates is not None and args.updates < 1:
            raise UsageProblem("--updates must be 1 or more")
        settings = (alert_settings(project.configuration, args.alert_webhook)
                    if action == "alerts" else None)
    except UsageProblem as problem:
        write_text(sys.stderr, f"sdp-expect history {action}: error: {problem}\n")
        return EXIT_USAGE
    except SdpExpectError as error:
        write_text(sys.stderr, f"sdp-expect history {action}: {error.render()}\n")
        return EXIT_USAGE
    try:
        access = catalog_access(project, args.remote, given)
        with catalog_turn(project, access, wait=args.wait, command=f"history {action}",
                          say=lambda text: write_text(sys.stderr, text)):
            done = _history_action(args, action, project, access, given, settings)
    except ServerProblem as problem:
        write_text(sys.stderr, f"sdp-expect history {action}: {problem.render()}")
        return EXIT_PROBLEMS
    if isinstance(done, int):  # record, show, or a catalog that could not be read
        return done
    # Only alerts (settings given) returns the rows it read. The webhook is posted to
    # after the catalog is free: its retries (seconds) keep no other command waiting.
    return _alerts(args, project, settings, done) if settings is not None else EXIT_PROBLEMS


def _history_action(args: argparse.Namespace, action: str, project: Project,
                    access: CatalogAccess, given: dict[str, str],
                    settings: Optional[AlertSettings]) -> Union[int, list[dict[str, Any]]]:
    """``record``, ``show`` or, for ``alerts`` (``settings`` given), the recent updates'
    rows, on the catalog ``access`` reaches (the caller holds the project's lock when that
    is the folder's own): the exit status, or the rows."""
    remote, warm, confs = access.remote, access.warm, access.confs
    if access.missing(project.folder):
        write_text(sys.stderr, f"sdp-expect history {action}: no catalog in {project.folder} "
                   "(metastore_db/): run the pipeline first\n")
        return EXIT_PROBLEMS
    url, token = (warm.url, warm.token) if warm is not None else (remote, None)
    where: dict[str, Any] = {"catalog": project.catalog, "database": project.database}
    try:
        if action == "record":
            tables = ([names.metrics_name(d) for d in args.dataset] if args.dataset
                      else None)
            options: dict[str, Any] = {
                "pipeline": project.name, "table_format": _format(project, given),
                "metrics_tables": tables, **where}
            written = (record_through(url, token, **options) if url
                       else record_in_own_process(project.folder, confs, **options))
            _print_written(written, args.format)
            missing = [d for d in args.dataset or () if d not in written.datasets]
            if missing:
                write_text(sys.stderr, f"sdp-expect history record: not recorded: "
                           f"{', '.join(missing)} (no metrics table, or an empty one: the "
                           "update failed)\n")
        elif settings is not None:
            return (recent_through(url, token, pipeline=project.name,
                                   updates=RECENT_UPDATES, **where) if url
                    else recent_in_own_process(project.folder, confs, pipeline=project.name,
                                               updates=RECENT_UPDATES, **where))
        else:
            rows = (show_through(url, token, limit=args.updates, **where) if url
                    else show_in_own_process(project.folder, confs, limit=args.updates,
                                             **where))
            print_rows(rows, args.format)
    except HistoryError as error:
        write_text(sys.stderr, f"sdp-expect history {action}: {error}\n")
        return EXIT_PROBLEMS
    return EXIT_OK


def _alerts(args: argparse.Namespace, project: Project, settings: AlertSettings,
            rows: list[dict[str, Any]]) -> int:
    """``history alerts`` after the catalog was read: compare, alert, print; the exit
    status."""
    trends = rule_trends(rows, pipeline=project.name)
    alerts = evaluate_alerts(settings, trends)
    messages = [alert.as_dict() for alert in alerts]
    deliveries = deliver(messages, settings.webhook,
                         command="sdp-expect history alerts", stderr=sys.stderr)
    if args.format == "json":
        write_text(sys.stdout, json.dumps({
            "pipeline": project.name,
            "update_id": trends[0].latest.update_id if trends else None,
            "trends": [{"dataset": t.dataset, "expectation": t.expectation,
                        **trend_dict(t)} for t in trends],
            "alerts": messages,
            "alert_deliveries": [d.as_dict() for d in deliveries]},
            indent=2, ensure_ascii=False) + "\n")
    elif not trends:
        write_text(sys.stdout, f"{names.HISTORY_TABLE} has no update of "
                   f"{project.name!r} yet\n")
    else:
        lines = comparison_lines(trends) + alert_lines(alerts)
        write_text(sys.stdout, "\n".join(lines[1:]) + "\n")
    return EXIT_ALERT if alerts and args.fail_on == "alert" else EXIT_OK


def _format(project: Project, confs: dict[str, str]) -> Optional[str]:
    """The pipeline's table format: the spec's setting, else one given on the command line
    (``None``: the session's, parquet unless set)."""
    return history_format(project.configuration) or history_format(confs)


def _print_written(written: HistoryWrite, form: str) -> None:
    if form == "json":
        write_text(sys.stdout, json.dumps(written.as_dict(), indent=2) + "\n")
        return
    if written.datasets:
        rows = f"{written.rows} row{'s' if written.rows != 1 else ''}"
        write_text(sys.stdout, f"recorded {rows} of {', '.join(written.datasets)} "
                   f"in {written.table} (update {written.update_id})\n")
    else:
        write_text(sys.stdout, f"nothing to record in {written.table}: no dataset has metrics "
                   "(a failed update leaves its metrics empty)\n")


_SHOWN = ("update_time", "dataset", "expectation", "action", "passed_records",
          "failed_records", "total_records", "dropped_records", "outcome")
_HEADINGS = ("update time", "dataset", "rule", "action", "passed", "failed", "total", "dropped",
             "outcome")


def _cell(row: dict[str, Any], column: str) -> str:
    """One cell of ``history show``'s text: no count where the update counted nothing;
    the outcome said only where it is not the usual one."""
    value = row.get(column)
    if column == "outcome":
        if value != names.OUTCOME_FAILED:
            return ""
        version = row.get("restored_version")
        return "failed" + (f", restored to version {version}" if version is not None else "")
    return "" if value is None else str(value)


def print_rows(rows: list[dict[str, Any]], form: str) -> None:
    """``history show``'s rows on stdout: JSON (``form`` ``json``) or a text table."""
    if form == "json":
        write_text(sys.stdout, json.dumps(rows, indent=2, default=str) + "\n")
        return
    if not rows:
        write_text(sys.stdout, f"{names.HISTORY_TABLE} has no rows yet\n")
        return
    table = [list(_HEADINGS)] + [[_cell(row, c) for c in _SHOWN] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(_HEADINGS))]
    numeric = {4, 5, 6, 7}
    write_text(sys.stdout, "".join(
        "  ".join(cell.rjust(w) if i in numeric else cell.ljust(w)
                  for i, (cell, w) in enumerate(zip(line, widths, strict=True))).rstrip() + "\n"
        for line in table))


def record_run_history(project: Project, invocation: Invocation, tables: Sequence[str], *,
                       token: Optional[str], recent_updates: Optional[int] = None,
                       say: Optional[Callable[[str], None]] = None,
                       restored: Optional[Mapping[str, int]] = None,
                       ) -> tuple[bool, Optional[HistoryWrite]]:
    """After ``sdp-expect run``: append this run's rows to the history, through the server
    the summary is read through. A failure is said on stderr.

    :param tables: The metrics tables of the datasets this run updated: those the report
        shows as updated (:func:`~sdp_expect.quality.history_table.updated_metrics_tables`),
        or, when every flow of the run completed, those whose flows completed
        (:func:`~sdp_expect.report.build.completed_metrics_tables`).
    :param recent_updates: Also read back, in the same session, the rows that compare
        this update with its ``recent_updates`` recent ones (:attr:`HistoryWrite.recent`).
    :param say: Where a failure's line goes (default: stderr).
    :param restored: The metrics tables of the views brought back to their last good
        data after a failure, with the version each dataset's view went back to
        (:func:`~sdp_expect.quality.last_good.restored_metrics`): their rows say so.
    :returns: False when the history could not be written; what was written (``None``
        when nothing was to be recorded, or on failure).
    """
    if not tables and not restored:
        return True, None
    options: dict[str, Any] = {
        "pipeline": project.name, "catalog": project.catalog, "database": project.database,
        "table_format": _format(project, dict(invocation.confs)),
        "metrics_tables": list(tables),
        "recent_updates": recent_updates, "restored": dict(restored or {}),
        "update_id": invocation.update.id if invocation.update else None}
    try:
        if invocation.server_url and token is not None:
            written = record_through(invocation.server_url, token, **options)
        elif not invocation.local and invocation.remote:
            written = record_through(invocation.remote, None, **options)
        else:
            written = record_in_own_process(project.folder, invocation.confs, **options)
    except HistoryError as error:
        # the error says what failed: Spark's refusal of a write, or that the rows were
        # written and the recent updates could not be read back
        line = f"sdp-expect run: the history table {names.HISTORY_TABLE}: {error}"
        if say is None:
            write_text(sys.stderr, line + "\n")
        else:
            say(line)
        return False, None
    return True, written
