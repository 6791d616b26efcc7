"""``sdp-expect run`` and ``sdp-expect dry-run``: ``spark-pipelines`` with working defaults.

:func:`run_pipeline` starts ``spark-pipelines run`` (or ``dry-run``) for a
project, with Spark settings that make a local project work the first time
and every time after, streams its output as it comes, and returns an
:class:`Outcome`: the exit status, every flow's last state and every
expectation violation it printed. ``sdp-expect run`` then prints the
data-quality summary (:mod:`sdp_expect.dq_summary`).

The defaults (each one is left out when the user passes the same ``--conf``
key; see :func:`default_confs`):

- ``spark.sql.catalogImplementation=hive``: Spark's embedded Hive metastore
  keeps the catalog between runs (the in-memory catalog forgets the tables
  while their folders stay, and the second run fails with
  ``LOCATION_ALREADY_EXISTS``);
- the metastore (``metastore_db``, Derby) and the tables (``spark-warehouse``)
  in the project folder, whatever the current directory, so that
  ``sdp-expect report`` finds them;
- ``spark.ui.showConsoleProgress=false``: no progress bars inside the event lines;
- the project folder on ``PYTHONPATH``, as on Databricks: pipeline files can
  import the project's own modules.

The defaults, and the user's ``--conf spark.*`` settings too, reach Spark as
Java system properties (``SPARK_SUBMIT_OPTS``): ``spark-pipelines`` passes
``--conf`` settings to its local server in groups of ten and pyspark (4.1,
4.2) keeps only the last group, so with many settings some are silently lost.

Flows with fail rules are already not retried (sdp-expect sets
``spark.sql.pipelines.maxFlowRetryAttempts=0`` on them).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Mapping, Optional, Sequence, TextIO

from sdp_expect import violation as violations
from sdp_expect.dq_summary import (
    DEFAULT_SAMPLE,
    QualityReport,
    ReadError,
    Violation,
    build_report,
    paint,
    read_tables,
    report_dict,
    save_history,
    to_text,
    use_color,
    violation_dict,
    violation_lines,
    write_text,
)
from sdp_expect.run_output import DEFINITIONS_VARIABLE, ChildOutput, RuleError

__all__ = [
    "LOCAL_CONNECT_PORT",
    "SPEC_FILE_NAMES",
    "EventLog",
    "Outcome",
    "Project",
    "UsageProblem",
    "PassThroughParser",
    "build_command",
    "command_run",
    "default_confs",
    "find_spec",
    "highlight",
    "load_project",
    "remote_of",
    "run_pipeline",
    "user_confs",
]

SPEC_FILE_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")
"""The spec file names ``spark-pipelines`` looks for."""
LOCAL_CONNECT_PORT = 15002
"""The port of the local Spark Connect server that ``spark-pipelines`` starts."""
CHILD_STATE_VARIABLES = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE",
                         "SPARK_CONNECT_AUTHENTICATE_TOKEN")
"""Variables a Spark Connect client sets in its own process; a new run must not inherit them."""


class UsageProblem(Exception):
    """A mistake on the command line (exit status 2)."""


# --------------------------------------------------------------------------- the project


@dataclass(frozen=True)
class Project:
    """A pipeline project: its spec file and what the spec says.

    :param spec: The spec file, absolute.
    :param name: The pipeline's name.
    :param catalog: The spec's default catalog, if any.
    :param database: The spec's default database (``database`` or ``schema``), if any.
    :param configuration: The spec's ``configuration``.
    """

    spec: Path
    name: str = ""
    catalog: Optional[str] = None
    database: Optional[str] = None
    configuration: Mapping[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """The project folder: where the spec file is."""
        return self.spec.parent


def find_spec(given: Optional[str], start: Optional[Path] = None) -> Path:
    """The spec file: ``given``, else the first spec file in ``start`` or its parents.

    :param given: The ``--spec`` argument (a file, or a folder holding one).
    :param start: Where to look from; default the current directory.
    :raises UsageProblem: when there is none, or two in one folder.
    """
    if given is not None:
        path = Path(given).expanduser()
        if path.is_dir():
            return _spec_in(path) or _no_spec(path)
        if not path.is_file():
            raise UsageProblem(f"the spec file {given} does not exist")
        return path.resolve()
    folder = (start or Path.cwd()).resolve()
    while True:
        found = _spec_in(folder)
        if found is not None:
            return found
        if folder.parent == folder:
            return _no_spec(start or Path.cwd())
        folder = folder.parent


def _spec_in(folder: Path) -> Optional[Path]:
    found = [folder / name for name in SPEC_FILE_NAMES if (folder / name).is_file()]
    if len(found) > 1:
        raise UsageProblem(f"{folder} has both {SPEC_FILE_NAMES[0]} and {SPEC_FILE_NAMES[1]}; "
                           "keep one")
    return found[0].resolve() if found else None


def _no_spec(folder: Path) -> Path:
    raise UsageProblem(f"no {SPEC_FILE_NAMES[1]} (or .yaml) in {folder} or its parent folders; "
                       "give one with --spec")


def load_project(spec: Path) -> Project:
    """Read the parts of a spec file that sdp-expect needs.

    :raises UsageProblem: when the file is not a YAML mapping.
    """
    import yaml

    try:
        with open(spec, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        raise UsageProblem(f"cannot read the spec file {spec}: {error}") from None
    if not isinstance(data, dict):
        raise UsageProblem(f"the spec file {spec} is not a YAML mapping")
    configuration = data.get("configuration") or {}
    return Project(
        spec=spec,
        name=str(data.get("name", "")),
        catalog=_text(data.get("catalog")),
        database=_text(data.get("database", data.get("schema"))),
        configuration={str(k): str(v) for k, v in configuration.items()}
        if isinstance(configuration, dict) else {},
    )


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


# --------------------------------------------------------------------------- the command


_CONF_OPTIONS = ("--conf", "-c")


def user_confs(args: Sequence[str]) -> dict[str, str]:
    """The ``--conf KEY=VALUE`` (``-c``, ``--conf=KEY=VALUE``) settings among ``args``, in order."""
    found: dict[str, str] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        value: Optional[str] = None
        if arg in _CONF_OPTIONS and index + 1 < len(args):
            value = args[index + 1]
            index += 1
        elif arg.startswith("--conf="):
            value = arg[len("--conf="):]
        if value is not None and "=" in value:
            key, _, setting = value.partition("=")
            found[key.strip()] = setting
        index += 1
    return found


def remote_of(args: Sequence[str]) -> Optional[str]:
    """The ``--remote URL`` among ``args``, if any."""
    for index, arg in enumerate(args):
        if arg == "--remote" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--remote="):
            return arg[len("--remote="):]
    return None


def is_local(remote: Optional[str]) -> bool:
    """Whether the run starts its own local Spark (no ``--remote sc://...``)."""
    return remote is None or not remote.startswith("sc://")


def _java_option(key: str, value: str) -> str:
    """``-Dkey=value``, quoted as Spark's launcher reads options (``SPARK_SUBMIT_OPTS``)."""
    option = f"-D{key}={value}"
    if any(c.isspace() or c in "\"'\\" for c in option):
        return '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return option


def default_confs(folder: Path) -> dict[str, str]:
    """The Spark settings ``sdp-expect run`` adds for a local project in ``folder``.

    The catalog is Spark's embedded Hive metastore (Derby) in ``folder/metastore_db``,
    its tables under ``folder/spark-warehouse``.
    """
    folder = folder.resolve()
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(folder / "spark-warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={folder / 'metastore_db'};create=true",
        "spark.ui.showConsoleProgress": "false",
    }


def spark_pipelines_command() -> str:
    """``$SDP_EXPECT_SPARK_PIPELINES``, else the ``spark-pipelines`` next to this Python,
    else the one on ``PATH``.

    :raises UsageProblem: when there is none (pyspark[pipelines] is not installed).
    """
    chosen = os.environ.get("SDP_EXPECT_SPARK_PIPELINES")
    if chosen:
        return chosen
    found = (shutil.which("spark-pipelines", path=os.path.dirname(sys.executable))
             or shutil.which("spark-pipelines"))
    if not found:
        raise UsageProblem("spark-pipelines was not found: install pyspark[pipelines] "
                           "(pip install 'pyspark[pipelines]>=4.1') in this environment")
    return found


@dataclass(frozen=True)
class Invocation:
    """One ``spark-pipelines`` command and its setting.

    :param command: The command line.
    :param confs: The Spark settings in force: defaults, then the user's ``--conf``.
    :param remote: The user's ``--remote``, if any.
    :param env: The environment it runs in.
    """

    command: list[str]
    confs: dict[str, str]
    remote: Optional[str]
    env: dict[str, str]

    @property
    def local(self) -> bool:
        """Whether it starts its own local Spark."""
        return is_local(self.remote)


def build_command(action: str, project: Project, passthrough: Sequence[str], *,
                  executable: Optional[str] = None,
                  environ: Optional[Mapping[str, str]] = None) -> Invocation:
    """The ``spark-pipelines`` command for ``action`` (``run`` or ``dry-run``).

    Defaults come first and only for keys the user did not set; the user's
    options follow unchanged, so they win.

    :param action: ``run`` or ``dry-run``.
    :param project: The project.
    :param passthrough: The user's other options, passed on as given.
    :param executable: The ``spark-pipelines`` command; default :func:`spark_pipelines_command`.
    :param environ: The environment to start from; default ``os.environ``.
    """
    given = user_confs(passthrough)
    remote = remote_of(passthrough)
    defaults = default_confs(project.folder) if is_local(remote) else {}
    added = {key: value for key, value in defaults.items() if key not in given}
    command = [executable or spark_pipelines_command(), action, "--spec", str(project.spec),
               *passthrough]
    env = dict(os.environ if environ is None else environ)
    env["PYTHONUNBUFFERED"] = "1"  # events as they come, not when a buffer fills
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    # As on Databricks, the project folder is on the Python path: pipeline files can
    # import the project's own modules (`from utilities import helpers`).
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(project.folder), env.get("PYTHONPATH", "")) if part)
    if is_local(remote):
        for key in CHILD_STATE_VARIABLES:
            env.pop(key, None)
        # The settings travel as Java system properties of every Spark JVM the run
        # starts: spark-pipelines hands --conf settings to its local server in groups
        # of ten and pyspark keeps only the last group (4.1, 4.2), so a --conf can be
        # lost. The user's --conf are also passed on as given; the user's own
        # SPARK_SUBMIT_OPTS come last and win.
        spark_keys = {k: v for k, v in given.items() if k.startswith("spark.")}
        options = [_java_option(key, value) for key, value in {**added, **spark_keys}.items()]
        options.append(_java_option("derby.system.home", str(project.folder.resolve())))
        env["SPARK_SUBMIT_OPTS"] = " ".join([*options, env.get("SPARK_SUBMIT_OPTS", "")]).strip()
    return Invocation(command=command, confs={**added, **given}, remote=remote, env=env)


# --------------------------------------------------------------------------- the events


_EVENT = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: "
"""How ``spark-pipelines`` prints a pipeline event: its timestamp, then its message."""
_FLOW_EVENT = re.compile(_EVENT + r"Flow (?:'(?P<quoted>[^']+)'|(?P<flow>\S+)) "
                         r"(?:(?:is|has) )?(?P<state>[A-Z_]+)\b")
"""A flow's progress event: ``Flow a.b.c is RUNNING.``, ``Flow 'a.b.c' has FAILED.``,
``Flow 'a.b.c' SKIPPED due to upstream failure(s).`` (the wording varies by Spark line)."""
_RUN_EVENT = re.compile(_EVENT + r"Run is (?P<state>[A-Z_]+)\b")


@dataclass
class EventLog:
    """What a ``spark-pipelines`` run said, gathered from its output lines."""

    flows: dict[str, str] = field(default_factory=dict)
    """Each flow's last state, by the flow's name as printed."""
    run_state: Optional[str] = None
    """The run's last state (``COMPLETED``, ``FAILED``, ``CANCELED``)."""
    port_taken: bool = False
    """Whether the local Spark Connect server could not bind its port."""
    violations: list[Violation] = field(default_factory=list)
    """Every expectation violation reported, once each (Spark repeats the message in
    several events and in the final exception)."""

    def feed_log(self, line: str) -> None:
        """Note what one line of the JVM's log (``spark-pipelines``' stderr) says."""
        if "Failed to bind" in line and f":{LOCAL_CONNECT_PORT}" in line:
            self.port_taken = True

    def feed(self, line: str) -> None:
        """Note what one output line (an event, Python's output) says."""
        flow = _FLOW_EVENT.match(line)
        if flow is not None:
            name, state = flow.group("quoted") or flow.group("flow"), flow.group("state")
            # A failed streaming flow may also be reported COMPLETED, before or after its
            # failure (its query stopped). A flow that failed completes only after it
            # was started again (a retry: QUEUED, STARTING, RUNNING...).
            if not (state == "COMPLETED" and self.flows.get(name) == "FAILED"):
                self.flows[name] = state
        self.feed_log(line)
        run = _RUN_EVENT.match(line)
        if run is not None:
            self.run_state = run.group("state")
        for violation in violations.find_all(line):
            if violation not in self.violations:
                self.violations.append(violation)


def highlight(line: str, color: bool) -> str:
    """An output line, coloured by what it says when ``color``."""
    if not color:
        return line
    body, newline = (line[:-1], "\n") if line.endswith("\n") else (line, "")
    if violations.parse(body) is not None:
        return paint(body, "bold red", True) + newline
    if "has FAILED" in body or "Run is FAILED" in body or "is FAILED" in body:
        return paint(body, "red", True) + newline
    if "Run is COMPLETED" in body:
        return paint(body, "bold green", True) + newline
    if "is SKIPPED" in body or "has SKIPPED" in body:
        return paint(body, "yellow", True) + newline
    return line


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """How a ``spark-pipelines`` run ended.

    :param returncode: Its exit status.
    :param events: What it said.
    :param invocation: What was run.
    """

    returncode: int
    events: EventLog
    invocation: Invocation
    rule_errors: list[RuleError] = field(default_factory=list)
    """Constraints Spark could not analyse (SDPX-DEF-111), from the check views."""


def _port_busy(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_for_port(port: int, wait: float, say: Callable[[str], None]) -> bool:
    """Wait until nothing listens on ``port`` (up to ``wait`` seconds); True when free.

    ``wait`` 0 (or less) does not look at the port at all: True.
    """
    if wait <= 0 or not _port_busy(port):
        return True
    say(f"sdp-expect: another local Spark Connect server is listening on port {port} "
        f"(another spark-pipelines run?); waiting up to {wait:.0f} s for it to finish\n")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(2)
        if not _port_busy(port):
            return True
    return False


def run_pipeline(invocation: Invocation, out: TextIO, *, color: bool,
                 write: Callable[[TextIO, str], None], port_wait: float = 300.0,
                 verbose: bool = True, log: Optional[TextIO] = None,
                 definitions: Optional[Path] = None) -> Outcome:
    """Run ``spark-pipelines``; copy its events (all its output with ``verbose``) to ``out``.

    :param invocation: From :func:`build_command`.
    :param out: Where the output goes, line by line as it comes.
    :param color: Colour failures, violations and the final state.
    :param write: Writes text to a stream (handles encodings).
    :param port_wait: Seconds to wait when another local Spark Connect server holds the port.
    :param verbose: Copy every line; otherwise only what :class:`ChildOutput` shows.
    :param log: Where every line goes too (the log file).
    :param definitions: The definitions file the child writes (its variable is set
        in ``invocation.env`` by :func:`build_command`'s caller).
    """
    attempts = 3
    for attempt in range(1, attempts + 1):
        if invocation.local and not wait_for_port(LOCAL_CONNECT_PORT, port_wait,
                                                  lambda text: write(sys.stderr, text)):
            write(sys.stderr, f"sdp-expect: port {LOCAL_CONNECT_PORT} is still in use; "
                              "stop the other Spark Connect server and run again\n")
            return Outcome(returncode=1, events=EventLog(), invocation=invocation)
        outcome = _run_once(invocation, out, color=color, write=write, verbose=verbose,
                            log=log, definitions=definitions)
        events = outcome.events
        # Another local server took the port between the check and the start: the
        # pipeline never ran, so running it again is safe.
        if not (invocation.local and events.port_taken and not events.flows) \
                or attempt == attempts:
            return outcome
        write(sys.stderr, f"sdp-expect: port {LOCAL_CONNECT_PORT} was taken by another Spark "
                          f"Connect server as this run started; starting again "
                          f"({attempt + 1}/{attempts})\n")
    raise AssertionError("unreachable")


STARTUP_LINES = 20
"""How many of the JVM's last log lines a failed run shows when no pipeline event came."""


def _read_lines(stream: IO[bytes], name: str, lines: queue.Queue[tuple[str, Optional[str]]]
                ) -> None:
    """Put each line of ``stream`` on ``lines`` as (name, line); (name, None) at its end."""
    try:
        for raw in iter(stream.readline, b""):
            lines.put((name, raw.decode("utf-8", "replace")))
    finally:
        lines.put((name, None))


def _run_once(invocation: Invocation, out: TextIO, *, color: bool,
              write: Callable[[TextIO, str], None], verbose: bool = True,
              log: Optional[TextIO] = None, definitions: Optional[Path] = None) -> Outcome:
    """One ``spark-pipelines`` run, its two output streams read apart.

    ``spark-pipelines`` writes the pipeline's events (and Python's own output) on
    stdout and the JVM's log on stderr. Read through one pipe, a log line can land
    inside an event line (each process writes in chunks), and the event is lost;
    read apart, every event line stays whole. The events come from stdout alone; the
    JVM's log goes to the log file (and to ``out`` with ``verbose``).
    """
    events = EventLog()
    if definitions is not None and definitions.exists():
        definitions.unlink()  # a new attempt defines the pipeline again
    shown = ChildOutput(definitions)
    process = subprocess.Popen(invocation.command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=invocation.env)
    assert process.stdout is not None and process.stderr is not None
    lines: queue.Queue[tuple[str, Optional[str]]] = queue.Queue()
    readers = [threading.Thread(target=_read_lines, args=(stream, name, lines), daemon=True)
               for stream, name in ((process.stdout, "out"), (process.stderr, "log"))]
    for reader in readers:
        reader.start()
    jvm_tail: list[str] = []
    try:
        open_streams = len(readers)
        while open_streams:
            name, line = lines.get()
            if line is None:
                open_streams -= 1
                continue
            if log is not None:
                log.write(line)
            if name == "log":
                events.feed_log(line)
                jvm_tail = [*jvm_tail[-(STARTUP_LINES - 1):], line]
                if verbose:
                    write(out, line)
                continue
            events.feed(line)
            kept = shown.feed(line)
            for text in [line] if verbose else kept:
                write(out, highlight(text, color))
        returncode = process.wait()
        for text in shown.finish():
            if not verbose:
                write(out, highlight(text, color))
        if returncode != 0 and not verbose and events.run_state is None \
                and not events.flows:  # it stopped before the pipeline started: say why
            for text in jvm_tail:
                write(out, text)
    except KeyboardInterrupt:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        raise
    finally:
        for reader in readers:
            reader.join(5)
        process.stdout.close()
        process.stderr.close()
    return Outcome(returncode=returncode, events=events, invocation=invocation,
                   rule_errors=shown.rule_errors)


# --------------------------------------------------------------------------- the subcommands


RUN_DESCRIPTION = """\
Run the pipeline with spark-pipelines, stream its events as they come, and
print a data-quality summary at the end: for each dataset with expectations,
each rule's action, passed and failed records and failure percentage, and the
records the dataset dropped, read from its <dataset>_dq_metrics table. A
violated fail rule is shown with its record, and the exit status is 1.

Defaults (an option you pass wins over each of them): the catalog is Spark's
embedded Hive metastore, kept in the project folder (metastore_db/ and
spark-warehouse/ next to the spec file), so every run finds the tables of the
last one; no console progress bars; the project folder on the Python path
(pipeline files can import the project's modules, as on Databricks). Flows
with fail rules are not retried. Every other option is passed to
spark-pipelines unchanged: --full-refresh, --full-refresh-all, --refresh,
--conf KEY=VALUE, --remote, --master, --packages, ... (docs/cli.md)

Exit status: 0 the run completed and no expectation failed; 1 the pipeline or
an expectation failed (or the summary could not be read); 2 usage error.
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
    parser.add_argument("--verbose", action="store_true",
                        help="show every line spark-pipelines prints (Spark's logs, warnings, "
                        "plans, tracebacks); by default they go only to the log file "
                        "(.sdp-expect/logs/ in the project folder)")
    parser.add_argument("--port-wait", type=float, default=300.0, metavar="SECONDS",
                        help="when another local Spark Connect server holds port 15002, wait "
                        "this long for it to finish (default: 300; 0: do not check)")
    if summary:
        parser.add_argument("--no-summary", action="store_true",
                            help="do not read the metrics tables after the run")
        parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, metavar="N",
                            help="quarantined records read per dataset "
                            f"(default: {DEFAULT_SAMPLE})")


def exit_status(outcome: Outcome) -> int:
    """0 all well, 1 the pipeline or an expectation failed, 2 spark-pipelines' usage error."""
    from sdp_expect.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

    if outcome.returncode == 2:
        return EXIT_USAGE
    if outcome.returncode != 0 or outcome.events.violations:
        return EXIT_PROBLEMS
    if outcome.events.run_state not in (None, "COMPLETED"):
        return EXIT_PROBLEMS
    return EXIT_OK


def summarize_run(project: Project, outcome: Outcome, sample: int) -> QualityReport:
    """Read the tables after a run and combine them with what the run said.

    :raises ReadError: when the tables cannot be read.
    """
    invocation = outcome.invocation
    reading = read_tables(project.folder, invocation.confs if invocation.local else {},
                          catalog=project.catalog, database=project.database,
                          remote=None if invocation.local else invocation.remote, sample=sample)
    events = outcome.events
    return build_report(reading, flows=events.flows, violations=events.violations,
                        run_status=events.run_state or ("COMPLETED" if outcome.returncode == 0
                                                        else "FAILED"))


def _final_line(action: str, outcome: Outcome, status: int, color: bool) -> str:
    state = outcome.events.run_state or ("COMPLETED" if outcome.returncode == 0 else "FAILED")
    count = len(outcome.events.violations)
    text = f"sdp-expect {action}: {state}"
    if count:
        text += f", {count} expectation violation{'s' if count != 1 else ''}"
    text += f" (exit status {status})"
    return "\n" + paint(text, "bold green" if status == 0 else "bold red", color) + "\n"


def command_run(args: argparse.Namespace, *, dry: bool) -> int:
    """``sdp-expect run`` / ``dry-run``: run, stream, summarize; the exit status."""
    from sdp_expect.cli import EXIT_PROBLEMS, EXIT_USAGE

    action = "dry-run" if dry else "run"
    try:
        project = load_project(find_spec(args.spec))
        invocation = build_command(action, project, args.passthrough)
    except UsageProblem as problem:
        write_text(sys.stderr, f"sdp-expect {action}: error: {problem}\n")
        return EXIT_USAGE
    as_json = args.format == "json"
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
    verbose = bool(getattr(args, "verbose", False))
    with open(log_path, "w", encoding="utf-8", errors="replace") as log:
        outcome = run_pipeline(invocation, events_out, color=color, write=write_text,
                               port_wait=args.port_wait, verbose=verbose, log=log,
                               definitions=definitions)
    if verbose and outcome.rule_errors:
        write_text(events_out, "".join(paint(rule.error().render(), "bold red", color) + "\n"
                                       for rule in outcome.rule_errors))
    status = exit_status(outcome)
    if outcome.rule_errors:
        status = status or EXIT_PROBLEMS
    report: Optional[QualityReport] = None
    started = bool(outcome.events.flows or outcome.events.violations)
    if not dry and not args.no_summary and started:
        catalog = invocation.confs.get("spark.sql.catalogImplementation", "hive")
        if invocation.local and catalog != "hive":
            write_text(sys.stderr, "sdp-expect run: no summary: with the catalog "
                       f"{catalog!r} the tables do not outlive the run\n")
        else:
            try:
                report = summarize_run(project, outcome, args.sample)
                save_history(project.folder, report)
            except ReadError as error:
                write_text(sys.stderr, f"sdp-expect run: cannot read the metrics tables: "
                           f"{error}\n")
                status = status or EXIT_PROBLEMS
    if as_json:
        document: dict[str, Any] = {"command": action, "spec": str(project.spec),
                                    "exit_code": status,
                                    "status": outcome.events.run_state
                                    or ("COMPLETED" if outcome.returncode == 0 else "FAILED"),
                                    "flows": dict(outcome.events.flows),
                                    "log": str(log_path),
                                    "rule_errors": [r.as_dict() for r in outcome.rule_errors]}
        if report is not None:
            document.update(report_dict(report))
        else:
            document["violations"] = [violation_dict(v) for v in outcome.events.violations]
        write_text(sys.stdout, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        return status
    if report is not None:
        write_text(sys.stdout, "\n" + to_text(report, color=color))
    elif outcome.events.violations:
        lines = ["", paint("== Expectation violations", "bold", color)]
        for violation in outcome.events.violations:
            lines.append(paint(violation.dataset, "bold", color))
            lines.extend(violation_lines(violation, color, "  "))
        write_text(sys.stdout, "\n".join(lines) + "\n")
    write_text(sys.stdout, paint(f"full log: {_shown_path(log_path)}\n", "dim", color))
    write_text(sys.stdout, _final_line(action, outcome, status, color))
    return status


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
