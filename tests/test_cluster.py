"""sdp-expect on a Spark cluster, not only ``local[*]``; and no Python on the workers.

``test_example_on_a_standalone_cluster_gives_the_local_tables`` starts a Spark
standalone master and two workers on this machine from the installed pyspark
(``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``,
1 core and 1 GB each, free ports, no REST server), and a Spark Connect server
whose master is that cluster. The example project is run with the real
command, ``spark-pipelines --remote sc://127.0.0.1:<port> run``, once against
that server and once against the test session's ``local[2]`` server, and every
table of the two runs must be equal.

The cluster has no Python for Spark to start: the workers run with no
``PYTHONPATH`` and the Connect server with ``PYSPARK_PYTHON`` pointing at a
file that does not exist, so any Python UDF would fail its tasks (the test
shows that one does). The example's tasks all run, on both executors: the
plans sdp-expect generates are SQL expressions only.

``test_generated_flows_hold_no_python_code`` reads the same from the plans
themselves: every flow the example and the streaming fixture register is sent
to the server as a Spark Connect relation in which no Python UDF, UDTF,
``mapInPandas``-like node or Python data source occurs.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional, cast

import pyspark
import pytest
import sdp_runner
import yaml
from cli_helpers import set_storage, spark_pipelines, user_env
from pyspark.find_spark_home import _find_spark_home
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import (
    MakePipeline,
    Pipeline,
    SparkServer,
    copy_project,
    free_port,
    keep_alive,
)

from sdp_expect import pipelines as dp
from sdp_expect.base import names

REPO = Path(__file__).resolve().parent.parent
SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
EXAMPLE = REPO / "examples" / ("spark42" if SPARK >= (4, 2) else "spark41")
FAULTS_PROJECT = REPO / "tests" / "fixtures" / "faults" / "project"
NO_PYTHON = "/nonexistent/python3"
EXAMPLE_TABLES = {"orders_bronze", "orders_silver", "orders_silver_quarantine",
                  "orders_silver_dq_metrics", "revenue_by_customer",
                  "revenue_by_customer_dq_metrics"}


def cluster_env(workdir: Path) -> dict[str, str]:
    """The cluster's environment: no sdp-expect, no Python for Spark to start."""
    env = user_env()
    env.pop("PYTHONPATH", None)
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
               SPARK_LOG_DIR=str(workdir / "logs"), SPARK_PID_DIR=str(workdir),
               PYSPARK_PYTHON=NO_PYTHON, PYSPARK_DRIVER_PYTHON=NO_PYTHON)
    return env


# ------------------------------------------------------------------------------- processes
class Processes:
    """Background processes, each in its own process group; all stopped at the end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> Path:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, cwd=self.workdir, env=env, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        self.started.append((process, log))
        return log

    def check_alive(self) -> None:
        for process, log in self.started:
            if process.poll() is not None:
                raise AssertionError(f"{log.name}: exited with {process.returncode}:\n"
                                     + log.read_text(errors="replace")[-3000:])

    def stop(self) -> None:
        for process, _ in reversed(self.started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process, _ in reversed(self.started):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(20)
            with contextlib.suppress(ProcessLookupError):  # executors of a worker, say
                os.killpg(process.pid, signal.SIGKILL)


def wait_for_log(processes: Processes, log: Path, pattern: str, count: int,
                 timeout: float) -> None:
    """Until ``pattern`` occurs ``count`` times in ``log`` (and its process is alive)."""
    deadline = time.monotonic() + timeout
    regex = re.compile(pattern)
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if len(regex.findall(text)) >= count:
            return
        processes.check_alive()
        time.sleep(0.5)
    raise AssertionError(f"no {count} x {pattern!r} in {log.name} after {timeout:.0f} s:\n"
                         + (log.read_text(errors="replace")[-3000:] if log.exists() else ""))


class StandaloneCluster:
    """A standalone master, two workers (1 core, 1 GB each) and a Connect server on them."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.processes = Processes(workdir)
        # Untyped in pyspark 4.1, typed from 4.2.
        spark_home = _find_spark_home()  # type: ignore[no-untyped-call, unused-ignore]
        self.spark_class = os.path.join(spark_home, "bin", "spark-class")
        self.spark_submit = os.path.join(spark_home, "bin", "spark-submit")
        self.env = cluster_env(workdir)
        self.master_url = f"spark://127.0.0.1:{free_port()}"
        self.worker_dirs = [workdir / f"worker{n}" for n in (1, 2)]
        self.port = free_port()
        self._sessions: list[SparkSession] = []

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start_daemons(self) -> None:
        """Start the master and both workers; they find each other in the background."""
        props = self.workdir / "master.conf"
        props.write_text("spark.master.rest.enabled false\n")
        self.master_log = self.processes.start("master", [
            self.spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", self.master_url.rsplit(":", 1)[1], "--webui-port", str(free_port()),
            "--properties-file", str(props)], self.env)
        for number, folder in enumerate(self.worker_dirs, start=1):
            folder.mkdir()
            self.processes.start(f"worker{number}", [
                self.spark_class, "org.apache.spark.deploy.worker.Worker", "--host",
                "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", "1", "--memory", "1g", "--work-dir", str(folder), self.master_url],
                self.env)

    def start_server(self) -> None:
        """Start a Connect server with the cluster as master (executors come as workers do)."""
        # The launcher gives a Connect server SPARK_DAEMON_MEMORY, if set, as its heap.
        server_env = {k: v for k, v in self.env.items() if k != "SPARK_DAEMON_MEMORY"}
        self.server_log = self.processes.start("connect-server", [
            self.spark_submit, "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master", self.master_url, "--driver-memory", "1g",
            "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
            "--conf", "spark.cores.max=2",
            "--conf", f"spark.connect.grpc.binding.port={self.port}",
            "--conf", f"spark.sql.warehouse.dir={self.workdir / 'warehouse'}",
            "--conf", "spark.sql.shuffle.partitions=2",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.sql.connect.serverStacktrace.enabled=false",
            "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={self.workdir}",
            "spark-internal"], server_env)

    def wait_until_ready(self) -> None:
        """Both workers registered with the master, and both executors with the server."""
        wait_for_log(self.processes, self.master_log, r"Registering worker", 2, 180)
        wait_for_log(self.processes, self.server_log, r"Registered executor .* with ID", 2,
                     240)

    def session(self) -> SparkSession:
        """A client session (kept referenced until the end, as in ``SparkServer``)."""
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        session = keep_alive(SparkSession.builder.remote(self.url).create())
        self._sessions.append(session)
        return session

    def tasks_per_executor(self) -> dict[str, int]:
        """Tasks each executor of the cluster finished, from the executors' own logs."""
        counts = {}
        for folder in self.worker_dirs:
            for log in folder.glob("app-*/*/stderr"):
                text = log.read_text(errors="replace")
                counts[str(log.relative_to(self.workdir))] = len(
                    re.findall(r"Executor: Finished task", text))
        return counts

    def stop(self) -> None:
        for session in self._sessions:
            with contextlib.suppress(Exception):
                session.stop()
        self.processes.stop()


@contextlib.contextmanager
def standalone_cluster(workdir: Path) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(workdir)
    try:
        yield cluster
    finally:
        cluster.stop()


# -------------------------------------------------------------------------------- projects
def example_project(root: Path, database: str) -> Path:
    """A copy of the example with its own storage and database."""
    project = copy_project(EXAMPLE, root)
    set_storage(project, root.parent / (root.name + "-storage"))
    with open(project / "spark-pipeline.yml", "a") as spec:
        spec.write(f"database: {database}\n")
    return project


def tables_of(spark: SparkSession, database: str) -> dict[str, Any]:
    """Every table of ``database``: its schema and its rows, in a stable order (without
    the update each quarantined record names, which differs from run to run:
    tests/test_quarantine_records.py)."""
    tables = {}
    for table in spark.catalog.listTables(database):
        frame = spark.read.table(f"`{database}`.`{table.name}`").drop(
            names.QUARANTINE_UPDATE_COLUMN, names.QUARANTINE_TIME_COLUMN)
        rows = sorted((row.asDict(recursive=True) for row in frame.collect()), key=repr)
        tables[table.name] = {"schema": frame.schema.simpleString(), "rows": rows}
    return tables


# ----------------------------------------------------------------------------------- tests
@pytest.mark.usefixtures("own_jvm")
@pytest.mark.cluster
@pytest.mark.timeout(600)
def test_example_on_a_standalone_cluster_gives_the_local_tables(
        spark_server: SparkServer, tmp_path: Path) -> None:
    database = "cluster_example_" + uuid.uuid4().hex[:8]
    workdir = tmp_path / "cluster"
    workdir.mkdir()
    started = time.monotonic()
    with standalone_cluster(workdir) as cluster:
        cluster.start_daemons()  # the cluster boots while the local run below goes on
        cluster.start_server()

        local_spark = spark_server.session()
        local_spark.sql(f"CREATE DATABASE `{database}`")
        local = spark_pipelines(example_project(tmp_path / "local", database),
                                "--remote", spark_server.url, "run")
        assert local.returncode == 0, local.stdout[-3000:] + local.stderr[-3000:]
        expected = tables_of(local_spark, database)
        print(f"local run done at {time.monotonic() - started:.0f} s", flush=True)

        cluster.wait_until_ready()
        print(f"cluster ready at {time.monotonic() - started:.0f} s", flush=True)
        cluster_spark = cluster.session()
        cluster_spark.sql(f"CREATE DATABASE `{database}`")
        remote = spark_pipelines(example_project(tmp_path / "on-cluster", database),
                                 "--remote", cluster.url, "run")
        assert remote.returncode == 0, remote.stdout[-3000:] + remote.stderr[-3000:]
        assert "Run is COMPLETED" in remote.stdout + remote.stderr
        actual = tables_of(cluster_spark, database)
        print(f"cluster run done at {time.monotonic() - started:.0f} s", flush=True)

        assert set(expected) == EXAMPLE_TABLES
        assert all(expected[name]["rows"] for name in EXAMPLE_TABLES)
        assert actual == expected
        assert expected["orders_silver_quarantine"]["rows"], "the rules dropped nothing"

        # The work ran on the cluster: both executors (one per worker) finished tasks.
        tasks = cluster.tasks_per_executor()
        assert len(tasks) == 2 and all(tasks.values()), tasks

        # The cluster would have failed any Python UDF: it has no Python to start.
        add_one = F.udf(lambda x: x + 1, "long")
        with pytest.raises(Exception, match=re.escape(NO_PYTHON)):
            cluster_spark.range(3).select(add_one("id")).collect()
        local_spark.sql(f"DROP DATABASE `{database}` CASCADE")


# ------------------------------------------------------------------ plans hold no Python code
PYTHON_PLAN_NODES = (
    "python_udf",                               # @udf, pandas_udf, ... in an expression
    "common_inline_user_defined_function",      # any inline UDF (Python, Scala, Java)
    "common_inline_user_defined_table_function",  # Python UDTF
    "map_partitions",                           # mapInPandas / mapInArrow
    "group_map", "co_group_map",                # applyInPandas, cogroup
    "apply_in_pandas_with_state", "transform_with_state_in_pandas",
    "python_data_source",
)


class CapturingRegistry(sdp_runner.RecordingRegistry):
    """The harness registry, keeping the relation of every flow as sent to the server."""

    def __init__(self, spark: SparkSession, graph_id: str) -> None:
        super().__init__(spark, graph_id)
        self.relations: dict[str, str] = {}

    def register_flow(self, flow: Any) -> None:
        client = self._client
        send = client.execute_command

        def capture(command: Any, *args: Any, **kwargs: Any) -> Any:
            define = command.pipeline_command.define_flow
            self.relations[define.flow_name] = str(define.relation_flow_details.relation)
            return send(command, *args, **kwargs)

        client.execute_command = capture
        try:
            super().register_flow(flow)
        finally:
            del client.execute_command


def python_nodes(relation: str) -> list[str]:
    return [node for node in PYTHON_PLAN_NODES if re.search(rf"\b{node}\b", relation)]


def registered_relations(make_pipeline: MakePipeline, monkeypatch: pytest.MonkeyPatch,
                         definitions: Any = None, files: Optional[Path] = None,
                         conf: Optional[dict[str, str]] = None) -> dict[str, str]:
    monkeypatch.setattr(sdp_runner, "RecordingRegistry", CapturingRegistry)
    pipeline: Pipeline = make_pipeline(definitions, files=files, conf=conf)
    result = pipeline.run(dry=True)
    assert result.ok, result.output
    # run() registered through the CapturingRegistry patched in above.
    return cast(CapturingRegistry, pipeline.registry).relations


@pytest.mark.parametrize("project", [EXAMPLE, FAULTS_PROJECT], ids=["example", "streaming"])
def test_generated_flows_hold_no_python_code(make_pipeline: MakePipeline,
                                             monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path, project: Path) -> None:
    copy = copy_project(project, tmp_path / "project")
    (copy / "inbox").mkdir(exist_ok=True)  # the streaming fixture's source folder
    spec = yaml.safe_load((copy / "spark-pipeline.yml").read_text())
    relations = registered_relations(make_pipeline, monkeypatch,
                                     files=copy / "transformations",
                                     conf=spec.get("configuration") or {})
    # the unread check views (one per rule and one of the query: SDPX-DEF-111) are
    # checked for Python code like every other flow
    checks = {name for name in relations if name.startswith("_sdpx_check_")}
    if project == EXAMPLE:
        target = "orders_silver"
        assert set(relations) - checks == EXAMPLE_TABLES
        assert "_sdpx_check_orders_silver_0" in checks
    else:
        target = "orders"
        # The batch log's flow is registered as SQL text (its watermark); the view of
        # its per-record inputs is a relation like the others.
        assert set(relations) - checks == {"orders", "orders_to_quarantine",
                                           "_sdpx_batch_input_orders", "orders_dq_metrics"}
        assert "_sdpx_check_orders_0" in checks
    assert {name: python_nodes(text) for name, text in relations.items()} == {
        name: [] for name in relations}
    # The rules travel as Spark SQL text (expression_string), evaluated by the JVM.
    # The target's filter holds the drop rules as written (RuleLogic.passes(in_filter=True)); the
    # quarantine's holds them NULL-safe.
    assert "expression_string" in relations[target]
    assert "(amount >= 0)" in relations[target]
    quarantine = "orders_silver_quarantine" if project == EXAMPLE else "orders_to_quarantine"
    assert "coalesce((amount >= 0), false)" in relations[quarantine]


def test_python_code_in_a_flow_would_be_seen(make_pipeline: MakePipeline,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a rule-checked dataset with a Python UDF is flagged."""
    def define(spark: SparkSession) -> None:
        add_one = F.udf(lambda x: x + 1, "long")

        @dp.materialized_view
        @dp.expect_or_drop("small", "x < 3")
        def with_udf() -> Any:
            return spark.range(3).select(add_one("id").alias("x"))

    relations = registered_relations(make_pipeline, monkeypatch, definitions=define)
    assert "python_udf" in python_nodes(relations["with_udf"])
