"""The one planner of the companion graph: what a dataset with expectations becomes.

Every front end hands this module the expectations of one dataset (the one
model, :class:`~sdp_expect.core.model.DatasetRules`) and where they were declared;
it answers with a :class:`Plan`: every dataset to register (the dataset
itself and its companions ``<dataset>_quarantine``, ``<dataset>_dq_batches``,
``<dataset>_dq_metrics``), every flow (``<flow>_to_quarantine``,
``<flow>_to_dq_batches``), what each flow reads (the user's query or another
dataset) and computes (a :class:`Step`), its Spark conf (no retries with fail
rules, one shuffle partition for a batch log), and the flow's unread check
views. The definition-time checks of the graph (SDPX-DEF-105, -106, -108, -112,
-113, -114, -117) are raised here, for every front end, at the location the
front end passes in, with the catalogue's fix (a front end may word it for its
own language: :mod:`sdp_expect.dbsql.fixes`).

A front end describes each dataset or flow as one value (:data:`Definition`)
and asks :func:`plan` for it, with or without expectations: a definition
without them is planned too (the graph's checks need every flow), as one
dataset or flow computing :attr:`Step.QUERY`, the query as written.

A plan is data: names, kinds, steps, settings, the rules and the options in
effect. Two emitters turn it into a graph and decide nothing of their own, each
with its own mapping from a :class:`Step` to the compiler
(:class:`~sdp_expect.core.compiler.RuleLogic`, made from the plan's rules and
options): :mod:`sdp_expect.emit.python` into ``pyspark.pipelines`` calls over
DataFrames (the Python API, :mod:`sdp_expect.pipelines`), and
:mod:`sdp_expect.emit.sql` into open-source SDP SQL text (``sql.include``,
``sdp-expect translate``). This module imports no pyspark.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.names import (
    SESSION_CATALOG,
    batch_input_view_name,
    batch_log_comment,
    batch_log_flow_name,
    batch_log_name,
    catalog_of,
    check_view_name,
    metrics_comment,
    metrics_name,
    quarantine_comment,
    quarantine_flow_name,
    quarantine_name,
)
from sdp_expect.base.options import PipelineOptions
from sdp_expect.base.spark_version import WATERMARK_IN_HIVE_SESSION, spark_has
from sdp_expect.base.table_formats import (
    FILE_FORMATS,
    FILE_TABLES_HAVE_NO_MERGE,
    FORMATS,
    KEY_TABLE_FORMAT,
)
from sdp_expect.base.update import UpdateStamp
from sdp_expect.core.model import (
    Action,
    Aggregate,
    DatasetKind,
    DatasetRules,
    Expectation,
    UniqueKey,
)

__all__ = [
    "NO_RETRY_CONF",
    "BATCH_LOG_CONF",
    "RETRY_KEY",
    "SHUFFLE_PARTITIONS_KEY",
    "CompanionPlan",
    "DatasetDefinition",
    "DatasetSpec",
    "Definition",
    "FlowDefinition",
    "FlowSpec",
    "Plan",
    "PlanState",
    "Role",
    "RuleCheck",
    "Step",
    "TableDefinition",
    "TablePlan",
    "auto_cdc_target_error",
    "flow_conf",
    "plan",
    "plan_append_flow",
    "plan_auto_cdc_flow",
    "plan_companions",
    "plan_dataset",
    "plan_declared_table",
    "plan_unchecked_dataset",
    "rule_checks",
]

RETRY_KEY = "spark.sql.pipelines.maxFlowRetryAttempts"
"""The Spark setting of how often SDP retries a failed flow."""

NO_RETRY_CONF = {RETRY_KEY: "0"}
"""Per-flow setting for flows with fail rules: a failed expectation is not retried."""

SHUFFLE_PARTITIONS_KEY = "spark.sql.shuffle.partitions"
"""The Spark setting of how many partitions a shuffle (and a streaming aggregation's
state) has."""


BATCH_LOG_CONF = {SHUFFLE_PARTITIONS_KEY: "1"}
"""Per-flow setting of a batch log's flow: its aggregation has one group per micro-batch,
so one partition of state; with Spark's default (200) every micro-batch would run 200
tasks of an empty state store (measured: 10x the update time). Spark keeps the number a
streaming query started with in its checkpoint."""



# --------------------------------------------------------------------------- checks and state


def _error(code: str, dataset: str, location: Optional[Location],
           detail: Optional[str] = None) -> SdpExpectError:
    """A definition error of the graph, with the catalogue's fix."""
    return SdpExpectError(code, detail, dataset=dataset, location=location)


def _check_tolerances(rules: DatasetRules, kind: DatasetKind,
                      location: Optional[Location]) -> None:
    """SDPX-DEF-113: a fail or drop tolerance on a streaming table, or any tolerance on a
    temporary view (docs/thresholds.md#the-records-checked). A streaming table commits
    each micro-batch on its own, and no streaming query logic knows a micro-batch's
    totals before it writes its records, so only a warn tolerance (reported, judged on
    the metrics row's counts) can be kept; a temporary view is inlined into every
    reader."""
    if kind is DatasetKind.MATERIALIZED_VIEW:
        return
    for expectation in rules.expectations:
        if expectation.max_failed is None:
            continue
        if kind is DatasetKind.STREAMING_TABLE and expectation.action is Action.WARN:
            continue
        what = ("tolerances on a streaming table are reported (warn rules), not enforced"
                if kind is DatasetKind.STREAMING_TABLE
                else "a temporary view has no metrics to judge a tolerance on")
        raise SdpExpectError(
            "SDPX-DEF-113",
            f"max_failed={expectation.max_failed.text!r} on a {expectation.action.value} "
            f"rule of a {kind.value}: {what}",
            dataset=rules.dataset, expectation=expectation.name,
            location=expectation.place or location)


def _check_dataset_checks(rules: DatasetRules, kind: DatasetKind,
                          location: Optional[Location]) -> None:
    """SDPX-DEF-114: a unique key on a streaming table, or any key rule on a temporary
    view (docs/dataset-rules.md#streaming-tables-and-temporary-views). A unique key needs
    a window over all the records, which Spark refuses on a stream; a temporary view is
    inlined into its readers, which may read it as a stream. A reference on a streaming
    table is a stream-static left join, which Spark runs."""
    if kind is DatasetKind.MATERIALIZED_VIEW:
        return
    for expectation in rules.expectations:
        if expectation.check is not None and (
                kind is DatasetKind.TEMPORARY_VIEW or isinstance(expectation.check, UniqueKey)):
            raise SdpExpectError(
                "SDPX-DEF-114",
                f"the key rule {expectation.constraint} on a {kind.value}: "
                + ("unique keys are checked on materialized views only"
                   if kind is DatasetKind.STREAMING_TABLE
                   else "key rules are checked on materialized views and (references) "
                   "streaming tables only"),
                dataset=rules.dataset, expectation=expectation.name,
                location=expectation.place or location)


def _check_whole_checks(rules: DatasetRules, kind: DatasetKind,
                        location: Optional[Location]) -> None:
    """SDPX-DEF-117: a rule on the dataset as a whole where it cannot be judged
    (docs/row-count-rules.md#streaming-tables): any on a temporary view (no metrics, inlined
    into its readers); on a streaming table a fail row count (each micro-batch commits
    before the whole is known) or any aggregate (no sum of per-micro-batch counts gives
    an arbitrary aggregate of all the records). A warn row count on a streaming table is
    judged on the cumulative metrics row."""
    if kind is DatasetKind.MATERIALIZED_VIEW:
        return
    for expectation in rules.expectations:
        whole = expectation.whole
        if whole is None:
            continue
        if (kind is DatasetKind.STREAMING_TABLE and expectation.action is Action.WARN
                and not isinstance(whole, Aggregate)):
            continue
        if kind is DatasetKind.TEMPORARY_VIEW:
            why = "a temporary view has no metrics and is inlined into each reader"
        elif isinstance(whole, Aggregate):
            why = ("an aggregate of all the records of a streaming table is not known from "
                   "its micro-batches")
        else:
            why = ("a streaming table writes each micro-batch before its whole count is "
                   "known; a warn row-count rule is judged on the records since the last "
                   "full refresh")
        raise SdpExpectError(
            "SDPX-DEF-117",
            f"the {expectation.action.value} rule {expectation.constraint} on a "
            f"{kind.value}: {why}",
            dataset=rules.dataset, expectation=expectation.name,
            location=expectation.place or location)


def _note_flow(state: PlanState, target: str, flow: str, location: Optional[Location]
               ) -> None:
    """Remember that ``flow`` writes ``target``, and check the table can take it."""
    flows = state.flows_into.setdefault(target, [])
    if flow not in flows:
        flows.append(flow)
    _check_file_table(state, target, location)


def _stored_format(format: Optional[str], options: PipelineOptions, dataset: str,
                   location: Optional[Location]) -> Optional[str]:
    """The format a dataset is declared with to SDP: none when the one given is the
    session's default and not one of Spark's file formats.

    SDP stores a format given to it as the table's ``provider`` property and sets every
    property again on each update (``alterTable``); Delta Lake refuses to have
    ``provider`` set (``DELTA_CANNOT_CHANGE_PROVIDER``), so a materialized view or
    streaming table declared ``format="delta"`` fails its second update, after the
    view was emptied. Declared without one, the table takes the session's default,
    the same format, and updates (docs/formats.md).

    :raises SdpExpectError: SDPX-DEF-120 for a versioned format sdp-expect knows (Delta
        Lake, Iceberg) that is not the session's default, for a table of the session's
        catalog: its second update would fail as above (a table in another catalog is
        that catalog's business).
    """
    if format is None:
        return None
    chosen = format.strip().lower()
    default = options.default_format.strip().lower()
    if chosen == default and chosen not in FILE_FORMATS:
        return None
    known = FORMATS.get(chosen)
    if known is not None and chosen not in FILE_FORMATS and catalog_of(dataset) == SESSION_CATALOG:
        raise _error("SDPX-DEF-120", dataset, location, (
            f"{dataset!r} is declared with format {format!r}, and the pipeline stores its "
            f"tables as {default} (spark.sql.sources.default): SDP would write the first "
            f"update and fail every later one (DELTA_CANNOT_CHANGE_PROVIDER for Delta), or "
            f"find no {known.title} at all. Set {KEY_TABLE_FORMAT}: {known.name} in the "
            "spec's configuration and run with sdp-expect run, which starts Spark with "
            f"{known.title}'s jars and settings; the format= can stay (docs/formats.md)"))
    return format


def _check_auto_cdc_target(state: PlanState, table: str) -> None:
    """SDPX-DEF-119: an Auto CDC flow into a streaming table whose format SDP refuses as
    its target (:attr:`~sdp_expect.base.table_formats.TableFormat.auto_cdc_refused`).
    Checked when both the flow and the table's declaration are known, in either order;
    a format sdp-expect does not know, and a table in a catalog other than the session's
    (whose tables the catalog's format decides), are left to Spark."""
    if table not in state.auto_cdc_targets or table not in state.streaming_tables:
        return
    if catalog_of(table) != SESSION_CATALOG:
        return
    given = state.streaming_tables[table]
    stored = (given or state.options.default_format).strip().lower()
    known = FORMATS.get(stored)
    why = (known.auto_cdc_refused if known is not None
           else FILE_TABLES_HAVE_NO_MERGE if stored in FILE_FORMATS else None)
    if why is None:
        return
    source = "its format" if given else "the session's default format (spark.sql.sources.default)"
    raise _error("SDPX-DEF-119", table, state.auto_cdc_targets[table], (
        f"the Auto CDC flow into {table!r} writes a table stored as {stored} ({source}): "
        f"{why}"))


def _check_file_table(state: PlanState, table: str, location: Optional[Location]) -> None:
    """SDPX-DEF-112: a streaming table in a file format with two or more flows
    (docs/semantics.md#several-flows).

    Each flow is its own streaming query and writes its own batch numbers into the
    table's one commit log: the second flow's commits are taken for ones already made
    and skipped, so a reader sees one flow's records and the update still succeeds.
    That is a silently wrong table, hence an error, not a warning; the setting
    ``sdp_expect.multiple_flows_on_file_formats = allow`` is for a user whose format
    name is one of Spark's file sources but whose storage is safe.
    """
    flows = state.flows_into.get(table, [])
    if (len(flows) < 2 or table not in state.streaming_tables
            or state.options.multiple_flows_on_file_formats):
        return
    given = state.streaming_tables[table]
    table_format = (given or state.options.default_format).strip().lower()
    if table_format not in FILE_FORMATS:
        return
    source = "its format" if given else "the session's default format (spark.sql.sources.default)"
    raise _error("SDPX-DEF-112", table, location, (
        f"the streaming table {table!r} is stored as {table_format} ({source}) and written by "
        f"{len(flows)} flows ({', '.join(repr(f) for f in flows)}): Spark's file sink keeps one "
        "commit log per table, so the flows overwrite each other's commits and a reader sees "
        "one flow's records"))


@dataclass
class PlanState:
    """What the planner remembers about one pipeline graph while it is defined.

    The front ends share it (a ``CREATE FLOW`` in SQL gets the rules of a table
    declared in Python, and the other way round); the Python API keeps it per
    graph (:func:`sdp_expect.spark.registration.graph_state`), ``sdp-expect translate``
    per run.

    :param options: The pipeline-wide settings (read once per graph).
    :param table_rules: Streaming tables whose rules apply to every flow into
        them, by name.
    :param flows_into: The flows that write each dataset so far, by the dataset's
        name, in the order they were defined.
    :param streaming_tables: The streaming tables declared so far, with the
        format given (None: the session's default).
    :param sinks: Names declared with ``create_sink``.
    :param auto_cdc_targets: The targets of Auto CDC flows so far, with where the first
        flow into each is defined.
    :param batch_per_micro_batch: True when a batch log has one row per micro-batch (a
        watermarked aggregation); False on Spark 4.1, whose session with the Hive
        catalog cannot resolve SQL's ``WATERMARK`` (SPARK-56453): one row per record
        there. Default: from the installed Spark.
    :param update: The update the graph is defined for, which its quarantines' records
        name; None where SQL is written for later updates (``sdp-expect translate``).
    """

    options: PipelineOptions
    table_rules: dict[str, TablePlan] = field(default_factory=dict)
    flows_into: dict[str, list[str]] = field(default_factory=dict)
    streaming_tables: dict[str, Optional[str]] = field(default_factory=dict)
    sinks: set[str] = field(default_factory=set)
    auto_cdc_targets: dict[str, Optional[Location]] = field(default_factory=dict)
    batch_per_micro_batch: bool = field(
        default_factory=lambda: spark_has(WATERMARK_IN_HIVE_SESSION))
    update: Optional[UpdateStamp] = None

    @property
    def flow_targets(self) -> set[str]:
        """The datasets some flow already writes into."""
        return set(self.flows_into)


# --------------------------------------------------------------------------- the plan's values


class Role(str, enum.Enum):
    """What a dataset or flow is to the dataset with expectations."""

    TARGET = "target"
    """The dataset itself (the kept records), or a flow into it."""
    QUARANTINE = "quarantine"
    BATCH_LOG = "batch log"
    METRICS = "metrics"


class Step(str, enum.Enum):
    """What a flow computes from what it reads: each emitter maps a step to the piece of
    :class:`~sdp_expect.core.compiler.RuleLogic` that gives it."""

    QUERY = "the query as written"
    """A dataset or flow without expectations: the query, unchanged."""
    TARGET = "target"
    QUARANTINE = "quarantine"
    BATCH_INPUT = "batch log input"
    BATCH_LOG = "batch log"
    BATCH_LOG_BY_RECORD = "batch log, one row per record"
    METRICS_FROM_QUERY = "metrics from the query"
    METRICS_FROM_BATCH_LOG = "metrics from the batch log"
    METRICS_FROM_COMPANIONS = "metrics from the kept and the dropped records"


@dataclass(frozen=True)
class CompanionPlan:
    """The companion datasets of one dataset (names, or None when absent).

    :param quarantine: The quarantine dataset (same kind as the dataset).
    :param batch_log: Streaming tables only: the internal streaming table that
        keeps one row of counts per micro-batch of each flow, so that the metrics
        can be cumulative at a cost that grows with the micro-batches, not the records.
    :param metrics: The ``<dataset>_dq_metrics`` materialized view.
    """

    quarantine: Optional[str] = None
    batch_log: Optional[str] = None
    metrics: Optional[str] = None

    def names(self) -> tuple[str, ...]:
        """The names of the companion datasets there are."""
        return tuple(name for name in (self.quarantine, self.batch_log, self.metrics) if name)


@dataclass(frozen=True)
class FlowSpec:
    """One flow: its name, its target, what it reads and computes, its Spark conf.

    :param name: The flow's name (a dataset's own flow has the dataset's name).
    :param target: The dataset it writes.
    :param step: What it computes from what it reads.
    :param reads: None: the flow's query (the user's); else the dataset it reads.
    :param spark_conf: The flow's Spark conf.
    :param also_reads: A second dataset it reads (the quarantine, for metrics counted
        from what a materialized view wrote).
    """

    name: str
    target: str
    step: Step
    reads: Optional[str] = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    also_reads: Optional[str] = None


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset to register.

    :param name: Its name.
    :param kind: Its kind.
    :param role: What it is to the dataset with expectations.
    :param comment: Its comment; None for the dataset itself (the user's clauses
        pass on as written).
    :param format: Its table format (a streaming table's companions take the table's).
    :param query: The flow that defines it (a materialized view's, a temporary view's,
        a streaming table's own); None: a streaming table that flows append to.
    """

    name: str
    kind: DatasetKind
    role: Role
    comment: Optional[str] = None
    format: Optional[str] = None
    query: Optional[FlowSpec] = None


@dataclass(frozen=True)
class RuleCheck:
    """One unread temporary view that checks a flow's query or one of its rules.

    :param view: The view's name (:func:`~sdp_expect.base.names.check_view_name`).
    :param expectation: The rule it checks; None: the query alone.
    :param dataset: The dataset with expectations.
    :param flow: The flow whose query the view reads.
    :param derived: The query's view only: the flows a broken constraint also fails
        (the dataset's, its companions').
    :param query_view: A rule's view only: the view of the query alone.
    """

    view: str
    expectation: Optional[Expectation]
    dataset: str
    flow: str
    derived: tuple[str, ...] = ()
    query_view: Optional[str] = None


@dataclass(frozen=True)
class TablePlan:
    """A streaming table with expectations, as every flow into it needs it.

    :param rules: Its expectations and settings.
    :param companions: Its companion datasets.
    :param options: The pipeline-wide settings of the table's declaration.
    """

    rules: DatasetRules
    companions: CompanionPlan
    options: PipelineOptions


@dataclass(frozen=True)
class Plan:
    """Everything to register for one definition with expectations, in order.

    :param rules: The dataset's expectations and settings.
    :param kind: The dataset's kind.
    :param companions: Its companion datasets.
    :param datasets: The datasets to register, the dataset itself first (absent
        for a flow into a table declared before).
    :param flows: The flows that append to datasets declared before them.
    :param checks: The flow's unread check views.
    :param options: The pipeline-wide settings the rules are compiled with.
    :param update: The update the graph is defined for (:attr:`PlanState.update`).
    """

    rules: DatasetRules
    kind: DatasetKind
    companions: CompanionPlan
    datasets: tuple[DatasetSpec, ...] = ()
    flows: tuple[FlowSpec, ...] = ()
    checks: tuple[RuleCheck, ...] = ()
    options: PipelineOptions = field(default_factory=PipelineOptions)
    update: Optional[UpdateStamp] = None

    @property
    def no_retry(self) -> bool:
        """True when some flow of the plan is not retried (fail rules)."""
        flows = [*self.flows, *(d.query for d in self.datasets if d.query is not None)]
        return any(flow.spark_conf.get(RETRY_KEY) == NO_RETRY_CONF[RETRY_KEY]
                   for flow in flows)


# --------------------------------------------------------------------------- decisions


def plan_companions(rules: DatasetRules, options: PipelineOptions, kind: DatasetKind,
                    location: Optional[Location] = None) -> CompanionPlan:
    """Decide which companion datasets a dataset gets (docs/semantics.md#quarantine, #metrics).

    :param rules: The dataset's expectations and per-dataset settings.
    :param options: The pipeline-wide settings.
    :param kind: The dataset's kind.
    :param location: Where the dataset is defined.
    :raises SdpExpectError: SDPX-DEF-106 for quarantine on a temporary view.
    """
    if kind is DatasetKind.TEMPORARY_VIEW:
        if rules.quarantine is not None:
            raise _error("SDPX-DEF-106", rules.dataset, location)
        return CompanionPlan()
    if rules.quarantine is not None:
        quarantine: Optional[str] = rules.quarantine.resolve(rules.dataset)
    elif options.quarantine and rules.of(Action.DROP):
        quarantine = quarantine_name(rules.dataset)
    else:
        quarantine = None
    wants_metrics = not rules.empty and (
        rules.metrics if rules.metrics is not None else options.metrics
    )
    metrics = metrics_name(rules.dataset) if wants_metrics else None
    batch_log = (
        batch_log_name(rules.dataset)
        if metrics is not None and kind is DatasetKind.STREAMING_TABLE
        else None
    )
    return CompanionPlan(quarantine=quarantine, batch_log=batch_log, metrics=metrics)


def flow_conf(rules: DatasetRules, user_conf: Optional[Mapping[str, str]] = None
              ) -> dict[str, str]:
    """A flow's Spark conf: the user's, plus no retries when the rules can fail the flow.

    A value the user set explicitly wins.
    """
    conf = dict(NO_RETRY_CONF) if rules.can_fail else {}
    conf.update(user_conf or {})
    return conf


def rule_checks(rules: DatasetRules, companions: CompanionPlan, flow: str) -> list[RuleCheck]:
    """The check views of one flow of a dataset with expectations: the query alone, then
    one per rule, for the Python API and the SQL front end alike.

    SDP analyses every flow in ``dry-run`` and ``run`` but executes no view that nothing
    reads: a constraint Spark cannot resolve fails exactly its own view's flow, which
    the emitters record in the definitions file with the dataset, the expectation and
    its ``file:line`` (SDPX-DEF-111 in ``sdp-expect run``). Each rule's view reads the
    view of the query alone (``query_view``), so that the query is analysed once per flow
    and not once per rule (a read of a view in the graph takes its analysed plan). The
    view of the query alone tells a broken query (it fails, and the rules' views with it,
    upstream) from a broken constraint; it lists the flows a broken constraint also fails
    (the dataset's, its companions').
    """
    dataset = rules.dataset
    derived = (flow, *companions.names(), quarantine_flow_name(flow), batch_log_flow_name(flow),
               batch_input_view_name(flow))
    base = check_view_name(flow, 0)
    checks = [RuleCheck(base, None, dataset, flow, derived=derived)]
    for number, expectation in enumerate(rules.expectations, start=1):
        checks.append(RuleCheck(check_view_name(flow, number), expectation, dataset, flow,
                                query_view=base))
    return checks


def _table_companions(rules: DatasetRules, companions: CompanionPlan,
                      table_format: Optional[str]) -> list[DatasetSpec]:
    """The companion datasets of a streaming table, which each of its flows appends to.

    The quarantine and the batch log take the table's format: several flows
    append to them exactly as to the table, so they need the same support for
    concurrent appends. The metrics view counts the batch log.
    """
    dataset = rules.dataset
    out = []
    if companions.quarantine:
        out.append(DatasetSpec(companions.quarantine, DatasetKind.STREAMING_TABLE,
                               Role.QUARANTINE, quarantine_comment(dataset), table_format))
    if companions.batch_log:
        out.append(DatasetSpec(companions.batch_log, DatasetKind.STREAMING_TABLE,
                               Role.BATCH_LOG, batch_log_comment(dataset), table_format))
    if companions.metrics and companions.batch_log:
        out.append(DatasetSpec(
            companions.metrics, DatasetKind.MATERIALIZED_VIEW, Role.METRICS,
            metrics_comment(dataset, streaming=True),
            query=FlowSpec(companions.metrics, companions.metrics, Step.METRICS_FROM_BATCH_LOG,
                           reads=companions.batch_log)))
    return out


def _companion_flows(rules: DatasetRules, companions: CompanionPlan, flow: str,
                     per_micro_batch: bool) -> tuple[list[DatasetSpec], list[FlowSpec]]:
    """The quarantine and batch-log flows of one flow ``flow`` into a streaming table, and
    the temporary view of the batch log's per-record inputs, which its flow reads.

    The batch log's flow aggregates a stream under a watermark (``per_micro_batch``,
    else it writes a row per record: :attr:`PlanState.batch_per_micro_batch`), which the
    Python API can only write as SQL (``DataFrame.withWatermark`` has Spark Connect
    analyse its input while planning it, docs/early-binding.md): so both front ends
    read the flow's query through the view and count it in SQL.
    """
    conf = flow_conf(rules)
    views: list[DatasetSpec] = []
    out = []
    if companions.quarantine:
        out.append(FlowSpec(quarantine_flow_name(flow), companions.quarantine, Step.QUARANTINE,
                            spark_conf=conf))
    if companions.batch_log:
        # The view's settings are its reader's: SDP merges a view's settings into the
        # flows that read it and refuses two values of one key (DUPLICATE_FLOW_SQL_CONF).
        view = batch_input_view_name(flow)
        log_conf = {**conf, **BATCH_LOG_CONF} if per_micro_batch else conf
        step = Step.BATCH_LOG if per_micro_batch else Step.BATCH_LOG_BY_RECORD
        views.append(DatasetSpec(view, DatasetKind.TEMPORARY_VIEW, Role.BATCH_LOG,
                                 query=FlowSpec(view, view, Step.BATCH_INPUT,
                                                spark_conf=log_conf)))
        out.append(FlowSpec(batch_log_flow_name(flow), companions.batch_log, step,
                            reads=view, spark_conf=log_conf))
    return views, out


def _check_rules(rules: DatasetRules, kind: DatasetKind, location: Optional[Location]) -> None:
    """The checks of a dataset's rules against its kind (SDPX-DEF-113, -114, -117)."""
    _check_tolerances(rules, kind, location)
    _check_dataset_checks(rules, kind, location)
    _check_whole_checks(rules, kind, location)


def plan_dataset(rules: DatasetRules, kind: DatasetKind, options: PipelineOptions, *,
                 state: PlanState, location: Optional[Location] = None,
                 spark_conf: Optional[Mapping[str, str]] = None,
                 format: Optional[str] = None) -> Plan:
    """A dataset with a query and expectations: the dataset, its companions, its check views.

    A streaming table is remembered in ``state``: flows into it later get its rules.

    :param rules: The dataset's expectations and settings.
    :param kind: The dataset's kind.
    :param options: The pipeline-wide settings in effect.
    :param state: The graph's planner state.
    :param location: Where the dataset is defined.
    :param spark_conf: The user's Spark conf of the dataset's flow.
    :param format: The dataset's table format.
    :raises SdpExpectError: SDPX-DEF-106 for quarantine on a temporary view; SDPX-DEF-113
        for a tolerance on a streaming table or a temporary view; SDPX-DEF-117 for a rule
        on the dataset as a whole where it cannot be judged.
    """
    name = rules.dataset
    format = _stored_format(format, options, name, location)
    _check_rules(rules, kind, location)
    companions = plan_companions(rules, options, kind, location)
    datasets = [DatasetSpec(name, kind, Role.TARGET, format=format, query=FlowSpec(
        name, name, Step.TARGET, spark_conf=flow_conf(rules, spark_conf)))]
    flows: list[FlowSpec] = []
    if kind is DatasetKind.MATERIALIZED_VIEW:
        conf = flow_conf(rules)
        if companions.quarantine:
            datasets.append(DatasetSpec(
                companions.quarantine, kind, Role.QUARANTINE, quarantine_comment(name),
                query=FlowSpec(companions.quarantine, companions.quarantine, Step.QUARANTINE,
                               spark_conf=conf)))
        if (companions.metrics and companions.quarantine and options.metrics_from_output
                and not _key_rules_on_kept(rules)):
            # Counted from what the view and its quarantine wrote, not from a third pass
            # over the query: the counts agree with both tables even when the query is
            # not deterministic, and an expensive query runs twice instead of three
            # times (docs/performance.md#metrics-from-the-output).
            datasets.append(DatasetSpec(
                companions.metrics, kind, Role.METRICS, metrics_comment(name, streaming=False),
                query=FlowSpec(companions.metrics, companions.metrics,
                               Step.METRICS_FROM_COMPANIONS, reads=name,
                               also_reads=companions.quarantine)))
        elif companions.metrics:
            datasets.append(DatasetSpec(
                companions.metrics, kind, Role.METRICS, metrics_comment(name, streaming=False),
                query=FlowSpec(companions.metrics, companions.metrics, Step.METRICS_FROM_QUERY,
                               spark_conf=conf)))
    elif kind is DatasetKind.STREAMING_TABLE:
        datasets.extend(_table_companions(rules, companions, format))
        views, companion_flows = _companion_flows(rules, companions, name,
                                                   state.batch_per_micro_batch)
        datasets.extend(views)
        flows.extend(companion_flows)
        state.table_rules[name] = TablePlan(rules, companions, options)
        state.streaming_tables[name] = format
        _check_auto_cdc_target(state, name)
    _note_flow(state, name, name, location)
    return Plan(rules, kind, companions, tuple(datasets), tuple(flows),
                tuple(rule_checks(rules, companions, name)), options, state.update)


def _key_rules_on_kept(rules: DatasetRules) -> bool:
    """True when metrics counted from what a materialized view wrote would evaluate a key
    rule on the kept records (a warn rule, a fail rule with a tolerance): its verdict
    there is not the one on the query's records (a duplicate may have been dropped, and
    the kept records lack the prepared relation's columns), so the metrics count the
    query (docs/dataset-rules.md#cost). So does a dataset with a rule on the dataset as a
    whole: an aggregate of the query is not known from what was written
    (docs/aggregate-rules.md#cost)."""
    return rules.has_whole_checks or any(
        e.check is not None and e.action is not Action.DROP and not e.stops_at_first
        for e in rules.expectations)


def plan_unchecked_dataset(name: str, kind: DatasetKind, *, state: PlanState,
                           location: Optional[Location] = None,
                           spark_conf: Optional[Mapping[str, str]] = None,
                           format: Optional[str] = None) -> Plan:
    """A dataset with a query and without expectations: the dataset alone, its query as
    written; its flow writes ``name`` (a table declared with expectations afterwards is
    SDPX-DEF-105; a second flow into a streaming table in a file format is SDPX-DEF-112).

    :param name: The dataset.
    :param kind: Its kind.
    :param state: The graph's planner state.
    :param location: Where the dataset is defined.
    :param spark_conf: The user's Spark conf of its flow.
    :param format: Its table format.
    """
    format = _stored_format(format, state.options, name, location)
    if kind is DatasetKind.STREAMING_TABLE:
        state.streaming_tables[name] = format
        _check_auto_cdc_target(state, name)
    _note_flow(state, name, name, location)
    query = FlowSpec(name, name, Step.QUERY, spark_conf=dict(spark_conf or {}))
    return Plan(DatasetRules(name), kind, CompanionPlan(),
                (DatasetSpec(name, kind, Role.TARGET, format=format, query=query),),
                options=state.options)


def plan_declared_table(rules: DatasetRules, options: PipelineOptions, *, state: PlanState,
                        location: Optional[Location] = None, format: Optional[str] = None,
                        ) -> Plan:
    """A streaming table without a query, which flows append to, with its companions.

    :param rules: The table's expectations and settings.
    :param options: The pipeline-wide settings in effect.
    :param state: The graph's planner state.
    :param location: Where the table is declared.
    :param format: The table's format.
    :returns: The table alone when it carries no expectations and no quarantine.
    :raises SdpExpectError: SDPX-DEF-105 when a flow already writes into the table;
        SDPX-DEF-112 when two did and the format is a file format.
    """
    name = rules.dataset
    kind = DatasetKind.STREAMING_TABLE
    format = _stored_format(format, options, name, location)
    state.streaming_tables[name] = format
    _check_file_table(state, name, location)
    _check_auto_cdc_target(state, name)
    table = DatasetSpec(name, kind, Role.TARGET, format=format)
    if rules.empty and rules.quarantine is None:
        return Plan(rules, kind, CompanionPlan(), (table,), options=options)
    if name in state.flows_into:
        raise _error("SDPX-DEF-105", name, location)
    _check_rules(rules, kind, location)
    companions = plan_companions(rules, options, kind, location)
    state.table_rules[name] = TablePlan(rules, companions, options)
    return Plan(rules, kind, companions, (table, *_table_companions(rules, companions, format)),
                options=options, update=state.update)


def plan_append_flow(target: str, flow: str, *, state: PlanState,
                     location: Optional[Location] = None,
                     spark_conf: Optional[Mapping[str, str]] = None) -> Plan:
    """A flow into ``target``: with the table's rules and companion flows, when it has some.

    :param target: The dataset the flow writes.
    :param flow: The flow's name.
    :param state: The graph's planner state.
    :param location: Where the flow is defined.
    :param spark_conf: The user's Spark conf of the flow.
    :returns: The flow alone, its query as written, when ``target`` carries no
        expectations.
    :raises SdpExpectError: SDPX-DEF-112 for a second flow into a streaming table in a
        file format.
    """
    _note_flow(state, target, flow, location)
    table = state.table_rules.get(target)
    if table is None:
        return Plan(DatasetRules(target), DatasetKind.STREAMING_TABLE, CompanionPlan(),
                    flows=(FlowSpec(flow, target, Step.QUERY,
                                    spark_conf=dict(spark_conf or {})),),
                    options=state.options)
    views, companion_flows = _companion_flows(table.rules, table.companions, flow,
                                               state.batch_per_micro_batch)
    flows = [FlowSpec(flow, target, Step.TARGET, spark_conf=flow_conf(table.rules, spark_conf)),
             *companion_flows]
    return Plan(table.rules, DatasetKind.STREAMING_TABLE, table.companions, tuple(views),
                tuple(flows), tuple(rule_checks(table.rules, table.companions, flow)),
                table.options, state.update)


def auto_cdc_target_error(dataset: str, location: Optional[Location]) -> SdpExpectError:
    """SDPX-DEF-108: expectations on the target of an Auto CDC flow.

    :param dataset: The target.
    :param location: Where the flow (or the target with its rules) is defined.
    """
    return _error("SDPX-DEF-108", dataset, location)


def plan_auto_cdc_flow(target: str, flow: Optional[str] = None, *, state: PlanState,
                       location: Optional[Location] = None) -> None:
    """An Auto CDC flow into ``target``, which must carry no expectations. It is passed
    on to SDP as written: nothing to plan, but its flow writes ``target``.

    :param target: The dataset the flow writes.
    :param flow: The flow's name (None: the target's, as Spark names it).
    :param state: The graph's planner state.
    :param location: Where the flow is defined.
    :raises SdpExpectError: SDPX-DEF-108 when ``target`` carries expectations;
        SDPX-DEF-112 for a second flow into a streaming table in a file format;
        SDPX-DEF-119 when SDP cannot apply changes to the target's format.
    """
    if target in state.table_rules:
        raise auto_cdc_target_error(target, location)
    state.auto_cdc_targets.setdefault(target, location)
    _note_flow(state, target, flow or target, location)
    _check_auto_cdc_target(state, target)


# --------------------------------------------------------------------------- one entry


@dataclass(frozen=True)
class DatasetDefinition:
    """A dataset with a query (a materialized view, a streaming table, a temporary view),
    as a front end met it.

    :param rules: The dataset's name, expectations and settings.
    :param kind: Its kind.
    :param checked: False when the definition carries no expectation settings at all
        (its query is then written as it is).
    :param location: Where it is defined.
    :param spark_conf: The user's Spark conf of its flow.
    :param format: Its table format.
    :param options: The pipeline-wide settings in effect there (None: the graph's).
    """

    rules: DatasetRules
    kind: DatasetKind
    checked: bool = True
    location: Optional[Location] = None
    spark_conf: Optional[Mapping[str, str]] = None
    format: Optional[str] = None
    options: Optional[PipelineOptions] = None


@dataclass(frozen=True)
class TableDefinition:
    """A streaming table declared without a query, which flows write.

    :param rules: The table's name, expectations and settings.
    :param location: Where it is declared.
    :param format: Its table format.
    :param options: The pipeline-wide settings in effect there (None: the graph's).
    """

    rules: DatasetRules
    location: Optional[Location] = None
    format: Optional[str] = None
    options: Optional[PipelineOptions] = None


@dataclass(frozen=True)
class FlowDefinition:
    """A flow that appends its query's records to ``target``.

    :param target: The dataset it writes.
    :param name: The flow's name.
    :param location: Where it is defined.
    :param spark_conf: The user's Spark conf of the flow.
    """

    target: str
    name: str
    location: Optional[Location] = None
    spark_conf: Optional[Mapping[str, str]] = None


Definition = Union[DatasetDefinition, TableDefinition, FlowDefinition]
"""What a front end hands :func:`plan`: one dataset or flow."""


def plan(definition: Definition, state: PlanState) -> Plan:
    """What one dataset or flow of the graph becomes, with or without expectations: the
    one entry of every front end.

    :param definition: The dataset or flow.
    :param state: The graph's planner state.
    :raises SdpExpectError: The graph's definition-time checks (SDPX-DEF-105, -106, -112,
        -113, -114, -117), at the definition's location.
    """
    if isinstance(definition, FlowDefinition):
        return plan_append_flow(definition.target, definition.name, state=state,
                                location=definition.location,
                                spark_conf=definition.spark_conf)
    options = definition.options or state.options
    if isinstance(definition, TableDefinition):
        return plan_declared_table(definition.rules, options, state=state,
                                   location=definition.location, format=definition.format)
    if not definition.checked:
        return plan_unchecked_dataset(definition.rules.dataset, definition.kind, state=state,
                                      location=definition.location,
                                      spark_conf=definition.spark_conf,
                                      format=definition.format)
    return plan_dataset(definition.rules, definition.kind, options, state=state,
                        location=definition.location, spark_conf=definition.spark_conf,
                        format=definition.format)
