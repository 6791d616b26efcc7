"""report.svg_chart: a rule's failure rate as an SVG chart, without a browser; and the
report's trends from history rows (model, JSON, HTML) without Spark
(docs/history.md#trends-in-the-report)."""

from __future__ import annotations

import datetime
import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdp_expect.quality.summary import TableReading
from sdp_expect.quality.trends import rule_trends
from sdp_expect.report.as_json import to_json
from sdp_expect.report.build import build_report
from sdp_expect.report.html import render_html
from sdp_expect.report.svg_chart import ChartPoint, line_chart, percent_text, trend_chart

SVG = "{http://www.w3.org/2000/svg}"


def _classes(element: ET.Element) -> set[str]:
    return set((element.get("class") or "").split())


def _all(svg: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in svg.iter(SVG + tag) if cls in _classes(e)]


def _xml_text(text: str) -> str:
    """``text`` as the chart is expected to show it: on one line, and what XML can hold."""
    return "".join(" " if c in "\t\n\r" else c if ("\x20" <= c <= "\ud7ff")
                   or ("\ue000" <= c <= "\ufffd") or c >= "\U00010000" else "\ufffd"
                   for c in text)


# Any text, XML's own special characters and characters XML cannot hold included.
texts = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("<>&\"'\x00\x1b]]>"),
                max_size=12)
points = st.lists(st.builds(ChartPoint, percent=st.floats(0, 100), label=texts, title=texts),
                  min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(points, texts, texts)
def test_every_point_is_drawn_the_latest_once_and_every_text_escaped(
        series: list[ChartPoint], description: str, x_title: str) -> None:
    svg = ET.fromstring(line_chart(series, description=description, x_title=x_title))
    drawn = _all(svg, "circle", "point")
    assert len(drawn) == len(series)
    latest = _all(svg, "circle", "latest")
    assert latest == [drawn[-1]]
    # Each text arrives as given: escaped, not interpreted.
    assert svg.get("aria-label") == _xml_text(description) and svg.get("role") == "img"
    assert [c.findtext(SVG + "title") for c in drawn] == [_xml_text(p.title) for p in series]
    assert [e.text or "" for e in _all(svg, "text", "x-label")] == [_xml_text(x_title)]
    assert [e.text for e in _all(svg, "text", "y-label")] == ["failure rate (%)"]
    ends = [series[0]] if len(series) == 1 else [series[0], series[-1]]
    assert [e.text or "" for e in _all(svg, "text", "x-tick")] == [
        _xml_text(p.label) for p in ends]
    assert [e.text for e in _all(svg, "text", "latest-value")] == [
        percent_text(series[-1].percent)]
    ticks = [e.text for e in _all(svg, "text", "y-tick")]
    assert ticks[0] == "0%" and len(ticks) >= 5
    # The y axis holds every point: the highest tick is at least the greatest value.
    assert float((ticks[-1] or "").rstrip("%")) >= max(p.percent for p in series)


@settings(max_examples=60, deadline=None)
@given(points)
def test_a_higher_rate_is_drawn_higher(series: list[ChartPoint]) -> None:
    svg = ET.fromstring(line_chart(series, description="", x_title=""))
    ys = [float(c.get("cy") or "nan") for c in _all(svg, "circle", "point")]
    xs = [float(c.get("cx") or "nan") for c in _all(svg, "circle", "point")]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)  # oldest to newest, left to right
    for (p, y), (q, z) in zip(zip([s.percent for s in series], ys, strict=True),
                              zip([s.percent for s in series][1:], ys[1:], strict=True),
                              strict=False):
        assert (p < q) <= (y >= z) and (p == q) <= (y == z)
    ranked = sorted(zip([s.percent for s in series], ys, strict=True))
    assert [y for _, y in ranked] == sorted((y for _, y in ranked), reverse=True)


def test_an_empty_series_has_no_chart() -> None:
    with pytest.raises(ValueError):
        line_chart([], description="", x_title="")


T0 = datetime.datetime(2026, 12, 1, 9, 0, 0)


def _row(update: int, failed: int, total: int, *, expectation: str = "positive",
         pipeline: str = "shop") -> dict[str, Any]:
    return {"pipeline": pipeline, "update_id": f"u{update}",
            "update_time": (T0 + datetime.timedelta(minutes=update)).isoformat(),
            "dataset": "orders", "expectation": expectation, "action": "drop",
            "constraint": "amount > 0", "passed_records": total - failed,
            "failed_records": failed, "total_records": total, "dropped_records": failed,
            "dataset_kind": "materialized view", "last_batch_time": None}


def _reading(history: Any) -> TableReading:
    rows = [{"dataset": "orders", "expectation": e, "action": "drop", "constraint": "amount > 0",
             "passed_records": 7, "failed_records": 1, "total_records": 8,
             "dropped_records": 1} for e in ("positive", "<b>&amp;")]
    return TableReading(catalog="spark_catalog", database="default",
                        metrics=[{"table": "orders_dq_metrics", "comment": "", "rows": rows}],
                        quarantines=[], notes=[], history=history, history_updates=3)


def test_a_trend_skips_updates_that_checked_nothing() -> None:
    trend = rule_trends([_row(1, 1, 4), _row(2, 0, 0), _row(3, 1, 8)])[0]
    svg = ET.fromstring(trend_chart(trend, x_title="x") or "")
    assert [c.get("data-percent") for c in _all(svg, "circle", "point")] == ["25.0", "12.5"]
    assert "12.5%" in (svg.get("aria-label") or "")
    assert trend_chart(rule_trends([_row(1, 0, 0)])[0], x_title="x") is None


def test_the_report_carries_the_trends_to_json_and_html() -> None:
    rows = [_row(1, 1, 4), _row(2, 0, 0), _row(3, 1, 8), _row(3, 3, 8, pipeline="other"),
            _row(2, 2, 8, expectation="<b>&amp;")]
    report = build_report(_reading(rows), pipeline="shop")
    assert report.trends is not None and report.trends.capped  # 3 updates of at most 3
    document = json.loads(to_json(report))
    trend = document["trends"]["rules"][0]
    assert (trend["dataset"], trend["expectation"]) == ("orders", "<b>&amp;")
    positive = document["trends"]["rules"][1]
    assert [(p["failed_records"], p["total_records"], p["failure_percentage"])
            for p in positive["points"]] == [(1, 4, 25.0), (0, 0, None), (1, 8, 12.5)]
    page = render_html(report, pipeline="shop")
    assert page.count('class="trend-chart"') == 2
    assert "the last 3 recorded" in page and "1 update checked no record" in page
    assert "<b>&amp;" not in page and "&lt;b&gt;&amp;amp;" in page


def test_without_history_the_page_says_so() -> None:
    page = render_html(build_report(_reading([]), pipeline="shop"), pipeline="shop")
    assert "no history recorded yet" in page and "trend-chart" not in page
    # sdp-expect run's summary reads no history: no trends, no "trends" in its JSON
    unread = build_report(_reading(None), pipeline="shop")
    assert unread.trends is None and "trends" not in json.loads(to_json(unread))
    assert "Failure rate per update" not in render_html(unread)
