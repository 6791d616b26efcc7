"""Registering datasets and flows with the active SDP graph.

This module knows the machinery of ``pyspark.pipelines`` that the public
decorators need and nothing about rules:

* :func:`located` makes the installed ``pyspark.pipelines`` decorators
  record the user's file and line (not ours) as the source location;
* :func:`evaluate_query` calls a user's query function once, the way SDP
  does (inside the flow's analysis context, with analysis blocked where the
  installed Spark blocks it);
* :func:`graph_state` keeps per-graph facts (which streaming tables carry
  expectations, which names are sinks, which tables flows already write);
* :func:`is_streaming` tells a streaming query from a batch one by reading
  the unresolved plan, without asking Spark to analyse it;
* :func:`check_reads` and :func:`note_datasets` stop a query that open-source
  SDP would bind to the previous update's table (SDPX-DEF-110, see
  :mod:`sdp_expect.spark.early_binding`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, TypeVar

import pyspark
from pyspark.pipelines.graph_element_registry import (
    GraphElementRegistry,
    get_active_graph_element_registry,
    graph_element_registration_context,
)
from pyspark.pipelines.source_code_location import SourceCodeLocation
from pyspark.sql import DataFrame, SparkSession

import sdp_expect
from sdp_expect.base.definitions import record_errors_on_exit, record_route
from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.names import RESERVED_PREFIX
from sdp_expect.base.options import read_options
from sdp_expect.base.project import library_files, spec_in
from sdp_expect.base.update import UpdateStamp
from sdp_expect.core.planner import PlanState
from sdp_expect.spark.early_binding import (
    EarlyRead,
    describe,
    early_reads,
    table_name,
)
from sdp_expect.spark.routing import Router, RouteView, is_route_name, reads_stream

__all__ = [
    "GraphState",
    "check_reads",
    "evaluate_query",
    "graph_state",
    "is_streaming",
    "located",
    "note_datasets",
    "real_registry",
    "registering",
]

T = TypeVar("T")


class _LocatedRegistry(GraphElementRegistry):
    """Forwards to the real registry, stamping every element with one source location."""

    def __init__(self, real: GraphElementRegistry, location: SourceCodeLocation) -> None:
        self.real = real
        self.location = location

    def _stamp(self, element: T) -> T:
        if dataclasses.is_dataclass(element) and hasattr(element, "source_code_location"):
            return dataclasses.replace(  # type: ignore[type-var]
                element, source_code_location=self.location
            )
        return element

    def register_output(self, output: Any) -> None:
        self.real.register_output(self._stamp(output))

    def register_flow(self, flow: Any) -> None:
        self.real.register_flow(self._stamp(flow))

    def register_auto_cdc_flow(self, flow: Any) -> None:  # Spark 4.2+
        register = getattr(self.real, "register_auto_cdc_flow", None)
        if register is None:
            raise AttributeError("this Spark has no Auto CDC flows")
        register(self._stamp(flow))

    def register_sql(self, sql_text: str, file_path: Any) -> None:
        self.real.register_sql(sql_text, file_path)


def real_registry() -> GraphElementRegistry:
    """The active graph's registry, seen through any :func:`located` wrapper."""
    registry = get_active_graph_element_registry()
    while isinstance(registry, _LocatedRegistry):
        registry = registry.real
    return registry


@contextlib.contextmanager
def located(location: SourceCodeLocation) -> Iterator[None]:
    """Within this block, elements registered by ``pyspark.pipelines`` carry ``location``."""
    with graph_element_registration_context(_LocatedRegistry(real_registry(), location)):
        yield


@dataclass
class GraphState(PlanState):
    """What sdp-expect remembers about one dataflow graph while it is defined: the
    planner's state (:class:`~sdp_expect.core.planner.PlanState`), plus what the Python
    API's early-binding check needs.

    :param datasets: Names of the datasets defined so far (lower case).
    :param early_reads: Early-binding reads of tables not (yet) known as datasets:
        a dataset defined later under that name raises SDPX-DEF-110 for them.
    """

    datasets: set[str] = field(default_factory=set)
    early_reads: list[tuple[EarlyRead, str, Optional[Location]]] = field(
        default_factory=list)
    router: Router = field(default_factory=Router)
    """Rewrites early-bound reads to wait for their datasets (:mod:`sdp_expect.spark.routing`)."""


_STATES: weakref.WeakKeyDictionary[GraphElementRegistry, GraphState] = (
    weakref.WeakKeyDictionary()
)


def _session() -> Optional[SparkSession]:
    return SparkSession.getActiveSession()


def _conf_getter(spark: Optional[SparkSession]) -> Callable[[str], Optional[str]]:
    def get(key: str) -> Optional[str]:
        if spark is None:
            return None
        return spark.conf.get(key, None)

    return get


def graph_state() -> GraphState:
    """The state of the graph being defined now (created on first use)."""
    registry = real_registry()
    state = _STATES.get(registry)
    if state is None:
        spark = getattr(registry, "_spark", None) or _session()
        state = GraphState(options=read_options(_conf_getter(spark)),
                           datasets=_spec_sql_datasets(),
                           update=UpdateStamp.for_definitions())
        _STATES[registry] = state
    return state


def _spec_sql_datasets() -> set[str]:
    """Datasets that the SQL files of the spec define (``spark-pipelines`` registers
    the definitions from the spec's folder, which is then the current directory):
    a Python query read with an early-binding method of one of them is caught even
    when its SQL file was registered first.
    """
    spec = spec_in(Path.cwd())
    if spec is None:
        return set()
    from sdp_expect.dbsql.parse import check  # the one SQL reader; collects, never raises
    from sdp_expect.dbsql.statements import DatasetStatement

    names: set[str] = set()
    for file in library_files(spec, ".sql"):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        names.update(statement.name.parts[-1].lower()
                     for statement in check(text, str(file)).statements
                     if isinstance(statement, DatasetStatement))
    return names


def evaluate_query(func: Callable[[], DataFrame], flow_name: str, *,
                   reader: Optional[str] = None,
                   where: Optional[Location] = None) -> DataFrame:
    """Call a query function once, as SDP would when it registers the flow.

    The call runs inside the flow's pipeline analysis context and, where the
    installed Spark blocks analysis and execution in query functions on the
    client (4.1), inside that block too, so a query function that calls
    ``count()`` fails here exactly as it would without sdp-expect.

    The query's plan is then checked for reads that open-source SDP would bind
    to the previous update (:func:`check_reads`).

    :param reader: The dataset the flow writes (default ``flow_name``).
    :param where: The query function's file and line, for errors.
    """
    for name in {flow_name, reader or flow_name}:
        refuse_reserved(name, where)
    registry = real_registry()
    spark = getattr(registry, "_spark", None)
    graph_id = getattr(registry, "_dataflow_graph_id", None)
    sites: dict[int, tuple[Location, str]] = {}
    with contextlib.ExitStack() as stack:
        if spark is not None and graph_id is not None:
            from pyspark.pipelines.add_pipeline_analysis_context import (
                add_pipeline_analysis_context,
            )

            stack.enter_context(
                add_pipeline_analysis_context(
                    spark=spark, dataflow_graph_id=graph_id, flow_name=flow_name
                )
            )
        try:
            from pyspark.pipelines.block_connect_access import (
                block_spark_connect_execution_and_analysis,
            )
        except ImportError:  # Spark 4.2+ blocks analysis on the server instead
            pass
        else:
            stack.enter_context(block_spark_connect_execution_and_analysis())
        stack.enter_context(_call_sites(sites))
        query = func()
    query = routed(query, flow_name)
    check_reads(query, reader or flow_name, where, sites)
    return query


def routed(query: DataFrame, flow_name: str) -> DataFrame:
    """``query`` with its early-bound reads made to wait (:mod:`sdp_expect.spark.routing`): the
    route views it needs are registered in the graph, and the query is returned over the
    rewritten plan (``query`` itself when nothing needed rewriting).

    The definitions file records which route views flow ``flow_name`` reads and the table
    each stands for, so that ``sdp-expect run`` names the user's flow and table, never a
    route view, when a read fails (:class:`sdp_expect.runtime.run_output.ChildOutput`).
    """
    relation = _relation(query)
    if relation is None:
        return query
    router = graph_state().router
    rewritten = router.route(relation)
    for view in router.take_new():
        _register_route_view(view, query.sparkSession)
    if rewritten is relation:
        return query
    record_route(flow_name, router.views_read(rewritten))
    return _over(rewritten, query.sparkSession)


def _over(relation: Any, spark: Any) -> DataFrame:
    """A Spark Connect DataFrame whose plan is ``relation`` (a ``Relation`` message)."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import LogicalPlan

    class _Planned(LogicalPlan):
        def __init__(self) -> None:
            super().__init__(None)
            if relation.common.HasField("plan_id"):
                self._root_plan_id = relation.common.plan_id

        def plan(self, session: Any) -> Any:
            copy = type(relation)()
            copy.CopyFrom(relation)
            return copy

    return ConnectDataFrame(_Planned(), spark)


def _register_route_view(view: RouteView, spark: Any) -> None:
    """Register a route view in the graph: a temporary view, which adds no table."""
    from pyspark import pipelines as _sdp

    frame = _over(view.relation, spark)
    with graph_element_registration_context(real_registry()):
        _sdp.temporary_view(name=view.name)(lambda: frame)


# The DataFrame methods whose call sites are noted while a query function runs, so that
# SDPX-DEF-110 names the line that called one (early_binding.EARLY_BINDING_RELATIONS).
_TRACKED_METHODS = (
    "withColumn", "withColumns", "withMetadata", "withColumnRenamed", "withColumnsRenamed",
    "drop", "to", "distinct", "dropDuplicates", "drop_duplicates",
    "dropDuplicatesWithinWatermark", "fillna", "dropna", "replace", "describe", "summary",
    "crosstab", "freqItems", "sampleBy", "transpose", "withWatermark",
)
_OWN_FOLDERS = tuple(
    os.path.dirname(os.path.abspath(module.__file__ or ""))
    for module in (pyspark, sdp_expect)
)


def _user_frame() -> Optional[Location]:
    """The file and line of the innermost caller outside pyspark and sdp-expect."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_OWN_FOLDERS):
            return Location(os.path.basename(filename), frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _recording(method: Callable[..., Any], sites: dict[int, tuple[Location, str]],
               ) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        plan_id = getattr(getattr(result, "_plan", None), "_plan_id", None)
        site = _user_frame() if isinstance(plan_id, int) else None
        if isinstance(plan_id, int) and site is not None:
            # The outermost call returns last and wins: withColumnRenamed, not the
            # withColumnsRenamed that pyspark calls inside it.
            sites[plan_id] = (site, method.__name__)
        return result

    return call


@contextlib.contextmanager
def _call_sites(sites: dict[int, tuple[Location, str]]) -> Iterator[None]:
    """While the block runs, note where each tracked Spark Connect method is called.

    The plan carries no source location, and an early-binding method is best
    reported at the line that called it, not only at the query function.
    """
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    except ImportError:  # pragma: no cover - pyspark[connect] is a dependency
        yield
        return
    originals = {name: ConnectDataFrame.__dict__[name] for name in _TRACKED_METHODS
                 if name in ConnectDataFrame.__dict__}
    for name, original in originals.items():
        setattr(ConnectDataFrame, name, _recording(original, sites))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(ConnectDataFrame, name, original)


def _relation(query: DataFrame) -> Any:
    """The query's unresolved Spark Connect plan, or None for a classic DataFrame."""
    plan = getattr(query, "_plan", None)
    session = getattr(query, "sparkSession", None)
    client = getattr(session, "client", None)
    if plan is None or client is None:
        return None
    return plan.plan(client)


def _early_error(read: EarlyRead, reader: str, where: Optional[Location],
                 not_yet: bool = False) -> SdpExpectError:
    detail = describe(read, reader, where)
    if not_yet:
        detail += (f"; Spark stopped it now because {read.table!r} is not in the catalog "
                   f"yet (the first update, or a table that does not exist)")
    return SdpExpectError("SDPX-DEF-110", detail, dataset=reader,
                          fix=f"{read.rewrite}; see docs/early-binding.md", location=where)


def check_reads(query: DataFrame, reader: str, where: Optional[Location],
                sites: Optional[dict[int, tuple[Location, str]]] = None) -> None:
    """Stop a query that open-source SDP would bind to the previous update's table.

    A read of a dataset defined so far raises SDPX-DEF-110 at once; a read of
    any other table is remembered, and :func:`note_datasets` raises if a
    dataset of that name is defined later (in a later file).

    :param query: The DataFrame a query function returned.
    :param reader: The dataset the query's flow writes.
    :param where: The query function's file and line.
    :param sites: Plan id -> file and line, and name, of the method call that built
        that node, when it was called inside the query function.
    """
    relation = _relation(query)
    if relation is None:
        return
    state = graph_state()
    for read in early_reads(relation):
        if is_route_name(read.table):
            continue  # a read of a route view: it waits for the dataset
        site = (sites or {}).get(read.plan_id) if read.plan_id is not None else None
        location: Optional[Location] = where
        if site is not None:
            location, method = site
            read = dataclasses.replace(read, method=method)
        if read.table.lower() in state.datasets:
            raise _early_error(read, reader, location)
        state.early_reads.append((read, reader, location))


@contextlib.contextmanager
def registering(reader: str) -> Iterator[None]:
    """Register ``reader``'s flows in this block: Spark's ``TABLE_OR_VIEW_NOT_FOUND`` for
    a table that the flow's query reads with an early-binding method becomes SDPX-DEF-110.

    Spark analyses some of these methods' input when the flow is registered. On a
    pipeline's first update, a dataset defined in a later file is not in the catalog
    yet, so Spark refuses the flow before the later file can be checked; on later
    updates the same query would read the previous update's table.
    """
    try:
        yield
    except Exception as error:
        condition = getattr(error, "getCondition", getattr(error, "getErrorClass", None))
        if not callable(condition) or condition() != "TABLE_OR_VIEW_NOT_FOUND":
            raise
        parameters = error.getMessageParameters() or {}  # type: ignore[attr-defined]
        missing = table_name(str(parameters.get("relationName", ""))).lower()
        for read, early_reader, location in graph_state().early_reads:
            if early_reader == reader and read.table.lower() == missing:
                raise _early_error(read, reader, location, not_yet=True) from None
        raise


def refuse_reserved(name: str, where: Optional[Location]) -> None:
    """Raise SDPX-DEF-118 for a user's dataset or flow named in sdp-expect's space."""
    if table_name(name).lower().startswith(RESERVED_PREFIX):
        raise SdpExpectError("SDPX-DEF-118", f"the name {name!r} starts with "
                             f"{RESERVED_PREFIX!r}", dataset=name, location=where)


def note_datasets(*names: str) -> None:
    """Record datasets of the graph; raise SDPX-DEF-110 for an earlier early read of one."""
    state = graph_state()
    for name in names:
        refuse_reserved(name, None)
        key = table_name(name).lower()
        state.datasets.add(key)
        for read, reader, location in state.early_reads:
            if read.table.lower() == key:
                raise _early_error(read, reader, location)


def is_streaming(query: DataFrame) -> bool:
    """True when the query reads a stream, judged from its unresolved plan alone.

    Looks for a streaming read (``spark.readStream...``) anywhere in the plan,
    and for ``STREAM`` in SQL text (``spark.sql("... FROM STREAM(x)")``). No
    request is sent to Spark.
    """
    relation = _relation(query)
    if relation is None:
        return bool(query.isStreaming)  # classic (non-Connect) DataFrame: no RPC involved
    return reads_stream(relation)


# In the child of ``sdp-expect run`` / ``dry-run``, the coded error that stops the
# definition is also recorded as values (definitions.record_errors_on_exit).
record_errors_on_exit()
