"""The Python emitter: a :class:`~sdp_expect.core.planner.Plan` as ``pyspark.pipelines`` calls.

:mod:`sdp_expect.core.planner` decides what a dataset with expectations becomes; this
module registers it with the graph being defined, applying the compiler's SQL
text to the user's DataFrame. It applies that text with ``where``/``selectExpr``
only: Spark Connect analyses the input of some other DataFrame methods
(``withColumn``, ``drop``, ...) while planning them, which binds a pipeline
dataset to the catalog table of the previous update instead of to the graph
(docs/early-binding.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pyspark.pipelines as _sdp
from pyspark.pipelines.graph_element_registry import get_active_graph_element_registry
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sdp_expect.base.definitions import record_dataset
from sdp_expect.core.compiler import (
    GUARD_RECORDS,
    GUARD_ROW,
    PREPARED_LEFT,
    PREPARED_RIGHT,
    RuleLogic,
)
from sdp_expect.core.model import DatasetKind, Expectation, Reference, UniqueKey
from sdp_expect.core.planner import DatasetSpec, FlowSpec, Plan, Role, RuleCheck, Step
from sdp_expect.emit.check_views import record_check

__all__ = [
    "DATASET_DECORATORS",
    "apply",
    "checked",
    "emit",
    "metrics_from_query",
    "metrics_from_batch_log",
    "prepared",
    "quarantine",
    "batch_input",
    "returning",
    "rule_check",
    "target",
    "within_tolerance",
]

QueryFunction = Callable[[], DataFrame]

DATASET_DECORATORS: Dict[DatasetKind, Callable[..., Any]] = {
    DatasetKind.MATERIALIZED_VIEW: _sdp.materialized_view,
    DatasetKind.STREAMING_TABLE: _sdp.table,
    DatasetKind.TEMPORARY_VIEW: _sdp.temporary_view,
}
"""The ``pyspark.pipelines`` decorator of each kind of dataset."""


# ------------------------------------------------------------------ the rules on DataFrames


def prepared(logic: RuleLogic, query: DataFrame, only: Optional[Expectation] = None
             ) -> DataFrame:
    """``query``'s records with the key rules' columns and the record struct
    (:meth:`RuleLogic.prepared`, the same steps and text): ``alias``, ``selectExpr``, a
    left ``join`` with the referenced dataset's keys read by ``spark.read.table`` and
    grouped (``groupBy``/``agg``, not ``distinct``, which Spark Connect analyses on 4.1
    and 4.2: docs/early-binding.md). ``query`` itself without key rules."""
    rules = [(i, e) for i, e in logic.key_rules() if only is None or e is only]
    if not rules:
        return query
    left = f"{PREPARED_LEFT}0"
    df = query.alias(left).selectExpr(*logic.record_columns(left))
    for step, (i, e) in enumerate(rules, start=1):
        left = f"{PREPARED_LEFT}{step}"
        check = e.check
        if isinstance(check, UniqueKey):
            df = df.alias(left).selectExpr(
                f"{left}.*", f"{logic.unique_flag(check, left)} AS _sdpx_key_{i}")
            continue
        assert isinstance(check, Reference)
        keys = (query.sparkSession.read.table(check.dataset)
                .selectExpr(*logic.reference_keys(check))
                .groupBy(*logic.reference_group(check))
                .agg(F.expr(logic.reference_found())))
        df = (df.alias(left)
              .join(keys.alias(PREPARED_RIGHT),
                    on=F.expr(logic.reference_condition(check, left, PREPARED_RIGHT)),
                    how="left")
              .selectExpr(f"{left}.*", f"{logic.reference_flag(check, left, PREPARED_RIGHT)}"
                                       f" AS _sdpx_key_{i}"))
    return df


def within_tolerance(logic: RuleLogic, query: DataFrame) -> DataFrame:
    """``query``'s records, written only when no fail or drop rule exceeds its tolerance:
    the compiler's one-row guard cross-joined to them (docs/thresholds.md). ``alias``,
    ``crossJoin``, ``where`` and ``selectExpr`` only: none has Spark Connect analyse
    the query while the pipeline is defined."""
    if not logic.needs_tolerance_guard():
        return query
    guard = query.selectExpr(*logic.tolerance_counts()).selectExpr(
        logic.tolerance_guard_column())
    return (query.alias(GUARD_RECORDS).crossJoin(guard.alias(GUARD_ROW))
            .where(F.expr(f"{GUARD_ROW}._sdpx_ok")).selectExpr(f"{GUARD_RECORDS}.*"))


def target(logic: RuleLogic, query: DataFrame) -> DataFrame:
    """The records written to the dataset: the kept ones; fail rules and tolerances
    checked."""
    query = within_tolerance(logic, prepared(logic, query))
    condition = logic.target_condition()
    kept = query if condition is None else query.where(F.expr(condition))
    return kept.selectExpr(logic.output_columns()) if logic.rules.has_dataset_checks else kept


def quarantine(logic: RuleLogic, query: DataFrame) -> DataFrame:
    """The dropped records with ``_failed_expectations``; fail rules and tolerances
    checked."""
    dropped = within_tolerance(logic, prepared(logic, query)).where(
        F.expr(logic.quarantine_condition()))
    # A projection, not withColumn: Spark Connect analyses the input of withColumn
    # while planning it, which binds a pipeline dataset to the catalog table of the
    # previous update instead of to the graph (the flow then stops waiting for it).
    return dropped.selectExpr(*logic.quarantine_columns())


def batch_input(logic: RuleLogic, query: DataFrame) -> DataFrame:
    """Per record, what the batch log counts (the view its flow reads)."""
    return prepared(logic, query).selectExpr(*logic.batch_log_inputs())


def metrics_from_query(logic: RuleLogic, query: DataFrame) -> DataFrame:
    """``<dataset>_dq_metrics`` of one update, counted from the query's records."""
    query = prepared(logic, query)
    condition = logic.metrics_condition()
    checked = query if condition is None else query.where(F.expr(condition))
    counts = checked.selectExpr(*logic.counts_from_query())
    guard = logic.counts_condition()
    if guard is not None:
        counts = counts.where(F.expr(guard))
    return counts.selectExpr(logic.metrics_rows())


def metrics_from_batch_log(logic: RuleLogic, log: DataFrame) -> DataFrame:
    """``<dataset>_dq_metrics`` of a streaming table, counted from its batch log."""
    return log.selectExpr(*logic.counts_from_batch_log()).selectExpr(logic.metrics_rows())


def metrics_from_companions(logic: RuleLogic, kept: DataFrame, dropped: DataFrame
                            ) -> DataFrame:
    """``<dataset>_dq_metrics`` of a materialized view, counted from what it wrote: the
    view's records and its quarantine's (one-row counts of each, joined)."""
    counts = kept.selectExpr(*logic.counts_from_kept()).crossJoin(
        dropped.selectExpr(*logic.counts_from_quarantine()))
    return counts.selectExpr(*logic.counts_from_companions()).selectExpr(logic.metrics_rows())


def rule_check(logic: RuleLogic, query: DataFrame, expectation: Expectation) -> DataFrame:
    """The query with one column: ``expectation``'s constraint alone, as written (a key
    rule's column over the prepared relation of that rule alone)."""
    if expectation.check is not None:
        query = prepared(logic, query, expectation)
    return query.selectExpr(logic.rule_check_column(expectation))


def _as_written(logic: RuleLogic, query: DataFrame) -> DataFrame:
    """A dataset or flow without expectations: its query."""
    return query


_STEPS: Dict[Step, Callable[[RuleLogic, DataFrame], DataFrame]] = {
    Step.QUERY: _as_written,
    Step.TARGET: target,
    Step.QUARANTINE: quarantine,
    Step.BATCH_INPUT: batch_input,
    Step.METRICS_FROM_QUERY: metrics_from_query,
    Step.METRICS_FROM_BATCH_LOG: metrics_from_batch_log,
}
"""Each step that a flow computes from one DataFrame (what it reads), as DataFrames."""

_BATCH_LOG_STEPS: Dict[Step, Callable[[RuleLogic, str], str]] = {
    Step.BATCH_LOG: RuleLogic.batch_log_select,
    Step.BATCH_LOG_BY_RECORD: RuleLogic.batch_log_record_select,
}
"""The steps of a batch log's flow, registered as SQL text (:func:`_sql_flow`)."""


def apply(logic: RuleLogic, flow: FlowSpec, source: DataFrame) -> DataFrame:
    """The flow's records: its step applied to what it reads."""
    return _STEPS[flow.step](logic, source)


def checked(logic: RuleLogic, check: RuleCheck, query: DataFrame) -> DataFrame:
    """A check view's query: the flow's query alone, or one rule's constraint over it (a
    rule's is given a read of the query's own check view)."""
    if check.expectation is None:
        return query
    return rule_check(logic, query, check.expectation)


# --------------------------------------------------------------------------- registration


def returning(df: DataFrame, like: Callable[..., Any]) -> QueryFunction:
    """A query function that returns ``df``, named (and documented) like ``like``."""
    def query() -> DataFrame:
        return df

    query.__name__ = getattr(like, "__name__", "query")
    query.__qualname__ = getattr(like, "__qualname__", query.__name__)
    query.__doc__ = getattr(like, "__doc__", None)
    return query


def _flow_query(logic: RuleLogic, flow: FlowSpec, query: Optional[DataFrame],
                like: Callable[..., Any]) -> QueryFunction:
    """The query function of ``flow``: over the user's query, or reading its dataset
    when the query function runs (as the user's own query functions read)."""
    if flow.reads is None:
        assert query is not None
        return returning(apply(logic, flow, query), like)
    spark = SparkSession.active()
    name, also = flow.reads, flow.also_reads

    def read_query() -> DataFrame:
        if also is not None:
            assert flow.step is Step.METRICS_FROM_COMPANIONS
            return metrics_from_companions(logic, spark.read.table(name),
                                           spark.read.table(also))
        return apply(logic, flow, spark.read.table(name))

    return read_query


def _sql_name(name: str) -> str:
    """``name`` as a SQL identifier, as the Python API passes it to Spark: dotted parts
    as they are when each is a plain identifier, else quoted as one part."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        return name
    return "`" + name.replace("`", "``") + "`"


def _sql_flow(logic: RuleLogic, flow: FlowSpec) -> None:
    """Register ``flow`` (a batch log's, which reads its input view as a stream) as SQL:
    its Spark settings ``SET`` first, in a text of its own (a ``SET`` reaches the end of
    its own text only), then ``CREATE FLOW ... AS INSERT INTO ... BY NAME``."""
    assert flow.reads is not None
    settings = [f"SET {key} = {value};\n" for key, value in flow.spark_conf.items()]
    select = _BATCH_LOG_STEPS[flow.step](logic, f"STREAM({_sql_name(flow.reads)})")
    text = "".join([*settings,
                    f"CREATE FLOW {_sql_name(flow.name)}\n"
                    f"AS INSERT INTO {_sql_name(flow.target)} BY NAME\n"
                    f"{select};\n"])
    get_active_graph_element_registry().register_sql(
        text, Path(f"{flow.name} (sdp-expect batch log)"))


def _dataset(logic: RuleLogic, spec: DatasetSpec, query: Optional[DataFrame],
             func: Callable[..., Any], options: Dict[str, Any]) -> None:
    """Register one dataset of a plan, with the user's ``options`` of the dataset itself;
    the user's query function ``func`` lends it its name and docstring."""
    flow = spec.query
    if spec.role is Role.TARGET:  # the dataset itself, with the user's options
        # ... and the planner's format (a format that is the session's default is not
        # declared: core.planner._stored_format)
        options = {key: value for key, value in options.items() if key != "format"}
        if spec.format is not None:
            options["format"] = spec.format
        if flow is None:
            _sdp.create_streaming_table(spec.name, **options)
        else:
            DATASET_DECORATORS[spec.kind](**dict(options, name=spec.name,
                                              spark_conf=dict(flow.spark_conf)))(
                _flow_query(logic, flow, query, func))
        return
    if flow is None:
        formatted: Dict[str, Any] = {} if spec.format is None else {"format": spec.format}
        _sdp.create_streaming_table(spec.name, comment=spec.comment, **formatted)
        return
    DATASET_DECORATORS[spec.kind](name=spec.name, comment=spec.comment,
                               spark_conf=dict(flow.spark_conf))(
        _flow_query(logic, flow, query, _STEPS.get(flow.step, metrics_from_companions)))


def emit(plan: Plan, query: Optional[DataFrame], func: Callable[..., Any],
         options: Optional[Dict[str, Any]] = None, *, streaming: bool = False) -> None:
    """Register everything ``plan`` holds: datasets, then flows, then check views.

    :param plan: The plan.
    :param query: The user's query (None for a table declared without one).
    :param func: The user's query function.
    :param options: The user's options of the dataset itself (``comment``,
        ``table_properties``, ...); a flow's and the dataset's own Spark conf are
        the plan's.
    :param streaming: Whether ``query`` reads a stream (a rule's check view reads the
        query's view as one).
    """
    logic = RuleLogic(plan.rules, plan.options)
    options = dict(options or {})
    options.pop("spark_conf", None)
    for spec in plan.datasets:
        _dataset(logic, spec, query, func, options)
        record_dataset(spec.name, type=spec.kind.value, owner=plan.rules.dataset)
    for flow in plan.flows:
        if flow.step in _BATCH_LOG_STEPS:
            _sql_flow(logic, flow)
            continue
        _sdp.append_flow(target=flow.target, name=flow.name, spark_conf=dict(flow.spark_conf))(
            _flow_query(logic, flow, query,
                        func if flow.step in (Step.QUERY, Step.TARGET) else _STEPS[flow.step]))
    for check in plan.checks:
        assert query is not None
        if check.query_view is None:  # the query alone
            _sdp.temporary_view(name=check.view)(returning(query, rule_check))
        else:  # one rule, over the query's view: the query is analysed once, not per rule
            _sdp.temporary_view(name=check.view, spark_conf=dict(CHECK_VIEW_CONF))(
                returning(checked(logic, check, _view_read(check.query_view, streaming,
                                                           check.dataset)), rule_check))
        record_check(check)


CHECK_VIEW_CONF = {"pipelines.incompatibleViewCheck.enabled": "false"}
"""A rule's check view reads the query's view as the query reads (a stream, or not);
should the two ever disagree, SDP's check of that (``INCOMPATIBLE_..._VIEW_READ``) is
off for these views alone, which are analysed and never run."""


def _view_read(view: str, streaming: bool, alias: str) -> DataFrame:
    """A read of the graph's view ``view``: as a stream when ``streaming``, its columns
    qualified by ``alias`` (the dataset's name: Spark's message on a column it cannot
    resolve names the columns it has by it, not by a view sdp-expect made)."""
    spark = SparkSession.active()
    read = spark.readStream.table(view) if streaming else spark.read.table(view)
    return read.alias(alias.rsplit(".", 1)[-1])
