"""The statement model of a Databricks SQL pipeline file.

:mod:`sdp_expect.dbsql.parse` builds these values; :mod:`sdp_expect.emit.sql`
writes them as open-source SDP SQL. User text (queries, column definitions,
comments, table properties) is kept exactly as written, except for what open
source cannot read (``LIVE.`` qualifiers), which the parser already removed.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Optional, Union

from sdp_expect.base.errors import Location
from sdp_expect.core.model import DatasetKind, DatasetRules

__all__ = [
    "DatasetStatement",
    "DatasetType",
    "FlowStatement",
    "Name",
    "PassThrough",
    "Position",
    "SetStatement",
    "SqlText",
    "Statement",
    "StatementSummary",
    "UseStatement",
    "quote_identifier",
    "summarize",
]

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_identifier(part: str) -> str:
    """One name part as SQL: as is when it is a plain identifier, else in backticks.

    :param part: The name part, without quotes.
    """
    if _PLAIN_IDENTIFIER.fullmatch(part):
        return part
    return "`" + part.replace("`", "``") + "`"


@dataclass(frozen=True)
class Position(Location):
    """Where something starts in a SQL file: a :class:`~sdp_expect.base.errors.Location`
    that always has a line and a column, shown ``file:line`` (the statement's line, as
    the translation's comments name it); an error takes :meth:`at_line` or
    :meth:`at_column`.

    :param file: The file, as shown to the user.
    :param line: 1-based line.
    :param column: 1-based column.
    """

    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def precise(self) -> str:
        """``file:line:column``."""
        return f"{self.file}:{self.line}:{self.column}"

    def at_line(self) -> Location:
        """The file and line, for an error about what starts here (shown ``file:line``)."""
        return Location(self.file, self.line)

    def at_column(self) -> Location:
        """The file, line and column (shown ``file:line:column``)."""
        return Location(self.file, self.line, self.column)


@dataclass(frozen=True)
class SqlText:
    """A piece of user SQL kept as written, and where it starts.

    :param text: The text, from its first token to its last.
    :param position: Where its first token is in the file.
    """

    text: str
    position: Position


@dataclass(frozen=True)
class Name:
    """A dataset or flow name.

    :param parts: The name's parts without quotes, e.g. ``("sales", "orders")``.
    :param text: The name as written (``LIVE.`` removed), e.g. ```sales`.orders``.
    """

    parts: tuple[str, ...]
    text: str

    @property
    def dataset(self) -> str:
        """The name as the expectation model and the Python API spell it: parts joined by dots."""
        return ".".join(self.parts)

    def sibling(self, name: str) -> str:
        """SQL for a companion called ``name`` (from :mod:`sdp_expect.core.planner`).

        A derived name (``<dataset>_quarantine``, ``<flow>_to_dq_batches``) keeps
        this name's catalog and schema qualifiers, its last part quoted as
        needed; any other name (a quarantine named by the user) is written as
        the Python API would pass it: dotted parts as they are, or else quoted
        as one part.

        :param name: The companion's name, e.g. ``orders_quarantine`` or
            ``sales.orders_quarantine``.
        """
        if name.startswith(self.dataset):
            last = self.parts[-1] + name[len(self.dataset):]
            return ".".join([*(quote_identifier(p) for p in self.parts[:-1]),
                             quote_identifier(last)])
        if all(_PLAIN_IDENTIFIER.fullmatch(part) for part in name.split(".")):
            return name
        return quote_identifier(name)


class DatasetType(enum.Enum):
    """What a ``CREATE`` statement defines, as open-source SDP SQL spells it."""

    MATERIALIZED_VIEW = "MATERIALIZED VIEW"
    STREAMING_TABLE = "STREAMING TABLE"
    TEMPORARY_VIEW = "TEMPORARY VIEW"
    VIEW = "VIEW"
    """A persisted view (``CREATE VIEW`` without ``TEMPORARY`` or ``LIVE``)."""

    @property
    def kind(self) -> DatasetKind:
        """The compiler's kind: a persisted view has a view's expectations (no companions)."""
        return {
            DatasetType.MATERIALIZED_VIEW: DatasetKind.MATERIALIZED_VIEW,
            DatasetType.STREAMING_TABLE: DatasetKind.STREAMING_TABLE,
            DatasetType.TEMPORARY_VIEW: DatasetKind.TEMPORARY_VIEW,
            DatasetType.VIEW: DatasetKind.TEMPORARY_VIEW,
        }[self]


@dataclass
class DatasetStatement:
    """``CREATE ... {MATERIALIZED VIEW | STREAMING TABLE | [TEMPORARY] VIEW}``.

    :param type: What it defines.
    :param name: The dataset's name.
    :param position: Where the statement starts.
    :param rules: The expectations (``CONSTRAINT ... EXPECT``, then those of
        ``'sdp_expect.rules'``) and the per-dataset quarantine and metrics settings.
    :param checked: True when the statement says anything about expectations
        (a ``CONSTRAINT ... EXPECT`` or an ``sdp_expect.*`` property), as a
        stack of expectation decorators does in Python.
    :param columns: The column definitions of the parenthesised list, as written.
    :param comment: The ``COMMENT`` string literal as written.
    :param table_properties: The properties passed on, each as written.
    :param partitioned_by: The ``PARTITIONED BY`` list as written, with its parentheses.
    :param cluster_by: The ``CLUSTER BY`` list as written, with its parentheses.
    :param using: The ``USING`` format as written.
    :param query: The query after ``AS``; None for a streaming table that flows write.
    :param private: True when written ``PRIVATE`` (or ``TEMPORARY`` on a table).
    :param written_as: The statement's opening keywords as written, e.g.
        ``CREATE OR REFRESH LIVE TABLE``, for the translation's comments.
    """

    type: DatasetType
    name: Name
    position: Position
    rules: DatasetRules
    checked: bool = False
    columns: list[str] = field(default_factory=list)
    comment: Optional[str] = None
    table_properties: list[str] = field(default_factory=list)
    partitioned_by: Optional[str] = None
    cluster_by: Optional[str] = None
    using: Optional[str] = None
    query: Optional[SqlText] = None
    private: bool = False
    written_as: str = ""


@dataclass
class FlowStatement:
    """``CREATE FLOW name [COMMENT '...'] AS INSERT INTO target BY NAME query``.

    :param name: The flow's name.
    :param target: The dataset it writes into.
    :param position: Where the statement starts.
    :param query: The query after ``BY NAME``.
    :param comment: The ``COMMENT`` string literal as written.
    """

    name: Name
    target: Name
    position: Position
    query: SqlText
    comment: Optional[str] = None


@dataclass
class SetStatement:
    """``SET key = value`` (or any other ``SET``), passed on as written.

    :param text: The statement as written.
    :param position: Where it starts.
    :param key: The key, when the statement sets one.
    :param value: The value as written (quotes kept), when it sets one.
    """

    text: str
    position: Position
    key: Optional[str] = None
    value: Optional[str] = None


@dataclass
class UseStatement:
    """``USE [CATALOG | SCHEMA | DATABASE] name``, passed on as written.

    :param text: The statement as written.
    :param position: Where it starts.
    """

    text: str
    position: Position


@dataclass
class PassThrough:
    """Any other statement, passed on as written (``LIVE.`` removed) for Spark to judge.

    :param text: The statement.
    :param position: Where it starts.
    :param flow_target: For an ``AUTO CDC`` flow (Spark 4.3+), the table it writes.
    """

    text: str
    position: Position
    flow_target: Optional[str] = None


Statement = Union[DatasetStatement, FlowStatement, SetStatement, UseStatement, PassThrough]
"""One statement of a Databricks SQL file."""


@dataclass(frozen=True)
class StatementSummary:
    """What one statement of a file is, for listings and comparisons.

    :param kind: ``materialized view``, ``streaming table``, ``temporary view``,
        ``view``, ``flow``, ``auto cdc flow``, ``set``, ``use`` or ``other``
        (a statement passed on for Spark to judge).
    :param name: The dataset or flow (as the Python API spells it), the key of
        a ``SET``; None otherwise.
    :param position: Where the statement starts.
    """

    kind: str
    name: Optional[str]
    position: Position

    def __str__(self) -> str:
        named = f" {self.name}" if self.name is not None else ""
        return f"{self.position}: {self.kind}{named}"


def summarize(statement: Statement) -> StatementSummary:
    """The :class:`StatementSummary` of one statement.

    :param statement: A statement read by :func:`sdp_expect.dbsql.parse.parse`.
    """
    if isinstance(statement, DatasetStatement):
        return StatementSummary(statement.type.value.lower(), statement.name.dataset,
                                statement.position)
    if isinstance(statement, FlowStatement):
        return StatementSummary("flow", statement.name.dataset, statement.position)
    if isinstance(statement, SetStatement):
        return StatementSummary("set", statement.key, statement.position)
    if isinstance(statement, UseStatement):
        return StatementSummary("use", None, statement.position)
    if statement.flow_target is not None:
        return StatementSummary("auto cdc flow", statement.flow_target, statement.position)
    return StatementSummary("other", None, statement.position)
