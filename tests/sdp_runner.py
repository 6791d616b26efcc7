"""Run many real SDP pipeline graphs in one local Spark Connect server.

``spark-pipelines run`` starts a Spark server per run (~25 s). The tests
instead start one Spark Connect server for the whole session and, for each
pipeline, do what ``pyspark/pipelines/cli.py`` does: create a dataflow graph,
register the definitions through the real registry, start a run and read its
events. Each graph gets its own database and storage folder, so graphs do not
see each other's tables.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, cast

import pyspark.sql
from pyspark.find_spark_home import _find_spark_home
from pyspark.pipelines.add_pipeline_analysis_context import add_pipeline_analysis_context
from pyspark.pipelines.block_session_mutations import block_session_mutations
from pyspark.pipelines.graph_element_registry import graph_element_registration_context
from pyspark.pipelines.spark_connect_graph_element_registry import (
    SparkConnectGraphElementRegistry,
)
from pyspark.pipelines.spark_connect_pipeline import create_dataflow_graph, start_run
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession

Definitions = Callable[[SparkSession], None]


def _as_annotated(spark: SparkSession) -> pyspark.sql.SparkSession:
    """The session as the type pyspark's pipeline functions annotate it with.

    They are annotated with ``pyspark.sql.SparkSession`` but given a Spark Connect
    session (as under ``spark-pipelines``), a class not derived from it.
    """
    return cast(pyspark.sql.SparkSession, spark)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


INTERPRETED = (("spark.sql.codegen.wholeStage", "false"),
               ("spark.sql.codegen.factoryMode", "NO_CODEGEN"))
"""With ``SDPX_SERVER=interpreted`` (the everyday run, scripts/test.sh): Spark evaluates
expressions without generating code, which saves compiling each of the thousands of tiny
queries (about 8 % of the graph tier). The whole matrix runs Spark's defaults."""


def server_conf() -> list[tuple[str, str]]:
    """The settings of every server the tests start (:data:`INTERPRETED` or none)."""
    return list(INTERPRETED) if os.environ.get("SDPX_SERVER") == "interpreted" else []


_ALIVE: list[object] = []
_Session = TypeVar("_Session")


def keep_alive(session: _Session) -> _Session:
    """``session``, referenced until the process ends: never garbage-collected.

    A Spark Connect session closes its client in ``__del__``, and on pyspark 4.1 that
    close shuts down the release thread pool all clients share and waits for it
    (SPARK-55362 and SPARK-55406, fixed in 4.2). Garbage collection runs ``__del__`` at
    any allocation: in the middle of another session's call, or in a thread of that
    pool, which then waits for itself forever. On 7 Dec 2026 two graph tests of the 4.1
    line waited so in one worker each (py-spy: ``SparkSession.__del__`` ->
    ``ThreadPoolExecutor.shutdown``), after a module's server had stopped and dropped
    its sessions: every session a test process makes is kept here, stopped or not.
    """
    _ALIVE.append(session)
    return session


class SparkServer:
    """A local Spark Connect server in its own process, on a port of its own.

    :param workdir: Its warehouse, Derby home and log go here.
    :param driver_memory: The server JVM's heap.
    :param conf: More ``(key, value)`` Spark settings.
    :param wait: Wait until it answers (else :meth:`attach` to it, or call
        :meth:`wait_until_up`, before its first session).
    """

    def __init__(self, workdir: Path, driver_memory: str = "3g",
                 conf: Optional[Sequence[tuple[str, str]]] = None, *, wait: bool = True) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.log_path = workdir / "spark-connect-server.log"
        self._sessions: list[SparkSession] = []
        # Untyped in pyspark 4.1, typed from 4.2.
        spark_home = _find_spark_home()  # type: ignore[no-untyped-call, unused-ignore]
        command = [
            os.path.join(spark_home, "bin", "spark-submit"),
            "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master", "local[2]",
            "--driver-memory", driver_memory,
            "--conf", f"spark.connect.grpc.binding.port={self.port}",
            "--conf", f"spark.sql.warehouse.dir={workdir / 'warehouse'}",
            "--conf", "spark.sql.shuffle.partitions=2",
            "--conf", "spark.default.parallelism=2",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.sql.connect.serverStacktrace.enabled=false",
            "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={workdir}",
            *[arg for key, value in conf or [] for arg in ("--conf", f"{key}={value}")],
            "spark-internal",
        ]
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        env.pop("SPARK_REMOTE", None)
        with open(self.log_path, "wb") as log:
            self.process: Optional[subprocess.Popen[bytes]] = subprocess.Popen(
                command, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        if wait:
            self.wait_until_up()

    @classmethod
    def attach(cls, port: int, workdir: Path) -> SparkServer:
        """The server another process started (the controller of ``pytest -n``, for
        all its workers), once it answers; :meth:`stop` then leaves it running."""
        server = cls.__new__(cls)
        server.workdir, server.port = workdir, port
        server.log_path = workdir / "spark-connect-server.log"
        server._sessions, server.process = [], None
        server.wait_until_up()
        return server

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def wait_until_up(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Spark server exited; see {self.log_path}")
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=1
            ):
                return
            time.sleep(0.5)
        raise RuntimeError(f"Spark server did not start in {timeout} s; see {self.log_path}")

    def session(self) -> SparkSession:
        """A new client session, referenced until the process ends (:func:`keep_alive`)."""
        # What SparkSession.builder.remote(...) sets: pyspark.sql.functions then build
        # Spark Connect columns, as they do under spark-pipelines.
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        session = keep_alive(SparkSession.builder.remote(self.url).create())
        self._sessions.append(session)
        return session

    def stop(self) -> None:
        for session in self._sessions:
            with contextlib.suppress(Exception):
                session.stop()
        if self.process is None:  # attached: its owner stops it
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


class RecordingRegistry(SparkConnectGraphElementRegistry):
    """The real registry, noting the kind of each output and the target of each flow."""

    def __init__(self, spark: SparkSession, graph_id: str) -> None:
        super().__init__(_as_annotated(spark), graph_id)
        self.outputs: dict[str, str] = {}
        self.flows: dict[str, str] = {}

    def register_output(self, output: Any) -> None:
        self.outputs[output.name] = type(output).__name__
        super().register_output(output)

    def register_flow(self, flow: Any) -> None:
        self.flows[flow.name] = flow.target
        super().register_flow(flow)


@dataclass
class RunResult:
    """What one pipeline update did."""

    events: list[str]
    error: Optional[BaseException]
    spark: SparkSession
    database: str
    outputs: dict[str, str] = field(default_factory=dict)
    flows: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def output(self) -> str:
        """Everything a user would have seen: event messages and the final error."""
        if self.error is None:
            return "\n".join(self.events)
        trace = "".join(traceback.format_exception(self.error))
        return "\n".join([*self.events, trace])

    def table(self, name: str) -> DataFrame:
        return self.spark.read.table(f"`{self.database}`.`{name}`")

    def rows(self, name: str) -> list[dict[str, Any]]:
        return [row.asDict(recursive=True) for row in self.table(name).collect()]

    def exists(self, name: str) -> bool:
        return bool(self.spark.catalog.tableExists(f"`{self.database}`.`{name}`"))

    def flow_events(self, flow: str) -> list[str]:
        """The events of one flow, by its unqualified name, in order."""
        marks = (f".{flow} ", f".{flow}' ")
        return [e for e in self.events if any(mark in e for mark in marks)]

    def flow_state(self, flow: str) -> str:
        """The last state an event reported for a flow (COMPLETED, FAILED, SKIPPED...)."""
        for event in reversed(self.flow_events(flow)):
            for state in ("COMPLETED", "FAILED", "SKIPPED", "RUNNING", "QUEUED"):
                if state in event:
                    return state
        return "NONE"


@dataclass
class Pipeline:
    """A pipeline definition that can be run (updated) several times, like a project."""

    server: SparkServer
    root: Path
    definitions: Optional[Definitions] = None
    files: Optional[Path] = None
    conf: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = "p" + uuid.uuid4().hex[:10]
        self.database = self.name
        self.storage = self.root / self.name / "storage"
        self.storage.mkdir(parents=True)
        self.spark = self.server.session()
        for key, value in self.conf.items():
            self.spark.conf.set(key, value)
        self.spark.sql(f"CREATE DATABASE IF NOT EXISTS `{self.database}`")

    # -- data ---------------------------------------------------------------------------
    def create_table(self, name: str, rows: list[tuple[Any, ...]], schema: str) -> None:
        """An external source table for the pipeline (outside the graph)."""
        frame = self.spark.createDataFrame(rows, schema)
        frame.write.mode("overwrite").saveAsTable(f"`{self.database}`.`{name}`")

    def path(self, *parts: str) -> Path:
        target = self.root / self.name / "data" / Path(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    # -- definition and runs --------------------------------------------------------------
    def register(self) -> tuple[str, RecordingRegistry]:
        """A new dataflow graph with this pipeline's definitions registered in it."""
        graph_id = create_dataflow_graph(
            _as_annotated(self.spark), default_catalog=None, default_database=self.database,
            sql_conf=self.conf,
        )
        registry = RecordingRegistry(self.spark, graph_id)
        self.registry: Optional[RecordingRegistry] = registry
        with graph_element_registration_context(registry), add_pipeline_analysis_context(
            spark=_as_annotated(self.spark), dataflow_graph_id=graph_id, flow_name=None
        ), block_session_mutations(), _active_session(self.spark):
            if self.definitions is not None:
                self.definitions(self.spark)
            if self.files is not None:
                self._import_files(registry)
        return graph_id, registry

    def _library_files(self) -> list[Path]:
        """The pipeline's files: those its spark-pipeline.yml lists, when it has one (as
        spark-pipelines loads them), else every file of the folder."""
        assert self.files is not None
        spec = self.files / "spark-pipeline.yml"
        if not spec.exists():
            return sorted(self.files.rglob("*"))
        import yaml

        found: list[Path] = []
        for library in yaml.safe_load(spec.read_text()).get("libraries") or []:
            pattern = str(library["glob"]["include"])
            if pattern.endswith("/**"):  # as spark-pipelines reads it: every file below
                pattern += "/*"
            found += [path for path in sorted(self.files.glob(pattern))
                      if path.is_file() and "__pycache__" not in path.parts
                      and path not in found]
        return found

    def _import_files(self, registry: SparkConnectGraphElementRegistry) -> None:
        assert self.files is not None
        with _chdir(self.files):
            for file in self._library_files():
                if file.suffix == ".py":
                    spec = importlib.util.spec_from_file_location(file.stem, file)
                    assert spec is not None and spec.loader is not None
                    module = importlib.util.module_from_spec(spec)
                    module.__dict__["spark"] = self.spark
                    spec.loader.exec_module(module)
                elif file.suffix == ".sql":
                    registry.register_sql(file.read_text(), file.relative_to(self.files))

    def run(self, *, full_refresh_all: bool = False, full_refresh: Optional[list[str]] = None,
            dry: bool = False) -> RunResult:
        events: list[str] = []
        self.registry = None
        try:
            graph_id, _ = self.register()
            results = start_run(
                _as_annotated(self.spark), graph_id, full_refresh=full_refresh or [],
                full_refresh_all=full_refresh_all, refresh=[], dry=dry,
                storage=self.storage.as_uri(),
            )
            for result in results:
                if "pipeline_event_result" in result:
                    events.append(result["pipeline_event_result"].event.message)
        except Exception as error:  # the run's outcome is what the tests look at
            return self._result(events, error)
        return self._result(events, None)

    def _result(self, events: list[str], error: Optional[BaseException]) -> RunResult:
        outputs = dict(self.registry.outputs) if self.registry else {}
        flows = dict(self.registry.flows) if self.registry else {}
        return RunResult(events, error, self.spark, self.database, outputs, flows)


# The type of conftest's ``make_pipeline`` fixture: ``make_pipeline(definitions=None, *,
# files=None, conf=None)`` builds a Pipeline.
MakePipeline = Callable[..., Pipeline]


@contextlib.contextmanager
def _active_session(spark: SparkSession) -> Iterator[None]:
    """``SparkSession.active()`` is this pipeline's session while its files are loaded.

    Under ``spark-pipelines`` the process has one session; here every pipeline has its
    own, and without this ``SparkSession.active()`` in a pipeline file (which Spark 4.1
    pipelines must call) would be the first session of the test process, with another
    pipeline's configuration (``spark.conf.get(...)``).
    """
    holder = SparkSession._active_session
    before = getattr(holder, "session", None)
    holder.session = spark
    try:
        yield
    finally:
        holder.session = before


@contextlib.contextmanager
def _chdir(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def copy_project(source: Path, target: Path) -> Path:
    """A fresh copy of a pipeline project folder (examples are never run in place)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(
        "spark-warehouse", "metastore_db", "pipeline-storage", "derby.log", "__pycache__"))
    return target


def committed_batches(storage: Path, flows: dict[str, str],
                      database: str = "default") -> dict[str, int]:
    """Micro-batches each streaming flow committed, from its checkpoint folder.

    :param storage: The pipeline's storage folder.
    :param flows: Target table to flow name.
    :param database: The tables' database.
    """
    counts = {}
    for table, flow in flows.items():
        root = storage / "_checkpoints" / "spark_catalog" / database / table / flow
        # The newest commit's batch id + 1: Spark deletes old commit files as it goes
        # (spark.sql.streaming.minBatchesToRetain), so they cannot just be counted.
        versions = sorted((p for p in root.glob("*") if p.name.isdigit()),
                          key=lambda p: int(p.name))  # a full refresh starts a new one
        commits = versions[-1].glob("commits/*") if versions else []
        ids = [int(p.name) for p in commits if p.name.isdigit()]
        counts[flow] = max(ids) + 1 if ids else 0
    return counts
