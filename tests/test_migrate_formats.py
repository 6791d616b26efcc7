"""A Lakeflow project written for Delta, migrated, then run on Delta (issue 45, point 5):
``sdp-expect migrate`` converts ``tests/fixtures/lakeflow/orders_delta`` with nothing left
over, keeps ``USING DELTA`` and the Delta table properties and writes ``sdp_expect.format:
delta``; ``sdp-expect run`` runs the result twice on the format's server (the second
update is the one plain SDP fails on a dataset declared Delta), and every table, read
through Spark, is Delta, keeps its properties and holds what a plain-Python oracle gives.

A module of its own, with its own server (``format_server_of``), so that the test runner
can give it to another worker than the corpus on the format (docs/testing.md).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPO, sdp_expect
from format_server import provider
from sdp_runner import SparkServer

from sdp_expect.base.names import EVENT_LOG_VIEW, HISTORY_TABLE
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT
from sdp_expect.migrate import NOT_CONVERTED, migrate

pytestmark = pytest.mark.table_formats

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
        pytest.skip(f"the Lakeflow project under test declares its tables USING DELTA, so it "
                    f"migrates to a Delta project only; on {name} there is nothing of it to run")
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
    assert {provider(spark, f"`{database}`.`{table}`") for table in tables} == {"delta"}, tables
