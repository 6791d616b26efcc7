"""The ``sdp-expect`` command.

Subcommands, one module each:

- ``sdp-expect validate PATH... [--format text|json]``: check rule files and
  Databricks SQL files (or directories of them) without starting Spark. Exit
  status 0 when all is well, 1 when anything is wrong, 2 for a usage error
  (:mod:`sdp_expect.cli.validate`).
- ``sdp-expect translate FILE.sql... [--spec SPEC] [--conf KEY=VALUE]... [-o OUT]``: print the
  open-source SDP SQL of Databricks SQL pipeline files, without Spark. Exit
  status 0 when every file translates, 1 for a coded error, 2 for a usage error
  (:mod:`sdp_expect.cli.translate`).
- ``sdp-expect run [--spec FILE] [--format text|json] [spark-pipelines options]``
  and ``sdp-expect dry-run ...``: ``spark-pipelines`` with defaults that make a
  local project work every time, its events streamed, then (``run``) a
  data-quality summary (:mod:`sdp_expect.cli.run`).
- ``sdp-expect serve [--background|--stop|--status] [server options]``: keep the
  project's Spark Connect server warm, so that its runs skip Spark's start
  (:mod:`sdp_expect.cli.serve`).
- ``sdp-expect report [--spec FILE] [--html OUT.html]``: the summary of the
  last successful update of each dataset, as text, JSON or an HTML page
  (:mod:`sdp_expect.cli.report`).
- ``sdp-expect quarantine [--spec FILE] [--dataset NAME] [--format text|json]``: what
  the quarantines hold, records per failed rule and a sample
  (:mod:`sdp_expect.cli.quarantine`).
- ``sdp-expect history record|show [--spec FILE]``: append the last update's counts to
  the history table, or print it (:mod:`sdp_expect.cli.history`).
- ``sdp-expect migrate SRC DST``: a Databricks Lakeflow / DLT project to an
  open-source SDP one (:mod:`sdp_expect.cli.migrate`).
- ``sdp-expect --version``.

Each subcommand's module has one ``add_<name>`` function that declares its
arguments and sets the function that does the work and returns the exit
status; :data:`SUBCOMMANDS` lists them. What the commands share (exit codes,
the version, writing text) is in :mod:`sdp_expect.cli.exit_codes`, which they
import instead of this module.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Callable, Optional, Sequence

from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, version
from sdp_expect.cli.history import add_history
from sdp_expect.cli.migrate import add_migrate
from sdp_expect.cli.quarantine import add_quarantine
from sdp_expect.cli.report import add_report
from sdp_expect.cli.run import add_dry_run, add_run
from sdp_expect.cli.serve import add_serve
from sdp_expect.cli.translate import add_translate
from sdp_expect.cli.validate import add_validate

__all__ = ["EXIT_INTERRUPTED", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "build_parser", "main",
           "version"]

EXIT_INTERRUPTED = 130
"""A command stopped by Ctrl-C (or SIGTERM, SIGHUP), as shells report a SIGINT."""


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    add_validate,
    add_translate,
    add_run,
    add_dry_run,
    add_serve,
    add_report,
    add_quarantine,
    add_history,
    add_migrate,
]
"""The functions that add each subcommand to the parser."""


def build_parser() -> argparse.ArgumentParser:
    """The ``sdp-expect`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="sdp-expect",
        description="Databricks-style expectations for open-source Spark Declarative Pipelines.",
        epilog="Exit status: 0 ok; 1 a pipeline, data or check failure; 2 usage error. "
        "`sdp-expect COMMAND --help` explains each command; docs/cli.md has examples.",
    )
    parser.add_argument("--version", action="version", version=f"sdp-expect {version()}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``sdp-expect`` command and return its exit status.

    :param argv: The arguments after the program name; ``None`` reads ``sys.argv``.
    :returns: 0 all well, 1 problems found, 2 usage error.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler: Optional[Callable[[argparse.Namespace], int]] = getattr(args, "handler", None)
    if handler is None:
        parser.print_usage(sys.stderr)
        write_text(sys.stderr, "sdp-expect: error: a command is required (for example: validate)\n")
        return EXIT_USAGE
    # pyspark's Python warnings in this process (importing its Spark Connect client, to
    # talk to the project's server or read the tables through it, warns for one when
    # pandas is newer than pyspark supports) would land among a run's events and under
    # its progress line; the pipeline program's own warnings go to the log file.
    warnings.filterwarnings("ignore", module=r"pyspark(\.|$)")
    try:
        return handler(args)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: what the command started is stopped
        write_text(sys.stderr, "\nsdp-expect: interrupted\n")
        return EXIT_INTERRUPTED
