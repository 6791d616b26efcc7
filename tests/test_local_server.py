"""The project's own Spark Connect server (``sdp-expect run``, ``dry-run``, ``serve``),
without Spark.

``run`` and ``serve`` start stand-ins here (``tests/cli_helpers.py``): a
``spark-pipelines`` that writes what it was given, and a ``spark-submit`` whose
"server" is a real Spark Connect (gRPC) endpoint that answers only the question
sdp-expect asks a server (who are you: its ``--conf`` settings) and runs until
SIGTERM. So the lock between runs of one project, the warm server and its
record, the clean-up of servers left behind and the errors are checked in
seconds; ``tests/test_cli_run_report.py`` runs the same with Spark.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, Iterator

import pytest
from cli_helpers import fake_args, fake_commands, process_alive, sdp_expect, sdp_expect_script

from sdp_expect.base.project import load_project
from sdp_expect.runtime.local_server import (
    RECORD_FILE,
    ServerRecord,
    process_runs,
    read_record,
    write_record,
)
from sdp_expect.runtime.spark_pipelines import build_command, split_options

EVENTS = "2026-01-01 10:00:00: Run is COMPLETED.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "transformations").mkdir(parents=True)
    (root / "spark-pipeline.yml").write_text(
        f"name: fake\nstorage: {(root / 'storage').as_uri()}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n")
    # A library must match a file (SDPX-PRJ-408); the fake spark-pipelines reads none.
    (root / "transformations" / "pipeline.py").write_text("")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    found = fake_commands(tmp_path)
    events = tmp_path / "events.txt"
    events.write_text(EVENTS)
    return dict(found, FAKE_LINES=str(events))


def gone(pid: int, project: Path, timeout: float = 10.0) -> bool:
    """Whether the server of ``project`` that ran as ``pid`` exits within ``timeout``."""
    deadline = time.monotonic() + timeout
    while process_alive(pid, project) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not process_alive(pid, project)


def test_a_process_is_the_server_only_while_it_runs_with_the_server_s_argument() -> None:
    """A freed process number can be taken by another process (numbers wrap at
    ``pid_max``, 32,768 here): a server is alive only while its number runs its argument."""
    marker = "spark.sdp_expect.server.id=abc"
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()", marker],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        # Until the child has run its program, its number shows this process's arguments
        # (between fork and exec): wait for its first line.
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        assert process_runs(child.pid) and process_runs(child.pid, marker)
        # The same number running something else is not the server
        assert not process_runs(child.pid, "spark.sdp_expect.server.id=abd")
        assert not process_runs(child.pid, marker[:-1])  # a whole argument, not a prefix
    finally:
        assert child.stdin is not None
        child.stdin.close()
    deadline = time.monotonic() + 30
    while process_runs(child.pid, marker):  # exited, not yet reaped: a zombie is gone too
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.05)
    assert process_runs(child.pid)  # its number is still taken until it is reaped
    child.wait(30)
    child.stdout.close()
    assert not process_runs(child.pid) and not process_runs(child.pid, marker)


def json_run(*args: str, cwd: Path, env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    done = sdp_expect(*args, "--format", "json", cwd=cwd, env=env)
    return done.returncode, json.loads(done.stdout), done.stderr


@contextlib.contextmanager
def run_holds_the_lock(project: Path) -> Iterator[IO[str]]:
    """The project's lock, held as a run (process 4242) of the project holds it."""
    lock = project / ".sdp-expect" / "project.lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(json.dumps({"pid": 4242, "command": "run"}))
        handle.flush()
        yield handle


def test_options_for_the_server_and_for_spark_pipelines_are_split() -> None:
    server, run = split_options([
        "--full-refresh", "a,b", "--master", "local[4]", "--conf", "k=v", "--driver-memory=2g",
        "--remote", "local", "-c", "x=y", "--py-files", "lib.zip", "--refresh=c",
        "--packages", "g:a:1"])
    assert server == ["--master", "local[4]", "--conf", "k=v", "--driver-memory=2g", "-c", "x=y",
                      "--py-files", "lib.zip", "--packages", "g:a:1"]
    assert run == ["--full-refresh", "a,b", "--conf", "k=v", "-c", "x=y", "--py-files",
                   "lib.zip", "--refresh=c"]


def test_a_run_on_the_projects_server_starts_the_pipelines_program_directly(
        project: Path) -> None:
    spec = project / "spark-pipeline.yml"
    environ = {"PATH": "/bin", "PYSPARK_PYTHON": "/usr/bin/python3"}
    invocation = build_command("run", load_project(spec), [
        "--full-refresh", "a", "--conf", "spark.sql.shuffle.partitions=3", "--master", "local[2]",
        "-c", "x.y=z", "--refresh=b"], environ=environ)
    assert invocation.server_options == ["--conf", "spark.sql.shuffle.partitions=3",
                                         "--master", "local[2]", "-c", "x.y=z"]
    ran = invocation.through("sc://localhost:4242", "secret")
    assert ran.command == ["/usr/bin/python3", "-m", "sdp_expect.runtime.pipelines_client", "run",
                           "--spec", str(spec), "--full-refresh", "a", "--refresh=b"]
    assert ran.server_url == "sc://localhost:4242"
    assert ran.env["SPARK_REMOTE"] == "sc://localhost:4242"
    assert ran.env["SPARK_CONNECT_AUTHENTICATE_TOKEN"] == "secret"
    assert ran.env["PYSPARK_REMOTE_INIT_CONF_LEN"] == "1"
    assert json.loads(ran.env["PYSPARK_REMOTE_INIT_CONF_0"]) == {
        "spark.sql.shuffle.partitions": "3", "x.y": "z", "spark.remote": "sc://localhost:4242",
        "spark.api.mode": "connect"}
    # An option only spark-submit reads for the program: spark-pipelines --remote runs it
    with_files = build_command("run", load_project(spec), ["--py-files", "lib.zip"],
                               environ={**environ, "SDP_EXPECT_SPARK_PIPELINES": "sp"})
    assert not with_files.client
    assert with_files.through("sc://localhost:1", "t").command == [
        "sp", "run", "--spec", str(spec), "--py-files", "lib.zip", "--remote", "sc://localhost:1"]
    assert not build_command("run", load_project(spec), ["--py-files", "lib.zip"],
                             environ=environ).client


def test_a_run_on_the_users_remote_server_starts_the_pipelines_program_directly(
        project: Path) -> None:
    spec = project / "spark-pipeline.yml"
    environ = {"PATH": "/bin", "PYSPARK_PYTHON": "/usr/bin/python3"}
    remote = "sc://spark.example:15002/;token=abc"
    invocation = build_command("run", load_project(spec), [
        "--full-refresh", "a", "--remote", remote, "-c", "x.y=z", "--refresh=b"],
        environ=environ)
    assert not invocation.local and invocation.remote == remote
    assert invocation.command == [
        "/usr/bin/python3", "-m", "sdp_expect.runtime.pipelines_client", "run", "--spec", str(spec),
        "--full-refresh", "a", "--refresh=b"]
    assert invocation.env["SPARK_REMOTE"] == remote
    assert json.loads(invocation.env["PYSPARK_REMOTE_INIT_CONF_0"]) == {
        "x.y": "z", "spark.remote": remote, "spark.api.mode": "connect"}
    assert invocation.confs == {"x.y": "z"}  # no local default: the server has its catalog
    assert "SPARK_SUBMIT_OPTS" not in invocation.env
    # --remote=URL is the same option
    spelled = build_command("dry-run", load_project(spec), [f"--remote={remote}"],
                            environ=environ)
    assert spelled.command[-3:] == ["dry-run", "--spec", str(spec)]
    # An option only spark-submit reads, or a chosen command: spark-pipelines --remote runs
    for options, env in [(["--remote", remote, "--py-files", "lib.zip"], environ),
                         (["--remote", remote], {**environ, "SDP_EXPECT_SPARK_PIPELINES": "sp"})]:
        launched = build_command("run", load_project(spec), options, environ=env)
        assert launched.command[-2:] == ["--remote", remote] or (
            launched.command[-4:] == ["--remote", remote, "--py-files", "lib.zip"]), options
        assert "SPARK_REMOTE" not in launched.env, options


def test_a_run_waits_for_another_run_of_the_same_project(project: Path,
                                                         env: dict[str, str]) -> None:
    with run_holds_the_lock(project):  # another run of the project holds the lock
        began = time.monotonic()
        done = sdp_expect("dry-run", "--wait", "1", cwd=project, env=env)
        assert time.monotonic() - began >= 1
        assert done.returncode == 1, done.stdout + done.stderr
        assert ("another sdp-expect run (process 4242) of this project is using its catalog; "
                "waiting up to 1 s") in done.stdout
        assert "[SDPX-SRV-502]" in done.stderr and "--wait SECONDS" in done.stderr
        status, document, _ = json_run("run", "--wait", "0", cwd=project, env=env)
        assert status == 1 and document["status"] == "NOT_STARTED"
        assert [e["code"] for e in document["server_errors"]] == ["SDPX-SRV-502"]
        assert not Path(env["FAKE_ARGS"]).exists()  # spark-pipelines never started
    status, document, _ = json_run("dry-run", "--wait", "0", cwd=project, env=env)
    assert status == 0 and document["server"]["warm"] is False


@pytest.mark.parametrize("command", [("report",), ("history", "show"), ("history", "record"),
                                     ("history", "alerts")])
def test_report_and_history_wait_for_a_run_that_uses_the_projects_catalog(
        project: Path, env: dict[str, str], command: tuple[str, ...]) -> None:
    """Read in a Spark process of their own, the project folder's catalog (Derby) admits
    one at a time: they take the project's turn as a run does, and say why they wait."""
    said = " ".join(command)
    with run_holds_the_lock(project) as handle:
        refused = sdp_expect(*command, "--wait", "0", cwd=project, env=env)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"sdp-expect {said}: [SDPX-SRV-502]" in refused.stderr
        assert "another sdp-expect run (process 4242) of this project" in refused.stderr
        assert "--wait SECONDS" in refused.stderr  # the fix
        assert "no catalog" not in refused.stderr  # it did not look before its turn

        # Another one waits for its turn: the lock is released once it has said so
        waiting = subprocess.Popen([sdp_expect_script(), *command, "--wait", "60"], cwd=project,
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        assert waiting.stderr is not None
        said_first = [waiting.stderr.readline()]
        while said_first[-1] and "waiting" not in said_first[-1]:
            said_first.append(waiting.stderr.readline())
        assert said_first[-1] == ("sdp-expect: another sdp-expect run (process 4242) of this "
                                  "project is using its catalog; waiting up to 60 s for it to "
                                  "finish\n"), said_first
        time.sleep(1)
        assert waiting.poll() is None  # still waiting
        fcntl.flock(handle, fcntl.LOCK_UN)
        out, rest = waiting.communicate(timeout=120)
    # Its turn came: no run has made the catalog yet, which it then says
    assert waiting.returncode == 1, out + rest
    assert f"sdp-expect {said}: no catalog in" in rest and "SDPX-SRV-502" not in rest
    # released: the holder's record is cleared
    assert (project / ".sdp-expect" / "project.lock").read_text() == ""


def test_runs_use_the_warm_server_until_it_is_stopped(project: Path,
                                                      env: dict[str, str]) -> None:
    started = sdp_expect("serve", "--background", "--conf", "spark.sql.shuffle.partitions=3",
                         cwd=project, env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    record = read_record(project.resolve())
    assert record is not None and record.kept and process_alive(record.pid)
    assert (project / RECORD_FILE).stat().st_mode & 0o077 == 0  # it holds the token
    server = fake_args(env, "FAKE_SERVER_ARGS")
    assert "-Dspark.python.worker.reuse=false" in server["opts"]
    assert "spark.sql.shuffle.partitions=3" in server["argv"]
    assert sdp_expect("serve", "--status", cwd=project, env=env).returncode == 0
    for options in ([], ["--conf", "spark.sql.shuffle.partitions=3"]):
        status, document, _ = json_run("dry-run", *options, cwd=project, env=env)
        assert status == 0
        assert document["server"] == {"url": f"sc://localhost:{record.port}",
                                      "port": record.port, "pid": record.pid, "warm": True}
        args = fake_args(env)
        assert args["argv"][-2:] == ["--remote", f"sc://localhost:{record.port}"]
        assert args["token"] == record.token
    assert process_alive(record.pid)  # a run leaves the warm server up
    # Other server options than serve's: the warm server cannot take them
    status, document, _ = json_run("run", "--conf", "spark.sql.shuffle.partitions=9",
                                   cwd=project, env=env)
    assert status == 1 and document["server_errors"][0]["code"] == "SDPX-SRV-503"
    assert "spark.sql.shuffle.partitions=9" in document["server_errors"][0]["message"]
    again = sdp_expect("serve", "--background", cwd=project, env=env)
    assert again.returncode == 1 and "[SDPX-SRV-504]" in again.stderr
    stopped = sdp_expect("serve", "--stop", cwd=project, env=env)
    assert stopped.returncode == 0 and "stopped the server" in stopped.stdout
    assert gone(record.pid, project) and read_record(project.resolve()) is None
    assert sdp_expect("serve", "--status", cwd=project, env=env).returncode == 1
    assert "no server" in sdp_expect("serve", "--stop", cwd=project, env=env).stdout


def test_a_server_left_by_a_killed_run_is_stopped_and_a_stale_record_dropped(
        project: Path, env: dict[str, str]) -> None:
    assert sdp_expect("serve", "--background", cwd=project, env=env).returncode == 0
    folder = project.resolve()
    left = read_record(folder)
    assert left is not None
    # As a run that was killed leaves its own server: recorded, not kept, still up
    write_record(folder, ServerRecord(**{**left.as_dict(), "kept": False}))
    status, document, _ = json_run("dry-run", cwd=project, env=env)
    assert status == 0 and document["server"]["warm"] is False
    assert gone(left.pid, project) and document["server"]["port"] != left.port
    assert read_record(folder) is None
    # A record whose server is gone is dropped
    write_record(folder, ServerRecord(**{**left.as_dict(), "pid": 999999999}))
    status, document, _ = json_run("dry-run", cwd=project, env=env)
    assert status == 0 and document["server"]["warm"] is False
    assert read_record(folder) is None


def test_a_server_that_does_not_start_is_reported_with_its_last_lines(
        project: Path, env: dict[str, str]) -> None:
    failing = dict(env, FAKE_SERVER_FAIL="Error: no Java runtime present (the fake)")
    done = sdp_expect("run", cwd=project, env=failing)
    assert done.returncode == 1
    assert "[SDPX-SRV-501]" in done.stderr and "exited with status 1" in done.stderr
    assert "  Error: no Java runtime present (the fake)" in done.stderr
    assert "Java 17" in done.stderr  # the fix
    log = done.stderr.split("full log: ", 1)[1].strip()
    assert "Error: no Java runtime present (the fake)" in (project / log).read_text()
    status, document, _ = json_run("run", cwd=project, env=failing)
    error = document["server_errors"][0]
    assert status == 1 and error["code"] == "SDPX-SRV-501"
    assert "no Java runtime present" in error["log_tail"]


@pytest.mark.parametrize("command", [["dry-run"], ["serve"]])
def test_a_stopped_command_stops_its_server(project: Path, env: dict[str, str],
                                            command: list[str]) -> None:
    """SIGTERM (or SIGHUP, Ctrl-C) stops the command, and it stops the server it started:
    the project's catalog is free for the next run."""
    slow = dict(env, FAKE_SLEEP="60")
    running = subprocess.Popen([sdp_expect_script(), *command], cwd=project, env=slow,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (Path(env["FAKE_ARGS"] if command == ["dry-run"]
                        else project / RECORD_FILE).exists()):
            assert running.poll() is None and time.monotonic() < deadline, running.communicate()
            time.sleep(0.1)
        record = read_record(project.resolve())
        assert record is not None and process_alive(record.pid)
        running.send_signal(signal.SIGTERM)
        running.wait(60)
    finally:
        if running.poll() is None:
            running.kill()
    assert gone(record.pid, project)
    assert read_record(project.resolve()) is None
