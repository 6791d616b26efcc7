"""The ``sdp-expect`` command.

Subcommands:

- ``sdp-expect validate PATH... [--format text|json]``: check rule files (or
  directories of them) without starting Spark. Exit status 0 when all is
  well, 1 when anything is wrong, 2 for a usage error.
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
        help="check rule files without starting Spark",
        description="Check rule files (YAML or JSON) and directories of them. Prints every "
        "error with its file, rule and code. Exit status: 0 all well, 1 errors found, "
        "2 usage error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a rule file, or a directory searched for *.yml, *.yaml, *.json")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: text)")
    parser.set_defaults(handler=_run_validate)


def _run_validate(args: argparse.Namespace) -> int:
    from sdp_expect.validate import validate_paths

    report = validate_paths(args.paths)
    _write(sys.stdout, report.to_json() + "\n" if args.format == "json" else report.to_text())
    return EXIT_OK if report.ok else EXIT_PROBLEMS


# --------------------------------------------------------------------------- the command


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    _add_validate,
]
"""The functions that add each subcommand to the parser."""


def build_parser() -> argparse.ArgumentParser:
    """The ``sdp-expect`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="sdp-expect",
        description="Databricks-style expectations for open-source Spark Declarative Pipelines.",
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
