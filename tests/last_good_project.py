"""A project whose fourth update a fail rule stops, run with ``sdp-expect run --format
json --remote URL`` on a server the test gives (the shared one: parquet; a table
format's: ``format_server.py``), every table read back through Spark after each update
and compared with what the rules give (``test_last_good_runs.py``,
``test_table_formats_spark.py``).

``orders`` drops records without an id (quarantined) and fails on one without an amount;
``totals`` reads ``orders``. Updates: two good ones, one whose new record has no amount,
then a good one again (the bad record gone).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from cli_helpers import sdp_expect, write_project
from sdp_runner import SparkServer

from sdp_expect.base import names

CODE = """\
    from pyspark.sql import SparkSession

    from sdp_expect import pipelines as dp

    spark = SparkSession.active()


    @dp.materialized_view
    @dp.expect_or_drop("valid_id", "id IS NOT NULL")
    @dp.expect_or_fail("amount_known", "amount IS NOT NULL")
    @dp.quarantine()
    def orders():
        return spark.read.table("raw")


    @dp.materialized_view
    def totals():
        return spark.sql("SELECT count(*) AS n, sum(amount) AS total FROM orders")
"""

Row = tuple[Optional[int], Optional[int]]

UPDATES: list[tuple[str, list[Row]]] = [
    ("good", [(1, 10), (None, 5)]),
    ("good", [(1, 10), (None, 5), (2, 20)]),
    ("failing", [(1, 10), (None, 5), (2, 20), (3, None)]),
    ("good", [(1, 10), (None, 5), (2, 20), (4, 40)]),
]
"""Each update: whether a fail rule stops it, and the source's records."""

FAILING_MESSAGE = ("[EXPECTATION_VIOLATION] Flow 'orders' failed to meet the expectation. "
                   "Violated expectations: 'amount_known'. "
                   "Output record: '{\"id\":3,\"amount\":null}'.")
"""The fail rule's message in the failing update, on every format."""


@dataclass
class Tables:
    """The tables the rules give for a source's records."""

    orders: list[Row]
    quarantine: list[Row]
    totals: tuple[int, Optional[int]]
    metrics: dict[str, tuple[int, int]]
    """Rule -> (failed, total)."""

    @classmethod
    def of(cls, rows: list[Row]) -> Tables:
        kept = [r for r in rows if r[0] is not None]
        amounts = [r[1] for r in kept if r[1] is not None]
        return cls(sorted(kept, key=str), [r for r in rows if r[0] is None],
                   (len(kept), sum(amounts) if amounts else None),
                   {"valid_id": (sum(r[0] is None for r in rows), len(rows)),
                    "amount_known": (sum(r[1] is None for r in rows), len(rows))})


@dataclass
class LastGoodProject:
    """The project, its database on ``server``, and a session to read it."""

    root: Path
    database: str
    server: SparkServer

    @classmethod
    def create(cls, server: SparkServer, root: Path, configuration: str = "") -> LastGoodProject:
        database = f"last_good_{uuid.uuid4().hex[:8]}"
        write_project(root, CODE, configuration=configuration)
        spec = root / "spark-pipeline.yml"
        spec.write_text(spec.read_text() + f"database: {database}\n")
        spark = server.session()
        spark.sql(f"CREATE DATABASE `{database}`")
        spark.sql(f"CREATE TABLE `{database}`.raw (id INT, amount INT)")
        return cls(root, database, server)

    def update(self, rows: list[Row]) -> tuple[int, dict[str, Any], str]:
        """Put ``rows`` in the source, run: the exit status, JSON summary and events."""
        values = ", ".join(f"({'NULL' if i is None else i}, {'NULL' if a is None else a})"
                           for i, a in rows)
        self.server.session().sql(f"INSERT OVERWRITE `{self.database}`.raw VALUES {values}")
        done = sdp_expect("run", "--format", "json", "--remote", self.server.url,
                          cwd=self.root)
        return done.returncode, json.loads(done.stdout), done.stderr

    def history(self) -> list[list[dict[str, Any]]]:
        """The history table's rows, one list per recorded update, oldest first."""
        rows = [row.asDict() for row in self.server.session().sql(
            f"SELECT * FROM `{self.database}`.`{names.HISTORY_TABLE}`").collect()]
        updates: dict[str, list[dict[str, Any]]] = {}
        for row in sorted(rows, key=lambda r: (r["update_time"], r["update_id"])):
            updates.setdefault(row["update_id"], []).append(row)
        return list(updates.values())

    def tables(self) -> Tables:
        """The tables as Spark reads them."""
        spark = self.server.session()

        def rows(table: str) -> list[Row]:
            return [(r["id"], r["amount"]) for r in spark.sql(
                f"SELECT id, amount FROM `{self.database}`.{table}").collect()]

        totals = spark.sql(f"SELECT n, total FROM `{self.database}`.totals").collect()
        metrics = {str(r["expectation"]): (int(r["failed_records"]), int(r["total_records"]))
                   for r in spark.sql(
                       f"SELECT * FROM `{self.database}`.orders_dq_metrics").collect()}
        return Tables(sorted(rows("orders"), key=str), rows("orders_quarantine"),
                      (int(totals[0]["n"]), totals[0]["total"]) if totals else (0, None),
                      metrics)
