"""Rewrites of a Python pipeline file that go beyond imports: sources, columns, paths.

Each works on the file's ``ast`` and changes only the spans it must (through the
caller's text edits), and reports what it did or could not do as findings:

- Auto Loader reads become the open-source file source (:mod:`.sources`);
- ``df.column`` attribute access on a DataFrame becomes ``df["column"]`` (SDP
  refuses ``df.column`` inside a query function: it asks Spark to analyse ``df``);
- ``/Volumes/...`` and ``dbfs:/...`` strings read their root from one pipeline
  setting with ``spark.conf.get(...)``;
- Databricks-only SQL functions in SQL text given to ``expr``, ``selectExpr``,
  ``filter``, the expectation decorators and ``spark.sql`` are reported;
- ``format("delta")`` is kept, and the spec says the project's tables are Delta
  (``sdp_expect.format: delta``, docs/formats.md);
- a method that binds a read of another dataset of the pipeline to the previous
  update (``docs/early-binding.md``) is reported with its rewrite.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Callable, Optional

from sdp_expect.base.project import setting_text
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT
from sdp_expect.core.model import DECORATORS, GROUP_DECORATORS
from sdp_expect.migrate.edits import TextEdits
from sdp_expect.migrate.sources import (
    SCHEMA_INFERENCE,
    DataRoots,
    root_of,
    translate_options,
)

__all__ = ["DELTA_KEPT", "ProjectFacts", "PythonRewriter", "dataset_names"]

DELTA_KEPT = (
    "kept: the project's tables are Delta Lake tables (the spec says "
    f"{KEY_TABLE_FORMAT}: delta, and sdp-expect run starts Spark with Delta's jars and "
    "settings; docs/formats.md)")
"""What migrate says where it keeps ``format("delta")`` or ``USING DELTA``."""

_DATASET_DECORATORS = {"table", "view", "materialized_view", "temporary_view"}
_READER_TERMINALS = {"load", "table", "json", "csv", "parquet", "orc", "text", "xml"}
_DF_METHODS = {
    "select", "selectExpr", "filter", "where", "withColumn", "withColumns",
    "withColumnRenamed", "withColumnsRenamed", "drop", "distinct", "dropDuplicates",
    "drop_duplicates", "dropDuplicatesWithinWatermark", "join", "crossJoin", "lateralJoin",
    "union", "unionAll", "unionByName", "intersect", "intersectAll", "subtract", "exceptAll",
    "alias", "orderBy", "sort", "sortWithinPartitions", "limit", "offset", "sample",
    "repartition", "repartitionByRange", "coalesce", "hint", "transform", "fillna", "dropna",
    "replace", "withWatermark", "toDF", "unpivot", "melt", "observe", "withMetadata", "to",
    "transpose",
}
_GROUPING = {"groupBy", "groupby", "rollup", "cube"}
_GROUPED_TO_DF = {"agg", "count", "sum", "avg", "mean", "max", "min"}
_EARLY_METHODS = {
    "withColumn": "WithColumns", "withColumns": "WithColumns", "withMetadata": "WithColumns",
    "withColumnRenamed": "WithColumnsRenamed", "withColumnsRenamed": "WithColumnsRenamed",
    "drop": "Drop", "to": "ToSchema", "distinct": "Deduplicate",
    "dropDuplicates": "Deduplicate", "drop_duplicates": "Deduplicate",
    "dropDuplicatesWithinWatermark": "Deduplicate", "fillna": "NAFill", "dropna": "NADrop",
    "replace": "NAReplace", "describe": "StatDescribe", "summary": "StatSummary",
    "crosstab": "StatCrosstab", "freqItems": "StatFreqItems", "sampleBy": "StatSampleBy",
    "transpose": "Transpose", "withWatermark": "WithWatermark",
}
_SQL_TEXT_METHODS = {"expr", "selectExpr", "filter", "where", "sql",
                     *DECORATORS, *GROUP_DECORATORS}


def _dataframe_attributes() -> frozenset[str]:
    """Every attribute and method name of a DataFrame (classic and Spark Connect)."""
    from pyspark.sql import DataFrame

    names = set(dir(DataFrame))
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

        names |= set(dir(ConnectFrame))
    except ImportError:  # Spark Connect's extras are not installed
        pass
    return frozenset(names)


@dataclass
class ProjectFacts:
    """What the rewrites of every file share.

    :param datasets: The names of the pipeline's datasets (Python and SQL).
    :param roots: The Databricks data roots and their settings.
    :param configuration: Pipeline settings the rewritten code needs.
    :param settings_read: Per pipeline setting that the code reads with
        ``spark.conf.get(key)`` and no default (a Lakeflow pipeline parameter), where:
        ``(file, line)`` of each read, in the order found.
    """

    datasets: set[str]
    roots: DataRoots
    configuration: dict[str, str] = field(default_factory=dict)
    settings_read: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


def dataset_names(tree: ast.Module) -> set[str]:
    """The datasets a Python pipeline file defines (decorated functions, streaming tables)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                func = call.func if call is not None else decorator
                if isinstance(func, ast.Attribute) and func.attr in _DATASET_DECORATORS:
                    named = [k.value for k in (call.keywords if call else [])
                             if k.arg == "name" and isinstance(k.value, ast.Constant)]
                    found.add(str(named[0].value) if named else node.name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "create_streaming_table":
            values = [*node.args[:1], *[k.value for k in node.keywords if k.arg == "name"]]
            found |= {str(v.value) for v in values if isinstance(v, ast.Constant)}
    return {_bare(name) for name in found}


def _bare(name: str) -> str:
    return name[len("LIVE."):] if name.upper().startswith("LIVE.") else name


def _constant(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, int, float)):
        return setting_text(node.value)
    return None


class PythonRewriter:
    """The rewrites of one Python pipeline file.

    :param tree: The parsed file.
    :param edits: The caller's text edits.
    :param file: The file's relative path.
    :param modules: Local names bound to ``dlt`` / ``pipelines``.
    :param facts: What the whole project shares.
    :param changed: Reports a change at a node.
    :param unconverted: Reports something left for the user at a node.
    """

    def __init__(self, tree: ast.Module, edits: TextEdits, file: str, modules: dict[str, str],
                 facts: ProjectFacts, changed: Callable[[ast.AST, str], None],
                 unconverted: Callable[[ast.AST, str], None],
                 note: Callable[[ast.AST, str], None]) -> None:
        self.tree = tree
        self.edits = edits
        self.file = file
        self.modules = modules
        self.facts = facts
        self.changed = changed
        self.unconverted = unconverted
        self.note = note
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.spark_statements: set[int] = set()
        """Indices of top-level statements that now use ``spark``."""
        self._attributes: Optional[frozenset[str]] = None
        self.removed: list[tuple[int, int]] = []
        """Spans of text removed (Auto Loader options): nothing inside them is rewritten."""

    # ------------------------------------------------------------------ helpers
    def _statement_index(self, node: ast.AST) -> int:
        current = node
        while current in self.parents and not isinstance(self.parents[current], ast.Module):
            current = self.parents[current]
        for index, statement in enumerate(self.tree.body):
            if statement is current:
                return index
        return 0

    def _replace(self, node: ast.AST, new: str) -> None:
        start, end = self.edits.span(node)
        self.edits.replace(start, end, new)

    def _source(self, node: ast.AST) -> str:
        return self.edits.source(node)

    def run(self) -> None:
        """Make every rewrite and report."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self._call(node)
        self._paths()
        self._frames()

    # ------------------------------------------------------------------ calls
    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "expr":  # from ...functions import expr
            for given in [*node.args, *[k.value for k in node.keywords]]:
                if isinstance(given, ast.Constant) and isinstance(given.value, str):
                    self._databricks_functions(given, given.value)
            return
        if not isinstance(func, ast.Attribute):
            return
        first = _constant(node.args[0]) if node.args else None
        if (func.attr == "get" and isinstance(func.value, ast.Attribute)
                and func.value.attr == "conf" and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            # spark.conf.get(key) without a default: the pipeline must set the key.
            self.facts.settings_read.setdefault(node.args[0].value, []).append(
                (self.file, getattr(node, "lineno", 0)))
        if func.attr == "format" and first is not None:
            if first.lower() == "cloudfiles":
                self._auto_loader(node)
            elif first.lower() == "delta":
                self.facts.configuration[KEY_TABLE_FORMAT] = "delta"
                self.changed(node, f"format(\"delta\") {DELTA_KEPT}")
        for keyword in node.keywords:
            if keyword.arg == "format" and (_constant(keyword.value) or "").lower() == "delta":
                self.facts.configuration[KEY_TABLE_FORMAT] = "delta"
                self.changed(keyword.value, f"format=\"delta\" {DELTA_KEPT}")
        if func.attr in _SQL_TEXT_METHODS:
            texts: list[ast.AST] = [*node.args, *[k.value for k in node.keywords]]
            for arg in texts:
                values = arg.values if isinstance(arg, ast.Dict) else [arg]
                for value in values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        self._databricks_functions(value, value.value)

    def _databricks_functions(self, node: ast.AST, text: str) -> None:
        from sdp_expect.base.databricks_functions import DATABRICKS_ONLY_SQL_FUNCTIONS
        from sdp_expect.base.sqltokens import SqlTokenError, TokenKind, tokenize

        try:
            tokens = tokenize(text)
        except SqlTokenError:
            return
        for index, token in enumerate(tokens[:-1]):
            name = token.text.lower()
            if (token.kind is TokenKind.IDENT and name in DATABRICKS_ONLY_SQL_FUNCTIONS
                    and tokens[index + 1].kind is TokenKind.LPAREN
                    and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
                self.unconverted(node, f"{token.text}() in {text!r} is a Databricks-only SQL "
                                 "function (open-source Spark stops the flow with "
                                 f"UNRESOLVED_ROUTINE). Fix: "
                                 f"{DATABRICKS_ONLY_SQL_FUNCTIONS[name]}")

    # ------------------------------------------------------------------ Auto Loader
    def _auto_loader(self, format_call: ast.Call) -> None:
        """``spark.readStream.format("cloudFiles")...load(path)`` -> the file source."""
        options: list[tuple[str, Optional[str]]] = []
        removals: list[ast.Call] = []
        has_schema = False
        current: ast.AST = format_call
        problems: list[str] = []
        while True:
            attribute = self.parents.get(current)
            call = self.parents.get(attribute) if attribute is not None else None
            if not (isinstance(attribute, ast.Attribute) and attribute.value is current
                    and isinstance(call, ast.Call) and call.func is attribute):
                break
            if attribute.attr == "option" and len(call.args) == 2:
                name = _constant(call.args[0])
                if name is None:
                    problems.append(f"`{_one(self._source(call))}`: an option whose name is "
                                    "not a constant")
                else:
                    options.append((name, _constant(call.args[1])))
                    removals.append(call)
            elif attribute.attr in ("options", "option"):
                problems.append(f"`{_one(self._source(call))}`: write each option with "
                                ".option(name, value)")
            elif attribute.attr == "schema":
                has_schema = True
            elif attribute.attr == "load":
                break
            current = call
        translation = translate_options(options, infer_types_default=False,
                                        has_schema=has_schema)
        problems += translation.problems
        if translation.format is None or problems:
            self.unconverted(format_call.args[0], "Auto Loader (format(\"cloudFiles\")) could "
                             "not be translated: " + "; ".join(problems) + ". Fix: read the files "
                             "with spark.readStream.format(\"<json|csv|parquet...>\")"
                             ".load(path)")
            return
        for call in removals:
            attribute = call.func
            assert isinstance(attribute, ast.Attribute)
            if _constant(call.args[0]) in translation.verbatim:
                continue  # a plain reader option: stays as written
            value_end = self.edits.span(attribute.value)[1]
            call_end = self.edits.span(call)[1]
            self.removed.append((value_end, call_end))
            self.edits.replace(value_end, call_end, "")
        added = "".join(f".option({json.dumps(k)}, {json.dumps(v)})"
                        for k, v in translation.options if k not in translation.verbatim)
        self._replace(format_call.args[0], json.dumps(translation.format))
        if added:
            end = self.edits.span(format_call)[1]
            self.edits.replace(end, end, added)
        if not has_schema:
            self.facts.configuration[SCHEMA_INFERENCE] = "true"
        details = [f"{o.name}: {o.outcome} ({o.why})" for o in translation.outcomes
                   if o.outcome != "lost"]
        details += translation.added
        self.changed(format_call.args[0], f"Auto Loader -> spark.readStream.format("
                     f"{json.dumps(translation.format)})"
                     + ("" if has_schema else f", schema inferred from the files "
                        f"({SCHEMA_INFERENCE}: true in spark-pipeline.yml)")
                     + ("; " + "; ".join(details) if details else "")
                     + "; no _rescued_data column (Auto Loader adds one when it infers the "
                       "schema)")
        for outcome in translation.outcomes:
            if outcome.outcome == "lost":
                line_node = next((c.args[0] for c in removals
                                  if _constant(c.args[0]) == outcome.name), format_call.args[0])
                self.unconverted(line_node, f"Auto Loader option {outcome.name} has no "
                                 f"open-source equivalent and was removed: {outcome.why}")

    # ------------------------------------------------------------------ paths
    def _inside_removed(self, node: ast.AST) -> bool:
        start, end = self.edits.span(node)
        return any(a <= start and end <= b for a, b in self.removed)

    def _paths(self) -> None:
        in_fstrings = {id(value) for node in ast.walk(self.tree)
                       if isinstance(node, ast.JoinedStr) for value in node.values}
        docstrings = {id(node.value) for node in ast.walk(self.tree)
                      if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in in_fstrings and id(node) not in docstrings:
                match = root_of(node.value)
                if match is None or self._inside_removed(node):
                    continue
                root = match.group("root")
                key = self.facts.roots.use(root, f"{self.file}:{node.lineno}")
                before, after = node.value[:match.start()], node.value[match.end():]
                parts = ([json.dumps(before)] if before else []) \
                    + [f"spark.conf.get({json.dumps(key)})"] \
                    + ([json.dumps(after)] if after else [])
                new = " + ".join(parts)
                self._replace(node, f"({new})" if len(parts) > 1 else new)
                self.spark_statements.add(self._statement_index(node))
                self.changed(node, f"{root} -> spark.conf.get({json.dumps(key)}) (the "
                             "pipeline setting in spark-pipeline.yml)")
            elif isinstance(node, ast.JoinedStr):
                text = self._source(node)
                match = root_of(text)
                if match is None or self._inside_removed(node):
                    continue
                root = match.group("root")
                key = self.facts.roots.use(root, f"{self.file}:{node.lineno}")
                quote_at = next(i for i, c in enumerate(text) if c in "'\"")
                inner = "'" if text[quote_at] == '"' else '"'
                new = (text[:match.start()] + "{spark.conf.get(" + inner + key + inner + ")}"
                       + text[match.end():])
                self._replace(node, new)
                self.spark_statements.add(self._statement_index(node))
                self.changed(node, f"{root} -> spark.conf.get({json.dumps(key)}) (the "
                             "pipeline setting in spark-pipeline.yml)")

    # ------------------------------------------------------------------ DataFrames
    def _frames(self) -> None:
        scopes: list[ast.AST] = [self.tree] + [
            node for node in ast.walk(self.tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for scope in scopes:
            frames: dict[str, Optional[str]] = {}  # name -> the dataset it reads, if any
            body = list(_own_nodes(scope))
            for _ in range(2):  # names assigned from names assigned later in the text
                for node in body:
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                            and isinstance(node.targets[0], ast.Name) \
                            and self._is_frame(node.value, frames):
                        frames[node.targets[0].id] = self._dataset_read(node.value, frames)
            for node in body:
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    self._column_access(node, frames)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in _EARLY_METHODS:
                    self._early_binding(node, node.func, frames)

    def _is_frame(self, node: ast.AST, frames: dict[str, Optional[str]]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in frames
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return False
        value, method = node.func.value, node.func.attr
        if isinstance(value, ast.Name) and value.id in self.modules \
                and method in ("read", "read_stream"):
            return True
        if isinstance(value, ast.Name) and value.id == "spark" \
                and method in ("table", "sql", "range", "createDataFrame"):
            return True
        if method in _READER_TERMINALS and _reader_root(value):
            return True
        if method in _DF_METHODS:
            return self._is_frame(value, frames)
        if method in _GROUPED_TO_DF and isinstance(value, ast.Call) \
                and isinstance(value.func, ast.Attribute) and value.func.attr in _GROUPING:
            return self._is_frame(value.func.value, frames)
        return False

    def _dataset_read(self, node: ast.AST, frames: dict[str, Optional[str]]) -> Optional[str]:
        """The pipeline dataset a DataFrame expression reads (along its method chain)."""
        if isinstance(node, ast.Name):
            return frames.get(node.id)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return None
        value, method = node.func.value, node.func.attr
        name = _constant(node.args[0]) if node.args else None
        if isinstance(value, ast.Name) and value.id in self.modules \
                and method in ("read", "read_stream") and name is not None:
            return _bare(name)
        if method == "table" and name is not None and (
                (isinstance(value, ast.Name) and value.id == "spark") or _reader_root(value)):
            bare = _bare(name)
            return bare if bare in self.facts.datasets or bare != name else None
        if method in _DF_METHODS or method in _GROUPED_TO_DF or method in _GROUPING:
            return self._dataset_read(value, frames)
        return None

    def _column_access(self, node: ast.Attribute, frames: dict[str, Optional[str]]) -> None:
        if self._attributes is None:
            self._attributes = _dataframe_attributes()
        parent = self.parents.get(node)
        if node.attr in self._attributes or node.attr.startswith("_") \
                or (isinstance(parent, ast.Call) and parent.func is node) \
                or not self._is_frame(node.value, frames):
            return
        value_end = self.edits.span(node.value)[1]
        end = self.edits.span(node)[1]
        self.edits.replace(value_end, end, f"[{json.dumps(node.attr)}]")
        shown = _one(self._source(node.value))
        self.changed(node, f"{shown}.{node.attr} -> {shown}[{json.dumps(node.attr)}] (SDP "
                     "refuses attribute access to a column inside a query function: "
                     "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION)")

    def _early_binding(self, node: ast.Call, func: ast.Attribute,
                       frames: dict[str, Optional[str]]) -> None:
        from sdp_expect.base.spark_version import spark_has
        from sdp_expect.spark.early_binding import EARLY_BINDING_RELATIONS
        from sdp_expect.spark.routing import handles

        if not self._is_frame(func.value, frames):
            return
        dataset = self._dataset_read(func.value, frames)
        relation = EARLY_BINDING_RELATIONS.get(_EARLY_METHODS[func.attr])
        if dataset is None or relation is None:
            return
        if relation.fixed_in is not None and spark_has(relation.fixed_in):
            return
        chain = self._source(func.value)
        if handles(func.attr, named_columns=_names_columns(node),
                   streaming="read_stream" in chain or "readStream" in chain):
            return  # sdp-expect makes it wait (sdp_expect.spark.routing)
        self.unconverted(node, f"{func.attr}() is applied to a read of pipeline dataset "
                         f"'{dataset}': open-source SDP binds the query to the table of the "
                         "previous update, and sdp-expect stops the pipeline with "
                         f"SDPX-DEF-110. Fix: {relation.rewrite} (docs/early-binding.md)")


def _names_columns(call: ast.Call) -> bool:
    """Whether a ``drop`` / ``fillna`` / ``dropna`` call names the columns it works on
    (literally), as :func:`sdp_expect.spark.routing.handles` needs."""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    keywords = {k.arg for k in call.keywords}
    if method == "drop":
        return bool(call.args) and not keywords and all(
            _literal_name(arg) for arg in call.args)
    if method == "fillna":
        return "subset" in keywords or len(call.args) >= 2 or (
            bool(call.args) and isinstance(call.args[0], ast.Dict))
    if method == "dropna":
        return "subset" in keywords or len(call.args) >= 3
    return False


def _literal_name(node: ast.AST) -> bool:
    """``"c"`` or ``col("c")`` / ``F.col("c")``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "col"
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def _reader_root(node: ast.AST) -> bool:
    """Whether a method chain starts at ``spark.read`` / ``spark.readStream``."""
    current = node
    while True:
        if isinstance(current, ast.Attribute):
            if isinstance(current.value, ast.Name) and current.value.id == "spark":
                return current.attr in ("read", "readStream")
            current = current.value
        elif isinstance(current, ast.Call):
            current = current.func
        else:
            return False


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope, without nested functions' bodies, in text order."""
    found: list[ast.AST] = []
    stack = list(reversed(list(ast.iter_child_nodes(scope))))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def _one(text: str) -> str:
    return " ".join(text.split())
