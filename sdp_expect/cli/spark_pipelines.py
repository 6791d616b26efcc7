"""Starting ``spark-pipelines`` for ``sdp-expect run`` and ``dry-run``, and following it.

:func:`build_command` makes the ``spark-pipelines run`` (or ``dry-run``) command
of a project, with Spark settings that make a local project work the first time
and every time after; :func:`run_pipeline` runs it, streams its output as it
comes, and returns an :class:`Outcome`: the exit status, every flow's last state
and every expectation violation it printed.

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
from typing import IO, Callable, Mapping, Optional, Sequence, TextIO

from sdp_expect import violation as violations
from sdp_expect.cli.progress import Progress
from sdp_expect.cli.run_output import ChildOutput, RuleError
from sdp_expect.project import Project, UsageProblem
from sdp_expect.report.text import paint
from sdp_expect.violation import Violation

__all__ = [
    "LOCAL_CONNECT_PORT",
    "EventLog",
    "Invocation",
    "Outcome",
    "build_command",
    "default_confs",
    "highlight",
    "is_local",
    "remote_of",
    "run_pipeline",
    "spark_pipelines_command",
    "user_confs",
    "wait_for_port",
]

LOCAL_CONNECT_PORT = 15002
"""The port of the local Spark Connect server that ``spark-pipelines`` starts."""
CHILD_STATE_VARIABLES = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE",
                         "SPARK_CONNECT_AUTHENTICATE_TOKEN")
"""Variables a Spark Connect client sets in its own process; a new run must not inherit them."""


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
                 definitions: Optional[Path] = None,
                 progress: Optional[Progress] = None) -> Outcome:
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
    :param progress: Shows the flows' progress; the output then goes through it (its
        caller closes it).
    """
    attempts = 3
    for attempt in range(1, attempts + 1):
        if invocation.local and not wait_for_port(LOCAL_CONNECT_PORT, port_wait,
                                                  lambda text: write(sys.stderr, text)):
            write(sys.stderr, f"sdp-expect: port {LOCAL_CONNECT_PORT} is still in use; "
                              "stop the other Spark Connect server and run again\n")
            return Outcome(returncode=1, events=EventLog(), invocation=invocation)
        outcome = _run_once(invocation, out, color=color, write=write, verbose=verbose,
                            log=log, definitions=definitions, progress=progress)
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
              log: Optional[TextIO] = None, definitions: Optional[Path] = None,
              progress: Optional[Progress] = None) -> Outcome:
    """One ``spark-pipelines`` run, its two output streams read apart.

    ``spark-pipelines`` writes the pipeline's events (and Python's own output) on
    stdout and the JVM's log on stderr. Read through one pipe, a log line can land
    inside an event line (each process writes in chunks), and the event is lost;
    read apart, every event line stays whole. The events come from stdout alone; the
    JVM's log goes to the log file (and to ``out`` with ``verbose``). With ``progress``,
    every line shown goes through it, and it is told the flows' states after each line.
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

    def emit(texts: Sequence[str], flows: Optional[Mapping[str, str]] = None) -> None:
        if progress is not None:
            progress.show(texts, flows)
        else:
            for text in texts:
                write(out, text)

    if progress is not None:
        progress.begin()
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
                    emit([line])
                continue
            events.feed(line)
            kept = shown.feed(line)
            emit([highlight(text, color) for text in ([line] if verbose else kept)],
                 events.flows)
        returncode = process.wait()
        held = shown.finish()
        if not verbose:
            emit([highlight(text, color) for text in held])
        if returncode != 0 and not verbose and events.run_state is None \
                and not events.flows:  # it stopped before the pipeline started: say why
            emit(jvm_tail)
    except KeyboardInterrupt:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        raise
    finally:
        if progress is not None:
            progress.pause()
        for reader in readers:
            reader.join(5)
        process.stdout.close()
        process.stderr.close()
    return Outcome(returncode=returncode, events=events, invocation=invocation,
                   rule_errors=shown.rule_errors)
