"""A constraint Spark cannot analyse is named by its own check view (SDPX-DEF-111).

sdp-expect registers one unread temporary view per rule (``_sdpx_check_<flow>_<n>``)
and records, in the definitions file, which rule each view checks. SDP analyses
every flow, so an unresolvable constraint fails exactly its own view, with Spark's
reason; ``sdp-expect dry-run`` turns that into one coded line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import sdp_expect, served, user_env, write_project
from pyspark import pipelines as plain
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline

from sdp_expect import pipelines as dp
from sdp_expect.base.definitions import DEFINITIONS_VARIABLE
from sdp_expect.base.errors import Location
from sdp_expect.base.names import ROUTE_PREFIX
from sdp_expect.runtime.run_output import (
    POSITION,
    RESOLUTION_FAILURE,
    ChildOutput,
    short_name,
    spark_reason,
)

CASES = {
    # kind: (constraint, what Spark's reason must contain)
    "misspelled column": ("amout >= 0", "UNRESOLVED_COLUMN"),
    "unknown function": ("no_such_function(amount) > 0", "UNRESOLVED_ROUTINE"),
    "type mismatch": ("NOT amount", "DATATYPE_MISMATCH"),
}



def shown_by_default(events: list[str], definitions: Path) -> tuple[ChildOutput, list[str]]:
    """What ``sdp-expect run`` shows by default of a graph's events, as spark-pipelines
    prints them (a timestamp, then the event's message and error lines)."""
    output = ChildOutput(definitions)
    shown: list[str] = []
    for event in events:
        for line in ("2026-01-01 00:00:00: " + event).splitlines(keepends=True):
            shown += output.feed(line if line.endswith("\n") else line + "\n")
    shown += output.finish()
    return output, shown


@pytest.mark.parametrize("kind", sorted(CASES))
def test_an_unresolvable_constraint_fails_its_own_check_view(
        make_pipeline: MakePipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        kind: str) -> None:
    constraint, reason = CASES[kind]
    definitions = tmp_path / "definitions.jsonl"
    monkeypatch.setenv(DEFINITIONS_VARIABLE, str(definitions))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def bronze() -> DataFrame:
            return spark.range(3).selectExpr("id", "id * 1.5 AS amount")

        @dp.materialized_view
        @dp.expect("known_id", "id IS NOT NULL")
        @dp.expect_or_drop("positive", constraint)
        def silver() -> DataFrame:
            return spark.read.table("bronze")

    result = make_pipeline(define).run(dry=True)
    assert not result.ok
    failures = {RESOLUTION_FAILURE.search(e).group("flow"): e  # type: ignore[union-attr]
                for e in result.events if RESOLUTION_FAILURE.search(e)}
    # the rule's own view fails with Spark's reason; the other rule's and the query's do not
    assert "_sdpx_check_silver_2" in failures, result.output
    assert "_sdpx_check_silver_1" not in failures
    assert "_sdpx_check_silver_0" not in failures
    error = next(line for line in failures["_sdpx_check_silver_2"].splitlines()
                 if line.startswith("Error: "))
    assert reason in spark_reason(error)
    assert not POSITION.search(spark_reason(error))
    entries = [json.loads(line) for line in definitions.read_text().splitlines()]
    check = next(e for e in entries if e.get("view") == "_sdpx_check_silver_2")
    assert (check["dataset"], check["expectation"], check["constraint"], check["action"]) == (
        "silver", "positive", constraint, "drop")
    assert check["location"].startswith("test_rule_resolution.py:")
    assert check["place"]["file"] == "test_rule_resolution.py"
    # what sdp-expect run and dry-run show: one coded line with the dataset, the
    # expectation, its file:line and Spark's reason; no other failure
    output, shown = shown_by_default(result.events, definitions)
    coded = [line for line in shown if "[SDPX-" in line]
    assert len(coded) == 1, shown
    assert coded[0].startswith(f"[SDPX-DEF-111] {check['location']}, dataset 'silver', "
                               "expectation 'positive': Spark cannot analyse the constraint "
                               f"{constraint!r}: "), coded
    assert reason in coded[0]
    if kind == "misspelled column":
        assert "`amount`" in coded[0]  # Spark's suggestion
    assert not any("Failed to resolve flow" in line for line in shown), shown
    assert [rule.place for rule in output.rule_errors] == [
        Location("test_rule_resolution.py", check["place"]["line"])]


def test_a_broken_query_is_not_blamed_on_its_rules(make_pipeline: MakePipeline, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    definitions = tmp_path / "definitions.jsonl"
    monkeypatch.setenv(DEFINITIONS_VARIABLE, str(definitions))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.expect_or_drop("positive", "amount >= 0")
        def silver() -> DataFrame:
            return spark.range(3).selectExpr("id", "id AS amount").where("no_such_column > 0")

    result = make_pipeline(define).run(dry=True)
    assert not result.ok
    output, shown = shown_by_default(result.events, definitions)
    assert output.rule_errors == []
    assert any("Failed to resolve flow" in line and "silver'" in line for line in shown), shown
    assert not any("_sdpx_check_" in line for line in shown), shown


@pytest.mark.usefixtures("own_jvm")
def test_dry_run_names_the_rule_in_one_coded_line(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project", """
        from pyspark.sql import SparkSession
        from sdp_expect import pipelines as dp
        spark = SparkSession.active()

        @dp.materialized_view
        def bronze():
            return spark.range(5).selectExpr("id", "id * 1.5 AS amount")

        @dp.materialized_view
        @dp.expect_or_drop("positive", "amout >= 0")
        def silver():
            return spark.read.table("bronze")
    """)
    with served(project):  # one server start for the dry run and the run
        done = sdp_expect("dry-run", "--color", "never", cwd=project, env=user_env())
        ran = sdp_expect("run", "--color", "never", cwd=project, env=user_env())
    assert done.returncode == 1, done.stdout + done.stderr
    coded = [line for line in done.stdout.splitlines() if "[SDPX-" in line]
    assert len(coded) == 1, done.stdout
    line = coded[0]
    assert line.startswith("[SDPX-DEF-111] pipeline.py:11, dataset 'silver', "
                           "expectation 'positive': "), line
    assert "amout >= 0" in line and "Did you mean" in line and "`amount`" in line
    # the derived noise is gone from the default output, and kept in the log file
    assert "Traceback" not in done.stdout and "zip_with" not in done.stdout
    assert "Flows with errors" not in done.stdout
    assert "_sdpx_check_" not in done.stdout
    assert len(done.stdout.splitlines()) <= 40, done.stdout
    logs = list((project / ".sdp-expect" / "logs").glob("*-dry-run.log"))
    assert len(logs) == 1
    log = logs[0].read_text()
    assert "Flows with errors" in log and "Traceback" in log
    assert "full log: " in done.stdout
    # run says the same, and writes nothing
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert [line for line in ran.stdout.splitlines() if "[SDPX-" in line] == coded, ran.stdout
    assert len(ran.stdout.splitlines()) <= 40, ran.stdout


SQL_DATASETS = {
    "materialized view": """\
CREATE OR REFRESH MATERIALIZED VIEW silver (
  CONSTRAINT known_id EXPECT (id IS NOT NULL),
  CONSTRAINT positive EXPECT ({constraint}) ON VIOLATION DROP ROW
) AS SELECT * FROM LIVE.bronze
""",
    "streaming table": """\
CREATE OR REFRESH STREAMING TABLE silver (
  CONSTRAINT known_id EXPECT (id IS NOT NULL),
  CONSTRAINT positive EXPECT ({constraint}) ON VIOLATION DROP ROW
) AS SELECT * FROM STREAM(LIVE.bronze)
""",
}


@pytest.mark.parametrize("dataset_kind", sorted(SQL_DATASETS))
def test_a_databricks_sql_constraint_is_named_by_its_check_view_too(
        make_pipeline: MakePipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        dataset_kind: str) -> None:
    definitions = tmp_path / "definitions.jsonl"
    monkeypatch.setenv(DEFINITIONS_VARIABLE, str(definitions))
    files = tmp_path / "transformations"
    (tmp_path / "databricks_sql").mkdir()
    files.mkdir()
    bronze = ("spark.range(3).selectExpr('id', 'id * 1.5 AS amount')"
              if dataset_kind == "materialized view" else
              "spark.readStream.format('rate').load().selectExpr('value AS id', "
              "'value * 1.5 AS amount')")
    (files / "pipeline.py").write_text(f"""\
from pyspark.sql import SparkSession
from sdp_expect import pipelines as dp
from sdp_expect import sql

spark = SparkSession.active()


@dp.{"materialized_view" if dataset_kind == "materialized view" else "table"}
def bronze():
    return {bronze}


sql.include("../databricks_sql/")
""")
    (tmp_path / "databricks_sql" / "silver.sql").write_text(
        SQL_DATASETS[dataset_kind].format(constraint="amout >= 0"))
    result = make_pipeline(files=files).run(dry=True)
    assert not result.ok
    failures = {RESOLUTION_FAILURE.search(e).group("flow"): e  # type: ignore[union-attr]
                for e in result.events if RESOLUTION_FAILURE.search(e)}
    assert any(flow.endswith("_sdpx_check_silver_2") for flow in failures), result.output
    assert not any(flow.endswith(("_sdpx_check_silver_1", "_sdpx_check_silver_0"))
                   for flow in failures)
    entries = [json.loads(line) for line in definitions.read_text().splitlines()]
    check = next(e for e in entries if e.get("view") == "_sdpx_check_silver_2")
    assert (check["dataset"], check["expectation"], check["constraint"]) == (
        "silver", "positive", "amout >= 0")
    assert check["location"].endswith("silver.sql:3"), check["location"]
    # the one coded line the default output shows
    output, shown = shown_by_default(result.events, definitions)
    assert [(r.dataset, r.expectation) for r in output.rule_errors] == [("silver", "positive")]
    coded = [line for line in shown if "[SDPX-DEF-111]" in line]
    assert len(coded) == 1 and "UNRESOLVED_COLUMN" in coded[0], shown
    assert not any("Failed to resolve flow" in line for line in shown), shown


def _failures(shown: list[str]) -> dict[str, tuple[bool, str]]:
    """Each flow shown failing to resolve -> (whether upstream, the error line after it)."""
    found: dict[str, tuple[bool, str]] = {}
    for number, line in enumerate(shown):
        match = RESOLUTION_FAILURE.search(line)
        if match is not None:
            after = shown[number + 1] if number + 1 < len(shown) else ""
            found[short_name(match.group("flow"))] = (
                bool(match.group("upstream")), after if after.startswith("Error: ") else "")
    return found


def test_a_routed_read_that_fails_is_shown_as_plain_sdp_shows_it(
        make_pipeline: MakePipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sdp-expect makes ``withColumn``, ``withColumnRenamed`` and ``drop`` over a read wait
    by routing the read through graph-only views (docs/early-binding.md). When the read
    fails (here a table that does not exist), ``sdp-expect run`` shows what plain SDP
    shows: each reading flow fails with Spark's own reason, a flow downstream fails for
    the dataset it reads; no route view is named."""
    definitions = tmp_path / "definitions.jsonl"
    monkeypatch.setenv(DEFINITIONS_VARIABLE, str(definitions))

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        def silver() -> DataFrame:
            return spark.read.table("no_such_table").withColumn("w", F.lit(1))

        @dp.materialized_view
        @dp.expect_or_drop("known", "id IS NOT NULL")
        def checked() -> DataFrame:
            return spark.read.table("no_such_table").withColumnRenamed("v", "w")

        @dp.materialized_view
        def gold() -> DataFrame:
            return spark.read.table("silver").drop("w")

    pipeline = make_pipeline(define)
    result = pipeline.run(dry=True)
    assert not result.ok
    assert any(ROUTE_PREFIX in event for event in result.events), "the reads were routed"
    _, shown = shown_by_default(result.events, definitions)
    assert not any(ROUTE_PREFIX in line for line in shown), "".join(shown)
    failures = _failures(shown)

    def define_plain(spark: SparkSession) -> None:
        @plain.materialized_view(name="silver")
        def silver() -> DataFrame:
            return spark.read.table("no_such_table").withColumn("w", F.lit(1))

    pipeline.definitions = define_plain
    plain_failures = _failures(shown_by_default(pipeline.run(dry=True).events,
                                                tmp_path / "none.jsonl")[1])
    assert failures["silver"] == plain_failures["silver"], (shown, plain_failures)
    assert "TABLE_OR_VIEW_NOT_FOUND" in failures["silver"][1]
    # a dataset with expectations: its flow and its metrics' flow fail on their own
    assert failures["checked"] == failures["checked_dq_metrics"] == failures["silver"], shown
    assert failures["gold"] == (True, "Error: Failed to read dataset 'silver'. Dataset is "
                                      "defined in the pipeline but could not be resolved.\n"), shown
