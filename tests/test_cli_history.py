"""``sdp-expect run`` writes the history table; ``history record`` and ``show`` (true runs,
docs/history.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import NEWEST_LINE, sdp_expect, served, write_project

from sdp_expect.base import names

pytestmark = [pytest.mark.usefixtures("own_jvm"), pytest.mark.timeout(1800)]

CODE = """\
from pyspark.sql import SparkSession
from sdp_expect import pipelines as dp

spark = SparkSession.active()

@dp.materialized_view
@dp.expect("small", "amount < 10")
@dp.expect_or_drop("valid_id", "id IS NOT NULL")
def orders():
    return spark.read.schema("id INT, amount INT").json("{orders}")

@dp.table
@dp.expect_or_drop("not_negative", "amount >= 0")
def events():
    return spark.readStream.schema("id INT, amount INT").json("{events}")
"""


def _lines(folder: Path, name: str, rows: list[tuple[Any, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps({"id": i, "amount": a}) + "\n"
                                       for i, a in rows))


def _by_update(rows: list[dict[str, Any]]) -> list[set[tuple[Any, ...]]]:
    """The history's rows per update, in the order of the updates."""
    updates: dict[str, tuple[str, set[tuple[Any, ...]]]] = {}
    for row in rows:
        _, found = updates.setdefault(row["update_id"], (str(row["update_time"]), set()))
        found.add((row["dataset"], row["expectation"], row["passed_records"],
                   row["failed_records"], row["total_records"], row["dropped_records"]))
    return [found for _, found in sorted(updates.values(), key=lambda item: item[0])]


@NEWEST_LINE
def test_two_runs_and_a_record_append_each_updates_counts(tmp_path: Path) -> None:
    orders, events = tmp_path / "data" / "orders", tmp_path / "data" / "events"
    project = write_project(tmp_path / "project",
                            CODE.format(orders=orders, events=events))
    _lines(orders, "1.json", [(1, 5), (None, 20), (3, 30)])
    _lines(events, "1.json", [(1, 1), (2, -2)])
    # Through the project's warm server (one server start for every command, CI's time).
    with served(project, keep_tables=True) as warm:
        first = sdp_expect("run", "--spec", str(project), "--progress", "none", cwd=tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        _lines(orders, "1.json", [(4, 1)])
        _lines(events, "2.json", [(3, -3), (4, -4), (5, 5)])
        second = sdp_expect("run", "--spec", str(project), "--progress", "none", cwd=tmp_path)
        assert second.returncode == 0, second.stdout + second.stderr
        # After an update the user ran another way: one command, nothing new to read.
        recorded = sdp_expect("history", "record", "--spec", str(project), "--format", "json",
                              cwd=tmp_path)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        assert json.loads(recorded.stdout)["datasets"] == ["events", "orders"]

        # After `spark-pipelines run --refresh events`: only what was refreshed.
        only = sdp_expect("history", "record", "--spec", str(project), "--dataset", "events",
                          "--dataset", "nope", cwd=tmp_path)
        assert only.returncode == 0, only.stdout + only.stderr
        assert "recorded 1 row of events in " in only.stdout, only.stdout
        assert "not recorded: nope (no metrics table" in only.stderr, only.stderr
        shown = sdp_expect("history", "show", "--spec", str(project), "--format", "json",
                           "--updates", "1", cwd=tmp_path)
        assert shown.returncode == 0, shown.stdout + shown.stderr
    tables = warm.tables
    table = tables[names.HISTORY_TABLE]
    # The event-log view (a VARIANT column, in the Hive metastore): an event per update
    # and dataset.
    assert len(tables[names.EVENT_LOG_VIEW]) == 7
    assert {row["pipeline"] for row in table} == {"cli_test"}
    assert _by_update(table) == [
        {("orders", "small", 1, 2, 3, 1), ("orders", "valid_id", 2, 1, 3, 1),
         ("events", "not_negative", 1, 1, 2, 1)},
        {("orders", "small", 1, 0, 1, 0), ("orders", "valid_id", 1, 0, 1, 0),
         ("events", "not_negative", 1, 2, 3, 2)},
        # `record` cannot know the view was not refreshed since: its counts again
        # (docs/history.md#recording-after-spark-pipelines-run); the table read nothing.
        {("orders", "small", 1, 0, 1, 0), ("orders", "valid_id", 1, 0, 1, 0),
         ("events", "not_negative", 0, 0, 0, 0)},
        {("events", "not_negative", 0, 0, 0, 0)},
    ]
    assert _by_update(json.loads(shown.stdout)) == _by_update(table)[-1:]
