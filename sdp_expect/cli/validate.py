"""``sdp-expect validate PATH... [--format text|json]``: check rule files and
Databricks SQL files (or directories of them) without starting Spark
(:mod:`sdp_expect.validate` does the checking).
"""

from __future__ import annotations

import argparse
import sys

from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, write_text

__all__ = ["add_validate"]


def add_validate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``validate`` and its arguments."""
    parser = subparsers.add_parser(
        "validate",
        help="check rule files and Databricks SQL files without starting Spark",
        description="Check rule files (YAML or JSON), Databricks SQL files (CONSTRAINT ... "
        "EXPECT, and the rule files they name) and directories of them. Prints every "
        "error with its file, place and code. Exit status: 0 all well, 1 errors found, "
        "2 usage error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a rule file or SQL file, or a directory searched for *.yml, "
                        "*.yaml, *.json, *.sql")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: text)")
    parser.set_defaults(handler=_run_validate)


def _run_validate(args: argparse.Namespace) -> int:
    from sdp_expect.validate import validate_paths

    report = validate_paths(args.paths)
    write_text(sys.stdout, report.to_json() + "\n" if args.format == "json" else report.to_text())
    return EXIT_OK if report.ok else EXIT_PROBLEMS
