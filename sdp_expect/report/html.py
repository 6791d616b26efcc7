"""The data-quality report as one self-contained HTML page (``sdp-expect report --html``).

:func:`render_html` draws a :class:`~sdp_expect.quality.summary.QualityReport`:
per dataset, a bar per rule (passed against failed records, coloured by the
rule's action), the records the dataset dropped, its quarantine's size and a
sample of quarantined records with their ``_failed_expectations``, and, from the
history table, each rule's failure rate over the recorded updates as an SVG chart
(:mod:`~sdp_expect.report.svg_chart`). The page
carries its own styles, has no script and loads nothing: it can be mailed,
attached to a CI run, or opened offline.
"""

from __future__ import annotations

import html
from typing import Any, Optional

from sdp_expect.base.violation import DatasetRuleFailure, ToleranceFailure, Violation, rate_text
from sdp_expect.quality.summary import (
    FAILED,
    FAILED_EXPECTATIONS,
    LAST_SUCCESS,
    NO_SUCCESS,
    NOT_RUN,
    SKIPPED,
    UPDATED,
    DatasetSummary,
    QualityReport,
    RuleResult,
    Trends,
)
from sdp_expect.report.svg_chart import trend_chart

__all__ = ["render_html"]

_CSS = """
:root { --pass: #2e7d32; --warn: #f2a900; --drop: #e8590c; --fail: #c62828;
  --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: var(--bg); }
header { padding: 24px 32px 12px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { margin: 0 0 4px; font-size: 24px; }
.meta { color: var(--muted); margin: 0; }
.totals { display: flex; gap: 12px; flex-wrap: wrap; margin: 14px 0 4px; }
.total { background: var(--bg); border: 1px solid var(--line); border-radius: 8px;
  padding: 6px 12px; }
.total b { font-size: 18px; margin-right: 4px; }
nav { padding: 10px 32px; display: flex; gap: 8px; flex-wrap: wrap; }
nav a { text-decoration: none; color: var(--ink); background: #fff; border: 1px solid var(--line);
  border-radius: 999px; padding: 2px 10px; font-size: 13px; }
nav a.failed { border-color: var(--fail); color: var(--fail); }
main { padding: 8px 32px 32px; }
section.dataset { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 22px; margin: 0 0 18px; }
section.dataset.failed { border-color: var(--fail); box-shadow: inset 4px 0 0 var(--fail); }
h2 { margin: 0; font-size: 19px; display: flex; align-items: center; gap: 10px;
  flex-wrap: wrap; }
.kind { font-size: 12px; color: var(--muted); font-weight: normal; }
.badge { font-size: 12px; font-weight: 600; border-radius: 999px; padding: 1px 9px;
  background: #e8f5e9; color: var(--pass); }
.badge.failed { background: #ffebee; color: var(--fail); }
.badge.muted { background: var(--bg); color: var(--muted); }
.stats { display: flex; gap: 28px; flex-wrap: wrap; margin: 12px 0 8px; }
.stat .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: .04em; }
.stat .value { font-size: 22px; font-weight: 600; }
.stat .value.dropped { color: var(--drop); }
.stat .sub { color: var(--muted); font-size: 12px; }
.violation { border: 1px solid var(--fail); background: #fff5f5; border-radius: 8px;
  padding: 10px 14px; margin: 12px 0; }
.violation strong { color: var(--fail); }
.violation pre { margin: 6px 0 0; white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; width: 100%; }
th { text-align: left; font-size: 12px; color: var(--muted); font-weight: 600;
  border-bottom: 1px solid var(--line); padding: 6px 8px; }
td { border-bottom: 1px solid var(--line); padding: 8px; vertical-align: middle; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.rules td.bar-cell { width: 42%; min-width: 160px; }
.bar { display: flex; height: 16px; width: 100%; border-radius: 4px; overflow: hidden;
  background: var(--line); }
.bar .passed { background: var(--pass); }
.bar .failed.warn { background: var(--warn); }
.bar .failed.drop { background: var(--drop); }
.bar .failed.fail { background: var(--fail); }
.constraint { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px;
  color: var(--muted); }
.action { font-size: 12px; font-weight: 600; border-radius: 4px; padding: 1px 7px; color: #fff; }
.action.warn { background: var(--warn); color: #3d2c00; }
.action.drop { background: var(--drop); }
.action.fail { background: var(--fail); }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sample { overflow-x: auto; }
.by-rule { list-style: none; padding: 0; margin: 4px 0; display: flex; flex-wrap: wrap;
  gap: 4px 16px; }
.sample table { font-size: 13px; }
.sample td { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; white-space: nowrap; }
.chip { display: inline-block; border-radius: 999px; padding: 0 8px; margin: 0 3px 0 0;
  font-size: 12px; background: #fff4e6; color: #8a3c00; border: 1px solid #ffc078; }
.null { color: var(--muted); font-style: italic; }
.legend { color: var(--muted); font-size: 13px; margin: 4px 0 0; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin: 0 4px 0 10px; vertical-align: middle; }
.note { color: var(--muted); font-size: 13px; }
.tolerance.exceeded { color: #8a5a00; background: #fff8e1; border: 1px solid var(--warn);
  border-radius: 4px; padding: 1px 6px; font-weight: 600; }
footer { color: var(--muted); font-size: 12px; padding: 0 32px 24px; }
.trends { display: grid; grid-template-columns: repeat(auto-fill, minmax(390px, 1fr));
  gap: 10px; }
figure.trend { margin: 0; border: 1px solid var(--line); border-radius: 8px;
  padding: 8px 6px 4px; background: #fff; }
figure.trend figcaption { font-size: 13px; margin: 0 0 2px 6px; }
figure.trend svg { display: block; max-width: 100%; height: auto; }
"""

_ACCENT = {"warn": "#9a6700", "drop": "#e8590c", "fail": "#c62828"}
"""The colour of a rule's latest point in its chart, by action (warn darker than its bar,
for its value printed on white)."""

_STATUS_BADGE = {
    UPDATED: ("updated in this run", ""),
    FAILED: ("failed", "failed"),
    SKIPPED: ("skipped", "muted"),
    NOT_RUN: ("not updated by this run", "muted"),
    LAST_SUCCESS: ("last successful update", ""),
    NO_SUCCESS: ("no successful update recorded", "muted"),
}


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _anchor(name: str) -> str:
    return "ds-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def _percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _bar(rule: RuleResult) -> str:
    total = rule.total_records
    label = f"{rule.passed_records} passed, {rule.failed_records} failed"
    if total == 0:
        return '<div class="bar" role="img" aria-label="no records" title="no records"></div>'
    passed = 100.0 * rule.passed_records / total
    failed = 100.0 - passed
    return (f'<div class="bar" role="img" aria-label="{_e(label)}" title="{_e(label)}">'
            f'<span class="passed" style="width:{passed:.4f}%"></span>'
            f'<span class="failed {_e(rule.action)}" style="width:{failed:.4f}%"></span></div>')


def _tolerance(rule: RuleResult) -> tuple[str, str]:
    """The attributes of a rule's row and its tolerance cell (a dataset with tolerances)."""
    if rule.max_failed is None:
        return "", '<td class="tolerance"></td>'
    exceeded = "true" if rule.tolerance_exceeded else "false"
    cell = (f'<span class="tolerance exceeded" title="more than max_failed '
            f'{_e(rule.max_failed)}">{_e(rule.max_failed)} exceeded</span>'
            if rule.tolerance_exceeded else _e(rule.max_failed))
    return (f' data-max-failed="{_e(rule.max_failed)}" data-tolerance-exceeded="{exceeded}"',
            f'<td class="tolerance">{cell}</td>')


def _observed(rule: RuleResult) -> str:
    """Under a rule on the dataset as a whole (row count, aggregate): what it observed and
    its verdict (docs/row-count-rules.md#metrics); nothing for a record rule."""
    if not rule.on_dataset:
        return ""
    observed = "NULL" if rule.observed is None else rule.observed
    verdict = "not met" if rule.violated else "met"
    return (f'<div class="observed" data-observed="{_e(observed)}" '
            f'data-violated="{"true" if rule.violated else "false"}">'
            f'observed {_e(observed)}: {verdict}</div>')


def _rules_table(summary: DatasetSummary) -> str:
    tolerances = summary.has_tolerances
    rows = []
    for rule in summary.rules:
        attributes, cell = _tolerance(rule) if tolerances else ("", "")
        rows.append(
            f'<tr data-rule="{_e(rule.expectation)}" data-passed="{rule.passed_records}" '
            f'data-failed="{rule.failed_records}"{attributes}>'
            f'<td><code>{_e(rule.expectation)}</code>'
            f'<div class="constraint">{_e(rule.constraint)}</div>{_observed(rule)}</td>'
            f'<td><span class="action {_e(rule.action)}">{_e(rule.action)}</span></td>'
            f'<td class="bar-cell">{_bar(rule)}</td>'
            f'<td class="num passed-count">{rule.passed_records}</td>'
            f'<td class="num failed-count">{rule.failed_records}</td>'
            f'<td class="num">{_percent(rule.failure_percentage)}</td>{cell}</tr>')
    return ('<table class="rules"><thead><tr><th>Rule</th><th>Action</th>'
            '<th>Passed vs failed</th><th class="num">Passed</th><th class="num">Failed</th>'
            '<th class="num">Failed %</th>' + ("<th>max_failed</th>" if tolerances else "")
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _cell(value: Any, column: str) -> str:
    if value is None:
        return '<span class="null">NULL</span>'
    if column == FAILED_EXPECTATIONS and isinstance(value, list):
        return "".join(f'<span class="chip">{_e(name)}</span>' for name in value)
    return _e(value)


def _sample(summary: DatasetSummary) -> str:
    q = summary.quarantine
    if q is None:
        return ""
    if not q.sample:
        return (f'<h3>Quarantine <code>{_e(q.table)}</code></h3>'
                '<p class="note">No quarantined records.</p>')
    columns = [FAILED_EXPECTATIONS] + [c for c in q.columns if c != FAILED_EXPECTATIONS]
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(row.get(c), c)}</td>" for c in columns) + "</tr>"
        for row in q.sample)
    shown = (f"all {q.records}" if len(q.sample) >= q.records
             else f"{len(q.sample)} of {q.records}")
    by_rule = "".join(f'<li data-rule="{_e(rule)}"><span class="chip">{_e(rule)}</span>'
                      f"{count}</li>" for rule, count in (q.by_rule or {}).items())
    return (f'<h3>Quarantine sample <code>{_e(q.table)}</code> '
            f'<span class="kind">({shown} records)</span></h3>'
            + (f'<ul class="by-rule" title="records per failed rule">{by_rule}</ul>'
               if by_rule else "")
            + '<p class="note">Every record, per failed rule: <code>sdp-expect quarantine '
            f"--dataset {_e(summary.dataset)}</code></p>"
            f'<div class="sample"><table class="quarantine"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _violation(violation: Violation) -> str:
    """A record that failed an update: each violated rule, and the record."""
    noun = "expectation" if len(violation.expectations) == 1 else "expectations"
    names = ", ".join(f'<code class="expectation">{_e(name)}</code>'
                      for name in violation.expectations)
    return (f'<div class="violation" data-dataset="{_e(violation.dataset)}">'
            f"<strong>Update failed:</strong> {noun} {names} violated by the record"
            f'<pre class="record">{_e(violation.record)}</pre></div>')


def _tolerance_failure(failure: ToleranceFailure) -> str:
    """A flow failed by rules over their tolerance: each rule, its counts and tolerance."""
    rules = "".join(
        f'<li data-rule="{_e(part.name)}" data-failed="{part.failed}" '
        f'data-total="{part.total}" data-max-failed="{_e(part.tolerance)}">'
        f'<code class="expectation">{_e(part.name)}</code>: {part.failed} of {part.total} '
        f"records failed ({_e(rate_text(part.failed, part.total))}), more than max_failed "
        f'<code class="max-failed">{_e(part.tolerance)}</code></li>' for part in failure.parts)
    said = ("expectation over its tolerance" if len(failure.parts) == 1
            else "expectations over their tolerance")
    return (f'<div class="violation tolerance-failure" data-dataset="{_e(failure.dataset)}">'
            f"<strong>Update failed:</strong> {said}<ul>{rules}</ul></div>")


def _dataset_rule_failure(failure: DatasetRuleFailure) -> str:
    """A flow failed by fail rules on the dataset as a whole: each rule, what it observed
    and what it expects."""
    rules = "".join(
        f'<li data-rule="{_e(part.name)}" '
        f'data-observed="{_e("NULL" if part.observed is None else part.observed)}" '
        f'data-expected="{_e(part.expected)}">'
        f'<code class="expectation">{_e(part.name)}</code>: observed '
        f'<code class="observed">{_e("NULL" if part.observed is None else part.observed)}'
        f'</code>, expected <code class="expected">{_e(part.expected)}</code></li>'
        for part in failure.parts)
    said = ("dataset rule not met" if len(failure.parts) == 1 else "dataset rules not met")
    return (f'<div class="violation dataset-rule-failure" data-dataset="{_e(failure.dataset)}">'
            f"<strong>Update failed:</strong> {said}<ul>{rules}</ul></div>")


def _unattached(report: QualityReport) -> str:
    """The violations of datasets that have no metrics table (``@dp.metrics(False)``)."""
    shown = {v for d in report.datasets for v in d.violations}
    others = [v for v in report.violations if v not in shown]
    told = {f for d in report.datasets for f in d.tolerance_failures}
    over = [f for f in report.tolerance_failures if f not in told]
    said = {f for d in report.datasets for f in d.dataset_rule_failures}
    unmet = [f for f in report.dataset_rule_failures if f not in said]
    parts = []
    for dataset in dict.fromkeys([*(v.dataset for v in others), *(f.dataset for f in over),
                                  *(f.dataset for f in unmet)]):
        parts.append(f'<section class="dataset failed" id="{_anchor(dataset)}" '
                     f'data-dataset="{_e(dataset)}"><h2>{_e(dataset)} '
                     f'<span class="badge failed">failed</span></h2>')
        parts.extend(_violation(v) for v in others if v.dataset == dataset)
        parts.extend(_tolerance_failure(f) for f in over if f.dataset == dataset)
        parts.extend(_dataset_rule_failure(f) for f in unmet if f.dataset == dataset)
        parts.append("</section>")
    return "\n".join(parts)


def _trends(summary: DatasetSummary, trends: Optional[Trends]) -> str:
    """Per rule of the dataset, its failure rate over the recorded updates (a chart)."""
    if trends is None:
        return ""
    heading = "<h3>Failure rate per update</h3>"
    if not trends.rules:
        return (f'{heading}<p class="note no-history">Trends: no history recorded yet '
                "(<code>sdp-expect run</code> records each update in "
                "<code>sdp_expect_dq_history</code>).</p>")
    which = (f"the last {trends.updates} recorded" if trends.capped
             else f"all {trends.updates} recorded")
    x_title = f"update, oldest to newest ({which})"
    rules = [(rule.expectation, rule.action) for rule in summary.rules] or [
        (t.expectation, t.action) for t in trends.rules if t.dataset == summary.dataset]
    figures = []
    for expectation, action in rules:
        trend = trends.of(summary.dataset, expectation)
        chart = (trend_chart(trend, x_title=x_title, accent=_ACCENT.get(action, "#c62828"))
                 if trend is not None else None)
        if trend is None:
            body = '<p class="note no-history">no history recorded yet for this rule</p>'
        elif chart is None:
            body = '<p class="note">no recorded update checked a record</p>'
        else:
            empty = sum(1 for p in trend.points if p.total == 0)
            body = chart + (f'<p class="note">{empty} update{"s" if empty != 1 else ""} '
                            "checked no record (no point)</p>" if empty else "")
        figures.append(f'<figure class="trend" data-rule="{_e(expectation)}">'
                       f"<figcaption><code>{_e(expectation)}</code></figcaption>{body}"
                       "</figure>")
    return f'{heading}<div class="trends">{"".join(figures)}</div>'


def _dataset(summary: DatasetSummary, trends: Optional[Trends] = None) -> str:
    text, style = _STATUS_BADGE.get(summary.status, (summary.status, "muted"))
    if summary.recorded_at:
        text += f", kept at {summary.recorded_at}"
    kind = ("streaming table · counts since its last full refresh" if summary.streaming
            else "materialized view")
    failed = (summary.status == FAILED or bool(summary.violations)
              or bool(summary.tolerance_failures) or bool(summary.dataset_rule_failures))
    parts = [f'<section class="dataset{" failed" if failed else ""}" '
             f'id="{_anchor(summary.dataset)}" data-dataset="{_e(summary.dataset)}">',
             f'<h2>{_e(summary.dataset)} <span class="kind">{kind}</span>'
             f'<span class="badge {style}">{_e(text)}</span></h2>']
    parts.extend(_violation(violation) for violation in summary.violations)
    parts.extend(_tolerance_failure(failure) for failure in summary.tolerance_failures)
    parts.extend(_dataset_rule_failure(failure) for failure in summary.dataset_rule_failures)
    if summary.has_numbers:
        quarantine = ""
        if summary.quarantine is not None:
            quarantine = (f'<div class="stat"><div class="label">Quarantine</div>'
                          f'<div class="value quarantine-size">{summary.quarantine.records}</div>'
                          f'<div class="sub">{_e(summary.quarantine.table)}</div></div>')
        parts.append(
            '<div class="stats">'
            f'<div class="stat"><div class="label">Records</div>'
            f'<div class="value total-records">{summary.total_records}</div></div>'
            f'<div class="stat"><div class="label">Dropped</div>'
            f'<div class="value dropped-records{" dropped" if summary.dropped_records else ""}">'
            f"{summary.dropped_records}</div></div>"
            f"{quarantine}</div>")
        parts.append(_rules_table(summary))
        parts.append(_sample(summary))
    else:
        parts.append('<p class="note">No metrics: the metrics table is empty (a failed update '
                     "records none).</p>")
    parts.append(_trends(summary, trends))
    parts.append("</section>")
    return "\n".join(parts)


def render_html(report: QualityReport, *, pipeline: str = "", generated_at: str = "",
                version: str = "") -> str:
    """The report as one HTML document (UTF-8, no script, no external resource).

    :param report: What to show.
    :param pipeline: The pipeline's name, shown in the title.
    :param generated_at: When the report was made, shown under the title.
    :param version: The sdp-expect version, shown in the footer.
    """
    where = ".".join(p for p in (report.catalog, report.database) if p)
    title = f"Data quality · {pipeline}" if pipeline else "Data quality"
    rules = sum(len(d.rules) for d in report.datasets)
    failing = sum(1 for d in report.datasets for r in d.rules if r.failed_records)
    dropped = sum(d.dropped_records for d in report.datasets)
    failed = [d for d in report.datasets
              if d.status == FAILED or d.violations or d.tolerance_failures
              or d.dataset_rule_failures]
    totals = [(len(report.datasets), "datasets with expectations"), (rules, "rules"),
              (failing, "rules with failed records"), (dropped, "records dropped")]
    if failed:
        totals.append((len(failed), "failed updates"))
    if report.violations:
        count = len(report.violations)
        totals.append((count, "expectation violation" + ("s" if count != 1 else "")))
    if report.tolerance_failures:
        count = len(report.tolerance_failures)
        totals.append((count, "flow" + ("s" if count != 1 else "") + " over tolerance"))
    if report.dataset_rule_failures:
        count = len(report.dataset_rule_failures)
        totals.append((count, "flow" + ("s" if count != 1 else "")
                       + " failed by dataset rules"))
    exceeded = sum(1 for d in report.datasets for r in d.rules if r.tolerance_exceeded)
    if exceeded:
        totals.append((exceeded, "warn rule" + ("s" if exceeded != 1 else "")
                       + " over tolerance"))
    nav = "".join(
        f'<a href="#{_anchor(d.dataset)}" class="{"failed" if d in failed else ""}">'
        f"{_e(d.dataset)}</a>" for d in report.datasets)
    meta = " · ".join(p for p in (f"catalog {where}" if where else "", generated_at) if p)
    body = "\n".join([*(_dataset(d, report.trends) for d in report.datasets),
                      _unattached(report)]).strip() or (
        '<p class="note">No &lt;dataset&gt;_dq_metrics tables found: run the pipeline first '
        "(<code>sdp-expect run</code>).</p>")
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in report.notes)
    history = "" if report.trends is None else " and the history table"
    boxes = "".join(f'<span class="total"><b>{n}</b>{_e(t)}</span>' for n, t in totals)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header>
<h1>{_e(title)}</h1>
<p class="meta">{_e(meta)}</p>
<div class="totals">{boxes}</div>
<p class="legend">Bars: <i style="background:var(--pass)"></i>passed
<i style="background:var(--warn)"></i>failed, warn (kept)
<i style="background:var(--drop)"></i>failed, drop (dropped)
<i style="background:var(--fail)"></i>failed, fail (stops the update)</p>
</header>
<nav>{nav}</nav>
<main>
{body}
{notes}
</main>
<footer>Made by sdp-expect{(" " + _e(version)) if version else ""} from the
&lt;dataset&gt;_dq_metrics and quarantine tables{history}.</footer>
</body>
</html>
"""
