"""The one compiler: expectations in, Spark query logic out.

Every front end (Python decorators, Databricks SQL, rule files) hands this
module a :class:`~sdp_expect.model.DatasetRules`; it returns Spark
the same logic as Spark SQL text and as ``DataFrame`` transformations built
from that text. Nothing here runs a
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

from dataclasses import dataclass
from typing import Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sdp_expect import violation
from sdp_expect.errors import SdpExpectError
from sdp_expect.model import Action, DatasetKind, DatasetRules, Expectation
from sdp_expect.names import (
    DROPPED_FLAG_COLUMN,
    FAILED_EXPECTATIONS_COLUMN,
    METRICS_COLUMNS,
    metrics_comment,
    quarantine_comment,
    record_log_comment,
)
from sdp_expect.options import PipelineOptions
from sdp_expect.sqltokens import sql_string

__all__ = [
    "FAILED_EXPECTATIONS_COLUMN",
    "METRICS_COLUMNS",
    "NO_RETRY_CONF",
    "CompanionPlan",
    "DatasetKind",
    "RuleLogic",
    "metrics_comment",
    "plan_companions",
    "quarantine_flow_name",
    "record_log_flow_name",
    "quarantine_comment",
    "record_log_comment",
    "sql_string",
]

NO_RETRY_CONF = {"spark.sql.pipelines.maxFlowRetryAttempts": "0"}
"""Per-flow setting for flows with fail rules: a failed expectation is not retried."""


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

    def names(self) -> tuple[str, ...]:
        """The names of the companion datasets there are."""
        return tuple(name for name in (self.quarantine, self.record_log, self.metrics) if name)


def quarantine_flow_name(flow: str) -> str:
    """The flow that feeds a streaming table's quarantine from the table's flow ``flow``."""
    return f"{flow}_to_quarantine"


def record_log_flow_name(flow: str) -> str:
    """The flow that feeds a streaming table's record log from the table's flow ``flow``."""
    return f"{flow}_to_dq_records"


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


def _balanced(terms: list[str], operator: str, empty: str) -> str:
    """Combine boolean SQL terms as a balanced tree: depth log2(n), not n.

    A chain of hundreds of ANDs nests as deep as it is long, deeper than Spark
    parses or plans comfortably; a balanced tree of 10,000 rules is 14 deep.
    """
    if not terms:
        return empty
    level = list(terms)
    while len(level) > 1:
        pairs = [f"({level[i]} {operator} {level[i + 1]})" for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def _all(terms: list[str]) -> str:
    return _balanced(terms, "AND", "true")


def _any(terms: list[str]) -> str:
    return _balanced(terms, "OR", "false")


def _embedded(constraint: str) -> str:
    """A constraint inside generated SQL, parenthesised.

    Constraints reach here checked (balanced parentheses, no unterminated
    string or comment, no ``;``); a trailing ``--`` comment is ended by a line
    break so that it cannot swallow what follows.
    """
    return f"({constraint}\n)" if "--" in constraint else f"({constraint})"


class RuleLogic:
    """The Spark logic of one dataset's expectations.

    Every piece is built once, as Spark SQL text; the DataFrame methods apply
    that text with ``expr``/``where``/``selectExpr`` (Python front end) and the
    ``*_select`` methods wrap it in ``SELECT`` statements (SQL translation).
    Both therefore run exactly the same expressions.

    :param rules: The dataset's expectations, in declaration order.
    :param options: The pipeline-wide settings (the NULL policy).
    """

    def __init__(self, rules: DatasetRules, options: PipelineOptions) -> None:
        self.rules = rules
        self.options = options

    # -- per-record expressions (SQL text) ---------------------------------------------
    def passes(self, expectation: Expectation) -> str:
        """TRUE when the record passes ``expectation``, never NULL."""
        null_result = "true" if self.options.null_passes else "false"
        return f"coalesce({_embedded(expectation.constraint)}, {null_result})"

    def violates(self, expectation: Expectation) -> str:
        """TRUE when the record violates ``expectation``, never NULL."""
        return f"NOT {self.passes(expectation)}"

    def kept(self) -> str:
        """TRUE when the record passes every drop rule."""
        return _all([self.passes(e) for e in self.rules.of(Action.DROP)])

    def violation_error(self) -> str:
        """``raise_error`` with the ``[EXPECTATION_VIOLATION]`` message for this record.

        The message's format and its parser live together in :mod:`sdp_expect.violation`.
        """
        checks = [(self.violates(e), e.name) for e in self.rules.of(Action.FAIL)]
        return f"raise_error({violation.message_sql(self.rules.dataset, checks)})"

    def guarded(self, value: str) -> str:
        """``value``, or the violation error for a record that violates a fail rule.

        Evaluating the fail check and ``value`` in one CASE is what keeps the
        optimizer from filtering a record out before the check sees it.
        """
        fail_rules = self.rules.of(Action.FAIL)
        if not fail_rules:
            return value
        violated = _any([self.violates(e) for e in fail_rules])
        return f"CASE WHEN {violated} THEN {self.violation_error()} ELSE {value} END"

    def failed_names(self) -> str:
        """ARRAY<STRING>: names of the warn and drop rules the record violated, in order."""
        named = [
            f"CASE WHEN {self.violates(e)} THEN {sql_string(e.name)} END"
            for e in self.rules.expectations
            if e.action is not Action.FAIL
        ]
        if not named:
            return "CAST(array() AS ARRAY<STRING>)"
        return f"filter(array({', '.join(named)}), _sdpx_name -> _sdpx_name IS NOT NULL)"

    # -- what each dataset keeps (SQL text) ---------------------------------------------
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

    def target_condition(self) -> Optional[str]:
        """The target's filter, or None when every record is written unchecked."""
        if not self.rules.of(Action.DROP) and not self.has_fail_rules():
            return None
        return self.guarded(self.kept())

    def quarantine_condition(self) -> str:
        """The quarantine's filter: dropped records; fail rules checked."""
        return self.guarded(f"NOT {self.kept()}")

    def record_log_columns(self) -> list[str]:
        """A streaming table's record log: dropped or not, and the rules violated."""
        return [
            f"{self.guarded(f'NOT {self.kept()}')} AS {DROPPED_FLAG_COLUMN}",
            f"{self.failed_names()} AS {FAILED_EXPECTATIONS_COLUMN}",
        ]

    def _counts_from_query(self) -> list[str]:
        return [
            "count(1) AS total",
            f"count_if(NOT {self.kept()}) AS dropped",
            "array(" + ", ".join(f"count_if({self.violates(e)})"
                                 for e in self.rules.expectations) + ") AS failed",
        ]

    def _counts_from_record_log(self) -> list[str]:
        return [
            "count(1) AS total",
            f"count_if({DROPPED_FLAG_COLUMN}) AS dropped",
            "array(" + ", ".join(
                f"count_if(array_contains({FAILED_EXPECTATIONS_COLUMN}, {sql_string(e.name)}))"
                for e in self.rules.expectations) + ") AS failed",
        ]

    def _metrics_rows(self) -> str:
        """One row per expectation from the one-row ``(total, dropped, failed[])`` counts.

        The rows are generated from the counts' row itself rather than joined
        with a table of rules: a join lets Catalyst's constraint propagation grow
        with the square of the rules. The rules' names, actions and constraints
        are one constant array (folded into a single literal) zipped with the
        ``failed`` counts: one struct expression per rule instead would make the
        generated Java code of the plan grow beyond the JVM's 64 KB method limit
        at a few hundred rules (Spark then logs a compile error and falls back).
        """
        rules = ", ".join(
            f"named_struct('rule_name', {sql_string(e.name)}, "
            f"'rule_action', {sql_string(e.action.value)}, "
            f"'rule_constraint', {sql_string(e.constraint)})"
            for e in self.rules.expectations
        )
        return (
            f"inline(zip_with(array({rules}), failed, (_sdpx_rule, _sdpx_failed) -> "
            f"named_struct('dataset', {sql_string(self.rules.dataset)}, "
            "'expectation', _sdpx_rule.rule_name, "
            "'action', _sdpx_rule.rule_action, "
            "'constraint', _sdpx_rule.rule_constraint, "
            "'passed_records', CAST(total AS BIGINT) - CAST(_sdpx_failed AS BIGINT), "
            "'failed_records', CAST(_sdpx_failed AS BIGINT), "
            "'total_records', CAST(total AS BIGINT), "
            "'dropped_records', CAST(dropped AS BIGINT))))"
        )

    # -- DataFrames (Python front end) -------------------------------------------------
    def rule_check(self, query: DataFrame, expectation: Expectation) -> DataFrame:
        """The query with one column: ``expectation``'s constraint alone, as written.

        sdp-expect registers it as an unread temporary view per rule: SDP analyses it
        (dry-run and run) but never executes it, and a constraint that Spark cannot
        resolve fails exactly that view's flow, which names the rule.
        """
        return query.selectExpr(f"{_embedded(expectation.constraint)} AS _sdpx_check")

    def rule_check_select(self, source: str, expectation: Optional[Expectation]) -> str:
        """``SELECT`` of :meth:`rule_check` from the relation ``source`` (the query alone
        when ``expectation`` is None)."""
        if expectation is None:
            return f"SELECT * FROM {source}"
        return f"SELECT {_embedded(expectation.constraint)} AS _sdpx_check FROM {source}"

    def target(self, query: DataFrame) -> DataFrame:
        """The records written to the dataset: the kept ones; fail rules checked."""
        condition = self.target_condition()
        return query if condition is None else query.where(F.expr(condition))

    def quarantine(self, query: DataFrame) -> DataFrame:
        """The dropped records with ``_failed_expectations``; fail rules checked."""
        dropped = query.where(F.expr(self.quarantine_condition()))
        # A projection, not withColumn: Spark Connect analyses the input of withColumn
        # while planning it, which binds a pipeline dataset to the catalog table of the
        # previous update instead of to the graph (the flow then stops waiting for it).
        return dropped.selectExpr("*", f"{self.failed_names()} AS {FAILED_EXPECTATIONS_COLUMN}")

    def record_log(self, query: DataFrame) -> DataFrame:
        """Per record: dropped or not, and the names of the rules it violated."""
        return query.selectExpr(*self.record_log_columns())

    def metrics_from_query(self, query: DataFrame) -> DataFrame:
        """``<dataset>_dq_metrics`` of one update, counted from the query's records."""
        checked = query.where(F.expr(self.guarded("true"))) if self.has_fail_rules() else query
        return checked.selectExpr(*self._counts_from_query()).selectExpr(self._metrics_rows())

    def metrics_from_record_log(self, log: DataFrame) -> DataFrame:
        """``<dataset>_dq_metrics`` of a streaming table, counted from its record log."""
        return log.selectExpr(*self._counts_from_record_log()).selectExpr(self._metrics_rows())

    # -- SELECT statements (SQL translation) -------------------------------------------
    def target_select(self, source: str) -> str:
        """``SELECT`` of the target's records from the relation ``source``."""
        condition = self.target_condition()
        where = "" if condition is None else f"\nWHERE {condition}"
        return f"SELECT * FROM {source}{where}"

    def quarantine_select(self, source: str) -> str:
        """``SELECT`` of the quarantine's records from the relation ``source``."""
        return (f"SELECT *, {self.failed_names()} AS {FAILED_EXPECTATIONS_COLUMN}\n"
                f"FROM {source}\nWHERE {self.quarantine_condition()}")

    def record_log_select(self, source: str) -> str:
        """``SELECT`` of a streaming table's record log from the relation ``source``."""
        return f"SELECT {', '.join(self.record_log_columns())}\nFROM {source}"

    def metrics_select_from_query(self, source: str) -> str:
        """``SELECT`` of a materialized view's metrics from the relation ``source``."""
        where = f"\nWHERE {self.guarded('true')}" if self.has_fail_rules() else ""
        counts = ", ".join(self._counts_from_query())
        return (f"SELECT {self._metrics_rows()}\n"
                f"FROM (SELECT {counts}\nFROM {source}{where}) AS _sdpx_counts")

    def metrics_select_from_record_log(self, log: str) -> str:
        """``SELECT`` of a streaming table's metrics from its record log ``log``."""
        counts = ", ".join(self._counts_from_record_log())
        return f"SELECT {self._metrics_rows()}\nFROM (SELECT {counts}\nFROM {log}) AS _sdpx_counts"
