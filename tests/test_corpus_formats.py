"""The corpus on a table format: the projects of ``tests/corpus`` with
``sdp_expect.format`` in their spec, run with ``sdp-expect run --format json
--remote URL`` on the format's server (one for the module, as ``sdp-expect run``
starts a project's: ``format_server.py``), three updates each, and after every update
every table of the project's database read through Spark and compared with the same
plain-Python oracle as on parquet (``corpus_oracle.py``). The projects between them
hold drop, warn and fail rules, rule files, tolerances, temporary views, streaming
tables over files and over other streaming tables, joins, aggregates and SQL notebooks
(``test_corpus.py::test_the_corpus_covers_what_it_is_for``); every companion
(quarantine, metrics, batch log) must come out as on parquet, stored in the format.

Runs on the lines that have a release of the format (docs/formats.md), with the
``table_formats`` marker (docs/testing.md).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPO, sdp_expect
from corpus_oracle import ORACLES
from corpus_project import CORPUS, UPDATES, CorpusProject, assert_tables_equal, three_updates
from sdp_runner import SparkServer

from sdp_expect.base.names import EVENT_LOG_VIEW, HISTORY_TABLE
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT
from sdp_expect.migrate import NOT_CONVERTED, migrate

pytestmark = pytest.mark.table_formats

_PROJECTS: dict[str, dict[str, CorpusProject]] = {}

FORMAT_PROJECTS = ("bike_rides", "iot_devices", "loans", "station_status")
"""The corpus projects run on a format: the three that use ``dropDuplicates`` (the
reads routing rewrites on 4.1 and 4.2) and ``loans``, Delta Live Tables Python
(``import dlt``), the code most pipelines moved off Databricks are written in. Between
them: pyspark.pipelines Python, a Delta Live Tables SQL notebook, a Databricks
notebook export, streaming tables over files and over streaming tables, joins,
aggregates, drop, warn and fail rules, a whole-pipeline quarantine. The other two run
on parquet on the newest line: ``retail_orders`` (Databricks SQL notebooks, as
``iot_devices``' SQL) and ``loan_risk`` (rule files: the same compiled rules as
decorators). An update on Delta costs two to three times one on parquet, and the two
cost 240 s of the 4.1 line's two cores (docs/testing.md, "Lines")."""


def _provider(spark: Any, database: str, table: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED `{database}`.`{table}`").collect()
    return next(str(row[1]) for row in rows if row[0] == "Provider").lower()


@pytest.mark.parametrize("name", FORMAT_PROJECTS)
def test_every_table_after_each_of_three_updates_in_the_format(
        format_server_of: tuple[str, SparkServer], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    table_format, server = format_server_of
    done = _PROJECTS.setdefault(table_format, {})
    project = three_updates(server, tmp_path_factory.mktemp(f"{table_format}-{name}"), name,
                            done, configuration={KEY_TABLE_FORMAT: table_format})
    for update, actual, expected in zip(UPDATES, project.snapshots, project.expected,
                                        strict=True):
        assert_tables_equal(actual, expected.tables,
                            f"{name} on {table_format}, after update {update}")
    stored = {table: _provider(project.spark, project.database, table)
              for table in project.snapshots[-1]}
    assert set(stored.values()) == {table_format}, stored


def test_the_format_projects_are_corpus_projects_with_every_routed_read() -> None:
    """A project renamed in the corpus must not drop out of the format's runs, and the
    projects whose reads routing rewrites (``dropDuplicates``) all run on the format."""
    assert set(FORMAT_PROJECTS) <= set(ORACLES)
    routed = {name for name in ORACLES
              if any("dropDuplicates" in path.read_text()
                     for path in (CORPUS / name).rglob("*") if path.suffix in (".py", ".sql"))}
    assert routed and routed <= set(FORMAT_PROJECTS), routed



# ---------------------------------------------------------------------------------------
# A Lakeflow project on Delta, migrated
# ---------------------------------------------------------------------------------------
ORDERS_DELTA = REPO / "tests" / "fixtures" / "lakeflow" / "orders_delta"
"""An exported Databricks notebook (``import dlt``, Auto Loader from a volume, Delta table
properties, drop and warn rules) and a Databricks SQL notebook (``CREATE OR REFRESH
MATERIALIZED VIEW ... USING DELTA TBLPROPERTIES``, a fail rule, ``LIVE.``)."""

ORDER_FILES: tuple[list[dict[str, Any]], ...] = (
    [{"order_id": 1, "customer": "ann", "amount": 20.0, "country": "de"},
     {"order_id": 2, "customer": "bob", "amount": 5.5, "country": "fr"},
     {"order_id": None, "customer": "cy", "amount": 7.0, "country": "nl"},
     {"order_id": 4, "customer": "dan", "amount": -3.0, "country": "de"},
     {"order_id": 5, "customer": "eve", "amount": 12.0, "country": "us"}],
    [{"order_id": 6, "customer": "fay", "amount": 8.0, "country": "nl"},
     {"order_id": 7, "customer": "gus", "amount": 0.0, "country": "fr"},
     {"order_id": 8, "customer": "hal", "amount": 2.5, "country": "de"}],
)
"""The files that land before each update: the second update is the one plain SDP fails
on a dataset declared Delta (DELTA_CANNOT_CHANGE_PROVIDER)."""


def _orders_oracle(landed: list[dict[str, Any]]) -> dict[str, list[tuple[Any, ...]]]:
    """The migrated pipeline's tables, in plain Python: the Lakeflow rules as Databricks
    applies them (a NULL result drops)."""
    clean = [(o["order_id"], o["customer"], o["amount"], o["country"].upper())
             for o in landed if o["order_id"] is not None and o["amount"] > 0]
    revenue: dict[str, tuple[float, int]] = {}
    for _, _, amount, country in clean:
        total, count = revenue.get(country, (0.0, 0))
        revenue[country] = (total + amount, count + 1)
    return {"orders_raw": sorted((o["amount"], o["country"], o["customer"], o["order_id"])
                                 for o in landed),
            "orders_clean": sorted(clean, key=repr),
            "revenue_by_country": sorted((c, t, n) for c, (t, n) in revenue.items())}


def test_a_migrated_lakeflow_project_keeps_its_delta_tables_and_updates_again(
        format_server_of: tuple[str, SparkServer], tmp_path: Path) -> None:
    """Issue 45, point 5: ``migrate`` converts the project with nothing left over, keeps
    ``USING DELTA`` and the Delta table properties and writes ``sdp_expect.format:
    delta``; the result runs twice with ``sdp-expect run`` on Delta's server, and every
    table, read through Spark, is Delta, keeps its properties and holds what the oracle
    gives."""
    name, server = format_server_of
    if name != "delta":
        pytest.skip(f"the project is written for Delta, not {name}")
    src = Path(shutil.copytree(ORDERS_DELTA, tmp_path / "src"))
    landing = tmp_path / "data" / "landing" / "orders"
    landing.mkdir(parents=True)
    result = migrate(src, tmp_path / "dst", data_root=str(tmp_path / "data"))
    assert result.of(NOT_CONVERTED) == [], result.of(NOT_CONVERTED)
    assert result.configuration[KEY_TABLE_FORMAT] == "delta"
    project = tmp_path / "dst"
    database = f"orders_delta_{uuid.uuid4().hex[:8]}"
    spec = project / "spark-pipeline.yml"
    spec.write_text(spec.read_text() + f"database: {database}\n")
    spark = server.session()
    spark.sql(f"CREATE DATABASE `{database}`")
    landed: list[dict[str, Any]] = []
    for update, rows in enumerate(ORDER_FILES):
        (landing / f"part-{update}.json").write_text(
            "".join(json.dumps(row) + "\n" for row in rows))
        landed += rows
        done = sdp_expect("run", "--format", "json", "--remote", server.url, cwd=project)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
        summary = {d["dataset"]: d for d in json.loads(done.stdout)["datasets"]}
        # A streaming table's counts add up every record since its last full refresh
        # (docs/semantics.md).
        dropped = sum(1 for row in landed if row["order_id"] is None or row["amount"] <= 0)
        assert (summary["orders_clean"]["total_records"],
                summary["orders_clean"]["dropped_records"]) == (len(landed), dropped), summary
        expected = _orders_oracle(landed)
        for table, want in expected.items():
            frame = spark.read.table(f"`{database}`.{table}")
            got = [tuple(row) for row in frame.select(*sorted(frame.columns)).collect()] \
                if table == "orders_raw" else [tuple(row) for row in frame.collect()]
            assert sorted(got, key=repr) == sorted(want, key=repr), (update, table)
    properties = {table: {row[0]: row[1] for row in spark.sql(
        f"SHOW TBLPROPERTIES `{database}`.{table}").collect()}
        for table in ("orders_raw", "orders_clean", "revenue_by_country")}
    assert properties["orders_raw"]["delta.appendOnly"] == "true"
    assert properties["orders_clean"]["delta.enableChangeDataFeed"] == "true"
    assert properties["revenue_by_country"]["quality"] == "gold"
    tables = {t.name for t in spark.catalog.listTables(database)} - {EVENT_LOG_VIEW}
    assert {"orders_clean_dq_metrics", HISTORY_TABLE} <= tables, tables
    assert {_provider(spark, database, table) for table in tables} == {"delta"}, tables
