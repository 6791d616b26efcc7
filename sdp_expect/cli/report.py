"""``sdp-expect report``: the data-quality summary of a project, as text, JSON or HTML.

It reads the project's ``<dataset>_dq_metrics`` and quarantine tables (the
catalog ``sdp-expect run`` keeps in the project folder), shows each dataset as
of its last successful update, and with ``--html OUT.html`` writes the page of
:mod:`sdp_expect.report.html`. It runs no pipeline. While ``sdp-expect serve``
keeps the project's server up (which then holds the catalog), it reads through
that server.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from sdp_expect.base.project import UsageProblem
from sdp_expect.base.terminal import use_color, write_text
from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, version
from sdp_expect.quality.summary import DEFAULT_SAMPLE, TREND_UPDATES
from sdp_expect.report.as_json import to_json
from sdp_expect.report.build import build_report
from sdp_expect.report.html import render_html
from sdp_expect.report.last_summaries import load_last_summaries
from sdp_expect.report.reader import TablesUnavailable, read_project_tables
from sdp_expect.report.text import to_text
from sdp_expect.runtime.catalog_access import add_catalog_arguments, catalog_project

__all__ = ["REPORT_DESCRIPTION", "add_report", "add_report_arguments", "command_report"]

REPORT_DESCRIPTION = f"""\
Show the data quality of a pipeline's datasets as of the last successful
update of each: every rule's action, passed and failed records and failure
percentage, the records each dataset dropped and its quarantine. Reads the
<dataset>_dq_metrics and quarantine tables of the catalog that `sdp-expect
run` keeps in the project folder (run no pipeline). A materialized view is
empty after a failed update; its last successful numbers then come from what
`sdp-expect run` kept in .sdp-expect/last-summaries.json. While `sdp-expect
serve` keeps the project's server up, the tables are read through it.

With --html OUT.html, also write a page to look at: per dataset a bar per
rule (passed against failed), the dropped records, the quarantine's size and
a sample of quarantined records with their _failed_expectations, and each
rule's failure rate over the pipeline's last {TREND_UPDATES} recorded updates (the
history table sdp_expect_dq_history) as a chart. The page is one
self-contained file (no script, nothing loaded from the network).

Exit status: 0 the report was made; 1 the tables could not be read; 2 usage error.
"""


def add_report(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` and its arguments."""
    parser = subparsers.add_parser(
        "report", help="the data-quality summary of the last updates, as text, JSON or HTML",
        description=REPORT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_report_arguments(parser)
    parser.set_defaults(handler=command_report)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``sdp-expect report``."""
    add_catalog_arguments(parser)
    parser.add_argument("--html", metavar="OUT.html",
                        help="also write the report as a self-contained HTML page")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="what to print: text (default) or one JSON document")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text: auto (default) on a terminal without NO_COLOR")
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, metavar="N",
                        help=f"quarantined records shown per dataset (default: {DEFAULT_SAMPLE})")


def command_report(args: argparse.Namespace) -> int:
    """``sdp-expect report``: read, print, write the page; the exit status."""
    try:
        project, given = catalog_project(args)
        if args.sample < 0:
            raise UsageProblem("--sample must be 0 or more")
    except UsageProblem as problem:
        write_text(sys.stderr, f"sdp-expect report: error: {problem}\n")
        return EXIT_USAGE
    try:
        reading = read_project_tables(project, given, remote=args.remote, wait=args.wait,
                                      command="report", sample=args.sample, rule_counts=True,
                                      history_of=project.name,
                                      say=lambda text: write_text(sys.stderr, text))
    except TablesUnavailable as problem:
        write_text(sys.stderr, f"sdp-expect report: {problem}")
        return EXIT_PROBLEMS
    report = build_report(reading, last_summaries=load_last_summaries(project.folder),
                          pipeline=project.name)
    if args.format == "json":
        write_text(sys.stdout, to_json(report, command="report", spec=str(project.spec)) + "\n")
    else:
        write_text(sys.stdout, to_text(report, color=use_color(args.color, sys.stdout)))
    if args.html:
        generated = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        page = render_html(report, pipeline=project.name, generated_at=generated,
                           version=version())
        out = Path(args.html)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(page, encoding="utf-8")
        except OSError as error:
            write_text(sys.stderr, f"sdp-expect report: cannot write {out}: {error}\n")
            return EXIT_PROBLEMS
        if args.format != "json":
            write_text(sys.stdout, f"HTML report written to {out}\n")
    return EXIT_OK
