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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple

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
    quoted,
)
from sdp_expect.core.model import DatasetKind, Reference, UniqueKey
from sdp_expect.core.planner import DatasetSpec, FlowSpec, Plan, Role, RuleCheck, Step
from sdp_expect.emit.check_views import record_check, rule_view_select

__all__ = [
    "DATASET_DECORATORS",
    "KeyStep",
    "Pieces",
    "Prepared",
    "apply",
    "emit",
    "metrics_from_query",
    "metrics_from_batch_log",
    "prepared",
    "quarantine",
    "batch_input",
    "returning",
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


# ------------------------------------------------------------- the compiler's text, as data


@dataclass(frozen=True)
class KeyStep:
    """One key rule's step of the prepared relation (:meth:`RuleLogic.prepared`), as SQL
    text: a unique key's flag over ``alias``, or a reference's read of ``dataset``, its
    keys, their grouping, the join's condition and the flag after it."""

    alias: str
    column: str
    unique_flag: Optional[str] = None
    dataset: str = ""
    keys: Tuple[str, ...] = ()
    group: Tuple[str, ...] = ()
    found: str = ""
    condition: str = ""
    flag: str = ""


@dataclass(frozen=True)
class Prepared:
    """The prepared relation's steps: the record columns, then one step per key rule."""

    record_columns: Tuple[str, ...]
    steps: Tuple[KeyStep, ...]


def _prepared(logic: RuleLogic) -> Optional[Prepared]:
    rules = logic.key_rules()
    if not rules:
        return None
    steps = []
    for step, (i, e) in enumerate(rules, start=1):
        left, check = f"{PREPARED_LEFT}{step}", e.check
        if isinstance(check, UniqueKey):
            steps.append(KeyStep(left, f"_sdpx_key_{i}",
                                 unique_flag=logic.unique_flag(check, left)))
            continue
        assert isinstance(check, Reference)
        steps.append(KeyStep(
            left, f"_sdpx_key_{i}", dataset=check.dataset,
            keys=tuple(logic.reference_keys(check)), group=tuple(logic.reference_group(check)),
            found=logic.reference_found(),
            condition=logic.reference_condition(check, left, PREPARED_RIGHT),
            flag=logic.reference_flag(check, left, PREPARED_RIGHT)))
    return Prepared(tuple(logic.record_columns(f"{PREPARED_LEFT}0")), tuple(steps))


@dataclass(frozen=True)
class Pieces:
    """Every piece of SQL text that a plan's flows and check views apply to DataFrames,
    taken from the compiler once (:meth:`of`): the emitter's functions below map a
    plan's steps to DataFrame methods over these values and never call the compiler.
    A piece that none of the plan's steps uses is left empty.

    :param prepared: The prepared relation with every key rule (None: no key rule).
    :param tolerance_counts: The one-row counts of the tolerance guard (empty: no guard).
    :param tolerance_guard: The guard's column over those counts.
    :param target_condition: The records written to the dataset (None: every record).
    :param output_columns: The dataset's columns, when rules on the dataset as a whole
        add columns to drop (None: the query's columns).
    :param quarantine_condition: The records written to the quarantine.
    :param quarantine_columns: The quarantine's columns.
    :param batch_log_inputs: What the batch log counts, per record.
    :param metrics_condition: The records the metrics count (None: every record).
    :param counts_from_query: The metrics' one-row counts over the query.
    :param counts_condition: The condition on those counts (None: none).
    :param metrics_rows: The metrics' rows from one-row counts.
    :param counts_from_batch_log: The counts from a batch log.
    :param counts_from_kept: The counts from the dataset's records.
    :param counts_from_quarantine: The counts from the quarantine's records.
    :param counts_from_companions: The counts of those two, joined.
    :param check_selects: Per rule's check view (by name), its ``SELECT`` over the view
        of the query alone (:func:`_rule_views` registers them as SQL text).
    :param sql_flows: Per batch log flow (by name), its ``SELECT``.
    """

    prepared: Optional[Prepared] = None
    tolerance_counts: Tuple[str, ...] = ()
    tolerance_guard: str = ""
    target_condition: Optional[str] = None
    output_columns: Optional[str] = None
    quarantine_condition: str = ""
    quarantine_columns: Tuple[str, ...] = ()
    batch_log_inputs: Tuple[str, ...] = ()
    metrics_condition: Optional[str] = None
    counts_from_query: Tuple[str, ...] = ()
    counts_condition: Optional[str] = None
    metrics_rows: str = ""
    counts_from_batch_log: Tuple[str, ...] = ()
    counts_from_kept: Tuple[str, ...] = ()
    counts_from_quarantine: Tuple[str, ...] = ()
    counts_from_companions: Tuple[str, ...] = ()
    check_selects: Mapping[str, str] = field(default_factory=dict)
    sql_flows: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, logic: RuleLogic, steps: Iterable[Step], checks: Iterable[RuleCheck] = (),
           sql_flows: Iterable[FlowSpec] = (), *, streaming: bool = False) -> Pieces:
        """The pieces that flows of ``steps``, the rules' views among ``checks`` (read
        as a stream when ``streaming``) and the batch log flows ``sql_flows`` apply:
        the compiler's text, asked for only where a step uses it."""
        used = set(steps)
        pieces: Dict[str, Any] = {}
        if used & {Step.TARGET, Step.QUARANTINE, Step.BATCH_INPUT, Step.METRICS_FROM_QUERY}:
            pieces["prepared"] = _prepared(logic)
        if used & {Step.TARGET, Step.QUARANTINE} and logic.needs_tolerance_guard():
            pieces.update(tolerance_counts=tuple(logic.tolerance_counts()),
                          tolerance_guard=logic.tolerance_guard_column())
        if Step.TARGET in used:
            pieces.update(target_condition=logic.target_condition(),
                          output_columns=logic.output_columns()
                          if logic.rules.has_dataset_checks else None)
        if Step.QUARANTINE in used:
            pieces.update(quarantine_condition=logic.quarantine_condition(),
                          quarantine_columns=tuple(logic.quarantine_columns()))
        if Step.BATCH_INPUT in used:
            pieces["batch_log_inputs"] = tuple(logic.batch_log_inputs())
        if Step.METRICS_FROM_QUERY in used:
            pieces.update(metrics_condition=logic.metrics_condition(),
                          counts_from_query=tuple(logic.counts_from_query()),
                          counts_condition=logic.counts_condition())
        if Step.METRICS_FROM_BATCH_LOG in used:
            pieces["counts_from_batch_log"] = tuple(logic.counts_from_batch_log())
        if Step.METRICS_FROM_COMPANIONS in used:
            pieces.update(counts_from_kept=tuple(logic.counts_from_kept()),
                          counts_from_quarantine=tuple(logic.counts_from_quarantine()),
                          counts_from_companions=tuple(logic.counts_from_companions()))
        if used & {Step.METRICS_FROM_QUERY, Step.METRICS_FROM_BATCH_LOG,
                   Step.METRICS_FROM_COMPANIONS}:
            pieces["metrics_rows"] = logic.metrics_rows()
        views = [check for check in checks if check.query_view is not None]
        pieces["check_selects"] = {
            check.view: rule_view_select(logic, check, streaming=streaming,
                                         alias=quoted(check.dataset.rsplit(".", 1)[-1]))
            for check in views}
        pieces["sql_flows"] = {
            flow.name: _BATCH_LOG_STEPS[flow.step](logic, f"STREAM({_sql_name(flow.reads or '')})")
            for flow in sql_flows}
        return cls(**pieces)


_BATCH_LOG_STEPS: Dict[Step, Callable[[RuleLogic, str], str]] = {
    Step.BATCH_LOG: RuleLogic.batch_log_select,
    Step.BATCH_LOG_BY_RECORD: RuleLogic.batch_log_record_select,
}
"""The steps of a batch log's flow, registered as SQL text (:func:`_sql_flow`)."""


def _sql_name(name: str) -> str:
    """``name`` as a SQL identifier, as the Python API passes it to Spark: dotted parts
    as they are when each is a plain identifier, else quoted as one part."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        return name
    return "`" + name.replace("`", "``") + "`"


# ------------------------------------------------------------------ the rules on DataFrames


def prepared(pieces: Pieces, query: DataFrame) -> DataFrame:
    """``query``'s records with the key rules' columns and the record struct
    (:meth:`RuleLogic.prepared`, the same steps and text): ``alias``, ``selectExpr``, a
    left ``join`` with the referenced dataset's keys read by ``spark.read.table`` and
    grouped (``groupBy``/``agg``, not ``distinct``, which Spark Connect analyses on 4.1
    and 4.2: docs/early-binding.md). ``query`` itself without key rules."""
    relation = pieces.prepared
    if relation is None:
        return query
    df = query.alias(f"{PREPARED_LEFT}0").selectExpr(*relation.record_columns)
    for step in relation.steps:
        if step.unique_flag is not None:
            df = df.alias(step.alias).selectExpr(f"{step.alias}.*",
                                                 f"{step.unique_flag} AS {step.column}")
            continue
        keys = (query.sparkSession.read.table(step.dataset).selectExpr(*step.keys)
                .groupBy(*step.group).agg(F.expr(step.found)))
        df = (df.alias(step.alias)
              .join(keys.alias(PREPARED_RIGHT), on=F.expr(step.condition), how="left")
              .selectExpr(f"{step.alias}.*", f"{step.flag} AS {step.column}"))
    return df


def within_tolerance(pieces: Pieces, query: DataFrame) -> DataFrame:
    """``query``'s records, written only when no fail or drop rule exceeds its tolerance:
    the compiler's one-row guard cross-joined to them (docs/thresholds.md). ``alias``,
    ``crossJoin``, ``where`` and ``selectExpr`` only: none has Spark Connect analyse
    the query while the pipeline is defined."""
    if not pieces.tolerance_counts:
        return query
    guard = query.selectExpr(*pieces.tolerance_counts).selectExpr(pieces.tolerance_guard)
    return (query.alias(GUARD_RECORDS).crossJoin(guard.alias(GUARD_ROW))
            .where(F.expr(f"{GUARD_ROW}._sdpx_ok")).selectExpr(f"{GUARD_RECORDS}.*"))


def target(pieces: Pieces, query: DataFrame) -> DataFrame:
    """The records written to the dataset: the kept ones; fail rules and tolerances
    checked."""
    query = within_tolerance(pieces, prepared(pieces, query))
    condition = pieces.target_condition
    kept = query if condition is None else query.where(F.expr(condition))
    return kept if pieces.output_columns is None else kept.selectExpr(pieces.output_columns)


def quarantine(pieces: Pieces, query: DataFrame) -> DataFrame:
    """The dropped records with ``_failed_expectations``; fail rules and tolerances
    checked."""
    dropped = within_tolerance(pieces, prepared(pieces, query)).where(
        F.expr(pieces.quarantine_condition))
    # A projection, not withColumn: Spark Connect analyses the input of withColumn
    # while planning it, which binds a pipeline dataset to the catalog table of the
    # previous update instead of to the graph (the flow then stops waiting for it).
    return dropped.selectExpr(*pieces.quarantine_columns)


def batch_input(pieces: Pieces, query: DataFrame) -> DataFrame:
    """Per record, what the batch log counts (the view its flow reads)."""
    return prepared(pieces, query).selectExpr(*pieces.batch_log_inputs)


def metrics_from_query(pieces: Pieces, query: DataFrame) -> DataFrame:
    """``<dataset>_dq_metrics`` of one update, counted from the query's records."""
    query = prepared(pieces, query)
    condition = pieces.metrics_condition
    checked = query if condition is None else query.where(F.expr(condition))
    counts = checked.selectExpr(*pieces.counts_from_query)
    guard = pieces.counts_condition
    if guard is not None:
        counts = counts.where(F.expr(guard))
    return counts.selectExpr(pieces.metrics_rows)


def metrics_from_batch_log(pieces: Pieces, log: DataFrame) -> DataFrame:
    """``<dataset>_dq_metrics`` of a streaming table, counted from its batch log."""
    return log.selectExpr(*pieces.counts_from_batch_log).selectExpr(pieces.metrics_rows)


def metrics_from_companions(pieces: Pieces, kept: DataFrame, dropped: DataFrame
                            ) -> DataFrame:
    """``<dataset>_dq_metrics`` of a materialized view, counted from what it wrote: the
    view's records and its quarantine's (one-row counts of each, joined)."""
    counts = kept.selectExpr(*pieces.counts_from_kept).crossJoin(
        dropped.selectExpr(*pieces.counts_from_quarantine))
    return counts.selectExpr(*pieces.counts_from_companions).selectExpr(pieces.metrics_rows)


def _as_written(pieces: Pieces, query: DataFrame) -> DataFrame:
    """A dataset or flow without expectations: its query."""
    return query


_STEPS: Dict[Step, Callable[[Pieces, DataFrame], DataFrame]] = {
    Step.QUERY: _as_written,
    Step.TARGET: target,
    Step.QUARANTINE: quarantine,
    Step.BATCH_INPUT: batch_input,
    Step.METRICS_FROM_QUERY: metrics_from_query,
    Step.METRICS_FROM_BATCH_LOG: metrics_from_batch_log,
}
"""Each step that a flow computes from one DataFrame (what it reads), as DataFrames."""


def apply(pieces: Pieces, flow: FlowSpec, source: DataFrame) -> DataFrame:
    """The flow's records: its step applied to what it reads."""
    return _STEPS[flow.step](pieces, source)


# --------------------------------------------------------------------------- registration


def returning(df: DataFrame, like: Callable[..., Any]) -> QueryFunction:
    """A query function that returns ``df``, named (and documented) like ``like``."""
    def query() -> DataFrame:
        return df

    query.__name__ = getattr(like, "__name__", "query")
    query.__qualname__ = getattr(like, "__qualname__", query.__name__)
    query.__doc__ = getattr(like, "__doc__", None)
    return query


def _flow_query(pieces: Pieces, flow: FlowSpec, query: Optional[DataFrame],
                like: Callable[..., Any]) -> QueryFunction:
    """The query function of ``flow``: over the user's query, or reading its dataset
    when the query function runs (as the user's own query functions read)."""
    if flow.reads is None:
        assert query is not None
        return returning(apply(pieces, flow, query), like)
    spark = SparkSession.active()
    name, also = flow.reads, flow.also_reads

    def read_query() -> DataFrame:
        if also is not None:
            assert flow.step is Step.METRICS_FROM_COMPANIONS
            return metrics_from_companions(pieces, spark.read.table(name),
                                           spark.read.table(also))
        return apply(pieces, flow, spark.read.table(name))

    return read_query


def _sql_flow(pieces: Pieces, flow: FlowSpec) -> None:
    """Register ``flow`` (a batch log's, which reads its input view as a stream) as SQL:
    its Spark settings ``SET`` first, in a text of its own (a ``SET`` reaches the end of
    its own text only), then ``CREATE FLOW ... AS INSERT INTO ... BY NAME``."""
    settings = [f"SET {key} = {value};\n" for key, value in flow.spark_conf.items()]
    select = pieces.sql_flows[flow.name]
    text = "".join([*settings,
                    f"CREATE FLOW {_sql_name(flow.name)}\n"
                    f"AS INSERT INTO {_sql_name(flow.target)} BY NAME\n"
                    f"{select};\n"])
    get_active_graph_element_registry().register_sql(
        text, Path(f"{flow.name} (sdp-expect batch log)"))


def _dataset(pieces: Pieces, spec: DatasetSpec, query: Optional[DataFrame],
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
                _flow_query(pieces, flow, query, func))
        return
    if flow is None:
        formatted: Dict[str, Any] = {} if spec.format is None else {"format": spec.format}
        _sdp.create_streaming_table(spec.name, comment=spec.comment, **formatted)
        return
    DATASET_DECORATORS[spec.kind](name=spec.name, comment=spec.comment,
                               spark_conf=dict(flow.spark_conf))(
        _flow_query(pieces, flow, query, _STEPS.get(flow.step, metrics_from_companions)))


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
    sql_flows = [flow for flow in plan.flows if flow.step in _BATCH_LOG_STEPS]
    pieces = Pieces.of(RuleLogic(plan.rules, null_passes=plan.options.null_passes,
                      update=plan.update),
                       [flow.step for flow in _flows(plan)], plan.checks, sql_flows,
                       streaming=streaming)
    options = dict(options or {})
    options.pop("spark_conf", None)
    for spec in plan.datasets:
        _dataset(pieces, spec, query, func, options)
    for flow in plan.flows:
        if flow in sql_flows:
            _sql_flow(pieces, flow)
            continue
        _sdp.append_flow(target=flow.target, name=flow.name, spark_conf=dict(flow.spark_conf))(
            _flow_query(pieces, flow, query,
                        func if flow.step in (Step.QUERY, Step.TARGET) else _STEPS[flow.step]))
    for check in plan.checks:  # the query alone
        if check.query_view is None:
            assert query is not None
            _sdp.temporary_view(name=check.view)(returning(query, _query_alone))
    _rule_views(pieces, [check for check in plan.checks if check.query_view is not None])
    _record(plan)


def _rule_views(pieces: Pieces, checks: list[RuleCheck]) -> None:
    """Register the rules' check views of one flow (each reads the view of the query
    alone, as a stream when the query reads one: :meth:`Pieces.of`) as one SQL text:
    one request to the server for all of them, where a view registered from Python is
    two (its output and its flow, about 6 ms each in the client): 10 rules took 0.2 s
    of a dataset's registration so (docs/performance.md). A constraint Spark cannot
    analyse fails its own view when the graph is analysed, which names the rule
    (SDPX-DEF-111); one its parser refuses has already stopped the registration of the
    dataset's own flow, before this text."""
    if not checks:
        return
    text = "".join([*(f"SET {key} = {value};\n" for key, value in CHECK_VIEW_CONF.items()),
                    *(f"CREATE TEMPORARY VIEW {_sql_name(check.view)}\n"
                      f"AS {pieces.check_selects[check.view]};\n" for check in checks)])
    get_active_graph_element_registry().register_sql(
        text, Path(f"{checks[0].flow} (sdp-expect check views)"))


def _query_alone() -> None:
    """The check view of a flow's query alone (a name for its query function)."""


def _flows(plan: Plan) -> list[FlowSpec]:
    """Every flow of ``plan``: its datasets' own, then the flows into them."""
    return [spec.query for spec in plan.datasets if spec.query is not None] + list(plan.flows)


def _record(plan: Plan) -> None:
    """Note in the run's definitions file (when there is one) what ``plan`` registered:
    each check view, each dataset's kind and owner."""
    for check in plan.checks:
        record_check(check)
    for spec in plan.datasets:
        record_dataset(spec.name, type=spec.kind.value, owner=plan.rules.dataset)


CHECK_VIEW_CONF = {"pipelines.incompatibleViewCheck.enabled": "false"}
"""A rule's check view reads the query's view as the query reads (a stream, or not);
should the two ever disagree, SDP's check of that (``INCOMPATIBLE_..._VIEW_READ``) is
off for these views alone, which are analysed and never run."""
