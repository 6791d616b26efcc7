"""The one compiler: expectations in, Spark query logic out.

Every front end (Python decorators, Databricks SQL, rule files) hands this
module a :class:`~sdp_expect.model.DatasetRules`; it returns Spark
``Column`` expressions and ``DataFrame`` transformations. Nothing here runs a
Spark action or asks Spark to analyse a plan: the functions only build plans.

The meaning of a rule, in one place:

* a record *passes* an expectation when its constraint is TRUE; FALSE and
  NULL are violations (``coalesce(constraint, false)``), unless the pipeline
  sets ``sdp_expect.null_result = pass`` (``coalesce(constraint, true)``);
* a record is *kept* when it passes every drop expectation;
* a record that violates a fail expectation raises
  ``[EXPECTATION_VIOLATION] ...``; the check and the drop filter are one
  ``CASE`` expression that references every column of the record, so the
  optimizer cannot push the drop filter (or an inferred ``isnotnull``, a
  parquet filter or partition pruning) below the fail check.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from sdp_expect.errors import SdpExpectError
from sdp_expect.model import Action, DatasetRules, Expectation
from sdp_expect.options import PipelineOptions

__all__ = [
    "FAILED_EXPECTATIONS_COLUMN",
    "METRICS_COLUMNS",
    "NO_RETRY_CONF",
    "CompanionPlan",
    "DatasetKind",
    "RuleLogic",
    "plan_companions",
]

FAILED_EXPECTATIONS_COLUMN = "_failed_expectations"
"""The quarantine's extra column: names of all warn and drop rules a record violated."""

DROPPED_FLAG_COLUMN = "_dropped"
"""In a streaming table's record log: whether the record was dropped."""

METRICS_COLUMNS = (
    "dataset",
    "expectation",
    "action",
    "constraint",
    "passed_records",
    "failed_records",
    "total_records",
    "dropped_records",
)
"""The columns of ``<dataset>_dq_metrics``, in order (contract section 6)."""

NO_RETRY_CONF = {"spark.sql.pipelines.maxFlowRetryAttempts": "0"}
"""Per-flow setting for flows with fail rules: a failed expectation is not retried."""


class DatasetKind(str, enum.Enum):
    """The kind of dataset expectations are attached to."""

    MATERIALIZED_VIEW = "materialized view"
    STREAMING_TABLE = "streaming table"
    TEMPORARY_VIEW = "temporary view"


@dataclass(frozen=True)
class CompanionPlan:
    """The companion datasets of one dataset (names, or None when absent).

    :param quarantine: The quarantine dataset (same kind as the dataset).
    :param record_log: Streaming tables only: the internal streaming table
        that keeps, per record, which rules it violated, so that the metrics
        can be cumulative.
    :param metrics: The ``<dataset>_dq_metrics`` materialized view.
    """

    quarantine: Optional[str] = None
    record_log: Optional[str] = None
    metrics: Optional[str] = None


def plan_companions(
    rules: DatasetRules, options: PipelineOptions, kind: DatasetKind
) -> CompanionPlan:
    """Decide which companion datasets a dataset gets (contract sections 5 and 6).

    :param rules: The dataset's expectations and per-dataset settings.
    :param options: The pipeline-wide settings.
    :param kind: The dataset's kind.
    :raises SdpExpectError: SDPX-DEF-106 for quarantine on a temporary view.
    """
    if kind is DatasetKind.TEMPORARY_VIEW:
        if rules.quarantine is not None:
            raise SdpExpectError("SDPX-DEF-106", dataset=rules.dataset)
        return CompanionPlan()
    if rules.quarantine is not None:
        quarantine: Optional[str] = rules.quarantine.resolve(rules.dataset)
    elif options.quarantine and rules.of(Action.DROP):
        quarantine = f"{rules.dataset}_quarantine"
    else:
        quarantine = None
    wants_metrics = not rules.empty and (
        rules.metrics if rules.metrics is not None else options.metrics
    )
    metrics = f"{rules.dataset}_dq_metrics" if wants_metrics else None
    record_log = (
        f"{rules.dataset}_dq_records"
        if metrics is not None and kind is DatasetKind.STREAMING_TABLE
        else None
    )
    return CompanionPlan(quarantine=quarantine, record_log=record_log, metrics=metrics)


def _balanced(columns: list[Column], combine: Callable[[Column, Column], Column],
              empty: bool) -> Column:
    """Combine columns as a balanced tree: depth log2(n), not n.

    A chain of hundreds of ANDs would exceed the nesting depth a Spark Connect
    plan may have (about 100); a balanced tree of 10,000 rules is 14 deep.
    """
    if not columns:
        return F.lit(empty)
    level = list(columns)
    while len(level) > 1:
        pairs = [combine(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def _all(columns: list[Column]) -> Column:
    return _balanced(columns, lambda a, b: a & b, True)


def _any(columns: list[Column]) -> Column:
    return _balanced(columns, lambda a, b: a | b, False)


class RuleLogic:
    """The Spark logic of one dataset's expectations.

    :param rules: The dataset's expectations, in declaration order.
    :param options: The pipeline-wide settings (the NULL policy).
    """

    def __init__(self, rules: DatasetRules, options: PipelineOptions) -> None:
        self.rules = rules
        self.options = options

    # -- per-record expressions -------------------------------------------------
    def passes(self, expectation: Expectation) -> Column:
        """TRUE when the record passes ``expectation``, never NULL."""
        return F.coalesce(F.expr(expectation.constraint), F.lit(self.options.null_passes))

    def violates(self, expectation: Expectation) -> Column:
        """TRUE when the record violates ``expectation``, never NULL."""
        return ~self.passes(expectation)

    def kept(self) -> Column:
        """TRUE when the record passes every drop rule."""
        return _all([self.passes(e) for e in self.rules.of(Action.DROP)])

    def violation_error(self) -> Column:
        """``raise_error`` with the ``[EXPECTATION_VIOLATION]`` line for this record."""
        names = F.concat_ws(
            ", ",
            *[F.when(self.violates(e), F.lit(e.name)) for e in self.rules.of(Action.FAIL)],
        )
        record = F.to_json(F.expr("struct(*)"), {"ignoreNullFields": "false"})
        message = F.concat(
            F.lit(
                f"[EXPECTATION_VIOLATION] Flow '{self.rules.dataset}' failed to meet the "
                "expectation. Violated expectations: '"
            ),
            names,
            F.lit("'. Output record: '"),
            record,
            F.lit("'."),
        )
        return F.raise_error(message)

    def guarded(self, value: Column) -> Column:
        """``value``, or the violation error for a record that violates a fail rule.

        Evaluating the fail check and ``value`` in one CASE is what keeps the
        optimizer from filtering a record out before the check sees it.
        """
        fail_rules = self.rules.of(Action.FAIL)
        if not fail_rules:
            return value
        return F.when(_any([self.violates(e) for e in fail_rules]), self.violation_error()) \
            .otherwise(value)

    def failed_names(self) -> Column:
        """ARRAY<STRING>: names of the warn and drop rules the record violated, in order."""
        named = [
            F.when(self.violates(e), F.lit(e.name))
            for e in self.rules.expectations
            if e.action is not Action.FAIL
        ]
        if not named:
            return F.array().cast("array<string>")
        return F.filter(F.array(*named), lambda name: name.isNotNull())

    # -- datasets -----------------------------------------------------------------
    def has_fail_rules(self) -> bool:
        """True when a violation fails the flow."""
        return bool(self.rules.of(Action.FAIL))

    def flow_conf(self, user_conf: Optional[dict[str, str]]) -> dict[str, str]:
        """The flow's Spark conf: the user's, plus no retries when there are fail rules.

        A value the user set explicitly wins.
        """
        conf = dict(NO_RETRY_CONF) if self.has_fail_rules() else {}
        conf.update(user_conf or {})
        return conf

    def target(self, query: DataFrame) -> DataFrame:
        """The records written to the dataset: the kept ones; fail rules checked."""
        if not self.rules.of(Action.DROP) and not self.has_fail_rules():
            return query
        return query.where(self.guarded(self.kept()))

    def quarantine(self, query: DataFrame) -> DataFrame:
        """The dropped records with ``_failed_expectations``; fail rules checked."""
        dropped = query.where(self.guarded(~self.kept()))
        return dropped.withColumn(FAILED_EXPECTATIONS_COLUMN, self.failed_names())

    def record_log(self, query: DataFrame) -> DataFrame:
        """Per record: dropped or not, and the names of the rules it violated."""
        return query.select(
            self.guarded(~self.kept()).alias(DROPPED_FLAG_COLUMN),
            self.failed_names().alias(FAILED_EXPECTATIONS_COLUMN),
        )

    def metrics_from_query(self, query: DataFrame) -> DataFrame:
        """``<dataset>_dq_metrics`` of one update, counted from the query's records."""
        checked = query.where(self.guarded(F.lit(True))) if self.has_fail_rules() else query
        counts = checked.agg(
            F.count(F.lit(1)).alias("total"),
            F.count_if(~self.kept()).alias("dropped"),
            F.array(*[F.count_if(self.violates(e)) for e in self.rules.expectations]).alias(
                "failed"
            ),
        )
        return self._metrics_rows(counts)

    def metrics_from_record_log(self, log: DataFrame) -> DataFrame:
        """``<dataset>_dq_metrics`` of a streaming table, counted from its record log."""
        failed = F.col(FAILED_EXPECTATIONS_COLUMN)
        counts = log.agg(
            F.count(F.lit(1)).alias("total"),
            F.count_if(F.col(DROPPED_FLAG_COLUMN)).alias("dropped"),
            F.array(
                *[F.count_if(F.array_contains(failed, e.name)) for e in self.rules.expectations]
            ).alias("failed"),
        )
        return self._metrics_rows(counts)

    def _metrics_rows(self, counts: DataFrame) -> DataFrame:
        """One row per expectation from a one-row ``(total, dropped, failed[])`` frame.

        The rows are generated from the counts' row itself (``inline`` of one
        struct per rule) rather than joined with a table of rules: a join lets
        Catalyst's constraint propagation grow with the square of the rules.
        """
        total = F.col("total").cast("bigint")
        dropped = F.col("dropped").cast("bigint")
        rows = []
        for index, expectation in enumerate(self.rules.expectations):
            failed = F.col("failed")[index].cast("bigint")
            rows.append(
                F.struct(
                    F.lit(self.rules.dataset).alias("dataset"),
                    F.lit(expectation.name).alias("expectation"),
                    F.lit(expectation.action.value).alias("action"),
                    F.lit(expectation.constraint).alias("constraint"),
                    (total - failed).alias("passed_records"),
                    failed.alias("failed_records"),
                    total.alias("total_records"),
                    dropped.alias("dropped_records"),
                )
            )
        return counts.select(F.inline(F.array(*rows)))
