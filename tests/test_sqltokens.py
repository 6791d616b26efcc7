"""Tests of the Spark SQL tokenizer (sdp_expect.base.sqltokens)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.base.sqltokens import (
    SqlTokenError,
    Token,
    TokenKind,
    is_keyword,
    split_statements,
    tokenize,
)

K = TokenKind


def kinds_and_texts(text: str, *, keep_comments: bool = False) -> list[tuple[TokenKind, str]]:
    return [(t.kind, t.text) for t in tokenize(text, keep_comments=keep_comments)]


# -- kinds of tokens ---------------------------------------------------------------------------


def test_identifiers_keywords_and_punctuation_get_their_kinds() -> None:
    assert kinds_and_texts("s.field IS NULL AND f(a, b[0]);") == [
        (K.IDENT, "s"),
        (K.DOT, "."),
        (K.IDENT, "field"),
        (K.IDENT, "IS"),
        (K.IDENT, "NULL"),
        (K.IDENT, "AND"),
        (K.IDENT, "f"),
        (K.LPAREN, "("),
        (K.IDENT, "a"),
        (K.COMMA, ","),
        (K.IDENT, "b"),
        (K.LBRACKET, "["),
        (K.NUMBER, "0"),
        (K.RBRACKET, "]"),
        (K.RPAREN, ")"),
        (K.SEMICOLON, ";"),
    ]


@pytest.mark.parametrize(
    "number",
    [
        "0",
        "42",
        "1.5",
        ".5",
        "1.",
        "1e10",
        "1E+3",
        "2.5e-3",
        "10L",
        "7S",
        "3Y",
        "1.5D",
        "2BD",
        "1.5bd",
        "3F",
        "1e3D",
    ],
)
def test_numeric_literals_are_one_number_token(number: str) -> None:
    assert kinds_and_texts(number) == [(K.NUMBER, number)]


@pytest.mark.parametrize("word", ["123abc", "1_000", "10Lx", "9e"])
def test_digits_followed_by_letters_make_an_identifier_as_in_spark(word: str) -> None:
    assert kinds_and_texts(word) == [(K.IDENT, word)]


def test_a_number_followed_by_a_dotted_name_splits_at_the_dot() -> None:
    assert kinds_and_texts("1.foo") == [(K.NUMBER, "1"), (K.DOT, "."), (K.IDENT, "foo")]


@pytest.mark.parametrize(
    "operator",
    [
        "=",
        "==",
        "<=>",
        "!=",
        "<>",
        "<=",
        ">=",
        "<",
        ">",
        "+",
        "-",
        "*",
        "/",
        "%",
        "||",
        "&",
        "|",
        "^",
        "~",
        "::",
        "->",
        "=>",
        "!",
        "<<",
        ">>",
        ">>>",
        "|>",
        "!<",
        "!>",
        ":",
    ],
)
def test_each_operator_is_one_token_with_longest_match(operator: str) -> None:
    assert kinds_and_texts(f"a {operator} b") == [
        (K.IDENT, "a"),
        (K.OPERATOR, operator),
        (K.IDENT, "b"),
    ]


def test_operators_without_spaces_take_the_longest_match() -> None:
    assert kinds_and_texts("a<=>b<>c::int") == [
        (K.IDENT, "a"),
        (K.OPERATOR, "<=>"),
        (K.IDENT, "b"),
        (K.OPERATOR, "<>"),
        (K.IDENT, "c"),
        (K.OPERATOR, "::"),
        (K.IDENT, "int"),
    ]


@pytest.mark.parametrize("char", ["?", "{", "}", "@", "#", "$", "\\"])
def test_unknown_characters_are_other_tokens(char: str) -> None:
    assert kinds_and_texts(f"a {char} b")[1] == (K.OTHER, char)


# -- strings and quoted identifiers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("'plain'", "plain"),
        ("'it''s'", "it's"),
        ('"say ""hi"""', 'say "hi"'),
        ("'a\\'b'", "a'b"),
        ('"a\\"b"', 'a"b'),
        ("'tab\\there'", "tab\there"),
        ("'\\n\\r\\b\\0'", "\n\r\b\x00"),
        ("'\\u0041\\101'", "AA"),
        ("'\\201'", "201"),
        ("'\\U0001F600'", "\U0001f600"),
        ("'\\Z'", "\x1a"),
        ("'100\\%'", "100\\%"),
        ("'a\\_b'", "a\\_b"),
        ("'\\\\'", "\\"),
        ("'\\q'", "q"),
        ("'it''s ; -- not a comment'", "it's ; -- not a comment"),
        ("'/* no */'", "/* no */"),
        ("r'\\d+'", "\\d+"),
        ('R"C:\\dir"', "C:\\dir"),
        ("'multi\nline'", "multi\nline"),
        ("''", ""),
    ],
)
def test_string_literals_are_unescaped_as_spark_does(literal: str, value: str) -> None:
    (token,) = tokenize(literal)
    assert token.kind is K.STRING
    assert token.text == literal
    assert token.value == value


def test_typed_literal_is_an_identifier_then_a_string() -> None:
    assert kinds_and_texts("date'2020-01-01' <= d") == [
        (K.IDENT, "date"),
        (K.STRING, "'2020-01-01'"),
        (K.OPERATOR, "<="),
        (K.IDENT, "d"),
    ]


def test_only_a_lone_r_before_a_quote_makes_a_raw_string() -> None:
    tokens = tokenize("for'\\'' r'\\'")
    assert [(t.kind, t.text) for t in tokens] == [
        (K.IDENT, "for"),
        (K.STRING, "'\\''"),
        (K.STRING, "r'\\'"),
    ]
    assert [t.value for t in tokens] == ["for", "'", "\\"]


@pytest.mark.parametrize(
    ("quoted", "name"),
    [("`weird col`", "weird col"), ("`a``b`", "a`b"), ("`select`", "select"), ("`;--`", ";--")],
)
def test_backticks_quote_an_identifier_with_doubled_backtick_escape(quoted: str, name: str) -> None:
    (token,) = tokenize(quoted)
    assert (token.kind, token.text, token.value) == (K.QUOTED_IDENT, quoted, name)


# -- comments ----------------------------------------------------------------------------------


def test_comments_are_dropped_unless_kept() -> None:
    text = "a -- line; comment\n+ /* block ; */ b"
    assert kinds_and_texts(text) == [(K.IDENT, "a"), (K.OPERATOR, "+"), (K.IDENT, "b")]
    assert kinds_and_texts(text, keep_comments=True) == [
        (K.IDENT, "a"),
        (K.COMMENT, "-- line; comment"),
        (K.OPERATOR, "+"),
        (K.COMMENT, "/* block ; */"),
        (K.IDENT, "b"),
    ]


def test_block_comments_nest() -> None:
    assert kinds_and_texts("/* a /* b */ still comment */ x", keep_comments=True) == [
        (K.COMMENT, "/* a /* b */ still comment */"),
        (K.IDENT, "x"),
    ]


def test_a_line_comment_continues_after_a_backslash_at_the_end_of_a_line() -> None:
    # Spark: SELECT 1 -- a \<newline> + 1  returns 1.
    tokens = tokenize("1 -- a \\\n + 1\n + 2", keep_comments=True)
    assert [(t.kind, t.text) for t in tokens] == [
        (K.NUMBER, "1"),
        (K.COMMENT, "-- a \\\n + 1"),
        (K.OPERATOR, "+"),
        (K.NUMBER, "2"),
    ]
    assert (tokens[2].line, tokens[2].col) == (3, 2)


def test_a_comment_end_outside_a_comment_is_one_token_as_in_spark() -> None:
    # Spark fails on "2*/*c*/3" at the "*/": it is not "2 * /*c*/ 3".
    assert kinds_and_texts("2*/*c*/3") == [
        (K.NUMBER, "2"),
        (K.OTHER, "*/"),
        (K.OPERATOR, "*"),
        (K.IDENT, "c"),
        (K.OTHER, "*/"),
        (K.NUMBER, "3"),
    ]
    assert kinds_and_texts("2 * /*c*/3") == [(K.NUMBER, "2"), (K.OPERATOR, "*"), (K.NUMBER, "3")]


def test_comment_markers_inside_strings_and_backticks_are_text() -> None:
    assert kinds_and_texts("'--' `/*` \"*/\"") == [
        (K.STRING, "'--'"),
        (K.QUOTED_IDENT, "`/*`"),
        (K.STRING, '"*/"'),
    ]


def test_a_line_comment_at_the_end_of_the_text_needs_no_newline() -> None:
    assert kinds_and_texts("x -- end", keep_comments=True) == [
        (K.IDENT, "x"),
        (K.COMMENT, "-- end"),
    ]


# -- positions ---------------------------------------------------------------------------------


def test_tokens_carry_offsets_lines_and_columns() -> None:
    text = "a = 1\n  AND `b c` IN ('x',\n'y')"
    tokens = tokenize(text)
    for token in tokens:
        assert text[token.start : token.end] == token.text
    where = {t.text: (t.line, t.col) for t in tokens}
    assert where["a"] == (1, 1)
    assert where["AND"] == (2, 3)
    assert where["`b c`"] == (2, 7)
    assert where["'y'"] == (3, 1)


def test_positions_after_a_multiline_string_and_comment_count_its_lines() -> None:
    tokens = tokenize("'a\nb' /* c\nd */ x")
    assert (tokens[-1].text, tokens[-1].line, tokens[-1].col) == ("x", 3, 6)


def test_carriage_returns_do_not_start_lines() -> None:
    tokens = tokenize("a\r\nb")
    assert [(t.text, t.line, t.col) for t in tokens] == [("a", 1, 1), ("b", 2, 1)]


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "line", "col"),
    [
        ("x = 'abc", "unterminated string literal", 1, 5),
        ('x = "abc\\"', "unterminated string literal", 1, 5),
        ("x = 'ab\\", "unterminated string literal", 1, 5),
        ("a\n  r'abc", "unterminated string literal", 2, 3),
        ("x = `abc", "unterminated quoted identifier", 1, 5),
        ("x\n/* a /* b */", "unterminated comment", 2, 1),
        ("/*/", "unterminated comment", 1, 1),
        ("'it''", "unterminated string literal", 1, 1),
    ],
)
def test_unclosed_quotes_and_comments_raise_with_their_position(
    text: str, message: str, line: int, col: int
) -> None:
    with pytest.raises(SqlTokenError) as caught:
        tokenize(text)
    error = caught.value
    assert (error.message, error.line, error.col) == (message, line, col)
    assert str(error) == f"{message} at line {line}, column {col}"
    assert isinstance(error, ValueError)


def test_token_errors_survive_pickling() -> None:
    error = SqlTokenError("unterminated comment", 3, 4)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.message, copy.line, copy.col, str(copy)) == (
        "unterminated comment",
        3,
        4,
        "unterminated comment at line 3, column 4",
    )


# -- helpers -----------------------------------------------------------------------------------


def test_is_keyword_matches_bare_identifiers_ignoring_case() -> None:
    select, quoted, string = tokenize("SeLeCt `select` 'select'")
    assert is_keyword(select, "select")
    assert is_keyword(select, "FROM", "SELECT")
    assert not is_keyword(select, "FROM")
    assert not is_keyword(quoted, "select")
    assert not is_keyword(string, "select")


def test_tokens_are_frozen_values() -> None:
    token = tokenize("abc")[0]
    assert token == Token(K.IDENT, "abc", "abc", 0, 3, 1, 1)
    with pytest.raises(AttributeError):
        token.text = "x"  # type: ignore[misc]


def test_split_statements_ignores_semicolons_in_quotes_and_comments() -> None:
    text = (
        "-- header; comment\n"
        "CREATE TABLE a AS SELECT ';' AS s;\n"
        "\n"
        'CREATE VIEW `b;c` AS /* ; */ SELECT "x;" -- tail;\n'
        ";;  \n"
        "  SELECT 3 ; -- trailing; comment only\n"
        "SELECT 4 -- no semicolon after the last one\n"
    )
    assert split_statements(text) == [
        ("CREATE TABLE a AS SELECT ';' AS s", 2),
        ('CREATE VIEW `b;c` AS /* ; */ SELECT "x;"', 4),
        ("SELECT 3", 6),
        ("SELECT 4", 7),
    ]


def test_split_statements_of_only_comments_and_semicolons_is_empty() -> None:
    assert split_statements(" ; -- a;\n /* ; */ ;\n") == []


def test_split_statements_raises_on_an_unclosed_quote() -> None:
    with pytest.raises(SqlTokenError) as caught:
        split_statements("SELECT 1;\nSELECT 'oops;")
    assert (caught.value.line, caught.value.col) == (2, 8)


# -- properties --------------------------------------------------------------------------------

SQLISH = st.text(alphabet="ab1 \n\t'\"`\\-/*;()[].,rR=<>!|:eE+%_?{", max_size=60)
ANY_TEXT = st.one_of(st.text(max_size=60), SQLISH)


@given(ANY_TEXT)
def test_tokenize_raises_nothing_but_sql_token_error(text: str) -> None:
    try:
        tokens = tokenize(text, keep_comments=True)
    except SqlTokenError as error:
        assert error.line >= 1 and error.col >= 1
    else:
        assert all(t.end > t.start for t in tokens)


@given(ANY_TEXT)
def test_token_texts_and_the_gaps_between_them_rebuild_the_input(text: str) -> None:
    try:
        with_comments = tokenize(text, keep_comments=True)
    except SqlTokenError:
        return
    rebuilt = []
    offset = 0
    for token in with_comments:
        gap = text[offset : token.start]
        assert gap == "" or gap.isspace()
        assert text[token.start : token.end] == token.text
        rebuilt.append(gap)
        rebuilt.append(token.text)
        offset = token.end
    assert text[offset:] == "" or text[offset:].isspace()
    rebuilt.append(text[offset:])
    assert "".join(rebuilt) == text
    without = tokenize(text)
    assert without == [t for t in with_comments if t.kind is not K.COMMENT]


@given(ANY_TEXT)
def test_line_and_column_agree_with_the_offset(text: str) -> None:
    try:
        tokens = tokenize(text, keep_comments=True)
    except SqlTokenError:
        return
    for token in tokens:
        assert token.line == text.count("\n", 0, token.start) + 1
        assert token.col == token.start - (text.rfind("\n", 0, token.start) + 1) + 1


STRING_CONTENT = st.text(alphabet="ab ;'\"\\-/*`()%_\nu0", max_size=20)


@given(STRING_CONTENT, st.sampled_from(["'", '"']), st.booleans())
def test_a_quoted_string_gives_back_its_content(content: str, quote: str, double: bool) -> None:
    body = content.replace("\\", "\\\\")
    body = body.replace(quote, quote * 2 if double else "\\" + quote)
    (token,) = tokenize(quote + body + quote)
    assert token.kind is K.STRING
    assert token.value == content


STATEMENT_PART = st.one_of(
    st.sampled_from(["SELECT", "a", "`x;y`", "1", "(", ")", "=", "'a;b'", '"c;"', "'--;'"]),
    st.text(alphabet="ab; ", max_size=6).map(lambda s: "'" + s + "'"),
)
STATEMENT_GAP = st.sampled_from([" ", "\n", " /* ; */ ", " -- ;x\n", "\t\n "])


@st.composite
def statements(draw: st.DrawFn) -> str:
    parts = draw(st.lists(STATEMENT_PART, min_size=1, max_size=6))
    out = parts[0]
    for part in parts[1:]:
        out += draw(STATEMENT_GAP) + part
    return out


@given(
    st.lists(statements(), max_size=5),
    st.lists(
        st.sampled_from(["", " ", "\n", "\n\n", " -- c;\n", "/* ; */", ";"]), min_size=6, max_size=6
    ),
)
def test_split_statements_round_trips_statements_joined_by_semicolons(
    stmts: list[str], fillers: list[str]
) -> None:
    text = fillers[0]
    expected = []
    for i, stmt in enumerate(stmts):
        if text and not text[-1].isspace():
            text += " "
        expected.append((stmt, text.count("\n") + 1))
        text += stmt + "\n;" + fillers[i + 1]
    assert split_statements(text) == expected


# -- scale -------------------------------------------------------------------------------------


def test_one_megabyte_tokenizes_in_linear_time() -> None:
    chunk = (
        "coalesce(a, b) >= 10 AND name RLIKE '^[a-z]+$' /* c */ -- x\n"
        " OR `c d` IN (1, 2.5, 'x''y')\n"
    )
    text = chunk * (1_000_000 // len(chunk) + 1)
    tokens = tokenize(text)
    assert len(tokens) == 22 * (1_000_000 // len(chunk) + 1)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 200_000 + ")" * 200_000,
        "/*" * 100_000 + "*/" * 100_000,
        "'" + "''" * 200_000 + "'",
        "-- " + "\\\n" * 200_000,
        "`" + "x" * 500_000,
    ],
)
def test_pathological_inputs_finish_quickly_without_recursion(text: str) -> None:
    try:
        tokenize(text)
    except SqlTokenError:
        pass
