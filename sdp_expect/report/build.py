"""A :class:`~sdp_expect.quality.summary.QualityReport` made of what the tables hold
and what a run said (or, for ``sdp-expect report``, what the last runs kept).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar

from sdp_expect.base.violation import DatasetRuleFailure, ToleranceFailure, Violation
from sdp_expect.quality.summary import (
    FAILED,
    LAST_SUCCESS,
    METRICS_SUFFIX,
    NO_SUCCESS,
    NOT_RUN,
    SKIPPED,
    STREAMING_METRICS_COMMENT,
    UPDATED,
    DatasetSummary,
    QualityReport,
    QuarantineInfo,
    RuleResult,
    TableReading,
    Trends,
    UpdateCount,
)
from sdp_expect.quality.trends import rule_trends
from sdp_expect.report.as_json import dataset_rule_failure_from_dict, tolerance_failure_from_dict

__all__ = ["build_report", "completed_metrics_tables", "quarantine_info"]


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def quarantine_info(q: Mapping[str, Any]) -> QuarantineInfo:
    """A quarantine as the reader found it (or as ``sdp-expect run`` kept it)."""
    return QuarantineInfo(
        table=str(q["table"]), records=_int(q.get("records")),
        columns=[str(c) for c in q.get("columns", [])], sample=list(q.get("sample", [])),
        by_rule=None if q.get("by_rule") is None
        else {str(k): _int(v) for k, v in dict(q["by_rule"]).items()},
        by_update=None if q.get("by_update") is None
        else [UpdateCount(_optional_text(u.get("update")), _optional_text(u.get("started")),
                          _int(u.get("records"))) for u in q["by_update"]])


def _optional_text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _optional_bool(value: Any) -> Optional[bool]:
    return None if value is None else bool(value)


def _rule(row: Mapping[str, Any]) -> RuleResult:
    """A rule's entry: a metrics table's row, or a kept summary's rule."""
    return RuleResult(
        expectation=str(row["expectation"]), action=str(row["action"]),
        constraint=str(row["constraint"]), passed_records=_int(row["passed_records"]),
        failed_records=_int(row["failed_records"]),
        max_failed=_optional_text(row.get("max_failed")),
        tolerance_exceeded=_optional_bool(row.get("tolerance_exceeded")),
        observed=_optional_text(row.get("observed")),
        violated=_optional_bool(row.get("violated")))


def _dataset_from_table(entry: Mapping[str, Any]) -> DatasetSummary:
    table = str(entry["table"])
    rows = list(entry.get("rows", []))
    name = str(rows[0]["dataset"]) if rows else table[: -len(METRICS_SUFFIX)]
    summary = DatasetSummary(
        dataset=name, metrics_table=table,
        streaming=STREAMING_METRICS_COMMENT in str(entry.get("comment", "")))
    for row in rows:
        summary.rules.append(_rule(row))
        summary.total_records = _int(row["total_records"])
        summary.dropped_records = _int(row["dropped_records"])
    return summary


def _short(name: str) -> str:
    """``spark_catalog.default.orders`` -> ``orders``."""
    return name.rsplit(".", 1)[-1].strip("`")


def build_report(reading: TableReading, *, flows: Optional[Mapping[str, str]] = None,
                 violations: Sequence[Violation] = (), run_status: Optional[str] = None,
                 last_summaries: Optional[Mapping[str, Any]] = None,
                 tolerance_failures: Sequence[ToleranceFailure] = (),
                 dataset_rule_failures: Sequence[DatasetRuleFailure] = (),
                 pipeline: Optional[str] = None) -> QualityReport:
    """Combine what the tables hold with what a run said.

    :param reading: The tables, from :func:`~sdp_expect.report.reader.read_tables`.
    :param flows: For ``run``: each flow's last state, by (qualified) flow name.
        ``None`` for ``report``: every dataset is shown as of its last successful update.
    :param violations: For ``run``: the expectation violations the run reported.
    :param run_status: The run's final state.
    :param last_summaries: What ``sdp-expect run`` kept of the last updates
        (:func:`~sdp_expect.report.last_summaries.load_last_summaries`), used
        for a dataset whose metrics table is empty; for ``report``, its last run's
        violations, tolerance failures and dataset rule failures are shown.
    :param tolerance_failures: For ``run``: the flows it reported failed by rules over
        their tolerance.
    :param dataset_rule_failures: For ``run``: the flows it reported failed by fail rules
        on the dataset as a whole.
    :param pipeline: The pipeline's name: when the reading has history rows
        (``read_tables(..., history_of=...)``), the report's :class:`Trends` are this
        pipeline's.
    """
    states = {_short(flow): state for flow, state in (flows or {}).items()}
    if flows is None:
        # `report`: the violations of the last run, as `sdp-expect run` kept them.
        violations = _kept_violations(last_summaries or {})
        tolerance_failures = _kept(last_summaries or {}, "tolerance_failures",
                                   tolerance_failure_from_dict)
        dataset_rule_failures = _kept(last_summaries or {}, "dataset_rule_failures",
                                      dataset_rule_failure_from_dict)
    report = QualityReport(catalog=reading.catalog, database=reading.database,
                           run_status=run_status, violations=list(violations),
                           tolerance_failures=list(tolerance_failures),
                           dataset_rule_failures=list(dataset_rule_failures),
                           notes=list(reading.notes), trends=_trends(reading, pipeline))
    quarantines = {str(q["dataset"]): q for q in reading.quarantines}
    kept = dict((last_summaries or {}).get("datasets", {}))
    for entry in reading.metrics:
        summary = _dataset_from_table(entry)
        q = quarantines.get(summary.dataset)
        if q is not None:
            summary.quarantine = quarantine_info(q)
        if flows is None:
            summary.status = LAST_SUCCESS
            if not summary.has_numbers:
                # Empty after a failed update: show the last successful numbers that
                # `sdp-expect run` kept.
                earlier = kept.get(summary.dataset)
                if earlier:
                    summary = _from_last_summary(earlier, summary)
                else:
                    summary.status = NO_SUCCESS
        summary.violations = [v for v in report.violations
                              if _short(v.dataset) == summary.dataset]
        summary.tolerance_failures = [f for f in report.tolerance_failures
                                      if _short(f.dataset) == summary.dataset]
        summary.dataset_rule_failures = [f for f in report.dataset_rule_failures
                                         if _short(f.dataset) == summary.dataset]
        if flows is not None:
            summary.status = _run_state(summary, states)
        report.datasets.append(summary)
    report.datasets.sort(key=lambda d: d.dataset)
    return report


def _trends(reading: TableReading, pipeline: Optional[str]) -> Optional[Trends]:
    """The rules' series over the updates the reading holds (``None``: none read)."""
    if reading.history is None:
        return None
    rows = [row for row in reading.history if pipeline is None or row["pipeline"] == pipeline]
    return Trends(pipeline=pipeline or "", max_updates=reading.history_updates,
                  updates=len({str(row["update_id"]) for row in rows}),
                  rules=tuple(rule_trends(rows, pipeline=pipeline)))


def _kept_violations(last_summaries: Mapping[str, Any]) -> list[Violation]:
    """The violations of the last run, from the last summaries ``sdp-expect run`` kept."""
    last_run = last_summaries.get("last_run")
    entries = last_run.get("violations", []) if isinstance(last_run, dict) else []
    found: list[Violation] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        violation = Violation(dataset=str(entry.get("dataset")),
                              expectations=tuple(str(n) for n in entry.get("expectations", [])),
                              record=str(entry.get("record")))
        if violation not in found:
            found.append(violation)
    return found


_Failure = TypeVar("_Failure")


def _kept(last_summaries: Mapping[str, Any], key: str,
          from_dict: Callable[[Any], Optional[_Failure]]) -> list[_Failure]:
    """The failed flows of the last run under ``key`` (``tolerance_failures``,
    ``dataset_rule_failures``), from the last summaries ``sdp-expect run`` kept, once each."""
    last_run = last_summaries.get("last_run")
    entries = last_run.get(key, []) if isinstance(last_run, dict) else []
    found: list[_Failure] = []
    for entry in entries if isinstance(entries, list) else []:
        failure = from_dict(entry)
        if failure is not None and failure not in found:
            found.append(failure)
    return found


def completed_metrics_tables(flows: Mapping[str, str]) -> list[str]:
    """The metrics tables whose flows completed, by the flows' states of a run: when no
    flow of the run failed, the tables of the datasets the report shows as updated
    (:func:`_run_state`), those empty or not sdp-expect's apart."""
    return sorted({_short(flow) for flow, state in flows.items()
                   if state == "COMPLETED" and _short(flow).endswith(METRICS_SUFFIX)})


def _run_state(summary: DatasetSummary, states: Mapping[str, str]) -> str:
    own = states.get(summary.dataset)
    metrics = states.get(summary.metrics_table)
    if summary.violations or summary.tolerance_failures or summary.dataset_rule_failures \
            or own == "FAILED" or metrics == "FAILED":
        return FAILED
    if metrics == "COMPLETED":
        return UPDATED
    if own == "SKIPPED" or metrics == "SKIPPED":
        return SKIPPED
    return NOT_RUN


def _from_last_summary(kept: Mapping[str, Any], current: DatasetSummary) -> DatasetSummary:
    """A dataset's kept summary, for a dataset whose metrics table is empty now."""
    data = dict(kept.get("summary", {}))
    restored = DatasetSummary(
        dataset=current.dataset, metrics_table=current.metrics_table,
        streaming=bool(data.get("streaming", current.streaming)),
        total_records=_int(data.get("total_records")),
        dropped_records=_int(data.get("dropped_records")),
        rules=[_rule(r) for r in data.get("rules", [])],
        status=LAST_SUCCESS, recorded_at=str(kept.get("recorded_at")))
    q = data.get("quarantine")
    if isinstance(q, dict):
        restored.quarantine = quarantine_info(q)
    return restored
