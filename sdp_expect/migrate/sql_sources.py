"""``read_files(...)`` and ``cloud_files(...)`` in Databricks SQL, moved into Python.

Open-source Spark SQL has no streaming file read: ``STREAM json.`/path``` parses,
but gives a batch relation, and SDP then refuses it for a streaming table
(``INVALID_FLOW_QUERY_TYPE.BATCH_RELATION_FOR_STREAMING_TABLE``; tried on Spark
4.1). So each call becomes a temporary view defined in a generated Python file
(``spark.readStream.format(...).load(path)``, or ``spark.read`` outside
``STREAM``), and the SQL reads the view by its name instead (``STREAM(view)``).

The statements and their tokens are those of the one SQL reader
(:func:`sdp_expect.dbsql.split.split`); the file's other text stays as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional, Sequence

from sdp_expect.base.sqltokens import Token, TokenKind, matching_paren
from sdp_expect.migrate.edits import TextEdits
from sdp_expect.migrate.sources import SCHEMA_INFERENCE, root_of, translate_options

__all__ = ["FileSource", "SqlSources", "dataset_name", "path_expression", "rewrite_sql_sources"]


@dataclass
class FileSource:
    """One ``read_files`` / ``cloud_files`` call, as a Python temporary view.

    :param view: The view's name.
    :param file: The SQL file (relative path).
    :param line: The call's line.
    :param code: The Python function that defines the view.
    """

    view: str
    file: str
    line: int
    code: str


@dataclass
class SqlSources:
    """What :func:`rewrite_sql_sources` did to one SQL file.

    :param text: The new text.
    :param lines: For each line of the new text, its 1-based line in the old.
    :param sources: The views to generate.
    :param findings: ``(kind, line, message)``: ``changed`` / ``not converted``.
    """

    text: str
    lines: list[int]
    sources: list[FileSource] = field(default_factory=list)
    findings: list[tuple[str, int, str]] = field(default_factory=list)


def _arguments(tokens: Sequence[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.kind is TokenKind.LPAREN:
            depth += 1
        elif token.kind is TokenKind.RPAREN:
            depth -= 1
        if token.kind is TokenKind.COMMA and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return [part for part in parts if part]


def _literal(tokens: Sequence[Token]) -> Optional[str]:
    """A constant's value: a string, a number, true/false; None for anything else."""
    if len(tokens) != 1:
        return None
    token = tokens[0]
    if token.kind is TokenKind.STRING:
        return token.value
    if token.kind is TokenKind.NUMBER or (token.kind is TokenKind.IDENT
                                          and token.text.lower() in ("true", "false")):
        return token.text.lower() if token.kind is TokenKind.IDENT else token.text
    return None


def dataset_name(tokens: Sequence[Token]) -> str:
    """The name a ``CREATE ... TABLE / VIEW / FLOW`` statement declares (``source`` when none)."""
    for index, token in enumerate(tokens[:-1]):
        if token.kind is TokenKind.IDENT and token.text.upper() in ("TABLE", "VIEW", "FLOW"):
            name = tokens[index + 1]
            if index + 3 < len(tokens) and tokens[index + 2].kind is TokenKind.DOT:
                name = tokens[index + 3]
            return name.value if name.kind in (TokenKind.IDENT, TokenKind.QUOTED_IDENT) \
                else "source"
    return "source"


def rewrite_sql_sources(text: str, file: str, taken: set[str], path_code: object
                        ) -> tuple[SqlSources, bool]:
    """Move every ``read_files`` / ``cloud_files`` call of a SQL file into a Python view.

    :param text: The SQL file's text.
    :param file: Its relative path.
    :param taken: Names already used (views are given new ones, which are added).
    :param path_code: ``callable(path, file, line) -> Python expression`` for a path
        (where a Databricks data root becomes ``spark.conf.get(...)``).
    :returns: The rewrite, and whether a view infers its schema from the files.
    """
    from sdp_expect.base.sqltokens import SqlTokenError
    from sdp_expect.dbsql.split import split

    edits = TextEdits(text)
    result = SqlSources(text=text, lines=[])
    infers = False
    try:
        pieces = split(text, file)
    except SqlTokenError:
        result.text, result.lines = edits.apply_with_map()
        return result, False
    for statement in pieces.statements:
        tokens = statement.tokens
        for index, token in enumerate(tokens[:-1]):
            name = token.text.lower()
            if not (token.kind is TokenKind.IDENT and name in ("read_files", "cloud_files")
                    and tokens[index + 1].kind is TokenKind.LPAREN
                    and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
                continue
            close = matching_paren(tokens, index + 1)
            if close is None:
                continue
            start_index, end_index = index, close
            streaming = name == "cloud_files"
            if index >= 1 and tokens[index - 1].text.upper() == "STREAM":
                start_index, streaming = index - 1, True
            elif index >= 2 and tokens[index - 1].kind is TokenKind.LPAREN \
                    and tokens[index - 2].text.upper() == "STREAM":
                after = matching_paren(tokens, index - 1)
                if after is not None:
                    start_index, end_index, streaming = index - 2, after, True
            arguments = _arguments(tokens[index + 2:close])
            problems: list[str] = []
            path = _literal(arguments[0]) if arguments else None
            if path is None:
                problems.append("its path is not a string constant")
            options: list[tuple[str, Optional[str]]] = []
            format_name: Optional[str] = None
            if name == "cloud_files":
                format_name = _literal(arguments[1]) if len(arguments) > 1 else None
                if len(arguments) > 2:
                    third = arguments[2]
                    if third and third[0].text.lower() == "map" and len(third) > 2:
                        values = [_literal(a) for a in _arguments(third[2:-1])]
                        options += [(str(values[i]), values[i + 1])
                                    for i in range(0, len(values) - 1, 2)]
                    else:
                        problems.append("its options are not map('key', 'value', ...)")
            else:
                for argument in arguments[1:]:
                    if len(argument) >= 3 and argument[1].text == "=>":
                        key = argument[0].value
                        value = _literal(argument[2:])
                        if key.lower() == "format":
                            format_name = value
                        else:
                            options.append((key, value))
                    else:
                        problems.append("an option not written as name => value")
            if name == "read_files" and format_name is None:
                problems.append("no format => '...' (read_files guesses it from the file "
                                "names; the open-source file source needs it)")
            translation = translate_options(options, infer_types_default=name == "read_files",
                                            has_schema=False, format_name=format_name)
            problems += [p for p in translation.problems if not p.startswith("no cloudFiles")]
            if problems or translation.format is None or path is None:
                result.findings.append(("not converted", token.line, f"{name}() could not be "
                                        "moved into a Python view: " + "; ".join(problems)
                                        + ". Fix: read the files in a Python file of the "
                                        "pipeline (a @dp.temporary_view returning "
                                        "spark.readStream.format('json').load(path)) and read "
                                        "that view here with STREAM(view)"))
                continue
            base = f"{dataset_name(tokens)}_files"
            view, number = base, 2
            while view in taken:
                view, number = f"{base}_{number}", number + 1
            taken.add(view)
            reader = "spark.readStream" if streaming else "spark.read"
            chain = f"{reader}.format({json.dumps(translation.format)})"
            chain += "".join(f"\n        .option({json.dumps(k)}, {json.dumps(v)})"
                             for k, v in translation.options)
            location = str(path_code(path, file, token.line))  # type: ignore[operator]
            chain += f"\n        .load({location})"
            code = (f"@dp.temporary_view(name={json.dumps(view)})\n"
                    f"def {view}():\n"
                    f"    # {file}:{token.line}: {name}({', '.join(_shown(a) for a in arguments)})"
                    f"\n    return ({chain})\n")
            result.sources.append(FileSource(view, file, token.line, code))
            infers = infers or streaming
            replacement = f"STREAM({view})" if streaming else view
            edits.replace(tokens[start_index].start, tokens[end_index].end, replacement)
            details = [f"{o.name}: {o.outcome} ({o.why})" for o in translation.outcomes
                       if o.outcome != "lost"] + translation.added
            result.findings.append((
                "changed", token.line,
                f"{name}(...) -> {replacement}: the view {view} reads the files with "
                f"{reader}.format({json.dumps(translation.format)}) (open-source SQL has no "
                f"streaming file read)" + (f", schema inferred from the files "
                                           f"({SCHEMA_INFERENCE}: true)" if streaming else "")
                + ("; " + "; ".join(details) if details else "")))
            for outcome in translation.outcomes:
                if outcome.outcome == "lost":
                    result.findings.append(("not converted", token.line, f"{name}() option "
                                            f"{outcome.name} has no open-source equivalent "
                                            f"and was removed: {outcome.why}"))
    result.text, result.lines = edits.apply_with_map()
    return result, infers


def _shown(tokens: Sequence[Token]) -> str:
    return " ".join(t.text for t in tokens).replace(" . ", ".").replace("( ", "(") \
        .replace(" )", ")")


def path_expression(roots: object) -> object:
    """``callable(path, file, line)``: a path as a Python expression, its Databricks data
    root read from the pipeline setting (``roots``: a
    :class:`~sdp_expect.migrate.sources.DataRoots`)."""

    def expression(path: str, file: str, line: int) -> str:
        match = root_of(path)
        if match is None:
            return json.dumps(path)
        root = match.group("root")
        key = roots.use(root, f"{file}:{line}")  # type: ignore[attr-defined]
        before, after = path[:match.start()], path[match.end():]
        parts = ([json.dumps(before)] if before else []) + [f"spark.conf.get({json.dumps(key)})"] \
            + ([json.dumps(after)] if after else [])
        return " + ".join(parts)

    return expression
