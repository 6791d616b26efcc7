"""``sdp-expect validate [PATH...] [--format text|json|github|sarif]``: check rule files,
Databricks SQL files, Python files and pipeline projects (or directories of them) without
starting Spark (:mod:`sdp_expect.checks.validate` does the checking); with no PATH, the
project whose spec is in the current folder or a parent, as ``run`` finds it.
``sdp-expect validate --schema`` prints the JSON Schema of rule files, for editors
(:mod:`sdp_expect.schemas`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sdp_expect.base.project import SPEC_FILE_NAMES, UsageProblem, find_spec
from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

__all__ = ["add_validate"]


class _PrintSchema(argparse.Action):
    """``--schema``: print the rule-file JSON Schema and exit 0, like ``--version``
    (no PATH needed)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: Any = None) -> None:
        from sdp_expect.schemas import rule_file_schema_text

        write_text(sys.stdout, rule_file_schema_text())
        parser.exit(EXIT_OK)


def add_validate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``validate`` and its arguments."""
    parser = subparsers.add_parser(
        "validate",
        help="check a project, rule files and Databricks SQL files without starting Spark",
        description="Check a pipeline project (its spec and the files of its libraries: "
        "files spark-pipelines would refuse, Python files that do not parse), rule files "
        "(YAML or JSON), Databricks SQL files (CONSTRAINT ... EXPECT, and the rule files "
        "they name) and directories of them. With no PATH: the project whose spec is in "
        "this folder or a parent. Prints every error with its file, place and code. Exit "
        "status: 0 all well, 1 errors found, 2 usage error (no PATH and no project).",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="a project folder or spec, a rule file, SQL file or Python "
                        "file, or a directory searched for *.yml, *.yaml, *.json, *.sql "
                        "(default: the project around the current folder)")
    parser.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                        help="output format (default: text): json, the report as data; "
                        "github, GitHub Actions error annotations; sarif, a SARIF 2.1.0 log "
                        "for code-scanning tools")
    parser.add_argument("--schema", action=_PrintSchema,
                        help="print the JSON Schema of rule files (for editors: completion "
                        "and checking while you type; docs/rule-files.md) and exit")
    parser.set_defaults(handler=_run_validate)


def _run_validate(args: argparse.Namespace) -> int:
    from sdp_expect.checks.formats import to_github, to_sarif
    from sdp_expect.checks.validate import validate_paths

    paths = list(args.paths)
    if not paths:
        try:
            paths = [str(find_spec(None).parent)]
        except UsageProblem:
            write_text(sys.stderr, "sdp-expect validate: error: no PATH given and no pipeline "
                       f"spec ({' or '.join(SPEC_FILE_NAMES)}) in {Path.cwd()} or a parent "
                       "folder: give a PATH, or run it in a project folder\n")
            return EXIT_USAGE
    report = validate_paths(paths)
    if args.format == "json":
        shown = report.to_json() + "\n"
    elif args.format == "github":
        shown = to_github(report.errors)
    elif args.format == "sarif":
        shown = to_sarif(report.errors)
    else:
        shown = report.to_text()
    write_text(sys.stdout, shown)
    return EXIT_OK if report.ok else EXIT_PROBLEMS
