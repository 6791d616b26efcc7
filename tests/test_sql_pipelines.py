"""Databricks SQL files on real pipelines: the same tables as the Python API.

One Databricks SQL file (``tests/fixtures/sql/pipeline/orders.sql``) is run
three ways over the same data and compared table by table with chispa:

- included unchanged with ``sql.include`` from a Python file of the pipeline;
- translated with ``sdp_expect.sql.translate_files`` and saved as a plain
  ``.sql`` file of the pipeline (what ``sdp-expect translate`` prints);
- written with the Python API (``pipelines.py`` below).
"""

from __future__ import annotations

import functools
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sdp_runner import MakePipeline, Pipeline, RunResult, SparkServer

from sdp_expect import sql
from sdp_expect.base.names import (
    BATCH_TIME_COLUMN,
    QUARANTINE_TIME_COLUMN,
    QUARANTINE_UPDATE_COLUMN,
)

UPDATE_COLUMNS = (QUARANTINE_UPDATE_COLUMN, QUARANTINE_TIME_COLUMN)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sql"
SCHEMA = "order_id INT, customer STRING, amount DOUBLE, order_date DATE, region STRING"
COLUMNS = ["order_id", "customer", "amount", "order_date", "region"]
ROWS = [
    (1, "alice", 120.5, "2024-01-03", "eu"),
    (2, "bob", 35.0, "2024-01-04", "us"),
    (3, "carol", -12.0, "2024-01-05", "eu"),
    (None, "dave", 80.0, "2024-01-05", "us"),
    (5, None, 15.0, "2019-12-31", "eu"),
    (6, "erin", None, "2024-02-01", None),
    (7, "alice", 60.0, "2024-02-02", "eu"),
]

BRONZE = """\
from sdp_expect import pipelines as dp

INBOX = {inbox!r}
SCHEMA = {schema!r}


@dp.table
def orders_bronze():
    return spark.readStream.schema(SCHEMA).json(INBOX)


@dp.materialized_view
def orders_batch():
    return spark.read.schema(SCHEMA).json(INBOX)
"""

INCLUDE = """\
from sdp_expect import sql
from sdp_expect.base.names import BATCH_TIME_COLUMN

sql.include("../databricks_sql/")
"""

PYTHON = """\
from sdp_expect import pipelines as dp


@dp.table(comment="Orders with an id", table_properties={{"quality": "silver"}})
@dp.quarantine()
@dp.expect_or_drop("valid_id", "order_id IS NOT NULL")
@dp.expect_or_fail("valid_amount", "amount IS NULL OR amount > -1000")
@dp.expect("recent", "order_date >= '2020-01-01'")
def orders_silver():
    return spark.readStream.table("orders_bronze")


@dp.materialized_view
@dp.quarantine()
@dp.expect_or_drop("has_customer", "customer is not null")
@dp.expect("big", "revenue < 100")
def revenue():
    return spark.sql("select customer, sum(amount) as revenue, count(*) as orders "
                     "from orders_silver group by customer")


@dp.temporary_view
@dp.expect_or_drop("eu", "region = 'eu'")
def eu_orders():
    return spark.read.table("orders_batch")


@dp.materialized_view
def eu_summary():
    return spark.sql("SELECT count(*) AS n, sum(amount) AS total FROM eu_orders")


@dp.materialized_view
def customers():
    return spark.sql("SELECT DISTINCT customer FROM orders_batch")


dp.create_streaming_table("events", expect_all_or_drop={{"positive": "amount > 0"}},
                          expect_all={{"known": "customer IS NOT NULL"}})


@dp.append_flow(target="events", name="events_from_orders")
def events_from_orders():
    return spark.readStream.table("orders_bronze").select("order_id", "customer", "amount")


@dp.materialized_view
@dp.quarantine()
@dp.expect("positive_id", "order_id > 0")
@dp.expect_from_file({rules!r})
def checked_by_file():
    return spark.read.table("orders_batch")


@dp.materialized_view
@dp.metrics(False)
@dp.expect_or_drop("big", "amount > 50")
def big_orders():
    return spark.read.table("orders_batch").select("order_id", "amount")
"""

TABLES = [
    "orders_silver", "orders_silver_quarantine", "orders_silver_dq_batches",
    "orders_silver_dq_metrics",
    "revenue", "revenue_quarantine", "revenue_dq_metrics",
    "eu_summary", "customers",
    "events", "events_dq_batches", "events_dq_metrics",
    "checked_by_file", "checked_by_file_quarantine", "checked_by_file_dq_metrics",
    "big_orders",
]


def write_project(root: Path, inbox: Path, files: dict[str, str]) -> Path:
    """A pipeline folder: transformations/ (what the spec loads) and anything beside it."""
    transformations = root / "transformations"
    transformations.mkdir(parents=True)
    (transformations / "bronze.py").write_text(
        BRONZE.format(inbox=str(inbox), schema=SCHEMA))
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return transformations


def write_orders(inbox: Path) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(dict(zip(COLUMNS, row, strict=True))) for row in ROWS]
    (inbox / "1.json").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def runs(spark_server: SparkServer, tmp_path_factory: pytest.TempPathFactory
         ) -> dict[str, RunResult]:
    """The same pipeline run three ways: included SQL, saved translation, Python."""
    root = tmp_path_factory.mktemp("sql-equivalence")
    inbox = root / "inbox"
    write_orders(inbox)
    sql_project = root / "included"
    shutil.copytree(FIXTURES / "pipeline", sql_project / "databricks_sql")
    included = write_project(sql_project, inbox, {"transformations/include_sql.py": INCLUDE})

    translation = sql.translate_files([str(sql_project / "databricks_sql" / "orders.sql")])
    saved = write_project(root / "saved", inbox,
                          {"transformations/orders.sql": translation[0].text})

    rules = str(FIXTURES / "pipeline" / "rules" / "orders.yml")
    python = write_project(root / "python", inbox,
                           {"transformations/pipelines.py": PYTHON.format(rules=rules)})
    results = {}
    for label, files in [("included", included), ("saved", saved), ("python", python)]:
        result = Pipeline(spark_server, root / f"runs-{label}", files=files).run()
        assert result.ok, f"{label}: {result.output}"
        results[label] = result
    return results


def every_row(result: RunResult) -> Any:
    """All rows of all :data:`TABLES` as one DataFrame ``(table, row as JSON)``: one job."""
    return functools.reduce(DataFrame.unionByName, [
        result.table(table).drop(BATCH_TIME_COLUMN, *UPDATE_COLUMNS).select(
            F.lit(table).alias("table"), F.to_json(F.struct("*")).alias("row"))
        for table in TABLES])  # a batch log's batch times and the updates differ by run


@pytest.mark.parametrize("way", ["included", "saved"])
def test_every_table_equals_the_python_pipeline_s(runs: dict[str, RunResult], way: str) -> None:
    expected, actual = runs["python"], runs[way]
    for table in TABLES:
        assert actual.table(table).schema == expected.table(table).schema, table
    assert_df_equality(every_row(actual), every_row(expected), ignore_row_order=True)


def test_the_tables_hold_what_the_contract_says(runs: dict[str, RunResult]) -> None:
    result = runs["included"]
    assert sorted(r["order_id"] for r in result.rows("orders_silver")) == [1, 2, 3, 5, 6, 7]
    quarantined = result.rows("orders_silver_quarantine")
    assert [(r["customer"], r["_failed_expectations"]) for r in quarantined] == [
        ("dave", ["valid_id"])]
    metrics = {r["expectation"]: r for r in result.rows("orders_silver_dq_metrics")}
    assert [metrics[n]["failed_records"] for n in ("valid_id", "valid_amount", "recent")] == [
        1, 0, 1]
    assert {r["total_records"] for r in metrics.values()} == {7}
    assert metrics["valid_amount"]["action"] == "fail"
    assert metrics["recent"]["constraint"] == "order_date >= '2020-01-01'"
    assert {r["order_id"] for r in result.rows("events")} == {None, 1, 2, 5, 7}
    assert result.rows("eu_summary") == [{"n": 4, "total": 183.5}]
    by_file = [r["expectation"] for r in result.rows("checked_by_file_dq_metrics")]
    assert sorted(by_file) == ["has_amount", "positive_id", "small"]
    assert not result.exists("big_orders_dq_metrics")
    assert not result.exists("eu_orders_dq_metrics")


def test_companion_flows_have_the_python_api_s_names(runs: dict[str, RunResult]) -> None:
    for way in ("included", "saved", "python"):
        result = runs[way]
        for flow in ("orders_silver", "orders_silver_to_quarantine",
                     "orders_silver_to_dq_batches", "events_from_orders",
                     "events_from_orders_to_dq_batches", "revenue_quarantine",
                     "orders_silver_dq_metrics"):
            assert result.flow_state(flow) == "COMPLETED", (way, flow, result.events)


def test_table_properties_and_comment_pass_on_but_sdp_expect_s_do_not(
        runs: dict[str, RunResult]) -> None:
    result = runs["included"]
    spark = result.spark
    described = spark.sql(f"SHOW TBLPROPERTIES `{result.database}`.orders_silver").collect()
    properties = {row["key"]: row["value"] for row in described}
    assert properties.get("quality") == "silver"
    assert not [key for key in properties if key.startswith("sdp_expect")]
    comment = [r for r in spark.sql(
        f"DESCRIBE TABLE EXTENDED `{result.database}`.orders_silver").collect()
        if r["col_name"] == "Comment"]
    assert comment and comment[0]["data_type"] == "Orders with an id"


# --------------------------------------------------------------------------- fail rules


def include_project(root: Path, sql_text: str, python: str = "") -> Path:
    """A project whose Python file includes one Databricks SQL file (and runs ``python``)."""
    (root / "databricks_sql").mkdir(parents=True)
    (root / "databricks_sql" / "pipeline.sql").write_text(textwrap.dedent(sql_text))
    transformations = root / "transformations"
    transformations.mkdir()
    (transformations / "include_sql.py").write_text(
        textwrap.dedent(python) + "\nfrom sdp_expect import sql\n\n"
        "sql.include('../databricks_sql/pipeline.sql')\n")
    return transformations


def test_a_violated_fail_rule_fails_its_flow_once_and_others_run(make_pipeline: MakePipeline,
                                                                 tmp_path: Path) -> None:
    files = include_project(tmp_path / "project", """\
        CREATE MATERIALIZED VIEW src AS
        SELECT * FROM VALUES (1, 5, 'eu'), (2, -5, NULL) AS t(id, amount, region);

        CREATE OR REFRESH MATERIALIZED VIEW checked (
          CONSTRAINT amount_positive EXPECT (amount > 0) ON VIOLATION FAIL UPDATE,
          CONSTRAINT has_region EXPECT (region IS NOT NULL) ON VIOLATION DROP ROW
        ) AS SELECT * FROM LIVE.src;

        CREATE LIVE TABLE downstream AS SELECT * FROM LIVE.checked;

        CREATE LIVE TABLE independent AS SELECT id FROM LIVE.src;

        -- Fails without expectations: retried as the pipeline says (once), because the
        -- translation sets the retries back after `checked`.
        CREATE LIVE TABLE retried AS
        SELECT CASE WHEN amount < 0 THEN raise_error('boom') ELSE amount END AS amount
        FROM LIVE.src;
        """)
    pipeline = make_pipeline(files=files, conf={"spark.sql.pipelines.maxFlowRetryAttempts": "1"})
    result = pipeline.run()
    assert not result.ok
    line = ("[EXPECTATION_VIOLATION] Flow 'checked' failed to meet the expectation. "
            "Violated expectations: 'amount_positive'. "
            """Output record: '{"id":2,"amount":-5,"region":null}'.""")
    assert line in result.output, result.output
    running = [e for e in result.flow_events("checked") if "is RUNNING" in e]
    assert len(running) == 1, result.flow_events("checked")
    assert result.flow_state("downstream") == "SKIPPED"
    assert result.flow_state("independent") == "COMPLETED"
    retried = [e for e in result.flow_events("retried") if "is RUNNING" in e]
    assert len(retried) == 2, result.flow_events("retried")


# ------------------------------------------------------------------ SQL and Python together


def test_sql_flows_and_python_flows_share_a_streaming_table_s_rules(make_pipeline: MakePipeline,
                                                                    tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    write_orders(inbox)
    files = include_project(tmp_path / "project", """\
        -- Rules declared in SQL; a Python append_flow writes the table.
        CREATE OR REFRESH STREAMING TABLE sql_declared (
          CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW
        ) TBLPROPERTIES ('sdp_expect.quarantine' = 'true');

        -- Rules declared in Python (create_streaming_table); this SQL flow writes it.
        CREATE FLOW into_python_declared AS INSERT INTO python_declared BY NAME
        SELECT order_id, amount FROM STREAM(orders_bronze);
        """, python=f"""\
        from sdp_expect import pipelines as dp

        @dp.table
        def orders_bronze():
            return spark.readStream.schema({SCHEMA!r}).json({str(inbox)!r})

        dp.create_streaming_table("python_declared", quarantine=True,
                                  expect_all_or_drop={{"not_negative": "amount >= 0"}})
        """)
    (files / "zz_python_flow.py").write_text(textwrap.dedent("""\
        from sdp_expect import pipelines as dp

        @dp.append_flow(target="sql_declared")
        def from_python():
            return spark.readStream.table("orders_bronze").select("order_id", "customer")
        """))
    result = make_pipeline(files=files).run()
    assert result.ok, result.output
    assert sorted(r["order_id"] for r in result.rows("sql_declared")) == [1, 2, 3, 5, 6, 7]
    assert [r["_failed_expectations"] for r in result.rows("sql_declared_quarantine")] == [
        ["valid_id"]]
    assert result.flows["from_python_to_quarantine"] == "sql_declared_quarantine"
    assert {r["order_id"] for r in result.rows("python_declared")} == {None, 1, 2, 5, 7}
    quarantined = {(r["order_id"], tuple(r["_failed_expectations"]))
                   for r in result.rows("python_declared_quarantine")}
    assert quarantined == {(3, ("not_negative",)), (6, ("not_negative",))}
    assert result.flow_state("into_python_declared_to_quarantine") == "COMPLETED"
    metrics = {r["expectation"]: r for r in result.rows("python_declared_dq_metrics")}
    assert metrics["not_negative"]["failed_records"] == 2


# --------------------------------------------------------------------------- errors at definition


def test_spark_s_syntax_error_in_a_query_names_the_databricks_sql_line(make_pipeline: MakePipeline,
                                                                       tmp_path: Path) -> None:
    files = include_project(tmp_path / "project", """\
        CREATE OR REFRESH MATERIALIZED VIEW fine AS SELECT 1 AS id;

        CREATE OR REFRESH MATERIALIZED VIEW broken (
          CONSTRAINT positive EXPECT (id > 0) ON VIOLATION DROP ROW
        ) AS SELECT id
             FROM (SELEC 2) AS t;
        """)
    result = make_pipeline(files=files).run()
    assert not result.ok
    message = str(result.error)
    assert "[SDPX-SQL-302]" in message, message
    assert "databricks_sql/pipeline.sql:6:" in message or "pipeline.sql:6:" in message, message
    assert "is QUEUED" not in result.output


def test_spark_s_other_errors_name_the_databricks_sql_statement(make_pipeline: MakePipeline,
                                                                tmp_path: Path) -> None:
    files = include_project(tmp_path / "project", """\
        CREATE OR REFRESH MATERIALIZED VIEW fine AS SELECT 1 AS id;

        CREATE OR REFRESH MATERIALIZED VIEW broken AS SELECT 1 AS id GROUP BY;
        """)
    result = make_pipeline(files=files).run()
    assert not result.ok
    message = str(result.error)
    # Spark's parser refuses the translated text; the error names the Databricks file's line.
    assert "[SDPX-SQL-302]" in message and "pipeline.sql:3:" in message, message
    assert "Spark rejected the translated statement" in message, message


def test_a_statement_that_is_not_a_pipeline_statement_stops_sql_include(make_pipeline: MakePipeline,
                                                                        tmp_path: Path) -> None:
    files = include_project(tmp_path / "project", """\
        CREATE OR REFRESH MATERIALIZED VIEW fine AS SELECT 1 AS id;

        DROP TABLE IF EXISTS somewhere_else;
        """)
    result = make_pipeline(files=files).run()
    assert not result.ok and result.events == []
    message = str(result.error)
    assert "[SDPX-SQL-308]" in message and "pipeline.sql:3:1" in message, message


def test_definition_mistakes_stop_before_any_flow(make_pipeline: MakePipeline,
                                                  tmp_path: Path) -> None:
    cases = {
        "SDPX-DEF-105": """\
            CREATE MATERIALIZED VIEW src AS SELECT 1 AS id;
            CREATE STREAMING TABLE t;
            CREATE FLOW f AS INSERT INTO t BY NAME SELECT * FROM STREAM(src);
            CREATE OR REFRESH STREAMING TABLE t (CONSTRAINT c EXPECT (id > 0));
            """,
        "SDPX-SQL-301": """\
            CREATE OR REFRESH STREAMING TABLE raw
            AS SELECT * FROM STREAM read_files('/tmp/x', format => 'json');
            """,
        "SDPX-VAL-071": """\
            CREATE MATERIALIZED VIEW m (
              CONSTRAINT c EXPECT (id > 0),
              CONSTRAINT c EXPECT (id < 9)
            ) AS SELECT 1 AS id;
            """,
    }
    for index, (code, text) in enumerate(cases.items()):
        files = include_project(tmp_path / f"case{index}", text)
        result = make_pipeline(files=files).run()
        assert not result.ok, code
        assert f"[{code}]" in str(result.error), (code, result.output)
        assert "pipeline.sql:" in str(result.error), (code, str(result.error))
        assert "is QUEUED" not in result.output, code


def test_include_of_nothing_is_a_coded_error(make_pipeline: MakePipeline, tmp_path: Path) -> None:
    transformations = tmp_path / "project" / "transformations"
    transformations.mkdir(parents=True)
    (transformations / "include_sql.py").write_text(
        "from sdp_expect import sql\n\nsql.include('../no_such_folder/')\n")
    result = make_pipeline(files=transformations).run()
    assert not result.ok
    assert "[SDPX-SQL-303]" in str(result.error)
    assert "include_sql.py:3" in str(result.error)
