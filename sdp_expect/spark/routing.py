"""Early-bound reads made to wait: a query's plan rewritten so that each read under an
early-binding method goes through the pipeline's graph (docs/early-binding.md).

Spark Connect plans some DataFrame methods by analysing their input while the flow is
registered (:mod:`sdp_expect.spark.early_binding`); over a read of a pipeline dataset that
analysis binds the flow to the previous update's catalog table. A read of a name that
exists only in the graph cannot be bound that way. So this module rewrites the query's
unresolved plan (Spark Connect protobuf messages), bottom-up, before the flow is
registered:

* every read of a table (``spark.read.table``, ``readStream.table``, ``spark.table``,
  ``spark.sql(...)``) under such a method becomes a read of a **route view**, a
  graph-only temporary view whose query is that read (one per read, per graph);
* ``withColumn(s)``, ``withMetadata`` and ``withColumnRenamed(s)`` then stay as they
  are: when their input cannot be analysed, Spark plans them lazily, in the graph;
* ``fillna`` on named columns becomes ``withColumns`` over the same input, and
  ``dropna`` on named columns a ``filter``: both need no column list, only
  expressions that take each column's type from the column itself;
* ``drop``, ``distinct`` and ``dropDuplicates`` need every column: their input goes into
  a route view, and the method becomes SQL text over that view (Spark plans SQL text
  lazily): ``SELECT * FROM v |> DROP c``, ``SELECT DISTINCT * FROM v``.

What cannot be rewritten exactly is left as it is, and
:func:`sdp_expect.spark.registration.check_reads` stops it with SDPX-DEF-110 as before (the
methods that need the whole column list or the data, such as ``fillna`` without
columns, ``describe`` or ``transpose``). No request is sent to Spark.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from sdp_expect.base.names import ROUTE_PREFIX
from sdp_expect.base.spark_version import spark_has
from sdp_expect.base.sqltokens import mentions_stream
from sdp_expect.spark.early_binding import EARLY_BINDING_RELATIONS, dataset_reads, messages

__all__ = ["RouteView", "Router", "handles", "is_route_name", "reads_stream"]

"""The names of the route views: reserved, as every ``_sdpx_`` name of a graph."""

_HIDDEN_COLUMN = "__sdpx_dropped_"
"""Columns that exist only inside one rewritten ``drop`` (renamed, then dropped)."""

_NUMERIC_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double")
_LAZY = {"WithColumns", "WithColumnsRenamed"}
"""Methods that Spark plans lazily when their input cannot be analysed (SPARK-53505)."""


_ALWAYS = frozenset({"withColumn", "withColumns", "withMetadata", "withColumnRenamed",
                     "withColumnsRenamed"})
_NAMED = frozenset({"drop", "fillna", "dropna"})
_BATCH = frozenset({"distinct", "dropDuplicates", "drop_duplicates"})


def handles(method: str, *, named_columns: bool, streaming: bool) -> bool:
    """Whether :class:`Router` makes ``method`` over a read of a pipeline dataset wait.

    :param method: The DataFrame method as written (``withColumn``, ``fillna``, ...).
    :param named_columns: Whether the call names its columns (``drop("c")``,
        ``fillna({"c": 0})``, ``dropna(subset=["c"])``); without them the method needs
        the input's column list.
    :param streaming: Whether the read is a stream (deduplication is rewritten for
        batch reads only).
    """
    if method in _ALWAYS:
        return True
    if method in _NAMED:
        return named_columns
    return method in _BATCH and not streaming


def is_route_name(name: str) -> bool:
    """Whether ``name`` (a table name as read) is one of the route views."""
    return name.lower().startswith(ROUTE_PREFIX)


@dataclass(frozen=True)
class RouteView:
    """A graph-only temporary view that a rewritten plan reads.

    :param name: The view's name (:data:`ROUTE_PREFIX`...).
    :param relation: The view's query, a Spark Connect ``Relation`` message.
    :param streaming: Whether the view is read as a stream.
    :param reads: The table the view stands for, as the user's code names it (through
        route views over route views, the innermost read); ``None`` for SQL text.
    """

    name: str
    relation: Any
    streaming: bool
    reads: Optional[str] = None


@dataclass
class Router:
    """Rewrites the plans of one graph; remembers its route views, one per distinct read.

    :param spark_version: The Spark that plans the flows (default: the installed pyspark).
    """

    spark_version: Optional[str] = None
    views: dict[bytes, RouteView] = field(default_factory=dict)
    _new: list[RouteView] = field(default_factory=list)
    _sql_views: dict[str, str] = field(default_factory=dict)
    """SQL text this router wrote over a route view -> that view's name."""
    _drops: int = 0

    def take_new(self) -> list[RouteView]:
        """The route views made since the last call, for the caller to register."""
        new, self._new = self._new, []
        return new

    def views_read(self, relation: Any) -> dict[str, Optional[str]]:
        """The route views ``relation`` reads, directly or through other route views, each
        with the table it stands for (:attr:`RouteView.reads`)."""
        by_name = {view.name: view for view in self.views.values()}
        found: dict[str, Optional[str]] = {}
        pending = [relation]
        while pending:
            for message in messages(pending.pop()):
                view = by_name.get(self._view_name_read(message) or "")
                if view is not None and view.name not in found:
                    found[view.name] = view.reads
                    pending.append(view.relation)
        return found

    def _view_name_read(self, message: Any) -> Optional[str]:
        """The route view that ``message`` reads (a table read, or SQL text this router
        wrote over a view), if it reads one."""
        if message.DESCRIPTOR.name == "SQL":
            return self._sql_views.get(message.query)
        if message.DESCRIPTOR.name == "NamedTable":
            name = str(message.unparsed_identifier).strip("`")
            return name if is_route_name(name) else None
        return None

    def _table_read(self, query: Any) -> Optional[str]:
        """The table a new route view of ``query`` stands for (:attr:`RouteView.reads`)."""
        by_name = {view.name: view for view in self.views.values()}
        for message in messages(query):
            inner = by_name.get(self._view_name_read(message) or "")
            if inner is not None:
                return inner.reads
            if message.DESCRIPTOR.name == "SQL":
                return None
            if message.DESCRIPTOR.name == "NamedTable":
                return str(message.unparsed_identifier)
        return None

    def route(self, relation: Any) -> Any:
        """A copy of ``relation`` in which every early-binding method that can be made to
        wait does (the relation itself when there is none)."""
        if not any(self._binds_early(message) for message in _relations(relation)):
            return relation
        routed = type(relation)()
        routed.CopyFrom(relation)
        self._rewrite(routed)
        _forget_moved_plan_ids(routed)
        return routed

    # -- the walk ------------------------------------------------------------------------
    def _binds_early(self, relation: Any) -> bool:
        kind = relation.WhichOneof("rel_type")
        if kind is None:
            return False
        node = getattr(relation, kind)
        spec = EARLY_BINDING_RELATIONS.get(node.DESCRIPTOR.name)
        if spec is None or (spec.fixed_in is not None
                            and spark_has(spec.fixed_in, self.spark_version)):
            return False
        return bool(node.HasField("input") and dataset_reads(node.input))

    def _rewrite(self, relation: Any) -> None:
        """Rewrite ``relation`` in place, its inputs first."""
        kind = relation.WhichOneof("rel_type")
        if kind is None:
            return
        node = getattr(relation, kind)
        for child in _child_relations(node):
            self._rewrite(child)
        if not self._binds_early(relation):
            return
        rewrite = _REWRITES.get(node.DESCRIPTOR.name)
        if rewrite is not None:
            rewrite(self, relation, node)

    def _route_reads(self, relation: Any) -> None:
        """Replace, in place, each table read inside ``relation`` by a read of its view."""
        kind = relation.WhichOneof("rel_type")
        if kind == "read" and relation.read.HasField("named_table"):
            if not is_route_name(relation.read.named_table.unparsed_identifier):
                self._replace_by_view(relation, relation.read.is_streaming)
            return
        if kind == "sql":
            self._replace_by_view(relation, mentions_stream(relation.sql.query))
            return
        if kind is None:
            return
        for child in _child_relations(getattr(relation, kind)):
            self._route_reads(child)

    def _replace_by_view(self, relation: Any, streaming: bool) -> RouteView:
        """Replace ``relation`` in place by a read of a route view of it (same plan id)."""
        view = self._view_of(relation, streaming)
        plan_id = relation.common.plan_id if relation.common.HasField("plan_id") else None
        relation.Clear()
        if plan_id is not None:
            relation.common.plan_id = plan_id
        relation.read.named_table.unparsed_identifier = _quoted(view.name)
        relation.read.is_streaming = streaming
        return view

    def _view_of(self, relation: Any, streaming: bool) -> RouteView:
        query = type(relation)()
        query.CopyFrom(relation)
        query.common.ClearField("plan_id")
        key = query.SerializeToString(deterministic=True) + (b"s" if streaming else b"b")
        view = self.views.get(key)
        if view is None:
            reads = self._table_read(query)
            view = RouteView(f"{ROUTE_PREFIX}{_label(reads)}_{len(self.views) + 1}", query,
                             streaming, reads)
            self.views[key] = view
            self._new.append(view)
        return view

    # -- the rewrites, one per method ------------------------------------------------------
    def _lazy(self, relation: Any, node: Any) -> None:
        """withColumn(s), withMetadata, withColumnRenamed(s): reads through views suffice."""
        self._route_reads(node.input)

    def _fill(self, relation: Any, node: Any) -> None:
        """fillna / na.fill on named columns: withColumns, each column's type kept."""
        if not node.cols or any(not _plain_name(c) for c in node.cols):
            return
        values = [_literal_value(v) for v in node.values]
        if any(v is None for v in values):
            return
        if len(values) == 1:  # fill(value, subset): only columns of the value's kind
            pairs = [(c, values[0], True) for c in node.cols]
        elif len(values) == len(node.cols):  # fill({column: value}): cast to the column
            pairs = [(c, v, False) for c, v in zip(node.cols, values, strict=True)]
        else:
            return
        source = type(relation)()
        source.CopyFrom(node.input)
        self._route_reads(source)
        plan_id = relation.common.plan_id if relation.common.HasField("plan_id") else None
        relation.Clear()
        if plan_id is not None:
            relation.common.plan_id = plan_id
        relation.with_columns.input.CopyFrom(source)
        for column, value, by_kind in pairs:
            alias = relation.with_columns.aliases.add()
            alias.name.append(column)
            alias.expr.expression_string.expression = _filled(column, value, by_kind)

    def _drop_nulls(self, relation: Any, node: Any) -> None:
        """dropna / na.drop on named columns: a filter (Spark plans filters lazily)."""
        if not node.cols or any(not _plain_name(c) for c in node.cols):
            return
        least = node.min_non_nulls if node.HasField("min_non_nulls") else len(node.cols)
        present = " + ".join(f"(CASE WHEN {_missing(c)} THEN 0 ELSE 1 END)" for c in node.cols)
        source = type(relation)()
        source.CopyFrom(node.input)
        plan_id = relation.common.plan_id if relation.common.HasField("plan_id") else None
        relation.Clear()
        if plan_id is not None:
            relation.common.plan_id = plan_id
        relation.filter.input.CopyFrom(source)
        relation.filter.condition.expression_string.expression = f"({present}) >= {least}"

    def _drop(self, relation: Any, node: Any) -> None:
        """drop: every named column renamed to a hidden one, set (so that it exists), and
        dropped in SQL text; a column that does not exist is ignored, as drop does."""
        names = list(node.column_names)
        for expression in node.columns:
            name = _attribute_name(expression)
            if name is None:
                return
            names.append(name)
        if not names or any(not _plain_name(n) for n in names):
            return
        hidden = []
        inner = type(relation)()
        inner.CopyFrom(node.input)
        self._route_reads(inner)
        renamed = type(relation)()
        renamed.with_columns_renamed.input.CopyFrom(inner)
        for name in names:
            self._drops += 1
            hidden.append(f"{_HIDDEN_COLUMN}{self._drops}")
            rename = renamed.with_columns_renamed.renames.add()
            rename.col_name = name
            rename.new_col_name = hidden[-1]
        present = type(relation)()
        present.with_columns.input.CopyFrom(renamed)
        for column in hidden:
            alias = present.with_columns.aliases.add()
            alias.name.append(column)
            alias.expr.expression_string.expression = "NULL"
        self._as_sql(relation, present,
                     lambda source: f"SELECT * FROM {source} |> DROP "
                                    + ", ".join(_quoted(c) for c in hidden))

    def _deduplicate(self, relation: Any, node: Any) -> None:
        """distinct / dropDuplicates (batch): SQL text over a view of the input."""
        if node.within_watermark or reads_stream(node.input):
            return
        keys = list(node.column_names)
        if node.all_columns_as_keys or not keys:
            self._as_sql(relation, node.input, lambda source: f"SELECT DISTINCT * FROM {source}")
            return
        if any(not _plain_name(k) for k in keys):
            return
        group = ", ".join(_quoted(k) for k in keys)
        self._as_sql(relation, node.input,
                     lambda source: f"SELECT __sdpx_row.* FROM (SELECT first(struct(*)) AS "
                                    f"__sdpx_row FROM {source} GROUP BY {group})")

    def _as_sql(self, relation: Any, source: Any, text: Callable[[str], str]) -> None:
        """Replace ``relation`` by SQL text ``text(<view>)`` over a route view of ``source``."""
        query = type(relation)()
        query.CopyFrom(source)
        self._route_reads(query)
        streaming = reads_stream(query)
        view = self._view_of(query, streaming)
        name = _quoted(view.name)
        plan_id = relation.common.plan_id if relation.common.HasField("plan_id") else None
        relation.Clear()
        if plan_id is not None:
            relation.common.plan_id = plan_id
        relation.sql.query = text(f"STREAM({name})" if streaming else name)
        self._sql_views[relation.sql.query] = view.name


_REWRITES: dict[str, Callable[[Router, Any, Any], None]] = {
    "WithColumns": Router._lazy,
    "WithColumnsRenamed": Router._lazy,
    "NAFill": Router._fill,
    "NADrop": Router._drop_nulls,
    "Drop": Router._drop,
    "Deduplicate": Router._deduplicate,
}
"""The early-binding methods that have an exact rewrite, by Spark Connect message."""


# --------------------------------------------------------------------------- plan helpers
def _relations(relation: Any) -> Iterator[Any]:
    for message in messages(relation):
        if message.DESCRIPTOR.name == "Relation":
            yield message


def _child_relations(node: Any) -> list[Any]:
    """The relations directly inside a relation's node (its inputs)."""
    from google.protobuf.message import Message

    children: list[Any] = []
    for descriptor, value in node.ListFields():
        if descriptor.message_type is None or descriptor.message_type.name != "Relation":
            continue
        if isinstance(value, Message):
            children.append(value)
        else:  # a repeated field of relations
            children.extend(value)
    return children


def reads_stream(relation: Any) -> bool:
    """Whether the unresolved plan ``relation`` reads a stream: a streaming read, or
    ``STREAM`` in SQL text. No request is sent to Spark."""
    for message in messages(relation):
        name = message.DESCRIPTOR.name
        if name == "Read" and message.is_streaming:
            return True
        if name == "SQL" and mentions_stream(message.query):
            return True
    return False


def _forget_moved_plan_ids(relation: Any) -> None:
    """Column references by DataFrame (``df["c"]``) whose DataFrame moved into a view
    are resolved by name instead: their plan id is no longer in the flow's plan."""
    present = {r.common.plan_id for r in _relations(relation) if r.common.HasField("plan_id")}
    for message in messages(relation):
        if (message.DESCRIPTOR.name in ("UnresolvedAttribute", "UnresolvedStar")
                and message.HasField("plan_id") and message.plan_id not in present):
            message.ClearField("plan_id")


def _attribute_name(expression: Any) -> Optional[str]:
    """The column name of ``col("c")`` / ``df["c"]``, or None for another expression."""
    if expression.WhichOneof("expr_type") != "unresolved_attribute":
        return None
    attribute = expression.unresolved_attribute
    if attribute.is_metadata_column:
        return None
    return str(attribute.unparsed_identifier)


def _label(reads: Optional[str]) -> str:
    """A readable part of a route view's name: the table it stands for
    (:attr:`RouteView.reads`), if one."""
    if reads is None:
        return "query"
    last = reads.split(".")[-1]
    return re.sub(r"[^0-9A-Za-z_]", "_", last.strip("`"))[:40].lower()


# --------------------------------------------------------------------------- SQL pieces
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _plain_name(name: str) -> bool:
    """A column name that means the same in every method: one part, no quoting."""
    return bool(_PLAIN.fullmatch(name))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal_value(literal: Any) -> Optional[object]:
    """The Python value of a fill value (long, double, NaN and infinities included,
    string, boolean), or None."""
    kind = literal.WhichOneof("literal_type")
    if kind in ("long", "integer", "short", "byte", "string", "boolean"):
        return getattr(literal, kind)  # type: ignore[no-any-return]
    if kind in ("double", "float"):
        return float(getattr(literal, kind))
    return None


def _kind_test(column: str, value: object) -> str:
    """SQL that is true when ``column``'s type is of the kind fill(value) fills."""
    of = f"typeof({_quoted(column)})"
    if isinstance(value, bool):
        return f"{of} = 'boolean'"
    if isinstance(value, str):
        return f"({of} = 'string' OR {of} LIKE 'string collate%')"
    numeric = ", ".join(f"'{t}'" for t in _NUMERIC_TYPES)
    return f"({of} IN ({numeric}) OR {of} LIKE 'decimal(%')"


def _missing(column: str) -> str:
    """SQL that is true when ``column`` is null, or NaN in a float or double column (as
    na.fill and na.drop count them), whatever the column's type."""
    name = _quoted(column)
    return (f"({name} IS NULL OR (typeof({name}) IN ('float', 'double') "
            f"AND CAST({name} AS STRING) = 'NaN'))")


def _filled(column: str, value: object, by_kind: bool) -> str:
    """SQL for ``column`` with its missing values replaced by ``value`` cast to its type."""
    name = _quoted(column)
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no NaN or infinity: the double itself as a variant.
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        variant = f"CAST(CAST('{text}' AS DOUBLE) AS VARIANT)"
    else:
        variant = f"parse_json({_sql_string(json.dumps(value))})"
    as_column_type = f"variant_get({variant}, '$', typeof({name}))"
    filled = f"CASE WHEN {_missing(column)} THEN {as_column_type} ELSE {name} END"
    if not by_kind:
        return filled
    return f"CASE WHEN {_kind_test(column, value)} THEN {filled} ELSE {name} END"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
