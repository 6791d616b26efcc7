"""A tokenizer for Spark SQL text, kept apart from any parser.

The tokenizer follows the lexical rules of Apache Spark's SQL grammar closely
enough to find where each string, quoted identifier and comment starts and
ends, so that later checks never mistake text inside a quote or a comment for
SQL. It does not decide whether the text is a valid statement or expression.

Lexical rules followed (as in Spark 4.x):

- ``'...'`` and ``"..."`` are string literals. A backslash escapes the next
  character (``\\n``, ``\\t``, ``\\u00e9``, octal ``\\101``...; ``\\%`` and
  ``\\_`` keep their backslash) and a doubled quote (``''`` inside ``'...'``)
  stands for one quote. ``r'...'`` / ``R"..."`` are raw strings: no escapes.
- `` `...` `` is a quoted identifier; two backticks inside it stand for one.
- ``-- ...`` runs to the end of the line; a backslash right before the line
  break continues the comment on the next line.
- ``/* ... */`` may nest: ``/* a /* b */ c */`` is one comment. Outside a
  comment, ``*/`` is one token (Spark's end-of-hint token), never ``*`` then
  ``/``. A hint ``/*+ ... */`` is read as a comment.
- Identifiers are runs of letters, digits and underscores (they may start with
  a digit, as in Spark: ``1a`` is an identifier, ``10L`` a number). Letters
  outside ASCII are accepted; Spark itself decides whether they are valid.

Everything runs in time linear in the length of the text, without recursion.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Optional, Sequence

__all__ = [
    "SqlTokenError",
    "Token",
    "TokenKind",
    "is_keyword",
    "matching_paren",
    "mentions_stream",
    "split_statements",
    "sql_string",
    "tokenize",
]


class TokenKind(enum.Enum):
    """The kind of a :class:`Token`."""

    IDENT = "identifier"
    """A bare identifier or keyword, e.g. ``amount``, ``AND``, ``1a``."""
    QUOTED_IDENT = "quoted identifier"
    """A backtick-quoted identifier, e.g. `` `weird col` ``."""
    STRING = "string"
    """A string literal, e.g. ``'it''s'``, ``"a\\"b"``, ``r'\\d+'``."""
    NUMBER = "number"
    """A numeric literal, e.g. ``42``, ``1.5``, ``.5``, ``1e-3``, ``10L``, ``2BD``."""
    OPERATOR = "operator"
    """An operator, e.g. ``=``, ``<=>``, ``||``, ``::``, ``->``."""
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    SEMICOLON = ";"
    DOT = "."
    LBRACKET = "["
    RBRACKET = "]"
    COMMENT = "comment"
    """A ``--`` or ``/* */`` comment; produced only with ``keep_comments=True``."""
    OTHER = "other"
    """Any other character, e.g. ``?``, ``{``, ``@``; also ``*/`` outside a comment."""


@dataclass(frozen=True)
class Token:
    """One token of SQL text.

    :param kind: What the token is.
    :param text: The token exactly as it appears in the source.
    :param value: For an identifier, its text; for a quoted identifier, the name
        without the backticks; for a string, its content with escapes resolved;
        otherwise the same as ``text``.
    :param start: 0-based offset of the token's first character in the source.
    :param end: 0-based offset just past the token's last character, so that
        ``source[start:end] == text``.
    :param line: 1-based line of the token's first character (lines end at ``\\n``).
    :param col: 1-based column of the token's first character.
    """

    kind: TokenKind
    text: str
    value: str
    start: int
    end: int
    line: int
    col: int


class SqlTokenError(ValueError):
    """The text cannot be split into tokens: a quote or comment is never closed.

    :param message: What is wrong, without the position.
    :param line: 1-based line where the unclosed construct starts.
    :param col: 1-based column where the unclosed construct starts.
    """

    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message, line, col)
        self.message = message
        self.line = line
        self.col = col

    def __str__(self) -> str:
        return f"{self.message} at line {self.line}, column {self.col}"


# The token that starts after any whitespace at a position. Strings, quoted
# identifiers and block comments only have their opening matched here (group
# "open"): they are scanned by hand, to handle escapes and nesting. The last
# alternatives match any character and the end of the text, so a match always
# succeeds.
_MASTER = re.compile(
    r"""
    \s*
    (?:
    (?P<number>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(?:[bB][dD]|[lLsSyYfFdD])?)
    |(?P<word>\w+)
    |(?P<punct>[(),;.\[\]])
    |(?P<line_comment>--(?:[^\r\n\\]+|\\\n?)*)
    |(?P<open>['"`]|/\*)
    |(?P<hint_end>\*/)
    |(?P<operator><=>|>>>|<<|>>|==|!=|<>|<=|>=|!<|!>|\|\||\|>|::|->|=>|[=<>+\-*/%~&|^:!])
    |(?P<other>.)
    |(?P<eof>\Z)
    )
    """,
    re.VERBOSE | re.DOTALL,
)

_PUNCT_KINDS = {
    "(": TokenKind.LPAREN,
    ")": TokenKind.RPAREN,
    ",": TokenKind.COMMA,
    ";": TokenKind.SEMICOLON,
    ".": TokenKind.DOT,
    "[": TokenKind.LBRACKET,
    "]": TokenKind.RBRACKET,
}

_WORD_CHAR = re.compile(r"\w")
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"[0-9]+")
_SINGLE_QUOTE_STOP = re.compile(r"['\\]")
_DOUBLE_QUOTE_STOP = re.compile(r"[\"\\]")
_BLOCK_COMMENT_MARK = re.compile(r"/\*|\*/")

_SIMPLE_ESCAPES = {
    "0": "\x00",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    # Spark keeps the backslash before % and _ so that LIKE patterns still see it.
    "%": "\\%",
    "_": "\\_",
}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_OCTAL_ESCAPE = re.compile(r"[01][0-7][0-7]")  # Spark reads \000 to \177 only


def _unescape_string(body: str, quote: str) -> str:
    """Resolve the escapes of a (non-raw) string literal's ``body`` (without its enclosing
    ``quote`` characters), as Spark does."""
    if "\\" not in body and quote * 2 not in body:
        return body
    out: list[str] = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c == quote:
            # Only a doubled quote can occur inside a well-formed body.
            out.append(quote)
            i += 2
            continue
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and i + 6 <= n and all(h in _HEX_DIGITS for h in body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
            continue
        if nxt == "U" and i + 10 <= n and all(h in _HEX_DIGITS for h in body[i + 2 : i + 10]):
            code = int(body[i + 2 : i + 10], 16)
            if code <= 0x10FFFF:
                out.append(chr(code))
                i += 10
                continue
        if _OCTAL_ESCAPE.match(body, i + 1):
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
            continue
        out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _scan_quoted(text: str, pos: int) -> int:
    """Return the end offset of the string literal opening at ``pos``, or -1 if unclosed."""
    quote = text[pos]
    stop = _SINGLE_QUOTE_STOP if quote == "'" else _DOUBLE_QUOTE_STOP
    n = len(text)
    i = pos + 1
    while True:
        m = stop.search(text, i)
        if m is None:
            return -1
        j = m.start()
        if text[j] == "\\":
            if j + 1 >= n:
                return -1
            i = j + 2
        elif j + 1 < n and text[j + 1] == quote:
            i = j + 2
        else:
            return j + 1


def _scan_backticks(text: str, pos: int) -> int:
    """Return the end offset of the quoted identifier opening at ``pos``, or -1 if unclosed."""
    n = len(text)
    i = pos + 1
    while True:
        j = text.find("`", i)
        if j < 0:
            return -1
        if j + 1 < n and text[j + 1] == "`":
            i = j + 2
        else:
            return j + 1


def _scan_block_comment(text: str, pos: int) -> int:
    """Return the end offset of the (maybe nested) comment opening at ``pos``, or -1."""
    depth = 1
    i = pos + 2
    while True:
        m = _BLOCK_COMMENT_MARK.search(text, i)
        if m is None:
            return -1
        i = m.end()
        if m.group() == "/*":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i


def tokenize(text: str, *, keep_comments: bool = False) -> list[Token]:
    """Split Spark SQL text into tokens.

    Whitespace is skipped; comments are skipped unless ``keep_comments`` is set.
    The text between consecutive tokens is always whitespace or comments, so the
    source can be rebuilt from the tokens' ``start``/``end`` offsets.

    :param text: The SQL text.
    :param keep_comments: Also return comments, as :attr:`TokenKind.COMMENT` tokens.
    :raises SqlTokenError: A string literal, quoted identifier or block comment
        is not closed before the end of the text.
    """
    tokens: list[Token] = []
    append = tokens.append
    match = _MASTER.match
    n = len(text)
    ident, number, string = TokenKind.IDENT, TokenKind.NUMBER, TokenKind.STRING
    comment, operator, other = TokenKind.COMMENT, TokenKind.OPERATOR, TokenKind.OTHER
    punct_kinds = _PUNCT_KINDS
    # Line bookkeeping: `line` is the line of `line_start`, and `next_break` the
    # first "\n" at or after it (-1 when there is none). Moved forward lazily, so
    # that each character is looked at a bounded number of times.
    line = 1
    line_start = 0
    next_break = text.find("\n")
    pos = 0
    while True:
        m = match(text, pos)
        assert m is not None  # the pattern matches any character and the end
        group = m.lastgroup
        if group is None or group == "eof":
            return tokens
        start, end = m.span(group)
        if 0 <= next_break < start:
            line += text.count("\n", next_break, start)
            line_start = text.rfind("\n", next_break, start) + 1
            next_break = text.find("\n", start)
        kind: TokenKind
        value: Optional[str] = None
        if group == "word":
            kind = ident
            if end - start == 1 and end < n and text[start] in "rR" and text[end] in "'\"":
                # A raw string: r'...' has no escapes and no doubled quotes.
                close = text.find(text[end], end + 1)
                if close < 0:
                    raise SqlTokenError("unterminated string literal", line, start - line_start + 1)
                end = close + 1
                kind = string
                value = text[start + 2 : close]
        elif group == "punct":
            kind = punct_kinds[text[start]]
        elif group == "operator":
            kind = operator
        elif group == "number":
            kind = number
            if end < n and _WORD_CHAR.match(text, end):
                # As in Spark, a letter right after a number makes a longer identifier
                # ("123abc"); "1.5x" and ".5x" split at the dot.
                dot = text.find(".", start, end)
                if dot == start:
                    kind, end = TokenKind.DOT, start + 1
                else:
                    word = _WORD.match(text, start, dot if dot > 0 else n)
                    assert word is not None  # text[start] is a digit
                    end = word.end()
                    if not _DIGITS.fullmatch(text, start, end):
                        kind = ident
        elif group == "open":
            opener = text[start]
            if opener == "`":
                end = _scan_backticks(text, start)
                kind = TokenKind.QUOTED_IDENT
                what = "unterminated quoted identifier"
            elif opener == "/":
                end = _scan_block_comment(text, start)
                kind = comment
                what = "unterminated comment"
            else:
                end = _scan_quoted(text, start)
                kind = string
                what = "unterminated string literal"
            if end < 0:
                raise SqlTokenError(what, line, start - line_start + 1)
            if kind is string:
                value = _unescape_string(text[start + 1 : end - 1], opener)
            elif kind is not comment:
                value = text[start + 1 : end - 1].replace("``", "`")
        elif group == "line_comment":
            kind = comment
        elif group == "hint_end":
            # Outside a comment, Spark reads "*/" as one token (the end of a hint),
            # so "2*/*c*/3" is not "2 * 3".
            kind = other
        else:
            kind = other
        if kind is not comment or keep_comments:
            token_text = text[start:end]
            append(
                Token(
                    kind,
                    token_text,
                    token_text if value is None else value,
                    start,
                    end,
                    line,
                    start - line_start + 1,
                )
            )
        pos = end


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal: quotes and backslashes escaped.

    Rule names and constraints reach generated SQL only through this function,
    so a name such as ``it's; --`` stays data and cannot change the query. A
    ``$`` is written as the escape ``\\u0024``: Spark substitutes ``${...}``
    variables in SQL text before parsing it, and a name must not be rewritten.
    """
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("$", "\\u0024")
    return "'" + escaped + "'"


def matching_paren(tokens: Sequence[Token], open_index: int) -> Optional[int]:
    """Index of the ``)`` that closes the ``(`` at ``open_index``; None when it is not closed.

    :param tokens: Tokens of one text, as :func:`tokenize` gives them.
    :param open_index: Index of a ``(`` in ``tokens``.
    """
    depth = 0
    for index in range(open_index, len(tokens)):
        if tokens[index].kind is TokenKind.LPAREN:
            depth += 1
        elif tokens[index].kind is TokenKind.RPAREN:
            depth -= 1
            if depth == 0:
                return index
    return None


def is_keyword(token: Token, *words: str) -> bool:
    """Whether ``token`` is a bare identifier equal to one of ``words``, ignoring case.

    A backtick-quoted identifier is never a keyword.

    :param token: The token to test.
    :param words: The keywords to compare with, e.g. ``"SELECT"``.
    """
    if token.kind is not TokenKind.IDENT:
        return False
    text = token.text.lower()
    return any(text == word.lower() for word in words)


def split_statements(text: str) -> list[tuple[str, int]]:
    """Split SQL text into its ``;``-separated statements.

    A ``;`` inside a string, a quoted identifier or a comment does not end a
    statement. Each statement's text is returned exactly as written from its
    first token to its last, not counting comments before or after it (comments
    inside it are kept); the ``;`` is left out. Statements made only of
    whitespace and comments are dropped.

    :param text: The SQL text, e.g. the content of a ``.sql`` file.
    :returns: ``(statement_text, line)`` pairs in source order, where ``line``
        is the 1-based line of the statement's first character in ``text``.
    :raises SqlTokenError: A string literal, quoted identifier or block comment
        is not closed.
    """
    statements: list[tuple[str, int]] = []
    first: Optional[Token] = None
    last: Optional[Token] = None
    for token in tokenize(text):
        if token.kind is TokenKind.SEMICOLON:
            if first is not None and last is not None:
                statements.append((text[first.start : last.end], first.line))
            first = last = None
            continue
        if first is None:
            first = token
        last = token
    if first is not None and last is not None:
        statements.append((text[first.start : last.end], first.line))
    return statements


def mentions_stream(sql_text: str) -> bool:
    """Whether SQL text reads a stream (``STREAM x`` or ``STREAM(x)``), from its tokens
    (text that does not tokenize: no)."""
    try:
        tokens = tokenize(sql_text)
    except ValueError:
        return False
    return any(t.kind is TokenKind.IDENT and t.value.upper() == "STREAM" for t in tokens)
