"""Reading one statement of a Databricks SQL pipeline file into the statement model.

:class:`StatementReader` reads the tokens of one statement with a
:class:`~sdp_expect.dbsql.cursor._Cursor`: ``SET`` and ``USE`` as written;
``CREATE`` up to its name, where :func:`_dataset_type` says which pipeline
dataset the keywords (current and legacy spellings) define; then a dataset's
column list and clauses (:mod:`sdp_expect.dbsql.dataset_clauses`,
:mod:`sdp_expect.dbsql.table_properties`) and its query, or a flow's target
and query. Any other statement is passed on as written, with SDPX-SQL-308.

Internal to :mod:`sdp_expect.dbsql`, whose reader starts in
:mod:`sdp_expect.dbsql.parse`. Nothing here imports pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from sdp_expect.base.databricks_functions import DATABRICKS_ONLY_TABLE_FUNCTIONS
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.sqltokens import Token, TokenKind, is_keyword
from sdp_expect.core.model import DatasetRules
from sdp_expect.core.planner import auto_cdc_target_error
from sdp_expect.dbsql.cursor import (
    Cursor,
    cut,
    is_name_part,
    live_spans,
    shown,
    split_top_level,
)
from sdp_expect.dbsql.dataset_clauses import read_clause, read_constraint
from sdp_expect.dbsql.findings import Findings
from sdp_expect.dbsql.fixes import worded_for_sql
from sdp_expect.dbsql.statements import (
    DatasetStatement,
    DatasetType,
    FlowStatement,
    Name,
    PassThrough,
    Position,
    SetStatement,
    SqlText,
    Statement,
    UseStatement,
)
from sdp_expect.dbsql.table_properties import Properties

__all__ = ["StatementReader"]

_AUTO_CDC_FIX = (
    "on Spark 4.2+ define the flow in a Python file with dp.create_auto_cdc_flow(target=..., "
    "source=..., keys=[...], sequence_by=...); Spark 4.3+ also reads CREATE FLOW ... AS AUTO "
    "CDC INTO in SQL"
)
_SQL_308 = "SDPX-SQL-308"


@dataclass
class _Header:
    """What comes between ``CREATE [OR ...]`` and the name: its keywords, e.g. ``["PRIVATE",
    "LIVE", "TABLE"]``, and the token of the last one, up to which the translation's
    comments repeat the statement's opening words (``written_as``)."""

    words: list[str]
    last: Token


class StatementReader:
    """Reads one statement; relative rule-file paths start at ``base_dir``, and ``AUTO CDC``
    passes on to Spark only when ``auto_cdc`` says the installed Spark reads it.

    With ``findings`` (:func:`~sdp_expect.dbsql.parse.check`), the errors that need not
    end the statement are added to it instead of raised, and constraints and rule files
    are counted there, so that one reading reports every error of a file, and
    :attr:`declared` says what the statement's opening keywords declare (a summary
    kind; ``other`` until they are read) even when the statement has errors.
    """

    def __init__(self, cursor: Cursor, base_dir: Optional[str], auto_cdc: bool,
                 findings: Optional[Findings] = None) -> None:
        self.cursor = cursor
        self.base_dir = base_dir
        self.auto_cdc = auto_cdc
        self.findings = findings
        self.refreshed = False
        self.declared = "other"

    @property
    def position(self) -> Position:
        return self.cursor.position(self.cursor.tokens[0])

    def read(self) -> Statement:
        """One statement of the model."""
        self._reject_databricks_functions()
        cursor = self.cursor
        if cursor.at("SET"):
            self.declared = "set"
            return self._set()
        if cursor.at("USE"):
            self.declared = "use"
            return UseStatement(self._all_text(), self.position)
        if cursor.at_sequence("APPLY", "CHANGES"):
            raise cursor.unsupported(cursor.tokens[0], "APPLY CHANGES INTO", _AUTO_CDC_FIX)
        if cursor.at("CREATE"):
            return self._create()
        return self._not_a_pipeline_statement(PassThrough(self._all_text(), self.position))

    def _not_a_pipeline_statement(self, statement: PassThrough) -> PassThrough:
        """A statement open-source SDP does not run in a pipeline's SQL file (a query, a
        function, a plain table): an error at its line, raised
        (:func:`~sdp_expect.dbsql.parse.parse`) or listed
        (:func:`~sdp_expect.dbsql.parse.check`), never skipped. The statement stays
        in the list, so every tool sees the same statements.
        """
        words = " ".join(token.text.upper() for token in self.cursor.tokens[:3]
                         if token.kind is TokenKind.IDENT)
        self._keep(SdpExpectError(
            _SQL_308, f"'{words} ...' is not a statement of a pipeline: open-source SDP runs "
            "only CREATE MATERIALIZED VIEW / STREAMING TABLE / [TEMPORARY] VIEW / FLOW, SET and "
            "USE in a pipeline's SQL files", location=statement.position.at_column()))
        return statement

    def _all_text(self) -> str:
        return self.cursor.text(self.cursor.tokens[0], self.cursor.tokens[-1])

    def _reject_databricks_functions(self) -> None:
        tokens = self.cursor.tokens
        for index, token in enumerate(tokens[:-1]):
            name = token.text.lower()
            if (token.kind is TokenKind.IDENT and name in DATABRICKS_ONLY_TABLE_FUNCTIONS
                    and tokens[index + 1].kind is TokenKind.LPAREN
                    and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
                error = self.cursor.unsupported(
                    token, f"{name}()", DATABRICKS_ONLY_TABLE_FUNCTIONS[name])
                self._keep(error)
                return

    # -- SET ----------------------------------------------------------------------------
    def _set(self) -> SetStatement:
        """``SET [key = value]``."""
        tokens = self.cursor.tokens
        source = self.cursor.source
        text = self._all_text()
        for index, token in enumerate(tokens[1:], start=1):
            if token.kind is TokenKind.OPERATOR and token.text == "=":
                if index == 1:
                    break
                key = source[tokens[1].start:token.start].strip()
                value = source[token.end:tokens[-1].end].strip() if index + 1 < len(tokens) \
                    else ""
                return SetStatement(text, self.position, key=key, value=value)
        return SetStatement(text, self.position)

    # -- CREATE ---------------------------------------------------------------------------
    def _create(self) -> Statement:
        """``CREATE ...``: a dataset, a flow, or another statement passed on."""
        cursor = self.cursor
        first = cursor.take("CREATE")
        words: list[str] = []
        if cursor.at("OR"):
            cursor.take("OR")
            if not cursor.at("REFRESH", "REPLACE"):
                raise cursor.error(cursor.peek(), "expected REFRESH or REPLACE after CREATE OR, "
                                   f"found {shown(cursor.peek())}")
            # OR REFRESH is Databricks-only; OR REPLACE is kept on statements passed on.
            self.refreshed = cursor.take("REFRESH or REPLACE").text.upper() == "REFRESH"
        while cursor.at("PRIVATE", "TEMPORARY", "STREAMING", "INCREMENTAL", "LIVE"):
            words.append(cursor.take("a keyword").text.upper())
        if cursor.at_sequence("MATERIALIZED", "VIEW"):
            cursor.i += 2
            words.append("MATERIALIZED VIEW")
        elif cursor.at("TABLE", "VIEW", "FLOW"):
            words.append(cursor.take("a keyword").text.upper())
        else:
            # CREATE FUNCTION, CREATE TABLE, ...: not a pipeline statement.
            return self._not_a_pipeline_statement(self._pass_through_without_refresh())
        header = _Header(words, cursor.tokens[cursor.i - 1])
        kind = words[-1]
        if kind == "FLOW":
            self.declared = "flow"
            if len(words) > 1:
                raise cursor.error(first, f"unexpected {' '.join(words[:-1])} in CREATE FLOW")
            return self._flow()
        dataset_type = _dataset_type(words)
        if dataset_type is None:
            if kind == "TABLE":  # CREATE TABLE: not a pipeline dataset
                return self._not_a_pipeline_statement(self._pass_through_without_refresh())
            raise cursor.error(first, f"CREATE {' '.join(words)} is not a pipeline dataset "
                               "sdp-expect knows; expected STREAMING TABLE, MATERIALIZED VIEW, "
                               "[STREAMING] LIVE TABLE, [TEMPORARY] VIEW or [STREAMING] LIVE VIEW")
        self.declared = dataset_type.value.lower()
        return self._dataset(dataset_type, header)

    def _pass_through_without_refresh(self) -> PassThrough:
        """The statement as written, without ``OR REFRESH`` / ``OR REPLACE`` and ``LIVE.``."""
        tokens = self.cursor.tokens
        spans = live_spans(tokens)
        if self.refreshed:  # "OR REFRESH " up to the next word
            spans.append((tokens[1].start, tokens[3].start if len(tokens) > 3 else tokens[2].end))
        text = cut(self.cursor.source, tokens[0].start, tokens[-1].end, spans)
        return PassThrough(text, self.position)

    def _name(self) -> Name:
        """``[IF NOT EXISTS] [LIVE.]part[.part...]``."""
        cursor = self.cursor
        if cursor.at_sequence("IF", "NOT", "EXISTS"):
            cursor.i += 3
        token = cursor.peek()
        if token is None or not is_name_part(token):
            raise cursor.error(token, f"expected a name, found {shown(token)}")
        parts = [cursor.take("a name")]
        while True:
            dot, part = cursor.peek(), cursor.peek(1)
            if dot is None or dot.kind is not TokenKind.DOT or part is None \
                    or not is_name_part(part):
                break
            cursor.i += 2
            parts.append(part)
        if len(parts) > 1 and parts[0].value.lower() == "live":
            parts = parts[1:]
        text = cursor.source[parts[0].start:parts[-1].end]
        return Name(tuple(p.value for p in parts), text)

    # -- datasets -------------------------------------------------------------------------
    def _dataset(self, dataset_type: DatasetType, header: _Header) -> Statement:
        """The rest of a dataset statement, after the keywords (``header``) that made it a
        ``dataset_type``."""
        cursor = self.cursor
        name = self._name()
        statement = DatasetStatement(
            type=dataset_type, name=name, position=self.position,
            rules=DatasetRules(dataset=name.dataset),
            private="PRIVATE" in header.words or (
                "TEMPORARY" in header.words and dataset_type in
                (DatasetType.MATERIALIZED_VIEW, DatasetType.STREAMING_TABLE)),
            written_as=" ".join(t.text for t in cursor.tokens[:cursor.tokens.index(header.last)
                                                               + 1]),
        )
        if self.cursor.at_kind(TokenKind.LPAREN):
            self._elements(statement)
        properties = Properties()
        while not cursor.done:
            if cursor.at("AS"):
                cursor.take("AS")
                if cursor.done:
                    raise cursor.error(None, "expected a query after AS", dataset=name.dataset)
                first = cursor.tokens[cursor.i]
                statement.query = SqlText(cursor.text(first, cursor.tokens[-1]),
                                          cursor.position(first))
                cursor.i = len(cursor.tokens)
                break
            if cursor.at_sequence("FLOW", "AUTO"):
                return self._auto_cdc_table(statement)
            read_clause(cursor, statement, properties)
        if statement.query is None and dataset_type is not DatasetType.STREAMING_TABLE:
            raise cursor.error(None, f"a {dataset_type.value.lower()} needs AS <query>",
                               dataset=name.dataset)
        properties.apply(statement, self.base_dir, self.findings)
        return statement

    def _auto_cdc_table(self, statement: DatasetStatement) -> Statement:
        """``CREATE STREAMING TABLE ... FLOW AUTO CDC ...`` (Spark 4.3+ only), passed on as
        written; the table read so far must hold no expectations (SDPX-DEF-108: they
        belong on the flow's source)."""
        cursor = self.cursor
        token = cursor.tokens[cursor.i]
        if not self.auto_cdc:
            raise cursor.unsupported(token, "AUTO CDC (on this Spark)", _AUTO_CDC_FIX,
                                     dataset=statement.name.dataset)
        if not statement.rules.empty:
            raise worded_for_sql(auto_cdc_target_error(statement.name.dataset,
                                                       statement.position.at_line()))
        passed = self._pass_through_without_refresh()
        passed.flow_target = statement.name.dataset
        return passed

    def _elements(self, statement: DatasetStatement) -> None:
        """The parenthesised list: column definitions and ``CONSTRAINT ... EXPECT`` clauses,
        added to the dataset's columns and rules."""
        cursor = self.cursor
        open_index = cursor.i
        close_index = cursor.matching(open_index)
        inner = cursor.tokens[open_index + 1:close_index]
        cursor.i = close_index + 1
        if not inner:
            raise cursor.error(cursor.tokens[close_index], "empty column list '()'",
                               dataset=statement.name.dataset)
        for element, comma in split_top_level(inner):
            end = comma if comma is not None else cursor.tokens[close_index]
            if not element:
                raise cursor.error(end, "empty entry in the column list",
                                   dataset=statement.name.dataset)
            if (is_keyword(element[0], "CONSTRAINT") and len(element) >= 3
                    and is_name_part(element[1])
                    and is_keyword(element[2], "EXPECT", "CHECK", "PRIMARY", "FOREIGN",
                                   "UNIQUE")):
                self._collecting_constraint(statement, element, end)
                continue
            for token in element[1:]:
                if is_keyword(token, "MASK"):
                    raise cursor.unsupported(
                        token, "a column MASK", "remove the MASK clause: column masks are a "
                        "Unity Catalog feature", dataset=statement.name.dataset)
            statement.columns.append(cursor.text(element[0], element[-1]))

    def _collecting_constraint(self, statement: DatasetStatement, element: Sequence[Token],
                               end: Token) -> None:
        """:func:`~sdp_expect.dbsql.dataset_clauses._read_constraint`, counted; its error
        named by dataset, expectation and place, and kept when collecting, so that a bad
        clause does not hide the clauses after it."""
        if self.findings is not None:
            self.findings.constraints += 1
        try:
            read_constraint(self.cursor, statement, element, end)
        except SdpExpectError as error:
            self._keep(SdpExpectError(
                error.code, error.detail, dataset=error.dataset or statement.name.dataset,
                expectation=error.expectation or element[1].value, fix=error.fix,
                location=error.place or self.cursor.position(element[0]).at_line()))

    def _keep(self, error: SdpExpectError) -> None:
        """Raise an error that need not end the statement
        (:func:`~sdp_expect.dbsql.parse.parse`), or keep it and read on
        (:func:`~sdp_expect.dbsql.parse.check`)."""
        if self.findings is None:
            raise error
        self.findings.errors.append(error)

    # -- flows ----------------------------------------------------------------------------
    def _flow(self) -> Statement:
        """``CREATE FLOW name [COMMENT '...'] AS INSERT INTO target BY NAME query``."""
        cursor = self.cursor
        name = self._name()
        comment = None
        if cursor.at("COMMENT"):
            cursor.take("COMMENT")
            comment = cursor.expect_kind(TokenKind.STRING, "a string after COMMENT").text
        cursor.expect("AS", "AS after the flow's name")
        if cursor.at_sequence("AUTO", "CDC"):
            token = cursor.tokens[cursor.i]
            if not self.auto_cdc:
                raise cursor.unsupported(token, "AUTO CDC (on this Spark)", _AUTO_CDC_FIX,
                                         dataset=name.dataset)
            passed = self._pass_through_without_refresh()
            cursor.i += 2
            cursor.expect("INTO", "INTO after AUTO CDC")
            passed.flow_target = self._name().dataset
            return passed
        if cursor.at_sequence("APPLY", "CHANGES"):
            raise cursor.unsupported(cursor.tokens[cursor.i], "APPLY CHANGES INTO",
                                     _AUTO_CDC_FIX, dataset=name.dataset)
        cursor.expect("INSERT", "INSERT INTO <table> BY NAME <query> after AS")
        cursor.expect("INTO", "INTO after INSERT")
        if cursor.at("ONCE"):
            raise cursor.unsupported(
                cursor.tokens[cursor.i], "INSERT INTO ONCE (a one-time flow)",
                "open-source SDP has no one-time flows: remove ONCE, or load the data once "
                "outside the pipeline", dataset=name.dataset)
        target = self._name()
        if not cursor.at_sequence("BY", "NAME"):
            raise cursor.error(cursor.peek(), "expected BY NAME after the flow's target "
                               f"(CREATE FLOW ... AS INSERT INTO {target.text} BY NAME <query>), "
                               f"found {shown(cursor.peek())}", dataset=target.dataset)
        cursor.i += 2
        if cursor.done:
            raise cursor.error(None, "expected a query after BY NAME", dataset=target.dataset)
        first = cursor.tokens[cursor.i]
        query = SqlText(cursor.text(first, cursor.tokens[-1]), cursor.position(first))
        return FlowStatement(name=name, target=target, position=self.position, query=query,
                             comment=comment)


def _dataset_type(words: list[str]) -> Optional[DatasetType]:
    """The dataset type of ``CREATE <words>``, or None when it is not a pipeline dataset.

    The legacy spellings map as ``docs/sql.md`` lists them: ``LIVE TABLE`` is a
    materialized view, ``STREAMING LIVE TABLE`` and ``INCREMENTAL LIVE TABLE``
    are streaming tables, ``[TEMPORARY] [STREAMING | INCREMENTAL] LIVE VIEW`` is
    a temporary view (streaming when its query reads ``STREAM(...)``);
    ``TEMPORARY`` on a table is the old ``PRIVATE``. ``words`` are the keywords
    after ``CREATE [OR ...]``, the kind last.
    """
    kind = words[-1]
    modifiers = set(words[:-1])
    incremental = bool(modifiers & {"STREAMING", "INCREMENTAL"})
    if kind == "MATERIALIZED VIEW":
        return None if incremental or "LIVE" in modifiers else DatasetType.MATERIALIZED_VIEW
    if kind == "TABLE":
        if incremental:
            return DatasetType.STREAMING_TABLE
        return DatasetType.MATERIALIZED_VIEW if "LIVE" in modifiers else None
    if kind == "VIEW" and "PRIVATE" not in modifiers:
        if "LIVE" in modifiers:
            return DatasetType.TEMPORARY_VIEW
        if incremental:
            return None
        if "TEMPORARY" in modifiers:
            return DatasetType.TEMPORARY_VIEW
        return DatasetType.VIEW
    return None
