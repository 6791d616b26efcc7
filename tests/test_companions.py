"""Quarantine, metrics, rule files and many rules on real runs.

What they mean: docs/semantics.md#quarantine and #metrics.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, SparkServer

from sdp_expect import pipelines as dp

SCHEMA = "id INT, amount INT"
ROWS = [(1, 5), (None, 7), (3, -2), (4, 500), (5, None)]
RULES = Path(__file__).resolve().parent / "fixtures" / "pipeline_rules" / "orders.yml"


def test_rule_file_gives_the_same_tables_as_the_same_rules_as_decorators(
        make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_from_file(str(RULES))
        def from_file() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect("small", "amount < 100")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def from_decorators() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    for suffix in ("", "_quarantine"):
        assert_df_equality(result.table(f"from_file{suffix}"),
                           result.table(f"from_decorators{suffix}"), ignore_row_order=True)
    metrics = result.table("from_file_dq_metrics").drop("dataset")
    expected = result.table("from_decorators_dq_metrics").drop("dataset")
    assert_df_equality(metrics, expected, ignore_row_order=True)


def test_rule_file_paths_start_at_the_pipeline_file_tags_select_and_decorators_combine(
        make_pipeline: MakePipeline, tmp_path: Path) -> None:
    """``expect_from_file("rules/orders.yml", tag=...)`` in ``pipelines/orders.py`` reads
    ``pipelines/rules/orders.yml`` (not a path from the current directory, which is the
    project folder while the files are imported), keeps the rules with the tag, and adds
    them to the decorator's rule on the same dataset."""
    project = tmp_path / "project"
    code = project / "pipelines"
    (code / "rules").mkdir(parents=True)
    shutil.copy(RULES, code / "rules" / "orders.yml")
    (code / "orders.py").write_text(textwrap.dedent("""\
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp

        spark = SparkSession.active()

        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_from_file("rules/orders.yml", tag="ranges")
        @dp.expect_or_drop("id_present", "id IS NOT NULL")
        def checked():
            return spark.read.table("src")
        """))
    pipeline = make_pipeline(files=project)
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    actions = {r["expectation"]: r["action"] for r in result.rows("checked_dq_metrics")}
    assert actions == {"small": "warn", "not_negative": "drop", "id_present": "drop"}
    assert sorted(r["id"] for r in result.rows("checked")) == [1, 4]
    assert sorted(r["id"] or 0 for r in result.rows("checked_quarantine")) == [0, 3, 5]


def test_quarantine_by_name_and_for_the_whole_pipeline(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine(name="rejected_orders")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def named() -> DataFrame:
            return spark.read.table("src")

        @dp.table
        @dp.expect("small", "amount < 100")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def by_pipeline() -> DataFrame:
            return spark.readStream.table("src")

    pipeline = make_pipeline(define, conf={"sdp_expect.quarantine": "true"})
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    assert "named_quarantine" not in result.outputs
    assert result.outputs["rejected_orders"] == "MaterializedView"
    assert result.outputs["by_pipeline_quarantine"] == "StreamingTable"
    assert [(r["id"], r["amount"], r["_failed_expectations"])
            for r in result.rows("rejected_orders")] == [(None, 7, ["valid_id"])]
    assert sorted((r["id"], r["_failed_expectations"])
                  for r in result.rows("by_pipeline_quarantine")) == [
        (3, ["not_negative"]), (5, ["small", "not_negative"])]


def test_rule_names_are_data_not_code(make_pipeline: MakePipeline) -> None:
    names = ["it's \"quoted\"", "with `backticks`", "ünïcödé ✓", "SELECT * FROM x; --",
             "a, b"]

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_all({names[0]: "amount < 100", names[1]: "amount <> 7"})
        @dp.expect_all_or_drop({names[2]: "id IS NOT NULL", names[3]: "amount >= 0"})
        def checked() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        @dp.expect_or_fail(names[4], "amount IS NOT NULL")
        def failing() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert not result.ok
    assert "Violated expectations: 'a, b'" in result.output
    metrics = {r["expectation"] for r in result.rows("checked_dq_metrics")}
    assert metrics == set(names[:4])
    quarantine = {r["id"]: r["_failed_expectations"] for r in result.rows("checked_quarantine")}
    assert quarantine[None] == [names[1], names[2]]
    assert quarantine[3] == [names[3]]
    assert quarantine[5] == [names[0], names[1], names[3]]


def test_metrics_opt_out_per_dataset_and_per_pipeline(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.metrics(False)
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def without() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def with_metrics() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    assert "without_dq_metrics" not in result.outputs
    assert result.outputs["with_metrics_dq_metrics"] == "MaterializedView"

    pipeline_off = make_pipeline(define, conf={"sdp_expect.metrics": "false"})
    pipeline_off.create_table("src", ROWS, SCHEMA)
    off = pipeline_off.run(dry=True)
    assert off.ok, off.output
    assert not [name for name in off.outputs if name.endswith("_dq_metrics")]


def test_metrics_table_has_the_contract_columns_and_types(make_pipeline: MakePipeline) -> None:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        def checked() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    schema = [(f.name, f.dataType.simpleString()) for f in result.table("checked_dq_metrics")
              .schema.fields]
    assert schema == [("dataset", "string"), ("expectation", "string"), ("action", "string"),
                      ("constraint", "string"), ("passed_records", "bigint"),
                      ("failed_records", "bigint"), ("total_records", "bigint"),
                      ("dropped_records", "bigint")]


def test_five_hundred_expectations_register_run_and_count_right(make_pipeline: MakePipeline,
                                                                spark_server: SparkServer) -> None:
    """Also: Spark compiles every plan (one struct expression per rule in the metrics
    once made the generated Java code exceed 64 KB; Spark logged the compile error
    and fell back to slower interpreted evaluation)."""
    log_before = spark_server.log_path.read_text(errors="replace")
    rules = {f"above_{k}": f"coalesce(amount, 0) > {k - 250}" for k in range(480)}
    drops = {f"id_not_{k}": f"coalesce(id, 0) <> {1000 + k}" for k in range(20)}

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_all(rules)
        @dp.expect_all_or_drop(drops)
        @dp.expect_or_fail("known_or_null", "amount IS NULL OR amount > -1000")
        def many() -> DataFrame:
            return spark.read.table("src")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", ROWS, SCHEMA)
    result = pipeline.run()
    assert result.ok, result.output
    metrics = {r["expectation"]: r for r in result.rows("many_dq_metrics")}
    assert len(metrics) == 501
    amounts = [a if a is not None else 0 for _, a in ROWS]
    for k in (0, 247, 249, 250, 479):
        expected_failed = sum(1 for a in amounts if not a > k - 250)
        assert metrics[f"above_{k}"]["failed_records"] == expected_failed, k
    assert result.table("many").count() == 5
    assert result.table("many_quarantine").count() == 0
    log = spark_server.log_path.read_text(errors="replace")[len(log_before):]
    assert "Code grows beyond 64 KB" not in log and "Failed to compile" not in log


def test_quarantine_of_a_dataset_over_a_pipeline_dataset_is_right_on_every_update(
        make_pipeline: MakePipeline) -> None:
    """A second update must not read the previous update's table (recreated meanwhile).

    Regression: built with ``withColumn``, the quarantine's input was analysed while
    the flow was planned, so on a rerun it bound to the catalog's ``bronze`` of the
    last update, did not wait for the new one, and read it while it was recreated.
    """

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def bronze() -> DataFrame:
            return spark.read.table("src")

        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def silver() -> DataFrame:
            return spark.read.table("bronze")

    pipeline = make_pipeline(define)
    pipeline.create_table("src", ROWS, SCHEMA)
    for update in range(2):
        result = pipeline.run()
        assert result.ok, result.output
        quarantined = {row.id for row in result.table("silver_quarantine").collect()}
        assert quarantined == {None, 3, 5}, f"update {update + 1}: {quarantined}"
        quarantine_planned = result.flow_events("silver_quarantine")
        bronze_done = [e for e in result.flow_events("bronze") if "COMPLETED" in e]
        assert bronze_done, result.output
        planning = next(e for e in quarantine_planned if "PLANNING" in e)
        assert result.events.index(planning) > result.events.index(bronze_done[0]), (
            f"update {update + 1}: the quarantine started before bronze was recomputed")


def test_metrics_agree_with_the_view_and_its_quarantine_when_the_query_is_random(
        make_pipeline: MakePipeline) -> None:
    """Each flow evaluates the query on its own, so a column from ``rand()`` differs
    between the view's pass and its quarantine's. With ``sdp_expect.metrics_from =
    output`` the metrics are counted from what the two wrote
    (docs/performance.md#metrics-from-the-output): they agree with both tables, a third
    evaluation of the query (the default) would not."""
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect("under_0_9", "r < 0.9")
        @dp.expect_or_drop("under_0_5", "r < 0.5")
        def sampled() -> DataFrame:
            return spark.range(400).selectExpr("id", "rand() AS r")

    result = make_pipeline(define, conf={"sdp_expect.metrics_from": "output"}).run()
    assert result.ok, result.output
    kept = result.rows("sampled")
    dropped = result.rows("sampled_quarantine")
    metrics = {row["expectation"]: row for row in result.rows("sampled_dq_metrics")}
    oracle = {
        "under_0_5": sum("under_0_5" in row["_failed_expectations"] for row in dropped),
        "under_0_9": (sum(row["r"] >= 0.9 for row in kept)
                      + sum("under_0_9" in row["_failed_expectations"] for row in dropped)),
    }
    for name, failed in oracle.items():
        row = metrics[name]
        assert row["total_records"] == len(kept) + len(dropped)
        assert row["dropped_records"] == len(dropped)
        assert row["failed_records"] == failed
        assert row["passed_records"] == len(kept) + len(dropped) - failed
