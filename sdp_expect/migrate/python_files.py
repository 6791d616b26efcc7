"""One Python pipeline file migrated (:func:`migrate_python`).

The file's imports of ``dlt`` / ``pyspark.pipelines`` become sdp-expect's, each
use of the pipeline API is checked against what ``sdp_expect.pipelines`` and
``sdp_expect.dlt`` offer on the installed Spark (missing functions, Databricks-only
arguments), Databricks-only modules, paths and notebook magics are reported,
:class:`~sdp_expect.migrate.python_rewrites.PythonRewriter` rewrites what it
can (Auto Loader, ``LIVE.``, data roots...), and ``spark`` is defined where Spark
4.1 does not inject it.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from sdp_expect.core.model import GROUP_DECORATORS
from sdp_expect.migrate.edits import TextEdits
from sdp_expect.migrate.python_rewrites import ProjectFacts, PythonRewriter, dataset_names
from sdp_expect.migrate.result import CHANGED, NOT_CONVERTED, NOTE, Finding
from sdp_expect.migrate.sources import DataRoots, all_roots

__all__ = ["PythonMigration", "migrate_python"]


# --------------------------------------------------------------------------- what exists here


def _available(module: str) -> dict[str, Optional[inspect.Signature]]:
    """The names ``sdp_expect.<module>`` offers on this Spark, with their signatures."""
    import importlib

    found = importlib.import_module(f"sdp_expect.{module}")
    names: dict[str, Optional[inspect.Signature]] = {}
    for name in getattr(found, "__all__", []):
        value = getattr(found, name, None)
        try:
            names[name] = inspect.signature(value) if callable(value) else None
        except (TypeError, ValueError):
            names[name] = None
    return names


_AUTO_CDC_HINT = ("Auto CDC needs Spark 4.2+ (dp.create_auto_cdc_flow; SCD type 2 from 4.3) "
                  "and a target format with MERGE (Delta Lake, Iceberg)")
_MISSING_HINTS = {
    "apply_changes": _AUTO_CDC_HINT,
    "apply_changes_from_snapshot": _AUTO_CDC_HINT,
    "create_auto_cdc_flow": _AUTO_CDC_HINT,
    "create_auto_cdc_from_snapshot_flow": _AUTO_CDC_HINT,
    "create_target_table": "it is the old name of create_streaming_table: rename the call",
    "read": "use spark.read.table(name)",
    "read_stream": "use spark.readStream.table(name)",
}
_ARGUMENT_HINTS = {
    "path": "OSS SDP keeps tables in the catalog's warehouse: remove path=",
    "private": "OSS SDP has no private datasets: remove private= (or make it a "
               "temporary view)",
    "row_filter": "Unity Catalog row filters do not exist in open-source Spark: remove it",
    "temporary": "make it a @dlt.view / @dp.temporary_view instead",
    "cluster_by_auto": "automatic liquid clustering is Databricks-only: remove it",
    "refresh_policy": "OSS SDP recomputes materialized views at every update: remove it",
}


def _allowed_keywords(signature: Optional[inspect.Signature]) -> Optional[set[str]]:
    """Keyword names a function accepts; ``None`` when it accepts any."""
    if signature is None:
        return None
    allowed = set()
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            allowed |= set(GROUP_DECORATORS)  # create_streaming_table(**expectations)
        elif parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            allowed.add(parameter.name)
    return allowed


# --------------------------------------------------------------------------- the file


@dataclass
class PythonMigration:
    """The migration of one Python file.

    :param text: The new text (the old one when nothing changed).
    :param pipeline: Whether the file defines pipeline datasets (imports dlt or pipelines).
    :param findings: What changed and what could not be converted.
    :param lines: For each line of the new text, its line in the source.
    """

    text: str
    pipeline: bool
    findings: list[Finding] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    """For each line of :attr:`text` (0-based index), the 1-based line of the source."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _alias_text(alias: ast.alias) -> str:
    return alias.name + (f" as {alias.asname}" if alias.asname else "")


_DATABRICKS_IMPORTS = ("databricks", "pyspark.dbutils", "dbruntime", "delta.tables")


class _PythonScan(ast.NodeVisitor):
    """Walks a module, noting sdp-expect imports to rewrite and Databricks-only uses."""

    def __init__(self, file: str, edits: TextEdits, available: dict[str, dict[str, Any]],
                 local_modules: frozenset[str] = frozenset()) -> None:
        self.file = file
        self.local_modules = local_modules
        self.edits = edits
        self.available = available
        self.findings: list[Finding] = []
        self.modules: dict[str, str] = {}  # local name -> "pipelines" | "dlt"
        self.names: dict[str, tuple[str, str]] = {}  # local name -> (module, attribute)
        self.pipeline = False
        self.later: list[Finding] = []

    # -- findings
    def changed(self, node: ast.AST, message: str) -> None:
        self.findings.append(Finding(CHANGED, self.file, getattr(node, "lineno", None), message))

    def unconverted(self, node: ast.AST, message: str) -> None:
        self.findings.append(Finding(NOT_CONVERTED, self.file, getattr(node, "lineno", None),
                                     message))

    def note(self, node: ast.AST, message: str) -> None:
        self.findings.append(Finding(NOTE, self.file, getattr(node, "lineno", None), message))

    def deferred(self, node: ast.AST, message: str) -> None:
        """Not converted, in a file that is not a pipeline file (a pipeline file is
        rewritten by :class:`~sdp_expect.migrate.python_rewrites.PythonRewriter`)."""
        self.later.append(Finding(NOT_CONVERTED, self.file, getattr(node, "lineno", None),
                                  message))

    # -- imports
    def _rewrite(self, node: ast.stmt, statements: list[str]) -> None:
        old = self.edits.source(node)
        start, end = self.edits.span(node)
        line_start = self.edits.starts[node.lineno - 1]
        indent = self.edits.text[line_start:start]
        alone = not indent.strip()
        joiner = (self.edits.newline + indent) if alone else "; "
        new = joiner.join(statements)
        self.edits.replace(start, end, new)
        self.changed(node, f"`{_one_line(old)}` -> `{_one_line(new.replace(joiner, '; '))}`")

    def _note_local(self, node: ast.stmt, module: str) -> None:
        if module.split(".")[0] in self.local_modules:
            self.findings.append(Finding(NOTE, self.file, node.lineno, f"imports the project's "
                                         f"own module {module}: `sdp-expect run` puts the "
                                         "project folder on the Python path, as Databricks "
                                         "does (with plain spark-pipelines, set PYTHONPATH)"))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._note_local(node, alias.name)
        ours: list[str] = []
        kept: list[ast.alias] = []
        for alias in node.names:
            if alias.name == "dlt":
                ours.append("from sdp_expect import dlt" + (f" as {alias.asname}"
                                                             if alias.asname else ""))
                self.modules[alias.asname or "dlt"] = "dlt"
            elif alias.name == "pyspark.pipelines" and alias.asname:
                ours.append(f"from sdp_expect import pipelines as {alias.asname}")
                self.modules[alias.asname] = "pipelines"
            elif alias.name == "pyspark.pipelines":
                self.pipeline = True
                self.unconverted(node, "`import pyspark.pipelines` without `as`: write "
                                 "`from sdp_expect import pipelines` and use `pipelines.<name>`")
                kept.append(alias)
            else:
                if alias.name.startswith(_DATABRICKS_IMPORTS):
                    self.unconverted(node, f"`import {alias.name}` is Databricks-only: "
                                     "open-source Spark does not have it")
                kept.append(alias)
        if ours:
            self.pipeline = True
            statements = ([f"import {', '.join(_alias_text(a) for a in kept)}"] if kept else [])
            self._rewrite(node, statements + ours)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            return
        self._note_local(node, module)
        if module == "pyspark" and any(a.name == "pipelines" for a in node.names):
            self.pipeline = True
            ours = [a for a in node.names if a.name == "pipelines"]
            others = [a for a in node.names if a.name != "pipelines"]
            for alias in ours:
                self.modules[alias.asname or "pipelines"] = "pipelines"
            statements = [f"from sdp_expect import {', '.join(_alias_text(a) for a in ours)}"]
            if others:
                rest = ", ".join(_alias_text(a) for a in others)
                statements.append(f"from pyspark import {rest}")
            if not others:
                self._replace_prefix(node, r"from\s+pyspark\s+import", "from sdp_expect import")
            else:
                self._rewrite(node, statements)
        elif module in ("pyspark.pipelines", "dlt"):
            self.pipeline = True
            target = "pipelines" if module == "pyspark.pipelines" else "dlt"
            for alias in node.names:
                if alias.name == "*":
                    continue
                self.names[alias.asname or alias.name] = (target, alias.name)
                self._check_name(node, target, alias.name)
            pattern = r"from\s+pyspark\s*\.\s*pipelines" if target == "pipelines" else r"from\s+dlt"
            self._replace_prefix(node, pattern, f"from sdp_expect.{target}")
        elif module.startswith(_DATABRICKS_IMPORTS):
            self.unconverted(node, f"`from {module} import ...` is Databricks-only: "
                             "open-source Spark does not have it")

    def _replace_prefix(self, node: ast.stmt, pattern: str, new: str) -> None:
        start, end = self.edits.span(node)
        old = self.edits.text[start:end]
        match = re.match(pattern + r"\b", old)
        if match is None:  # unusual spacing (a backslash continuation): regenerate
            self.unconverted(node, f"could not rewrite `{_one_line(old)}`: write it with "
                             f"`{new}`")
            return
        self.edits.replace(start, start + match.end(), new)
        self.changed(node, f"`{_one_line(old)}` -> `{_one_line(new + old[match.end():])}`")

    # -- uses
    def _check_name(self, node: ast.AST, module: str, name: str) -> None:
        if name in self.available[module]:
            return
        hint = _MISSING_HINTS.get(name, f"open-source SDP with sdp-expect has no {name}")
        shown = "dlt" if module == "dlt" else "dp"
        self.unconverted(node, f"{shown}.{name} is not available on this Spark: {hint}")

    def _function_of(self, func: ast.expr) -> Optional[tuple[str, str]]:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in self.modules:
            return self.modules[func.value.id], func.attr
        if isinstance(func, ast.Name) and func.id in self.names:
            return self.names[func.id]
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id in self.modules:
            self._check_name(node, self.modules[node.value.id], node.attr)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id == "dbutils":
            self.unconverted(node, "dbutils is Databricks-only: read settings with "
                             "spark.conf.get('key') and put the key in spark-pipeline.yml's "
                             "configuration; use plain Python or Spark for files")

    def visit_Call(self, node: ast.Call) -> None:
        self._check_call(node)
        self.generic_visit(node)

    def _check_call(self, node: ast.Call) -> None:
        func = node.func
        target = self._function_of(func)
        if target is not None:
            module, name = target
            allowed = _allowed_keywords(self.available[module].get(name))
            for keyword in node.keywords:
                if keyword.arg is None or allowed is None or keyword.arg in allowed:
                    continue
                shown = "dlt" if module == "dlt" else "dp"
                hint = _ARGUMENT_HINTS.get(keyword.arg, "open-source SDP does not accept it")
                self.unconverted(keyword.value, f"argument {keyword.arg}= of {shown}.{name} is "
                                 f"Databricks-only: {hint}")
        if isinstance(func, ast.Name) and func.id == "display":
            self.unconverted(node, "display() is a Databricks notebook function: remove it")
        if isinstance(func, ast.Attribute):
            first = node.args[0] if node.args else None
            text = first.value if isinstance(first, ast.Constant) else None
            if func.attr == "format" and isinstance(text, str) and text.lower() == "cloudfiles":
                self.deferred(node, "Auto Loader (format(\"cloudFiles\")) is Databricks-only: "
                                 "read the files with spark.readStream.format(\"json\"|\"csv\"|"
                                 "\"parquet\"...).schema(...).load(path)")
            if func.attr == "table" and isinstance(first, ast.Constant) \
                    and isinstance(text, str) and text.upper().startswith("LIVE."):
                self._strip_live(first)
            if func.attr == "sql" and isinstance(text, str) and re.search(r"\bLIVE\.", text, re.I):
                self.unconverted(node, "SQL text with LIVE. in spark.sql(): remove the LIVE. "
                                 "prefix (open-source SDP reads datasets by their names)")

    def _strip_live(self, node: ast.Constant) -> None:
        start, end = self.edits.span(node)
        old = self.edits.text[start:end]
        match = re.search(r"LIVE\.", old, re.I)
        if match is None:
            return
        self.edits.replace(start + match.start(), start + match.end(), "")
        self.changed(node, f"{old} -> {old[:match.start()] + old[match.end():]} (no LIVE. "
                           "schema in open-source SDP)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for marker, what in (("/Volumes/", "a Unity Catalog volume path"),
                                 ("dbfs:/", "a DBFS path"), ("/dbfs/", "a DBFS path")):
                if marker in node.value:
                    self.deferred(node, f"{what} ({marker}...): point it at a local or "
                                     "object-store path (the pipeline configuration is a good "
                                     "place for it)")
                    break


def _module_level(node: ast.AST) -> Iterable[ast.AST]:
    """``node`` and what it holds, without the bodies of functions, lambdas and classes."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield child  # its name binds; its body does not
            yield from child.decorator_list if not isinstance(child, ast.Lambda) else ()
            continue
        yield from _module_level(child)


def _binds_spark(tree: ast.Module) -> bool:
    """Whether the module itself defines ``spark`` (assignment, import, def)."""
    for sub in _module_level(tree):
        if isinstance(sub, ast.Name) and sub.id == "spark" and isinstance(sub.ctx, ast.Store):
            return True
        if isinstance(sub, ast.alias) and (sub.asname or sub.name.split(".")[0]) == "spark":
            return True
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and sub.name == "spark":
            return True
    return False


def _uses(node: ast.AST, name: str) -> bool:
    return any(isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load)
               for sub in ast.walk(node))


def _add_spark(tree: ast.Module, edits: TextEdits, file: str,
               also: Iterable[int] = ()) -> Optional[Finding]:
    """Define ``spark`` after the imports of a file that uses it without defining it,
    counting as uses the top-level statements (by index, ``also``) that the rewrites
    made use it."""
    rewritten = set(also)
    if _binds_spark(tree) or not (_uses(tree, "spark") or rewritten):
        return None
    first_use = next((i for i, node in enumerate(tree.body)
                      if i in rewritten or _uses(node, "spark")), len(tree.body))
    after = 0
    for node in tree.body[:first_use]:
        is_docstring = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                        and isinstance(node.value.value, str) and node is tree.body[0])
        if isinstance(node, (ast.Import, ast.ImportFrom)) or is_docstring:
            after = node.end_lineno or node.lineno
    has_session = any(isinstance(node, ast.ImportFrom) and node.module == "pyspark.sql"
                      and any((a.asname or a.name) == "SparkSession" for a in node.names)
                      for node in tree.body)
    lines = [] if has_session else ["from pyspark.sql import SparkSession"]
    lines += ["", "# Spark 4.1 does not define `spark` in pipeline files (4.2+ does).",
              "spark = SparkSession.active()"]
    if after == 0:
        # No import before the first use: after the leading comments (a shebang, an
        # encoding line, "# Databricks notebook source"), which must stay first.
        while after < len(edits.lines) and edits.lines[after].lstrip().startswith("#"):
            after += 1
        lines = [line for line in lines if line] + [""]
    edits.insert_after_line(after, lines)
    return Finding(CHANGED, file, after + 1,
                   "added `spark = SparkSession.active()` (the file uses `spark`; Spark 4.1 "
                   "does not define it in pipeline files)")


def _magic_findings(text: str, file: str) -> list[Finding]:
    """Databricks notebook magic cells (``# MAGIC %sql`` ...), one finding per cell."""
    findings: list[Finding] = []
    previous = False
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return findings
    for token in tokens:
        if token.type == tokenize.NL or token.type == tokenize.NEWLINE:
            continue
        magic = token.type == tokenize.COMMENT and token.string.startswith("# MAGIC")
        if magic and not previous:
            command = token.string[len("# MAGIC"):].strip().split(" ", 1)[0] or "cell"
            if command in ("%md", "%md-sandbox"):  # documentation: nothing to run
                previous = magic
                continue
            findings.append(Finding(NOT_CONVERTED, file, token.start[0],
                                    f"notebook magic cell ({command}) is Databricks-only: "
                                    "spark-pipelines runs only the Python; move it into the "
                                    "pipeline (SQL into a .sql file) or drop it"))
        previous = magic
    return findings


def migrate_python(data: bytes, file: str,
                   local_modules: frozenset[str] = frozenset(),
                   facts: Optional[ProjectFacts] = None) -> PythonMigration:
    """Rewrite one Python file's text for open-source SDP with sdp-expect.

    :param data: The file's bytes.
    :param file: Its name in findings.
    :param local_modules: Top-level modules and packages of the project (noted when imported).
    :param facts: What the project's files share (its datasets, data roots, the
        settings the rewritten code needs); default: this file alone.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError) as error:
        return PythonMigration(text="", pipeline=False, findings=[
            Finding(NOT_CONVERTED, file, None, f"cannot read it as Python: {error}")])
    try:
        tree = ast.parse(text, filename=file)
    except SyntaxError as error:
        return PythonMigration(text=text, pipeline=False, findings=[
            Finding(NOT_CONVERTED, file, error.lineno,
                    f"not valid Python ({error.msg}): copied as is")])
    edits = TextEdits(text)
    scan = _PythonScan(file, edits, {"pipelines": _AVAILABLE.get("pipelines"),
                                     "dlt": _AVAILABLE.get("dlt")}, local_modules)
    scan.visit(tree)
    findings = list(scan.findings)
    if scan.pipeline:
        if facts is None:
            facts = ProjectFacts(datasets=dataset_names(tree),
                                 roots=DataRoots(all_roots(text), "data"))
        rewriter = PythonRewriter(tree, edits, file, scan.modules, facts, scan.changed,
                                  scan.unconverted, scan.note)
        rewriter.run()
        findings = list(scan.findings)
        added = _add_spark(tree, edits, file, rewriter.spark_statements)
        if added is not None:
            findings.append(added)
        findings.extend(_magic_findings(text, file))
    else:
        findings.extend(scan.later)
    new_text, lines = edits.apply_with_map()
    findings.sort(key=lambda f: (f.line or 0))
    return PythonMigration(text=new_text, pipeline=scan.pipeline, findings=_unique(findings),
                           lines=lines)


class _Lazy:
    """``sdp_expect.pipelines`` / ``dlt`` names, looked up on first use (imports pyspark)."""

    def __init__(self) -> None:
        self._found: dict[str, dict[str, Any]] = {}

    def get(self, module: str) -> dict[str, Any]:
        if module not in self._found:
            self._found[module] = _available(module)
        return self._found[module]


_AVAILABLE = _Lazy()


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[Finding] = set()
    out = []
    for finding in findings:
        if finding not in seen:
            seen.add(finding)
            out.append(finding)
    return out
