"""A failed update on parquet, through ``sdp-expect run``: Spark's file tables keep no
earlier version, so the views the failure emptied stay empty until the next good
update, and the run says so, with why and the fix (``last_good_project.py``; the same
project on Delta Lake comes back to its last good data: ``test_table_formats_spark.py``).
"""

from __future__ import annotations

from pathlib import Path

from last_good_project import FAILING_MESSAGE, UPDATES, LastGoodProject, Tables
from sdp_runner import SparkServer


def test_on_parquet_a_failed_update_leaves_its_views_empty_and_says_why(
        spark_server: SparkServer, tmp_path: Path) -> None:
    project = LastGoodProject.create(spark_server, tmp_path / "project")
    for number, (kind, rows) in enumerate(UPDATES):
        status, summary, events = project.update(rows)
        if kind == "good":
            assert status == 0, events[-3000:]
            assert summary["restored"] == []
            assert project.tables() == Tables.of(rows), number
            continue
        assert status == 1, events[-3000:]
        assert FAILING_MESSAGE in events, events[-3000:]
        restored = {entry["table"]: entry for entry in summary["restored"]}
        assert set(restored) == {"orders", "orders_quarantine", "orders_dq_metrics", "totals"}
        assert all(entry["version"] is None and "(parquet) keeps no earlier version"
                   in entry["reason"] and "sdp_expect.format: delta" in entry["reason"]
                   for entry in restored.values()), restored
        after = project.tables()
        assert (after.orders, after.totals, after.metrics) == ([], (0, None), {})
    # Nothing was restored, so the failed update recorded no row: three updates, each
    # with its own counts.
    outcomes = [{r["outcome"] for r in update} for update in project.history()]
    assert outcomes == [{"COMPLETED"}] * 3, outcomes
