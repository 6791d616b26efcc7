"""A rule's failure rate over the recorded updates (docs/history.md#trends).

The history table (:mod:`sdp_expect.quality.history_table`) holds one row per update,
dataset and expectation. This module turns those rows (as :func:`read_history` returns
them) into one :class:`RuleTrend` per pipeline, dataset and expectation: its updates
oldest first, each with its counts and failure rate, and the comparison of the latest
update with the recent ones. Pure Python over rows: no Spark here, so the report, the
run summary and the alerts read one definition of "recent".

**Recent.** The :data:`RECENT_UPDATES` updates before the latest one in which the
rule checked at least one record (an update of a streaming table that read nothing
checks none, and says nothing about the rate). Their **recent rate** is pooled: the
sum of their failed records over the sum of their records checked, so that a small
update weighs what its records weigh. Rates are exact fractions; :meth:`Point.percent`
gives them as numbers for output.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterable, Mapping, Optional

from sdp_expect.base.names import OUTCOME_FAILED

__all__ = [
    "Point",
    "RECENT_UPDATES",
    "RuleTrend",
    "rule_trends",
]

RECENT_UPDATES = 5
"""How many earlier updates (each with records checked) make "the recent ones"."""


def _rate(failed: int, total: int) -> Optional[Fraction]:
    return Fraction(failed, total) if total > 0 else None


def _percent(rate: Optional[Fraction]) -> Optional[float]:
    return None if rate is None else float(rate * 100)


@dataclass(frozen=True)
class Point:
    """One update's counts for one rule.

    :param update_id: The update's id in the history.
    :param update_time: When the update was recorded (UTC, as stored).
    :param failed: The records that violated the rule.
    :param total: The records checked.
    """

    update_id: str
    update_time: datetime.datetime
    failed: int
    total: int

    @property
    def rate(self) -> Optional[Fraction]:
        """``failed / total``, exact; ``None`` when no record was checked."""
        return _rate(self.failed, self.total)

    @property
    def percent(self) -> Optional[float]:
        """The rate in percent (``None`` when no record was checked)."""
        return _percent(self.rate)


@dataclass(frozen=True)
class RuleTrend:
    """One rule's updates, oldest first.

    :param pipeline: The pipeline's name as recorded.
    :param dataset: The dataset's name.
    :param expectation: The rule's name.
    :param action: ``warn``, ``drop`` or ``fail`` (as in the latest update).
    :param points: Its updates, oldest first (at least one).
    """

    pipeline: str
    dataset: str
    expectation: str
    action: str
    points: tuple[Point, ...]

    @property
    def latest(self) -> Point:
        """The newest update."""
        return self.points[-1]

    def recent(self, updates: int = RECENT_UPDATES) -> tuple[Point, ...]:
        """The ``updates`` updates before the latest that checked records, oldest first."""
        earlier = [p for p in self.points[:-1] if p.total > 0]
        return tuple(earlier[-updates:]) if updates > 0 else ()

    def recent_rate(self, updates: int = RECENT_UPDATES) -> Optional[Fraction]:
        """The pooled rate of :meth:`recent`: their failed over their checked records;
        ``None`` when there is no such update."""
        points = self.recent(updates)
        return _rate(sum(p.failed for p in points), sum(p.total for p in points))

    def change(self, updates: int = RECENT_UPDATES) -> Optional[Fraction]:
        """The latest rate minus the recent rate (a fraction; times 100: percentage
        points); ``None`` when either is unknown."""
        latest, recent = self.latest.rate, self.recent_rate(updates)
        return None if latest is None or recent is None else latest - recent


def _time(value: Any) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromisoformat(str(value))


def rule_trends(rows: Iterable[Mapping[str, Any]], *,
                pipeline: Optional[str] = None) -> list[RuleTrend]:
    """Group history rows into one trend per pipeline, dataset and expectation.

    :param rows: History rows (the table's columns, :data:`HISTORY_COLUMNS`), in any order
        (a row whose ``outcome`` is ``FAILED`` has no counts and makes no point);
        ``update_time`` a ``datetime`` or its ISO text (as :func:`read_history` gives it).
    :param pipeline: Only this pipeline's rows (``None``: every pipeline's).
    :returns: The trends sorted by pipeline, dataset and expectation; each trend's points
        ordered by update time, then update id.
    """
    grouped: dict[tuple[str, str, str], list[tuple[Point, str]]] = {}
    for row in rows:
        if pipeline is not None and row["pipeline"] != pipeline:
            continue
        if row.get("outcome") == OUTCOME_FAILED:
            continue  # a view brought back to its last good data: the update counted nothing
        key = (str(row["pipeline"]), str(row["dataset"]), str(row["expectation"]))
        point = Point(update_id=str(row["update_id"]), update_time=_time(row["update_time"]),
                      failed=int(row["failed_records"] or 0),
                      total=int(row["total_records"] or 0))
        grouped.setdefault(key, []).append((point, str(row["action"])))
    trends = []
    for (name, dataset, expectation), entries in sorted(grouped.items()):
        entries.sort(key=lambda entry: (entry[0].update_time, entry[0].update_id))
        trends.append(RuleTrend(pipeline=name, dataset=dataset, expectation=expectation,
                                action=entries[-1][1],
                                points=tuple(point for point, _ in entries)))
    return trends
