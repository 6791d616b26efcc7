"""report.trends: a rule's updates from history rows, and "recent" (docs/history.md#trends)."""

from __future__ import annotations

import datetime
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.cli.history import print_rows
from sdp_expect.quality.trends import RECENT_UPDATES, rule_trends

T0 = datetime.datetime(2026, 12, 1, 8, 0, 0)


def _row(update: int, failed: int, total: int, *, dataset: str = "orders",
         expectation: str = "amount_positive", pipeline: str = "shop",
         iso: bool = True) -> dict[str, Any]:
    when = T0 + datetime.timedelta(minutes=update)
    return {"pipeline": pipeline, "update_id": f"u{update:03d}",
            "update_time": when.isoformat() if iso else when, "dataset": dataset,
            "expectation": expectation, "action": "drop", "constraint": "amount > 0",
            "passed_records": total - failed, "failed_records": failed,
            "total_records": total, "dropped_records": failed,
            "dataset_kind": "materialized view", "last_batch_time": None}


def test_rows_become_one_trend_per_rule_oldest_first() -> None:
    rows = [_row(2, 1, 10), _row(1, 0, 10, iso=False), _row(1, 3, 4, expectation="x"),
            _row(1, 0, 1, pipeline="other")]
    trends = rule_trends(rows, pipeline="shop")
    assert [(t.dataset, t.expectation) for t in trends] == [("orders", "amount_positive"),
                                                            ("orders", "x")]
    assert [p.update_id for p in trends[0].points] == ["u001", "u002"]
    assert trends[0].latest.rate == Fraction(1, 10)
    assert trends[0].latest.percent == 10.0
    assert trends[1].recent_rate() is None and trends[1].change() is None
    assert len(rule_trends(rows)) == 3


def test_an_update_that_checked_nothing_has_no_rate_and_is_not_recent() -> None:
    trend = rule_trends([_row(1, 2, 10), _row(2, 0, 0), _row(3, 1, 10)])[0]
    assert trend.points[1].rate is None
    assert [p.update_id for p in trend.recent()] == ["u001"]
    assert trend.change() == Fraction(1, 10) - Fraction(2, 10)


def test_an_update_whose_view_was_restored_makes_no_point() -> None:
    """A failed update whose view went back to its last good data has rows that say so
    (``outcome`` FAILED, no counts; docs/history.md): they make no point, so the rule's
    latest point stays the last update that counted records."""
    failed = dict(_row(3, 0, 0), outcome="FAILED", restored_version=7, passed_records=None,
                  failed_records=None, total_records=None, dropped_records=None)
    rows = [dict(_row(1, 2, 10), outcome=None), dict(_row(2, 1, 10), outcome="COMPLETED"),
            failed]
    trend = rule_trends(rows)[0]
    assert [p.update_id for p in trend.points] == ["u001", "u002"]
    assert rule_trends([failed]) == []


counts = st.tuples(st.integers(0, 50), st.integers(0, 50)).map(
    lambda pair: (min(pair), max(pair)))


@given(st.lists(counts, min_size=1, max_size=12), st.integers(0, 8))
def test_the_recent_rate_pools_the_last_updates_that_checked_records(
        updates: list[tuple[int, int]], window: int) -> None:
    trend = rule_trends([_row(i, f, t) for i, (f, t) in enumerate(updates)])[0]
    # oracle: walk back from the update before the latest, keep those with records
    kept = [(f, t) for f, t in reversed(updates[:-1]) if t > 0][:window]
    failed, total = sum(f for f, _ in kept), sum(t for _, t in kept)
    expected = Fraction(failed, total) if total else None
    assert trend.recent_rate(window) == expected
    assert len(trend.recent(window)) == len(kept)
    latest_f, latest_t = updates[-1]
    latest = Fraction(latest_f, latest_t) if latest_t else None
    assert trend.change(window) == (None if latest is None or expected is None
                                    else latest - expected)
    assert RECENT_UPDATES == 5


def test_history_show_says_which_updates_failed_and_where_they_went_back(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``sdp-expect history show``'s text: a failed update's row has no counts and says
    the version it was restored to; a usual row leaves the outcome blank."""
    failed = dict(_row(3, 0, 0), outcome="FAILED", restored_version=7, passed_records=None,
                  failed_records=None, total_records=None, dropped_records=None)
    print_rows([failed, dict(_row(2, 1, 10), outcome="COMPLETED")], "text")
    heading, restored, usual = capsys.readouterr().out.splitlines()
    assert heading.split() == ["update", "time", "dataset", "rule", "action", "passed",
                               "failed", "total", "dropped", "outcome"]
    assert restored.split()[-6:] == ["drop", "failed,", "restored", "to", "version", "7"]
    assert usual.split()[-5:] == ["drop", "9", "1", "10", "1"]
