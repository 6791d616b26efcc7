"""``sdp-expect report --html``: each rule's failure rate over the recorded updates, as
drawn in headless Chromium (docs/history.md#trends-in-the-report).

Six real updates of a pipeline in the shared Spark server, each recorded with
``record_history`` (as ``sdp-expect run`` does); then the report is made through that
server (``--remote``), opened in Chromium, looked at (screenshots in the test's
``tmp_path``) and its charts compared with the history rows as Spark reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chromium import INSTALL_HINT, Browser, find_chromium, png_pixels
from cli_helpers import sdp_expect
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from sdp_runner import MakePipeline, SparkServer

from sdp_expect import pipelines as dp
from sdp_expect.base import names
from sdp_expect.quality.history_table import record_history

pytestmark = [pytest.mark.usefixtures("own_jvm"), pytest.mark.timeout(900)]

PIPELINE = "trend_shop"
SCHEMA = "id INT, amount INT"
UPDATES: list[list[tuple[Any, Any]]] = [
    [(1, 5), (2, 50), (None, 3), (4, 4)],
    [(1, 5), (2, 50), (3, 60), (None, 1), (5, 5)],
    [],  # checked nothing: no point
    [(1, 1), (2, 2), (3, 3), (4, 40)],
    [(1, 1), (2, 20), (3, 30), (None, 40)],
    [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 70), (None, 8)],
]
RULES = ("small", "valid_id")


def _define(spark: SparkSession) -> None:
    @dp.materialized_view
    @dp.expect("small", "amount < 10")
    @dp.expect_or_drop("valid_id", "id IS NOT NULL")
    def orders() -> DataFrame:
        return spark.read.table("src")


def test_the_html_report_draws_each_rules_failure_rate_per_update_in_chromium(
        make_pipeline: MakePipeline, spark_server: SparkServer, tmp_path: Path) -> None:
    binary = find_chromium()
    if binary is None:
        pytest.fail(INSTALL_HINT)
    pipeline = make_pipeline(_define)
    for rows in UPDATES:
        pipeline.create_table("src", rows, SCHEMA)
        result = pipeline.run()
        assert result.ok, result.output
        record_history(pipeline.spark, pipeline=PIPELINE, database=pipeline.database)
    # Another pipeline's update in the same table: not this report's.
    record_history(pipeline.spark, pipeline="another", database=pipeline.database)

    project = tmp_path / "project"
    project.mkdir()
    (project / "spark-pipeline.yml").write_text(
        f"name: {PIPELINE}\ndatabase: {pipeline.database}\nlibraries: []\n")
    html = tmp_path / "report.html"
    done = sdp_expect("report", "--spec", str(project), "--remote", spark_server.url,
                      "--format", "json", "--html", str(html), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    # The history as Spark reads it, rule by rule, oldest first.
    history = pipeline.spark.sql(
        f"SELECT expectation, failed_records, total_records FROM "
        f"`{pipeline.database}`.`{names.HISTORY_TABLE}` WHERE pipeline = :p "
        "AND dataset = 'orders' ORDER BY update_time", args={"p": PIPELINE}).collect()
    series = {rule: [(r["failed_records"], r["total_records"]) for r in history
                     if r["expectation"] == rule] for rule in RULES}
    assert all(len(points) == len(UPDATES) for points in series.values())

    document = json.loads(done.stdout)
    assert (document["trends"]["pipeline"], document["trends"]["updates"]) == (PIPELINE, 6)
    assert {rule["expectation"]: [(p["failed_records"], p["total_records"])
                                  for p in rule["points"]]
            for rule in document["trends"]["rules"]} == series

    browser = Browser(binary)
    try:
        browser.open(html)
        browser.screenshot(tmp_path / "report.png")
        assert browser.evaluate("performance.getEntriesByType('resource').length") == 0
        charts = json.loads(browser.evaluate("""JSON.stringify(
            [...document.querySelectorAll('section[data-dataset="orders"] figure.trend')]
            .map(figure => {
              const svg = figure.querySelector('svg.trend-chart');
              svg.scrollIntoView();
              const box = svg.getBoundingClientRect();
              const text = cls => [...svg.querySelectorAll('.' + cls)]
                .map(e => e.textContent);
              const points = [...svg.querySelectorAll('circle.point')];
              return {rule: figure.dataset.rule, role: svg.getAttribute('role'),
                      aria: svg.getAttribute('aria-label'),
                      box: {x: box.left + window.scrollX, y: box.top + window.scrollY,
                            width: box.width, height: box.height},
                      xLabel: text('x-label'), yLabel: text('y-label'),
                      yTicks: text('y-tick'), xTicks: text('x-tick'),
                      points: points.length,
                      cx: points.map(p => p.getBoundingClientRect().left),
                      latest: [...svg.querySelectorAll('circle.latest')].map(
                        p => ({index: points.indexOf(p),
                               title: p.querySelector('title').textContent,
                               right: p.getBoundingClientRect().right,
                               top: p.getBoundingClientRect().top})),
                      value: [...svg.querySelectorAll('.latest-value')].map(
                        e => ({text: e.textContent, left: e.getBoundingClientRect().left,
                               top: e.getBoundingClientRect().top,
                               height: e.getBoundingClientRect().height}))};
            }))"""))
        assert [chart["rule"] for chart in charts] == list(RULES)
        for chart in charts:
            pixels = browser.screenshot(tmp_path / f"chart-{chart['rule']}.png",
                                        clip=chart["box"])
            chart["pixels"] = png_pixels(pixels)
    finally:
        browser.close()

    for chart in charts:
        rule = chart["rule"]
        drawn = [(failed, total) for failed, total in series[rule] if total > 0]
        failed, total = drawn[-1]
        assert chart["role"] == "img" and rule in chart["aria"]
        assert chart["box"]["width"] > 200 and chart["box"]["height"] > 100, chart["box"]
        # The axes are labelled, the y axis with ticks in percent.
        assert chart["yLabel"] == ["failure rate (%)"]
        assert chart["xLabel"] == ["update, oldest to newest (all 6 recorded)"]
        assert chart["yTicks"][0] == "0%" and len(chart["yTicks"]) >= 5
        assert len(chart["xTicks"]) == 2
        # A point per update that checked records, left to right; the last highlighted,
        # and its value printed next to it equals the history's last rate.
        assert chart["points"] == len(drawn) == 5
        assert chart["cx"] == sorted(chart["cx"])
        [latest] = chart["latest"]
        assert latest["index"] == len(drawn) - 1
        assert f"{failed} of {total} records failed" in latest["title"]
        [value] = chart["value"]
        assert value["text"] == f"{100 * failed / total:.1f}%"
        assert 0 <= value["left"] - latest["right"] < 20
        assert abs(value["top"] + value["height"] / 2 - latest["top"] - 5) < 10
        # Drawn: inside the chart's box, the screenshot is not all background, and the
        # highlighted point's colour (a drop rule's orange, a warn rule's amber) is there.
        width, height, rows = chart["pixels"]
        assert (width, height) == (round(chart["box"]["width"]), round(chart["box"]["height"]))
        colours = {pixel for row in rows for pixel in row}
        background = sum(row.count((255, 255, 255)) for row in rows)
        assert background < 0.97 * width * height and len(colours) > 20
        accent = (0xE8, 0x59, 0x0C) if rule == "valid_id" else (0x9A, 0x67, 0x00)
        assert accent in colours, rule
    assert series["small"][-1] == (1, 8)  # the data's own check: 12.5% printed
