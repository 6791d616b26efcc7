"""True ``spark-pipelines`` command-line runs, end to end (a few: each takes ~20 s).

The example project for the installed Spark is copied to a temporary folder,
run, run again (the catalog persists between runs), dry-run, and inspected;
small projects show the exit code and the error line of a failed expectation.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from cli_helpers import (
    OLDEST_LINE,
    sdp_expect,
    served,
    set_storage,
    spark_pipelines,
    user_env,
    write_project,
)
from sdp_runner import copy_project

from sdp_expect.cli.after_run import all_flows_completed
from sdp_expect.runtime.spark_pipelines import EventLog

REPO = Path(__file__).resolve().parent.parent
SPARK = tuple(int(part) for part in pyspark.__version__.split(".")[:2])
EXAMPLE = "spark42" if SPARK >= (4, 2) else "spark41"
HIVE = ["--conf", "spark.sql.catalogImplementation=hive"]

pytestmark = pytest.mark.usefixtures("own_jvm")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    project = copy_project(REPO / "examples" / EXAMPLE, tmp_path / EXAMPLE)
    set_storage(project, tmp_path / "storage")
    return project


def _first_moment_all_flows_completed(output: str) -> tuple[dict[str, str], EventLog]:
    """The flows' states when every flow had first completed (what `sdp-expect run`
    starts its summary on, cli/after_run.py), and everything the run said."""
    events, seen = EventLog(), None
    for line in output.splitlines():
        if events.feed(line) and seen is None and all_flows_completed(events.flows):
            assert events.run_state is None, "the run ended before its flows completed"
            seen = dict(events.flows)
    assert seen is not None, output
    return seen, events


@OLDEST_LINE  # the line scripts/run-example.sh runs it on
def test_example_runs_twice_and_shows_its_tables(example: Path) -> None:
    first = spark_pipelines(example, *HIVE, "run")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Run is COMPLETED" in first.stdout + first.stderr
    # SDP queues every flow of a run before any starts: when all flows seen have
    # completed, they are all the run's flows, and the run then ends as COMPLETED.
    seen, events = _first_moment_all_flows_completed(first.stdout)
    assert seen == events.flows and len(seen) == 6, seen
    assert events.run_state == "COMPLETED"
    second = spark_pipelines(example, *HIVE, "run")
    assert second.returncode == 0, second.stdout + second.stderr
    shown = subprocess.run([sys.executable, str(REPO / "scripts" / "show_tables.py"), "."],
                           cwd=example, env=user_env(), capture_output=True, text=True,
                           timeout=300, check=False)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    # After the second update too, every table holds that update's records (the
    # quarantine once read the previous update's bronze while it was recreated).
    for table, rows in [("orders_bronze", 10), ("orders_silver", 6),
                        ("orders_silver_quarantine", 4), ("orders_silver_dq_metrics", 3),
                        ("revenue_by_customer", 6), ("revenue_by_customer_dq_metrics", 1)]:
        assert f"== {table} ({rows} rows)" in shown.stdout, shown.stdout


def test_example_dry_run_passes(example: Path) -> None:
    result = spark_pipelines(example, "dry-run")
    assert result.returncode == 0, result.stdout + result.stderr


def test_violated_fail_rule_exits_non_zero_and_prints_the_record(tmp_path: Path) -> None:
    project = write_project(tmp_path / "failing", """\
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp

        spark = SparkSession.active()

        @dp.materialized_view
        def raw():
            return spark.sql("SELECT * FROM VALUES (1, 5), (2, -3) AS t(id, amount)")

        @dp.materialized_view
        @dp.expect_or_fail("amount_not_negative", "amount >= 0")
        def checked():
            return spark.read.table("raw")
        """)
    result = spark_pipelines(project, "run")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    line = ("[EXPECTATION_VIOLATION] Flow 'checked' failed to meet the expectation. "
            "Violated expectations: 'amount_not_negative'. "
            "Output record: '{\"id\":2,\"amount\":-3}'.")
    assert line in output, output
    assert output.count("default.checked is RUNNING") == 1, output


def test_constraint_on_missing_column_fails_dry_run(tmp_path: Path) -> None:
    project = write_project(tmp_path / "missing", """\
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp

        spark = SparkSession.active()

        @dp.materialized_view
        @dp.expect_or_drop("valid_customer", "customer_id IS NOT NULL")
        def checked():
            return spark.sql("SELECT * FROM VALUES (1, 5) AS t(id, amount)")
        """)
    result = spark_pipelines(project, "dry-run")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "customer_id" in output


def test_definition_mistake_stops_the_run_before_any_flow(tmp_path: Path) -> None:
    project = write_project(tmp_path / "mistake", """\
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp

        spark = SparkSession.active()

        @dp.materialized_view
        @dp.expect_all_or_drop("valid_id", "id IS NOT NULL")
        def checked():
            return spark.sql("SELECT 1 AS id")
        """)
    result = spark_pipelines(project, "run")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "[SDPX-DEF-101]" in output and "dataset 'checked'" in output
    assert "is QUEUED" not in output



@OLDEST_LINE
def test_sdp_expect_run_checks_key_rules_on_a_materialized_view_and_a_streaming_table(
        tmp_path: Path) -> None:
    """Both key rules (docs/dataset-rules.md) through ``sdp-expect run``: the drop of a
    duplicated key, a reference to a dataset of the pipeline, the summary and the
    tables (exactly the query's columns); and a reference on a streaming table (a
    stream-static join with the pipeline's materialized view)."""
    landing = tmp_path / "payments"
    landing.mkdir()
    (landing / "1.json").write_text("".join(
        json.dumps({"payment_id": p, "customer_id": c}) + "\n"
        for p, c in [(1, 1), (2, 5), (3, None), (4, 2)]))
    project = write_project(tmp_path / "keys", """\
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp

        spark = SparkSession.active()

        @dp.materialized_view
        def customers():
            return spark.sql("SELECT * FROM VALUES (1), (2) AS t(id)")

        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("order_once", dp.unique("order_id"))
        @dp.expect("customer_known", dp.references("customers", "customer_id", to="id"))
        def orders():
            return spark.sql("SELECT * FROM VALUES (10, 1), (10, 2), (11, 3), (12, NULL), "
                             "(13, 2) AS t(order_id, customer_id)")

        @dp.table
        @dp.expect_or_drop("customer_known", dp.references("customers", "customer_id", to="id"))
        def payments():
            return spark.readStream.schema("payment_id INT, customer_id INT").json("LANDING")
        """.replace("LANDING", str(landing)))
    with served(project, keep_tables=True) as warm:
        result = sdp_expect("run", cwd=project / "transformations")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    summary = out[out.index("== Data quality"):]
    assert re.search(r"^    order_once +drop +3 +2 +40\.0%$", summary, re.MULTILINE), summary
    assert re.search(r"^    customer_known +warn +4 +1 +20\.0%$", summary, re.MULTILINE), summary
    tables = warm.tables
    assert sorted((r["order_id"], r["customer_id"]) for r in tables["orders"]) == [
        (11, 3), (12, None), (13, 2)]
    assert list(tables["orders"][0]) == ["order_id", "customer_id"]
    assert sorted((r["order_id"], r["_failed_expectations"])
                  for r in tables["orders_quarantine"]) == [(10, ["order_once"]),
                                                            (10, ["order_once"])]
    metrics = {r["expectation"]: r for r in tables["orders_dq_metrics"]}
    assert metrics["customer_known"]["constraint"] == (
        "FOREIGN KEY (customer_id) REFERENCES customers (id)")
    # the streaming table: customer 5 is unknown (dropped), a NULL customer passes
    payments = summary[summary.index("\npayments"):]
    assert re.search(r"^    customer_known +drop +3 +1 +25\.0%$", payments, re.MULTILINE), payments
    assert sorted(r["payment_id"] for r in tables["payments"]) == [1, 3, 4]
    (streamed,) = tables["payments_dq_metrics"]
    assert (streamed["failed_records"], streamed["total_records"],
            streamed["dropped_records"]) == (1, 4, 1)
