"""The data-quality report as JSON-ready data (``--format json``, the history file)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from sdp_expect.report.model import DatasetSummary, QualityReport
from sdp_expect.violation import Violation

__all__ = ["report_dict", "summary_dict", "to_json", "violation_dict"]


def violation_dict(violation: Violation, *, parsed: bool = True) -> dict[str, Any]:
    """A violation as JSON-ready data; the record parsed (``parsed``) or as its JSON text."""
    return {"dataset": violation.dataset, "expectations": list(violation.expectations),
            "record": violation.record_value() if parsed else violation.record}


def summary_dict(summary: DatasetSummary) -> dict[str, Any]:
    """One dataset's summary as JSON-ready data."""
    rules = [dict(asdict(rule), total_records=rule.total_records,
                  failure_percentage=None if rule.failure_percentage is None
                  else round(rule.failure_percentage, 2)) for rule in summary.rules]
    data = asdict(summary)
    data["rules"] = rules
    data["violations"] = [violation_dict(v) for v in summary.violations]
    return data


def report_dict(report: QualityReport) -> dict[str, Any]:
    """The summary as JSON-ready data (the ``--format json`` document)."""
    return {
        "catalog": report.catalog,
        "database": report.database,
        "run_status": report.run_status,
        "datasets": [summary_dict(d) for d in report.datasets],
        "violations": [violation_dict(v) for v in report.violations],
        "notes": list(report.notes),
    }


def to_json(report: QualityReport, **extra: Any) -> str:
    """The summary as one JSON document, with ``extra`` top-level keys first."""
    return json.dumps({**extra, **report_dict(report)}, indent=2, ensure_ascii=False)
