"""``sdp-expect serve``: keep a project's Spark Connect server warm between runs.

Most of a small pipeline's ``sdp-expect run`` is Spark starting. ``serve`` starts
the project's server once (:mod:`sdp_expect.runtime.local_server`, with the same
defaults a run's own server has) and records it in ``.sdp-expect/server.json``;
``run`` and ``dry-run`` of the project find it there and use it, so a re-run
after an edit skips the start. In the foreground it runs until Ctrl-C; with
``--background`` it returns once the server is up, and ``serve --stop`` stops
it (after the run that uses it, if one does).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.project import Project, UsageProblem, find_spec, load_project
from sdp_expect.base.terminal import paint, use_color, write_text
from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from sdp_expect.cli.run import add_pass_through
from sdp_expect.runtime.catalog_access import add_wait_argument
from sdp_expect.runtime.local_server import (
    SERVE_LOG,
    ServerProblem,
    ServerRecord,
    answers,
    interrupted_by_signals,
    plan_server,
    project_lock,
    read_record,
    recorded_server,
    remove_record,
    start_server,
    stop_server,
    warm_up,
    write_record,
)
from sdp_expect.runtime.spark_pipelines import SHARED_OPTIONS, build_command, split_options

__all__ = ["SERVE_DESCRIPTION", "add_serve", "command_serve"]

SERVE_DESCRIPTION = """\
Start the project's Spark Connect server and keep it, so that `sdp-expect run`
and `dry-run` of the project skip Spark's start: they find the server (in
.sdp-expect/server.json) and use it. It has the defaults of a run (the catalog
in the project folder, ...) and the options given here: --conf KEY=VALUE,
--master, --driver-memory, --packages, ... (runs then give none, or the same).

In the foreground it runs until Ctrl-C. With --background it returns once the
server is up; `sdp-expect serve --stop` stops it, `--status` tells whether it
is up. While it is up, `sdp-expect report` reads the tables through it.

Exit status: 0 the server was started (and, in the foreground, stopped with
Ctrl-C), stopped, or (--status) is up; 1 it could not be started, or (--status)
is not up; 2 usage error.
"""


def add_serve(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve`` and its arguments."""
    parser = subparsers.add_parser(
        "serve", help="keep the project's Spark server warm: runs of the project use it",
        usage="sdp-expect serve [options] [--conf KEY=VALUE] [--master M] [--driver-memory M] "
        "[...]", description=SERVE_DESCRIPTION, allow_abbrev=False,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", metavar="FILE",
                        help="the pipeline spec (spark-pipeline.yml), or its folder; default: the "
                        "first one in the current folder or its parents")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--background", action="store_true",
                      help="return once the server is up; it runs until `serve --stop`")
    what.add_argument("--stop", action="store_true",
                      help="stop the project's server (after the run that uses it, if any)")
    what.add_argument("--status", action="store_true",
                      help="tell whether the project's server is up (exit status 0) or not (1)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or one JSON document with the server's URL, port, "
                        "process, log and options")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colours: auto (default) on a terminal without NO_COLOR")
    add_wait_argument(parser)
    add_pass_through(parser)
    parser.set_defaults(handler=command_serve)


def command_serve(args: argparse.Namespace) -> int:
    """``sdp-expect serve``: start (and keep), stop, or tell; the exit status."""
    try:
        project = load_project(find_spec(args.spec))
        if not (args.stop or args.status):
            _check_options(args.passthrough)
        elif args.passthrough:
            raise UsageProblem(f"--stop and --status take no server options: "
                               f"{' '.join(args.passthrough)}")
    except UsageProblem as problem:
        write_text(sys.stderr, f"sdp-expect serve: error: {problem}\n")
        return EXIT_USAGE
    color = use_color(args.color, sys.stderr)

    def say(text: str) -> None:
        write_text(sys.stderr, paint(text, "dim", color))

    with interrupted_by_signals():
        try:
            if args.status:
                return _status(project, args)
            if args.stop:
                return _stop(project, args, say)
            return _serve(project, args, say)
        except ServerProblem as problem:
            if args.format == "json":
                _document(project, EXIT_PROBLEMS, "NOT_STARTED", None,
                          errors=[problem.as_dict()])
            else:
                write_text(sys.stderr, problem.render())
            return EXIT_PROBLEMS


def _check_options(options: list[str]) -> None:
    """``serve`` takes the server's options only (:func:`split_options`)."""
    if any(arg == "--remote" or arg.startswith("--remote=") for arg in options):
        raise UsageProblem("serve starts a local server: --remote has no place here")
    _, run = split_options(options)
    for_run: list[str] = []
    index = 0
    while index < len(run):  # what only spark-pipelines would take
        name, equals, _ = run[index].partition("=")
        if name in SHARED_OPTIONS:
            index += 1 if equals else 2
            continue
        for_run.append(run[index])
        index += 1
    if for_run:
        raise UsageProblem(f"serve takes only options of the Spark server (--conf, --master, "
                           f"--driver-memory, --packages, ...), not {' '.join(for_run)}: give "
                           f"them to sdp-expect run")


def _document(project: Project, status: int, state: str, record: Optional[ServerRecord], *,
              errors: Optional[list[dict[str, Any]]] = None) -> None:
    """``--format json``: one document on stdout."""
    write_text(sys.stdout, json.dumps({
        "command": "serve", "spec": str(project.spec), "exit_code": status, "status": state,
        "server": record.public() if record else None, "server_errors": errors or []},
        indent=2, ensure_ascii=False) + "\n")


def _serve(project: Project, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    folder = project.folder.resolve()
    try:
        plan = plan_server(project, build_command("run", project, args.passthrough), keep=True)
    except UsageProblem as problem:
        write_text(sys.stderr, f"sdp-expect serve: error: {problem}\n")
        return EXIT_USAGE
    log_path = folder / SERVE_LOG
    with project_lock(folder, wait=args.wait, say=say, command="serve"):
        up = recorded_server(folder)
        if up is not None:
            raise ServerProblem(SdpExpectError(
                "SDPX-SRV-504", f"the project's server is up on port {up.port} (process "
                f"{up.pid}, since {up.started_at})", location=Location(str(folder))))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w+b") as log:
            record, process = start_server(plan, log=log, say=say, log_path=log_path)
        try:
            began = time.monotonic()
            if warm_up(record):
                say(f"sdp-expect: the server's catalog is open and its query path loaded "
                    f"({time.monotonic() - began:.1f} s)\n")
        except KeyboardInterrupt:
            stop_server(record, process)
            raise
        write_record(folder, record)
    if args.format == "json":
        _document(project, EXIT_OK, "UP", record)
    else:
        how = ("it runs until `sdp-expect serve --stop`" if args.background
               else "Ctrl-C (or `sdp-expect serve --stop`) stops it")
        write_text(sys.stdout, f"sdp-expect serve: the Spark Connect server of {folder} is up: "
                   f"{record.url} (process {record.pid}); its log: {_shown(log_path)}\n"
                   f"`sdp-expect run` and `dry-run` of this project use it; {how}.\n")
    if args.background:
        return EXIT_OK
    try:
        process.wait()
    except KeyboardInterrupt:
        say("sdp-expect serve: stopping the server\n")
        remove_record(folder, record)
        stop_server(record, process)
        return EXIT_OK
    # It ended without Ctrl-C: `serve --stop` stopped it (it removed the record first),
    # or it stopped by itself.
    now = read_record(folder)
    stopped = now is None or now.server_id != record.server_id
    remove_record(folder, record)
    if stopped:
        say("sdp-expect serve: the server was stopped (sdp-expect serve --stop)\n")
        return EXIT_OK
    write_text(sys.stderr, f"sdp-expect serve: the server stopped by itself (exit status "
               f"{process.returncode}); see its log: {_shown(log_path)}\n")
    return EXIT_PROBLEMS


def _stop(project: Project, args: argparse.Namespace, say: Callable[[str], None]) -> int:
    folder = project.folder.resolve()
    with project_lock(folder, wait=args.wait, say=say, command="serve --stop"):
        record = read_record(folder)
        if record is not None and answers(record):
            remove_record(folder, record)
            stop_server(record)
            state, text = "STOPPED", f"stopped the server of {folder} (process {record.pid})"
        else:
            remove_record(folder)
            state, text = "NOT_RUNNING", f"no server of {folder} is up"
    if args.format == "json":
        _document(project, EXIT_OK, state, record if state == "STOPPED" else None)
    else:
        write_text(sys.stdout, f"sdp-expect serve: {text}\n")
    return EXIT_OK


def _status(project: Project, args: argparse.Namespace) -> int:
    folder = project.folder.resolve()
    record = read_record(folder)
    up = record is not None and record.kept and answers(record)
    status = EXIT_OK if up else EXIT_PROBLEMS
    if args.format == "json":
        _document(project, status, "UP" if up else "NOT_RUNNING", record if up else None)
    elif up and record is not None:
        write_text(sys.stdout, f"sdp-expect serve: the server of {folder} is up: {record.url} "
                   f"(process {record.pid}, since {record.started_at}); its log: "
                   f"{_shown(Path(record.log or folder / SERVE_LOG))}\n")
    else:
        write_text(sys.stdout, f"sdp-expect serve: no server of {folder} is up\n")
    return status


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
