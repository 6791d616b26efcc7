"""The Databricks SQL examples of the Lakeflow expectations docs, run on open-source SDP.

``tests/fixtures/sql/lakeflow_docs/`` holds the examples as the docs write
them. They run unchanged through ``sql.include``, except that their sources
(``orders_bronze``, ``orders_raw``, ``datasets.samples.raw_customers``) are
made here: a three-part Unity Catalog name and ``read_files`` do not exist in
open-source Spark (``test_sql_translate.py`` shows ``read_files`` is refused
with SDPX-SQL-301).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Optional

from sdp_runner import MakePipeline, RunResult

DOCS = Path(__file__).resolve().parent / "fixtures" / "sql" / "lakeflow_docs"

SOURCES = """\
from sdp_expect import pipelines as dp
from sdp_expect import sql

LANDING = {landing!r}
ORDERS = "order_id INT, customer_id STRING, amount DOUBLE, order_date DATE"


def orders(folder):
    return spark.readStream.schema(ORDERS).json(f"{{LANDING}}/{{folder}}")


@dp.table
def orders_bronze():
    return orders("bronze")


@dp.table
def orders_landing():
    return orders("landing")


@dp.table
def raw_customers():
    return spark.readStream.schema("name STRING, age INT").json(f"{{LANDING}}/customers")


sql.include("../databricks_sql/")
"""

# The warn example reads read_files(...); here it reads the landing table instead.
WARN = """\
-- Warn: write invalid records but track them in metrics
CREATE OR REFRESH STREAMING TABLE orders_raw (
CONSTRAINT valid_order_id EXPECT (order_id IS NOT NULL)
) AS SELECT * FROM STREAM(orders_landing);
"""

GROUP_BY = """\
CREATE OR REFRESH MATERIALIZED VIEW revenue_by_customer (
  CONSTRAINT has_customer EXPECT (customer_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT revenue_not_negative EXPECT (revenue >= 0) ON VIOLATION FAIL UPDATE
) AS SELECT customer_id, sum(amount) AS revenue, count(*) AS orders
FROM LIVE.orders_silver
GROUP BY customer_id;
"""


def write(folder: Path, name: str, rows: list[dict[str, object]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(row) + "\n" for row in rows))


def order(order_id: Optional[int], customer_id: Optional[str], amount: float,
          day: str = "2024-01-02") -> dict[str, object]:
    return {"order_id": order_id, "customer_id": customer_id, "amount": amount, "order_date": day}


def metrics(result: RunResult, dataset: str) -> dict[str, tuple[int, int, int]]:
    return {r["expectation"]: (r["passed_records"], r["failed_records"], r["dropped_records"])
            for r in result.rows(f"{dataset}_dq_metrics")}


def test_lakeflow_docs_examples_run_as_documented(make_pipeline: MakePipeline,
                                                  tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write(landing / "bronze", "1.json", [
        order(1, "c1", 10.0), order(None, "c2", 5.0), order(3, "c1", 0.0, "2019-05-01"),
        order(4, None, 7.0)])
    write(landing / "landing", "1.json", [
        order(11, "c1", 3.0), order(None, "c2", -4.0), order(13, "c3", 8.0)])
    write(landing / "customers", "1.json", [
        {"name": "ann", "age": 30}, {"name": "bo", "age": 150}, {"name": "cy", "age": None}])

    project = tmp_path / "project"
    (project / "databricks_sql").mkdir(parents=True)
    for name in ("several_constraints.sql", "warn_drop_fail.sql"):
        (project / "databricks_sql" / name).write_text((DOCS / name).read_text())
    (project / "databricks_sql" / "customers.sql").write_text(
        (DOCS / "customers.sql").read_text().replace("datasets.samples.raw_customers",
                                                     "raw_customers"))
    (project / "databricks_sql" / "orders_raw.sql").write_text(WARN)
    (project / "databricks_sql" / "revenue.sql").write_text(GROUP_BY)
    (project / "transformations").mkdir()
    (project / "transformations" / "sources.py").write_text(
        textwrap.dedent(SOURCES).format(landing=str(landing)))
    pipeline = make_pipeline(files=project / "transformations")

    first = pipeline.run()
    assert first.ok, first.output
    # Several constraints: drop, fail (holds), warn.
    assert sorted(r["order_id"] for r in first.rows("orders_silver")) == [1, 3, 4]
    assert metrics(first, "orders_silver") == {
        "valid_id": (3, 1, 1), "valid_amount": (4, 0, 1), "recent": (3, 1, 1)}
    # Warn keeps the record and counts it; drop leaves it out; fail holds.
    assert first.table("orders_raw").count() == 3
    assert metrics(first, "orders_raw") == {"valid_order_id": (2, 1, 0)}
    assert sorted(r["order_id"] for r in first.rows("orders_clean")) == [11, 13]
    assert metrics(first, "orders_clean") == {"non_negative_amount": (2, 1, 1)}
    assert sorted(r["order_id"] for r in first.rows("orders_critical")) == [11, 13]
    # A warn rule on a streaming table over STREAM(...) of another source.
    assert first.table("customers").count() == 3
    assert metrics(first, "customers") == {"valid_customer_age": (1, 2, 0)}
    # A materialized view with GROUP BY.
    assert sorted((r["customer_id"], r["revenue"]) for r in first.rows("revenue_by_customer")) \
        == [("c1", 10.0)]
    assert metrics(first, "revenue_by_customer") == {
        "has_customer": (1, 1, 1), "revenue_not_negative": (2, 0, 1)}

    # Fail: an order without a customer reaches orders_critical.
    write(landing / "landing", "2.json", [order(14, None, 2.0)])
    second = pipeline.run()
    assert not second.ok
    assert ("[EXPECTATION_VIOLATION] Flow 'orders_critical' failed to meet the expectation. "
            "Violated expectations: 'required_customer_id'. Output record: "
            """'{"order_id":14,"customer_id":null,"amount":2.0,"order_date":"2024-01-02"}'.""") \
        in second.output, second.output
    running = [e for e in second.flow_events("orders_critical") if "is RUNNING" in e]
    assert len(running) == 1, second.flow_events("orders_critical")
    assert sorted(r["order_id"] for r in second.rows("orders_critical")) == [11, 13]
    assert second.flow_state("orders_silver") == "COMPLETED"
