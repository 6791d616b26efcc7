"""A rule's failure rate over the recorded updates as an inline SVG chart (the HTML
report's trends, docs/history.md#trends-in-the-report).

Pure functions: data in, SVG text out. :func:`line_chart` draws any series of
percentages; :func:`trend_chart` draws a :class:`~sdp_expect.quality.trends.RuleTrend`
with it. The SVG is built with :mod:`xml.etree.ElementTree`, which escapes every text
and attribute (characters XML cannot hold are replaced first).

Why no plotting library: the page must work offline and be one file (no script, no
font or style from the network), which a static SVG does; the package has no plotting
dependency, and a line with points, two axes and a few labels is a few dozen lines.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Optional, Sequence

from sdp_expect.quality.trends import RuleTrend

__all__ = ["ChartPoint", "WIDTH", "HEIGHT", "line_chart", "percent_text", "trend_chart",
           "y_top"]

WIDTH = 380
"""The chart's width in CSS pixels."""
HEIGHT = 180
"""The chart's height in CSS pixels."""

_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 64, 12, 42
"""The margins around the plot area: axis labels left and below, the latest value right."""
_TOPS = ((1.0, 0.25), (2.0, 0.5), (5.0, 1.0), (10.0, 2.5), (20.0, 5.0), (50.0, 10.0),
         (100.0, 25.0))
"""The y axis' possible tops (percent) and their tick steps."""
_INK, _MUTED, _GRID, _LINE, _POINT = "#1f2328", "#59636e", "#d1d9e0", "#8c959f", "#0969da"
_NOT_XML = re.compile("[^\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class ChartPoint:
    """One point of a series.

    :param percent: Its value, in percent (0 to 100).
    :param label: Its x label (an update's time), shown under the axis for the first and
        the last point.
    :param title: What hovering over it shows (its ``<title>``).
    """

    percent: float
    label: str
    title: str


def _clean(text: str) -> str:
    """``text`` on one line, as XML 1.0 holds it: tabs and line ends become spaces, other
    characters XML cannot hold U+FFFD."""
    return _NOT_XML.sub(lambda found: " " if found.group() in "\t\n\r" else "\ufffd", text)


def percent_text(percent: float) -> str:
    """A percentage as the report prints it: one decimal (``12.5%``), as its rules'
    ``Failed %`` column."""
    return f"{percent:.1f}%"


def y_top(series_max: float) -> tuple[float, float]:
    """The y axis' top and tick step for a series whose greatest value is ``series_max``
    (percent): the smallest of 1, 2, 5, 10, 20, 50, 100 that holds it."""
    for top, step in _TOPS:
        if series_max <= top:
            return top, step
    return _TOPS[-1]


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _add(parent: ET.Element, tag: str, text: Optional[str] = None,
         **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {key.rstrip("_").replace("_", "-"): _clean(value)
                                          for key, value in attributes.items()})
    if text is not None:
        element.text = _clean(text)
    return element


def line_chart(points: Sequence[ChartPoint], *, description: str, x_title: str,
               y_title: str = "failure rate (%)", accent: str = "#c62828") -> str:
    """An SVG line chart of ``points`` (oldest first, evenly spaced), the last one
    highlighted with its value printed next to it.

    :param points: The series (at least one point).
    :param description: What the chart shows, for screen readers (``aria-label``).
    :param x_title: The x axis' label.
    :param y_title: The y axis' label.
    :param accent: The colour of the highlighted last point and its value.
    :returns: One ``<svg>`` element (``role="img"``, class ``trend-chart``): the axes
        (classes ``x-axis``, ``y-axis``), their labels (``x-label``, ``y-label``), the y
        ticks (``y-tick``), the first and last x labels (``x-tick``), the line
        (``series``), one ``circle.point`` per point (the last also ``latest``) with a
        ``<title>``, and the last value (``latest-value``).
    :raises ValueError: for an empty series.
    """
    if not points:
        raise ValueError("a chart needs at least one point")
    left, right = _LEFT, WIDTH - _RIGHT
    top_y, bottom_y = _TOP, HEIGHT - _BOTTOM
    top, step = y_top(max(p.percent for p in points))

    def x_of(index: int) -> float:
        if len(points) == 1:
            return (left + right) / 2
        return left + index * (right - left) / (len(points) - 1)

    def y_of(percent: float) -> float:
        share = min(max(percent, 0.0), top) / top
        return bottom_y - share * (bottom_y - top_y)

    svg = ET.Element("svg", {
        "xmlns": "http://www.w3.org/2000/svg", "class": "trend-chart", "role": "img",
        "aria-label": _clean(description), "viewBox": f"0 0 {WIDTH} {HEIGHT}",
        "width": str(WIDTH), "height": str(HEIGHT),
        "font-family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
        "font-size": "10"})
    y_axis = _add(svg, "g", class_="y-axis")
    for index in range(round(top / step) + 1):
        value = index * step
        y = _number(y_of(value))
        _add(y_axis, "line", class_="grid", x1=str(left), x2=str(right), y1=y, y2=y,
             stroke=_GRID, stroke_width="1")
        _add(y_axis, "text", f"{value:g}%", class_="y-tick", x=str(left - 6), y=y,
             fill=_MUTED, text_anchor="end", dominant_baseline="middle")
    _add(y_axis, "line", class_="axis", x1=str(left), x2=str(left), y1=str(top_y),
         y2=str(bottom_y), stroke=_MUTED, stroke_width="1")
    middle = _number((top_y + bottom_y) / 2)
    _add(svg, "text", y_title, class_="y-label", x="12", y=middle, fill=_INK,
         text_anchor="middle", transform=f"rotate(-90 12 {middle})")
    x_axis = _add(svg, "g", class_="x-axis")
    _add(x_axis, "line", class_="axis", x1=str(left), x2=str(right), y1=str(bottom_y),
         y2=str(bottom_y), stroke=_MUTED, stroke_width="1")
    ends = [0] if len(points) == 1 else [0, len(points) - 1]
    for index in ends:
        anchor = "middle" if len(points) == 1 else ("start" if index == 0 else "end")
        _add(x_axis, "text", points[index].label, class_="x-tick", x=_number(x_of(index)),
             y=str(bottom_y + 14), fill=_MUTED, text_anchor=anchor)
    _add(svg, "text", x_title, class_="x-label", x=_number((left + right) / 2),
         y=str(HEIGHT - 6), fill=_INK, text_anchor="middle")
    where = [(_number(x_of(i)), _number(y_of(p.percent))) for i, p in enumerate(points)]
    if len(points) > 1:
        _add(svg, "polyline", class_="series", fill="none", stroke=_LINE, stroke_width="1.5",
             points=" ".join(f"{x},{y}" for x, y in where))
    last = len(points) - 1
    for index, (point, (x, y)) in enumerate(zip(points, where, strict=True)):
        latest = index == last
        circle = _add(svg, "circle", class_="point latest" if latest else "point", cx=x, cy=y,
                      r="5" if latest else "3", fill=accent if latest else _POINT,
                      stroke="#ffffff", stroke_width="1.5" if latest else "1")
        circle.set("data-percent", repr(float(point.percent)))
        _add(circle, "title", point.title)
    x, y = where[last]
    _add(svg, "text", percent_text(points[last].percent), class_="latest-value",
         x=_number(float(x) + 9), y=y, fill=accent, font_weight="600", font_size="12",
         dominant_baseline="middle")
    return ET.tostring(svg, encoding="unicode")


def trend_chart(trend: RuleTrend, *, x_title: str, accent: str = "#c62828") -> Optional[str]:
    """The chart of a rule's failure rate per update (``failed / total`` of each update
    that checked records; an update that checked none has no point).

    :param trend: The rule's updates, oldest first.
    :param x_title: The x axis' label (which updates are shown).
    :param accent: The colour of the latest point.
    :returns: The SVG, or ``None`` when no update checked a record.
    """
    drawn = [(point, point.percent) for point in trend.points if point.percent is not None]
    if not drawn:
        return None
    points = [ChartPoint(percent=percent, label=point.update_time.strftime("%m-%d %H:%M"),
                         title=(f"{point.update_time:%Y-%m-%d %H:%M:%S}: {point.failed} of "
                                f"{point.total} records failed ({percent_text(percent)})"))
              for point, percent in drawn]
    latest = drawn[-1][0]
    shown = ", ".join(percent_text(p.percent) for p in points)
    description = (f"Failure rate of rule {trend.expectation} on {trend.dataset} over "
                   f"{len(points)} update{'s' if len(points) != 1 else ''}, oldest to newest: "
                   f"{shown}. Latest: {percent_text(points[-1].percent)} "
                   f"({latest.failed} of {latest.total} records).")
    return line_chart(points, description=description, x_title=x_title, accent=accent)
