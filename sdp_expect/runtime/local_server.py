"""The project's own Spark Connect server: one per run on a free port, or a warm one.

``spark-pipelines run`` without ``--remote`` starts a Spark Connect server inside
its own process, and pyspark always binds that one to port 15002: two runs on
one machine cannot both have it. So ``sdp-expect run`` and ``dry-run`` start a
server of the project's own, as ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` on a free port, with
the settings ``spark-pipelines`` would have given its own (the project's
defaults, master ``local``, ``WARN`` logs, artifact isolation), run
``spark-pipelines --remote sc://localhost:PORT`` against it, read the summary
through it, and stop it (:func:`server_for_run`).

``sdp-expect serve`` starts the same server and keeps it (:func:`start_server`
with ``keep``): the runs of the project find it and skip Spark's start-up, which
is most of a small pipeline's time.

What keeps this safe:

- **One run of a project at a time** (:func:`project_lock`, an advisory lock on
  ``.sdp-expect/project.lock``): the embedded Derby metastore in the project
  folder admits one Spark at a time. Runs of other projects do not wait.
- **The record** ``.sdp-expect/server.json`` (:class:`ServerRecord`, readable
  by its owner only): the server of the project that is up, its port, process,
  token and settings; a run finds the warm server there. A run records its own
  server too, so that the next run can stop one that a killed run left behind.
- **Only our clients, only this server**: the server listens on 127.0.0.1 and
  requires a random token (``SPARK_CONNECT_AUTHENTICATE_TOKEN``); it is given
  an id (``spark.sdp_expect.server.id``) that :func:`probe` reads back through
  Spark Connect, so a port that another process took, or a record whose
  server has gone, is never mistaken for the project's server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import importlib.metadata
import json
import os
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, Callable, Iterator, Optional, TextIO

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.project import Project
from sdp_expect.runtime.format_jars import format_setup
from sdp_expect.runtime.spark_pipelines import (
    TOKEN_VARIABLE,
    Invocation,
    installed_command,
    user_confs,
)
from sdp_expect.spark.sessions import connect

__all__ = [
    "ID_KEY",
    "LOCK_FILE",
    "PROJECT_KEY",
    "RECORD_FILE",
    "SERVER_CLASS",
    "SERVE_LOG",
    "STARTUP_TIMEOUT",
    "ServerPlan",
    "ServerProblem",
    "ServerRecord",
    "ServerUse",
    "answers",
    "interrupted_by_signals",
    "plan_server",
    "probe",
    "process_runs",
    "project_lock",
    "read_record",
    "recorded_server",
    "remove_record",
    "server_for_run",
    "spark_submit_command",
    "start_server",
    "stop_server",
    "warm_server",
    "warm_up",
    "write_record",
]

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
"""The main class of Spark's Connect server."""
STATE_FOLDER = Path(".sdp-expect")
"""sdp-expect's folder in the project."""
RECORD_FILE = STATE_FOLDER / "server.json"
"""The project's server that is up (relative to the project folder)."""
LOCK_FILE = STATE_FOLDER / "project.lock"
"""Held by the run (or ``serve``, while it starts or stops) that uses the project's catalog."""
SERVE_LOG = STATE_FOLDER / "server.log"
"""The output of the server ``sdp-expect serve`` keeps."""
ID_KEY = "spark.sdp_expect.server.id"
"""A setting of the server: its id, read back to know that a port is this server's."""
PROJECT_KEY = "spark.sdp_expect.server.project"
"""A setting of the server: the project folder it serves."""
LOOPBACK = "127.0.0.1"
"""The only address the server listens on."""
STARTUP_TIMEOUT = 300.0
"""Seconds a server has to answer after it is started."""
STOP_TIMEOUT = 60.0
"""Seconds a server has to exit after it is asked to, before it is killed."""
PORT_ATTEMPTS = 3
"""Free ports tried when another process takes the chosen one before the server binds it."""
LOG_TAIL = 20
"""The server's last log lines shown when it does not start."""

SERVER_DEFAULTS = {
    # What spark-pipelines' own local server has: its log at WARN, and the artifact
    # isolation of pyspark's local Spark Connect server.
    "spark.log.level": "WARN",
    "spark.sql.artifact.isolation.enabled": "true",
    "spark.sql.artifact.isolation.alwaysApplyClassloader": "true",
}
"""Settings of every project server (the user's ``--conf`` wins over each)."""
KEPT_SERVER_DEFAULTS = {
    # A Python worker that is reused keeps the modules it imported: after an edit of a
    # project module that a UDF imports, a warm server would run the old code.
    "spark.python.worker.reuse": "false",
}
"""Settings added for a server that ``serve`` keeps between runs."""
DEFAULT_MASTER = "local"
"""The master of the server when the user gives none: the one ``spark-pipelines`` uses."""


class ServerProblem(Exception):
    """The project's server could not be had: :attr:`error` says why, with its code and fix.

    :param error: The coded error.
    :param log_tail: The server's last log lines, when it did not start.
    """

    def __init__(self, error: SdpExpectError, log_tail: str = "") -> None:
        super().__init__(error.render())
        self.error = error
        self.log_tail = log_tail

    def render(self) -> str:
        """The error line, then the server's last log lines (if any), indented."""
        tail = "".join(f"  {line}\n" for line in self.log_tail.splitlines())
        return f"{self.error.render()}\n{tail}"

    def as_dict(self) -> dict[str, Any]:
        """The error's values (:meth:`SdpExpectError.as_dict`) and ``log_tail``."""
        return {**self.error.as_dict(), "log_tail": self.log_tail}


def _problem(code: str, detail: str, project: Path, *, log_tail: str = "") -> ServerProblem:
    return ServerProblem(SdpExpectError(code, detail, location=Location(str(project))),
                         log_tail)


# --------------------------------------------------------------------------- the plan


def spark_submit_command() -> str:
    """``$SDP_EXPECT_SPARK_SUBMIT``, else the ``spark-submit`` next to this Python, else
    the one on ``PATH``.

    :raises UsageProblem: when there is none (pyspark is not installed).
    """
    return installed_command("spark-submit", "SDP_EXPECT_SPARK_SUBMIT")


def _java_option(key: str, value: str) -> str:
    """``-Dkey=value``, quoted as Spark's launcher reads options (``SPARK_SUBMIT_OPTS``)."""
    option = f"-D{key}={value}"
    if any(c.isspace() or c in "\"'\\" for c in option):
        return '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return option


def _pyspark_version() -> str:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class ServerPlan:
    """How a project's server is started.

    :param folder: The project folder (absolute).
    :param name: The pipeline's name (the Spark application's name shows it).
    :param options: The user's options for the server (``--master``, ``--conf``, ...), as
        given: they come after sdp-expect's own, so they win.
    :param properties: The defaults, as Java system properties: the user's own
        ``SPARK_SUBMIT_OPTS`` come after them and win, and ``--conf`` wins over both.
    :param env: The environment to start from (the run's: ``PYTHONPATH`` with the
        project folder first, ``PYSPARK_PYTHON``).
    :param spark_submit: The ``spark-submit`` command.
    :param keep: Whether ``serve`` keeps it between runs.
    :param format_options: The table format's jars and settings
        (:meth:`~sdp_expect.runtime.format_jars.FormatSetup.server_options`), before the
        user's options.
    """

    folder: Path
    name: str
    options: tuple[str, ...]
    properties: dict[str, str]
    env: dict[str, str]
    spark_submit: str
    keep: bool = False
    format_options: tuple[str, ...] = ()

    def command(self, port: int, server_id: str) -> list[str]:
        """The ``spark-submit`` command of a server on ``port`` with the id ``server_id``."""
        given = user_confs(self.options)
        master = [] if "spark.master" in given or any(
            option == "--master" or option.startswith("--master=") for option in self.options
        ) else ["--master", DEFAULT_MASTER]
        return [self.spark_submit, "--class", SERVER_CLASS, *master,
                "--name", f"sdp-expect {self.name or self.folder.name}",
                *self.format_options, *self.options,
                # Last, so that no option of the user's can change them.
                "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
                "--conf", f"spark.connect.grpc.binding.port={port}",
                "--conf", f"{ID_KEY}={server_id}",
                "--conf", f"{PROJECT_KEY}={self.folder}",
                "spark-internal"]

    def environment(self, token: str) -> dict[str, str]:
        """The server's environment: its token, the defaults in ``SPARK_SUBMIT_OPTS``, and
        the Derby home in the project folder (``derby.log`` goes there)."""
        env = dict(self.env)
        env.pop("SPARK_REMOTE", None)
        env[TOKEN_VARIABLE] = token
        options = [_java_option(key, value) for key, value in self.properties.items()]
        options.append(_java_option("derby.system.home", str(self.folder)))
        env["SPARK_SUBMIT_OPTS"] = " ".join([*options, env.get("SPARK_SUBMIT_OPTS", "")]).strip()
        return env

    @property
    def fingerprint(self) -> dict[str, Any]:
        """What a run compares with a warm server's: the user's options and the pyspark."""
        return {"options": list(self.options), "pyspark": _pyspark_version(),
                **({"format": list(self.format_options)} if self.format_options else {})}


def plan_server(project: Project, invocation: Invocation, *, keep: bool = False) -> ServerPlan:
    """The server of a local run (or of ``serve``, with ``keep``), from its invocation.

    :param project: The project.
    :param invocation: From :func:`~sdp_expect.runtime.spark_pipelines.build_command`: its
        defaults, the user's server options and its environment.
    :param keep: A server that ``serve`` keeps between runs.
    :raises ServerProblem: with SDPX-CFG-204, SDPX-PRJ-404 or SDPX-PRJ-405 when the
        spec's table format cannot be had (before anything starts).
    """
    given = user_confs(invocation.server_options)
    try:
        setup = format_setup(project, given=given)
    except SdpExpectError as error:
        raise ServerProblem(error.with_context(location=Location(str(project.spec)))) from None
    extra = {**SERVER_DEFAULTS, **(KEPT_SERVER_DEFAULTS if keep else {})}
    properties = {**invocation.defaults,
                  **{key: value for key, value in extra.items() if key not in given}}
    return ServerPlan(folder=project.folder.resolve(), name=project.name,
                      options=tuple(invocation.server_options), properties=properties,
                      env=dict(invocation.env), spark_submit=spark_submit_command(), keep=keep,
                      format_options=tuple(setup.server_options()))


# --------------------------------------------------------------------------- the record



@dataclass(frozen=True)
class ServerRecord:
    """A project's server as ``.sdp-expect/server.json`` keeps it.

    :param pid: The server's process (the JVM).
    :param port: Its Spark Connect port, on 127.0.0.1.
    :param token: The token its clients give.
    :param server_id: The id it answers :data:`ID_KEY` with.
    :param project: The project folder.
    :param kept: Started by ``serve`` (a warm server); otherwise a run's own.
    :param owner: The sdp-expect process that started it.
    :param fingerprint: The user's options and the pyspark version it started with.
    :param log: Its log file (a run's own server: none, its output goes to the run's log).
    :param started_at: When it answered first (ISO 8601).
    """

    pid: int
    port: int
    token: str
    server_id: str
    project: str
    kept: bool
    owner: int
    fingerprint: dict[str, Any] = field(default_factory=dict)
    log: Optional[str] = None
    started_at: str = ""

    @property
    def url(self) -> str:
        """The Spark Connect URL (``localhost``: a token is sent only to a local address)."""
        return f"sc://localhost:{self.port}"

    def as_dict(self) -> dict[str, Any]:
        """The record's values, for ``server.json``."""
        return dataclasses.asdict(self)

    def public(self) -> dict[str, Any]:
        """The record without its token, for output."""
        shown = self.as_dict()
        del shown["token"], shown["server_id"]
        shown["url"] = self.url
        return shown


def read_record(folder: Path) -> Optional[ServerRecord]:
    """The project's server record; None when there is none (or it cannot be read)."""
    try:
        with open(folder / RECORD_FILE, encoding="utf-8") as handle:
            values = json.load(handle)
        return ServerRecord(**values)
    except (OSError, ValueError, TypeError):
        return None


def write_record(folder: Path, record: ServerRecord) -> None:
    """Write the project's record, readable by its owner only (it holds the token), whole
    (a reader never sees half of it)."""
    path = folder / RECORD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=".server-", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(record.as_dict(), out, indent=2)
    os.replace(scratch, path)


def remove_record(folder: Path, record: Optional[ServerRecord] = None) -> None:
    """Remove the project's record (only if it is still ``record``'s, when given)."""
    if record is not None:
        found = read_record(folder)
        if found is None or found.server_id != record.server_id:
            return
    (folder / RECORD_FILE).unlink(missing_ok=True)


# --------------------------------------------------------------------------- probing


def probe(port: int, token: str, *, timeout: float = 2.0) -> Optional[dict[str, str]]:
    """The id and project of the sdp-expect server on ``port``, read through Spark Connect.

    None when nothing answers there, or something that is not an sdp-expect server
    with this token (it refuses the token, or has no :data:`ID_KEY`).
    """
    import grpc
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    credentials = grpc.composite_channel_credentials(
        grpc.local_channel_credentials(), grpc.access_token_call_credentials(token))
    session = str(uuid.uuid4())
    context = base_pb2.UserContext(user_id="sdp-expect")
    with grpc.secure_channel(f"localhost:{port}", credentials) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)  # type: ignore[no-untyped-call, unused-ignore]
        request = base_pb2.ConfigRequest(
            session_id=session, user_context=context,
            operation=base_pb2.ConfigRequest.Operation(
                get=base_pb2.ConfigRequest.Get(keys=[ID_KEY, PROJECT_KEY])))
        try:
            response = stub.Config(request, timeout=timeout)
        except grpc.RpcError:
            return None
        with contextlib.suppress(grpc.RpcError):  # the session was only for this question
            stub.ReleaseSession(base_pb2.ReleaseSessionRequest(
                session_id=session, user_context=context), timeout=timeout)
    return {pair.key: pair.value for pair in response.pairs}


def answers(record: ServerRecord, *, attempts: int = 3) -> bool:
    """Whether the record's server is up: its port answers with its id and project.

    A server whose process is alive is asked again (a busy machine can make it slow to
    answer) before it is taken for gone.
    """
    for attempt in range(attempts):
        found = probe(record.port, record.token, timeout=5.0)
        if found is not None:
            return found.get(ID_KEY) == record.server_id \
                and found.get(PROJECT_KEY) == record.project
        if not _alive(record):
            return False
        if attempt + 1 < attempts:
            time.sleep(1.0)
    return False


def _listening(port: int) -> bool:
    """Whether anything accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def process_runs(pid: int, argument: Optional[str] = None) -> bool:
    """Whether process ``pid`` exists and, given ``argument``, is still the process started
    with it (``f"{ID_KEY}={server_id}"``, or the project's :data:`PROJECT_KEY` setting).

    A process number is reused once its process is gone: the numbers wrap at
    ``/proc/sys/kernel/pid_max`` (32,768 on many Linux machines), and a busy machine
    (a test matrix, a cluster's driver host) comes round again within minutes. Without
    the argument a stopped server could pass for alive, and a stop could signal another
    process. Where there is no ``/proc`` (macOS), the number alone decides.
    """
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or another user's number now
        return False
    if argument is None or not _PROC.is_dir():
        return True
    try:
        arguments = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:  # gone between the two looks
        return False
    return argument.encode() in arguments  # a zombie's is empty: it has exited


_PROC = Path("/proc")


def _alive(record: ServerRecord) -> bool:
    return process_runs(record.pid, f"{ID_KEY}={record.server_id}")


# --------------------------------------------------------------------------- start and stop


def _tail(log: IO[bytes], lines: int = LOG_TAIL) -> str:
    log.flush()
    log.seek(0)
    text = log.read().decode("utf-8", "replace")
    return "\n".join(text.rstrip().splitlines()[-lines:])


def start_server(plan: ServerPlan, *, log: IO[bytes], say: Callable[[str], None],
                 log_path: Optional[Path] = None, timeout: float = STARTUP_TIMEOUT
                 ) -> tuple[ServerRecord, subprocess.Popen[bytes]]:
    """Start a server of ``plan`` on a free port; return once it answers with its id.

    A server that ``plan.keep`` is in a session of its own: it outlives this process
    and a Ctrl-C in its terminal. The record is not written here.

    :param plan: From :func:`plan_server`.
    :param log: Where its output goes (a file opened for binary writing and reading).
    :param say: Tells the user what happens (a line of text).
    :param log_path: The path of ``log``, when it stays (``serve``): runs copy from it.
    :param timeout: Seconds it has to answer.
    :raises ServerProblem: SDPX-SRV-501 when it exits or does not answer in time.
    """
    token = secrets.token_hex(24)
    server_id = uuid.uuid4().hex
    began = time.monotonic()
    for _ in range(PORT_ATTEMPTS):
        port = _free_port()
        process = subprocess.Popen(plan.command(port, server_id), stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, cwd=os.getcwd(),
                                   env=plan.environment(token), start_new_session=plan.keep)
        try:
            answered = _wait_until_up(process, port, token, server_id, log, plan.folder,
                                      timeout)
        except BaseException:  # Ctrl-C, or it did not start: nothing is left running
            _stop_process(process)
            raise
        if answered:
            record = ServerRecord(
                pid=process.pid, port=port, token=token, server_id=server_id,
                project=str(plan.folder), kept=plan.keep, owner=os.getpid(),
                fingerprint=plan.fingerprint, log=str(log_path) if log_path else None,
                started_at=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
            say(f"sdp-expect: a local Spark Connect server on port {port} "
                f"(ready in {time.monotonic() - began:.1f} s)\n")
            return record, process
    raise _problem("SDPX-SRV-501", f"other processes took the free port chosen for the "
                   f"server {PORT_ATTEMPTS} times", plan.folder)


def _wait_until_up(process: subprocess.Popen[bytes], port: int, token: str, server_id: str,
                   log: IO[bytes], folder: Path, timeout: float) -> bool:
    """Wait until the server answers on ``port`` with its id: True; False when another
    process holds the port (the server exited, something else listens there).

    :raises ServerProblem: SDPX-SRV-501 when it exits or does not answer in time.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = probe(port, token, timeout=1.0)
        if found is not None and found.get(ID_KEY) == server_id:
            return True
        status = process.poll()
        if status is not None:
            if _listening(port):
                return False
            raise _problem("SDPX-SRV-501", f"the local Spark Connect server exited with "
                           f"status {status} before it answered", folder, log_tail=_tail(log))
        if time.monotonic() > deadline:
            _stop_process(process)
            raise _problem("SDPX-SRV-501", f"the local Spark Connect server did not answer "
                           f"in {timeout:.0f} s", folder, log_tail=_tail(log))
        time.sleep(0.25)


def warm_up(record: ServerRecord) -> bool:
    """Boot a new server's catalog and run a small query, so that the first run on it
    does not pay for that: the embedded metastore (Derby, Hive's client) starts on its
    first use, and Spark loads its query path on its first query. True when done.
    """
    try:
        spark = connect(f"{record.url}/;token={record.token}")
    except Exception:  # the warm-up is worth trying, not worth failing for
        return False
    try:
        spark.catalog.listDatabases()
        spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
        return True
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            spark.stop()


def _stop_process(process: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT) -> None:
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def stop_server(record: ServerRecord, process: Optional[subprocess.Popen[bytes]] = None, *,
                timeout: float = STOP_TIMEOUT) -> None:
    """Stop a server and wait until its process is gone (then its catalog is free).

    :param record: The server.
    :param process: Its process, when this process started it.
    :param timeout: Seconds it has to exit after SIGTERM before it is killed.
    """
    if process is not None:
        _stop_process(process, timeout)
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(record):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            deadline = time.monotonic() + timeout
        time.sleep(0.2)


# --------------------------------------------------------------------------- the project


@contextlib.contextmanager
def project_lock(folder: Path, *, wait: float, say: Callable[[str], None], command: str
                 ) -> Iterator[None]:
    """Hold the project's lock: the one run (or ``serve`` start or stop) that uses its catalog.

    Waits up to ``wait`` seconds for the run that holds it (0: not at all). The lock is
    the operating system's (``flock``): it goes with the process that held it, however
    that process ends.

    :param folder: The project folder.
    :param wait: Seconds to wait for another run of the project.
    :param say: Tells the user that this run waits, once.
    :param command: What holds it, for the message of a run that waits (``run``...).
    :raises ServerProblem: SDPX-SRV-502 when the other run does not finish in time.
    """
    path = folder / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + max(wait, 0.0)
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _holder(path)
                if time.monotonic() >= deadline:
                    raise _problem(
                        "SDPX-SRV-502", f"another sdp-expect {holder} of this project is "
                        f"still using its catalog after {wait:.0f} s", folder) from None
                if not told:
                    say(f"sdp-expect: another sdp-expect {holder} of this project is using "
                        f"its catalog; waiting up to {wait:.0f} s for it to finish\n")
                    told = True
                time.sleep(0.5)
        handle.seek(0)
        handle.truncate()
        json.dump({"pid": os.getpid(), "command": command}, handle)
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)


def _holder(path: Path) -> str:
    """The command and process that hold the lock, as the holder wrote them."""
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
        return f"{values['command']} (process {int(values['pid'])})"
    except (OSError, ValueError, KeyError, TypeError):
        return "command"


def warm_server(folder: Path) -> Optional[ServerRecord]:
    """The warm server (``serve``) of the project when it is up, else None.

    Without the project's lock: the answer may be out of date by the time it is
    used (``report`` then fails to read, and says so).
    """
    record = read_record(folder)
    if record is None or not record.kept or not answers(record):
        return None
    return record


def recorded_server(folder: Path) -> Optional[ServerRecord]:
    """Under the project's lock: the warm server, if up; a left-over record is cleaned up.

    A run's own server that is still up was left by a run that did not stop it (it was
    killed): nothing else can be using it (the lock is ours), and it holds the
    project's catalog, so it is stopped. A record whose server does not answer is stale.
    """
    record = read_record(folder)
    if record is None:
        return None
    if answers(record):
        if record.kept:
            return record
        stop_server(record)
    remove_record(folder, record)
    return None


@dataclass(frozen=True)
class ServerUse:
    """The server a run goes to.

    :param record: The server.
    :param warm: The project's warm server (``serve``); otherwise the run's own.
    """

    record: ServerRecord
    warm: bool

    def as_dict(self) -> dict[str, Any]:
        """For ``--format json``: the server's URL, port, process and whether it was warm."""
        return {"url": self.record.url, "port": self.record.port, "pid": self.record.pid,
                "warm": self.warm}


@contextlib.contextmanager
def server_for_run(project: Project, invocation: Invocation, *, wait: float,
                   say: Callable[[str], None], log: TextIO, command: str
                   ) -> Iterator[ServerUse]:
    """The project's server for one run, under the project's lock.

    The warm server when ``serve`` keeps one that is up (when the run gives no server
    options, or the same as ``serve`` was given); otherwise a server of the run's own,
    stopped (and waited for) when the ``with`` ends. The server's log of the run's
    time is added to the end of ``log``.

    :param project: The project.
    :param invocation: The run's (local) invocation.
    :param wait: Seconds to wait for another run of the project.
    :param say: Tells the user what happens.
    :param log: The run's log file.
    :param command: ``run`` or ``dry-run`` (for the message of a run that waits).
    :raises ServerProblem: SDPX-SRV-502 (another run), -503 (the warm server's
        settings differ), -501 (the server does not start).
    """
    folder = project.folder.resolve()
    plan = plan_server(project, invocation)
    with project_lock(folder, wait=wait, say=say, command=command):
        warm = recorded_server(folder)
        if warm is not None:
            _check_settings(warm, plan)
            say(f"sdp-expect: the project's Spark Connect server (sdp-expect serve: port "
                f"{warm.port}, process {warm.pid})\n")
            start = _size(warm.log)
            try:
                yield ServerUse(warm, warm=True)
            finally:
                _copy_log(warm.log, start, log, f"the log of the project's server "
                          f"(sdp-expect serve, process {warm.pid}) during this run")
            return
        with tempfile.TemporaryFile() as server_log:
            try:
                record, process = start_server(plan, log=server_log, say=say)
            except ServerProblem:
                _append(server_log, log, "the log of the local Spark Connect server")
                raise
            write_record(folder, record)
            try:
                yield ServerUse(record, warm=False)
            finally:
                stop_server(record, process)
                remove_record(folder, record)
                _append(server_log, log, f"the log of this run's local Spark Connect server "
                        f"(process {record.pid}, port {record.port})")


def _check_settings(record: ServerRecord, plan: ServerPlan) -> None:
    """A run may use the warm server when it gives no server options or the same ones,
    and its pyspark is the server's."""
    mine = plan.fingerprint
    theirs = record.fingerprint
    options_differ = bool(plan.options) and mine["options"] != theirs.get("options")
    if not options_differ and mine["pyspark"] == theirs.get("pyspark"):
        return
    said = " ".join(theirs.get("options") or []) or "no options"
    raise _problem(
        "SDPX-SRV-503", f"the project's server (sdp-expect serve, process {record.pid}) was "
        f"started with {said} and pyspark {theirs.get('pyspark')}; this run has "
        f"{' '.join(plan.options) or 'no options'} and pyspark {mine['pyspark']}",
        plan.folder)


def _size(path: Optional[str]) -> int:
    try:
        return os.path.getsize(path) if path else 0
    except OSError:
        return 0


def _copy_log(path: Optional[str], start: int, log: TextIO, title: str) -> None:
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        handle.seek(start)
        _append(handle, log, title, rewind=False)


def _append(source: IO[bytes], log: TextIO, title: str, *, rewind: bool = True) -> None:
    """Add a server's output to the end of a run's log file, under a title."""
    if rewind:
        source.flush()
        source.seek(0)
    log.write(f"\n==== sdp-expect: {title} ====\n")
    for chunk in iter(lambda: source.read(1 << 16), b""):
        log.write(chunk.decode("utf-8", "replace"))
    log.flush()


@contextlib.contextmanager
def interrupted_by_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP stop this process as Ctrl-C does (``KeyboardInterrupt``), so
    that a server it started is stopped on the way out. In the main thread only."""
    def interrupt(number: int, frame: Optional[FrameType]) -> None:
        raise KeyboardInterrupt(f"signal {number}")

    kinds = [signal.SIGTERM, signal.SIGHUP]
    before = {kind: signal.signal(kind, interrupt) for kind in kinds}
    try:
        yield
    finally:
        for kind, handler in before.items():
            signal.signal(kind, handler)
