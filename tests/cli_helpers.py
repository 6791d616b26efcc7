"""Helpers for the tests that run the ``sdp-expect`` command as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

REPO = Path(__file__).resolve().parent.parent

NEWEST_LINE = pytest.mark.newest_line
"""Mark a slow true CLI test whose behaviour does not depend on the pyspark line to run on
the newest line only (tests/conftest.py skips it on 4.1, with the reason)."""

OLDEST_LINE = pytest.mark.oldest_line
"""Mark a slow true CLI test to run on the pyspark 4.1 line only (tests/conftest.py skips
it on 4.2 and later, with the reason; scripts/test.sh --all selects it on 4.1)."""


class _OwnJvm(threading.local):
    allowed = False


OWN_JVM = _OwnJvm()
"""Whether the running test may start Spark processes of its own: set by conftest.py
for the tests of the ``cli`` and ``slow`` tiers (the ``own_jvm`` fixture)."""


def require_own_jvm(what: str) -> None:
    """Refuse ``what`` (a helper that starts Spark) outside the cli and slow tiers."""
    if not OWN_JVM.allowed:
        raise AssertionError(
            f"{what} starts Spark, but this test is not in the cli tier: give it (or its "
            "fixture) the own_jvm fixture (tests/conftest.py, docs/testing.md)")


def user_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell would have (not the test server's client state)."""
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE",
                "SPARK_CONNECT_AUTHENTICATE_TOKEN", "NO_COLOR"):
        env.pop(key, None)
    env.update(extra)
    return env


def sdp_expect_script() -> str:
    """The installed ``sdp-expect`` console script (next to this Python)."""
    command = shutil.which("sdp-expect", path=os.path.dirname(sys.executable))
    assert command, "the sdp-expect console script is not installed next to this Python"
    return command


def replaying_project(tmp_path: Path, script: str, capture: Path) -> tuple[Path, dict[str, str]]:
    """An empty project, and an environment whose ``spark-pipelines`` is the Python
    ``script`` (it finds the real output ``capture`` to replay in ``$REPLAY``) and whose
    project server is a stand-in (:func:`fake_spark_submit`)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "spark-pipeline.yml").write_text(
        "name: replay\nstorage: file:///tmp/replay-storage\nlibraries: []\n")
    replay = tmp_path / "replay.py"
    replay.write_text(script)
    wrapper = tmp_path / "spark-pipelines"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{replay}" "$@"\n')
    wrapper.chmod(0o755)
    return project, user_env(SDP_EXPECT_SPARK_PIPELINES=str(wrapper), REPLAY=str(capture),
                             SDP_EXPECT_SPARK_SUBMIT=str(fake_spark_submit(tmp_path)))


def sdp_expect(*args: str, cwd: Path, env: Optional[dict[str, str]] = None,
               timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run the installed ``sdp-expect`` console script."""
    return subprocess.run([sdp_expect_script(), *args], cwd=cwd, env=env or user_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)


def sdp_expect_on_terminal(*args: str, cwd: Path, env: Optional[dict[str, str]] = None,
                           terminal: str = "stdout", columns: int = 80, timeout: float = 900,
                           interrupt_after: Optional[str] = None
                           ) -> subprocess.CompletedProcess[str]:
    """Run the installed ``sdp-expect`` with its ``terminal`` stream (``stdout`` or
    ``stderr``) on a pseudo-terminal ``columns`` wide, the other one on a pipe.

    What the terminal received is returned as that stream's text, unchanged (escape
    sequences, ``\\r\\n`` line ends): :func:`screen` shows what it looks like.
    ``TERM`` is ``xterm``, ``COLUMNS`` and ``LINES`` are unset (the terminal's own size
    counts). With ``interrupt_after``, the command gets SIGINT (Ctrl-C) 1.5 s after the
    terminal received that text.
    """
    import fcntl
    import pty
    import signal
    import struct
    import termios

    command = sdp_expect_script()
    env = dict(env or user_env(), TERM="xterm")
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    received: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every process closed the terminal
                return
            if not chunk:
                return
            received.append(chunk)

    def interrupt(process: subprocess.Popen[bytes], text: str) -> None:
        while process.poll() is None and text.encode() not in b"".join(received):
            time.sleep(0.05)
        time.sleep(1.5)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)

    reader = threading.Thread(target=drain, daemon=True)
    try:
        streams: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE,
                                   terminal: follower}
        # Ctrl-C reaches a command on a terminal: its SIGINT disposition is the default.
        # A test process started in the background by a non-interactive shell ignores
        # SIGINT, and an ignored signal stays ignored across exec (Python then installs
        # no KeyboardInterrupt handler): so the child starts from a handled SIGINT here,
        # which exec resets to the default.
        ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            process = subprocess.Popen([command, *args], cwd=cwd, env=env,
                                       stdin=subprocess.DEVNULL, **streams)
        finally:
            signal.signal(signal.SIGINT, ignored)
        os.close(follower)
        follower = -1
        reader.start()
        if interrupt_after is not None:
            threading.Thread(target=interrupt, args=(process, interrupt_after),
                             daemon=True).start()
        out, err = process.communicate(timeout=timeout)
        reader.join(30)
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    text = b"".join(received).decode("utf-8", "replace")
    piped = (out if terminal == "stderr" else err).decode("utf-8", "replace")
    return subprocess.CompletedProcess(process.args, process.returncode,
                                       text if terminal == "stdout" else piped,
                                       text if terminal == "stderr" else piped)


_TERMINAL_CODE = re.compile(r"\r|\n|\x1b\[K|\x1b\[[0-9;]*m|[^\r\n\x1b]+")


def screen(text: str) -> list[str]:
    """The lines a terminal shows after receiving ``text`` (scrolled-off lines included).

    Understands what ``sdp-expect`` writes: ``\\r`` (back to the start of the line),
    ``\\n`` (the start of the next line), ``ESC[K`` (erase to the end of the line) and colours
    (ignored). Lines do not wrap: each is a whole logical line.
    """
    lines, row, column = [""], 0, 0
    for code in _TERMINAL_CODE.findall(text):
        if code == "\r":
            column = 0
        elif code == "\n":  # as a terminal shows it (onlcr): a new line, at its start
            row, column = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif code == "\x1b[K":
            lines[row] = lines[row][:column]
        elif code.startswith("\x1b["):
            continue
        else:
            line = lines[row].ljust(column)
            lines[row] = line[:column] + code + line[column + len(code):]
            column += len(code)
    return lines[:-1] if lines[-1] == "" else lines


def spark_pipelines(project: Path, *args: str, timeout: float = 600
                    ) -> subprocess.CompletedProcess[str]:
    """Run the installed ``spark-pipelines`` command in ``project``, as a user's shell would."""
    require_own_jvm("spark_pipelines()")
    command = shutil.which("spark-pipelines", path=os.path.dirname(sys.executable))
    assert command, "spark-pipelines is not installed next to this Python"
    # SPARK_TESTING: the embedded Spark Connect server takes a free port, not the fixed
    # 15002 (as pyspark's own tests do), so that tests running at once do not clash.
    return subprocess.run([command, *args], cwd=project, env=user_env(SPARK_TESTING="1"),
                          capture_output=True, text=True, timeout=timeout, check=False)


FAKE_SERVER = """\
import json, os, signal, sys, threading
from concurrent import futures

args = sys.argv[1:]
confs = {}
for index, arg in enumerate(args[:-1]):
    if arg in ("--conf", "-c"):
        key, _, value = args[index + 1].partition("=")
        confs[key] = value
record = os.environ.get("FAKE_SERVER_ARGS")
if record:
    with open(record, "w") as handle:
        json.dump({"argv": args, "opts": os.environ.get("SPARK_SUBMIT_OPTS"),
                   "pythonpath": os.environ.get("PYTHONPATH"), "cwd": os.getcwd(),
                   "token": os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN"),
                   "pid": os.getpid()}, handle)
if os.environ.get("FAKE_SERVER_FAIL"):
    print(os.environ["FAKE_SERVER_FAIL"], flush=True)
    sys.exit(1)
import grpc
from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

class Service(base_pb2_grpc.SparkConnectServiceServicer):
    def Config(self, request, context):
        keys = request.operation.get.keys
        if any(key not in confs for key in keys):
            context.abort(grpc.StatusCode.INTERNAL, "SQL_CONF_NOT_FOUND")
        return base_pb2.ConfigResponse(session_id=request.session_id, pairs=[
            base_pb2.KeyValue(key=key, value=confs[key]) for key in keys])

    def ReleaseSession(self, request, context):
        return base_pb2.ReleaseSessionResponse(session_id=request.session_id)

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
server = grpc.server(futures.ThreadPoolExecutor(2))
base_pb2_grpc.add_SparkConnectServiceServicer_to_server(Service(), server)
server.add_insecure_port("127.0.0.1:" + confs["spark.connect.grpc.binding.port"])
server.start()
print("fake Spark Connect server up", flush=True)
stop.wait()
server.stop(0)
# At once: the interpreter's exit can wait on gRPC's threads, and under load it waited
# past sdp-expect's stop timeout (test_a_stopped_command_stops_its_server, 7 Dec 2026).
os._exit(0)
"""


def fake_spark_submit(folder: Path) -> Path:
    """A stand-in for the ``spark-submit`` that starts a project's server (for
    ``$SDP_EXPECT_SPARK_SUBMIT``), for tests of the command without Spark.

    It starts a Spark Connect server that answers only sdp-expect's question of who it
    is (its ``--conf`` settings, through Spark Connect's Config call) and runs until
    SIGTERM. It writes its arguments, environment and process to ``$FAKE_SERVER_ARGS``;
    with ``$FAKE_SERVER_FAIL`` it prints that text and exits 1 instead.
    """
    script = folder / "fake_spark_submit.py"
    script.write_text(FAKE_SERVER)
    wrapper = folder / "spark-submit"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


FAKE_PIPELINES = """\
import json, os, sys, time
with open(os.environ["FAKE_ARGS"], "w") as handle:
    json.dump({"argv": sys.argv[1:], "opts": os.environ.get("SPARK_SUBMIT_OPTS"),
               "pythonpath": os.environ.get("PYTHONPATH"),
               "token": os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN"),
               "connect": os.environ.get("SPARK_CONNECT_MODE_ENABLED")}, handle)
lines = os.environ.get("FAKE_LINES")
if lines:
    with open(lines) as handle:
        for line in handle:
            print(line, end="", flush=True)
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
sys.exit(int(os.environ.get("FAKE_RC", "0")))
"""


def fake_commands(folder: Path) -> dict[str, str]:
    """An environment in which ``sdp-expect run`` starts stand-ins, not Spark: for
    ``spark-pipelines`` (``$SDP_EXPECT_SPARK_PIPELINES``: it writes what it was given to
    ``$FAKE_ARGS``, prints the lines of the file ``$FAKE_LINES``, sleeps ``$FAKE_SLEEP``
    seconds and exits with ``$FAKE_RC``) and for the project's server
    (:func:`fake_spark_submit`, writing to ``$FAKE_SERVER_ARGS``).
    """
    script = folder / "fake_spark_pipelines.py"
    script.write_text(FAKE_PIPELINES)
    wrapper = folder / "spark-pipelines"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    wrapper.chmod(0o755)
    return user_env(SDP_EXPECT_SPARK_PIPELINES=str(wrapper), SPARK_CONNECT_MODE_ENABLED="1",
                    FAKE_ARGS=str(folder / "fake-args.json"),
                    SDP_EXPECT_SPARK_SUBMIT=str(fake_spark_submit(folder)),
                    FAKE_SERVER_ARGS=str(folder / "fake-server-args.json"))


def fake_args(env: dict[str, str], key: str = "FAKE_ARGS") -> dict[str, Any]:
    """What the stand-in ``spark-pipelines`` (with ``key`` ``FAKE_SERVER_ARGS``: the
    stand-in server) was given last: arguments, environment, process."""
    with open(env[key], encoding="utf-8") as handle:
        found: dict[str, Any] = json.load(handle)
    return found


def write_project(root: Path, code: str, *, configuration: str = "") -> Path:
    """A one-file pipeline project in ``root`` (storage inside it)."""
    (root / "transformations").mkdir(parents=True)
    (root / "spark-pipeline.yml").write_text(
        f"name: cli_test\nstorage: {(root / 'storage').as_uri()}\n{configuration}"
        "libraries:\n  - glob:\n      include: transformations/**\n")
    (root / "transformations" / "pipeline.py").write_text(textwrap.dedent(code))
    return root


def set_storage(project: Path, storage: Path) -> None:
    """Point a copied project's spec at its own storage folder."""
    spec = project / "spark-pipeline.yml"
    spec.write_text("\n".join(
        f"storage: {storage.as_uri()}" if line.startswith("storage:") else line
        for line in spec.read_text().splitlines()) + "\n")


Tables = dict[str, list[dict[str, Any]]]
"""Every table of a catalog with all its rows (:func:`read_all_tables`)."""


@dataclass
class Warm:
    """A project's warm server while :func:`served` holds it up.

    :param project: The project folder.
    :param tables: With ``keep_tables``: every table of the catalog, read through the
        warm server as the ``with`` ended (as :func:`read_all_tables` gives them).
    """

    project: Path
    tables: Tables = field(default_factory=dict)


@contextlib.contextmanager
def served(project: Path, *, keep_tables: bool = False) -> Iterator[Warm]:
    """``sdp-expect serve --background`` on ``project`` for the ``with``: the project's runs
    go through its warm Spark server (a multi-run test then pays one server start, not one
    per run); ``serve --stop`` at the end, so that the catalog is free for other readers.
    With ``keep_tables``, the catalog's tables are read through that server before it
    stops (:attr:`Warm.tables`): no Spark of its own is started to read them."""
    require_own_jvm("served()")
    started = sdp_expect("serve", "--background", "--spec", str(project), cwd=project)
    assert started.returncode == 0, started.stdout + started.stderr
    warm = Warm(project)
    try:
        yield warm
        if keep_tables:
            warm.tables = read_all_tables(project)
    finally:
        stopped = sdp_expect("serve", "--stop", "--spec", str(project), cwd=project)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def read_all_tables(project: Path) -> dict[str, list[dict[str, Any]]]:
    """Every table of a project's catalog (database ``default``) with all its rows, read
    through the project's warm server (inside :func:`served`).

    Read with a plain Spark Connect session of its own, independent of sdp-expect's own
    reader (the tests compare what sdp-expect shows with it). Values are as JSON gives
    them (dates, decimals and the like as text). After a cold run, when no warm server
    is up, :func:`read_stored_tables` reads them through the shared server instead.
    """
    require_own_jvm("read_all_tables()")
    from pyspark.sql.connect.session import SparkSession
    from sdp_runner import keep_alive

    from sdp_expect.runtime.local_server import read_record

    record = read_record(project.resolve())
    assert record is not None and record.kept, (
        f"no warm server of {project} is up: read inside served(), or after a cold run "
        "with read_stored_tables() through the shared server (no new Spark to read)")
    before = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        spark = keep_alive(
            SparkSession.builder.remote(f"{record.url}/;token={record.token}").create())
        found = {}
        for table in spark.catalog.listTables("default"):
            rows = spark.sql(f"SELECT * FROM default.`{table.name}`").collect()
            found[table.name] = [row.asDict(recursive=True) for row in rows]
    finally:
        if before is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return _as_json(found)


def _as_json(found: dict[str, list[dict[str, Any]]]) -> Tables:
    tables: Tables = json.loads(json.dumps(found, default=str))
    return tables


def read_stored_tables(spark: Any, warehouse: Path, table_format: str = "parquet") -> Tables:
    """Every table a finished run left in ``warehouse`` (a project's ``spark-warehouse``,
    the tables of database ``default``) with all its rows, as :func:`read_all_tables`
    gives them.

    Read by location through ``spark``, a session of a server that is already up (the
    test session's shared server): no Spark is started to read them, and the project's
    own catalog (an embedded Derby metastore, which one process opens at a time) is not
    opened. A streaming table's folder is read as Spark reads a file sink's output: its
    ``_spark_metadata`` log says which files are committed; a table in another
    ``table_format`` (``delta``) is read as that format reads it (its own log).
    """
    found = {}
    for folder in sorted(warehouse.iterdir()):
        if not folder.is_dir() or folder.name.endswith(".db") or folder.name[0] in "._":
            continue
        rows = spark.read.format(table_format).load(str(folder)).collect()
        found[folder.name] = [row.asDict(recursive=True) for row in rows]
    assert found, f"no table in {warehouse}"
    return _as_json(found)


def repo_env() -> dict[str, str]:
    """This environment with the repository first on ``PYTHONPATH`` (for ``python -m``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def assert_runs_without_pyspark(code: str) -> None:
    """Run ``code`` in a fresh Python and check it never imported pyspark.

    :param code: Statements that assert what they did (a failed assert fails the test).
    """
    script = code + "\nimport sys\nassert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=repo_env(), timeout=60)
    assert done.returncode == 0, done.stderr


DISTRIBUTION = ("pyproject.toml", "README.md", "sdp_expect")
"""What pip needs to build sdp-expect: a copy of these is the package as released."""


def copy_distribution(directory: Path, *extra: str) -> Path:
    """Copy what pip builds sdp-expect from (and the files ``extra``) into ``directory``:
    a clean source, without this tree's build leftovers (``*.egg-info``, caches).

    :returns: ``directory``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for name in (*DISTRIBUTION, *extra):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, directory / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, directory / name)
    return directory


class WebhookReceiver:
    """A local HTTP server in a thread that keeps every POST's content type and JSON body
    and answers each with ``status``: the webhook of the alert tests (docs/alerts.md)."""

    def __init__(self, status: int = 204) -> None:
        import http.server

        self.status = status
        self.statuses: list[int] = []
        """Statuses to answer first, one per POST, before :attr:`status`."""
        self.bodies: list[tuple[str, Any]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                receiver.bodies.append((self.headers["Content-Type"],
                                        json.loads(self.rfile.read(length))))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses
                                   else receiver.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def closed_port() -> int:
    """A local port nothing listens on (just bound and released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def process_alive(pid: int, project: Optional[Path] = None) -> bool:
    """Whether process ``pid`` still exists (a server a run should have stopped); given
    ``project``, whether it is still a server of that project's, not a later process that
    took the freed number (``local_server.process_runs``)."""
    from sdp_expect.runtime.local_server import PROJECT_KEY, process_runs

    return process_runs(pid, None if project is None else f"{PROJECT_KEY}={project.resolve()}")
