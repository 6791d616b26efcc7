"""The ``sdp-expect`` command.

Subcommands:

- ``sdp-expect validate PATH... [--format text|json]``: check rule files and
  Databricks SQL files (or directories of them) without starting Spark. Exit
  status 0 when all is well, 1 when anything is wrong, 2 for a usage error.
- ``sdp-expect translate FILE.sql... [--spec SPEC] [--conf KEY=VALUE]... [-o OUT]``: print the
  open-source SDP SQL of Databricks SQL pipeline files, without Spark. Exit
  status 0 when every file translates, 1 for a coded error, 2 for a usage error.
- ``sdp-expect run [--spec FILE] [--format text|json] [spark-pipelines options]``
  and ``sdp-expect dry-run ...``: ``spark-pipelines`` with defaults that make a
  local project work every time, its events streamed, then (``run``) a
  data-quality summary (:mod:`sdp_expect.run_command`).
- ``sdp-expect report [--spec FILE] [--html OUT.html]``: the summary of the
  last successful update of each dataset, as text, JSON or an HTML page
  (:mod:`sdp_expect.report_command`).
- ``sdp-expect migrate SRC DST``: a Databricks Lakeflow / DLT project to an
  open-source SDP one (:mod:`sdp_expect.migrate`).
- ``sdp-expect --version``.

Each subcommand is one ``_add_<name>`` function that declares its arguments
and one ``_run_<name>`` function that does the work and returns the exit
status; :data:`SUBCOMMANDS` lists them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from typing import Callable, Optional, Sequence, TextIO

__all__ = ["EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "build_parser", "main", "version"]

EXIT_OK = 0
"""Everything checked is fine."""
EXIT_PROBLEMS = 1
"""Something checked is wrong."""
EXIT_USAGE = 2
"""The command line itself is wrong."""


def version() -> str:
    """The installed sdp-expect version (``sdp_expect.__version__``, else the package metadata)."""
    import sdp_expect

    found = getattr(sdp_expect, "__version__", None)
    if isinstance(found, str):
        return found
    try:
        return importlib.metadata.version("sdp-expect")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def _write(stream: TextIO, text: str) -> None:
    """Write ``text`` even when the stream's encoding cannot hold every character."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


# --------------------------------------------------------------------------- validate


def _add_validate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    _write(sys.stdout, report.to_json() + "\n" if args.format == "json" else report.to_text())
    return EXIT_OK if report.ok else EXIT_PROBLEMS


# --------------------------------------------------------------------------- translate

_TRANSLATE_KEYS = ("sdp_expect.quarantine", "sdp_expect.metrics", "sdp_expect.null_result",
                   "spark.sql.pipelines.maxFlowRetryAttempts")


def _add_translate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "translate",
        help="print the open-source SDP SQL of Databricks SQL pipeline files",
        description="Translate Databricks SQL pipeline files (CREATE OR REFRESH ..., "
        "CONSTRAINT ... EXPECT, LIVE.) to open-source SDP SQL, as sdp_expect.sql.include "
        "does, without starting Spark. The files are translated in the order given, as "
        "files of one pipeline. Saved as .sql files in the pipeline's libraries, the output "
        "gives the same tables. Exit status: 0 all translated, 1 errors found, 2 usage error.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.sql", help="a Databricks SQL file")
    parser.add_argument("--spec", metavar="SPEC",
                        help="take those settings from the configuration of this pipeline "
                        "spec (spark-pipeline.yml); --conf overrides it")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a pipeline setting the translation depends on: "
                        + ", ".join(_TRANSLATE_KEYS) + " (repeatable; default: as in a "
                        "pipeline that sets none)")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write to OUT instead of printing: a file for one input, a folder "
                        "(one .sql file per input) for several or when OUT is a folder")
    parser.set_defaults(handler=_run_translate)


def _spec_conf(path: str) -> dict[str, str]:
    """The translation settings in a pipeline spec's ``configuration``."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        try:
            spec = yaml.safe_load(handle)
        except yaml.YAMLError as error:
            raise ValueError(f"not a YAML document: {error}") from None
    configuration = spec.get("configuration") if isinstance(spec, dict) else None
    if configuration is None:
        return {}
    if not isinstance(configuration, dict):
        raise ValueError("'configuration' is not a mapping")
    return {key: str(value).lower() if isinstance(value, bool) else str(value)
            for key, value in configuration.items() if key in _TRANSLATE_KEYS}


def _run_translate(args: argparse.Namespace) -> int:
    import os

    from sdp_expect.errors import SdpExpectError
    from sdp_expect.sql import translate_files

    conf: dict[str, str] = {}
    if args.spec is not None:
        try:
            conf.update(_spec_conf(args.spec))
        except (OSError, ValueError) as error:
            _write(sys.stderr, f"sdp-expect translate: error: --spec {args.spec}: {error}\n")
            return EXIT_USAGE
    for item in args.conf:
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or key not in _TRANSLATE_KEYS:
            _write(sys.stderr, f"sdp-expect translate: error: --conf {item!r}: expected "
                   f"KEY=VALUE with KEY one of {', '.join(_TRANSLATE_KEYS)}\n")
            return EXIT_USAGE
        conf[key] = value.strip()
    try:
        translations = translate_files(args.files, conf=conf)
    except SdpExpectError as error:
        _write(sys.stderr, f"error: {error}\n")
        return EXIT_PROBLEMS
    output: Optional[str] = args.output
    if output is None:
        _write(sys.stdout, "\n".join(t.text for t in translations))
        return EXIT_OK
    to_folder = len(translations) > 1 or os.path.isdir(output) or output.endswith(os.sep)
    if to_folder:
        os.makedirs(output, exist_ok=True)
        names = [os.path.basename(t.file) for t in translations]
        if len(set(names)) != len(names):
            _write(sys.stderr, "sdp-expect translate: error: two input files have the same "
                   "name; translate them into different folders\n")
            return EXIT_USAGE
    for translation in translations:
        target = os.path.join(output, os.path.basename(translation.file)) if to_folder \
            else output
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(translation.text)
        _write(sys.stderr, f"{translation.file} -> {target}\n")
    return EXIT_OK


# --------------------------------------------------------------------------- run, dry-run


def _add_run(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from sdp_expect import run_command

    parser = subparsers.add_parser(
        "run", help="run the pipeline (spark-pipelines run) and show its data quality",
        usage="sdp-expect run [options] [spark-pipelines run options]",
        description=run_command.RUN_DESCRIPTION, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    run_command.add_common_arguments(parser, summary=True)
    run_command.add_pass_through(parser)
    parser.set_defaults(handler=_run_run)


def _run_run(args: argparse.Namespace) -> int:
    from sdp_expect.run_command import command_run

    return command_run(args, dry=False)


def _add_dry_run(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from sdp_expect import run_command

    parser = subparsers.add_parser(
        "dry-run", help="check the pipeline without writing (spark-pipelines dry-run)",
        usage="sdp-expect dry-run [options] [spark-pipelines dry-run options]",
        description=run_command.DRY_RUN_DESCRIPTION, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    run_command.add_common_arguments(parser, summary=False)
    run_command.add_pass_through(parser)
    parser.set_defaults(handler=_run_dry_run)


def _run_dry_run(args: argparse.Namespace) -> int:
    from sdp_expect.run_command import command_run

    return command_run(args, dry=True)


# --------------------------------------------------------------------------- report


def _add_report(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from sdp_expect import report_command

    parser = subparsers.add_parser(
        "report", help="the data-quality summary of the last updates, as text, JSON or HTML",
        description=report_command.REPORT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    report_command.add_report_arguments(parser)
    parser.set_defaults(handler=_run_report)


def _run_report(args: argparse.Namespace) -> int:
    from sdp_expect.report_command import command_report

    return command_report(args)


# --------------------------------------------------------------------------- migrate


def _add_migrate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from sdp_expect.migrate import MIGRATE_DESCRIPTION

    parser = subparsers.add_parser(
        "migrate", help="convert a Databricks Lakeflow / DLT project to open-source SDP",
        description=MIGRATE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", metavar="SRC", help="the Databricks project folder (only read)")
    parser.add_argument("dst", metavar="DST", help="a new (or empty) folder for the result")
    parser.add_argument("--name", help="the pipeline's name (default: the bundle's pipeline "
                        "name, else SRC's folder name)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: text)")
    parser.add_argument("--no-check", action="store_true",
                        help="do not dry-run the result (the dry-run starts Spark)")
    parser.add_argument("--data-root", metavar="FOLDER",
                        help="where the files of the Databricks data roots are: each "
                        "/Volumes/<catalog>/<schema>/<volume> (dbfs:/mnt/<m>...) becomes the "
                        "pipeline setting FOLDER/<volume> (default: DST/data/<volume>, reported)")
    parser.add_argument("--port-wait", type=float, metavar="SECONDS",
                        help="for the dry-run: how long to wait for port 15002 (default 300)")
    parser.set_defaults(handler=_run_migrate)


def _run_migrate(args: argparse.Namespace) -> int:
    from sdp_expect.migrate import command_migrate

    return command_migrate(args)


# --------------------------------------------------------------------------- the command


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_validate,
    _add_translate,
    _add_run,
    _add_dry_run,
    _add_report,
    _add_migrate,
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
        _write(sys.stderr, "sdp-expect: error: a command is required (for example: validate)\n")
        return EXIT_USAGE
    return handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
