"""Write the statement model as open-source SDP SQL.

:class:`Translator` turns the statements of Databricks SQL files into SQL
that open-source Spark Declarative Pipelines reads, for one pipeline graph:
it builds the same datasets and flows, with the same names and kinds, as the
Python API of :mod:`sdp_expect.pipelines` does: it asks :mod:`sdp_expect.core.planner`
what each dataset with expectations becomes (its companions, flows, check
views, the definition-time checks) and writes that plan as SQL, each flow's
``SELECT`` written by :class:`~sdp_expect.core.compiler.RuleLogic`. What a rule
means, and what the graph holds, is decided there, never here.

- A materialized view with expectations becomes the filtered view, plus
  ``<name>_quarantine`` and ``<name>_dq_metrics`` materialized views.
- A streaming table becomes the filtered table, a quarantine streaming table
  fed by the flow ``<flow>_to_quarantine``, a batch log ``<name>_dq_batches``
  fed by ``<flow>_to_dq_batches``, and ``<name>_dq_metrics`` counted from the
  log. Each ``CREATE FLOW`` into a streaming table with expectations gets its
  own two companion flows, as ``append_flow`` does in Python.
- A temporary view keeps only the filtered records.
- The flows' own Spark settings (the plan's ``spark_conf``: no retries for fail
  expectations, ``spark.sql.pipelines.maxFlowRetryAttempts = 0``; one shuffle
  partition for a batch log's flow, ``spark.sql.shuffle.partitions = 1``) are
  ``SET`` before them and ``SET`` back to the value in effect before, as the
  Python API passes them as the flows' ``spark_conf``.

:class:`Translation` is the result for one file: the text, and where each
rendered line came from, so that Spark's errors about the translated text can
be reported at the Databricks SQL file's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from sdp_expect.base.definitions import record_dataset
from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.options import (
    KEY_METRICS,
    KEY_NULL_RESULT,
    KEY_QUARANTINE,
    PipelineOptions,
    read_options,
)
from sdp_expect.base.sqltokens import mentions_stream, sql_string
from sdp_expect.core.compiler import RuleLogic
from sdp_expect.core.model import DatasetKind
from sdp_expect.core.planner import (
    RETRY_KEY,
    SHUFFLE_PARTITIONS_KEY,
    DatasetDefinition,
    DatasetSpec,
    Definition,
    FlowDefinition,
    FlowSpec,
    Plan,
    PlanState,
    Role,
    RuleCheck,
    Step,
    TableDefinition,
    plan,
    plan_auto_cdc_flow,
)
from sdp_expect.dbsql.fixes import worded_for_sql
from sdp_expect.dbsql.statements import (
    DatasetStatement,
    FlowStatement,
    Name,
    PassThrough,
    Position,
    SetStatement,
    SqlText,
    Statement,
    StatementSummary,
    UseStatement,
    summarize,
)
from sdp_expect.emit.check_views import record_check, rule_view_select

__all__ = ["DEFAULT_FLOW_SETTINGS", "DEFAULT_RETRY_ATTEMPTS", "RETRY_KEY", "RenderedStatement",
           "Translation", "Translator", "check_select", "flow_select", "options_conf"]

DEFAULT_RETRY_ATTEMPTS = "2"
"""Its default in open-source SDP."""
DEFAULT_FLOW_SETTINGS: dict[str, str] = {RETRY_KEY: DEFAULT_RETRY_ATTEMPTS,
                                         SHUFFLE_PARTITIONS_KEY: "200"}
"""The Spark settings that sdp-expect sets on some of its flows, with Spark's defaults:
the translation sets them back to the value in effect after those flows."""
_SETTING_REASONS = {
    RETRY_KEY: "Fail expectations: a failed flow is not retried (retrying cannot help), "
               "as in the Python API.",
    SHUFFLE_PARTITIONS_KEY: "A batch log's flow counts each micro-batch as one group: one "
                            "shuffle partition, as in the Python API.",
}
SOURCE_ALIAS = "_sdpx_source"
"""The alias of the user's query inside the generated statements."""


def options_conf(options: PipelineOptions) -> dict[str, str]:
    """The ``sdp_expect.*`` configuration that gives ``options``.

    :param options: The pipeline-wide settings.
    """
    return {
        KEY_NULL_RESULT: "pass" if options.null_passes else "fail",
        KEY_QUARANTINE: "true" if options.quarantine else "false",
        KEY_METRICS: "true" if options.metrics else "false",
    }


# --------------------------------------------------------------------------------- steps

_SELECTS: dict[Step, Callable[[RuleLogic, str], str]] = {
    Step.TARGET: RuleLogic.target_select,
    Step.QUARANTINE: RuleLogic.quarantine_select,
    Step.BATCH_INPUT: RuleLogic.batch_input_select,
    Step.BATCH_LOG: RuleLogic.batch_log_select,
    Step.BATCH_LOG_BY_RECORD: RuleLogic.batch_log_record_select,
    Step.METRICS_FROM_QUERY: RuleLogic.metrics_select_from_query,
    Step.METRICS_FROM_BATCH_LOG: RuleLogic.metrics_select_from_batch_log,
}
"""Each step that a flow computes from one relation (what it reads), as a ``SELECT``."""


def _logic(plan: Plan) -> RuleLogic:
    """The compiled rules of ``plan``, with its NULL policy and update."""
    return RuleLogic(plan.rules, null_passes=plan.options.null_passes, update=plan.update)


def flow_select(plan: Plan, flow: FlowSpec, source: str, also: Optional[str] = None) -> str:
    """The ``SELECT`` of a flow of ``plan`` (one that applies rules: not
    :attr:`~sdp_expect.core.planner.Step.QUERY`, which is the query as written) from the
    relation ``source`` (what it reads; ``also``: the relation of its ``also_reads``),
    as the compiler writes it.

    :param plan: The plan the flow is of (its rules and options).
    :param flow: The flow.
    :param source: The relation it reads.
    :param also: The relation of the second dataset it reads, when it reads one.
    """
    return _select(_logic(plan), flow, source, also)


def check_select(plan: Plan, check: RuleCheck, source: str) -> str:
    """The ``SELECT`` of a check view of ``plan`` from ``source``, the flow's query.

    :param plan: The plan the view is of.
    :param check: The view.
    :param source: The flow's query as a relation.
    """
    logic = _logic(plan)
    return logic.rule_check_select(source, check.expectation)


def _select(logic: RuleLogic, flow: FlowSpec, source: str, also: Optional[str] = None) -> str:
    if flow.step is Step.METRICS_FROM_COMPANIONS:
        assert also is not None
        return logic.metrics_select_from_companions(source, also)
    return _SELECTS[flow.step](logic, source)


# --------------------------------------------------------------------------------- result


@dataclass(frozen=True)
class RenderedStatement:
    """Where one rendered statement is in the translation, and where it came from.

    :param first_line: Line of its first token in the translation.
    :param last_line: Line of its ``;``.
    :param after_line: Line of the ``;`` before it (1 for the first statement):
        Spark counts the lines of a statement's error from there.
    :param segment: The text between the ``;`` before it and its own ``;``.
    :param origin: The Databricks SQL statement it was translated from.
    :param query: The user's query it repeats verbatim, if any.
    :param query_line: Line of that query's first line in the translation.
    """

    first_line: int
    last_line: int
    after_line: int
    segment: str
    origin: Position
    query: Optional[SqlText] = None
    query_line: Optional[int] = None

    def origin_of(self, line: int, column: Optional[int] = None) -> Position:
        """The Databricks SQL position of a translation line inside this statement.

        :param line: 1-based line in the translation.
        :param column: 0-based character offset in that line, when known.
        """
        query, start = self.query, self.query_line
        if query is not None and start is not None:
            lines = query.text.count("\n") + 1
            if start <= line < start + lines:
                original = query.position.line + (line - start)
                if column is None:
                    return Position(query.position.file, original)
                offset = query.position.column if line == start else 1
                return Position(query.position.file, original, offset + column)
        return self.origin


@dataclass
class Translation:
    """The open-source SQL of one Databricks SQL file.

    :param file: The Databricks SQL file, as shown to the user.
    :param text: The translated SQL.
    :param statements: Each rendered statement with its origin, in order.
    :param sources: The statements read from the Databricks SQL file
        (:func:`sdp_expect.dbsql.parse.parse`), in file order: what was translated.
    """

    file: str
    text: str
    statements: list[RenderedStatement] = field(default_factory=list)
    sources: list[Statement] = field(default_factory=list)

    @property
    def summary(self) -> list[StatementSummary]:
        """What each statement read is, and where it starts."""
        return [summarize(statement) for statement in self.sources]

    def explain(self, error: BaseException) -> Optional[SdpExpectError]:
        """A coded error, at the Databricks SQL file's line, for Spark's error about the text.

        Spark reports a syntax error as ``(line L, pos P)`` of the statement it
        printed under ``== SQL ==``, and other registration errors as ``Query
        defined at <file>:<line>``; both are mapped back through
        :attr:`statements`.

        :param error: What ``register_sql`` raised.
        :returns: SDPX-SQL-302 for a syntax error, SDPX-SQL-306 for another
            error Spark raised, or None when ``error`` is not Spark's.
        """
        from pyspark.errors import AnalysisException, ParseException

        if not isinstance(error, AnalysisException):
            return None
        message = str(error)
        detail = _first_line(message)
        position: Optional[Position] = None
        if isinstance(error, ParseException):
            position = self._parse_error_position(message)
        else:
            defined = re.search(r"Query defined at .*:(\d+)", message)
            if defined is not None:
                line = int(defined.group(1))
                for statement in self.statements:
                    if statement.first_line <= line <= statement.last_line:
                        position = statement.origin
                        break
        code = "SDPX-SQL-302" if isinstance(error, ParseException) else "SDPX-SQL-306"
        where = (position.at_column() if position.column > 1 else position.at_line()) \
            if position is not None else Location(self.file)
        return SdpExpectError(code, f"Spark rejected the translated statement: {detail}",
                              location=where)

    def _parse_error_position(self, message: str) -> Optional[Position]:
        found = re.search(r"\(line (\d+), pos (\d+)\)", message)
        block = message.split("== SQL ==\n", 1)
        if found is None or len(block) < 2:
            return None
        lines = [line for line in block[1].split("\n") if not re.fullmatch(r"-*\^+", line)]
        printed = "\n".join(lines).strip()
        for statement in self.statements:
            if statement.segment.strip() == printed:
                line = statement.after_line + int(found.group(1)) - 1
                return statement.origin_of(line, int(found.group(2)))
        return None


def _first_line(message: str) -> str:
    """The first line of Spark's error message, without SQLSTATE and position: the coded
    error gives the place in the Databricks SQL file instead."""
    for line in message.splitlines():
        line = line.strip()
        if line:
            line = re.sub(r"\s*SQLSTATE: \w+", "", line)
            line = re.sub(r"\s*\(line \d+, pos \d+\)", "", line)
            return line.rstrip(".")
    return "no message"


class _Writer:
    """Accumulates the translation's text and where each statement is, so that Spark's
    errors about the text can be mapped back to the Databricks SQL ``file``."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.text = ""
        self.line = 1
        self.after_line = 1
        self.after_offset = 0
        self.statements: list[RenderedStatement] = []

    def _write(self, text: str) -> None:
        self.text += text
        self.line += text.count("\n")

    def comment(self, *lines: str) -> None:
        for line in lines:
            for piece in line.split("\n"):
                self._write(f"-- {piece}".rstrip() + "\n")

    def blank(self) -> None:
        self._write("\n")

    def statement(self, text: str, origin: Position, query: Optional[SqlText] = None) -> None:
        """Write one statement (``text``, without ``;``) and its ``;``, noting where it is and
        the Databricks SQL statement it comes from; when it repeats the user's ``query``
        verbatim, an error inside the query maps to the user's own line."""
        first_line = self.line
        query_line = None
        if query is not None:
            index = text.find(query.text)
            if index >= 0:
                query_line = first_line + text.count("\n", 0, index)
        self._write(text)
        end = len(self.text)
        self.statements.append(RenderedStatement(
            first_line=first_line, last_line=self.line, after_line=self.after_line,
            segment=self.text[self.after_offset:end], origin=origin, query=query,
            query_line=query_line))
        self.after_line = self.line
        self._write(";\n")
        self.after_offset = end + 1

    def result(self, sources: list[Statement]) -> Translation:
        return Translation(self.file, self.text, self.statements, list(sources))


# --------------------------------------------------------------------------------- translator


@dataclass
class _FileScope:
    """What ``SET`` statements change for the rest of one file.

    :param options: The sdp-expect settings.
    :param in_effect: The values of the Spark settings of :data:`DEFAULT_FLOW_SETTINGS`.
    :param conf: The ``sdp_expect.*`` configuration that gives ``options``.
    """

    options: PipelineOptions
    in_effect: dict[str, str]
    conf: dict[str, str]


class Translator:
    """Translates Databricks SQL files for one pipeline graph, file by file.

    Datasets, flows and expectations are recorded in ``state`` as the Python
    API records them, so that a ``CREATE FLOW`` in SQL gets the rules of a
    streaming table declared in Python and a ``dp.append_flow`` in Python
    gets those of a table declared in SQL, and the same mistakes raise the
    same errors (SDPX-DEF-105, -106, -108).

    :param state: The graph's planner state (:func:`sdp_expect.spark.registration.graph_state`,
        or a fresh :class:`~sdp_expect.core.planner.PlanState` without Spark).
    :param settings: The values in effect for the pipeline of the Spark settings that
        sdp-expect sets on some flows (:data:`DEFAULT_FLOW_SETTINGS`, whose values
        stand for any key left out); set back after those flows.
    :param check_views: Add each checked flow's unread check views and record them
        (:func:`sdp_expect.core.planner.rule_checks`): when the translation is
        registered with a pipeline, not when it is shown.
    """

    def __init__(self, state: PlanState, settings: Optional[Mapping[str, str]] = None, *,
                 check_views: bool = False) -> None:
        self.state = state
        self.settings = {key: (settings or {}).get(key, value)
                         for key, value in DEFAULT_FLOW_SETTINGS.items()}
        self.check_views = check_views

    def translate(self, statements: list[Statement], file: str) -> Translation:
        """The open-source SQL of one file's statements.

        :param statements: The file's statements (:func:`sdp_expect.dbsql.parse.parse`).
        :param file: The file as shown to the user.
        :raises SdpExpectError: SDPX-DEF-105, -106, -108 and SDPX-CFG-201, as the
            Python API raises them, at the statement's file and line.
        """
        scope = _FileScope(self.state.options, dict(self.settings),
                           options_conf(self.state.options))
        out = _Writer(file)
        settings = ", ".join(f"{k}={v}" for k, v in scope.conf.items())
        out.comment(
            f"Open-source SDP SQL, translated by sdp-expect from the Databricks SQL file {file}.",
            f"Pipeline settings used: {settings}.",
        )
        for statement in statements:
            out.blank()
            if isinstance(statement, DatasetStatement):
                self._dataset(statement, scope, out)
            elif isinstance(statement, FlowStatement):
                self._flow(statement, scope, out)
            elif isinstance(statement, SetStatement):
                self._set(statement, scope, out)
            elif isinstance(statement, UseStatement):
                out.statement(statement.text, statement.position)
            else:
                self._pass_through(statement, out)
        return out.result(statements)

    # -- SET, USE and the rest ------------------------------------------------------------
    def _set(self, statement: SetStatement, scope: _FileScope, out: _Writer) -> None:
        """A ``SET``: ``sdp_expect.*`` keys change the file's settings; others pass on."""
        key, value = statement.key, statement.value
        if key is not None and value is not None and key.lower().startswith("sdp_expect."):
            raw = _unquoted(value)
            if key.lower() not in (KEY_NULL_RESULT, KEY_QUARANTINE, KEY_METRICS):
                raise SdpExpectError("SDPX-SQL-304", f"unknown setting {key!r}",
                                     location=statement.position.at_line())
            conf = dict(scope.conf, **{key.lower(): raw})
            try:
                scope.options = read_options(conf.get)
            except SdpExpectError as error:
                raise error.with_context(location=statement.position.at_line()) from None
            scope.conf = conf
            out.comment(f"{statement.position}: {statement.text}",
                        "(applied by sdp-expect to the statements below in this file)")
            return
        if key in scope.in_effect and value is not None:
            scope.in_effect[key] = _unquoted(value)
        out.statement(statement.text, statement.position)

    def _pass_through(self, statement: PassThrough, out: _Writer) -> None:
        """Any other statement, as written; an Auto CDC flow's target is recorded, so that
        expectations on it are refused (SDPX-DEF-108)."""
        target = statement.flow_target
        if target is not None:
            try:
                plan_auto_cdc_flow(target, state=self.state,
                                   location=statement.position.at_line())
            except SdpExpectError as error:
                raise worded_for_sql(error) from None
        out.statement(statement.text, statement.position)

    # -- datasets -------------------------------------------------------------------------
    def _dataset(self, statement: DatasetStatement, scope: _FileScope, out: _Writer) -> None:
        """A dataset, with its companions when it has expectations (``_define_dataset``)."""
        name = statement.name
        rules = statement.rules
        kind = statement.type.kind
        out.comment(f"{statement.position}: {statement.written_as} {name.text}"
                    + (f" with {len(rules.expectations)} expectation(s)"
                       if rules.expectations else ""))
        if statement.private:
            word = "PRIVATE" if "PRIVATE" in statement.written_as.upper().split() else "TEMPORARY"
            out.comment(f"{word} removed: open-source SDP has no private datasets, so "
                        f"{name.text} is published in the catalog like the others.")
        where = statement.position.at_line()
        if statement.query is None:
            plan = self._plan(TableDefinition(rules, where, statement.using, scope.options))
            self._write_plan(plan, name, name, None, _head(statement, plan),
                             statement.position, scope, out)
            return
        definition = DatasetDefinition(rules, kind, statement.checked, where,
                                       format=statement.using, options=scope.options)
        plan = self._plan(definition)
        self._write_plan(plan, name, name, statement.query,
                         f"{_head(statement, plan)}\nAS ", statement.position, scope, out)

    # -- flows ----------------------------------------------------------------------------
    def _flow(self, statement: FlowStatement, scope: _FileScope, out: _Writer) -> None:
        """A flow; into a table with expectations, with its companion flows (``append_flow``)."""
        target = statement.target
        plan = self._plan(FlowDefinition(target.dataset, statement.name.dataset,
                                         statement.position.at_line()))
        comment = f" COMMENT {statement.comment}" if statement.comment else ""
        head = f"CREATE FLOW {statement.name.text}{comment} AS INSERT INTO {target.text} BY NAME"
        out.comment(f"{statement.position}: CREATE FLOW {statement.name.text} into {target.text}"
                    + (" (the table's expectations apply)"
                       if plan.flows[0].step is Step.TARGET else ""))
        self._write_plan(plan, statement.name, target, statement.query, f"{head}\n",
                         statement.position, scope, out)

    # -- a plan, with no retries for fail rules --------------------------------------------
    def _plan(self, definition: Definition) -> Plan:
        """The plan of one dataset or flow; the planner's errors worded for SQL."""
        try:
            return plan(definition, self.state)
        except SdpExpectError as error:
            raise worded_for_sql(error) from None

    def _write_plan(self, plan: Plan, flow: Name, table: Name, query: Optional[SqlText],
                    head: str, origin: Position, scope: _FileScope, out: _Writer) -> None:
        """Write a plan: its datasets and flows, then its check views.

        The datasets and flows that read the user's query come first, each flow's own
        Spark settings (the plan's ``spark_conf``) ``SET`` before it and ``SET`` back to
        the value in effect after the last; then the metrics counted from a batch log
        (no fail check there), then the check views.

        ``table`` is the dataset the plan is of; ``flow`` names the flow whose query is
        ``query`` (the dataset's name, for a dataset's own query; no query for a table
        declared without one); ``head`` is the statement of the dataset itself (or of
        the flow into it) up to where its query goes. Every statement names ``origin``,
        the Databricks SQL statement, so that Spark's errors map back to it.
        """
        logic = _logic(plan)
        sql = _PlanSql(logic, table, head, query)
        first: list[tuple[str, Optional[SqlText], Optional[Mapping[str, str]]]] = []
        after: list[str] = []
        # A companion view (a batch log's input) goes just before the flow that reads it,
        # under the same settings.
        views = {spec.name: spec for spec in plan.datasets
                 if spec.kind is DatasetKind.TEMPORARY_VIEW and spec.role is not Role.TARGET}
        for spec in plan.datasets:
            record_dataset(spec.name, type=spec.kind.value, owner=plan.rules.dataset)
            if spec.name in views:
                continue
            text = sql.dataset(spec)
            if spec.query is not None and spec.query.reads is not None:
                after.append(text)
            elif spec.query is not None:
                first.append((text, query, spec.query.spark_conf))
            else:  # a table that flows write: it runs nothing, settings do not matter
                first.append((text, None, None))
        for flow_spec in plan.flows:
            view = views.get(flow_spec.reads or "")
            if view is not None and view.query is not None:
                first.append((sql.dataset(view), query, view.query.spark_conf))
            first.append((sql.flow(flow_spec, flow), query, flow_spec.spark_conf))
        current = dict(scope.in_effect)
        for text, repeated, conf in first:
            if conf is not None:
                self._set_flow_settings(conf, current, scope, origin, out)
            out.statement(text, origin, repeated)
        self._set_flow_settings({}, current, scope, origin, out)
        for text in after:
            out.statement(text, origin)
        if not self.check_views or query is None:
            return
        # A rule's view reads the query's view (the query is analysed once, not per rule),
        # as a stream when the query reads one.
        streaming = mentions_stream(query.text)
        for check in plan.checks:
            select = (logic.rule_check_select(sql.source, check.expectation)
                      if check.query_view is None else
                      rule_view_select(logic, check, streaming=streaming, alias=SOURCE_ALIAS))
            out.statement(f"CREATE TEMPORARY VIEW {check.view}\nAS {select}", origin, query)
            record_check(check)

    @staticmethod
    def _set_flow_settings(conf: Mapping[str, str], current: dict[str, str],
                           scope: _FileScope, origin: Position, out: _Writer) -> None:
        """``SET`` each setting of :data:`DEFAULT_FLOW_SETTINGS` to what the flow about to
        be written wants (``conf``, else the file's value in effect), where ``current``
        differs; ``conf`` empty sets everything back."""
        for key, value in current.items():
            wanted = conf.get(key, scope.in_effect[key])
            if wanted != value:
                out.comment(_SETTING_REASONS[key] if key in conf
                            else "Back to the setting in effect before.")
                out.statement(f"SET {key} = {wanted}", origin)
                current[key] = wanted


_KEYWORDS = {DatasetKind.MATERIALIZED_VIEW: "MATERIALIZED VIEW",
             DatasetKind.STREAMING_TABLE: "STREAMING TABLE",
             DatasetKind.TEMPORARY_VIEW: "TEMPORARY VIEW"}


@dataclass(frozen=True)
class _PlanSql:
    """The statements of one plan's datasets and flows.

    :param logic: The plan's rules, compiled.
    :param table: The dataset the plan is of (its companions are written as siblings:
        :meth:`~sdp_expect.dbsql.statements.Name.sibling`).
    :param head: The statement of the dataset itself (or of the flow into it) up to
        where its query goes.
    :param query: The user's query (None: a table declared without one).
    """

    logic: RuleLogic
    table: Name
    head: str
    query: Optional[SqlText]

    @property
    def source(self) -> str:
        """The user's query as a relation (a line break after it ends any ``--`` comment)."""
        return "" if self.query is None else f"(\n{self.query.text}\n) AS {SOURCE_ALIAS}"

    def _own(self, flow: FlowSpec) -> str:
        """The ``SELECT`` of the dataset's (or the user's flow's) own query."""
        if flow.step is Step.QUERY:
            assert self.query is not None
            return self.query.text
        return _select(self.logic, flow, self.source)

    def dataset(self, spec: DatasetSpec) -> str:
        """One dataset of the plan as a ``CREATE`` statement."""
        flow = spec.query
        if spec.role is Role.TARGET:
            return self.head if flow is None else f"{self.head}{self._own(flow)}"
        lines = [f"CREATE {_KEYWORDS[spec.kind]} {self.table.sibling(spec.name)}"]
        if spec.format:
            lines.append(f"USING {spec.format}")
        if spec.comment is not None:
            lines.append(f"COMMENT {sql_string(spec.comment)}")
        text = "\n".join(lines)
        if flow is None:
            return text
        read = self.source if flow.reads is None else self.table.sibling(flow.reads)
        also = None if flow.also_reads is None else self.table.sibling(flow.also_reads)
        return f"{text}\nAS {_select(self.logic, flow, read, also)}"

    def flow(self, spec: FlowSpec, flow: Name) -> str:
        """One flow of the plan as a ``CREATE FLOW`` statement: the user's own ``flow`` is
        the head with its query; a companion flow is written as a sibling of ``flow``."""
        if spec.step in (Step.QUERY, Step.TARGET):
            return f"{self.head}{self._own(spec)}"
        read = (self.source if spec.reads is None
                else f"STREAM({self.table.sibling(spec.reads)})")
        return (f"CREATE FLOW {flow.sibling(spec.name)}\n"
                f"AS INSERT INTO {self.table.sibling(spec.target)} BY NAME\n"
                f"{_select(self.logic, spec, read)}")


def _unquoted(value: str) -> str:
    """A ``SET`` value as written, without the quotes around it: ``'true'`` and ``true``
    set the same."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _head(statement: DatasetStatement, plan: Plan) -> str:
    """``CREATE <type> name [(columns)] [clauses]``, without the query, which each
    statement of the dataset's plan puts after it in its own way. ``USING`` is the
    plan's format for the dataset (the planner leaves out one that is the session's
    default: docs/formats.md), not the statement's as written."""
    lines = [f"CREATE {statement.type.value} {statement.name.text}"]
    if statement.columns:
        lines.append("(\n" + ",\n".join(f"  {column}" for column in statement.columns) + "\n)")
    using = next((spec.format for spec in plan.datasets if spec.role is Role.TARGET), None)
    if using:
        lines.append(f"USING {using}")
    if statement.partitioned_by:
        lines.append(f"PARTITIONED BY {statement.partitioned_by}")
    if statement.cluster_by:
        lines.append(f"CLUSTER BY {statement.cluster_by}")
    if statement.comment:
        lines.append(f"COMMENT {statement.comment}")
    if statement.table_properties:
        lines.append(f"TBLPROPERTIES ({', '.join(statement.table_properties)})")
    return "\n".join(lines)
