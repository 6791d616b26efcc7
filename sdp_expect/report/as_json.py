"""The data-quality report as JSON-ready data (``--format json``, the history file)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Optional

from sdp_expect.base.violation import (
    DatasetRuleFailure,
    DatasetRulePart,
    ToleranceFailure,
    TolerancePart,
    Violation,
)
from sdp_expect.quality.summary import DatasetSummary, QualityReport, Trends

__all__ = ["dataset_rule_failure_dict", "dataset_rule_failure_from_dict", "report_dict",
           "summary_dict", "to_json", "tolerance_failure_dict", "tolerance_failure_from_dict",
           "trends_dict", "violation_dict"]


def violation_dict(violation: Violation, *, parsed: bool = True) -> dict[str, Any]:
    """A violation as JSON-ready data; the record parsed (``parsed``) or as its JSON text."""
    return {"dataset": violation.dataset, "expectations": list(violation.expectations),
            "record": violation.record_value() if parsed else violation.record}


def _percentage(failed: int, total: int) -> Any:
    return None if total == 0 else round(100.0 * failed / total, 2)


def tolerance_failure_dict(failure: ToleranceFailure) -> dict[str, Any]:
    """A flow failed by rules over their tolerance, as JSON-ready data: per rule, the
    fields of a rule's entry (``expectation``, ``failed_records``, ``total_records``,
    ``failure_percentage``, ``max_failed``)."""
    return {"dataset": failure.dataset,
            "rules": [{"expectation": part.name, "failed_records": part.failed,
                       "total_records": part.total,
                       "failure_percentage": _percentage(part.failed, part.total),
                       "max_failed": part.tolerance} for part in failure.parts]}


def tolerance_failure_from_dict(data: Any) -> Optional[ToleranceFailure]:
    """:func:`tolerance_failure_dict` read back (the history file); None when it is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        return None
    try:
        parts = tuple(TolerancePart(name=str(rule["expectation"]),
                                    failed=int(rule["failed_records"]),
                                    total=int(rule["total_records"]),
                                    tolerance=str(rule["max_failed"]))
                      for rule in data["rules"])
    except (KeyError, TypeError, ValueError):
        return None
    return ToleranceFailure(dataset=str(data.get("dataset")), parts=parts) if parts else None


def dataset_rule_failure_dict(failure: DatasetRuleFailure) -> dict[str, Any]:
    """A flow failed by fail rules on the dataset as a whole, as JSON-ready data: per rule,
    ``expectation``, ``observed`` (as a rule's entry has it: text, or null for NULL),
    ``expected`` (``"at least 1"``, ``"true"``...) and ``violated`` (true)."""
    return {"dataset": failure.dataset,
            "rules": [{"expectation": part.name, "observed": part.observed,
                       "expected": part.expected, "violated": True}
                      for part in failure.parts]}


def dataset_rule_failure_from_dict(data: Any) -> Optional[DatasetRuleFailure]:
    """:func:`dataset_rule_failure_dict` read back (the history file); None when it is not
    one."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        return None
    try:
        parts = tuple(DatasetRulePart(
            name=str(rule["expectation"]),
            observed=None if rule["observed"] is None else str(rule["observed"]),
            expected=str(rule["expected"])) for rule in data["rules"])
    except (KeyError, TypeError):
        return None
    return DatasetRuleFailure(dataset=str(data.get("dataset")), parts=parts) if parts else None


def summary_dict(summary: DatasetSummary) -> dict[str, Any]:
    """One dataset's summary as JSON-ready data."""
    rules = []
    for rule in summary.rules:
        entry = asdict(rule)
        tolerance = {key: entry.pop(key) for key in ("max_failed", "tolerance_exceeded")}
        # A rule on the dataset as a whole adds its verdict (docs/row-count-rules.md).
        whole = {key: entry.pop(key) for key in ("observed", "violated")}
        rules.append(dict(entry, total_records=rule.total_records,
                          failure_percentage=None if rule.failure_percentage is None
                          else round(rule.failure_percentage, 2), **tolerance,
                          **(whole if rule.on_dataset else {})))
    data = asdict(summary)
    data["rules"] = rules
    data["violations"] = [violation_dict(v) for v in summary.violations]
    data["tolerance_failures"] = [tolerance_failure_dict(f) for f in summary.tolerance_failures]
    data["dataset_rule_failures"] = [dataset_rule_failure_dict(f)
                                     for f in summary.dataset_rule_failures]
    return data


def trends_dict(trends: Trends) -> dict[str, Any]:
    """The rules' failure rates over the recorded updates, as JSON-ready data
    (docs/history.md#trends-in-the-report): per rule its updates oldest first, each with
    its counts and ``failure_percentage`` (``null`` for an update that checked no record)."""
    return {
        "pipeline": trends.pipeline, "max_updates": trends.max_updates,
        "updates": trends.updates,
        "rules": [{"dataset": trend.dataset, "expectation": trend.expectation,
                   "action": trend.action,
                   "points": [{"update_id": point.update_id,
                               "update_time": point.update_time.isoformat(),
                               "failed_records": point.failed,
                               "total_records": point.total,
                               "failure_percentage": _percentage(point.failed, point.total)}
                              for point in trend.points]}
                  for trend in trends.rules],
    }


def report_dict(report: QualityReport) -> dict[str, Any]:
    """The summary as JSON-ready data (the ``--format json`` document; ``trends`` only when
    the history was read: ``sdp-expect report``)."""
    trends = {} if report.trends is None else {"trends": trends_dict(report.trends)}
    return {
        "catalog": report.catalog,
        "database": report.database,
        "run_status": report.run_status,
        "datasets": [summary_dict(d) for d in report.datasets],
        "violations": [violation_dict(v) for v in report.violations],
        "tolerance_failures": [tolerance_failure_dict(f) for f in report.tolerance_failures],
        "dataset_rule_failures": [dataset_rule_failure_dict(f)
                                  for f in report.dataset_rule_failures],
        "notes": list(report.notes),
        **trends,
    }


def to_json(report: QualityReport, **extra: Any) -> str:
    """The summary as one JSON document, with ``extra`` top-level keys first."""
    return json.dumps({**extra, **report_dict(report)}, indent=2, ensure_ascii=False)
