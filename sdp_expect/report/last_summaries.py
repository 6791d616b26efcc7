"""The last summaries: what ``sdp-expect run`` keeps, in the project, of each dataset's last
successful update and of its own last run.

A materialized view is empty after a failed update (and so is its metrics table):
``sdp-expect report`` then shows the dataset's last successful numbers, and the last
run's violations and failures, from ``<project>/.sdp-expect/last-summaries.json``. One
JSON file per project, rewritten after each run: it holds the latest numbers only.
Quality over time (every update, every rule, read back as trends) is the history
table's (:mod:`sdp_expect.quality.history_table`), not this file's.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

from sdp_expect.quality.summary import UPDATED, QualityReport
from sdp_expect.report.as_json import (
    dataset_rule_failure_dict,
    summary_dict,
    tolerance_failure_dict,
    violation_dict,
)

__all__ = ["LAST_SUMMARIES_FILE", "load_last_summaries", "save_last_summaries"]

LAST_SUMMARIES_FILE = os.path.join(".sdp-expect", "last-summaries.json")
"""Where ``sdp-expect run`` keeps the last summaries (in the project)."""

_EARLIER_FILE = os.path.join(".sdp-expect", "dq-history.json")
"""The file's earlier name (until December 2026); still read when the new one is absent,
so that a project's kept summaries survive the upgrade."""


def load_last_summaries(folder: Path) -> dict[str, Any]:
    """The summaries ``sdp-expect run`` kept in the project (empty when none)."""
    path = folder / LAST_SUMMARIES_FILE
    if not path.exists():
        path = folder / _EARLIER_FILE
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_last_summaries(folder: Path, report: QualityReport) -> None:
    """Keep the summary of every dataset this run updated (an unwritable folder is ignored)."""
    data = load_last_summaries(folder)
    kept = dict(data.get("datasets", {}))
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for summary in report.datasets:
        if summary.status == UPDATED and summary.has_numbers:
            kept[summary.dataset] = {"recorded_at": now, "summary": summary_dict(summary)}
    data["datasets"] = kept
    data["last_run"] = {"finished_at": now, "status": report.run_status,
                        "violations": [violation_dict(v, parsed=False)
                                       for v in report.violations],
                        "tolerance_failures": [tolerance_failure_dict(f)
                                               for f in report.tolerance_failures],
                        "dataset_rule_failures": [dataset_rule_failure_dict(f)
                                                  for f in report.dataset_rule_failures]}
    path = folder / LAST_SUMMARIES_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
    except OSError:
        pass
