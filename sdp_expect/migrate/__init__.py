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

This module walks the project and writes DST; the parts:

- :mod:`~sdp_expect.migrate.result`: the findings and the result;
- :mod:`~sdp_expect.migrate.python_files`: one Python file (imports, the pipeline
  API, ``spark``), with :mod:`~sdp_expect.migrate.python_rewrites` (Auto Loader,
  ``LIVE.``, data roots) and :mod:`~sdp_expect.migrate.sources` (file sources,
  data roots);
- :mod:`~sdp_expect.migrate.sql_files`: one Databricks SQL file, with
  :mod:`~sdp_expect.migrate.sql_sources` (``read_files`` / ``cloud_files``);
- :mod:`~sdp_expect.migrate.bundle`: the Databricks Asset Bundle's pipeline;
- :mod:`~sdp_expect.migrate.edits`: the text edits all of them make;
- :mod:`~sdp_expect.migrate.output`: the report and the exit status;
- :mod:`~sdp_expect.migrate.check`: the dry-run of the result.

The ``sdp-expect migrate`` command itself is :mod:`sdp_expect.cli.migrate`.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import os
import shutil
import tokenize
from pathlib import Path
from typing import Any, Callable, Optional

from sdp_expect.base.project import UNSET_VALUE
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT, as_run_sees
from sdp_expect.migrate.bundle import read_bundle
from sdp_expect.migrate.output import EXIT_REVIEW, exit_status, to_json, to_text
from sdp_expect.migrate.python_files import PythonMigration, migrate_python
from sdp_expect.migrate.python_rewrites import ProjectFacts, dataset_names
from sdp_expect.migrate.result import (
    CHANGED,
    NOT_CONVERTED,
    NOTE,
    SKIPPED_FOLDERS,
    SPEC_FILE,
    SQL_INCLUDE_FILE,
    Finding,
    MigrationError,
    MigrationResult,
)
from sdp_expect.migrate.sources import SCHEMA_INFERENCE, DataRoots, all_roots
from sdp_expect.migrate.sql_files import is_pipeline_sql, read_sql, scan_sql, sql_findings
from sdp_expect.migrate.sql_sources import dataset_name, path_expression, rewrite_sql_sources

__all__ = [
    "CHANGED",
    "EXIT_REVIEW",
    "NOTE",
    "NOT_CONVERTED",
    "SOURCES_FILE",
    "SPEC_FILE",
    "SQL_INCLUDE_FILE",
    "Finding",
    "MigrationError",
    "MigrationResult",
    "PythonMigration",
    "exit_status",
    "is_pipeline_sql",
    "migrate",
    "migrate_python",
    "read_sql",
    "scan_sql",
    "to_json",
    "to_text",
]


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


def _settings_read(facts: ProjectFacts, configuration: dict[str, str],
                   settings_file: Optional[str], result: MigrationResult) -> None:
    """The pipeline settings the code reads with ``spark.conf.get(key)`` and no default:
    carried from the project's settings where they set the key, else written into the
    spec as :data:`~sdp_expect.base.project.UNSET_VALUE`, which ``sdp-expect run`` refuses
    (SDPX-PRJ-403) until the user sets it, and reported at every line that reads it."""
    for key, uses in facts.settings_read.items():
        if key in configuration:
            continue
        configuration[key] = UNSET_VALUE
        where = (f"{settings_file} does not set it" if settings_file
                 else "the project has no pipeline settings (bundle or pipeline JSON)")
        for file, line in uses:
            result.findings.append(Finding(
                NOT_CONVERTED, file, line,
                f"spark.conf.get({key!r}) has no default and {where}: {SPEC_FILE} now has "
                f"configuration {key}: {UNSET_VALUE!r}. Fix: set it to the value the "
                "Lakeflow pipeline gave this parameter (its configuration), or give "
                "spark.conf.get a default; sdp-expect run refuses the placeholder "
                "(SDPX-PRJ-403)"))


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
    from sdp_expect.base.sqltokens import SqlTokenError
    from sdp_expect.dbsql.split import split

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
            datasets |= {dataset_name(s.tokens) for s in statements
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
    _check_folders(src, dst)
    result = MigrationResult(src=src, dst=dst)
    bundle = read_bundle(src, result)
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
        found, uses_delta = sql_findings(moved.text, rel)
        if uses_delta:
            facts.configuration[KEY_TABLE_FORMAT] = "delta"
        # Checked as the run of the spec migrate writes will see it: the bundle's settings
        # over those migrate adds (USING DELTA above names the format, so that the run's
        # session stores Delta, and USING DELTA is not refused).
        statements, unconverted = read_sql(moved.text, rel, str(path.parent), as_run_sees(
            {**facts.configuration, **configuration}))
        for finding in [*unconverted, *found]:
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
            why = ("the project's tables are Delta Lake tables, as on Databricks: sdp-expect "
                   "run starts Spark with Delta's jars and settings; docs/formats.md"
                   if key == KEY_TABLE_FORMAT else
                   "a file stream infers its schema from the files, as Auto Loader did")
            result.findings.append(Finding(CHANGED, SPEC_FILE, None, f"configuration {key}: "
                                           f"{value} ({why})"))
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
    _settings_read(facts, configuration, bundle.get("file"), result)
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
