"""Databricks SQL notebooks (exported: cells, no ';'): every statement accounted for.

An exported SQL notebook separates its statements by cells
(``-- COMMAND ----------``), usually without ``;``, starts with
``-- Databricks notebook source`` and keeps markdown and other-language cells
behind ``-- MAGIC``. These tests check that:

- cells end statements, ``SET`` ends at the end of its line, markdown cells are
  ignored, a ``%sql`` cell is read, a ``%python`` (or other) cell is
  SDPX-SQL-307 at its line;
- a statement that runs into the next one without ``;`` is SDPX-SQL-302 at the
  second one's line, in every tool, never one merged statement;
- every legacy spelling maps to the dataset type ``docs/sql.md`` lists;
- ``sql.include`` (in a real pipeline), ``sdp-expect validate``, ``sdp-expect
  translate`` and ``sdp-expect migrate`` read the same statements, the ones
  listed here by hand;
- a notebook in the style of an export runs through ``sql.include`` and every
  table, companions included, holds exactly the expected rows.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any, Optional, cast

import pytest
from sdp_runner import MakePipeline, Pipeline, RunResult, SparkServer

from sdp_expect import SdpExpectError, sql
from sdp_expect.base.names import QUARANTINE_COLUMNS
from sdp_expect.checks.sql_files import check_sql_file, read_sql_file
from sdp_expect.checks.validate import validate_paths
from sdp_expect.cli import main
from sdp_expect.dbsql.parse import check, parse
from sdp_expect.dbsql.statements import (
    DatasetStatement,
    DatasetType,
    SetStatement,
    SqlText,
    StatementSummary,
    UseStatement,
)
from sdp_expect.migrate import NOT_CONVERTED, migrate

NOTEBOOKS = Path(__file__).resolve().parent / "fixtures" / "notebooks"
HEADER = "-- Databricks notebook source\n"
CELL = "\n-- COMMAND ----------\n\n"

Row = tuple[str, Optional[str], int]

EXPECTED: dict[str, list[Row]] = {
    "legacy.sql": [
        ("set", "spark.sql.shuffle.partitions", 7),
        ("set", "pipelines.note", 9),
        ("temporary view", "legacy_live_view", 13),
        ("temporary view", "legacy_stream_view", 19),
        ("streaming table", "legacy_streaming", 24),
        ("streaming table", "legacy_private_streaming", 29),
        ("materialized view", "legacy_private_mv", 34),
        ("materialized view", "legacy_from_sql_cell", 42),
        ("streaming table", "legacy_target", 48),
        ("flow", "legacy_flow", 49),
    ],
    "orders.sql": [
        ("set", "sdp_expect.quarantine", 12),
        ("temporary view", "orders_stream", 16),
        ("streaming table", "orders_bronze", 22),
        ("materialized view", "customer_totals", 37),
        ("temporary view", "eu_orders", 46),
        ("materialized view", "eu_summary", 53),
        ("streaming table", "big_orders", 58),
        ("materialized view", "us_orders", 63),
    ],
}
"""The statements of each notebook, read by hand: kind, name, line."""


def rows_of(summary: list[StatementSummary]) -> list[Row]:
    return [(s.kind, s.name, s.position.line) for s in summary]


def notebook(*cells: str) -> str:
    """An exported notebook's text: the header, then the cells with separators."""
    return HEADER + CELL.join(textwrap.dedent(cell).strip() + "\n" for cell in cells)


def raised(text: str, file: str = "nb.sql") -> SdpExpectError:
    with pytest.raises(SdpExpectError) as caught:
        parse(text, file)
    return caught.value


# --------------------------------------------------------------------------- cells


def test_cells_end_statements_without_semicolons_and_markdown_is_ignored() -> None:
    text = notebook(
        """
        -- MAGIC %md
        -- MAGIC # Title
        -- MAGIC CREATE LIVE TABLE not_a_table AS SELECT 1
        """,
        "CREATE LIVE TABLE a\nAS SELECT 1 AS x",
        "CREATE LIVE TABLE b AS SELECT * FROM LIVE.a",
    )
    statements = parse(text, "nb.sql")
    assert [(s.name.dataset, s.position.line) for s in statements
            if isinstance(s, DatasetStatement)] == [("a", 8), ("b", 13)]
    assert len(statements) == 2
    second = cast(DatasetStatement, statements[1])  # as the first assertion shows
    assert second.query is not None and second.query.text == "SELECT * FROM a"


@pytest.mark.parametrize("separator", ["-- COMMAND --", "-- COMMAND ----------",
                                       "-- COMMAND ------------------------------",
                                       "--COMMAND----------", "-- COMMAND ----------   "])
def test_separators_with_any_number_of_dashes(separator: str) -> None:
    text = f"CREATE LIVE TABLE a AS SELECT 1\n{separator}\nCREATE LIVE TABLE b AS SELECT 2\n"
    assert [(s.kind, s.name, s.position.line) for s in check(text, "f.sql").summary] == [
        ("materialized view", "a", 1), ("materialized view", "b", 3)]


def test_a_separator_inside_a_string_or_comment_or_indented_is_not_one() -> None:
    text = ("CREATE LIVE TABLE a AS SELECT '\n-- COMMAND ----------\n' AS s\n"
            "/*\n-- COMMAND ----------\n*/\n"
            "  -- COMMAND ----------\n"
            ", 2 AS t\n")
    statements = parse(text, "f.sql")
    assert len(statements) == 1
    # The one statement is a materialized view's, with its query.
    query = cast(SqlText, cast(DatasetStatement, statements[0]).query)
    assert query.text.endswith(", 2 AS t")


def test_a_sql_magic_cell_is_read_at_its_lines_and_columns() -> None:
    text = notebook(
        """
        -- MAGIC %sql
        -- MAGIC CREATE OR REFRESH LIVE TABLE t (
        -- MAGIC   CONSTRAINT `has id` EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW
        -- MAGIC )
        -- MAGIC AS SELECT id FROM LIVE.src
        """)
    (statement,) = parse(text, "nb.sql")
    assert isinstance(statement, DatasetStatement)
    assert statement.type is DatasetType.MATERIALIZED_VIEW
    assert statement.position.line == 3 and statement.position.column == 10
    assert [e.constraint for e in statement.rules.expectations] == ["id IS NOT NULL"]
    assert statement.query is not None
    assert statement.query.text == "SELECT id FROM src"
    assert (statement.query.position.line, statement.query.position.column) == (6, 13)
    assert "MAGIC" not in sql.translate(text, "nb.sql")


@pytest.mark.parametrize("magic", ["python", "scala", "r", "sh", "pip", "run", "fs"])
def test_a_cell_in_another_language_is_sdpx_sql_307_at_its_line(magic: str) -> None:
    text = notebook("CREATE LIVE TABLE a AS SELECT 1",
                    f"-- MAGIC %{magic}\n-- MAGIC something()",
                    "CREATE LIVE TABLE b AS SELECT 2")
    error = raised(text)
    assert (error.code, error.location) == ("SDPX-SQL-307", "nb.sql:6")
    assert f"%{magic}" in error.detail
    found = check(text, "nb.sql")
    assert [e.code for e in found.errors] == ["SDPX-SQL-307"]
    assert [(s.name, s.position.line) for s in found.summary] == [("a", 2), ("b", 11)]


def test_a_python_cell_right_after_the_header_is_sdpx_sql_307_too() -> None:
    error = raised(notebook("-- MAGIC %python\n-- MAGIC x = 1", "CREATE LIVE TABLE a AS SELECT 1"))
    assert (error.code, error.location) == ("SDPX-SQL-307", "nb.sql:2")


def test_a_python_cell_is_reported_by_validate_translate_and_migrate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = project / "nb.sql"
    path.write_text(notebook("CREATE LIVE TABLE a AS SELECT 1",
                             "-- MAGIC %python\n-- MAGIC import dlt"))
    issues = check_sql_file(str(path)).errors
    assert [(i.code, i.rule) for i in issues] == [("SDPX-SQL-307", "line 6")]
    assert main(["translate", str(path)]) == 1
    assert f"[SDPX-SQL-307] {path}:6: a %python notebook cell" in capsys.readouterr().err
    result = migrate(project, tmp_path / "oss")
    assert [(f.file, f.line, f.message.split("]")[0]) for f in result.of(NOT_CONVERTED)] == [
        ("nb.sql", 6, "[SDPX-SQL-307")]
    assert rows_of(result.sql_statements["nb.sql"]) == [("materialized view", "a", 2)]


def test_a_notebook_of_only_markdown_has_no_statement() -> None:
    text = notebook("-- MAGIC %md\n-- MAGIC # Nothing", "-- MAGIC %md-sandbox\n-- MAGIC <b>x</b>")
    found = check(text, "nb.sql")
    assert (found.statements, found.errors) == ([], [])


# --------------------------------------------------------------------------- SET and USE


def test_set_and_use_end_at_the_end_of_their_line() -> None:
    text = notebook(
        """
        SET spark.sql.shuffle.partitions = 4
        SET sdp_expect.quarantine = true -- keep what is dropped
        USE CATALOG main
        CREATE LIVE TABLE a AS SELECT 1
        """)
    statements = parse(text, "nb.sql")
    assert [type(s).__name__ for s in statements] == [
        "SetStatement", "SetStatement", "UseStatement", "DatasetStatement"]
    first, second, use, _ = statements
    assert isinstance(first, SetStatement) and isinstance(second, SetStatement)
    assert (first.key, first.value, first.position.line) == (
        "spark.sql.shuffle.partitions", "4", 2)
    assert (second.key, second.value, second.text) == (
        "sdp_expect.quarantine", "true", "SET sdp_expect.quarantine = true")
    assert isinstance(use, UseStatement) and use.text == "USE CATALOG main"
    translated = sql.translate(text, "nb.sql")
    assert "SET spark.sql.shuffle.partitions = 4;" in translated
    assert "USE CATALOG main;" in translated


def test_a_set_ended_by_a_semicolon_on_its_line_is_unchanged() -> None:
    statements = parse("SET a.b = 1; SET c = 2;\nCREATE LIVE TABLE t AS SELECT 1;", "f.sql")
    assert [(s.key, s.value) for s in statements if isinstance(s, SetStatement)] == [
        ("a.b", "1"), ("c", "2")]


# --------------------------------------------------------------------------- missing ';'


@pytest.mark.parametrize(("text", "line", "column"), [
    ("CREATE LIVE TABLE a AS SELECT 1\nCREATE LIVE TABLE b AS SELECT 2\n", 2, 1),
    ("CREATE LIVE TABLE a AS SELECT 1 CREATE OR REFRESH LIVE TABLE b AS SELECT 2", 1, 33),
    ("CREATE OR REFRESH STREAMING TABLE t\n  CREATE FLOW f AS INSERT INTO t BY NAME "
     "SELECT * FROM STREAM(s)", 2, 3),
    ("CREATE LIVE TABLE a AS SELECT 1\nSET spark.sql.shuffle.partitions = 4\n", 2, 1),
    ("CREATE LIVE VIEW v AS SELECT * FROM x\nUSE SCHEMA s\n", 2, 1),
])
def test_a_statement_running_into_the_next_is_sdpx_sql_302_at_the_second(
        text: str, line: int, column: int) -> None:
    error = raised(text, "f.sql")
    assert (error.code, error.location) == ("SDPX-SQL-302", f"f.sql:{line}:{column}")
    assert "no ';' between them" in error.detail
    found = check(text, "f.sql")
    assert [e.code for e in found.errors] == ["SDPX-SQL-302"]
    assert len(found.statements) == 2  # both read, neither merged nor skipped
    assert found.summary[1].position.line == line


def test_in_a_notebook_cell_the_error_names_both_lines_and_the_fix() -> None:
    text = notebook("CREATE LIVE TABLE a\nAS SELECT 1\nCREATE LIVE TABLE b\nAS SELECT 2")
    error = raised(text)
    assert str(error) == (
        "[SDPX-SQL-302] nb.sql:4:1: the statement at line 2 runs into the CREATE statement "
        "at line 4: there is no ';' between them (a statement ends at ';' or at the end of "
        "its notebook cell). Fix: end the statement of line 2 with ';', or start a new "
        "notebook cell (a line '-- COMMAND ----------') before line 4.")


@pytest.mark.parametrize("text", [
    "CREATE LIVE TABLE a AS SELECT 'x\nCREATE LIVE TABLE b' AS s",
    "CREATE LIVE TABLE a AS SELECT * FROM (\nCREATE\n) AS t",  # nonsense, but one statement
    "CREATE LIVE TABLE a AS SELECT\ncreate,\nset,\nuse\nFROM t",  # columns named so
    "CREATE LIVE TABLE a AS SELECT 1 AS x -- CREATE LIVE TABLE b AS SELECT 2\n",
    "CREATE LIVE TABLE a AS SELECT x\nFROM t\nWHERE set = 1",
])
def test_create_set_and_use_inside_a_statement_do_not_split_it(text: str) -> None:
    found = check(text, "f.sql")
    assert (len(found.statements), found.errors) == (1, [])


def test_include_refuses_a_merged_statement_while_the_pipeline_is_defined(
        make_pipeline: MakePipeline, tmp_path: Path) -> None:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "nb.sql").write_text(notebook(
        "CREATE LIVE TABLE a AS SELECT 1 AS x\nCREATE LIVE TABLE b AS SELECT 2 AS x"))
    files = tmp_path / "transformations"
    files.mkdir()
    (files / "include.py").write_text("from sdp_expect import sql\n\n"
                                      "sql.include('../notebooks/')\n")
    result = make_pipeline(files=files).run()
    assert isinstance(result.error, SdpExpectError), result.output
    assert result.error.code == "SDPX-SQL-302"
    assert result.error.location is not None and result.error.location.endswith("nb.sql:3:1")
    assert not result.exists("a") and not result.exists("b")


# --------------------------------------------------------------------------- legacy spellings


@pytest.mark.parametrize(("spelling", "kind", "private"), [
    ("CREATE LIVE TABLE", DatasetType.MATERIALIZED_VIEW, False),
    ("CREATE OR REFRESH LIVE TABLE", DatasetType.MATERIALIZED_VIEW, False),
    ("CREATE TEMPORARY LIVE TABLE", DatasetType.MATERIALIZED_VIEW, True),
    ("CREATE OR REFRESH TEMPORARY LIVE TABLE", DatasetType.MATERIALIZED_VIEW, True),
    ("CREATE OR REFRESH PRIVATE MATERIALIZED VIEW", DatasetType.MATERIALIZED_VIEW, True),
    ("CREATE STREAMING LIVE TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE OR REFRESH STREAMING LIVE TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE INCREMENTAL LIVE TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE OR REFRESH INCREMENTAL LIVE TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE TEMPORARY STREAMING LIVE TABLE", DatasetType.STREAMING_TABLE, True),
    ("CREATE OR REFRESH TEMPORARY STREAMING LIVE TABLE", DatasetType.STREAMING_TABLE, True),
    ("CREATE OR REFRESH PRIVATE STREAMING TABLE", DatasetType.STREAMING_TABLE, True),
    ("CREATE LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE TEMPORARY LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE STREAMING LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE TEMPORARY STREAMING LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE INCREMENTAL LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("create or refresh streaming live table", DatasetType.STREAMING_TABLE, False),
])
def test_every_legacy_spelling_maps_to_an_open_source_dataset(
        spelling: str, kind: DatasetType, private: bool) -> None:
    text = notebook(f"{spelling} LIVE.t (\n  CONSTRAINT `has id` EXPECT (id IS NOT NULL)\n)\n"
                    "AS SELECT * FROM STREAM(LIVE.src)")
    (statement,) = parse(text, "nb.sql")
    assert isinstance(statement, DatasetStatement)
    assert (statement.type, statement.private, statement.name.dataset) == (kind, private, "t")
    assert statement.written_as == spelling
    translated = sql.translate(text, "nb.sql")
    assert f"\nCREATE {kind.value} t\n" in translated
    assert ("published in the catalog like the others" in translated) is private


def legacy_table() -> list[tuple[list[str], str, bool]]:
    """The rows of docs/sql.md's legacy-spellings table: spellings, target type, published."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "sql.md").read_text()
    section = doc.split("### Legacy spellings", 1)[1].split("\n\n|", 1)[1]
    table = ("|" + section).split("\n\n", 1)[0].splitlines()[2:]
    rows = []
    for line in table:
        spellings, _, target = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows.append((re.findall(r"`(CREATE [A-Z ]+)`", spellings),
                     re.findall(r"`CREATE ([A-Z ]+)`", target)[0],
                     "published" in target))
    return rows


def test_the_legacy_table_of_the_docs_is_what_the_reader_does() -> None:
    table = legacy_table()
    assert len(table) == 9
    for spellings, target, published in table:
        assert spellings, target
        for spelling in spellings:
            for written in (spelling, spelling.replace("CREATE", "CREATE OR REFRESH", 1)):
                (statement,) = parse(f"{written} t AS SELECT * FROM STREAM(LIVE.src)", "d.sql")
                assert isinstance(statement, DatasetStatement), written
                assert statement.type.value == target, written
                assert statement.private is published, written


def test_migrate_includes_a_notebook_whose_only_sql_is_in_sql_cells(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "nb.sql").write_text(notebook(
        "-- MAGIC %md\n-- MAGIC # Only a %sql cell",
        "-- MAGIC %sql\n-- MAGIC CREATE LIVE TABLE a\n-- MAGIC AS SELECT 1 AS x"))
    result = migrate(project, tmp_path / "oss")
    assert result.sql_files == ["nb.sql"]
    assert rows_of(result.sql_statements["nb.sql"]) == [("materialized view", "a", 8)]
    assert result.of(NOT_CONVERTED) == []


@pytest.mark.parametrize("spelling", [
    "CREATE STREAMING VIEW", "CREATE PRIVATE LIVE VIEW", "CREATE LIVE MATERIALIZED VIEW",
    "CREATE STREAMING MATERIALIZED VIEW", "CREATE PRIVATE VIEW",
])
def test_a_spelling_it_cannot_map_is_an_error_at_its_line(spelling: str) -> None:
    text = notebook("CREATE LIVE TABLE a AS SELECT 1", f"{spelling} v AS SELECT 1")
    error = raised(text)
    assert (error.code, error.location) == ("SDPX-SQL-302", "nb.sql:6:1")
    assert f"{spelling[len('CREATE '):]} is not a pipeline dataset" in error.detail
    assert [s.name for s in check(text, "nb.sql").summary] == ["a"]


# --------------------------------------------------------------------------- a real pipeline

SCHEMA = "order_id INT, customer STRING, amount DOUBLE, region STRING"
COLUMNS = ["order_id", "customer", "amount", "region"]
ORDERS = [
    (1, "alice", 120.5, "eu"),
    (2, "bob", 35.0, "us"),
    (3, "carol", -12.0, "eu"),
    (None, "dave", 80.0, "us"),
    (5, None, 15.0, "eu"),
    (6, "erin", 60.0, "eu"),
    (7, "alice", 10.0, "us"),
]

SOURCES = """\
from sdp_expect import pipelines as dp


@dp.temporary_view
def orders_landing():
    # What the notebook read with cloud_files() on Databricks: a local JSON folder.
    return spark.readStream.schema({schema!r}).json({inbox!r})
"""

INCLUDE = """\
import json

from sdp_expect import sql

included = sql.include("../notebooks/")
with open({out!r}, "w", encoding="utf-8") as handle:
    json.dump([{{"file": t.file,
                 "statements": [[s.kind, s.name, s.position.line] for s in t.summary]}}
               for t in included], handle)
"""


@pytest.fixture(scope="module")
def notebook_run(spark_server: SparkServer, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[RunResult, Path]:
    """Both notebooks, unchanged, through sql.include in one real pipeline run."""
    root = tmp_path_factory.mktemp("notebooks")
    inbox = root / "inbox"
    inbox.mkdir()
    (inbox / "1.json").write_text("".join(
        json.dumps(dict(zip(COLUMNS, row, strict=True))) + "\n" for row in ORDERS))
    shutil.copytree(NOTEBOOKS, root / "notebooks")
    files = root / "transformations"
    files.mkdir()
    (files / "sources.py").write_text(SOURCES.format(schema=SCHEMA, inbox=str(inbox)))
    (files / "notebooks.py").write_text(INCLUDE.format(out=str(root / "included.json")))
    result = Pipeline(spark_server, root / "run", files=files).run()
    assert result.ok, result.output
    return result, root


def test_include_validate_translate_and_migrate_read_the_same_statements(
        notebook_run: tuple[RunResult, Path], tmp_path: Path) -> None:
    result, root = notebook_run
    paths = sorted((root / "notebooks").glob("*.sql"))
    assert [p.name for p in paths] == sorted(EXPECTED)

    # sql.include, as the real pipeline registered the files
    included = {Path(entry["file"]).name: [tuple(s) for s in entry["statements"]]
                for entry in json.loads((root / "included.json").read_text())}
    # sdp-expect validate
    validated = {p.name: rows_of(read_sql_file(str(p)).summary) for p in paths}
    report = validate_paths([str(root / "notebooks")])
    assert (report.ok, report.files_checked, report.rules_checked) == (True, 2, 5)
    # sdp-expect translate
    translated = {Path(t.file).name: rows_of(t.summary)
                  for t in sql.translate_files([str(p) for p in paths])}
    # sdp-expect migrate
    migrated_result = migrate(root / "notebooks", tmp_path / "oss")
    assert migrated_result.of(NOT_CONVERTED) == []
    migrated = {name: rows_of(summary)
                for name, summary in migrated_result.sql_statements.items()}

    assert included == EXPECTED
    assert validated == EXPECTED
    assert translated == EXPECTED
    assert migrated == EXPECTED
    # and the pipeline holds every dataset the statements declare (views aside)
    for name, rows in EXPECTED.items():
        for kind, dataset, _ in rows:
            if kind in ("materialized view", "streaming table"):
                assert dataset is not None and result.exists(dataset), (name, dataset)
            elif kind == "temporary view":
                assert dataset is not None and not result.exists(dataset), (name, dataset)


METRICS = ["dataset", "expectation", "action", "constraint", "passed_records",
           "failed_records", "total_records", "dropped_records"]


def rows(result: RunResult, table: str, columns: Optional[list[str]] = None, *,
         quarantined: bool = False) -> list[tuple[Any, ...]]:
    """``table``'s rows, sorted; of a quarantine, the records and their failed rules
    (its key and update: tests/test_quarantine_records.py)."""
    frame = result.table(table)
    if columns is not None:
        frame = frame.select(*columns)
    if quarantined:
        frame = frame.drop(*QUARANTINE_COLUMNS[1:])
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def test_the_exported_notebook_runs_and_every_table_holds_the_expected_rows(
        notebook_run: tuple[RunResult, Path]) -> None:
    result, _ = notebook_run
    assert rows(result, "orders_bronze") == sorted([
        (1, "alice", 120.5, "eu"), (2, "bob", 35.0, "us"), (5, None, 15.0, "eu"),
        (6, "erin", 60.0, "eu"), (7, "alice", 10.0, "us")], key=repr)
    assert result.table("orders_bronze").columns == COLUMNS
    assert rows(result, "orders_bronze_quarantine", quarantined=True) == sorted([
        (3, "carol", -12.0, "eu", ["positive amount"]),
        (None, "dave", 80.0, "us", ["valid order id"])], key=repr)
    assert result.table("orders_bronze_dq_batches").selectExpr("sum(_records)").collect()[0][0] == 7
    assert rows(result, "orders_bronze_dq_metrics", METRICS) == sorted([
        ("orders_bronze", "valid order id", "drop", "order_id IS NOT NULL", 6, 1, 7, 2),
        ("orders_bronze", "positive amount", "drop", "amount > 0", 6, 1, 7, 2)], key=repr)
    assert rows(result, "customer_totals") == sorted([
        ("alice", 130.5, 2), ("bob", 35.0, 1), ("erin", 60.0, 1)], key=repr)
    assert rows(result, "customer_totals_quarantine", quarantined=True) == [
        (None, 15.0, 1, ["known customer"])]
    assert rows(result, "customer_totals_dq_metrics", METRICS) == [
        ("customer_totals", "known customer", "drop", "customer IS NOT NULL", 3, 1, 4, 1)]
    assert rows(result, "eu_summary") == [(3, 195.5)]
    assert rows(result, "big_orders") == [(1, 120.5), (6, 60.0)]
    assert rows(result, "us_orders") == [(2, "bob"), (7, "alice")]
    # the markdown cell's SQL-looking text defined nothing; views are not published
    for absent in ("not_a_table", "orders_stream", "eu_orders", "eu_orders_quarantine",
                   "eu_orders_dq_metrics", "us_orders_dq_metrics", "big_orders_quarantine"):
        assert not result.exists(absent), absent
    # the legacy spellings, run
    assert rows(result, "legacy_streaming") == sorted(
        [(1, 120.5), (2, 35.0), (5, 15.0), (6, 60.0), (7, 10.0)], key=repr)
    assert rows(result, "legacy_private_streaming") == [(1,), (2,), (5,), (6,), (7,)]
    assert rows(result, "legacy_private_mv") == sorted(
        [(1, "eu"), (2, "us"), (5, "eu"), (6, "eu"), (7, "us")], key=repr)
    assert rows(result, "legacy_private_mv_dq_metrics", METRICS) == [
        ("legacy_private_mv", "us region", "warn", "region = 'us'", 2, 3, 5, 0)]
    assert rows(result, "legacy_from_sql_cell") == [(5,)]
    assert rows(result, "legacy_target") == [(6,), (7,)]
