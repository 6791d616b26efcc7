"""Static checks of a constraint's text, without Spark.

A constraint is one Spark SQL boolean expression evaluated on each record on
its own. :func:`check_constraint` finds, from the tokens alone, two kinds of
mistakes:

- ``SDPX-VAL-011``: the text is not a well-formed expression (an unclosed
  quote, comment, parenthesis or bracket, a ``;``, nothing but comments, an
  operator with an operand missing, such as ``x >`` or ``x > 0 AND``, an empty
  place in a comma list). Only
  mistakes that no valid Spark SQL expression contains are reported.
- ``SDPX-VAL-010``: the expression uses a construct that cannot be evaluated
  on one record at a time, or not reproducibly: a subquery, a window, an
  aggregate, generator or table-valued function, or a non-deterministic
  function.

Anything the text cannot tell (a missing column, a user-defined function, a
type error) is left to Spark, which reports it when the pipeline is analysed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sdp_expect.base.sqltokens import SqlTokenError, Token, TokenKind, tokenize

__all__ = ["ConstraintProblem", "check_constraint"]

_NOT_WELL_FORMED = "SDPX-VAL-011"
_REJECTED_CONSTRUCT = "SDPX-VAL-010"
_NO_AGGREGATE = "SDPX-VAL-019"


@dataclass(frozen=True)
class ConstraintProblem:
    """The first problem found in a constraint's text.

    :param code: ``SDPX-VAL-011`` when the text is not a well-formed expression,
        ``SDPX-VAL-010`` when it uses a construct an expectation cannot contain.
    :param message: What is wrong, e.g. ``uses the aggregate function 'sum'`` or
        ``unbalanced parentheses at line 1, column 7 ('(' is never closed)``.
    """

    code: str
    message: str


_AGGREGATE = "aggregate function"
_WINDOW = "window function"
_GENERATOR = "generator function"
_TABLE_VALUED = "table-valued function"
_NONDETERMINISTIC = "non-deterministic function"

_AGGREGATE_FUNCTIONS = """
    any any_value approx_count_distinct approx_percentile approx_top_k
    approx_top_k_accumulate approx_top_k_combine array_agg avg bit_and bit_or bit_xor
    bitmap_and_agg bitmap_construct_agg bitmap_or_agg bool_and bool_or collect_list
    collect_set corr count count_if count_min_sketch covar_pop covar_samp every first
    grouping grouping_id histogram_numeric hll_sketch_agg hll_union_agg
    kll_merge_agg_bigint kll_merge_agg_double kll_merge_agg_float kll_sketch_agg_bigint
    kll_sketch_agg_double kll_sketch_agg_float kurtosis last listagg max max_by mean
    median min min_by mode percentile percentile_approx percentile_cont percentile_disc
    skewness some std stddev stddev_pop stddev_samp string_agg sum sum_distinct
    theta_intersection_agg theta_sketch_agg theta_union_agg try_avg try_sum var_pop
    var_samp variance
""".split()
# "regr_*" (regr_avgx, regr_slope, ...) are aggregates too: matched by prefix.
_AGGREGATE_PREFIX = "regr_"

_WINDOW_FUNCTIONS = """
    row_number rank dense_rank percent_rank cume_dist ntile lag lead nth_value
    first_value last_value
""".split()

_GENERATOR_FUNCTIONS = """
    explode explode_outer posexplode posexplode_outer inline inline_outer stack
    json_tuple variant_explode variant_explode_outer
""".split()

_TABLE_VALUED_FUNCTIONS = "range collations sql_keywords python_worker_logs".split()

_NONDETERMINISTIC_FUNCTIONS = """
    rand randn random uuid shuffle monotonically_increasing_id spark_partition_id
    input_file_name input_file_block_start input_file_block_length current_timestamp
    current_date current_time now localtimestamp current_timezone curdate try_reflect
    reflect java_method randstr uniform
""".split()

_FUNCTION_KINDS: dict[str, str] = {
    **{name: _AGGREGATE for name in _AGGREGATE_FUNCTIONS},
    **{name: _WINDOW for name in _WINDOW_FUNCTIONS},
    **{name: _GENERATOR for name in _GENERATOR_FUNCTIONS},
    **{name: _TABLE_VALUED for name in _TABLE_VALUED_FUNCTIONS},
    **{name: _NONDETERMINISTIC for name in _NONDETERMINISTIC_FUNCTIONS},
}

# Spark accepts these without parentheses; they read the clock.
_NONDETERMINISTIC_KEYWORDS = frozenset(
    {"current_date", "current_timestamp", "current_time", "localtimestamp"}
)

# Qualifiers under which a function name means Spark's built-in function.
_BUILTIN_QUALIFIERS = (("builtin",), ("system", "builtin"))

# Keywords that can open a query, inside parentheses: "(VALUES 1)", "(TABLE t)",
# "(FROM t |> ...)", "(WITH c AS (...) ...)".
_QUERY_STARTS = frozenset({"with", "values", "from", "table"})

# Words that may follow a column named like a query keyword, as in
# "(values IS NULL)" or "CAST(table AS STRING)": they continue an expression.
_OPERAND_FOLLOWERS = frozenset(
    """
    is and or not in between like ilike rlike regexp similar div as escape collate
    over filter within ignore respect nulls
    """.split()
)

# Operators that need an operand on their right: none may come last, or right
# before ')', ']' or ','. (Not '<>': STRUCT<> is a type. Not '*': count(*). Not
# ':'.) '>' and the right shifts are in :data:`_CLOSES_TYPE` too: they need an
# operand unless they close a type, as in x::array<int> or CAST(x AS map<a, array<b>>).
_NEEDS_RIGHT_OPERAND = frozenset(
    "= == <=> != <= >= !< !> < << >> >>> > + - / % || & | ^ :: -> => ~ !".split()
)
_TYPE_OPENERS = frozenset({"array", "map", "struct"})
"""Type names whose ``<`` opens a list of types (``array<int>``), closed by ``>``."""
_CLOSES_TYPE = {">": 1, ">>": 2, ">>>": 3}
"""How many open ``<`` of types each of these tokens can close."""

# Binary operators that cannot start an operand: none may come first, or right
# after '(', '[' or ','. ('+', '-', '~', '!' are also prefix operators, '*' is
# a star as in count(*).)
_NEEDS_LEFT_OPERAND = frozenset(
    "= == <=> != <> <= >= !< !> < > << >> >>> / % || & | ^ :: -> =>".split()
)

_OPENERS = {TokenKind.LPAREN: "(", TokenKind.LBRACKET: "["}
_CLOSERS = {TokenKind.RPAREN: "(", TokenKind.RBRACKET: "["}
_BRACKET_WORDS = {"(": "parentheses", "[": "brackets"}
_CLOSING_CHAR = {"(": ")", "[": "]"}
_LIST_STARTS = frozenset({TokenKind.LPAREN, TokenKind.LBRACKET, TokenKind.COMMA})
_LIST_ENDS = frozenset({TokenKind.RPAREN, TokenKind.RBRACKET, TokenKind.COMMA})
_NAMES = frozenset({TokenKind.IDENT, TokenKind.QUOTED_IDENT})


def _at(token: Token) -> str:
    return f"at line {token.line}, column {token.col}"


def _malformed(message: str) -> ConstraintProblem:
    return ConstraintProblem(_NOT_WELL_FORMED, message)


def _rejected(message: str) -> ConstraintProblem:
    return ConstraintProblem(_REJECTED_CONSTRUCT, message)


def _check_well_formed(tokens: list[Token]) -> Optional[ConstraintProblem]:
    """The first sign that ``tokens`` (a constraint's, without comments; not empty)
    cannot be one SQL expression, if any."""
    open_stack: list[Token] = []
    prev: Optional[Token] = None
    open_types = 0  # '<' of array<, map<, struct< not closed yet
    closed_type: Optional[Token] = None  # the last '>' (or '>>', '>>>') that closed a type
    for token in tokens:
        kind = token.kind
        if kind is TokenKind.OPERATOR:
            if token.text in _NEEDS_LEFT_OPERAND and (prev is None or prev.kind in _LIST_STARTS):
                return _malformed(f"missing operand before '{token.text}' {_at(token)}")
            if (token.text == "<" and prev is not None and prev.kind is TokenKind.IDENT
                    and prev.text.lower() in _TYPE_OPENERS):
                open_types += 1
            elif token.text in _CLOSES_TYPE and open_types:
                open_types = max(0, open_types - _CLOSES_TYPE[token.text])
                closed_type = token
        elif kind in _OPENERS:
            open_stack.append(token)
        elif kind in _CLOSERS:
            opener = _CLOSERS[kind]
            if not open_stack:
                return _malformed(
                    f"unbalanced {_BRACKET_WORDS[opener]} {_at(token)} "
                    f"('{token.text}' closes nothing)"
                )
            match = open_stack.pop()
            if match.text != opener:
                return _malformed(
                    f"mismatched brackets {_at(token)}: '{token.text}' closes the "
                    f"'{match.text}' {_at(match)}"
                )
        elif kind is TokenKind.SEMICOLON:
            return _malformed(f"unexpected ';' {_at(token)}: a constraint is a single expression")
        elif kind is TokenKind.OTHER and token.text == "*/":
            return _malformed(f"unexpected '*/' {_at(token)}: no comment is open")
        elif kind is TokenKind.COMMA and (prev is None or prev.kind in _LIST_STARTS):
            return _malformed(f"unexpected ',' {_at(token)}: a value is missing before it")
        if kind in _LIST_ENDS and _wants_operand(prev, closed_type):
            assert prev is not None
            return _malformed(f"missing operand after '{prev.text}' {_at(prev)}")
        prev = token
    if open_stack:
        opener_token = open_stack[-1]
        return _malformed(
            f"unbalanced {_BRACKET_WORDS[opener_token.text]} {_at(opener_token)} "
            f"('{opener_token.text}' is never closed)"
        )
    if _wants_operand(prev, closed_type):
        assert prev is not None
        return _malformed(f"missing operand after '{prev.text}' {_at(prev)}")
    return None


def _wants_operand(token: Optional[Token], closed_type: Optional[Token]) -> bool:
    """Whether ``token`` is an operator that needs an operand on its right (a '>' that
    closed a type does not)."""
    return (token is not None and token.kind is TokenKind.OPERATOR
            and token.text in _NEEDS_RIGHT_OPERAND and token is not closed_type)


_KEYWORD_OPERATORS = frozenset(
    {"and", "or", "not", "is", "in", "like", "ilike", "rlike", "regexp", "between", "div",
     "escape"}
)
"""Keywords that need an operand after them; bare, they may also be column names."""
_OPERAND_ENDS = frozenset(
    {TokenKind.QUOTED_IDENT, TokenKind.STRING, TokenKind.NUMBER, TokenKind.RPAREN,
     TokenKind.RBRACKET}
)


def _ends_operand(token: Token, before: Optional[Token]) -> bool:
    """Whether ``token`` can end an operand (a name, a literal, a closing bracket)."""
    if token.kind is TokenKind.IDENT:
        after_dot = before is not None and before.kind is TokenKind.DOT
        return after_dot or token.text.lower() not in _KEYWORD_OPERATORS
    return token.kind in _OPERAND_ENDS


def _check_keyword_operands(tokens: list[Token]) -> Optional[ConstraintProblem]:
    """A keyword operator with nothing after it: ``x > 0 AND``, ``(x IS NOT)``, ``f(x OR, y)``.

    Only where no valid expression has it: the keyword follows an operand (so it
    is not a column that happens to be called ``and``) and ends the expression,
    a bracket or a list item; or it is ``IS NOT`` at such an end. ``tokens`` has no
    comments.
    """
    for i, token in enumerate(tokens):
        if token.kind is not TokenKind.IDENT or token.text.lower() not in _KEYWORD_OPERATORS:
            continue
        if i + 1 < len(tokens) and tokens[i + 1].kind not in _LIST_ENDS:
            continue
        if i == 0 or (i > 0 and tokens[i - 1].kind is TokenKind.DOT):
            continue
        prev, before = tokens[i - 1], (tokens[i - 2] if i > 1 else None)
        is_not = token.text.lower() == "not" and prev.kind is TokenKind.IDENT and (
            prev.text.lower() == "is")
        if is_not or _ends_operand(prev, before):
            return _malformed(f"missing operand after '{token.text}' {_at(token)}")
    return None


def _qualifier(tokens: list[Token], index: int) -> tuple[str, ...]:
    """The qualifier parts before the function name at ``index``: ``("system", "builtin")``."""
    parts: list[str] = []
    i = index
    while i >= 2 and tokens[i - 1].kind is TokenKind.DOT and tokens[i - 2].kind in _NAMES:
        parts.append(tokens[i - 2].value.lower())
        i -= 2
    parts.reverse()
    return tuple(parts)


def _is_query_start(tokens: list[Token], index: int) -> bool:
    """Whether the WITH, VALUES, FROM or TABLE at ``index`` (right after a '(') opens a query."""
    keyword = tokens[index].text.lower()
    if index + 1 >= len(tokens):
        return False
    follower = tokens[index + 1]
    kind = follower.kind
    if kind is TokenKind.QUOTED_IDENT:
        return True
    if kind is TokenKind.IDENT:
        return follower.text.lower() not in _OPERAND_FOLLOWERS
    if kind is TokenKind.LPAREN:
        return keyword in ("values", "from")
    if kind is TokenKind.NUMBER or kind is TokenKind.STRING:
        return keyword == "values"
    return False


def _function_kind(tokens: list[Token], i: int) -> Optional[str]:
    """The kind of built-in function called at ``tokens[i]`` (followed by ``(``) that an
    expectation cannot contain (aggregate, window, ...), or None."""
    name = tokens[i].value.lower()
    prev = tokens[i - 1] if i > 0 else None
    function_kind = _FUNCTION_KINDS.get(name)
    if function_kind is None and name.startswith(_AGGREGATE_PREFIX):
        function_kind = _AGGREGATE
    if (
        name in ("any", "some")
        and prev is not None
        and prev.kind is TokenKind.IDENT
        and prev.text.lower() in ("like", "ilike")
    ):
        # "name LIKE ANY ('a%', 'b%')" is a predicate, not the aggregate.
        function_kind = None
    if prev is not None and prev.kind is TokenKind.DOT and (
            _qualifier(tokens, i) not in _BUILTIN_QUALIFIERS):
        # "db.sum(x)" is a user-defined function: Spark decides.
        function_kind = None
    return function_kind


def _calls_aggregate(tokens: list[Token]) -> bool:
    """True when ``tokens`` call a built-in aggregate function."""
    return any(
        token.kind in (TokenKind.IDENT, TokenKind.QUOTED_IDENT)
        and i + 1 < len(tokens) and tokens[i + 1].kind is TokenKind.LPAREN
        and _function_kind(tokens, i) == _AGGREGATE
        for i, token in enumerate(tokens))


def _check_constructs(tokens: list[Token], aggregates: bool = False
                      ) -> Optional[ConstraintProblem]:
    """The first construct in ``tokens`` (without comments) that an expectation cannot
    contain, if any (aggregate functions allowed when ``aggregates``)."""
    count = len(tokens)
    for i, token in enumerate(tokens):
        kind = token.kind
        if kind is TokenKind.LPAREN:
            nxt = tokens[i + 1] if i + 1 < count else None
            if (
                nxt is not None
                and nxt.kind is TokenKind.IDENT
                and nxt.text.lower() in _QUERY_STARTS
                and _is_query_start(tokens, i + 1)
                # "trim(FROM s)" is Spark's TRIM syntax, not a query.
                and not (
                    i > 0
                    and tokens[i - 1].kind is TokenKind.IDENT
                    and tokens[i - 1].text.lower() == "trim"
                )
            ):
                return _rejected(f"uses a subquery ({nxt.text.upper()})")
            continue
        if kind is not TokenKind.IDENT and kind is not TokenKind.QUOTED_IDENT:
            continue
        name = token.value.lower()
        prev = tokens[i - 1] if i > 0 else None
        after_dot = prev is not None and prev.kind is TokenKind.DOT
        is_call = i + 1 < count and tokens[i + 1].kind is TokenKind.LPAREN
        if is_call:
            function_kind = _function_kind(tokens, i)
            if function_kind is not None and not (aggregates and function_kind == _AGGREGATE):
                return _rejected(f"uses the {function_kind} '{name}'")
            if (
                name == "unix_timestamp"
                and i + 2 < count
                and tokens[i + 2].kind is TokenKind.RPAREN
                and (not after_dot or _qualifier(tokens, i) in _BUILTIN_QUALIFIERS)
            ):
                return _rejected(
                    f"uses the {_NONDETERMINISTIC} 'unix_timestamp' without arguments "
                    "(it reads the clock)"
                )
        if kind is not TokenKind.IDENT or after_dot:
            continue
        if name == "select":
            return _rejected("uses a subquery (SELECT)")
        if (
            name == "over"
            and prev is not None
            and (prev.kind is TokenKind.RPAREN or prev.text.lower() == "nulls")
        ):
            return _rejected("uses a window (OVER)")
        if name in _NONDETERMINISTIC_KEYWORDS:
            return _rejected(f"uses the {_NONDETERMINISTIC} '{name}'")
    return None


def check_constraint(text: str, *, aggregates: bool = False) -> Optional[ConstraintProblem]:
    """Check a constraint's text statically and return its first problem, or ``None``.

    A text that is not well-formed (``SDPX-VAL-011``) is reported before any
    rejected construct (``SDPX-VAL-010``); among rejected constructs, the first
    in reading order is reported. Function names are matched without regard to
    case, also when backtick-quoted or qualified as ``system.builtin.<name>``.

    :param text: The constraint, a Spark SQL boolean expression such as
        ``amount >= 0``.
    :param aggregates: True for the expression of an aggregate rule
        (docs/aggregate-rules.md): aggregate functions are allowed, and at least one is
        required (``SDPX-VAL-019`` without any); windows, subqueries, generators and
        non-deterministic functions are still refused.
    """
    try:
        tokens = tokenize(text)
    except SqlTokenError as error:
        return _malformed(str(error))
    if not tokens:
        return _malformed("the constraint is empty: it holds only whitespace or comments")
    problem = (_check_well_formed(tokens) or _check_keyword_operands(tokens)
               or _check_constructs(tokens, aggregates))
    if problem is None and aggregates and not _calls_aggregate(tokens):
        return ConstraintProblem(_NO_AGGREGATE, "uses no aggregate function (it would be "
                                 "judged on no record, or on every record alone)")
    return problem
