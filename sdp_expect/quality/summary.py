"""The values of a data-quality report: what each dataset's metrics and quarantine
tables hold, and the state of each dataset in a run.

After ``spark-pipelines`` has run, every dataset with expectations has a
``<dataset>_dq_metrics`` table (docs/semantics.md#metrics) and, when quarantine is on,
a quarantine table (docs/semantics.md#quarantine). :mod:`sdp_expect.report.reader` reads them into
a :class:`TableReading`, :func:`sdp_expect.report.build.build_report` makes a
:class:`QualityReport` of it, which :mod:`~sdp_expect.report.text`,
:mod:`~sdp_expect.report.as_json` and :mod:`~sdp_expect.report.html` show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from sdp_expect.base import names
from sdp_expect.base.violation import DatasetRuleFailure, ToleranceFailure, Violation
from sdp_expect.quality.trends import RuleTrend

__all__ = [
    "DEFAULT_SAMPLE",
    "FAILED",
    "FAILED_EXPECTATIONS",
    "LAST_SUCCESS",
    "METRICS_COLUMNS",
    "METRICS_SUFFIX",
    "NOT_RUN",
    "NO_SUCCESS",
    "QUARANTINE_COMMENT",
    "SKIPPED",
    "STREAMING_METRICS_COMMENT",
    "TOLERANCE_METRICS_COLUMNS",
    "TREND_UPDATES",
    "UPDATED",
    "WHOLE_METRICS_COLUMNS",
    "DatasetSummary",
    "QualityReport",
    "QuarantineInfo",
    "ReadError",
    "RuleResult",
    "TableReading",
    "Trends",
    "UpdateCount",
]

METRICS_SUFFIX = names.METRICS_SUFFIX
"""Suffix of a dataset's metrics table."""
METRICS_COLUMNS = names.METRICS_COLUMNS
"""The metrics table's columns (docs/semantics.md#metrics)."""
TOLERANCE_METRICS_COLUMNS = names.TOLERANCE_METRICS_COLUMNS
"""The columns a metrics table has after :data:`METRICS_COLUMNS` when its dataset has
tolerances (docs/thresholds.md)."""
WHOLE_METRICS_COLUMNS = names.WHOLE_METRICS_COLUMNS
"""The columns a metrics table has at its end when its dataset has a rule on the dataset
as a whole (docs/row-count-rules.md#metrics)."""
FAILED_EXPECTATIONS = names.FAILED_EXPECTATIONS_COLUMN
"""The quarantine's column with the names of the rules a record violated."""
QUARANTINE_COMMENT = re.compile(
    "^" + re.escape(names.quarantine_comment("")) + "(?P<dataset>.+)$")
"""The comment sdp-expect gives a quarantine table (Python and SQL front ends)."""
STREAMING_METRICS_COMMENT = names.metrics_comment("", streaming=True).split(", ", 1)[1]
"""Part of the comment of a streaming table's metrics table."""
DEFAULT_SAMPLE = 20
"""Quarantined rows read per dataset, by default."""
TREND_UPDATES = 30
"""The report's trends show at most this many updates: the pipeline's newest recorded
ones (docs/history.md#trends-in-the-report)."""

# Dataset states shown in a summary.
UPDATED = "updated"
"""The dataset's metrics were recomputed by this run."""
FAILED = "failed"
"""The dataset's flow failed in this run (for example a fail expectation)."""
SKIPPED = "skipped"
"""SDP skipped the dataset in this run (an upstream flow failed)."""
NOT_RUN = "not run"
"""This run did not update the dataset (for example ``--refresh`` of other datasets)."""
LAST_SUCCESS = "last successful update"
"""``report``: the numbers are those of the last successful update."""
NO_SUCCESS = "no successful update"
"""``report``: the metrics table is empty and no earlier summary was kept."""


class ReadError(RuntimeError):
    """The tables could not be read (the reader process failed)."""


@dataclass(frozen=True)
class UpdateCount:
    """The records of a quarantine that one update quarantined.

    :param update: The update's id (``_quarantine_update``); None for records written
        before quarantines named their update, or by SQL saved with ``translate``.
    :param started: When it started (``_quarantine_time``), as ISO text; None as above.
    :param records: How many of the quarantine's records it quarantined.
    """

    update: Optional[str]
    started: Optional[str]
    records: int


@dataclass
class RuleResult:
    """One expectation's row of a metrics table.

    :param expectation: The expectation's name.
    :param action: ``warn``, ``drop`` or ``fail``.
    :param constraint: The constraint as written.
    :param passed_records: Records for which the constraint was TRUE.
    :param failed_records: Records that violated it.
    :param max_failed: Its tolerance as written (``"10"``, ``"0.5%"``); ``None`` without one.
    :param tolerance_exceeded: Whether ``failed_records`` exceeds it; ``None`` without a
        tolerance. Only a warn rule's can be true: a fail or drop rule over its tolerance
        fails the update, which records no metrics.
    :param observed: A rule on the dataset as a whole (row count, aggregate): what it
        observed (the count; ``true``, ``false`` or ``None``); ``None`` for a record rule.
    :param violated: A rule on the dataset as a whole: its verdict; ``None`` for a record
        rule (docs/row-count-rules.md#metrics).
    """

    expectation: str
    action: str
    constraint: str
    passed_records: int
    failed_records: int
    max_failed: Optional[str] = None
    tolerance_exceeded: Optional[bool] = None
    observed: Optional[str] = None
    violated: Optional[bool] = None

    @property
    def on_dataset(self) -> bool:
        """True for a rule on the dataset as a whole (its metrics row has a verdict)."""
        return self.violated is not None

    @property
    def total_records(self) -> int:
        """Passed plus failed: the records the query produced."""
        return self.passed_records + self.failed_records

    @property
    def failure_percentage(self) -> Optional[float]:
        """Failed records as a percentage of all records; ``None`` when there were none."""
        if self.total_records == 0:
            return None
        return 100.0 * self.failed_records / self.total_records


@dataclass
class QuarantineInfo:
    """A dataset's quarantine table.

    :param table: Its name.
    :param records: How many records it holds.
    :param columns: Its columns, ``_failed_expectations`` included.
    :param sample: Up to a few of its records, as JSON-ready dicts.
    :param by_rule: Per rule named in ``_failed_expectations``, how many of its records
        failed it (a record counts once for each rule it failed), the most first; ``None``
        where they were not counted (the run's summary does not count them).
    :param by_update: Its records per update that quarantined them, the newest first;
        ``None`` where they were not counted (as ``by_rule``).
    """

    table: str
    records: int
    columns: list[str]
    sample: list[dict[str, Any]]
    by_rule: Optional[dict[str, int]] = None
    by_update: Optional[list[UpdateCount]] = None


@dataclass
class DatasetSummary:
    """The data quality of one dataset with expectations.

    :param dataset: The dataset's name.
    :param metrics_table: Its metrics table.
    :param streaming: True for a streaming table (counts since its last full refresh).
    :param total_records: Records the query produced (0 when unknown).
    :param dropped_records: Records dropped by the dataset.
    :param rules: One entry per expectation, in the metrics table's order.
    :param quarantine: Its quarantine table, when it has one.
    :param status: One of the dataset states (``updated``, ``failed``, ...).
    :param violations: Records that failed the dataset's fail rules in this run.
    :param tolerance_failures: Its flow failed by fail or drop rules over their tolerance
        in this run.
    :param dataset_rule_failures: Its flow failed by fail rules on the dataset as a whole
        (row count, aggregate) that do not hold, in this run.
    :param recorded_at: For numbers kept from an earlier run: when they were recorded.
    """

    dataset: str
    metrics_table: str
    streaming: bool = False
    total_records: int = 0
    dropped_records: int = 0
    rules: list[RuleResult] = field(default_factory=list)
    quarantine: Optional[QuarantineInfo] = None
    status: str = UPDATED
    violations: list[Violation] = field(default_factory=list)
    tolerance_failures: list[ToleranceFailure] = field(default_factory=list)
    dataset_rule_failures: list[DatasetRuleFailure] = field(default_factory=list)
    recorded_at: Optional[str] = None

    @property
    def has_tolerances(self) -> bool:
        """Whether a rule has a tolerance (its metrics table has the two columns)."""
        return any(rule.max_failed is not None for rule in self.rules)

    @property
    def has_numbers(self) -> bool:
        """Whether there are metrics to show."""
        return bool(self.rules)


@dataclass(frozen=True)
class Trends:
    """Each rule's failure rate over the pipeline's recorded updates (the history table,
    docs/history.md#trends-in-the-report), as the report shows it.

    :param pipeline: The pipeline whose history was read.
    :param max_updates: At most this many updates were read: the newest.
    :param updates: How many updates were read (``updates == max_updates``: there may be
        older ones).
    :param rules: One trend per dataset and expectation with rows among them
        (:func:`~sdp_expect.quality.trends.rule_trends`); empty when nothing is recorded.
    """

    pipeline: str
    max_updates: int
    updates: int
    rules: tuple[RuleTrend, ...] = ()

    def of(self, dataset: str, expectation: str) -> Optional[RuleTrend]:
        """The trend of ``expectation`` on ``dataset``, if the history has it."""
        return next((t for t in self.rules
                     if t.dataset == dataset and t.expectation == expectation), None)

    @property
    def capped(self) -> bool:
        """Whether older updates may have been left out (as many were read as allowed)."""
        return self.updates >= self.max_updates


@dataclass
class QualityReport:
    """Everything a summary shows.

    :param datasets: One entry per dataset with a metrics table, by name.
    :param violations: Every expectation violation the run printed.
    :param tolerance_failures: Every flow the run printed as failed by rules over their
        tolerance (``[EXPECTATION_TOLERANCE_EXCEEDED]``).
    :param dataset_rule_failures: Every flow the run printed as failed by fail rules on the
        dataset as a whole (``[EXPECTATION_DATASET_RULE_FAILED]``).
    :param catalog: The catalog read.
    :param database: The database (schema) read.
    :param run_status: The run's final state (``COMPLETED``, ``FAILED``...), for ``run``.
    :param notes: Things the reader should know (a table that could not be read...).
    :param trends: The rules' failure rates over the recorded updates; ``None`` when the
        history was not read (``sdp-expect run``'s summary, or it could not be read).
    """

    datasets: list[DatasetSummary] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    tolerance_failures: list[ToleranceFailure] = field(default_factory=list)
    dataset_rule_failures: list[DatasetRuleFailure] = field(default_factory=list)
    catalog: Optional[str] = None
    database: Optional[str] = None
    run_status: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    trends: Optional[Trends] = None

    def dataset(self, name: str) -> Optional[DatasetSummary]:
        """The summary of ``name``, if it has one."""
        return next((d for d in self.datasets if d.dataset == name), None)


@dataclass
class TableReading:
    """What the reader process found in the catalog.

    :param catalog: The catalog it read.
    :param database: The database it read.
    :param metrics: Per metrics table: ``table``, ``comment`` and ``rows`` (dicts).
    :param quarantines: Per quarantine table: ``table``, ``dataset``, ``records``,
        ``columns``, ``sample``.
    :param notes: Tables it could not read, and why.
    :param history: The history table's rows of the pipeline's newest
        ``history_updates`` updates (:func:`~sdp_expect.quality.history_table.read_history`;
        none when the table does not exist); ``None`` when not read.
    :param history_updates: The most updates read from the history.
    """

    catalog: str
    database: str
    metrics: list[dict[str, Any]]
    quarantines: list[dict[str, Any]]
    notes: list[str]
    history: Optional[list[dict[str, Any]]] = None
    history_updates: int = TREND_UPDATES

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableReading:
        """Rebuild a reading from the reader's JSON output."""
        return cls(catalog=str(data.get("catalog") or ""), database=str(data.get("database") or ""),
                   metrics=list(data.get("metrics", [])),
                   quarantines=list(data.get("quarantines", [])),
                   notes=[str(note) for note in data.get("notes", [])],
                   history=(list(data["history"]) if data.get("history") is not None
                            else None),
                   history_updates=int(data.get("history_updates") or TREND_UPDATES))
