"""The history table (docs/history.md): each update's own counts, update by update,
against a Python oracle; kept across a full refresh."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import pytest
from chispa import assert_df_equality
from cli_helpers import sdp_expect
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, Pipeline

from sdp_expect import pipelines as dp
from sdp_expect.base import names
from sdp_expect.quality.history_table import (
    ADDED_COLUMNS,
    COMPLETED,
    HISTORY_COLUMNS,
    HISTORY_COMMENT,
    MATERIALIZED_VIEW,
    STREAMING_TABLE,
    HistoryError,
    HistoryWrite,
    create_table_sql,
    record_history,
    updated_metrics_tables,
)
from sdp_expect.quality.summary import TableReading
from sdp_expect.report.build import build_report, completed_metrics_tables

SCHEMA = "id INT, amount INT"
Row = tuple[Optional[int], Optional[int]]
Predicate = Callable[[Row], Optional[bool]]


def _lt(limit: int) -> Predicate:
    return lambda row: None if row[1] is None else row[1] < limit


def _id_present(row: Row) -> Optional[bool]:
    return row[0] is not None


# name -> (action, constraint, the constraint in Python: True, False or None for NULL)
MV_RULES: dict[str, tuple[str, str, Predicate]] = {
    "small": ("warn", "amount < 10", _lt(10)),
    "valid_id": ("drop", "id IS NOT NULL", _id_present),
    "not_huge": ("fail", "amount < 1000", _lt(1000)),
}
ST_RULES: dict[str, tuple[str, str, Predicate]] = {
    "small": ("warn", "amount < 10", _lt(10)),
    "valid_id": ("drop", "id IS NOT NULL", _id_present),
    "not_negative": ("drop", "amount >= 0", lambda row: None if row[1] is None
                     else row[1] >= 0),
}


def oracle(dataset: str, kind: str, rules: dict[str, tuple[str, str, Predicate]],
           rows: Sequence[Row]) -> set[tuple[Any, ...]]:
    """The history rows of one dataset in one update, from the records it read."""
    dropped = sum(1 for row in rows
                  if any(rule[2](row) is not True for rule in rules.values()
                         if rule[0] == "drop"))
    found = set()
    for name, (action, constraint, holds) in rules.items():
        failed = sum(1 for row in rows if holds(row) is not True)
        found.add((dataset, name, action, constraint, len(rows) - failed, failed, len(rows),
                   dropped, kind))
    return found


def history(pipeline: Pipeline, update_id: str) -> set[tuple[Any, ...]]:
    rows = pipeline.spark.sql(
        f"SELECT * FROM `{pipeline.database}`.`{names.HISTORY_TABLE}` "
        "WHERE update_id = :u", args={"u": update_id}).collect()
    return {(r["dataset"], r["expectation"], r["action"], r["constraint"],
             r["passed_records"], r["failed_records"], r["total_records"],
             r["dropped_records"], r["dataset_kind"]) for r in rows}


# The design guide's event-log query (../shared/reference, "Reviewing Quality Metrics in
# the Event Log"), with only the table changed: event_log(TABLE(...)) -> the view.
GUIDE_QUERY = """
SELECT
  details:flow_progress.data_quality.expectations.name AS expectation_name,
  details:flow_progress.data_quality.expectations.dataset AS dataset,
  details:flow_progress.data_quality.expectations.passed_records AS passed,
  details:flow_progress.data_quality.expectations.failed_records AS failed,
  timestamp
FROM {view}
WHERE event_type = 'flow_progress'
  AND details:flow_progress.data_quality IS NOT NULL
ORDER BY timestamp DESC;
"""

# Its per-expectation form: one row per rule and update (docs/history.md).
PER_EXPECTATION_QUERY = """
SELECT origin.update_id AS update_id,
  e.value:name::string AS expectation_name,
  e.value:dataset::string AS dataset,
  e.value:passed_records::bigint AS passed,
  e.value:failed_records::bigint AS failed,
  details:flow_progress.data_quality.dropped_records::bigint AS dropped,
  timestamp
FROM {view},
  LATERAL variant_explode(details:flow_progress.data_quality.expectations) AS e
WHERE event_type = 'flow_progress'
  AND details:flow_progress.data_quality IS NOT NULL
ORDER BY timestamp DESC
"""

# A Databricks data-quality dashboard query, ported: from_json wants a STRING, so the
# VARIANT path is cast (`::string`, its JSON text); the rest is as written for Lakeflow.
DASHBOARD_QUERY = """
SELECT row_expectations.dataset AS dataset, row_expectations.name AS expectation,
  SUM(row_expectations.passed_records) AS passing_records,
  SUM(row_expectations.failed_records) AS failing_records
FROM (
  SELECT explode(from_json(details:flow_progress:data_quality:expectations::string,
    "array<struct<name: string, dataset: string, passed_records: int, failed_records: int>>"
  )) row_expectations
  FROM {view}
  WHERE event_type = 'flow_progress' AND origin.update_id = '{update_id}'
)
GROUP BY row_expectations.dataset, row_expectations.name
"""


def check_event_log(pipeline: Pipeline, writes: list[HistoryWrite],
                    expected: dict[str, set[tuple[Any, ...]]]) -> None:
    """docs/history.md#the-event-log-view: the guide's query runs on the view, one row
    per recorded update and dataset; the per-expectation form and the ported dashboard
    query give each update's exact counts per rule."""
    spark = pipeline.spark
    view = f"`{pipeline.database}`.`{names.EVENT_LOG_VIEW}`"
    events = sum(len({row[0] for row in rows}) for rows in expected.values())
    guide = spark.sql(GUIDE_QUERY.format(view=view)).collect()
    assert len(guide) == events
    # A VARIANT path through an array without an index is NULL (docs/history.md).
    assert {(r["expectation_name"], r["dataset"], r["passed"], r["failed"]) for r in guide} \
        == {(None, None, None, None)}
    stamps = [row["timestamp"] for row in guide]
    assert stamps == sorted(stamps, reverse=True)
    per_rule = spark.sql(PER_EXPECTATION_QUERY.format(view=view)).collect()
    found: dict[str, set[tuple[Any, ...]]] = {}
    for row in per_rule:
        found.setdefault(row["update_id"], set()).add(
            (row["dataset"], row["expectation_name"], row["passed"], row["failed"],
             row["dropped"]))
    assert found == {update_id: {(d, name, passed, failed, dropped)
                                 for d, name, _, _, passed, failed, _, dropped, _ in rows}
                     for update_id, rows in expected.items()}
    last = writes[-1].update_id
    dashboard = spark.sql(DASHBOARD_QUERY.format(view=view, update_id=last)).collect()
    assert {(r["dataset"], r["expectation"], r["passing_records"], r["failing_records"])
            for r in dashboard} == {(d, name, passed, failed)
                                    for d, name, _, _, passed, failed, _, _, _
                                    in expected[last]}


def write_json(folder: Path, name: str, rows: list[Row]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps({"id": i, "amount": a}) + "\n"
                                       for i, a in rows))


def _define(inbox: Path) -> Callable[[SparkSession], None]:
    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect("small", "amount < 10")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_fail("not_huge", "amount < 1000")
        def orders() -> DataFrame:
            return spark.read.table("src")

        @dp.table
        @dp.expect("small", "amount < 10")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def events() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

    return define


def _record(pipeline: Pipeline) -> HistoryWrite:
    return record_history(pipeline.spark, pipeline="shop", database=pipeline.database)


def test_history_rows_are_each_updates_own_counts(make_pipeline: MakePipeline) -> None:
    """docs/history.md#the-table: a materialized view's rows are its metrics; a streaming
    table's are the records this update read, not the running total; an update that
    read nothing records zeros; a failed update records nothing for the dataset; a full
    refresh keeps the history and counts the refreshed update's records."""
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    pipeline.definitions = _define(inbox)
    expected: dict[str, set[tuple[Any, ...]]] = {}
    writes: list[HistoryWrite] = []

    def update(source: Sequence[Row], files: Sequence[Sequence[Row]], *,
               st_rows: Sequence[Row], full_refresh: bool = False, mv_ok: bool = True) -> None:
        pipeline.create_table("src", list(source), SCHEMA)
        for number, rows in enumerate(files, start=len(list(inbox.glob("*.json"))) + 1):
            write_json(inbox, f"{number}.json", list(rows))
        result = pipeline.run(full_refresh_all=full_refresh)
        assert result.ok == mv_ok, result.output
        written = _record(pipeline)
        writes.append(written)
        wanted_rows = oracle("events", STREAMING_TABLE, ST_RULES, st_rows)
        if mv_ok:
            wanted_rows |= oracle("orders", MATERIALIZED_VIEW, MV_RULES, source)
        expected[written.update_id] = wanted_rows
        assert written.datasets == (["events", "orders"] if mv_ok else ["events"])
        assert written.rows == len(wanted_rows)
        for update_id, wanted in expected.items():  # earlier updates' rows unchanged
            assert history(pipeline, update_id) == wanted, update_id

    first_files: list[list[Row]] = [[(1, 5), (None, 20), (3, -1)]]
    update([(1, 5), (2, 50), (None, 7)], first_files, st_rows=first_files[0])
    second_files: list[list[Row]] = [[(4, 40), (None, None)], [(6, 1)]]
    update([(1, 1), (2, 2), (3, 30), (None, 12)], second_files,
           st_rows=second_files[0] + second_files[1])
    # Nothing new for the streaming table, and the materialized view's fail rule fails.
    update([(1, 1), (2, 5000)], [], st_rows=[], mv_ok=False)
    # A full refresh: the streaming table reads every file again; the history stays.
    third_files: list[list[Row]] = [[(7, 8), (8, -3)]]
    update([(9, 9)], third_files, full_refresh=True,
           st_rows=first_files[0] + second_files[0] + second_files[1] + third_files[0])
    update([(9, 9), (None, 1)], [], st_rows=[])

    check_event_log(pipeline, writes, expected)
    table = pipeline.spark.read.table(f"`{pipeline.database}`.`{names.HISTORY_TABLE}`")
    assert [(f.name, f.dataType.simpleString().upper()) for f in table.schema.fields] == [
        (name, kind) for name, kind in HISTORY_COLUMNS]
    assert Counter(r["update_id"] for r in table.collect()) == Counter(
        {w.update_id: w.rows for w in writes})
    every = table.collect()
    assert {r["pipeline"] for r in every} == {"shop"}
    for row in every:
        assert (row["last_batch_time"] is None) == (row["dataset_kind"] == MATERIALIZED_VIEW)
    # One update_time per update, in order of the updates.
    times = [{r["update_time"] for r in every if r["update_id"] == w.update_id}
             for w in writes]
    assert all(len(t) == 1 for t in times)
    assert [t.pop() for t in times] == sorted(r["update_time"] for r in
                                              table.select("update_id", "update_time")
                                              .distinct().collect())


def test_rows_equal_the_metrics_of_a_materialized_view(make_pipeline: MakePipeline) -> None:
    """A materialized view's history rows are its metrics view's rows, column for column."""
    pipeline = make_pipeline()
    pipeline.definitions = _define(pipeline.path("inbox"))
    write_json(pipeline.path("inbox"), "1.json", [(1, 1)])
    pipeline.create_table("src", [(1, 5), (None, 20)], SCHEMA)
    assert pipeline.run().ok
    # a user's table named like a metrics table, not made by sdp-expect: not recorded
    pipeline.spark.sql(f"CREATE TABLE `{pipeline.database}`.mine_dq_metrics (n INT) "
                       "USING parquet")
    written = _record(pipeline)
    assert written.datasets == ["events", "orders"]
    columns = list(names.METRICS_COLUMNS)
    recorded = pipeline.spark.sql(
        f"SELECT * FROM `{pipeline.database}`.`{names.HISTORY_TABLE}` "
        "WHERE update_id = :u AND dataset = 'orders'", args={"u": written.update_id})
    assert_df_equality(recorded.select(*columns),
                       pipeline.spark.read.table(f"`{pipeline.database}`.orders_dq_metrics")
                       .select(*columns), ignore_row_order=True, ignore_nullable=True)


def test_a_history_table_made_before_the_outcome_columns_gets_them(
        make_pipeline: MakePipeline) -> None:
    """A history table written by an earlier version (without ``outcome`` and
    ``restored_version``, no comment) keeps its rows and gets the new columns and the
    comment at the next write: the old rows read NULL there, the new ones ``COMPLETED``;
    the write after that finds it up to date."""
    pipeline = make_pipeline()
    pipeline.definitions = _define(pipeline.path("inbox"))
    write_json(pipeline.path("inbox"), "1.json", [(1, 1)])
    pipeline.create_table("src", [(1, 5), (None, 20)], SCHEMA)
    assert pipeline.run().ok
    table = f"`{pipeline.database}`.`{names.HISTORY_TABLE}`"
    before = HISTORY_COLUMNS[:-len(ADDED_COLUMNS)]
    pipeline.spark.sql(f"CREATE TABLE {table} ("
                       + ", ".join(f"`{name}` {kind}" for name, kind in before)
                       + ") USING parquet")
    pipeline.spark.sql(
        f"INSERT INTO {table} SELECT 'shop', 'old', current_timestamp(), 'orders', 'small', "
        "'warn', 'amount < 10', 1, 0, 1, 0, 'materialized view', NULL")
    first, second = _record(pipeline), _record(pipeline)
    every = pipeline.spark.read.table(table)
    assert [f.name for f in every.schema.fields] == [name for name, _ in HISTORY_COLUMNS]
    outcomes = Counter((r["update_id"], r["outcome"], r["restored_version"])
                       for r in every.collect())
    assert outcomes == Counter({("old", None, None): 1,
                                (first.update_id, COMPLETED, None): first.rows,
                                (second.update_id, COMPLETED, None): second.rows})
    assert first.rows == second.rows == 6, outcomes
    described = {str(r[0]): str(r[1]) for r in pipeline.spark.sql(
        f"DESCRIBE TABLE EXTENDED {table}").collect()}
    assert described.get("Comment") == HISTORY_COMMENT, described
    # The catalog's listing, which each write reads, shows it: no upgrade runs again.
    listed = {t.name: t.description for t in pipeline.spark.catalog.listTables(
        f"`{pipeline.database}`")}
    assert listed[names.HISTORY_TABLE] == HISTORY_COMMENT, listed


def test_a_streaming_tables_rows_add_up_to_its_metrics(make_pipeline: MakePipeline) -> None:
    """The history and the metrics view read the same batch log in two ways (the history
    per update, the metrics since the last full refresh): over several updates, the
    history's rows of a streaming table add up to its metrics view's, rule by rule."""
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")
    pipeline.definitions = _define(inbox)
    pipeline.create_table("src", [(1, 5)], SCHEMA)
    batches: list[list[Row]] = [[(1, 5), (None, 20), (3, -1)], [(4, 40), (None, None)],
                                [(6, 1), (7, -7), (None, 3)]]
    for number, rows in enumerate(batches, start=1):
        write_json(inbox, f"{number}.json", rows)
        assert pipeline.run().ok
        _record(pipeline)
    columns = ["passed_records", "failed_records", "total_records", "dropped_records"]
    summed = pipeline.spark.sql(
        "SELECT expectation, " + ", ".join(f"CAST(sum({c}) AS BIGINT) AS {c}" for c in columns)
        + f" FROM `{pipeline.database}`.`{names.HISTORY_TABLE}` WHERE dataset = 'events'"
        " GROUP BY expectation")
    metrics = pipeline.spark.read.table(f"`{pipeline.database}`.events_dq_metrics")
    assert_df_equality(summed, metrics.select("expectation", *columns),
                       ignore_row_order=True, ignore_nullable=True)
    valid_id = metrics.where("expectation = 'valid_id'").first()
    assert valid_id is not None and valid_id["total_records"] == 8


def test_a_run_records_the_datasets_its_summary_shows_as_updated() -> None:
    """What `sdp-expect run` records is the report's own state (report/build.py): not a
    dataset that failed, was skipped or was not refreshed, nor one without numbers."""
    def entry(dataset: str, streaming: bool = False, rows: int = 1) -> dict[str, Any]:
        return {"table": names.metrics_name(dataset),
                "comment": names.metrics_comment(dataset, streaming=streaming),
                "rows": [{"dataset": dataset, "expectation": "r", "action": "warn",
                          "constraint": "true", "passed_records": 1, "failed_records": 0,
                          "total_records": 1, "dropped_records": 0}] * rows}

    reading = TableReading(catalog="spark_catalog", database="default", metrics=[
        entry("updated"), entry("stream", streaming=True), entry("failed"),
        entry("skipped"), entry("untouched"), entry("emptied", rows=0)], quarantines=[],
        notes=[])
    flows = {f"spark_catalog.default.{name}": state for name, state in [
        ("updated_dq_metrics", "COMPLETED"), ("stream_dq_metrics", "COMPLETED"),
        ("failed", "FAILED"), ("skipped", "SKIPPED"), ("skipped_dq_metrics", "SKIPPED"),
        ("emptied_dq_metrics", "COMPLETED")]}
    report = build_report(reading, flows=flows, run_status="FAILED")
    assert updated_metrics_tables(report) == ["stream_dq_metrics", "updated_dq_metrics"]

    # When every flow completed (cli/after_run.py records before the run's end), the
    # metrics tables whose flows completed are the report's updated ones, but for
    # those without numbers, which record_history adds no rows for.
    done = {f"spark_catalog.default.{name}": state for name, state in [
        ("updated", "COMPLETED"), ("updated_dq_metrics", "COMPLETED"),
        ("stream_dq_metrics", "COMPLETED"), ("emptied_dq_metrics", "COMPLETED"),
        ("untouched_dq_metrics", "EXCLUDED")]}
    completed = build_report(reading, flows=done, run_status="COMPLETED")
    assert completed_metrics_tables(done) == ["emptied_dq_metrics", "stream_dq_metrics",
                                              "updated_dq_metrics"]
    assert updated_metrics_tables(completed) == ["stream_dq_metrics", "updated_dq_metrics"]


def test_a_table_format_must_be_a_name() -> None:
    assert create_table_sql("`h`", "delta").endswith(
        f") USING delta COMMENT '{HISTORY_COMMENT}'")
    with pytest.raises(HistoryError, match="not a table format name"):
        create_table_sql("`h`", "parquet; DROP TABLE x")


def test_history_command_usage_and_no_catalog(tmp_path: Path) -> None:
    (tmp_path / "spark-pipeline.yml").write_text(
        "name: p\nstorage: file:///tmp/p-storage\nlibraries: []\n")
    assert sdp_expect("history", cwd=tmp_path).returncode == 2
    assert sdp_expect("history", "show", "--updates", "0", cwd=tmp_path).returncode == 2
    for action in ("record", "show"):
        result = sdp_expect("history", action, cwd=tmp_path)
        assert result.returncode == 1
        assert "no catalog in" in result.stderr, result.stderr
    help_text = sdp_expect("history", "record", "--help", cwd=tmp_path).stdout
    assert "Exit status: 0" in help_text and "--dataset" in help_text


def test_a_streaming_table_of_two_sources_records_both_sources_records_per_update(
        make_pipeline: MakePipeline) -> None:
    """Issue 16's check of a streaming table fed from two places, over updates with
    changing inputs (one source only, both, none): each update records the records
    both sources brought, against the oracle. Two ``append_flow``s into one parquet
    table are refused (SDPX-DEF-112: Spark's file sink keeps one commit log per table
    and loses a flow's commits, in the table and in its batch log alike;
    docs/semantics.md#several-flows), and a transactional format's jars cannot be
    fetched here, so the two sources are one flow over their union, the documented fix."""
    pipeline = make_pipeline()
    web, shop = pipeline.path("web"), pipeline.path("shop")
    web.mkdir(parents=True, exist_ok=True)
    shop.mkdir(parents=True, exist_ok=True)

    def define(spark: SparkSession) -> None:
        @dp.table
        @dp.expect("small", "amount < 10")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def events() -> DataFrame:
            return (spark.readStream.schema(SCHEMA).json(str(web))
                    .unionByName(spark.readStream.schema(SCHEMA).json(str(shop))))

    pipeline.definitions = define
    updates: list[tuple[list[Row], list[Row]]] = [
        ([(1, 5), (None, 20)], [(3, -1), (4, 4), (5, 50)]),
        ([(6, 6)], []),
        ([], []),
        ([(None, None), (8, -8)], [(9, 1)]),
    ]
    for number, (web_rows, shop_rows) in enumerate(updates, start=1):
        if web_rows:
            write_json(web, f"{number}.json", web_rows)
        if shop_rows:
            write_json(shop, f"{number}.json", shop_rows)
        result = pipeline.run()
        assert result.ok, result.output
        written = _record(pipeline)
        assert history(pipeline, written.update_id) == oracle(
            "events", STREAMING_TABLE, ST_RULES, web_rows + shop_rows), number
