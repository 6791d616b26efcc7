"""The token cursor of one statement, and the token helpers the statement readers share.

A :class:`Cursor` walks the tokens of one statement (as
:func:`sdp_expect.dbsql.split.split` cut them) and makes the reader's errors:
SDPX-SQL-302 for a syntax error, SDPX-SQL-301 for a Databricks-only construct,
each at its token's line and column. The helpers tell name parts apart, cut
``LIVE.`` qualifiers out of the text that is kept as written, and split a
parenthesised list at its top-level commas.

Internal to :mod:`sdp_expect.dbsql`, whose reader starts in
:mod:`sdp_expect.dbsql.parse`. Nothing here imports pyspark.
"""

from __future__ import annotations

from typing import Optional, Sequence

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.sqltokens import Token, TokenKind, is_keyword
from sdp_expect.dbsql.statements import Position

__all__ = ["Cursor", "cut", "is_name_part", "live_spans", "shown", "split_top_level"]

_SQL_301 = "SDPX-SQL-301"
_SQL_302 = "SDPX-SQL-302"


class Cursor:
    """The tokens of one statement (no comments, no ``;``), read left to right.

    ``source`` is the whole file's text, which the tokens' offsets point into, so
    that what is kept is cut from it as written; ``file`` is the file as shown to
    the user, for the place of each error.
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

    def at_kind(self, kind: TokenKind) -> bool:
        token = self.peek()
        return token is not None and token.kind is kind

    def take(self, what: str) -> Token:
        token = self.peek()
        if token is None:
            raise self.error(None, f"expected {what}, found the end of the statement")
        self.i += 1
        return token

    def expect(self, word: str, what: Optional[str] = None) -> Token:
        token = self.peek()
        if token is None or not is_keyword(token, word):
            raise self.error(token, f"expected {what or word}, found {shown(token)}")
        self.i += 1
        return token

    def expect_kind(self, kind: TokenKind, what: str) -> Token:
        token = self.peek()
        if token is None or token.kind is not kind:
            raise self.error(token, f"expected {what}, found {shown(token)}")
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
        """The source from ``first`` to ``last`` (tokens of this statement) as written,
        ``LIVE.`` qualifiers removed: user text is kept byte for byte, except what open
        source cannot read."""
        start = self.tokens.index(first)
        end = self.tokens.index(last)
        return _without_live(self.source, self.tokens[start:end + 1])

    def matching(self, open_index: int) -> int:
        """Index of the ``)`` that closes the ``(`` at token index ``open_index``, so that a
        list is read as one piece; SDPX-SQL-302 at the ``(`` when none closes it."""
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


def shown(token: Optional[Token]) -> str:
    """``'token'`` for a message, or "the end of the statement" for None: an error says
    what it found, even when nothing is left to find."""
    return "the end of the statement" if token is None else f"'{token.text}'"


# --------------------------------------------------------------------------------- LIVE.


def is_name_part(token: Token) -> bool:
    """Whether ``token`` can be a part of a name: a part may be bare or in backticks."""
    return token.kind in (TokenKind.IDENT, TokenKind.QUOTED_IDENT)


def live_spans(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """Source spans of the ``LIVE .`` qualifiers in front of names among consecutive tokens;
    never the ``live`` of ``x.live.y``, which is a part of the user's name."""
    spans = []
    for index in range(len(tokens) - 2):
        token = tokens[index]
        if (is_name_part(token) and token.value.lower() == "live"
                and tokens[index + 1].kind is TokenKind.DOT
                and is_name_part(tokens[index + 2])
                and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
            spans.append((token.start, tokens[index + 1].end))
    return spans


def _without_live(source: str, tokens: Sequence[Token]) -> str:
    """The source of consecutive ``tokens`` as written, with ``LIVE.`` qualifiers cut out:
    open source has no ``LIVE`` schema, and a pipeline's names need none."""
    return cut(source, tokens[0].start, tokens[-1].end, live_spans(tokens))


def cut(source: str, start: int, end: int, spans: Sequence[tuple[int, int]]) -> str:
    """``source[start:end]`` without the ``(start, end)`` offset ``spans`` inside it:
    cutting by offsets keeps every other character as written."""
    pieces = []
    position = start
    for span_start, span_end in sorted(spans):
        pieces.append(source[position:span_start])
        position = span_end
    pieces.append(source[position:end])
    return "".join(pieces)


def split_top_level(tokens: Sequence[Token]) -> list[tuple[list[Token], Optional[Token]]]:
    """The elements of a parenthesised list (the tokens inside it), split at the commas
    outside parentheses, brackets and type angle brackets (``MAP<STRING, INT>`` is one
    element), each with the comma that ends it (None for the last), so that an empty
    element's error points at its comma."""
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

