"""Reads of pipeline datasets that open-source SDP binds to the previous update.

Spark Connect plans some DataFrame methods (``withColumn``, ``drop``,
``distinct``, ``fillna``, ...) by analysing their input on the server, while
the flow is registered. When that input reads another dataset of the pipeline,
the analysis resolves the name against the *catalog*, not the graph: the flow
is bound to the table the previous update left, no longer waits for the
dataset, and reads it while it is being rebuilt. The update succeeds with
stale or empty data (on the first update, before the table exists, it fails
with ``TABLE_OR_VIEW_NOT_FOUND`` instead).

Which methods do this was measured, per Spark version, by
``tests/test_early_binding.py`` (the matrix is in ``docs/early-binding.md``).
This module reads a query's unresolved plan (Spark Connect protobuf messages)
and finds each such method applied over a read of a table; the caller decides
which of the tables read are datasets of the pipeline. No request is sent to
Spark, and nothing here imports pyspark.

:mod:`sdp_expect.spark.routing` rewrites the plan so that most of these methods wait
(``withColumn(s)``, ``withColumnRenamed(s)``, ``drop`` by name, ``fillna`` and
``dropna`` on named columns, batch deduplication). What is left needs the input's
columns or data (``fillna`` without columns, ``to``, ``describe``, ``transpose``,
...), which a query function may not ask Spark for: sdp-expect stops the pipeline
with SDPX-DEF-110 and names the rewrite instead of guessing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from sdp_expect.base.errors import Location
from sdp_expect.base.spark_version import Release, spark_has

__all__ = [
    "EARLY_BINDING_RELATIONS",
    "EarlyRead",
    "dataset_reads",
    "early_reads",
    "messages",
    "table_name",
]


@dataclass(frozen=True)
class _Method:
    """A DataFrame method whose plan node makes Spark Connect analyse its input."""

    relation: str
    """The Spark Connect relation (protobuf message) the method builds."""
    rewrite: str
    """How to write the same without the method (shown in SDPX-DEF-110)."""
    fixed_in: Optional[Release] = None
    """The Spark release from which the method no longer binds early, if any."""


_SELECT = ("select only the columns you keep, each by name, or selectExpr(...) with the "
           "SQL of each column")

EARLY_BINDING_RELATIONS: dict[str, _Method] = {
    method.relation: method
    for method in [
        _Method("WithColumns",
                "select('*', <expression>.alias('<new column>')) for a new column; to "
                "replace a column, select every column by name with the new expression "
                "in its place (or selectExpr('*', '<sql> AS <new column>'))"),
        _Method("WithColumnsRenamed",
                "select every column by name with col('<old>').alias('<new>') in its place "
                "(or selectExpr('<old> AS <new>', ...))"),
        _Method("Drop", "drop the columns by name (drop('<c>') or drop(col('<c>'))), which "
                        "sdp-expect makes wait; or select the columns you keep"),
        _Method("ToSchema", "select each column with col('<name>').cast('<type>')"),
        _Method("Deduplicate",
                "spark.sql('SELECT DISTINCT * FROM <dataset>') for distinct rows, or "
                "groupBy(<key columns>).agg(...) to keep one row per key",
                fixed_in=(4, 3)),
        _Method("NAFill", "name the columns: fillna(<value>, subset=[...]) or fillna({'<c>': "
                          "<value>}), which sdp-expect makes wait; or select "
                          "coalesce(col('<c>'), lit(<value>)).alias('<c>') for each column to "
                          "fill, and the other columns by name"),
        _Method("NADrop", "name the columns: dropna(subset=[...]), which sdp-expect makes "
                          "wait; or filter('<c1> IS NOT NULL AND <c2> IS NOT NULL ...')"),
        _Method("NAReplace", "select when(col('<c>') == <old>, <new>).otherwise(col('<c>'))"
                             ".alias('<c>') for each column, and the other columns by name"),
        _Method("StatDescribe", "groupBy().agg(count(...), mean(...), ...) with the statistics "
                                "you need"),
        _Method("StatSummary", "groupBy().agg(...) with the statistics you need"),
        _Method("StatCrosstab", "groupBy('<c1>').pivot('<c2>', [<values>]).count()"),
        _Method("StatFreqItems", "groupBy('<c>').count() and filter the frequent values"),
        _Method("StatSampleBy", "filter(...) with rand(<seed>) per stratum"),
        _Method("Transpose", "groupBy().pivot(...) with the values listed"),
        _Method("WithWatermark",
                "apply withWatermark to the source in the dataset that reads it from outside "
                "the pipeline, or aggregate without a watermark in a materialized view"),
    ]
}
"""Relations that bind a read of a pipeline dataset to the catalog, by message name.

Measured on Spark 4.1, 4.2 and 4.3 (``docs/early-binding.md``); ``fixed_in``
says from which release one no longer does.
"""


@dataclass(frozen=True)
class EarlyRead:
    """A method over a read of a table, found in a query's plan.

    :param method: The DataFrame method as the user most likely wrote it
        (``withColumn``, ``dropDuplicates``, ...).
    :param table: The table name as read (``bronze``, ``db.bronze``).
    :param plan_id: The Spark Connect plan id of the method's node, which
        :mod:`sdp_expect.spark.registration` maps to the line that called it.
    :param rewrite: How to write the same without the method.
    """

    method: str
    table: str
    plan_id: Optional[int]
    rewrite: str


def table_name(identifier: str) -> str:
    """The last part of a multi-part table identifier, unquoted (``a.`b.c``` -> ``b.c``)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    index = 0
    while index < len(identifier):
        char = identifier[index]
        if char == "`":
            if quoted and identifier[index + 1:index + 2] == "`":
                current.append("`")
                index += 1
            else:
                quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts[-1].strip()


def messages(message: Any) -> Iterator[Any]:
    """Every protobuf message inside ``message`` (itself included), iteratively."""
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


def _sql_names(sql_text: str) -> list[str]:
    """Every identifier of a SQL text that could name a table (conservative)."""
    from sdp_expect.base.sqltokens import TokenKind, tokenize

    try:
        tokens = tokenize(sql_text)
    except ValueError:
        return []
    return [table_name(t.value) for t in tokens
            if t.kind in (TokenKind.IDENT, TokenKind.QUOTED_IDENT)]


def dataset_reads(relation: Any) -> list[str]:
    """The table names a relation reads: ``spark.read.table``, ``readStream.table``, SQL.

    Names in SQL text are every identifier of the text, so a column that shares
    a dataset's name counts too: the check errs towards naming a read.
    """
    names: list[str] = []
    for message in messages(relation):
        kind = message.DESCRIPTOR.name
        if kind == "NamedTable":
            names.append(table_name(message.unparsed_identifier))
        elif kind == "SQL":
            names.extend(_sql_names(message.query))
    return names


def _method_name(message: Any) -> str:
    """The DataFrame method that most likely built ``message``."""
    kind = message.DESCRIPTOR.name
    if kind == "WithColumns":
        if any(alias.HasField("metadata") for alias in message.aliases):
            return "withMetadata"
        return "withColumn" if len(message.aliases) == 1 else "withColumns"
    if kind == "WithColumnsRenamed":
        count = len(message.renames) + len(message.rename_columns_map)
        return "withColumnRenamed" if count == 1 else "withColumnsRenamed"
    if kind == "Deduplicate":
        if message.within_watermark:
            return "dropDuplicatesWithinWatermark"
        return "distinct" if message.all_columns_as_keys else "dropDuplicates"
    return {
        "Drop": "drop", "ToSchema": "to", "NAFill": "fillna", "NADrop": "dropna",
        "NAReplace": "replace", "StatDescribe": "describe", "StatSummary": "summary",
        "StatCrosstab": "crosstab", "StatFreqItems": "freqItems", "StatSampleBy": "sampleBy",
        "Transpose": "transpose", "WithWatermark": "withWatermark",
    }[kind]


def early_reads(relation: Any, spark_version: Optional[str] = None) -> list[EarlyRead]:
    """Each early-binding method in ``relation`` applied over a read of a table.

    :param relation: A Spark Connect ``Relation`` message (a query's unresolved plan).
    :param spark_version: The Spark that plans the flows (default: the installed pyspark).
    """
    found: list[EarlyRead] = []
    seen: set[tuple[str, str, Optional[int]]] = set()
    for message in messages(relation):
        if message.DESCRIPTOR.name != "Relation":
            continue
        kind = message.WhichOneof("rel_type")
        if kind is None:
            continue
        node = getattr(message, kind)
        spec = EARLY_BINDING_RELATIONS.get(node.DESCRIPTOR.name)
        if spec is None or (spec.fixed_in is not None
                            and spark_has(spec.fixed_in, spark_version)):
            continue
        plan_id = message.common.plan_id if message.common.HasField("plan_id") else None
        for table in dataset_reads(node.input):
            key = (node.DESCRIPTOR.name, table, plan_id)
            if key not in seen:
                seen.add(key)
                found.append(EarlyRead(_method_name(node), table, plan_id, spec.rewrite))
    return found


def describe(read: EarlyRead, reader: str, where: Optional[Location]) -> str:
    """The detail of SDPX-DEF-110 for one early read by dataset ``reader``."""
    at = f" (called at {where})" if where is not None else ""
    return (f"{read.method}(){at} is applied to a read of pipeline dataset {read.table!r}: "
            f"open-source SDP then binds {reader!r} to the catalog table {read.table!r} "
            f"left by the previous update instead of waiting for this update's, so "
            f"{reader!r} comes out stale or empty (or, on the first update, fails with "
            f"TABLE_OR_VIEW_NOT_FOUND)")


