"""The data-quality report as text for a person, ANSI-coloured on a terminal.

:func:`paint` and :func:`use_color` colour the output of ``sdp-expect run`` too.
"""

from __future__ import annotations

from typing import Optional, Sequence

from sdp_expect.base.terminal import paint
from sdp_expect.base.violation import (
    DatasetRuleFailure,
    ToleranceFailure,
    Violation,
    names_text,
    quote,
    rate_text,
)
from sdp_expect.core.model import Action
from sdp_expect.quality.last_good import Restored
from sdp_expect.quality.summary import (
    FAILED,
    LAST_SUCCESS,
    NO_SUCCESS,
    NOT_RUN,
    SKIPPED,
    UPDATED,
    DatasetSummary,
    QualityReport,
    RuleResult,
)

__all__ = ["dataset_rule_lines", "to_text", "tolerance_lines", "violation_lines"]


_ACTION_STYLE = {Action.WARN.value: "yellow", Action.DROP.value: "magenta",
                 Action.FAIL.value: "bold red"}
_STATUS_TEXT = {
    UPDATED: "updated in this run",
    FAILED: "FAILED in this run",
    SKIPPED: "skipped in this run (an upstream flow failed)",
    NOT_RUN: "not updated by this run (numbers of its last update)",
    LAST_SUCCESS: "last successful update",
    NO_SUCCESS: "no successful update recorded",
}


def _percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _kind(summary: DatasetSummary) -> str:
    return ("streaming table, counts since its last full refresh" if summary.streaming
            else "materialized view")


def _status_line(summary: DatasetSummary, color: bool) -> str:
    text = _STATUS_TEXT.get(summary.status, summary.status)
    if summary.recorded_at:
        text += f" (kept by sdp-expect run at {summary.recorded_at})"
    if summary.status == FAILED:
        return paint(text, "bold red", color)
    if summary.status in (SKIPPED, NO_SUCCESS):
        return paint(text, "yellow", color)
    return paint(text, "dim", color)


def violation_lines(violation: Violation, color: bool, indent: str = "") -> list[str]:
    """A violated fail rule and its record, highlighted (names quoted as in the message)."""
    names = names_text(violation.expectations)
    noun = "expectation" if len(violation.expectations) == 1 else "expectations"
    return [
        indent + paint(f"FAILED: {noun} {names} violated by the record", "bold red", color),
        indent + "  " + paint(violation.record, "reverse red", color),
    ]


def tolerance_lines(failure: ToleranceFailure, color: bool, indent: str = "") -> list[str]:
    """A flow failed by rules over their tolerance: per rule, the violations, the records
    checked, the rate and the tolerance (names quoted as in the message)."""
    return [indent + paint(
        f"FAILED: expectation {quote(part.name)} over its tolerance: {part.failed} of "
        f"{part.total} records failed ({rate_text(part.failed, part.total)}), more than "
        f"max_failed {quote(part.tolerance)}", "bold red", color) for part in failure.parts]


def dataset_rule_lines(failure: DatasetRuleFailure, color: bool, indent: str = "") -> list[str]:
    """A flow failed by fail rules on the dataset as a whole: per rule, what it observed
    and what it expects (names quoted as in the message)."""
    return [indent + paint(
        f"FAILED: expectation {quote(part.name)} not met: observed "
        f"{'NULL' if part.observed is None else part.observed}, expected {part.expected}",
        "bold red", color) for part in failure.parts]


_EXCEEDED = "EXCEEDED"
"""Said after a warn rule's tolerance when its violations exceed it."""


def _tolerance_cell(rule: RuleResult) -> str:
    if rule.max_failed is None:
        return ""
    return f"{rule.max_failed} {_EXCEEDED}" if rule.tolerance_exceeded else rule.max_failed


def _rule_table(summary: DatasetSummary, color: bool) -> list[str]:
    header: tuple[str, ...] = ("rule", "action", "passed", "failed", "failed %")
    rows: list[tuple[str, ...]] = [
        (r.expectation, r.action, str(r.passed_records), str(r.failed_records),
         _percent(r.failure_percentage)) for r in summary.rules]
    tolerances = summary.has_tolerances
    if tolerances:  # a column of its own, empty for the rules without tolerance
        header = (*header, "max_failed")
        rows = [(*cells, _tolerance_cell(rule)) for rule, cells in zip(summary.rules, rows,
                                                                         strict=True)]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str], styles: Sequence[Optional[str]]) -> str:
        parts = []
        for index, (cell, style) in enumerate(zip(cells, styles, strict=True)):
            if index == 5:  # the last column (max_failed): not padded
                padded = cell
            else:
                padded = cell.ljust(widths[index]) if index < 2 else cell.rjust(widths[index])
            parts.append(paint(padded, style, color) if style else padded)
        return "    " + "  ".join(parts).rstrip()

    out = [line(header, ["dim"] * len(header))]
    for rule, cells in zip(summary.rules, rows, strict=True):
        bad = rule.failed_records > 0 or bool(rule.violated)
        style = _ACTION_STYLE.get(rule.action) if bad else None
        styles = [None, _ACTION_STYLE.get(rule.action), None, style, style]
        if tolerances:
            styles.append("bold yellow" if rule.tolerance_exceeded else None)
        out.append(line(cells, styles))
    out.extend(_whole_lines(summary, color))
    return out


def _whole_lines(summary: DatasetSummary, color: bool) -> list[str]:
    """Under the rules table, per rule on the dataset as a whole (row count, aggregate):
    what it observed and whether it was met (docs/row-count-rules.md#metrics)."""
    out = []
    for rule in summary.rules:
        if not rule.on_dataset:
            continue
        observed = "NULL" if rule.observed is None else rule.observed
        verdict = "NOT MET" if rule.violated else "met"
        out.append("    " + paint(
            f"{rule.expectation}: {rule.constraint}: observed {observed}, {verdict}",
            (_ACTION_STYLE.get(rule.action) or "bold") if rule.violated else "dim", color))
    return out


def to_text(report: QualityReport, *, color: bool = False, title: str = "Data quality") -> str:
    """The summary as text for a person (ANSI colours when ``color``)."""
    where = ".".join(part for part in (report.catalog, report.database) if part)
    count = len(report.datasets)
    lines = [paint(f"== {title}" + (f" ({where})" if where else "")
                   + f": {count} dataset{'s' if count != 1 else ''} with expectations",
                   "bold", color)]
    shown: set[Violation] = set()
    told: set[ToleranceFailure] = set()
    unmet: set[DatasetRuleFailure] = set()
    for summary in report.datasets:
        lines.append("")
        lines.append(f"{paint(summary.dataset, 'bold', color)}  {_kind(summary)}, "
                     + _status_line(summary, color))
        for violation in summary.violations:
            lines.extend(violation_lines(violation, color, "  "))
            shown.add(violation)
        for failure in summary.tolerance_failures:
            lines.extend(tolerance_lines(failure, color, "  "))
            told.add(failure)
        for dataset_rule in summary.dataset_rule_failures:
            lines.extend(dataset_rule_lines(dataset_rule, color, "  "))
            unmet.add(dataset_rule)
        if summary.has_numbers:
            dropped = f"{summary.dropped_records} dropped"
            if summary.dropped_records:
                dropped = paint(dropped, "magenta", color)
            facts = [f"{summary.total_records} records", dropped]
            if summary.quarantine is not None:
                facts.append(f"quarantine {summary.quarantine.table}: "
                             f"{summary.quarantine.records} records")
            lines.append("  " + ", ".join(facts))
            lines.extend(_rule_table(summary, color))
        elif summary.status == FAILED:
            lines.append("  no metrics: a failed update records none")
        else:
            lines.append("  no metrics recorded")
    for violation in report.violations:
        if violation not in shown:
            lines.append("")
            lines.append(f"{paint(violation.dataset, 'bold', color)}  "
                         + paint("FAILED in this run", "bold red", color))
            lines.extend(violation_lines(violation, color, "  "))
    for failure in report.tolerance_failures:
        if failure not in told:
            lines.append("")
            lines.append(f"{paint(failure.dataset, 'bold', color)}  "
                         + paint("FAILED in this run", "bold red", color))
            lines.extend(tolerance_lines(failure, color, "  "))
    for dataset_rule in report.dataset_rule_failures:
        if dataset_rule not in unmet:
            lines.append("")
            lines.append(f"{paint(dataset_rule.dataset, 'bold', color)}  "
                         + paint("FAILED in this run", "bold red", color))
            lines.extend(dataset_rule_lines(dataset_rule, color, "  "))
    for note in report.notes:
        lines.append(paint(f"note: {note}", "yellow", color))
    if not report.datasets and not report.violations and not report.tolerance_failures \
            and not report.dataset_rule_failures:
        lines.append("No <dataset>_dq_metrics tables found: no dataset with expectations "
                     "has been updated yet (run `sdp-expect run`).")
    return "\n".join(lines) + "\n"


def restored_lines(restored: Sequence[Restored], *, color: bool = False) -> list[str]:
    """The summary's section on the materialized views of a failed update: each brought
    back to the last good update's version, or why it was not (none: no section)."""
    if not restored:
        return []
    back = [entry for entry in restored if entry.version is not None]
    title = ("== The failed update's views hold the last good update's data"
             if len(back) == len(restored) else "== The failed update's views")
    lines = ["", paint(title, "bold", color)]
    width = max(len(entry.table) for entry in restored)
    for entry in restored:
        what = (f"restored to version {entry.version}" if entry.version is not None
                else paint(f"not restored: {entry.reason}", "yellow", color))
        lines.append(f"  {entry.table:<{width}}  {what}")
    return lines
