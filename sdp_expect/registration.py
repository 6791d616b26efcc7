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
  the unresolved plan, without asking Spark to analyse it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, TypeVar

from pyspark.pipelines.graph_element_registry import (
    GraphElementRegistry,
    get_active_graph_element_registry,
    graph_element_registration_context,
)
from pyspark.pipelines.source_code_location import SourceCodeLocation
from pyspark.sql import DataFrame, SparkSession

from sdp_expect.options import PipelineOptions, read_options

__all__ = [
    "GraphState",
    "evaluate_query",
    "graph_state",
    "is_streaming",
    "located",
    "real_registry",
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
class GraphState:
    """What sdp-expect remembers about one dataflow graph while it is defined.

    :param options: The pipeline-wide settings (read once per graph).
    :param table_rules: Streaming tables whose rules apply to every flow
        into them, by name, with what is needed to add those flows.
    :param flow_targets: Names of datasets some flow already writes into.
    :param sinks: Names declared with ``create_sink``.
    """

    options: PipelineOptions
    table_rules: dict[str, Any] = field(default_factory=dict)
    flow_targets: set[str] = field(default_factory=set)
    sinks: set[str] = field(default_factory=set)


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
        state = GraphState(options=read_options(_conf_getter(spark)))
        _STATES[registry] = state
    return state


def evaluate_query(func: Callable[[], DataFrame], flow_name: str) -> DataFrame:
    """Call a query function once, as SDP would when it registers the flow.

    The call runs inside the flow's pipeline analysis context and, where the
    installed Spark blocks analysis and execution in query functions on the
    client (4.1), inside that block too, so a query function that calls
    ``count()`` fails here exactly as it would without sdp-expect.
    """
    registry = real_registry()
    spark = getattr(registry, "_spark", None)
    graph_id = getattr(registry, "_dataflow_graph_id", None)
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
        return func()


def _walk_messages(message: Any) -> Iterator[Any]:
    """Every protobuf message inside ``message``, iteratively (plans can be deep)."""
    from google.protobuf.message import Message

    stack = [message]
    while stack:
        current = stack.pop()
        yield current
        for _, value in current.ListFields():
            if isinstance(value, Message):
                stack.append(value)
            elif hasattr(value, "values") and callable(value.values):  # a map field
                stack.extend(v for v in value.values() if isinstance(v, Message))
            elif not isinstance(value, (str, bytes)) and hasattr(value, "__iter__"):
                stack.extend(v for v in value if isinstance(v, Message))


def is_streaming(query: DataFrame) -> bool:
    """True when the query reads a stream, judged from its unresolved plan alone.

    Looks for a streaming read (``spark.readStream...``) anywhere in the plan,
    and for ``STREAM`` in SQL text (``spark.sql("... FROM STREAM(x)")``). No
    request is sent to Spark.
    """
    plan = getattr(query, "_plan", None)
    session = getattr(query, "sparkSession", None)
    client = getattr(session, "client", None)
    if plan is None or client is None:
        return bool(query.isStreaming)  # classic (non-Connect) DataFrame: no RPC involved
    relation = plan.plan(client)
    for message in _walk_messages(relation):
        name = message.DESCRIPTOR.name
        if name == "Read" and getattr(message, "is_streaming", False):
            return True
        if name == "SQL" and _mentions_stream(getattr(message, "query", "")):
            return True
    return False


def _mentions_stream(sql_text: str) -> bool:
    from sdp_expect.sqltokens import TokenKind, tokenize

    try:
        tokens = tokenize(sql_text)
    except ValueError:
        return False
    return any(t.kind is TokenKind.IDENT and t.value.upper() == "STREAM" for t in tokens)
