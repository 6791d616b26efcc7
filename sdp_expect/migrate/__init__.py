"""``sdp-expect migrate SRC DST``: a Databricks Lakeflow / DLT project to an open-source SDP one.

:func:`migrate` reads a Databricks pipeline project (Python files using
``from pyspark import pipelines as dp`` or ``import dlt``, SQL files with
``CREATE OR REFRESH ... CONSTRAINT ... EXPECT``, optionally a Databricks Asset
Bundle) and writes, in a new folder, a project that ``sdp-expect run`` runs:

- every file is copied to the same place, so relative paths keep working;
- in Python pipeline files, the imports become sdp-expect's
  (``from sdp_expect import pipelines as dp``, ``from sdp_expect import dlt``),
  ``LIVE.`` is removed from table names given to ``spark.read.table`` and
  friends, and ``spark = SparkSession.active()`` is added where a file uses
  ``spark`` without defining it (Spark 4.1 does not inject it). Only those
  spans of text change; the rest of the file stays byte for byte;
- SQL files are kept as written and registered through ``sdp_expect.sql``
  by a generated ``databricks_sql.py``;
- ``spark-pipeline.yml`` lists those files (and the bundle's configuration).

Everything it cannot convert (Auto Loader, ``dlt.apply_changes`` where the
installed Spark has no Auto CDC, ``path=`` and other Databricks-only arguments,
``dbutils``, ``/Volumes/`` paths, notebook magics, Databricks-only SQL...) is
reported with its file and line. The source folder is only read.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import os
import re
import shutil
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from sdp_expect.migrate.python_rewrites import ProjectFacts, PythonRewriter, dataset_names
from sdp_expect.migrate.sources import SCHEMA_INFERENCE, DataRoots, all_roots

if TYPE_CHECKING:
    from sdp_expect.dbsql.statements import StatementSummary

__all__ = [
    "CHANGED",
    "NOT_CONVERTED",
    "Finding",
    "MigrationError",
    "MigrationResult",
    "PythonMigration",
    "migrate",
    "migrate_python",
    "read_sql",
    "scan_sql",
]

CHANGED = "changed"
"""A finding: something migrate rewrote."""
NOT_CONVERTED = "not converted"
"""A finding: something migrate left as is and the user must change."""
NOTE = "note"
"""A finding: something worth knowing that needs no change."""

SQL_INCLUDE_FILE = "databricks_sql.py"
"""The generated Python file that registers the Databricks SQL files."""
SPEC_FILE = "spark-pipeline.yml"
"""The generated spec file."""
SKIPPED_FOLDERS = {".git", ".hg", ".svn", "__pycache__", ".databricks", ".venv", "venv",
                   ".ipynb_checkpoints", "metastore_db", "spark-warehouse", ".sdp-expect",
                   ".pytest_cache", ".mypy_cache", ".ruff_cache"}
"""Folders that are never copied."""


class MigrationError(Exception):
    """The migration cannot start (a usage mistake: bad SRC or DST)."""


@dataclass(frozen=True)
class Finding:
    """One thing migrate did or could not do.

    :param kind: :data:`CHANGED`, :data:`NOT_CONVERTED` or :data:`NOTE`.
    :param file: The file, relative to SRC (and DST).
    :param line: The 1-based line, when it concerns one.
    :param message: What was done, or what is wrong and how to fix it.
    """

    kind: str
    file: str
    line: Optional[int]
    message: str

    @property
    def where(self) -> str:
        """``file:line`` (or ``file``)."""
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class MigrationResult:
    """What :func:`migrate` did.

    :param src: The source project.
    :param dst: The new project.
    :param findings: Everything changed, not converted or noted, in file order.
    :param python_files: The pipeline's Python files (relative paths), as listed in the spec.
    :param sql_files: The Databricks SQL files included through ``sdp_expect.sql``.
    :param sql_statements: The statements read from each of them, as ``sql.include``
        reads them (:func:`read_sql`).
    :param copied: Every file written to DST (relative paths).
    :param name: The pipeline's name.
    """

    src: Path
    dst: Path
    findings: list[Finding] = field(default_factory=list)
    python_files: list[str] = field(default_factory=list)
    sql_files: list[str] = field(default_factory=list)
    sql_statements: dict[str, list[StatementSummary]] = field(default_factory=dict)
    copied: list[str] = field(default_factory=list)
    name: str = ""
    line_maps: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """For each rewritten or generated file of DST, per line (0-based index): the SRC
    file and 1-based line it comes from."""
    configuration: dict[str, str] = field(default_factory=dict)
    """The pipeline configuration written to spark-pipeline.yml."""
    check: Optional[Any] = None
    """The dry-run of the result (:class:`sdp_expect.migrate.check.CheckResult`), if run."""

    def of(self, kind: str) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]

    @property
    def complete(self) -> bool:
        """True when nothing was left unconverted."""
        return not self.of(NOT_CONVERTED)


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
_EXPECT_ALL_KWARGS = {"expect_all", "expect_all_or_drop", "expect_all_or_fail"}


def _allowed_keywords(signature: Optional[inspect.Signature]) -> Optional[set[str]]:
    """Keyword names a function accepts; ``None`` when it accepts any."""
    if signature is None:
        return None
    allowed = set()
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            allowed |= _EXPECT_ALL_KWARGS  # create_streaming_table(**expectations)
        elif parameter.kind is not inspect.Parameter.VAR_POSITIONAL:
            allowed.add(parameter.name)
    return allowed


# --------------------------------------------------------------------------- text edits


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class _Edits:
    """Replacements in a text, by ast positions; applied all at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = _LINE.findall(text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.edits: list[tuple[int, int, str]] = []

    def offset(self, lineno: int, col: int) -> int:
        """Character offset of an ast (line, UTF-8 byte column) position."""
        if lineno - 1 >= len(self.lines):
            return len(self.text)
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        """The characters of a node."""
        end_line = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None)
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return start, self.offset(end_line, end_col if end_col is not None else 0)

    def source(self, node: ast.AST) -> str:
        """A node's text."""
        start, end = self.span(node)
        return self.text[start:end]

    def replace(self, start: int, end: int, new: str) -> None:
        """Replace ``text[start:end]``."""
        self.edits.append((start, end, new))

    def insert_after_line(self, lineno: int, new_lines: Sequence[str]) -> None:
        """Insert whole lines after line ``lineno`` (0: at the top)."""
        at = self.starts[min(lineno, len(self.lines))]
        prefix = ""
        if lineno >= len(self.lines) and self.lines and not self.lines[-1].endswith(("\n", "\r")):
            prefix = self.newline
        self.edits.append((at, at, prefix + "".join(line + self.newline for line in new_lines)))

    def apply(self) -> str:
        """The text with every edit made."""
        return self.apply_with_map()[0]

    def apply_with_map(self) -> tuple[str, list[int]]:
        """The text with every edit made, and for each of its lines (0-based index) the
        1-based line of the original text it comes from (inserted text: the line it
        was inserted at)."""
        pieces: list[str] = []
        origins: list[int] = []  # per character of the new text: its original offset
        position = 0
        for start, end, new in sorted(self.edits, key=lambda e: (e[0], e[1])):
            if start < position:  # overlaps an earlier edit: keep the earlier one
                continue
            pieces.append(self.text[position:start])
            origins.extend(range(position, start))
            pieces.append(new)
            origins.extend([start] * len(new))
            position = end
        pieces.append(self.text[position:])
        origins.extend(range(position, len(self.text)))
        text = "".join(pieces)
        line_of_offset = self.line_of
        lines = [line_of_offset(origins[0]) if origins else 1]
        for index, char in enumerate(text):
            if char == "\n" and index + 1 < len(text):
                lines.append(line_of_offset(origins[index + 1]))
        return text, lines

    def line_of(self, offset: int) -> int:
        """The 1-based line of a character offset of the original text."""
        import bisect

        return max(1, bisect.bisect_right(self.starts, offset))


# --------------------------------------------------------------------------- Python


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

    def __init__(self, file: str, edits: _Edits, available: dict[str, dict[str, Any]],
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


def _add_spark(tree: ast.Module, edits: _Edits, file: str,
               also: Iterable[int] = ()) -> Optional[Finding]:
    """Define ``spark`` after the imports of a file that uses it without defining it.

    :param also: Indices of top-level statements that the rewrites made use ``spark``.
    """
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
    edits = _Edits(text)
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


# --------------------------------------------------------------------------- SQL


_PIPELINE_SQL = re.compile(
    r"\bCREATE\b[\s\S]*?\b(STREAMING\s+(LIVE\s+)?TABLE|MATERIALIZED\s+VIEW|LIVE\s+(TABLE|VIEW)"
    r"|TEMPORARY\s+(LIVE\s+)?VIEW|FLOW)\b", re.I)


def is_pipeline_sql(text: str) -> bool:
    """Whether SQL text declares pipeline datasets or flows.

    The statements are those the reader of ``sdp_expect.sql`` finds (the SQL of
    a notebook's ``%sql`` cells included; comments and markdown cells left out).
    """
    from sdp_expect.dbsql.split import split
    from sdp_expect.sqltokens import SqlTokenError

    try:
        code = " ".join(t.text for statement in split(text, "<sql>").statements
                        for t in statement.tokens)
    except SqlTokenError:
        code = text
    return bool(_PIPELINE_SQL.search(code))


def scan_sql(text: str, file: str, base_dir: str,
             conf: Optional[dict[str, str]] = None) -> list[Finding]:
    """Every Databricks SQL construct that sdp-expect cannot translate, with its line.

    The file is read by the reader of ``sdp_expect.sql`` (:func:`read_sql`);
    every coded error is reported.
    """
    return read_sql(text, file, base_dir, conf)[1]


def read_sql(text: str, file: str, base_dir: str, conf: Optional[dict[str, str]] = None
             ) -> tuple[list[StatementSummary], list[Finding]]:
    """The statements of a Databricks SQL file, and what in it cannot be translated.

    The statements are those ``sql.include``, ``sdp-expect translate`` and
    ``sdp-expect validate`` read (:func:`sdp_expect.dbsql.parse.check`: cells of
    an exported notebook, ``SET`` without ``;``, legacy spellings). Each
    statement read is then translated for one pipeline, without Spark
    (:func:`sdp_expect.sql.translation_errors`); every coded error of either
    step is a :data:`NOT_CONVERTED` finding at its line, in line order.

    :param text: The file's content.
    :param file: The file as shown (relative to SRC).
    :param base_dir: The file's folder (where ``'sdp_expect.rules'`` paths start).
    :param conf: The pipeline's configuration.
    """
    from sdp_expect.dbsql.parse import check
    from sdp_expect.sql import translation_errors

    read = check(text, file, base_dir=base_dir)
    errors = [*read.errors, *translation_errors(read.statements, file, conf=conf)]
    findings = [Finding(NOT_CONVERTED, file, _line_of(error), _error_text(error, file))
                for error in errors]
    findings.sort(key=lambda finding: finding.line or 0)
    return read.summary, findings


def _line_of(error: Any) -> Optional[int]:
    match = re.search(r":(\d+)", str(getattr(error, "location", "") or ""))
    return int(match.group(1)) if match else None


def _error_text(error: Any, file: str) -> str:
    text = str(error)
    location = str(getattr(error, "location", "") or "")
    for noise in (f" ({location})", f"{location}: ", f"{location}, "):
        if location:
            text = text.replace(noise, "")
    return text


# --------------------------------------------------------------------------- bundles


_BUNDLE_KEPT = {"name", "configuration", "libraries"}
_BUNDLE_HINTS = {
    "catalog": "Unity Catalog: the tables go to the local catalog's default database; set "
               "`catalog:`/`database:` in spark-pipeline.yml for others (create them first)",
    "schema": "the tables go to the default database; set `database:` in spark-pipeline.yml "
              "for another (create it first)",
    "target": "the tables go to the default database; set `database:` in spark-pipeline.yml "
              "for another (create it first)",
}


def _node_get(node: Any, key: str) -> tuple[Any, Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if getattr(key_node, "value", None) == key:
                return key_node, value_node
    return None, None


def _read_bundle(src: Path, result: MigrationResult) -> dict[str, Any]:
    """The first pipeline of a Databricks Asset Bundle in ``src``: name, configuration."""
    import yaml

    candidates = sorted(p for p in src.rglob("*.y*ml")
                        if p.suffix in (".yml", ".yaml")
                        and not any(part in SKIPPED_FOLDERS for part in p.relative_to(src).parts))
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
            root = yaml.compose(text)
            data = yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        pipelines = (data or {}).get("resources", {}).get("pipelines") \
            if isinstance(data, dict) and isinstance(data.get("resources"), dict) else None
        if not isinstance(pipelines, dict) or not pipelines:
            continue
        rel = path.relative_to(src).as_posix()
        _, resources = _node_get(root, "resources")
        _, pipelines_node = _node_get(resources, "pipelines")
        key, settings = next(iter(pipelines.items()))
        _, settings_node = _node_get(pipelines_node, key)
        if len(pipelines) > 1:
            result.findings.append(Finding(NOTE, rel, None, f"the bundle defines "
                                           f"{len(pipelines)} pipelines; migrate used '{key}'"))
        found: dict[str, Any] = {"file": rel}
        if not isinstance(settings, dict):
            return found
        found["name"] = str(settings.get("name", key))
        configuration = settings.get("configuration") or {}
        if isinstance(configuration, dict):
            kept = {}
            _, conf_node = _node_get(settings_node, "configuration")
            for conf_key, value in configuration.items():
                key_node, _ = _node_get(conf_node, str(conf_key))
                line = key_node.start_mark.line + 1 if key_node is not None else None
                text_value = str(value).lower() if isinstance(value, bool) else str(value)
                if "${" in text_value:
                    result.findings.append(Finding(NOT_CONVERTED, rel, line, f"configuration "
                                                   f"{conf_key}: {text_value} uses a bundle "
                                                   "variable: set the value in "
                                                   "spark-pipeline.yml"))
                kept[str(conf_key)] = text_value
            found["configuration"] = kept
        for setting in settings:
            if setting in _BUNDLE_KEPT:
                continue
            key_node, _ = _node_get(settings_node, str(setting))
            line = key_node.start_mark.line + 1 if key_node is not None else None
            hint = _BUNDLE_HINTS.get(str(setting), "a Databricks pipeline setting with no "
                                     "open-source SDP equivalent")
            result.findings.append(Finding(NOT_CONVERTED, rel, line,
                                           f"pipeline setting `{setting}` not carried over: "
                                           f"{hint}"))
        if "libraries" in settings:
            key_node, _ = _node_get(settings_node, "libraries")
            result.findings.append(Finding(NOTE, rel, key_node.start_mark.line + 1
                                           if key_node is not None else None,
                                           "libraries: spark-pipeline.yml lists the pipeline "
                                           "files found in the project instead"))
        return found
    return {}


# --------------------------------------------------------------------------- the project


def _files(src: Path) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
        for name in sorted(names):
            found.append(Path(folder) / name)
    return found


def _check_folders(src: Path, dst: Path) -> None:
    if not src.is_dir():
        raise MigrationError(f"SRC {src} is not a folder")
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise MigrationError(f"DST {dst} exists and is not an empty folder; give a new folder")
    real_src, real_dst = src.resolve(), dst.resolve()
    if real_dst == real_src or real_src in real_dst.parents:
        raise MigrationError("DST must not be inside SRC (migrate never writes into SRC)")


def _free_name(taken: set[str], name: str) -> str:
    stem, suffix = os.path.splitext(name)
    candidate, number = name, 2
    while candidate in taken:
        candidate = f"{stem}_{number}{suffix}"
        number += 1
    return candidate


def _spec_text(result: MigrationResult, src: Path, configuration: dict[str, str],
               libraries: list[str]) -> str:
    import yaml

    storage = (result.dst.resolve() / "pipeline-storage").as_uri()
    data: dict[str, Any] = {"name": result.name, "storage": storage}
    if configuration:
        data["configuration"] = configuration
    data["libraries"] = [{"glob": {"include": path}} for path in libraries]
    header = (f"# Written by `sdp-expect migrate` from {src}.\n"
              "# Run it with: sdp-expect run   (in this folder)\n"
              "# `storage` must be an absolute URI: change it if you move the project.\n"
              "# `libraries` names each pipeline file; add new files here.\n")
    return header + str(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))


def _include_text(sql_files: list[str], include_dir: str) -> str:
    lines = ['"""The Databricks SQL files of this pipeline, kept as written.',
             "",
             "Written by `sdp-expect migrate`. spark-pipelines cannot read Databricks SQL",
             "(CREATE OR REFRESH ..., CONSTRAINT ... EXPECT, LIVE.): sdp_expect.sql translates",
             "each file and registers it with the pipeline (paths are relative to this file).",
             '"""',
             "",
             "from sdp_expect import sql",
             ""]
    for path in sql_files:
        relative = os.path.relpath(path, include_dir or ".").replace(os.sep, "/")
        lines.append(f"sql.include({json.dumps(relative)})")
    return "\n".join(lines) + "\n"


def _code_lines(text: str, comment: str) -> str:
    """``text`` without its whole-line comments (markdown cells, notes)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(comment))


def _project_facts(src: Path, paths: list[Path], data_root: str) -> ProjectFacts:
    """The datasets and Databricks data roots of the whole project, before any rewrite."""
    from sdp_expect.dbsql.split import split
    from sdp_expect.migrate.sql_sources import _dataset_name
    from sdp_expect.sqltokens import SqlTokenError

    datasets: set[str] = set()
    roots: list[str] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if path.suffix == ".py":
            try:
                datasets |= dataset_names(ast.parse(text))
            except SyntaxError:
                continue
            roots += all_roots(_code_lines(text, "#"))
        elif path.suffix.lower() == ".sql":
            roots += all_roots(_code_lines(text, "--"))
            try:
                statements = split(text, path.name).statements
            except SqlTokenError:
                continue
            datasets |= {_dataset_name(s.tokens) for s in statements
                         if s.tokens[0].text.upper() == "CREATE"}
    return ProjectFacts(datasets=datasets, roots=DataRoots(roots, data_root))


SOURCES_FILE = "databricks_file_sources.py"
"""The generated Python file with the views that replace ``read_files`` / ``cloud_files``."""


def _sources_text(sources: list[Any]) -> tuple[str, list[tuple[str, int]]]:
    """The generated views file, and for each of its lines the SQL file:line it comes from."""
    header = ['"""Written by `sdp-expect migrate`: the files that the Databricks SQL files read',
              "with read_files() / cloud_files(), each as a temporary view (open-source Spark",
              'SQL has no streaming file read). The SQL reads each view by its name."""',
              "",
              "from pyspark.sql import SparkSession",
              "",
              "from sdp_expect import pipelines as dp",
              "",
              "spark = SparkSession.active()",
              ""]
    lines = list(header)
    origins = [(sources[0].file, sources[0].line)] * len(header)
    for source in sources:
        block = ["", *source.code.rstrip("\n").split("\n")]
        lines += block
        origins += [(source.file, source.line)] * len(block)
    return "\n".join(lines) + "\n", origins


def _sql_findings(text: str, file: str) -> list[Finding]:
    """Databricks-only SQL functions and ``USING DELTA`` in a SQL file's statements."""
    from sdp_expect.databricks_functions import DATABRICKS_ONLY_SQL_FUNCTIONS
    from sdp_expect.dbsql.split import split
    from sdp_expect.migrate.python_rewrites import DELTA_FIX
    from sdp_expect.sqltokens import SqlTokenError, TokenKind

    findings: list[Finding] = []
    try:
        statements = split(text, file).statements
    except SqlTokenError:
        return findings
    for statement in statements:
        tokens = statement.tokens
        for index, token in enumerate(tokens[:-1]):
            name = token.text.lower()
            if (token.kind is TokenKind.IDENT and name in DATABRICKS_ONLY_SQL_FUNCTIONS
                    and tokens[index + 1].kind is TokenKind.LPAREN
                    and (index == 0 or tokens[index - 1].kind is not TokenKind.DOT)):
                findings.append(Finding(NOT_CONVERTED, file, token.line, f"{token.text}() is a "
                                        "Databricks-only SQL function (open-source Spark stops "
                                        "the flow with UNRESOLVED_ROUTINE). Fix: "
                                        f"{DATABRICKS_ONLY_SQL_FUNCTIONS[name]}"))
            if token.kind is TokenKind.IDENT and name == "using" \
                    and tokens[index + 1].text.lower() == "delta":
                findings.append(Finding(NOT_CONVERTED, file, token.line,
                                        f"USING DELTA: {DELTA_FIX}"))
    return findings


def migrate(src: Path, dst: Path, *, name: Optional[str] = None,
            on_file: Optional[Callable[[str], None]] = None,
            data_root: Optional[str] = None) -> MigrationResult:
    """Write an open-source SDP project in ``dst`` from the Databricks project in ``src``.

    :param src: The Databricks project folder (only read).
    :param dst: A new (or empty) folder for the converted project.
    :param name: The pipeline's name; default the bundle's, else ``src``'s folder name.
    :param on_file: Called with each file's relative path as it is written.
    :param data_root: The local folder that the settings of the Databricks data roots
        (``/Volumes/<catalog>/<schema>/<volume>``, ``dbfs:/mnt/<m>``...) point under,
        each as ``<data_root>/<volume>``; default ``DST/data`` (then reported: the user
        must put the files there or change the setting).
    :raises MigrationError: when ``src`` is not a folder, ``dst`` is not new or
        empty, or ``dst`` is inside ``src``.
    """
    from sdp_expect.migrate.sql_sources import path_expression, rewrite_sql_sources

    _check_folders(src, dst)
    result = MigrationResult(src=src, dst=dst)
    bundle = _read_bundle(src, result)
    result.name = name or bundle.get("name") or src.resolve().name
    configuration = dict(bundle.get("configuration", {}))
    planned: list[tuple[str, bytes]] = []
    sql_paths: list[tuple[str, Path]] = []
    local_modules = frozenset(
        entry.stem if entry.is_file() else entry.name for entry in src.iterdir()
        if (entry.is_file() and entry.suffix == ".py")
        or (entry.is_dir() and entry.name not in SKIPPED_FOLDERS))
    all_files = _files(src)
    root_base = str(Path(data_root).resolve()) if data_root else str(dst.resolve() / "data")
    facts = _project_facts(src, all_files, root_base)
    for path in all_files:
        rel = path.relative_to(src).as_posix()
        data = path.read_bytes()
        if path.suffix == ".py":
            migration = migrate_python(data, rel, local_modules, facts)
            result.findings.extend(migration.findings)
            if migration.pipeline:
                result.python_files.append(rel)
                encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
                data = migration.text.encode(encoding)
                result.line_maps[rel] = [(rel, line) for line in migration.lines]
        elif path.suffix.lower() == ".sql":
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = ""
            if text and is_pipeline_sql(text):
                result.sql_files.append(rel)
                sql_paths.append((rel, path))
            else:
                result.findings.append(Finding(NOTE, rel, None, "no pipeline dataset in it: "
                                               "copied, not part of the pipeline"))
        planned.append((rel, data))
    taken = {rel for rel, _ in planned}
    views_taken = set(facts.datasets)
    file_sources: list[Any] = []
    rewritten: dict[str, bytes] = {}
    for rel, path in sql_paths:
        text = path.read_text(encoding="utf-8")
        moved, infers = rewrite_sql_sources(text, rel, views_taken,
                                             path_expression(facts.roots))
        if infers:
            facts.configuration[SCHEMA_INFERENCE] = "true"
        file_sources += moved.sources
        for kind, line, message in moved.findings:
            result.findings.append(Finding(CHANGED if kind == CHANGED else NOT_CONVERTED, rel,
                                           line, message))
        if moved.text != text:
            rewritten[rel] = moved.text.encode("utf-8")
        result.line_maps[rel] = [(rel, line) for line in moved.lines]
        statements, unconverted = read_sql(moved.text, rel, str(path.parent), configuration)
        for finding in [*unconverted, *_sql_findings(moved.text, rel)]:
            at = finding.line
            if at is not None and 0 < at <= len(moved.lines):
                finding = dataclasses.replace(finding, line=moved.lines[at - 1])
            result.findings.append(finding)
        result.sql_statements[rel] = statements
        count = f"{len(statements)} statement{'' if len(statements) == 1 else 's'}"
        how = ("rewritten where it read files (above), otherwise kept as written"
               if rel in rewritten else "kept as written")
        result.findings.append(Finding(CHANGED, rel, None, f"{how}; registered by "
                                       f"{SQL_INCLUDE_FILE} through sdp_expect.sql.include "
                                       f"({count} read)"))
    planned = [(rel, rewritten.get(rel, data)) for rel, data in planned]
    libraries = list(result.python_files)
    extra: list[tuple[str, bytes]] = []
    if file_sources:
        sources_name = _free_name(taken, SOURCES_FILE)
        sources_text, origins = _sources_text(file_sources)
        extra.append((sources_name, sources_text.encode("utf-8")))
        result.line_maps[sources_name] = origins
        libraries.append(sources_name)
        result.findings.append(Finding(CHANGED, sources_name, None, f"written: "
                                       f"{len(file_sources)} view(s) reading the files that "
                                       "the SQL files read with read_files()/cloud_files()"))
    if result.sql_files:
        include_name = _free_name(taken, SQL_INCLUDE_FILE)
        extra.append((include_name, _include_text(result.sql_files, "").encode("utf-8")))
        libraries.append(include_name)
        result.findings.append(Finding(CHANGED, include_name, None, f"written: includes "
                                       f"{len(result.sql_files)} Databricks SQL file(s)"))
    if not libraries:
        result.findings.append(Finding(NOT_CONVERTED, ".", None, "no pipeline file found (no "
                                       "Python file importing dlt or pyspark.pipelines, no SQL "
                                       "file declaring a dataset)"))
    if SPEC_FILE in taken:
        result.findings.append(Finding(NOTE, SPEC_FILE, None, "the project's own spec file is "
                                       "replaced by the one migrate writes"))
        planned = [(rel, data) for rel, data in planned if rel != SPEC_FILE]
    for key, value in facts.configuration.items():
        if key not in configuration:
            configuration[key] = value
            result.findings.append(Finding(CHANGED, SPEC_FILE, None, f"configuration {key}: "
                                           f"{value} (a file stream infers its schema from the "
                                           "files, as Auto Loader did)"))
    for root, uses in facts.roots.uses.items():
        key, value = facts.roots.key(root), facts.roots.value(root)
        configuration.setdefault(key, value)
        where = ", ".join(dict.fromkeys(uses))
        message = (f"configuration {key}: {configuration[key]} stands for {root} (used at "
                   f"{where}): the migrated code reads it with spark.conf.get({key!r})")
        if data_root:
            result.findings.append(Finding(CHANGED, SPEC_FILE, None, message))
        else:
            result.findings.append(Finding(NOT_CONVERTED, SPEC_FILE, None, message + ". Fix: "
                                           f"put the files of {root} in {configuration[key]}, "
                                           f"or set {key} in {SPEC_FILE} to where they are "
                                           "(or give migrate --data-root)"))
    extra.append((SPEC_FILE, _spec_text(result, src, configuration, libraries).encode("utf-8")))
    result.configuration = configuration
    result.findings.append(Finding(CHANGED, SPEC_FILE, None, f"written: pipeline "
                                   f"'{result.name}', {len(libraries)} librar"
                                   f"{'y' if len(libraries) == 1 else 'ies'}"
                                   + (f", configuration from {bundle['file']}"
                                      if bundle.get("configuration") else "")))
    dst.mkdir(parents=True, exist_ok=True)
    for rel, data in planned + extra:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        source = src / rel
        if source.is_file():
            shutil.copymode(source, target)
        result.copied.append(rel)
        if on_file is not None:
            on_file(rel)
    order = {rel: index for index, (rel, _) in enumerate(planned + extra)}
    result.findings.sort(key=lambda f: (order.get(f.file, -1), f.line or 0))
    return result


# --------------------------------------------------------------------------- output


EXIT_REVIEW = 3
"""``migrate``: the result passed its dry-run (or was not checked), but some constructs
are listed as not converted and need a look by hand."""


def exit_status(result: MigrationResult) -> int:
    """0 complete and checked (or not checked); 1 the dry-run failed; 3 runs, but
    something is listed as not converted."""
    if result.check is not None and not result.check.ok:
        return 1
    return 0 if result.complete else EXIT_REVIEW


def _check_findings(result: MigrationResult) -> list[Finding]:
    if result.check is None or result.check.ok:
        return []
    found = []
    for error in result.check.errors:
        where = f" (migrated file {error.dst})" if error.dst else ""
        found.append(Finding(NOT_CONVERTED, error.file or ".", error.line,
                             f"dry-run: {error.message}{where}"))
    return found


def to_text(result: MigrationResult) -> str:
    """What migrate did, for a person."""
    lines = [f"sdp-expect migrate: {result.src} -> {result.dst}", ""]
    changed = result.of(CHANGED)
    lines.append(f"Changed ({len(changed)}):")
    lines += [f"  {f.where}: {f.message}" for f in changed] or ["  nothing"]
    notes = result.of(NOTE)
    if notes:
        lines += ["", f"Notes ({len(notes)}):"]
        lines += [f"  {f.where}: {f.message}" for f in notes]
    missing = result.of(NOT_CONVERTED)
    lines += ["", f"Not converted ({len(missing)}){', fix by hand:' if missing else ''}"]
    if missing:
        lines += [f"  {f.where}: {f.message}" for f in missing]
    elif result.check is not None and result.check.ok:
        lines.append("  nothing: every construct was converted, and the dry-run passed")
    elif result.check is None:
        lines.append("  nothing found (the result was not dry-run: --no-check)")
    else:
        lines.append("  nothing found by reading the files, but the dry-run failed (below)")
    failed = _check_findings(result)
    if result.check is None:
        lines += ["", "Dry-run: not run (--no-check). Check with: sdp-expect dry-run"]
    elif result.check.ok:
        lines += ["", "Dry-run: passed: every definition of the migrated pipeline is valid"]
    else:
        lines += ["", f"Dry-run: FAILED, the migrated project will not run as written "
                      f"({len(failed)} error(s), at the source file and line):"]
        lines += [f"  {f.where}: {f.message}" for f in failed]
    lines += ["", f"{len(result.copied)} files written. Next: cd {result.dst} && sdp-expect run"]
    return "\n".join(lines) + "\n"


def to_json(result: MigrationResult) -> str:
    """What migrate did, as one JSON document."""
    check: Optional[dict[str, Any]] = None
    if result.check is not None:
        check = {"ok": result.check.ok, "status": result.check.status,
                 "errors": [dataclasses.asdict(f) for f in _check_findings(result)]}
    return json.dumps({
        "src": str(result.src), "dst": str(result.dst), "name": result.name,
        "complete": result.complete and (result.check is None or result.check.ok),
        "exit_code": exit_status(result),
        "python_files": result.python_files,
        "sql_files": result.sql_files, "files_written": result.copied,
        "configuration": result.configuration,
        "changed": [dataclasses.asdict(f) for f in result.of(CHANGED)],
        "not_converted": [dataclasses.asdict(f) for f in result.of(NOT_CONVERTED)],
        "notes": [dataclasses.asdict(f) for f in result.of(NOTE)],
        "dry_run": check,
    }, indent=2)


MIGRATE_DESCRIPTION = """\
Convert a Databricks Lakeflow / Delta Live Tables pipeline project in SRC into
an open-source Spark Declarative Pipelines project in DST that `sdp-expect
run` runs. Every file is copied to the same place in DST. Python pipeline
files get sdp-expect's imports (from pyspark import pipelines as dp -> from
sdp_expect import pipelines as dp; import dlt -> from sdp_expect import dlt),
LIVE. removed from table names, `spark = SparkSession.active()` where a file
uses spark without defining it (Spark 4.1), Auto Loader reads as the file
source (spark.readStream.format("json")...), df.column as df["column"], and
/Volumes/ and dbfs:/ paths read from one pipeline setting per root. SQL files
are registered through sdp_expect.sql.include by a generated databricks_sql.py;
their read_files()/cloud_files() become views in a generated Python file. A
spark-pipeline.yml lists the pipeline files and settings.

It prints every change, and every construct it could not convert (Auto Loader
options with no open-source equivalent, Databricks-only SQL functions, Delta
Lake, Auto CDC on Spark 4.1, path=/private=/row_filter=, dbutils, notebook
magics...) with its file and line. Then it dry-runs the result (sdp-expect
dry-run in DST, unless --no-check) and lists each error at the SOURCE file and
line. SRC is never modified.

Exit status: 0 converted completely and the dry-run passed; 1 the dry-run
failed: the result will not run as written; 2 usage error (SRC not a folder,
DST not new or empty); 3 the dry-run passed (or --no-check) but some constructs
are listed as not converted: look at them.
"""


def command_migrate(args: Any) -> int:
    """``sdp-expect migrate``: the exit status."""
    import sys

    from sdp_expect.cli import EXIT_USAGE
    from sdp_expect.dq_summary import write_text
    from sdp_expect.migrate.check import dry_run

    try:
        result = migrate(Path(args.src), Path(args.dst), name=args.name,
                         data_root=getattr(args, "data_root", None))
    except MigrationError as error:
        write_text(sys.stderr, f"sdp-expect migrate: error: {error}\n")
        return EXIT_USAGE
    if not getattr(args, "no_check", False):
        if args.format != "json":
            write_text(sys.stderr, "sdp-expect migrate: dry-run of the result "
                       "(sdp-expect dry-run; --no-check skips it)...\n")
        result.check = dry_run(Path(args.dst), result.line_maps,
                               port_wait=getattr(args, "port_wait", None))
    write_text(sys.stdout, to_json(result) + "\n" if args.format == "json" else to_text(result))
    return exit_status(result)
