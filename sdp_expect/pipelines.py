"""Drop-in replacement for ``pyspark.pipelines`` with Databricks-style expectations.

Change one import line and a Lakeflow pipeline file runs on open-source SDP::

    from sdp_expect import pipelines as dp

    @dp.materialized_view
    @dp.expect("recent", "order_date >= '2020-01-01'")
    @dp.expect_or_drop("valid_id", "order_id IS NOT NULL")
    @dp.expect_or_fail("valid_amount", "amount >= 0")
    def orders_silver():
        return spark.read.table("orders_bronze")

Expectation decorators go *below* the dataset decorator. Everything else the
installed ``pyspark.pipelines`` offers is available here unchanged.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Union, overload

import pyspark as _pyspark
import pyspark.pipelines as _sdp
from pyspark.pipelines.source_code_location import (
    SourceCodeLocation,
    get_caller_source_code_location,
)
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.spark_version import SCD_TYPE_2, spark_has
from sdp_expect.core.model import (
    GROUP_DECORATORS,
    Action,
    Aggregate,
    DatasetCheck,
    DatasetKind,
    DatasetRules,
    Expectation,
    QuarantineSpec,
    Reference,
    RowCount,
    UniqueKey,
    WholeCheck,
    make_expectation,
)
from sdp_expect.core.planner import (
    DatasetDefinition,
    Definition,
    FlowDefinition,
    TableDefinition,
    plan,
    plan_auto_cdc_flow,
)
from sdp_expect.emit.python import emit
from sdp_expect.spark.registration import (
    evaluate_query,
    graph_state,
    is_streaming,
    located,
    note_datasets,
    registering,
)

QueryFunction = Callable[[], DataFrame]
Decorator = Callable[[QueryFunction], QueryFunction]

# A literal list, so that type checkers see the exports: pyspark.pipelines' own names, each
# defined here (create_auto_cdc_flow is added below where the installed pyspark has it;
# tests/test_api_surface.py checks that none is missing), and ours.
__all__ = [
    "aggregate",
    "append_flow",
    "create_sink",
    "create_streaming_table",
    "expect",
    "expect_all",
    "expect_all_or_drop",
    "expect_all_or_fail",
    "expect_from_file",
    "expect_or_drop",
    "expect_or_fail",
    "materialized_view",
    "metrics",
    "quarantine",
    "references",
    "row_count",
    "table",
    "temporary_view",
    "unique",
]

_PENDING_ATTR = "__sdp_expect__"


# ---------------------------------------------------------------------------------------------
# What the expectation decorators leave on a query function
# ---------------------------------------------------------------------------------------------
RuleSource = Callable[[str], List[Expectation]]
"""Given the dataset's name, returns validated expectations (raises coded errors)."""


@dataclasses.dataclass
class _Pending:
    """Rules and settings stacked on a query function, in declaration order."""

    sources: List[RuleSource] = dataclasses.field(default_factory=list)
    quarantine: Optional[QuarantineSpec] = None
    metrics: Optional[bool] = None


def _where(location: SourceCodeLocation) -> Location:
    return Location(os.path.basename(location.filename), location.line_number)


def _pending_of(func: Any, decorator: str, label: Optional[str]) -> _Pending:
    """The pending rules of ``func``, created on first use; rejects misplaced decorators."""
    if func is None or not callable(func):
        raise SdpExpectError(
            "SDPX-DEF-102",
            f"@{decorator} was applied to {func!r}, not to a query function",
            expectation=label,
        )
    pending = getattr(func, _PENDING_ATTR, None)
    if pending is None:
        pending = _Pending()
        setattr(func, _PENDING_ATTR, pending)
    return pending


def _take_pending(func: Any) -> Optional[_Pending]:
    pending = getattr(func, _PENDING_ATTR, None)
    if pending is not None:
        delattr(func, _PENDING_ATTR)
    return pending


def _stacking(decorator: str, label: Optional[str], source: RuleSource) -> Decorator:
    """A decorator that adds ``source`` above the rules already stacked on a function.

    Decorators apply bottom-up, so a new source goes first: the result is the
    order a reader sees, top to bottom.
    """

    def apply(func: QueryFunction) -> QueryFunction:
        _pending_of(func, decorator, label).sources.insert(0, source)
        return func

    return apply


# ---------------------------------------------------------------------------------------------
# Expectation decorators
# ---------------------------------------------------------------------------------------------
MaxFailed = Union[int, str, None]
"""A tolerance as written: a count (``10``, ``"10"``) or a percentage (``"1%"``)."""


Constraint = Union[str, DatasetCheck, WholeCheck]
"""A rule: Spark SQL text (one record at a time), a key rule made by :func:`unique` or
:func:`references` (docs/dataset-rules.md), or a rule on the dataset as a whole made by
:func:`row_count` or :func:`aggregate` (docs/row-count-rules.md,
docs/aggregate-rules.md)."""


def row_count(min: Optional[int] = None, max: Optional[int] = None) -> RowCount:
    """A row-count rule, given to ``expect`` or ``expect_or_fail`` in place of a
    constraint::

        @dp.materialized_view
        @dp.expect_or_fail("not_empty", dp.row_count(min=1))
        @dp.expect("not_too_many", dp.row_count(max=10_000_000))
        def orders(): ...

    It holds when the records the update's query returns (before any rule drops one)
    number from ``min`` to ``max``, both included. A fail rule fails the update before
    anything is written; a warn rule is reported in the metrics. Materialized views; on
    a streaming table warn only, judged on the records since the last full refresh
    (docs/row-count-rules.md).

    :param min: The fewest records allowed (a whole number from 0), or None.
    :param max: The most records allowed (a whole number from ``min``), or None.
    :raises SdpExpectError: when the dataset is defined: SDPX-VAL-018 for no bound or a
        bad one, SDPX-VAL-020 for min above max, SDPX-DEF-115 with ``expect_or_drop``,
        SDPX-DEF-116 with ``max_failed``,
        SDPX-DEF-117 where it cannot be judged (a fail rule on a streaming table, any on
        a temporary view).
    """
    return RowCount(min, max)


def aggregate(expression: str) -> Aggregate:
    """An aggregate rule, given to ``expect`` or ``expect_or_fail`` in place of a
    constraint::

        @dp.materialized_view
        @dp.expect_or_fail("revenue_positive", dp.aggregate("sum(amount) > 0"))
        @dp.expect("some_paid", dp.aggregate("count_if(status = 'paid') >= 1"))
        def orders(): ...

    ``expression`` is a boolean Spark SQL expression over aggregates of the records the
    update's query returns (before any rule drops one), evaluated once per update; a
    NULL result (``sum`` over no records) is a violation, unless the pipeline sets
    ``sdp_expect.null_result = pass``. Materialized views only
    (docs/aggregate-rules.md).

    :param expression: The expression; it must call at least one aggregate function.
    :raises SdpExpectError: when the dataset is defined: SDPX-VAL-001 (empty),
        SDPX-VAL-011 (not well formed), SDPX-VAL-010 (a window, subquery, generator or
        non-deterministic function), SDPX-VAL-019 (no aggregate function), SDPX-DEF-115
        with ``expect_or_drop``, SDPX-DEF-116 with ``max_failed``, SDPX-DEF-117 on a
        streaming table or a temporary view.
    """
    return Aggregate(expression)


def unique(*columns: str) -> UniqueKey:
    """A unique-key rule, given to an expectation decorator in place of a constraint::

        @dp.materialized_view
        @dp.expect_or_drop("order_once", dp.unique("order_id"))
        def orders(): ...

    A record violates it when another record of the update has the same key, all of the
    key's columns non-NULL (a NULL in the key never collides, as SQL's UNIQUE). Every
    record of a duplicated key violates it. Materialized views only
    (docs/dataset-rules.md#unique-key).

    :param columns: The key: one column name, or several for a composite key.
    :raises SdpExpectError: when the dataset is defined: SDPX-VAL-014 for no column,
        SDPX-VAL-015 for a column that is not a non-empty string, SDPX-DEF-114 on a
        streaming table or a temporary view.
    """
    return UniqueKey(tuple(columns))


def references(dataset: str, *columns: str,
               to: Optional[Union[str, List[str], tuple[str, ...]]] = None) -> Reference:
    """A reference (foreign key) rule, given to an expectation decorator in place of a
    constraint::

        @dp.materialized_view
        @dp.expect_or_fail("customer_known", dp.references("customers", "customer_id"))
        def orders(): ...

    A record violates it when all its key columns are non-NULL and no record of
    ``dataset`` has that key (a NULL in the key passes, as SQL's MATCH SIMPLE).
    Materialized views, and streaming tables (each micro-batch against ``dataset`` as it
    then is: docs/dataset-rules.md#reference).

    :param dataset: The referenced dataset: a dataset of the pipeline (the flow then
        waits for it) or any table.
    :param columns: The record's key columns, one or more.
    :param to: The referenced dataset's columns, one per key column in order (a name, or
        a list); default: the key's own names.
    :raises SdpExpectError: when the dataset is defined: SDPX-VAL-014 for no column,
        SDPX-VAL-015 for a column or dataset that is not a non-empty string,
        SDPX-VAL-016 for ``to`` not pairing with the key, SDPX-DEF-114 on a temporary
        view.
    """
    if to is None:
        targets: tuple[Any, ...] = tuple(columns)
    elif isinstance(to, str):
        targets = (to,)
    else:
        targets = tuple(to) if isinstance(to, (list, tuple)) else (to,)
    return Reference(dataset, tuple(columns), targets)


def _single(action: Action, name: str, constraint: Constraint,
            max_failed: MaxFailed) -> Decorator:
    place = _where(get_caller_source_code_location(stacklevel=2))

    def source(dataset: str) -> List[Expectation]:
        return [make_expectation(name, constraint, action, dataset=dataset, place=place,
                                 max_failed=max_failed)]

    return _stacking(action.decorator, name if isinstance(name, str) else None, source)


def expect(name: str, constraint: Constraint, max_failed: MaxFailed = None) -> Decorator:
    """Add a *warn* expectation: violating records are written and counted.

    Place it below the dataset decorator (``@dp.materialized_view``, ``@dp.table``
    or ``@dp.temporary_view``).

    :param name: The expectation's name, unique within the dataset.
    :param constraint: A Spark SQL boolean expression, e.g. ``"amount >= 0"``. A
        record passes only when it is TRUE (NULL is a violation unless the
        pipeline sets ``sdp_expect.null_result: pass``). Or a key rule:
        :func:`unique`, :func:`references`.
    :param max_failed: A tolerance (docs/thresholds.md): a count (``10``) or a share of
        the records checked (``"1%"``); the metrics row says when it is exceeded.
    """
    return _single(Action.WARN, name, constraint, max_failed)


def expect_or_drop(name: str, constraint: Constraint, max_failed: MaxFailed = None) -> Decorator:
    """Add a *drop* expectation: violating records are not written, and are counted.

    :param name: The expectation's name, unique within the dataset.
    :param constraint: A Spark SQL boolean expression, or a key rule (:func:`unique`,
        :func:`references`).
    :param max_failed: A tolerance (docs/thresholds.md): a count (``10``) or a share of
        the records checked (``"1%"``); the update fails when more would be dropped.
    """
    return _single(Action.DROP, name, constraint, max_failed)


def expect_or_fail(name: str, constraint: Constraint, max_failed: MaxFailed = None) -> Decorator:
    """Add a *fail* expectation: a violating record fails the flow's update.

    The error line reads ``[EXPECTATION_VIOLATION] Flow '<dataset>' failed to
    meet the expectation. Violated expectations: '<names>'. Output record:
    '<record as JSON>'.``; the flow is not retried.

    :param name: The expectation's name, unique within the dataset.
    :param constraint: A Spark SQL boolean expression, or a key rule (:func:`unique`,
        :func:`references`).
    :param max_failed: A tolerance (docs/thresholds.md): a count (``10``) or a share of
        the records checked (``"1%"``). Violating records are then written and counted,
        and the update fails only when they exceed it (``[EXPECTATION_TOLERANCE_EXCEEDED]``).
    """
    return _single(Action.FAIL, name, constraint, max_failed)


def _group(action: Action, args: tuple[Any, ...], kwargs: Mapping[str, Any],
           place: Location, max_failed: MaxFailed = None) -> Decorator:
    decorator = action.group_decorator
    if len(args) != 1 or kwargs or not isinstance(args[0], Mapping):
        shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
        problem = SdpExpectError(
            "SDPX-DEF-101",
            f"@{decorator}({shown}) must be given exactly one dict {{name: constraint}}",
            fix=f"write @{decorator}({{'name': 'constraint', ...}}); for one rule use "
            f"@{action.decorator}(name, constraint)",
            location=place,
        )

        def reject(func: QueryFunction) -> QueryFunction:
            name = getattr(func, "__name__", None)
            raise problem.with_context(dataset=name)

        return reject
    rules = dict(args[0])

    def source(dataset: str) -> List[Expectation]:
        return [
            make_expectation(name, constraint, action, dataset=dataset, place=place,
                             max_failed=max_failed)
            for name, constraint in rules.items()
        ]

    return _stacking(decorator, None, source)


def expect_all(*expectations: Mapping[str, Constraint], max_failed: MaxFailed = None,
               **wrong: Any) -> Decorator:
    """Add several *warn* expectations from one dict ``{name: constraint}``.

    Each expectation is evaluated and counted on its own; the dict's order is
    the declaration order.

    :param expectations: Exactly one dict of name to constraint.
    :param max_failed: A tolerance given to each of the rules, on its own
        (docs/thresholds.md).
    """
    place = _where(get_caller_source_code_location(stacklevel=1))
    return _group(Action.WARN, expectations, wrong, place, max_failed)


def expect_all_or_drop(*expectations: Mapping[str, Constraint], max_failed: MaxFailed = None,
                       **wrong: Any) -> Decorator:
    """Add several *drop* expectations from one dict ``{name: constraint}``.

    A record is dropped when it violates at least one of them.

    :param expectations: Exactly one dict of name to constraint.
    :param max_failed: A tolerance given to each of the rules, on its own
        (docs/thresholds.md).
    """
    place = _where(get_caller_source_code_location(stacklevel=1))
    return _group(Action.DROP, expectations, wrong, place, max_failed)


def expect_all_or_fail(*expectations: Mapping[str, Constraint], max_failed: MaxFailed = None,
                       **wrong: Any) -> Decorator:
    """Add several *fail* expectations from one dict ``{name: constraint}``.

    :param expectations: Exactly one dict of name to constraint.
    :param max_failed: A tolerance given to each of the rules, on its own
        (docs/thresholds.md).
    """
    place = _where(get_caller_source_code_location(stacklevel=1))
    return _group(Action.FAIL, expectations, wrong, place, max_failed)


def expect_from_file(path: str, tag: Optional[str] = None) -> Decorator:
    """Add the rules of a rule file (YAML or JSON), each with its own action.

    :param path: The rule file; a relative path is taken from the directory of
        the Python file that names it.
    :param tag: Keep only the rules carrying this tag (list format ``tag`` /
        ``tags``); None keeps all.
    """
    location = get_caller_source_code_location(stacklevel=1)
    base_dir = os.path.dirname(os.path.abspath(location.filename))

    def source(dataset: str) -> List[Expectation]:
        from sdp_expect import rules as rule_files

        return rule_files.load(path, tag, base_dir=base_dir, dataset=dataset)

    return _stacking("expect_from_file", None, source)


def quarantine(name: Optional[str] = None) -> Decorator:
    """Keep the records the drop expectations remove in a quarantine dataset.

    The quarantine has every column of the record plus ``_failed_expectations``
    (names of all warn and drop rules the record violated, in declaration
    order), and the dataset's kind (materialized view or streaming table).

    :param name: The quarantine dataset's name; default ``<dataset>_quarantine``.
    """
    spec = QuarantineSpec(name=name)

    def apply(func: QueryFunction) -> QueryFunction:
        _pending_of(func, "quarantine", None).quarantine = spec
        return func

    return apply


def metrics(enabled: bool = True) -> Decorator:
    """Turn the ``<dataset>_dq_metrics`` table on or off for one dataset.

    :param enabled: False for no metrics table for this dataset, whatever the
        pipeline's ``sdp_expect.metrics`` setting.
    """

    def apply(func: QueryFunction) -> QueryFunction:
        _pending_of(func, "metrics", None).metrics = bool(enabled)
        return func

    return apply


# ---------------------------------------------------------------------------------------------
# Datasets and flows
# ---------------------------------------------------------------------------------------------
def _resolve_rules(name: str, pending: _Pending) -> DatasetRules:
    rules = DatasetRules(dataset=name, quarantine=pending.quarantine, metrics=pending.metrics)
    for source in pending.sources:
        rules.extend(source(name))
    return rules


def _define_dataset(kind: Optional[DatasetKind], func: Any, name: Optional[str],
                    options: Dict[str, Any], location: SourceCodeLocation) -> None:
    """Register one dataset; ``kind`` None means: decide from the query (``dlt.table``)."""
    if not callable(func):
        raise SdpExpectError(
            "SDPX-DEF-107",
            f"the dataset decorator was applied to {func!r}",
            dataset=name,
            location=_where(location),
        )
    name = name or func.__name__
    pending = _take_pending(func)
    # Evaluated here for every dataset, with or without rules: the plan is checked for
    # reads that open-source SDP would bind to the previous update (SDPX-DEF-110).
    query = evaluate_query(func, name, where=_where(location))
    if kind is None:
        kind = DatasetKind.STREAMING_TABLE if is_streaming(query) else DatasetKind.MATERIALIZED_VIEW
    rules = DatasetRules(name) if pending is None else _resolve_rules(name, pending)
    _define(DatasetDefinition(rules, kind, pending is not None, _where(location),
                              options.get("spark_conf"), options.get("format")),
            location, query, func, options)


def _define(definition: Definition, location: SourceCodeLocation,
            query: Optional[DataFrame], func: Any, options: Dict[str, Any]) -> None:
    """Plan one dataset or flow and register what its plan holds, at ``location``: the one
    route of every definition of the Python API, with or without expectations.

    :param definition: The dataset or flow.
    :param location: Where the user defined it (the registered elements carry it).
    :param query: The user's query (None: a table declared without one).
    :param func: What lends the registered query functions their names.
    :param options: The user's options of the dataset itself, its name apart (the
        definition's).
    """
    planned = plan(definition, graph_state())
    if isinstance(definition, FlowDefinition):
        owner = definition.target
    else:
        owner = definition.rules.dataset
        note_datasets(owner, *planned.companions.names())
    with located(location), registering(owner):
        emit(planned, query, func, options,
             streaming=query is not None and is_streaming(query))


@overload
def table(query_function: QueryFunction) -> None: ...


@overload
def table(
    *,
    query_function: None = None,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
) -> Callable[[QueryFunction], None]: ...


def table(
    query_function: Optional[QueryFunction] = None,
    *,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
) -> Union[Callable[[QueryFunction], None], None]:
    """(Return a) decorator that defines a streaming table from a query function.

    Same as ``pyspark.pipelines.table``; expectation decorators stacked below it
    apply to the table's flow and to every ``append_flow`` into it.

    :param query_function: The query function, passed implicitly when used bare.
    :param name: The dataset's name; default the function's name.
    :param comment: Description of the dataset.
    :param spark_conf: Spark confs set when the flow runs.
    :param table_properties: Table properties.
    :param partition_cols: Partition columns.
    :param cluster_by: Clustering columns.
    :param schema: Explicit schema (StructType or DDL string).
    :param format: Table format, e.g. ``"parquet"``.
    """
    return dataset_decorator(DatasetKind.STREAMING_TABLE, query_function,
                             get_caller_source_code_location(stacklevel=1),
                             name=name, comment=comment, spark_conf=spark_conf,
                             table_properties=table_properties, partition_cols=partition_cols,
                             cluster_by=cluster_by, schema=schema, format=format)


@overload
def materialized_view(query_function: QueryFunction) -> None: ...


@overload
def materialized_view(
    *,
    query_function: None = None,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
) -> Callable[[QueryFunction], None]: ...


def materialized_view(
    query_function: Optional[QueryFunction] = None,
    *,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
) -> Union[Callable[[QueryFunction], None], None]:
    """(Return a) decorator that defines a materialized view from a query function.

    Same as ``pyspark.pipelines.materialized_view``, plus the expectation
    decorators stacked below it.

    :param query_function: The query function, passed implicitly when used bare.
    :param name: The dataset's name; default the function's name.
    :param comment: Description of the dataset.
    :param spark_conf: Spark confs set when the flow runs.
    :param table_properties: Table properties.
    :param partition_cols: Partition columns.
    :param cluster_by: Clustering columns.
    :param schema: Explicit schema (StructType or DDL string).
    :param format: Table format, e.g. ``"parquet"``.
    """
    return dataset_decorator(DatasetKind.MATERIALIZED_VIEW, query_function,
                             get_caller_source_code_location(stacklevel=1),
                             name=name, comment=comment, spark_conf=spark_conf,
                             table_properties=table_properties, partition_cols=partition_cols,
                             cluster_by=cluster_by, schema=schema, format=format)


@overload
def temporary_view(query_function: QueryFunction) -> None: ...


@overload
def temporary_view(
    *,
    query_function: None = None,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
) -> Callable[[QueryFunction], None]: ...


def temporary_view(
    query_function: Optional[QueryFunction] = None,
    *,
    name: Optional[str] = None,
    comment: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
) -> Union[Callable[[QueryFunction], None], None]:
    """(Return a) decorator that defines a temporary view from a query function.

    Drop and fail expectations work on a view as on a table; a view has no
    quarantine and no metrics table (put those on the dataset that reads it).

    :param query_function: The query function, passed implicitly when used bare.
    :param name: The view's name; default the function's name.
    :param comment: Description of the view.
    :param spark_conf: Spark confs set when the view's query runs.
    """
    return dataset_decorator(DatasetKind.TEMPORARY_VIEW, query_function,
                             get_caller_source_code_location(stacklevel=1),
                             name=name, comment=comment, spark_conf=spark_conf)


def _drop_none(**options: Any) -> Dict[str, Any]:
    return {key: value for key, value in options.items() if value is not None}


def dataset_decorator(kind: Optional[DatasetKind], query_function: Optional[QueryFunction],
                      location: SourceCodeLocation, **options: Any,
                      ) -> Union[Callable[[QueryFunction], None], None]:
    """The dataset decorator that ``table``, ``materialized_view``, ``temporary_view`` and
    ``sdp_expect.dlt.table`` are: it defines the dataset of the query function it is
    given (bare use), or returns the decorator that does.

    :param kind: The dataset's kind; None: decided from its query (``dlt.table``: a
        streaming query makes a streaming table).
    :param query_function: The query function, when the decorator is used bare.
    :param location: Where the user wrote the decorator.
    :param options: The decorator's keyword arguments; those that are None are left out.
    """
    options = _drop_none(**options)
    name = options.pop("name", None)

    def outer(func: QueryFunction) -> None:
        _define_dataset(kind, func, name, options, location)

    if query_function is not None:
        outer(query_function)
        return None
    return outer


def create_streaming_table(
    name: str,
    *,
    comment: Optional[str] = None,
    table_properties: Optional[Dict[str, str]] = None,
    partition_cols: Optional[List[str]] = None,
    cluster_by: Optional[List[str]] = None,
    schema: Optional[Union[StructType, str]] = None,
    format: Optional[str] = None,
    quarantine: Union[bool, str, None] = None,
    dq_metrics: Optional[bool] = None,
    **expectations: Mapping[str, Constraint],
) -> None:
    """Create a streaming table that flows (``append_flow``) write into.

    The expectations given here apply to every flow that writes into the
    table, in the order the keyword arguments are written.

    :param name: The table's name.
    :param comment: Description of the table.
    :param table_properties: Table properties.
    :param partition_cols: Partition columns.
    :param cluster_by: Clustering columns.
    :param schema: Explicit schema (StructType or DDL string).
    :param format: Table format, e.g. ``"parquet"``.
    :param quarantine: True for a quarantine named ``<name>_quarantine``, or the
        quarantine's name.
    :param dq_metrics: False for no ``<name>_dq_metrics`` table.
    :param expectations: ``expect_all``, ``expect_all_or_drop`` and/or
        ``expect_all_or_fail``, each one dict ``{name: constraint}``.
    """
    location = get_caller_source_code_location(stacklevel=1)
    rules = DatasetRules(dataset=name, metrics=dq_metrics)
    if quarantine:
        rules.quarantine = QuarantineSpec(name=quarantine if isinstance(quarantine, str) else None)
    for keyword, group in expectations.items():
        if keyword not in GROUP_DECORATORS:
            raise TypeError(
                f"create_streaming_table() got an unexpected keyword argument {keyword!r}"
            )
        if not isinstance(group, Mapping):
            raise SdpExpectError(
                "SDPX-DEF-101",
                f"{keyword}= must be one dict {{name: constraint}}, got {type(group).__name__}",
                dataset=name,
                location=_where(location),
            )
        for rule_name, constraint in group.items():
            rules.add(make_expectation(rule_name, constraint, GROUP_DECORATORS[keyword],
                                       dataset=name, place=_where(location)))
    table_options = _drop_none(comment=comment, table_properties=table_properties,
                               partition_cols=partition_cols, cluster_by=cluster_by,
                               schema=schema, format=format)
    _define(TableDefinition(rules, _where(location), format), location, None,
            create_streaming_table, table_options)


def append_flow(
    *,
    target: str,
    name: Optional[str] = None,
    spark_conf: Optional[Dict[str, str]] = None,
) -> Callable[[QueryFunction], None]:
    """Return a decorator that defines a flow appending a query's records to ``target``.

    When ``target`` carries expectations (from ``create_streaming_table(...,
    expect_all...=)`` or from decorators on its ``@dp.table``), they apply to
    this flow too. Expectation decorators cannot be put on the flow itself.

    :param target: The streaming table (or sink) the flow writes into.
    :param name: The flow's name; default the function's name.
    :param spark_conf: Spark confs set when the flow runs.
    """
    location = get_caller_source_code_location(stacklevel=1)

    def outer(func: QueryFunction) -> None:
        state = graph_state()
        flow_name = str(name or getattr(func, "__name__", "flow"))
        if _take_pending(func) is not None:
            code = "SDPX-DEF-104" if target in state.sinks else "SDPX-DEF-103"
            raise SdpExpectError(code, f"expectations on append_flow {flow_name!r} into "
                                 f"{target!r}", dataset=target, location=_where(location))
        query = evaluate_query(func, flow_name, reader=target, where=_where(location))
        _define(FlowDefinition(target, flow_name, _where(location), spark_conf), location,
                query, func, {})

    return outer


def create_sink(name: str, format: str, options: Optional[Dict[str, str]] = None) -> None:
    """Create a sink, as ``pyspark.pipelines.create_sink`` does.

    Sinks do not support expectations: put them on the dataset the sink's flow
    reads.

    :param name: The sink's name.
    :param format: The sink's format, e.g. ``"parquet"``.
    :param options: The sink's options.
    """
    with located(get_caller_source_code_location(stacklevel=1)):
        _sdp.create_sink(name, format, options)
    graph_state().sinks.add(name)


_SDP_AUTO_CDC: Optional[Callable[..., None]] = getattr(_sdp, "create_auto_cdc_flow", None)

if _SDP_AUTO_CDC is not None:  # Spark 4.2+
    __all__ += ["create_auto_cdc_flow"]

    def create_auto_cdc_flow(target: str, source: str, *args: Any, **kwargs: Any) -> None:
        """Create an Auto CDC flow, as ``pyspark.pipelines.create_auto_cdc_flow`` does.

        Put expectations on the flow's *source* (for example a temporary view
        with ``expect_or_drop``): the target of an Auto CDC flow cannot carry
        them.

        :param target: The streaming table the changes are applied to.
        :param source: The dataset the change records come from.
        :param args: The other arguments of ``pyspark.pipelines.create_auto_cdc_flow``.
        :param kwargs: The other keyword arguments of the same.
        """
        location = get_caller_source_code_location(stacklevel=1)
        # What the installed Spark cannot do at all is said first (SDPX-DEF-109), then
        # what the graph makes of the flow (SDPX-DEF-108, -112, -119).
        scd_type = kwargs.get("stored_as_scd_type", args[5] if len(args) > 5 else None)
        if str(scd_type) == "2" and not spark_has(SCD_TYPE_2, _pyspark.__version__):
            raise _missing("SCD type 2 in create_auto_cdc_flow", SCD_TYPE_2).with_context(
                dataset=target, location=_where(location))
        plan_auto_cdc_flow(target, kwargs.get("name"), state=graph_state(),
                           location=_where(location))
        with located(location):
            assert _SDP_AUTO_CDC is not None
            _SDP_AUTO_CDC(target, source, *args, **kwargs)


class MissingFeatureError(SdpExpectError, AttributeError):
    """SDPX-DEF-109 for a name of ``pyspark.pipelines`` that a later Spark added.

    Also an :class:`AttributeError`, so ``hasattr(dp, name)`` stays False.
    """


_ADDED_IN: dict[str, tuple[int, int]] = {"create_auto_cdc_flow": (4, 2)}
"""Names of ``pyspark.pipelines`` added after Spark 4.1, with the version that added them."""


def _missing(feature: str, since: tuple[int, int]) -> MissingFeatureError:
    """SDPX-DEF-109: ``feature`` (e.g. ``'create_auto_cdc_flow'``) needs Spark ``since``,
    the release that added it; says which pyspark is installed."""
    major, minor = since
    return MissingFeatureError(
        "SDPX-DEF-109", f"{feature} arrived in Spark {major}.{minor}; the installed pyspark is "
        f"{_pyspark.__version__}", fix=f"install pyspark {major}.{minor} or later, e.g. "
        f"pip install 'pyspark[pipelines]>={major}.{minor},<5'")


def __getattr__(attribute: str) -> Any:
    """Everything else the installed ``pyspark.pipelines`` offers, unchanged."""
    try:
        return getattr(_sdp, attribute)
    except AttributeError:
        if attribute in _ADDED_IN:
            raise _missing(attribute, _ADDED_IN[attribute]) from None
        raise AttributeError(
            f"module 'sdp_expect.pipelines' has no attribute {attribute!r} (nor has the "
            "installed pyspark.pipelines)"
        ) from None


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))

