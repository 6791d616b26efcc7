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
- ``spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart=false``: a run killed
  while a streaming flow wrote its first offsets leaves a temporary file in the
  flow's ``offsets`` folder, and Spark 4.1+ (where this check is on by default)
  then refuses to start that flow again (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``)
  until someone deletes the file. SDP gives every flow a checkpoint folder of its
  own (a new one at each full refresh), which is what the check protects; the
  offset log itself ignores temporary files, so the flow starts its first
  micro-batch again and nothing is lost or doubled (``tests/test_faults.py``);
- the project folder on ``PYTHONPATH``, as on Databricks: pipeline files can
  import the project's own modules.

A local run does not let ``spark-pipelines`` start its own server (pyspark
binds that one to port 15002, so two runs on one machine could not run at the
same time): :mod:`sdp_expect.runtime.local_server` starts a Spark Connect server of
the project's own on a free port, with these defaults and the user's
``spark-submit`` options (:func:`split_options`), and the run is
``spark-pipelines --remote`` to it (:meth:`Invocation.through`).

Flows with fail rules are already not retried (sdp-expect sets
``spark.sql.pipelines.maxFlowRetryAttempts=0`` on them).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Callable, Mapping, Optional, Sequence, TextIO

from sdp_expect.base import violation as violations
from sdp_expect.base.project import Project, UsageProblem
from sdp_expect.base.terminal import paint
from sdp_expect.base.update import UPDATE_VARIABLE, UpdateStamp
from sdp_expect.base.violation import DatasetRuleFailure, ToleranceFailure, Violation
from sdp_expect.runtime.progress import Progress
from sdp_expect.runtime.run_output import EVENT, FLOW_EVENT, ChildOutput, RuleError

__all__ = [
    "KILLED_FIRST_BATCH_KEY",
    "SERVER_OPTIONS",
    "SHARED_OPTIONS",
    "TOKEN_VARIABLE",
    "EventLog",
    "Invocation",
    "Outcome",
    "build_command",
    "default_confs",
    "full_refresh_of",
    "highlight",
    "is_local",
    "remote_of",
    "run_pipeline",
    "installed_command",
    "spark_pipelines_command",
    "split_options",
    "user_confs",
]

TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""Where a Spark Connect client, and server, read the token that authenticates the client."""
CHILD_STATE_VARIABLES = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", TOKEN_VARIABLE)
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


SERVER_OPTIONS = frozenset({
    "--master", "--deploy-mode", "--driver-memory", "--driver-cores", "--driver-java-options",
    "--driver-class-path", "--driver-library-path", "--executor-memory", "--executor-cores",
    "--total-executor-cores", "--num-executors", "--jars", "--packages", "--exclude-packages",
    "--repositories", "--files", "--archives", "--properties-file", "--queue", "--principal",
    "--keytab", "--proxy-user",
})
"""``spark-submit`` options (each with a value) that set up the Spark server, not the run:
for a local run they go to the project's server instead of ``spark-pipelines``."""
SHARED_OPTIONS = frozenset({"--conf", "-c", "--py-files"})
"""Options that both the server and ``spark-pipelines`` get: Spark settings (the server
starts with them, the run's session sets the runtime ones again) and Python files (the
pipeline's files import them; the server's Python workers too)."""


def split_options(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """The user's options of a local run, split: (the server's, ``spark-pipelines``').

    Options in :data:`SERVER_OPTIONS` go to the server, those in :data:`SHARED_OPTIONS`
    to both, everything else (``--full-refresh``, ``--refresh``, ...) to
    ``spark-pipelines``; each keeps its value (``--opt VALUE`` or ``--opt=VALUE``) and
    its order. A ``--remote`` that is not ``sc://`` (``--remote local``) is left out:
    the project's server is the run's.
    """
    server: list[str] = []
    run: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        name, equals, _ = arg.partition("=")
        known = name in SERVER_OPTIONS or name in SHARED_OPTIONS or name == "--remote"
        if known and not equals and index + 1 < len(args):
            option = [arg, args[index + 1]]
            index += 2
        else:
            option = [arg]
            index += 1
        if not known:
            run += option
        elif name == "--remote":
            continue
        else:
            if name in SERVER_OPTIONS or name in SHARED_OPTIONS:
                server += option
            if name in SHARED_OPTIONS:
                run += option
    return server, run


#: Spark 4.1+'s check that a streaming query which has never committed an offset starts
#: from empty checkpoint folders; a kill during the first offsets write fails it.
KILLED_FIRST_BATCH_KEY = "spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart"


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
        KILLED_FIRST_BATCH_KEY: "false",
    }


def installed_command(name: str, variable: str) -> str:
    """The command ``name`` of pyspark: ``$variable`` when set, else the one next to this
    Python, else the one on ``PATH``.

    :param name: ``spark-pipelines`` or ``spark-submit``.
    :param variable: The environment variable that names another one.
    :raises UsageProblem: when there is none (pyspark[pipelines] is not installed).
    """
    chosen = os.environ.get(variable)
    if chosen:
        return chosen
    found = (shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name))
    if not found:
        raise UsageProblem(f"{name} was not found: install pyspark[pipelines] "
                           "(pip install 'pyspark[pipelines]>=4.1') in this environment")
    return found


def spark_pipelines_command() -> str:
    """``$SDP_EXPECT_SPARK_PIPELINES``, else the ``spark-pipelines`` next to this Python,
    else the one on ``PATH``.

    :raises UsageProblem: when there is none (pyspark[pipelines] is not installed).
    """
    return installed_command("spark-pipelines", "SDP_EXPECT_SPARK_PIPELINES")


@dataclass(frozen=True)
class Invocation:
    """One ``spark-pipelines`` command and its setting.

    :param command: The command line.
    :param confs: The Spark settings in force: defaults, then the user's ``--conf``.
    :param remote: The user's ``--remote``, if any.
    :param env: The environment it runs in.
    :param server_options: A local run's options for the project's server (see
        :func:`split_options`), as given; they are not in ``command``.
    :param defaults: The defaults among ``confs`` (a local run's: those the user did
        not set), which the project's server starts with.
    :param server_url: The project's server that the run goes to, once there is one
        (:meth:`through`).
    :param client: The command of pyspark's pipelines program run directly
        (:mod:`sdp_expect.runtime.pipelines_client`), when nothing needs
        ``spark-pipelines``' launcher; empty otherwise. A local run's :meth:`through`
        takes it; a run on the user's ``--remote`` server has it as its ``command``.
    :param update: The update the run makes (:meth:`stamped`), which its quarantines'
        records and its history rows name.
    """

    command: list[str]
    confs: dict[str, str]
    remote: Optional[str]
    env: dict[str, str]
    server_options: list[str] = field(default_factory=list)
    defaults: dict[str, str] = field(default_factory=dict)
    server_url: Optional[str] = None
    client: list[str] = field(default_factory=list)
    update: Optional[UpdateStamp] = None

    @property
    def local(self) -> bool:
        """Whether it runs on a local Spark of the project's (no ``--remote sc://...``)."""
        return is_local(self.remote)

    def stamped(self, update: UpdateStamp) -> Invocation:
        """The same run as ``update``: its pipeline's definitions read the stamp from the
        environment (:data:`~sdp_expect.base.update.UPDATE_VARIABLE`)."""
        return replace(self, update=update,
                       env={**self.env, UPDATE_VARIABLE: update.to_environment()})

    def through(self, url: str, token: str) -> Invocation:
        """The same run on the project's server at ``url``, with its token.

        The token travels in the environment (``SPARK_CONNECT_AUTHENTICATE_TOKEN``), where
        the Spark Connect client reads it, not on the command line. The command is
        :attr:`client` when there is one (with the environment ``spark-submit`` would
        give it: the server's URL, the user's ``--conf`` settings), else
        ``spark-pipelines ... --remote URL``.
        """
        env = {**self.env, TOKEN_VARIABLE: token}
        if not self.client:
            return replace(self, command=[*self.command, "--remote", url], env=env,
                           server_url=url)
        return replace(self, command=list(self.client), env=_client_env(env, url, {
            key: value for key, value in self.confs.items() if key not in self.defaults}),
            server_url=url)


def _client_env(env: Mapping[str, str], url: str, confs: Mapping[str, str]) -> dict[str, str]:
    """``env`` with what ``spark-submit`` hands the Python program of ``spark-pipelines
    --remote url``: the server's URL and the user's settings ``confs``, in one group, so
    that none is lost (pyspark reads only the last group)."""
    return {**env, "SPARK_REMOTE": url, "PYSPARK_REMOTE_INIT_CONF_LEN": "1",
            "PYSPARK_REMOTE_INIT_CONF_0": json.dumps(
                {**confs, "spark.remote": url, "spark.api.mode": "connect"})}


def build_command(action: str, project: Project, passthrough: Sequence[str], *,
                  executable: Optional[str] = None,
                  environ: Optional[Mapping[str, str]] = None) -> Invocation:
    """The ``spark-pipelines`` command for ``action`` (``run`` or ``dry-run``).

    Defaults are only for keys the user did not set; the user's options follow
    unchanged, so they win. For a local run, the options that set up Spark itself
    (``--master``, ``--driver-memory``, ``--packages``, ...) are kept apart in
    ``server_options`` for the project's server, and the command has no ``--remote``
    yet (:meth:`Invocation.through` adds it).

    :param action: ``run`` or ``dry-run``.
    :param project: The project.
    :param passthrough: The user's other options, passed on as given.
    :param executable: The ``spark-pipelines`` command; default :func:`spark_pipelines_command`.
    :param environ: The environment to start from; default ``os.environ``.
    """
    given = user_confs(passthrough)
    remote = remote_of(passthrough)
    local = is_local(remote)
    defaults = default_confs(project.folder) if local else {}
    added = {key: value for key, value in defaults.items() if key not in given}
    server_options, run_options = split_options(passthrough) if local else ([], [*passthrough])
    base = os.environ if environ is None else environ
    chosen = executable or base.get("SDP_EXPECT_SPARK_PIPELINES")
    command = [chosen or spark_pipelines_command(), action, "--spec", str(project.spec),
               *run_options]
    env = dict(base)
    env["PYTHONUNBUFFERED"] = "1"  # events as they come, not when a buffer fills
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    # As on Databricks, the project folder is on the Python path: pipeline files can
    # import the project's own modules (`from utilities import helpers`).
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(project.folder), env.get("PYTHONPATH", "")) if part)
    if local:
        for key in CHILD_STATE_VARIABLES:
            env.pop(key, None)
    # pyspark's pipelines program run directly, when only its own options and --conf
    # settings are given: spark-submit, and the launcher before it, would start two
    # Java processes only to start it (2-3 s of every run, pipelines_client).
    pipeline_options = _pipeline_options(run_options if local else _without_remote(run_options))
    client: list[str] = []
    if chosen is None and pipeline_options is not None:
        python = env.get("PYSPARK_DRIVER_PYTHON") or env["PYSPARK_PYTHON"]
        client = [python, "-m", "sdp_expect.runtime.pipelines_client", action, "--spec",
                  str(project.spec), *pipeline_options]
    if not local and client and remote is not None:
        # The user's server is known already: the run goes to it directly.
        return Invocation(command=client, confs=given, remote=remote,
                          env=_client_env(env, remote, given), client=client)
    return Invocation(command=command, confs={**added, **given}, remote=remote, env=env,
                      server_options=server_options, defaults=added, client=client)


def _without_remote(options: Sequence[str]) -> list[str]:
    """``options`` without their ``--remote URL`` (or ``--remote=URL``)."""
    kept: list[str] = []
    index = 0
    while index < len(options):
        if options[index] == "--remote":
            index += 2
            continue
        if not options[index].startswith("--remote="):
            kept.append(options[index])
        index += 1
    return kept


PIPELINE_OPTIONS = {"--full-refresh": True, "--full-refresh-all": False, "--refresh": True}
"""The options of ``spark-pipelines run`` itself (True: it takes a value)."""


def full_refresh_of(command: Sequence[str]) -> tuple[list[str], bool]:
    """What a run's ``command`` refreshes from scratch: the datasets of its
    ``--full-refresh`` options (comma-separated), and whether it has
    ``--full-refresh-all``."""
    named: list[str] = []
    every = False
    index = 0
    while index < len(command):
        name, equals, value = command[index].partition("=")
        if name == "--full-refresh-all":
            every = True
        elif name == "--full-refresh":
            if not equals and index + 1 < len(command):
                index += 1
                value = command[index]
            named += [part.strip() for part in value.split(",") if part.strip()]
        index += 1
    return named, every


def _pipeline_options(run_options: Sequence[str]) -> Optional[list[str]]:
    """``run_options`` without the ``--conf`` settings (the server has them), when the
    rest are options of pyspark's pipelines program alone; None when anything else
    (``--py-files``, an option ``spark-submit`` reads) needs ``spark-pipelines``."""
    kept: list[str] = []
    index = 0
    while index < len(run_options):
        arg = run_options[index]
        name, equals, _ = arg.partition("=")
        takes_value = name in ("--conf", "-c") or PIPELINE_OPTIONS.get(name, False)
        if name not in PIPELINE_OPTIONS and name not in ("--conf", "-c"):
            return None
        width = 2 if takes_value and not equals else 1
        if name not in ("--conf", "-c"):
            kept += run_options[index:index + width]
        index += width
    return kept


# --------------------------------------------------------------------------- the events


_RUN_EVENT = re.compile(EVENT.pattern + r"Run is (?P<state>[A-Z_]+)\b")


@dataclass
class EventLog:
    """What a ``spark-pipelines`` run said, gathered from its output lines."""

    flows: dict[str, str] = field(default_factory=dict)
    """Each flow's last state, by the flow's name as printed."""
    run_state: Optional[str] = None
    """The run's last state (``COMPLETED``, ``FAILED``, ``CANCELED``)."""
    violations: list[Violation] = field(default_factory=list)
    """Every expectation violation reported, once each (Spark repeats the message in
    several events and in the final exception)."""
    tolerance_failures: list[ToleranceFailure] = field(default_factory=list)
    """Every flow reported failed by rules over their tolerance, once each."""
    dataset_rule_failures: list[DatasetRuleFailure] = field(default_factory=list)
    """Every flow reported failed by fail rules on the dataset as a whole, once each."""

    def feed(self, line: str) -> bool:
        """Note what one output line (an event, Python's output) says.

        :returns: Whether it changed a flow's state.
        """
        changed = False
        flow = FLOW_EVENT.match(line)
        if flow is not None:
            name, state = flow.group("quoted") or flow.group("flow"), flow.group("state")
            # A failed streaming flow may also be reported COMPLETED, before or after its
            # failure (its query stopped). A flow that failed completes only after it
            # was started again (a retry: QUEUED, STARTING, RUNNING...).
            if not (state == "COMPLETED" and self.flows.get(name) == "FAILED"):
                changed = self.flows.get(name) != state
                self.flows[name] = state
        run = _RUN_EVENT.match(line)
        if run is not None:
            self.run_state = run.group("state")
        for violation in violations.find_all(line):
            if violation not in self.violations:
                self.violations.append(violation)
        for failure in violations.find_tolerance_failures(line):
            if failure not in self.tolerance_failures:
                self.tolerance_failures.append(failure)
        for unmet in violations.find_dataset_rule_failures(line):
            if unmet not in self.dataset_rule_failures:
                self.dataset_rule_failures.append(unmet)
        return changed


def highlight(line: str, color: bool) -> str:
    """An output line, coloured by what it says when ``color``."""
    if not color:
        return line
    body, newline = (line[:-1], "\n") if line.endswith("\n") else (line, "")
    if violations.parse(body) is not None or violations.parse_tolerance_message(body) \
            or violations.parse_dataset_rule_message(body):
        return paint(body, "bold red", True) + newline
    if "has FAILED" in body or "Run is FAILED" in body or "is FAILED" in body:
        return paint(body, "red", True) + newline
    if "Run is COMPLETED" in body:
        return paint(body, "bold green", True) + newline
    if "is SKIPPED" in body or "has SKIPPED" in body or "SKIPPED due to" in body:
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


def run_pipeline(invocation: Invocation, out: TextIO, *, color: bool,
                 write: Callable[[TextIO, str], None], verbose: bool = True,
                 log: Optional[TextIO] = None, definitions: Optional[Path] = None,
                 progress: Optional[Progress] = None,
                 on_flows: Optional[Callable[[Mapping[str, str]], None]] = None) -> Outcome:
    """Run ``spark-pipelines``; copy its events (all its output with ``verbose``) to ``out``.

    :param invocation: From :func:`build_command` (for a local run, through the
        project's server: :meth:`Invocation.through`).
    :param out: Where the output goes, line by line as it comes.
    :param color: Colour failures, violations and the final state.
    :param write: Writes text to a stream (handles encodings).
    :param verbose: Copy every line; otherwise only what :class:`ChildOutput` shows.
    :param log: Where every line goes too (the log file).
    :param definitions: The definitions file the child writes (its variable is set
        in ``invocation.env`` by :func:`build_command`'s caller).
    :param progress: Shows the flows' progress; the output then goes through it (its
        caller closes it).
    :param on_flows: Called with the flows' states after each flow event, while the run
        goes on (quickly: it runs on the thread that reads the output).
    """
    return _run_once(invocation, out, color=color, write=write, verbose=verbose, log=log,
                     definitions=definitions, progress=progress, on_flows=on_flows)


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
              progress: Optional[Progress] = None,
              on_flows: Optional[Callable[[Mapping[str, str]], None]] = None) -> Outcome:
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
        definitions.unlink()  # a previous run's: this run defines the pipeline again
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
                jvm_tail = [*jvm_tail[-(STARTUP_LINES - 1):], line]
                if verbose:
                    emit([line])
                continue
            if events.feed(line) and on_flows is not None:
                on_flows(events.flows)
            kept = shown.feed(line)
            causes = shown.causes(events.violations, events.tolerance_failures,
                                  events.dataset_rule_failures)
            emit([highlight(text, color) for text in ([line] if verbose else kept) + causes],
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
