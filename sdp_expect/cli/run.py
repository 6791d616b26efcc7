"""``sdp-expect run`` and ``sdp-expect dry-run``: ``spark-pipelines`` with working defaults.

The command runs the project's pipeline through
:mod:`sdp_expect.runtime.spark_pipelines` (which has the defaults and why), on the
project's own Spark Connect server (:mod:`sdp_expect.runtime.local_server`: a warm
one that ``sdp-expect serve`` keeps, or one started for the run on a free
port), shows its events as they come (what is shown:
:mod:`sdp_expect.runtime.run_output`) with the flows' progress
(:mod:`sdp_expect.runtime.progress`), keeps its full output in a log file, and
``run`` then prints the data-quality summary (:mod:`sdp_expect.report`), read
through the same server.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, TextIO

from sdp_expect.base.definitions import DEFINITIONS_VARIABLE
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import Project, UsageProblem, find_spec, load_project
from sdp_expect.base.terminal import paint, use_color, write_text
from sdp_expect.base.text_files import source_excerpt
from sdp_expect.base.update import UpdateStamp
from sdp_expect.checks.layout import project_problems
from sdp_expect.cli.after_run import AfterFlows, finish, report_of
from sdp_expect.cli.exit_codes import EXIT_ALERT, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from sdp_expect.cli.webhook import alert_settings, deliver
from sdp_expect.quality.alerts import (
    Alert,
    AlertSettings,
    evaluate_alerts,
    unmatched_alert_keys,
)
from sdp_expect.quality.last_good import Restored
from sdp_expect.quality.summary import DEFAULT_SAMPLE, QualityReport
from sdp_expect.quality.trends import RuleTrend, rule_trends
from sdp_expect.report.as_json import (
    dataset_rule_failure_dict,
    report_dict,
    tolerance_failure_dict,
    violation_dict,
)
from sdp_expect.report.comparison import add_trends, alert_lines, comparison_lines, this_update
from sdp_expect.report.last_summaries import save_last_summaries
from sdp_expect.report.reader import prepare_reading
from sdp_expect.report.text import (
    dataset_rule_lines,
    restored_lines,
    to_text,
    tolerance_lines,
    violation_lines,
)
from sdp_expect.runtime.catalog_access import add_wait_argument
from sdp_expect.runtime.checkpoints import new_catalog_problem
from sdp_expect.runtime.local_server import (
    ServerProblem,
    ServerUse,
    interrupted_by_signals,
    server_for_run,
)
from sdp_expect.runtime.progress import MODES, Progress, choose_mode
from sdp_expect.runtime.run_output import Definitions
from sdp_expect.runtime.spark_pipelines import Invocation, Outcome, build_command, run_pipeline

__all__ = [
    "DRY_RUN_DESCRIPTION",
    "RUN_DESCRIPTION",
    "PassThroughParser",
    "add_common_arguments",
    "add_dry_run",
    "add_pass_through",
    "add_run",
    "command_run",
    "exit_status",
    "status_with_alerts",
]

RUN_DESCRIPTION = """\
Run the pipeline with spark-pipelines, stream its events as they come with
the flows' progress (done, running, failed, elapsed time), and print a
data-quality summary at the end: for each dataset with expectations,
each rule's action, passed and failed records and failure percentage, and the
records the dataset dropped, read from its <dataset>_dq_metrics table. A
violated fail rule is shown with its record, and the exit status is 1.

Defaults (an option you pass wins over each of them): the catalog is Spark's
embedded Hive metastore, kept in the project folder (metastore_db/ and
spark-warehouse/ next to the spec file), so every run finds the tables of the
last one; no console progress bars; the project folder on the Python path
(pipeline files can import the project's modules, as on Databricks). Flows
with fail rules are not retried. Every other option is passed on unchanged:
--full-refresh, --full-refresh-all, --refresh, --conf KEY=VALUE, --remote to
spark-pipelines; --master, --driver-memory, --packages, --conf ... to the
local Spark server (docs/cli.md)

Spark: the run starts a local Spark Connect server of its own on a free port
(runs of other projects go on at the same time), or uses the project's warm
server when `sdp-expect serve` keeps one (a re-run then skips Spark's start).

After the summary, each rule's failure rate is compared with its recent rate
(the pooled rate of its last 5 earlier updates in the history table), and the
alerts declared in the pipeline settings (sdp_expect.alert.*: max_rate,
max_rise, min_records, webhook) are checked and shown (docs/alerts.md).

Exit status: 0 the run completed and no expectation failed; 1 the pipeline or
an expectation failed (or the summary could not be read, or the history table
not written); 2 usage error; 4 with --fail-on alert: the run succeeded and an
alert fired.
"""

DRY_RUN_DESCRIPTION = """\
Check the pipeline with spark-pipelines dry-run (definitions, expectations,
columns named by constraints) without writing any table, with the same
defaults as `sdp-expect run`, streaming its events.

Exit status: 0 the pipeline is valid; 1 it is not; 2 usage error.
"""


class PassThroughParser(argparse.ArgumentParser):
    """A subcommand parser that keeps the options it does not know, in order.

    They are left in ``args.passthrough`` for ``spark-pipelines`` instead of
    being reported as errors.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None,
        namespace: Optional[argparse.Namespace] = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse the known options; the rest goes to ``passthrough``."""
        parsed, extra = super().parse_known_args(args, namespace)
        parsed.passthrough = [*getattr(parsed, "passthrough", []), *extra]
        return parsed, []


def add_pass_through(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` (a subcommand's) pass the options it does not know on to spark-pipelines."""
    parser.__class__ = PassThroughParser
    parser.set_defaults(passthrough=[])


def add_common_arguments(parser: argparse.ArgumentParser, *, summary: bool) -> None:
    """The options of ``run`` and ``dry-run`` (``summary``: those of the summary too)."""
    parser.add_argument("--spec", metavar="FILE",
                        help="the pipeline spec (spark-pipeline.yml), or its folder; default: the "
                        "first one in the current folder or its parents")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) for people; json prints one JSON document on "
                        "stdout and the events on stderr")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour failures and the summary: auto (default) when writing to "
                        "a terminal and NO_COLOR is not set")
    parser.add_argument("--progress", choices=MODES, default="auto",
                        help="the flows' progress and the elapsed time while the run goes: "
                        "live (one line rewritten in place), plain (a line when flows end, "
                        "and after a minute of silence), none; auto (default): live on "
                        "a terminal, plain otherwise")
    parser.add_argument("--verbose", action="store_true",
                        help="show every line spark-pipelines prints (Spark's logs, warnings, "
                        "plans, tracebacks); by default they go only to the log file "
                        "(.sdp-expect/logs/ in the project folder)")
    add_wait_argument(parser)
    if summary:
        parser.add_argument("--no-summary", action="store_true",
                            help="do not read the metrics tables after the run")
        parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, metavar="N",
                            help="quarantined records read per dataset "
                            f"(default: {DEFAULT_SAMPLE})")
        parser.add_argument("--fail-on", choices=("alert",), dest="fail_on",
                            help="alert: exit with status 4 when the run succeeded but an "
                            "alert fired (for CI; docs/alerts.md)")
        parser.add_argument("--alert-webhook", metavar="URL", dest="alert_webhook",
                            help="POST each alert that fires, as JSON, to this URL (instead "
                            "of the setting sdp_expect.alert.webhook); a failed POST is "
                            "reported and does not change the exit status")


def _add_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], *,
                 dry: bool, help: str, description: str) -> None:
    action = "dry-run" if dry else "run"
    parser = subparsers.add_parser(
        action, help=help, usage=f"sdp-expect {action} [options] [spark-pipelines {action} "
        "options]", description=description, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser, summary=not dry)
    add_pass_through(parser)
    parser.set_defaults(handler=lambda args: command_run(args, dry=dry))


def add_run(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``run`` and its arguments."""
    _add_command(subparsers, dry=False, description=RUN_DESCRIPTION,
                 help="run the pipeline (spark-pipelines run) and show its data quality")


def add_dry_run(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dry-run`` and its arguments."""
    _add_command(subparsers, dry=True, description=DRY_RUN_DESCRIPTION,
                 help="check the pipeline without writing (spark-pipelines dry-run)")


def exit_status(outcome: Outcome) -> int:
    """0 all well, 1 the pipeline or an expectation failed, 2 spark-pipelines' usage error."""
    if outcome.returncode == 2:
        return EXIT_USAGE
    if outcome.returncode != 0 or outcome.events.violations \
            or outcome.events.tolerance_failures or outcome.events.dataset_rule_failures:
        return EXIT_PROBLEMS
    if outcome.events.run_state not in (None, "COMPLETED"):
        return EXIT_PROBLEMS
    return EXIT_OK


def _final_line(action: str, outcome: Outcome, status: int, color: bool,
                alerts: int = 0) -> str:
    state = outcome.events.run_state or ("COMPLETED" if outcome.returncode == 0 else "FAILED")
    count = len(outcome.events.violations)
    text = f"sdp-expect {action}: {state}"
    if count:
        text += f", {count} expectation violation{'s' if count != 1 else ''}"
    over = len(outcome.events.tolerance_failures)
    if over:
        text += (f", {over} flow{'s' if over != 1 else ''} over "
                 f"{'their' if over != 1 else 'its'} tolerance")
    unmet = len(outcome.events.dataset_rule_failures)
    if unmet:
        text += f", {unmet} flow{'s' if unmet != 1 else ''} failed by dataset rules"
    if alerts:
        text += f", {alerts} alert{'s' if alerts != 1 else ''}"
    text += f" (exit status {status})"
    return "\n" + paint(text, "bold green" if status == 0 else "bold red", color) + "\n"


def command_run(args: argparse.Namespace, *, dry: bool) -> int:
    """``sdp-expect run`` / ``dry-run``: run, stream, summarize; the exit status."""
    action = "dry-run" if dry else "run"
    try:
        project = load_project(find_spec(args.spec))
        invocation = build_command(action, project, args.passthrough)
    except UsageProblem as problem:
        write_text(sys.stderr, f"sdp-expect {action}: error: {problem}\n")
        return EXIT_USAGE
    as_json = args.format == "json"
    alerting = not dry and not args.no_summary
    settings = AlertSettings()
    if not dry:
        try:
            settings = _alert_settings(project, args)
        except SdpExpectError as error:
            return _refuse_settings(action, project, error, as_json)
        except UsageProblem as problem:
            write_text(sys.stderr, f"sdp-expect {action}: error: {problem}\n")
            return EXIT_USAGE
    misplaced = project_problems(project.spec)
    resumed = None if dry or misplaced else new_catalog_problem(project, invocation)
    if resumed is not None:
        misplaced = [resumed]
    if misplaced:
        return _refuse_layout(action, project, misplaced, as_json)
    events_out = sys.stderr if as_json else sys.stdout
    color = use_color(args.color, events_out)
    if invocation.local:
        catalog = invocation.confs.get("spark.sql.catalogImplementation")
        where = (f"catalog in {project.folder} (metastore_db/, spark-warehouse/)"
                 if catalog == "hive" else f"catalog {catalog!r}")
        write_text(events_out, paint(f"sdp-expect {action}: {project.spec}; {where}\n",
                                     "dim", color))
    log_path, definitions = _log_files(project, action)
    invocation.env[DEFINITIONS_VARIABLE] = str(definitions)
    update = UpdateStamp.new()  # the quarantines' records and the history name it
    invocation = invocation.stamped(update)
    verbose = bool(getattr(args, "verbose", False))
    mode = choose_mode(args.progress, events_out)
    progress = None if mode == "none" else Progress(
        events_out, mode, color=color, write=write_text,
        waiting="checking the pipeline's definitions" if dry else "no flow reported yet")
    report: Optional[QualityReport] = None
    restored: list[Restored] = []
    trends: list[RuleTrend] = []
    alerts: list[Alert] = []
    with open(log_path, "w", encoding="utf-8", errors="replace") as log, \
            interrupted_by_signals():
        try:
            with _spark_for(project, invocation, args, action, log, color) as server:
                if server is not None:
                    invocation = invocation.through(server.record.url, server.record.token)
                    if not dry and not args.no_summary:
                        prepare_reading()
                token = server.record.token if server else None
                early = (AfterFlows(project, invocation, args.sample, token=token)
                         if not dry and not args.no_summary
                         and AfterFlows.applies(invocation, token) else None)
                started = _now()
                try:
                    outcome = run_pipeline(invocation, events_out, color=color,
                                           write=write_text, verbose=verbose, log=log,
                                           definitions=definitions, progress=progress,
                                           on_flows=early.flows_changed if early else None)
                finally:
                    if progress is not None:  # before anything else is written
                        progress.close()
                finished = _now()
                if verbose and outcome.rule_errors:
                    write_text(events_out, "".join(
                        paint(rule.error().render(), "bold red", color) + "\n"
                        for rule in outcome.rule_errors))
                status = exit_status(outcome)
                if outcome.rule_errors:
                    status = status or EXIT_PROBLEMS
                ran = bool(outcome.events.flows or outcome.events.violations)
                if not dry and not args.no_summary and ran:
                    # while the server is up: the tables are read through it
                    done = finish(project, outcome, args.sample, token=token, early=early,
                                  datasets=Definitions.read(definitions).datasets)
                    restored = done.restored
                    for line in done.problems:
                        write_text(sys.stderr, line + "\n")
                    if done.reading is None:
                        status = status or EXIT_PROBLEMS
                    else:
                        report = report_of(done.reading, outcome)
                        save_last_summaries(project.folder, report)
                    if not done.recorded:
                        status = status or EXIT_PROBLEMS
                    elif done.written is not None:
                        trends = this_update(rule_trends(done.written.recent,
                                                         pipeline=project.name),
                                             done.written.update_id)
                        alerts = evaluate_alerts(settings, trends,
                                                 update_id=done.written.update_id)
        except ServerProblem as problem:
            return _no_server(action, project, problem, log_path, as_json)
    setting_warnings = _unmatched_settings(settings, definitions) if alerting else []
    for warning in setting_warnings:
        write_text(sys.stderr, f"sdp-expect {action}: warning: {warning.render()}\n")
    status = status_with_alerts(status, len(alerts), args.fail_on if alerting else None)
    deliveries = deliver([alert.as_dict() for alert in alerts], settings.webhook,
                         command=f"sdp-expect {action}", stderr=sys.stderr)
    if as_json:
        document: dict[str, Any] = {"command": action, "spec": str(project.spec),
                                    "exit_code": status, "update_id": update.id,
                                    "status": outcome.events.run_state
                                    or ("COMPLETED" if outcome.returncode == 0 else "FAILED"),
                                    "flows": dict(outcome.events.flows),
                                    "log": str(log_path),
                                    "server": server.as_dict() if server else None,
                                    "started_at": started, "finished_at": finished,
                                    "rule_errors": [r.as_dict() for r in outcome.rule_errors],
                                    "definition_errors": Definitions.read(definitions).errors}
        document["restored"] = [entry.as_dict() for entry in restored]
        if report is not None:
            document.update(report_dict(report))
            add_trends(document, trends)
        else:
            document["violations"] = [violation_dict(v) for v in outcome.events.violations]
            document["tolerance_failures"] = [tolerance_failure_dict(f) for f
                                              in outcome.events.tolerance_failures]
            document["dataset_rule_failures"] = [dataset_rule_failure_dict(f) for f
                                                 in outcome.events.dataset_rule_failures]
        if alerting:
            document["alert_setting_warnings"] = [w.as_dict() for w in setting_warnings]
            document["alerts"] = [alert.as_dict() for alert in alerts]
            document["alert_deliveries"] = [d.as_dict() for d in deliveries]
        write_text(sys.stdout, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return status
    if report is not None:
        write_text(sys.stdout, "\n" + to_text(report, color=color))
        extra = comparison_lines(trends, color=color) + alert_lines(alerts, color=color)
        if extra:
            write_text(sys.stdout, "\n".join(extra) + "\n")
    elif outcome.events.violations or outcome.events.tolerance_failures \
            or outcome.events.dataset_rule_failures:
        title = ("== Expectation violations" if outcome.events.violations
                 else "== Expectations over their tolerance" if outcome.events.tolerance_failures
                 else "== Dataset rules not met")
        lines = ["", paint(title, "bold", color)]
        for violation in outcome.events.violations:
            lines.append(paint(violation.dataset, "bold", color))
            lines.extend(violation_lines(violation, color, "  "))
        for failure in outcome.events.tolerance_failures:
            lines.append(paint(failure.dataset, "bold", color))
            lines.extend(tolerance_lines(failure, color, "  "))
        for unmet_rules in outcome.events.dataset_rule_failures:
            lines.append(paint(unmet_rules.dataset, "bold", color))
            lines.extend(dataset_rule_lines(unmet_rules, color, "  "))
        write_text(sys.stdout, "\n".join(lines) + "\n")
    if restored:
        write_text(sys.stdout, "\n".join(restored_lines(restored, color=color)) + "\n")
    write_text(sys.stdout, paint(f"full log: {_shown_path(log_path)}\n", "dim", color))
    write_text(sys.stdout, _final_line(action, outcome, status, color, len(alerts)))
    return status


def status_with_alerts(status: int, alerts: int, fail_on: Optional[str]) -> int:
    """The exit status once the alerts are known: :data:`EXIT_ALERT` (4) when asked for
    (``fail_on == "alert"``), some alert fired and nothing else failed; every other status
    wins over it (1 a failed run, 2 a usage error)."""
    if fail_on == "alert" and alerts and status == EXIT_OK:
        return EXIT_ALERT
    return status


def _unmatched_settings(settings: AlertSettings,
                        definitions: Path) -> list[SdpExpectError]:
    """SDPX-CFG-203 for each alert setting that names no dataset or rule of the pipeline
    as its definitions file records them (none when nothing was defined: a run stopped
    before its definitions cannot tell)."""
    checks = Definitions.read(definitions).checks.values()
    rules = {(str(c["dataset"]), str(c["expectation"])) for c in checks}
    if not rules:
        return []
    named = sorted(f"{dataset}.{rule}" for dataset, rule in rules)
    shown = ", ".join(named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
    return [SdpExpectError("SDPX-CFG-203", f"{key} names no dataset or rule of the pipeline "
                           f"(its rules: {shown})")
            for key in unmatched_alert_keys(settings, rules)]


def _alert_settings(project: Project, args: argparse.Namespace) -> AlertSettings:
    """The pipeline's alert settings and ``--alert-webhook`` (:func:`alert_settings`).

    :raises SdpExpectError: SDPX-CFG-202 for a setting it cannot read.
    :raises UsageProblem: for a bad ``--alert-webhook``, or ``--fail-on alert`` or
        ``--alert-webhook`` with ``--no-summary`` (no summary, no alerts).
    """
    if args.no_summary and (args.fail_on or args.alert_webhook):
        raise UsageProblem("--fail-on alert and --alert-webhook need the summary: alerts are "
                           "checked after it (leave out --no-summary)")
    return alert_settings(project.configuration, args.alert_webhook)


def _refuse_settings(action: str, project: Project, error: SdpExpectError,
                     as_json: bool) -> int:
    """An alert setting sdp-expect cannot read: said with its code before anything runs."""
    if as_json:
        write_text(sys.stdout, json.dumps({
            "command": action, "spec": str(project.spec), "exit_code": EXIT_USAGE,
            "status": "NOT_STARTED", "flows": {}, "rule_errors": [],
            "definition_errors": [], "setting_errors": [error.as_dict()]},
            indent=2, ensure_ascii=False) + "\n")
    else:
        write_text(sys.stderr, f"{error.render()}\n")
        write_text(sys.stderr, f"sdp-expect {action}: not started: an alert setting of "
                   f"{project.spec.name} cannot be read\n")
    return EXIT_USAGE


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="milliseconds")


@contextlib.contextmanager
def _spark_for(project: Project, invocation: Invocation, args: argparse.Namespace,
               action: str, log: TextIO, color: bool) -> Iterator[Optional[ServerUse]]:
    """The project's server for a local run (see :func:`server_for_run`); None for a run on
    the user's ``--remote``."""
    if not invocation.local:
        yield None
        return
    out = sys.stderr if args.format == "json" else sys.stdout
    with server_for_run(project, invocation, wait=args.wait, log=log, command=action,
                        say=lambda text: write_text(out, paint(text, "dim", color))) as server:
        yield server


def _no_server(action: str, project: Project, problem: ServerProblem, log_path: Path,
               as_json: bool) -> int:
    """The run did not start: the project's server could not be had (its code and fix)."""
    if as_json:
        write_text(sys.stdout, json.dumps({
            "command": action, "spec": str(project.spec), "exit_code": EXIT_PROBLEMS,
            "status": "NOT_STARTED", "flows": {}, "log": str(log_path), "rule_errors": [],
            "definition_errors": [], "server_errors": [problem.as_dict()]},
            indent=2, ensure_ascii=False) + "\n")
    else:
        write_text(sys.stderr, problem.render())
        write_text(sys.stderr, f"sdp-expect {action}: not started; full log: "
                   f"{_shown_path(log_path)}\n")
    return EXIT_PROBLEMS


def _refuse_layout(action: str, project: Project, problems: list[SdpExpectError],
                   as_json: bool) -> int:
    """Files in the spec's libraries that ``spark-pipelines`` would refuse or misread: said
    before Spark starts, each with its code and fix; nothing runs."""
    if as_json:
        write_text(sys.stdout, json.dumps({
            "command": action, "spec": str(project.spec), "exit_code": EXIT_PROBLEMS,
            "status": "NOT_STARTED", "flows": {}, "rule_errors": [],
            "definition_errors": [problem.as_dict() for problem in problems]},
            indent=2, ensure_ascii=False) + "\n")
    else:
        for problem in problems:
            place = problem.place
            excerpt = (source_excerpt(project.folder / place.file, place.line, place.column)
                       if place is not None and place.file and place.line else [])
            write_text(sys.stderr, "".join(f"{line}\n" for line in [problem.render(), *excerpt]))
        write_text(sys.stderr, f"sdp-expect {action}: not started: {len(problems)} "
                   "problem(s) in the spec or its libraries that spark-pipelines would "
                   "refuse or stop at\n")
    return EXIT_PROBLEMS


LOG_FOLDER = Path(".sdp-expect") / "logs"
"""Where ``run`` and ``dry-run`` keep the full output of each run, in the project folder."""
LOGS_KEPT = 20
"""How many runs' logs are kept (the oldest are removed as new runs start)."""


def _log_files(project: Project, action: str) -> tuple[Path, Path]:
    """The log file of this run and the definitions file its child writes.

    Named by time and process (two runs never share a file); only the newest
    :data:`LOGS_KEPT` runs' files are kept.
    """
    folder = project.folder / LOG_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    logs = sorted(folder.glob("*.log"))
    for old in logs[:max(0, len(logs) - (LOGS_KEPT - 1))]:
        for path in (old, old.with_suffix(".definitions.jsonl")):
            path.unlink(missing_ok=True)
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{action}"
    return folder / f"{stamp}.log", folder / f"{stamp}.definitions.jsonl"


def _shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
