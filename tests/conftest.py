"""Shared fixtures, and the tiers of the suite (docs/testing.md).

Every test is put in exactly one tier, here, from the fixtures it uses (never by
a marker written on the test):

``pure``
    No Spark: the model, the compiler, the planner, the front ends, the command
    line with stand-ins for Spark (``cli_helpers.fake_commands``).
``graph``
    Real pipeline graphs in the one Spark Connect server of the session (the
    ``spark_server`` fixture, directly or through ``make_pipeline``).
``cli``
    Spark processes of the test's own: true ``sdp-expect``/``spark-pipelines``
    runs, a project's warm server (the ``own_jvm`` fixture). Only such a test may
    start Spark: elsewhere ``$SDP_EXPECT_SPARK_SUBMIT`` refuses to start a server,
    and the helpers of ``cli_helpers`` that start Spark refuse too, so a test
    cannot sit in a cheaper tier than what it runs.
``slow``
    The SIGKILL fault loop, the standalone cluster and the pre-commit hook's own
    environment (markers ``faults``, ``cluster``, ``hook_env``, which say what
    the test does): minutes each.

``-m graph`` and the like choose tiers; the counts of each tier's outcomes are
printed at the end of the run (``tier counts:``), and written to
``$SDPX_TIER_COUNTS`` when it is set (scripts/test.sh collects them).

Hypothesis: the profile ``full`` (default) runs every property with its example
counts; ``explicit`` (``SDPX_HYPOTHESIS=explicit``) runs the explicit examples
only, for the lines that are not the line of the full runs (scripts/test.sh).
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import Phase, settings

sys.path.insert(0, os.path.dirname(__file__))

import cli_helpers
import format_server
from sdp_runner import MakePipeline, Pipeline, SparkServer, server_conf

REPO = Path(__file__).resolve().parent.parent

TIERS = ("pure", "graph", "cli", "slow")
SLOW_MARKERS = ("faults", "cluster", "hook_env")
"""Markers that name what a slow test does; each puts the test in the ``slow`` tier."""

settings.register_profile("full")
settings.register_profile("explicit", phases=[Phase.explicit])
settings.load_profile(os.environ.get("SDPX_HYPOTHESIS", "full"))


def tier_of(fixtures: set[str], markers: set[str]) -> str:
    """The tier of a test that uses ``fixtures`` and carries ``markers``."""
    if markers & set(SLOW_MARKERS):
        return "slow"
    if "own_jvm" in fixtures:
        return "cli"
    if "spark_server" in fixtures:
        return "graph"
    return "pure"


def pytest_configure(config: pytest.Config) -> None:
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: the {tier} tier (set by conftest.py)")


LINE_SKIPS = {
    "newest_line": (False, "a true CLI run whose behaviour does not depend on the pyspark "
                           "line: it runs on the newest line only, where every test runs "
                           "(docs/testing.md; the graphs it relies on run on every line)"),
    "oldest_line": (True, "a true CLI run over a feature whose graphs run on every line: it "
                          "runs on the pyspark 4.1 line only (the line whose Hive session "
                          "differs most; docs/testing.md), for CI's time"),
}
"""Marker: (whether it runs on 4.1 only, the reason it is skipped on the other lines)."""

def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier and skip the line-bound ones off their line. (Under
    ``pytest -n``, pytest-xdist hands out the test files with the most tests first,
    whatever their order here: docs/testing.md, "One server, shared", says why that
    order is kept.)"""
    from sdp_expect.base.spark_version import spark_has

    on_oldest = not spark_has((4, 2))
    for item in items:
        _LIMITS[item.nodeid] = _limit(item)
        fixtures = set(getattr(item, "fixturenames", ()))
        markers = {mark.name for mark in item.iter_markers()}
        tier = tier_of(fixtures, markers)
        item.add_marker(getattr(pytest.mark, tier))
        for marker, (oldest_only, reason) in LINE_SKIPS.items():
            if marker in markers and oldest_only != on_oldest:
                item.add_marker(pytest.mark.skip(reason=reason))


_counts: Counter[tuple[str, str]] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Count outcomes per tier (also in the controller of ``pytest -n``: a report's
    keywords carry the test's markers)."""
    if report.when == "call" or (report.when == "setup" and not report.passed):
        tier = next((t for t in TIERS if t in report.keywords), "pure")
        _counts[(tier, report.outcome)] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _counts or hasattr(terminalreporter.config, "workerinput"):
        return  # a worker of pytest -n: the controller counts every worker's reports
    import pyspark

    line = {tier: {outcome: n for (t, outcome), n in sorted(_counts.items()) if t == tier}
            for tier in TIERS}
    text = " · ".join(
        f"{tier} " + (", ".join(f"{n} {o}" for o, n in line[tier].items()) or "0")
        for tier in TIERS)
    terminalreporter.write_line(f"tier counts (pyspark {pyspark.__version__}): {text}")
    target = os.environ.get("SDPX_TIER_COUNTS")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"pyspark": pyspark.__version__, "tiers": line}) + "\n")


# -- what is running, for a line that does not end ----------------------------------------
STACKS_BEFORE_TIMEOUT = 60
"""Seconds before its pytest-timeout limit at which a test's stacks are written down."""
END_AFTER_TIMEOUT = 300
"""Seconds after its limit at which a worker whose test pytest-timeout's signal did not
stop (a wait in C code that never returns to Python) is ended, so that its line goes on:
the test fails as crashed (scripts/test.sh: ``--max-worker-restart 0``)."""


def _write_stacks(path: Path, nodeid: str, waited: float) -> None:
    """Every Python thread's stack, then ``jstack`` of every JVM of this clone, added to
    ``path``."""
    import subprocess

    with open(path, "a", encoding="utf-8") as out:
        out.write(f"== {nodeid}: still running {waited:.0f} s on\n")
        out.flush()
        faulthandler.dump_traceback(file=out, all_threads=True)
        found = subprocess.run(["pgrep", "-f", f"^[^ ]*java .*{REPO}/"], capture_output=True,
                               text=True, check=False).stdout.split()
        for pid in found:
            out.write(f"\n== jstack {pid}\n")
            out.flush()
            subprocess.run(["jstack", pid], stdout=out, stderr=subprocess.STDOUT, timeout=60,
                           check=False)


def _end_worker(path: Path, nodeid: str, waited: float) -> None:
    """The signal did not stop the test: its stacks again, then the worker ends."""
    _write_stacks(path, nodeid, waited)
    os._exit(1)


_LIMITS: dict[str, float] = {}
"""Each collected test's pytest-timeout limit in seconds (0: none), by node id."""
_timers: list[Any] = []


def _limit(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0] if marker and marker.args else item.config.getini("timeout") or 0)


def _running_files() -> tuple[Path, Path] | None:
    folder, worker = os.environ.get("SDPX_RUNNING"), os.environ.get("PYTEST_XDIST_WORKER")
    if not folder or not worker:
        return None
    return Path(folder) / f"{worker}.txt", Path(folder) / f"{worker}-stacks.txt"


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    """When ``$SDPX_RUNNING`` names a folder, a worker of ``pytest -n`` notes there the test
    it runs (``gwN.txt``) and, if a run of the test (a rerun is a run) goes on to a minute
    before its pytest-timeout limit, every thread's stack and every JVM's
    (``gwN-stacks.txt``): a worker's own output is lost, and JUnit reports are written
    only at the end of a line, so scripts/test.sh prints these files when a line ends. A
    run still going :data:`END_AFTER_TIMEOUT` seconds after its limit ends its worker."""
    import threading

    files = _running_files()
    if files is None:
        return
    note, stacks = files
    note.write_text(f"{nodeid} (since {time.strftime('%H:%M:%S')}, worker pid "
                    f"{os.getpid()})\n", encoding="utf-8")
    limit = _LIMITS.get(nodeid, 0.0)
    if limit > STACKS_BEFORE_TIMEOUT:
        for seconds, act in ((limit - STACKS_BEFORE_TIMEOUT, _write_stacks),
                             (limit + END_AFTER_TIMEOUT, _end_worker)):
            timer = threading.Timer(seconds, act, (stacks, nodeid, seconds))
            timer.daemon = True
            timer.start()
            _timers.append(timer)


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    while _timers:
        _timers.pop().cancel()
    files = _running_files()
    if files is not None:
        files[0].unlink(missing_ok=True)


# -- what a test may start ----------------------------------------------------------------
REFUSING_SUBMIT = """#!/bin/sh
echo "SDPX test tiers: this test started a Spark server but is not in the cli tier:" \
     "give it the own_jvm fixture (tests/conftest.py, docs/testing.md)" >&2
exit 97
"""


def _refusing_submit(config: pytest.Config) -> str:
    folder = Path(config._tmp_path_factory.getbasetemp()) / "tiers"  # type: ignore[attr-defined]
    script = folder / "spark-submit"
    if not script.exists():
        folder.mkdir(exist_ok=True)
        script.write_text(REFUSING_SUBMIT)
        script.chmod(0o755)
    return str(script)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture of the test is set up (module fixtures included): only the cli
    and slow tiers may start Spark processes of their own. Elsewhere a Spark server that
    sdp-expect would start is refused (tests that stand a fake server in,
    ``cli_helpers.fake_commands``, set ``SDP_EXPECT_SPARK_SUBMIT`` themselves), and so
    are the helpers of ``cli_helpers`` that start Spark."""
    own = any(item.get_closest_marker(tier) for tier in ("cli", "slow"))
    cli_helpers.OWN_JVM.allowed = own
    if own:
        os.environ.pop("SDP_EXPECT_SPARK_SUBMIT", None)
    else:
        os.environ["SDP_EXPECT_SPARK_SUBMIT"] = _refusing_submit(item.config)


@pytest.fixture(scope="session")
def own_jvm() -> None:
    """Declares that the test (or the fixture that asks for it) starts Spark processes of
    its own: true command-line runs, a project's warm server, a reader of a project's
    catalog. conftest.py then puts the test in the ``cli`` tier, where that is allowed."""


# -- a table format's server ---------------------------------------------------------------
@pytest.fixture(scope="module", params=format_server.TESTED_FORMATS)
def format_server_of(request: pytest.FixtureRequest, own_jvm: None,
                     tmp_path_factory: pytest.TempPathFactory
                     ) -> Iterator[tuple[str, SparkServer]]:
    """A server for one table format, as ``sdp-expect run`` starts a project's
    (tests/format_server.py), for the module: the format's name and the server. Skips
    the module on a pyspark line the format has no release for."""
    name = str(request.param)
    for server in format_server.start(name, tmp_path_factory.mktemp(f"{name}-server")):
        yield name, server


# -- the shared server ----------------------------------------------------------------------
def _runs_graphs(config: pytest.Config) -> bool:
    """Whether the tests chosen may use the shared server (``-m pure`` does not)."""
    return str(config.getoption("markexpr", "") or "").strip() != "pure"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``pytest -n`` with ``SDPX_SHARED_SERVER=1``, the controller starts the one
    Spark Connect server that all workers share (:func:`pytest_configure_node` tells
    them where it is): one JVM, one warm-up and one set of compiled code for the whole
    run, and the workers' graphs interleave in it (an update spends most of its time
    waiting between flows)."""
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if os.environ.get("SDPX_SHARED_SERVER") != "1":
        return  # a server per worker (the matrix: see docs/testing.md, "One server")
    if not _runs_graphs(config):
        return
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix="sdpx-spark-server-"))
    config.stash[_SHARED] = SparkServer(workdir, driver_memory="4g", conf=server_conf(),
                                        wait=False)


_SHARED = pytest.StashKey[SparkServer]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    server = node.config.stash.get(_SHARED, None)
    if server is not None:
        node.workerinput["sdpx_spark_server"] = json.dumps(
            {"port": server.port, "workdir": str(server.workdir)})


def pytest_sessionfinish(session: pytest.Session) -> None:
    server = session.config.stash.get(_SHARED, None)
    if server is not None:
        import shutil

        server.stop()
        shutil.rmtree(server.workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def spark_server(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkServer]:
    """The session's Spark Connect server: the one the controller of ``pytest -n``
    started for every worker, else one of this process's own."""
    shared = getattr(request.config, "workerinput", {}).get("sdpx_spark_server")
    if shared:
        where = json.loads(shared)
        server = SparkServer.attach(int(where["port"]), Path(where["workdir"]))
    else:
        server = SparkServer(tmp_path_factory.mktemp("spark-server"), conf=server_conf())
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def make_pipeline(spark_server: SparkServer, tmp_path: Path) -> MakePipeline:
    """Build a :class:`Pipeline` (its own database and storage) in the shared server."""

    def make(definitions: Any = None, *, files: Path | None = None,
             conf: dict[str, str] | None = None) -> Pipeline:
        return Pipeline(spark_server, tmp_path, definitions=definitions, files=files,
                        conf=dict(conf or {}))

    return make
