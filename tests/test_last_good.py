"""Which views a failed update brings back, and to which version (no Spark here: the
runs on Delta are in ``test_table_formats_spark.py``).

The version rule is stated as a property against a simulated Delta log: SDP truncates
every materialized view it refreshes when an update starts, may change its metadata,
and each good update writes the view's records; after a failed one sdp-expect restores
the version before the newest ``TRUNCATE``, which must hold the last good update's
records, whatever came before (failures in a row, restores, metadata changes).
"""

from __future__ import annotations

from typing import Optional

from hypothesis import example, given
from hypothesis import strategies as st

from sdp_expect.base.definitions import DefinedDataset
from sdp_expect.base.table_formats import DELTA, PARQUET, run_format
from sdp_expect.quality.last_good import Restored, version_before_truncate, views_to_restore
from sdp_expect.report.text import restored_lines
from sdp_expect.runtime.spark_pipelines import full_refresh_of

MV, ST = "materialized view", "streaming table"

DATASETS = [
    DefinedDataset("silver", MV, "silver"),
    DefinedDataset("silver_quarantine", MV, "silver"),
    DefinedDataset("silver_dq_metrics", MV, "silver"),
    DefinedDataset("gold", MV, "gold"),
    DefinedDataset("gold_dq_metrics", MV, "gold"),
    DefinedDataset("events", ST, "events"),
    DefinedDataset("events_quarantine", ST, "events"),
    DefinedDataset("events_dq_metrics", MV, "events"),
    DefinedDataset("bronze", MV, "bronze"),
]


def _flows(**states: str) -> dict[str, str]:
    every = {d.name: "COMPLETED" for d in DATASETS}
    every.update(states)
    return {f"spark_catalog.default.{name}": state for name, state in every.items()}


def test_a_failed_view_comes_back_with_its_companions_and_the_views_skipped_after_it() -> None:
    flows = _flows(silver="FAILED", gold="SKIPPED", gold_dq_metrics="SKIPPED")
    assert views_to_restore(DATASETS, flows) == [
        "silver", "silver_quarantine", "silver_dq_metrics", "gold", "gold_dq_metrics"]


def test_nothing_comes_back_when_every_flow_completed_or_was_not_selected() -> None:
    assert views_to_restore(DATASETS, _flows()) == []
    assert views_to_restore(DATASETS, _flows(silver="EXCLUDED")) == []


def test_streaming_tables_keep_their_batches_and_only_their_metrics_view_comes_back() -> None:
    """A streaming table's checkpoint goes with its data: it is never restored."""
    flows = _flows(events="FAILED", events_dq_metrics="SKIPPED")
    assert views_to_restore(DATASETS, flows) == ["events_dq_metrics"]


def test_a_full_refresh_is_never_undone() -> None:
    flows = _flows(silver="FAILED", gold="SKIPPED")
    assert views_to_restore(DATASETS, flows, full_refresh_all=True) == []
    assert views_to_restore(DATASETS, flows, full_refresh=["default.silver"]) == [
        "silver_quarantine", "silver_dq_metrics", "gold", "gold_dq_metrics"]


def test_a_view_the_run_did_not_name_is_left_alone() -> None:
    """A dataset of another pipeline in the same definitions is not this run's."""
    flows = {"spark_catalog.default.silver": "FAILED"}
    assert views_to_restore(DATASETS, flows) == ["silver"]


def test_the_run_s_full_refresh_options_are_read_from_its_command() -> None:
    assert full_refresh_of(["run", "--full-refresh", "a,b", "--full-refresh=c"]) == (
        ["a", "b", "c"], False)
    assert full_refresh_of(["run", "--full-refresh-all"]) == ([], True)
    assert full_refresh_of(["run", "--refresh", "a"]) == ([], False)


def test_the_run_s_format_is_the_setting_then_spark_s_default() -> None:
    assert run_format({}, {}) is PARQUET
    assert run_format({"sdp_expect.format": "delta"}, {}) is DELTA
    assert run_format({}, {"sdp_expect.format": "delta"}) is DELTA
    assert run_format({}, {"spark.sql.sources.default": "delta"}) is DELTA
    assert DELTA.restorable and not PARQUET.restorable


def test_the_summary_says_where_each_view_went_and_why_not() -> None:
    lines = restored_lines([Restored("silver", 4),
                            Restored("gold", reason="it has no earlier version")])
    assert lines[1] == "== The failed update's views"
    assert lines[2:] == ["  silver  restored to version 4",
                         "  gold    not restored: it has no earlier version"]
    assert restored_lines([]) == []


UPDATE = st.sampled_from(["good", "failed", "good, new column", "failed, new column"])


@example(updates=["good", "failed", "failed", "good", "failed"])
@example(updates=["failed", "good", "failed"])
@example(updates=["good, new column", "failed, new column"])
@given(updates=st.lists(UPDATE, min_size=1, max_size=12))
def test_the_version_restored_holds_the_last_good_update_s_records(updates: list[str]) -> None:
    log: list[tuple[str, Optional[int]]] = []  # (operation, the records it leaves: an update)

    def holds() -> Optional[int]:
        return log[-1][1] if log else None

    last_good: Optional[int] = None
    for number, update in enumerate(updates):
        if log:  # SDP: an existing view is truncated first, its metadata changed after
            log.append(("TRUNCATE", None))
        else:
            log.append(("CREATE TABLE", None))
        if "new column" in update:
            log.append(("ADD COLUMNS", holds()))
        if update.startswith("good"):
            log.append(("WRITE", number))
            last_good = number
            continue
        version = version_before_truncate([(v, op) for v, (op, _) in enumerate(log)])
        if last_good is None:
            assert version is None or log[version][1] is None
            continue
        assert version is not None
        assert log[version][1] == last_good, (updates, log, version)
        log.append(("RESTORE", log[version][1]))
