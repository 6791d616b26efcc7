"""This update's failure rates compared with the recent ones, and its alerts, as
``sdp-expect run`` shows them (docs/history.md#the-comparison-in-the-run-summary,
docs/alerts.md).

Pure functions from the rules' trends (:func:`sdp_expect.quality.trends.rule_trends`
over the rows :func:`sdp_expect.quality.history_table.read_recent` gives) and the
alerts (:func:`sdp_expect.quality.alerts.evaluate_alerts`) to text and JSON: no Spark.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from sdp_expect.base.terminal import paint
from sdp_expect.quality.alerts import Alert, percent_text, points_text, rounded_percent
from sdp_expect.quality.trends import RECENT_UPDATES, RuleTrend

__all__ = ["add_trends", "alert_lines", "comparison_lines", "this_update", "trend_dict"]


def this_update(trends: Iterable[RuleTrend], update_id: Optional[str]) -> list[RuleTrend]:
    """The trends whose latest point is the update ``update_id`` (``None``: all)."""
    return [t for t in trends if update_id is None or t.latest.update_id == update_id]


def trend_dict(trend: RuleTrend) -> dict[str, Any]:
    """A rule's comparison as JSON (a rule's ``trend`` in ``run --format json``): this
    update's counts and rate, the recent updates' pooled counts and rate, the change in
    percentage points; percentages rounded half up to 3 places, counts exact."""
    latest, points = trend.latest, trend.recent(RECENT_UPDATES)
    recent = trend.recent_rate(RECENT_UPDATES)
    change = trend.change(RECENT_UPDATES)
    return {"update_id": latest.update_id, "failed_records": latest.failed,
            "total_records": latest.total, "failure_percentage": rounded_percent(latest.rate),
            "recent_updates": len(points),
            "recent_failed_records": sum(p.failed for p in points),
            "recent_total_records": sum(p.total for p in points),
            "recent_failure_percentage": rounded_percent(recent),
            "change_points": rounded_percent(change)}


def add_trends(document: dict[str, Any], trends: Sequence[RuleTrend]) -> None:
    """Give each rule of ``document`` (:func:`sdp_expect.report.as_json.report_dict`'s)
    that has a trend its ``trend`` object (:func:`trend_dict`)."""
    by_rule = {(t.dataset, t.expectation): t for t in trends}
    for dataset in document.get("datasets", []):
        for rule in dataset.get("rules", []):
            trend = by_rule.get((dataset.get("dataset"), rule.get("expectation")))
            if trend is not None:
                rule["trend"] = trend_dict(trend)


def _count(value: int) -> str:
    return f"{value:,}"


def _comparison(trend: RuleTrend) -> tuple[str, str, str]:
    """This update's part, the recent part and the change of a rule's line."""
    latest = trend.latest
    if latest.rate is None:
        return "no record checked", "", ""
    now = f"{_count(latest.failed)} of {_count(latest.total)} failed ({percent_text(latest.rate)})"
    recent, change = trend.recent_rate(RECENT_UPDATES), trend.change(RECENT_UPDATES)
    if recent is None or change is None:
        return now, "no earlier update", ""
    count = len(trend.recent(RECENT_UPDATES))
    return (now, f"recent {percent_text(recent)} over {count} update{'s' if count != 1 else ''}",
            f"({points_text(change)})")


def comparison_lines(trends: Sequence[RuleTrend], *, color: bool = False) -> list[str]:
    """The summary's section comparing each rule's rate in this update with its recent
    pooled rate (``trends``: this update's, :func:`this_update`); none without trends."""
    if not trends:
        return []
    lines = ["", paint(f"== Compared with the recent updates (pooled rate of up to "
                       f"{RECENT_UPDATES} earlier updates that checked records)", "bold",
                       color)]
    rows = [(t, (t.expectation, t.action, *_comparison(t))) for t in trends]
    widths = [max(len(cells[i]) for _, cells in rows) for i in range(4)]
    dataset = None
    for trend, cells in rows:
        if trend.dataset != dataset:
            dataset = trend.dataset
            lines.append(paint(dataset, "bold", color))
        change = trend.change(RECENT_UPDATES)
        style = "yellow" if change is not None and change > 0 else "dim"
        text = "  ".join(cell.ljust(width) for cell, width in
                         zip(cells[:4], widths, strict=True)) + "  "
        lines.append(("    " + text + paint(cells[4], style, color)).rstrip())
    return lines


def alert_lines(alerts: Sequence[Alert], *, color: bool = False) -> list[str]:
    """The summary's section of the alerts that fired (none: no section)."""
    if not alerts:
        return []
    count = len(alerts)
    lines = ["", paint(f"== Alerts: {count} triggered (docs/alerts.md)", "bold yellow",
                       color)]
    lines.extend("  " + paint(f"ALERT {alert.kind}: ", "bold yellow", color) + alert.text()
                 for alert in alerts)
    return lines
