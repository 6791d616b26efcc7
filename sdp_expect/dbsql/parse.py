"""Read a Databricks SQL pipeline file into the statement model.

:func:`sdp_expect.dbsql.split.split` scans the text once with
:func:`sdp_expect.sqltokens.tokenize` (so quotes, backticks and comments are
never mistaken for SQL) and splits it into statements: at ``;``, at the cell
separators of an exported notebook, at the end of a ``SET`` line, with an
error wherever a statement would run into the next one. Each statement is
then read by a small recursive-descent parser that knows the pipeline
statements of Databricks SQL, current and legacy spellings:

- ``CREATE [OR REFRESH] [PRIVATE | TEMPORARY] {STREAMING TABLE | MATERIALIZED
  VIEW | [STREAMING | INCREMENTAL] LIVE TABLE} [IF NOT EXISTS] name [( column
  definitions and CONSTRAINT name EXPECT (expr) [ON VIOLATION {DROP ROW |
  FAIL UPDATE}] )] [COMMENT | TBLPROPERTIES | PARTITIONED BY | CLUSTER BY |
  USING ...] [AS query]``;
- ``CREATE [OR REPLACE] [TEMPORARY] [[STREAMING | INCREMENTAL] LIVE] VIEW name
  [(columns)] [COMMENT ...] [TBLPROPERTIES ...] AS query``;
- ``CREATE FLOW name [COMMENT '...'] AS INSERT INTO target BY NAME query``;
- ``SET`` and ``USE``, kept as written.

Anything else is passed on for Spark to judge. Keywords are matched without
regard to case. Constraints, queries and column definitions are kept as the
user wrote them; ``LIVE.`` qualifiers (also `` `LIVE`.x ``) are removed.
Databricks-only constructs raise SDPX-SQL-301 naming the construct and what to
do instead; syntax errors raise SDPX-SQL-302 with the file, line and column.

:func:`parse` raises the first error. :func:`check` reads the same way but
collects every error of the file (for ``sdp-expect validate``): an error ends
its statement and reading goes on with the next one; in a dataset's column
list, an error in one ``CONSTRAINT`` clause does not stop the next clauses.
Nothing here imports pyspark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional, Sequence

from sdp_expect import rules as rule_files
from sdp_expect.dbsql.split import SplitFile, split
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
    StatementSummary,
    UseStatement,
    summarize,
)
from sdp_expect.errors import Location, SdpExpectError
from sdp_expect.model import Action, DatasetRules, QuarantineSpec, make_expectation
from sdp_expect.plan import Where, auto_cdc_target_error
from sdp_expect.spark_version import AUTO_CDC_IN_SQL, spark_has
from sdp_expect.sqltokens import SqlTokenError, Token, TokenKind, is_keyword, matching_paren
from sdp_expect.text_files import TextFileProblem, read_text

__all__ = [
    "DATABRICKS_ONLY_FUNCTIONS",
    "Findings",
    "RuleFileUse",
    "check",
    "parse",
    "read_file",
    "sql_auto_cdc_available",
]

_FILE_SOURCE_FIX = (
    "read the files in a Python file of the pipeline, e.g. a @dp.table returning "
    "spark.readStream.format('json').schema(...).load(path) (spark.read for a materialized "
    "view), or point a table outside the pipeline at them; then read that dataset here, "
    "with STREAM(name) in a streaming table"
)
DATABRICKS_ONLY_FUNCTIONS: dict[str, str] = {
    "read_files": _FILE_SOURCE_FIX,
    "cloud_files": _FILE_SOURCE_FIX,
    "read_kafka": "read Kafka in a Python file of the pipeline with "
    "spark.readStream.format('kafka').option('kafka.bootstrap.servers', ...)",
    "read_kinesis": "read the stream in a Python file of the pipeline with a Spark "
    "Structured Streaming source for it",
    "read_pubsub": "read the stream in a Python file of the pipeline with a Spark "
    "Structured Streaming source for it",
    "read_pulsar": "read the stream in a Python file of the pipeline with "
    "spark.readStream.format('pulsar') (the Pulsar connector)",
    "read_statestore": "open-source SDP has no state-store reader in SQL; remove the "
    "dataset or compute it in Python",
    "event_log": "open-source SDP has no event_log() table: read the events that "
    "spark-pipelines prints, and sdp-expect's counts in <dataset>_dq_metrics",
}
"""Databricks table-valued functions that open-source Spark lacks, with what to do instead."""

_AUTO_CDC_FIX = (
    "on Spark 4.2+ define the flow in a Python file with dp.create_auto_cdc_flow(target=..., "
    "source=..., keys=[...], sequence_by=...); Spark 4.3+ also reads CREATE FLOW ... AS AUTO "
    "CDC INTO in SQL"
)
_SQL_302 = "SDPX-SQL-302"
_SQL_301 = "SDPX-SQL-301"
_SQL_304 = "SDPX-SQL-304"
_SQL_308 = "SDPX-SQL-308"


def sql_auto_cdc_available() -> bool:
    """True when the installed Spark reads ``AUTO CDC`` in SQL (4.3 and later, or unknown).

    Read from the installed distribution, without importing pyspark.
    """
    return spark_has(AUTO_CDC_IN_SQL)


# --------------------------------------------------------------------------------- cursor


class _Cursor:
    """The tokens of one statement, read left to right.

    :param tokens: The statement's tokens (no comments, no ``;``).
    :param source: The whole file's text.
    :param file: The file as shown to the user.
    """

    def __init__(self, tokens: Sequence[Token], source: str, file: str) -> None:
        self.tokens = tokens
        self.source = source
        self.file = file
        self.i = 0

    def peek(self, ahead: int = 0) -> Optional[Token]:
        index = self.i + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    @property
    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def at(self, *words: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token is not None and is_keyword(token, *words)

    def at_sequence(self, *words: str) -> bool:
        return all(self.at(word, ahead=k) for k, word in enumerate(words))

    def take(self, what: str) -> Token:
        token = self.peek()
        if token is None:
            raise self.error(None, f"expected {what}, found the end of the statement")
        self.i += 1
        return token

    def expect(self, word: str, what: Optional[str] = None) -> Token:
        token = self.peek()
        if token is None or not is_keyword(token, word):
            raise self.error(token, f"expected {what or word}, found {_shown(token)}")
        self.i += 1
        return token

    def expect_kind(self, kind: TokenKind, what: str) -> Token:
        token = self.peek()
        if token is None or token.kind is not kind:
            raise self.error(token, f"expected {what}, found {_shown(token)}")
        self.i += 1
        return token

    def position(self, token: Optional[Token]) -> Position:
        if token is None:
            token = self.tokens[-1]
            return Position(self.file, token.line, token.col + len(token.text))
        return Position(self.file, token.line, token.col)

    def error(self, token: Optional[Token], detail: str, *,
              dataset: Optional[str] = None) -> SdpExpectError:
        return SdpExpectError(_SQL_302, detail, dataset=dataset,
                              location=self.position(token).at_column())

    def unsupported(self, token: Token, construct: str, fix: str, *,
                    dataset: Optional[str] = None) -> SdpExpectError:
        return SdpExpectError(
            _SQL_301, f"{construct} is Databricks-only: open-source SDP cannot run it",
            dataset=dataset, fix=fix, location=self.position(token).at_column(),
        )

    def text(self, first: Token, last: Token) -> str:
        """The source from ``first`` to ``last`` as written, ``LIVE.`` qualifiers removed.

        :param first: The first token (of this statement).
        :param last: The last token.
        """
        start = self.tokens.index(first)
        end = self.tokens.index(last)
        return _without_live(self.source, self.tokens[start:end + 1])

    def matching(self, open_index: int) -> int:
        """Index of the ``)`` that closes the ``(`` at ``open_index`` (SDPX-SQL-302 if none).

        :param open_index: Index of a ``(`` in this statement.
        """
        depth = 0
        for index in range(open_index, len(self.tokens)):
            kind = self.tokens[index].kind
            if kind is TokenKind.LPAREN:
                depth += 1
            elif kind is TokenKind.RPAREN:
                depth -= 1
                if depth == 0:
                    return index
        raise self.error(self.tokens[open_index], "'(' is never closed")


def _shown(token: Optional[Token]) -> str:
    """``'token'`` for a message, or where the statement ends.

    :param token: The token found, None at the end of the statement.
    """
    return "the end of the statement" if token is None else f"'{token.text}'"


# --------------------------------------------------------------------------------- LIVE.


def _is_name_part(token: Token) -> bool:
    """Whether ``token`` can be a part of a name (bare or in backticks).

    :param token: The token.
    """
    return token.kind in (TokenKind.IDENT, TokenKind.QUOTED_IDENT)


def _live_spans(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """Source spans of ``LIVE .`` qualifiers in front of a name (never ``x.live.y``).

    :param tokens: Consecutive tokens of a statement.
    """
    spans = []
    for index in range(len(tokens) - 2):
        token = tokens[index]
        if (_is_name_part(token) and token.value.lower() == "live"
                and tokens[index + 1].kind is TokenKind.DOT
                and _is_name_part(tokens[index + 2])
                and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
            spans.append((token.start, tokens[index + 1].end))
    return spans


def _without_live(source: str, tokens: Sequence[Token]) -> str:
    """The source of ``tokens`` as written, with ``LIVE.`` qualifiers cut out.

    :param source: The file's text.
    :param tokens: Consecutive tokens of a statement.
    """
    return _cut(source, tokens[0].start, tokens[-1].end, _live_spans(tokens))


def _cut(source: str, start: int, end: int, spans: Sequence[tuple[int, int]]) -> str:
    """``source[start:end]`` without the ``spans``.

    :param source: The file's text.
    :param start: Where the piece starts.
    :param end: Where it ends.
    :param spans: ``(start, end)`` pieces to leave out, inside ``start:end``.
    """
    pieces = []
    position = start
    for span_start, span_end in sorted(spans):
        pieces.append(source[position:span_start])
        position = span_end
    pieces.append(source[position:end])
    return "".join(pieces)


# --------------------------------------------------------------------------------- file


def read_file(path: str, shown: str) -> str:
    """A SQL file's text (UTF-8, a byte order mark dropped), or SDPX-SQL-305.

    Only a regular file is opened (a named pipe or a device would block or never end).
    It is read as it always was (see :func:`~sdp_expect.text_files.read_text`): of
    any size, NUL bytes kept, and line ends read as ``\\n``.

    :param path: The file to open.
    :param shown: The file as shown in messages.
    """
    try:
        return read_text(path, reject_binary=False, universal_newlines=True)
    except TextFileProblem as problem:
        reason = "not a regular file" if problem.kind in ("directory", "not_regular") \
            else problem.detail
        raise SdpExpectError("SDPX-SQL-305", f"cannot read {shown}: {reason}",
                             location=Location(shown)) from None


def parse(text: str, file: str, *, base_dir: Optional[str] = None,
          auto_cdc: Optional[bool] = None) -> list[Statement]:
    """Read the statements of one Databricks SQL file.

    :param text: The file's content.
    :param file: The file as shown in messages, e.g. ``databricks_sql/orders.sql``.
    :param base_dir: The folder that relative ``'sdp_expect.rules'`` paths start
        from (the SQL file's folder); default: the current directory.
    :param auto_cdc: Whether ``AUTO CDC`` flows may pass on to Spark; default:
        :func:`sql_auto_cdc_available`.
    :raises SdpExpectError: SDPX-SQL-301 (a Databricks-only construct), -302 (a
        syntax error), -304 (an ``sdp_expect.*`` property it does not
        understand), and the expectation model's codes (SDPX-VAL-*).
    """
    pieces = _split(text, file)
    allow_cdc = sql_auto_cdc_available() if auto_cdc is None else auto_cdc
    statements: list[Statement] = []
    for item in pieces.items:
        if isinstance(item, SdpExpectError):
            raise item
        statements.append(_Statement(_Cursor(item.tokens, pieces.source, file), base_dir,
                                     allow_cdc).read())
    return statements


@dataclass(frozen=True)
class RuleFileUse:
    """A rule file that a dataset's ``'sdp_expect.rules'`` property names, as checked.

    :param check: What :func:`sdp_expect.rules.check_file` found in it; its
        ``file`` is the path as written in the property.
    :param base_dir: The folder that path was taken from.
    :param position: Where the property is written.
    :param dataset: The dataset whose property it is.
    """

    check: rule_files.RuleFileCheck
    base_dir: str
    position: Position
    dataset: str


@dataclass
class Findings:
    """What :func:`check` found in one Databricks SQL file.

    :param statements: The statements read without error, in file order.
    :param errors: Every error, in file order (a rule file's errors come as one
        :class:`~sdp_expect.rules.RuleFileError`, also found in ``rule_files``).
    :param constraints: How many ``CONSTRAINT ... EXPECT`` (or ``CHECK``, ...)
        clauses were read, valid or not.
    :param rule_files: The rule files that ``'sdp_expect.rules'`` properties
        name, each as checked, in file order.
    """

    statements: list[Statement] = field(default_factory=list)
    errors: list[SdpExpectError] = field(default_factory=list)
    constraints: int = 0
    rule_files: list[RuleFileUse] = field(default_factory=list)

    @property
    def summary(self) -> list[StatementSummary]:
        """What each statement read is, and where it starts."""
        return [summarize(statement) for statement in self.statements]


def check(text: str, file: str, *, base_dir: Optional[str] = None,
          auto_cdc: Optional[bool] = None) -> Findings:
    """Read one Databricks SQL file as :func:`parse` does, collecting every error.

    An error ends its statement; reading goes on with the next one. In a
    dataset's column list, an error in one ``CONSTRAINT`` clause is kept and
    the next clauses are read; a Databricks-only function is reported and the
    statement read further. A text that cannot be split into statements (an
    unclosed quote or comment) gives its one SDPX-SQL-302.

    :param text: The file's content.
    :param file: The file as shown in messages.
    :param base_dir: The folder that relative ``'sdp_expect.rules'`` paths start
        from; default: the current directory.
    :param auto_cdc: Whether ``AUTO CDC`` flows may pass on to Spark; default:
        :func:`sql_auto_cdc_available`.
    """
    findings = Findings()
    try:
        pieces = _split(text, file)
    except SdpExpectError as error:
        findings.errors.append(error)
        return findings
    allow_cdc = sql_auto_cdc_available() if auto_cdc is None else auto_cdc
    for item in pieces.items:
        if isinstance(item, SdpExpectError):
            findings.errors.append(item)
            continue
        current = item.tokens
        before = len(findings.errors)
        try:
            statement = _Statement(_Cursor(current, pieces.source, file), base_dir, allow_cdc,
                                   findings).read()
        except SdpExpectError as error:
            start = Position(file, current[0].line, current[0].col)
            findings.errors.append(error.with_context(location=start.at_line()))
            continue
        if len(findings.errors) == before:
            findings.statements.append(statement)
    return findings


def _split(text: str, file: str) -> SplitFile:
    """The file's statements (:func:`sdp_expect.dbsql.split.split`); SDPX-SQL-302 for an
    unclosed quote or comment.

    :param text: The file's content.
    :param file: The file as shown in messages.
    """
    try:
        return split(text, file)
    except SqlTokenError as error:
        raise SdpExpectError(_SQL_302, error.message,
                             location=Position(file, error.line, error.col).at_column()) from None


@dataclass
class _Header:
    """What comes between ``CREATE`` and the name.

    :param words: The keywords after ``CREATE [OR ...]``, e.g. ``["PRIVATE", "LIVE", "TABLE"]``.
    :param last: The last of them.
    """

    words: list[str]
    last: Token


class _Statement:
    """Reads one statement.

    :param cursor: The statement's tokens.
    :param base_dir: Where relative rule-file paths start.
    :param auto_cdc: Whether ``AUTO CDC`` passes on to Spark.
    :param findings: When given (:func:`check`), the errors that do not end the
        statement are added to it instead of raised, and constraints and rule
        files are counted there.
    """

    def __init__(self, cursor: _Cursor, base_dir: Optional[str], auto_cdc: bool,
                 findings: Optional[Findings] = None) -> None:
        self.cursor = cursor
        self.base_dir = base_dir
        self.auto_cdc = auto_cdc
        self.findings = findings
        self.refreshed = False

    @property
    def position(self) -> Position:
        return self.cursor.position(self.cursor.tokens[0])

    def read(self) -> Statement:
        """One statement of the model."""
        self._reject_databricks_functions()
        cursor = self.cursor
        if cursor.at("SET"):
            return self._set()
        if cursor.at("USE"):
            return UseStatement(self._all_text(), self.position)
        if cursor.at_sequence("APPLY", "CHANGES"):
            raise cursor.unsupported(cursor.tokens[0], "APPLY CHANGES INTO", _AUTO_CDC_FIX)
        if cursor.at("CREATE"):
            return self._create()
        return self._not_a_pipeline_statement(PassThrough(self._all_text(), self.position))

    def _not_a_pipeline_statement(self, statement: PassThrough) -> PassThrough:
        """A statement open-source SDP does not run in a pipeline's SQL file (a query, a
        function, a plain table): an error at its line, raised (:func:`parse`) or listed
        (:func:`check`), never skipped. The statement stays in the list, so every tool
        sees the same statements.
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
            if (token.kind is TokenKind.IDENT and token.text.lower() in DATABRICKS_ONLY_FUNCTIONS
                    and tokens[index + 1].kind is TokenKind.LPAREN
                    and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
                error = self.cursor.unsupported(
                    token, f"{token.text.lower()}()", DATABRICKS_ONLY_FUNCTIONS[token.text.lower()]
                )
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
                                   f"found {_shown(cursor.peek())}")
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
        return self._dataset(dataset_type, header)

    def _at_kind(self, kind: TokenKind) -> bool:
        token = self.cursor.peek()
        return token is not None and token.kind is kind

    def _pass_through_without_refresh(self) -> PassThrough:
        """The statement as written, without ``OR REFRESH`` / ``OR REPLACE`` and ``LIVE.``."""
        tokens = self.cursor.tokens
        spans = _live_spans(tokens)
        if self.refreshed:  # "OR REFRESH " up to the next word
            spans.append((tokens[1].start, tokens[3].start if len(tokens) > 3 else tokens[2].end))
        text = _cut(self.cursor.source, tokens[0].start, tokens[-1].end, spans)
        return PassThrough(text, self.position)

    def _name(self) -> Name:
        """``[IF NOT EXISTS] [LIVE.]part[.part...]``."""
        cursor = self.cursor
        if cursor.at_sequence("IF", "NOT", "EXISTS"):
            cursor.i += 3
        token = cursor.peek()
        if token is None or not _is_name_part(token):
            raise cursor.error(token, f"expected a name, found {_shown(token)}")
        parts = [cursor.take("a name")]
        while True:
            dot, part = cursor.peek(), cursor.peek(1)
            if dot is None or dot.kind is not TokenKind.DOT or part is None \
                    or not _is_name_part(part):
                break
            cursor.i += 2
            parts.append(part)
        if len(parts) > 1 and parts[0].value.lower() == "live":
            parts = parts[1:]
        text = cursor.source[parts[0].start:parts[-1].end]
        return Name(tuple(p.value for p in parts), text)

    # -- datasets -------------------------------------------------------------------------
    def _dataset(self, dataset_type: DatasetType, header: _Header) -> Statement:
        """The rest of a dataset statement, after its keywords.

        :param dataset_type: What the keywords define.
        :param header: The keywords."""
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
        if self._at_kind(TokenKind.LPAREN):
            self._elements(statement)
        properties = _Properties()
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
            self._clause(statement, properties)
        if statement.query is None and dataset_type is not DatasetType.STREAMING_TABLE:
            raise cursor.error(None, f"a {dataset_type.value.lower()} needs AS <query>",
                               dataset=name.dataset)
        properties.apply(statement, self.base_dir, self.findings)
        return statement

    def _auto_cdc_table(self, statement: DatasetStatement) -> Statement:
        """``CREATE STREAMING TABLE ... FLOW AUTO CDC ...`` (Spark 4.3+ only).

        :param statement: The table read so far."""
        cursor = self.cursor
        token = cursor.tokens[cursor.i]
        if not self.auto_cdc:
            raise cursor.unsupported(token, "AUTO CDC (on this Spark)", _AUTO_CDC_FIX,
                                     dataset=statement.name.dataset)
        if not statement.rules.empty:
            raise auto_cdc_target_error(statement.name.dataset,
                                        Where(statement.position.at_line(), sql=True))
        passed = self._pass_through_without_refresh()
        passed.flow_target = statement.name.dataset
        return passed

    def _elements(self, statement: DatasetStatement) -> None:
        """The parenthesised list: column definitions and ``CONSTRAINT ... EXPECT`` clauses.

        :param statement: The dataset being read; columns and rules are added to it.
        """
        cursor = self.cursor
        open_index = cursor.i
        close_index = cursor.matching(open_index)
        inner = cursor.tokens[open_index + 1:close_index]
        cursor.i = close_index + 1
        if not inner:
            raise cursor.error(cursor.tokens[close_index], "empty column list '()'",
                               dataset=statement.name.dataset)
        for element, comma in _split_top_level(inner):
            end = comma if comma is not None else cursor.tokens[close_index]
            if not element:
                raise cursor.error(end, "empty entry in the column list",
                                   dataset=statement.name.dataset)
            if (is_keyword(element[0], "CONSTRAINT") and len(element) >= 3
                    and _is_name_part(element[1])
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
        """:meth:`_constraint`, counted; its error named by dataset, expectation and place.

        :param statement: The dataset being read.
        :param element: The clause's tokens.
        :param end: The ``,`` or ``)`` after it.
        """
        if self.findings is not None:
            self.findings.constraints += 1
        try:
            self._constraint(statement, element, end)
        except SdpExpectError as error:
            self._keep(SdpExpectError(
                error.code, error.detail, dataset=error.dataset or statement.name.dataset,
                expectation=error.expectation or element[1].value, fix=error.fix,
                location=error.place or self.cursor.position(element[0]).at_line()))

    def _keep(self, error: SdpExpectError) -> None:
        """Raise ``error`` (:func:`parse`), or keep it and read on (:func:`check`).

        :param error: An error that need not end the statement.
        """
        if self.findings is None:
            raise error
        self.findings.errors.append(error)

    def _constraint(self, statement: DatasetStatement, element: Sequence[Token],
                    end: Token) -> None:
        """``CONSTRAINT name EXPECT (expr) [ON VIOLATION ...]``: one more rule.

        :param statement: The dataset being read.
        :param element: The clause's tokens.
        :param end: The ``,`` or ``)`` after it.
        """
        cursor = self.cursor
        dataset = statement.name.dataset
        keyword = element[2]
        if not is_keyword(keyword, "EXPECT"):
            raise cursor.unsupported(
                keyword, f"a {keyword.text.upper()} constraint",
                "remove it (open-source SDP datasets do not take CHECK, PRIMARY KEY, FOREIGN "
                "KEY or UNIQUE constraints); to check records write CONSTRAINT name EXPECT "
                "(condition)", dataset=dataset)
        name = element[1].value
        origin = cursor.position(element[0]).at_line()
        if len(element) < 4 or element[3].kind is not TokenKind.LPAREN:
            found = element[3] if len(element) > 3 else None
            raise cursor.error(found if found is not None else element[-1],
                               f"expected '(' after EXPECT, found {_shown(found)}",
                               dataset=dataset)
        close = matching_paren(element, 3)
        if close is None:
            raise cursor.error(element[3], "'(' is never closed", dataset=dataset)
        inner = element[4:close]
        constraint = cursor.source[inner[0].start:inner[-1].end] if inner else ""
        rest = list(element[close + 1:])
        action = Action.WARN
        if rest:
            words = [t.text.upper() if t.kind is TokenKind.IDENT else t.text for t in rest]
            if words == ["ON", "VIOLATION", "DROP", "ROW"]:
                action = Action.DROP
            elif words == ["ON", "VIOLATION", "FAIL", "UPDATE"]:
                action = Action.FAIL
            else:
                bad = _first_mismatch(rest, end)
                raise cursor.error(bad, f"expected ON VIOLATION DROP ROW, ON VIOLATION FAIL "
                                   f"UPDATE, ',' or ')' after the constraint, found "
                                   f"{_shown(bad)}", dataset=dataset)
        statement.checked = True
        statement.rules.add(make_expectation(name, constraint, action, dataset=dataset,
                                             place=origin))

    def _clause(self, statement: DatasetStatement, properties: _Properties) -> None:
        """One clause between the name (or column list) and ``AS``.

        :param statement: The dataset being read.
        :param properties: Its ``sdp_expect.*`` properties so far."""
        cursor = self.cursor
        token = cursor.tokens[cursor.i]
        dataset = statement.name.dataset
        if cursor.at("COMMENT"):
            cursor.take("COMMENT")
            statement.comment = cursor.expect_kind(TokenKind.STRING, "a string after COMMENT").text
        elif cursor.at("TBLPROPERTIES"):
            cursor.take("TBLPROPERTIES")
            if not self._at_kind(TokenKind.LPAREN):
                raise cursor.error(cursor.peek(), "expected '(' after TBLPROPERTIES, found "
                                   f"{_shown(cursor.peek())}", dataset=dataset)
            close = cursor.matching(cursor.i)
            inner = cursor.tokens[cursor.i + 1:close]
            cursor.i = close + 1
            for prop, comma in _split_top_level(inner):
                if not prop:
                    raise cursor.error(comma, "empty entry in TBLPROPERTIES", dataset=dataset)
                properties.read(cursor, prop, statement)
        elif cursor.at_sequence("PARTITIONED", "BY"):
            cursor.i += 2
            statement.partitioned_by = self._parenthesised("PARTITIONED BY", dataset)
        elif cursor.at_sequence("CLUSTER", "BY"):
            cursor.i += 2
            if cursor.at("AUTO", "NONE"):
                raise cursor.unsupported(
                    cursor.tokens[cursor.i], f"CLUSTER BY {cursor.tokens[cursor.i].text.upper()}",
                    "name the clustering columns, CLUSTER BY (col, ...), or remove the clause",
                    dataset=dataset)
            statement.cluster_by = self._parenthesised("CLUSTER BY", dataset)
        elif cursor.at("USING"):
            cursor.take("USING")
            statement.using = cursor.expect_kind(TokenKind.IDENT, "a format after USING").text
        elif cursor.at("LOCATION"):
            raise cursor.unsupported(
                token, "LOCATION", "remove LOCATION: open-source SDP keeps pipeline datasets "
                "where the catalog puts them", dataset=dataset)
        elif cursor.at("WITH") or cursor.at_sequence("ROW", "FILTER"):
            raise cursor.unsupported(
                token, "a ROW FILTER", "remove the row filter: row filters are a Unity Catalog "
                "feature; filter the rows in the query instead", dataset=dataset)
        elif cursor.at("SCHEDULE", "TRIGGER", "REFRESH"):
            raise cursor.unsupported(
                token, f"{token.text.upper()} (a refresh schedule)", "remove it and run "
                "spark-pipelines run from your own scheduler", dataset=dataset)
        else:
            raise cursor.error(token, f"unexpected {_shown(token)}; expected COMMENT, "
                               "TBLPROPERTIES, PARTITIONED BY, CLUSTER BY, USING or AS <query>",
                               dataset=dataset)

    def _parenthesised(self, clause: str, dataset: str) -> str:
        """A ``( ... )`` list as written.

        :param clause: The clause it belongs to, for messages.
        :param dataset: The dataset, for messages."""
        cursor = self.cursor
        token = cursor.peek()
        if token is None or token.kind is not TokenKind.LPAREN:
            raise cursor.error(token, f"expected '(' after {clause}, found {_shown(token)}",
                               dataset=dataset)
        close = cursor.matching(cursor.i)
        text = cursor.text(cursor.tokens[cursor.i], cursor.tokens[close])
        cursor.i = close + 1
        return text

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
                               f"found {_shown(cursor.peek())}", dataset=target.dataset)
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
    ``TEMPORARY`` on a table is the old ``PRIVATE``.

    :param words: The keywords after ``CREATE [OR ...]``, the kind last.
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


def _split_top_level(tokens: Sequence[Token]) -> list[tuple[list[Token], Optional[Token]]]:
    """Split at commas outside parentheses, brackets and type angle brackets.

    :param tokens: The tokens inside a parenthesised list.
    :returns: Each element with the comma that ends it (None for the last).
    """
    elements: list[tuple[list[Token], Optional[Token]]] = []
    current: list[Token] = []
    depth = 0
    angle = 0
    for token in tokens:
        kind = token.kind
        if kind in (TokenKind.LPAREN, TokenKind.LBRACKET):
            depth += 1
        elif kind in (TokenKind.RPAREN, TokenKind.RBRACKET):
            depth -= 1
        elif kind is TokenKind.OPERATOR and depth == 0 and set(token.text) <= {"<", ">"}:
            angle = max(0, angle + token.text.count("<") - token.text.count(">"))
        elif kind is TokenKind.COMMA and depth == 0 and angle == 0:
            elements.append((current, token))
            current = []
            continue
        current.append(token)
    elements.append((current, None))
    return elements


def _first_mismatch(rest: Sequence[Token], end: Token) -> Token:
    """The first token that no ``ON VIOLATION ...`` clause allows there (``end`` if too short).

    :param rest: The tokens after a constraint's closing parenthesis.
    :param end: The ``,`` or ``)`` after them.
    """
    expected = [("ON",), ("VIOLATION",), ("DROP", "FAIL")]
    for index, token in enumerate(rest):
        if index < len(expected):
            if not is_keyword(token, *expected[index]):
                return token
            continue
        previous = rest[2].text.upper()
        if index == 3 and is_keyword(token, "ROW" if previous == "DROP" else "UPDATE"):
            continue
        return token
    return end


# --------------------------------------------------------------------------------- TBLPROPERTIES

_BOOLEAN = {"true": True, "false": False}
_KNOWN_KEYS = ("sdp_expect.quarantine", "sdp_expect.quarantine.name", "sdp_expect.metrics",
               "sdp_expect.rules", "sdp_expect.rules.tag")


class _Properties:
    """The ``sdp_expect.*`` table properties of one dataset, collected then applied."""

    def __init__(self) -> None:
        self.quarantine: Optional[bool] = None
        self.quarantine_name: Optional[str] = None
        self.metrics: Optional[bool] = None
        self.rules: Optional[str] = None
        self.rules_at: Optional[Position] = None
        self.tag: Optional[str] = None

    def read(self, cursor: _Cursor, prop: Sequence[Token], statement: DatasetStatement) -> None:
        """Read one ``key [=] value`` entry: keep it for the table, or take it for sdp-expect.

        :param cursor: The statement's tokens.
        :param prop: The entry's tokens.
        :param statement: The dataset being read.
        """
        dataset = statement.name.dataset
        index = 0
        if prop[0].kind is TokenKind.STRING:
            key = prop[0].value
            index = 1
        else:
            parts = []
            while index < len(prop) and _is_name_part(prop[index]):
                parts.append(prop[index].value)
                index += 1
                if index < len(prop) and prop[index].kind is TokenKind.DOT:
                    index += 1
                else:
                    break
            if not parts:
                raise cursor.error(prop[0], f"expected a property key, found {_shown(prop[0])}",
                                   dataset=dataset)
            key = ".".join(parts)
        if index < len(prop) and prop[index].kind is TokenKind.OPERATOR and prop[index].text == "=":
            index += 1
        rest = prop[index:]
        if len(rest) > 1:
            raise cursor.error(rest[1], f"unexpected {_shown(rest[1])} in the property {key!r}",
                               dataset=dataset)
        value = None if not rest else rest[0].value
        if not key.lower().startswith("sdp_expect."):
            statement.table_properties.append(cursor.text(prop[0], prop[-1]))
            return
        statement.checked = True
        where = cursor.position(prop[0])
        self._take(key.lower(), value, where, dataset)

    def _take(self, key: str, value: Optional[str], where: Position, dataset: str) -> None:
        def problem(detail: str) -> SdpExpectError:
            return SdpExpectError(_SQL_304, detail, dataset=dataset, location=where.at_column())

        if key not in _KNOWN_KEYS:
            raise problem(f"unknown table property {key!r}")
        if value is None or not value.strip():
            raise problem(f"the table property {key!r} needs a value")
        if key in ("sdp_expect.quarantine", "sdp_expect.metrics"):
            flag = _BOOLEAN.get(value.strip().lower())
            if flag is None:
                raise problem(f"{key} = {value!r} is not 'true' or 'false'")
            if key == "sdp_expect.quarantine":
                self.quarantine = flag
            else:
                self.metrics = flag
        elif key == "sdp_expect.quarantine.name":
            self.quarantine_name = value.strip()
        elif key == "sdp_expect.rules":
            self.rules = value
            self.rules_at = where
        else:
            self.tag = value

    def apply(self, statement: DatasetStatement, base_dir: Optional[str],
              findings: Optional[Findings] = None) -> None:
        """Set the per-dataset options, then append the rule file's rules (after CONSTRAINTs).

        :param statement: The dataset read.
        :param base_dir: Where a relative rule-file path starts.
        :param findings: Where the rule file is recorded as checked, when given.
        :raises RuleFileError: listing every error of the rule file.
        """
        rules = statement.rules
        if self.quarantine_name is not None:
            rules.quarantine = QuarantineSpec(name=self.quarantine_name)
        elif self.quarantine:
            rules.quarantine = QuarantineSpec()
        rules.metrics = self.metrics
        if self.tag is not None and self.rules is None:
            raise SdpExpectError(_SQL_304, "'sdp_expect.rules.tag' without 'sdp_expect.rules'",
                                 dataset=rules.dataset, location=statement.position.at_line())
        if self.rules is not None:
            folder = base_dir if base_dir is not None else os.getcwd()
            checked = rule_files.check_file(self.rules, base_dir=folder, dataset=rules.dataset)
            if findings is not None:
                findings.rule_files.append(RuleFileUse(
                    checked, folder, self.rules_at or statement.position, rules.dataset))
            checked.raise_errors()
            rules.extend(checked.select(self.tag))
