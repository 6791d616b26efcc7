"""Databricks SQL pipeline files, with ``CONSTRAINT ... EXPECT``, on open-source SDP.

Open-source SDP rejects the Databricks SQL of Lakeflow pipelines
(``CREATE OR REFRESH``, ``CONSTRAINT ... EXPECT``, ``LIVE.``). Keep those files
as they are, in a folder that the spec's ``libraries`` glob does not load, and
add one Python file to the pipeline::

    from sdp_expect import sql

    sql.include("databricks_sql/")   # a folder or a glob, relative to this file

SQL notebooks exported from Databricks (cells separated by ``-- COMMAND
----------``, usually without ``;``) are read as they are. Every statement is
translated to open-source SDP SQL and registered with the pipeline;
expectations, quarantine and metrics behave exactly as with the Python API
(``docs/sql.md`` says what is translated how).
``sdp-expect translate FILE.sql...`` prints the same translation.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.options import PipelineOptions, read_options
from sdp_expect.base.spark_version import WATERMARK_IN_HIVE_SESSION, spark_has
from sdp_expect.core.planner import PlanState
from sdp_expect.dbsql.parse import parse, read_file
from sdp_expect.dbsql.statements import DatasetStatement, Statement
from sdp_expect.emit.sql import (
    DEFAULT_FLOW_SETTINGS,
    Translation,
    Translator,
)

__all__ = ["Translation", "include", "translate", "translate_files", "translation_errors"]

_GLOB_CHARACTERS = "*?["


def include(pattern: str) -> list[Translation]:
    """Translate Databricks SQL files and register them with the pipeline being defined.

    Call it from a Python file of the pipeline. Each file is translated on
    its own, in name order, and registered as one SQL file (a ``SET`` applies
    to the rest of its own file only, as in SDP). The pipeline's
    ``sdp_expect.*`` configuration applies, as for the Python API.

    :param pattern: A folder (every ``*.sql`` file under it), a glob (its
        ``.sql`` matches) or one file; a relative path starts at the folder of
        the Python file that calls ``include``.
    :returns: What was registered, one :class:`Translation` per file, in order:
        ``.file`` the file as shown in messages, ``.sources`` the statements
        read from it (``.summary`` what each is, and where), ``.text`` the SQL
        registered.
    :raises SdpExpectError: SDPX-SQL-303 when nothing matches; SDPX-SQL-301,
        -302, -304, -305, -306 and the codes the Python API raises for the same
        mistakes, naming the SQL file and line.
    """
    from pyspark.pipelines.source_code_location import get_caller_source_code_location

    from sdp_expect.spark.registration import graph_state, note_datasets, real_registry

    caller = get_caller_source_code_location(stacklevel=1)
    base_dir = os.path.dirname(os.path.abspath(caller.filename))
    files = _matching_files(pattern, base_dir, Location(caller.filename, caller.line_number))
    registry = real_registry()
    translator = Translator(graph_state(), _pipeline_flow_settings(registry), check_views=True)
    registered: list[Translation] = []
    for path in files:
        shown = _shown(path)
        translation = _translate_file(translator, path, shown)
        try:
            registry.register_sql(translation.text, Path(f"{shown} (sdp-expect translation)"))
        except Exception as error:
            coded = translation.explain(error)
            if coded is None:
                raise
            raise coded from None
        registered.append(translation)
        # Python queries that read these datasets are checked for early binding
        # (SDPX-DEF-110), also when they were defined in an earlier file.
        note_datasets(*(statement.name.parts[-1] for statement in translation.sources
                        if isinstance(statement, DatasetStatement)))
    return registered


def translate(text: str, file: str = "<sql>", *, conf: Optional[Mapping[str, str]] = None,
              base_dir: Optional[str] = None, spark_version: Optional[str] = None) -> str:
    """The open-source SDP SQL of one Databricks SQL text, without Spark.

    :param text: The Databricks SQL.
    :param file: The name shown in messages and comments.
    :param conf: Pipeline settings: ``sdp_expect.quarantine``, ``sdp_expect.metrics``,
        ``sdp_expect.null_result``, ``spark.sql.pipelines.maxFlowRetryAttempts`` and
        ``spark.sql.shuffle.partitions`` (set back after the flows that change them);
        defaults as in a pipeline that sets none of them.
    :param base_dir: Where relative ``'sdp_expect.rules'`` paths start; default the
        current directory.
    :param spark_version: The Spark the SQL is for (``'4.1'``, ``'4.2.1'``); default the
        installed pyspark's. On 4.1 a batch log has one row per record
        (docs/semantics.md#the-batch-log).
    :raises SdpExpectError: as :func:`include` does.
    """
    translator = _translator(conf, spark_version)
    return translator.translate(parse(text, file, base_dir=base_dir), file).text


def translate_files(paths: Sequence[str], *, conf: Optional[Mapping[str, str]] = None,
                    spark_version: Optional[str] = None) -> list[Translation]:
    """Translate several Databricks SQL files of one pipeline, in the order given, without Spark.

    They share what one pipeline shares: a ``CREATE FLOW`` in one file gets the
    expectations of a streaming table declared in an earlier one.

    :param paths: The files, as the user named them.
    :param conf: Pipeline settings, as for :func:`translate`.
    :param spark_version: The Spark the SQL is for, as for :func:`translate`.
    :raises SdpExpectError: as :func:`include` does; SDPX-SQL-305 for a file that
        cannot be read.
    """
    translator = _translator(conf, spark_version)
    return [_translate_file(translator, os.path.abspath(path), path) for path in paths]


def translation_errors(statements: Sequence[Statement], file: str, *,
                       conf: Optional[Mapping[str, str]] = None,
                       spark_version: Optional[str] = None) -> list[SdpExpectError]:
    """Every coded error that translating one file's statements raises, without Spark.

    The statements are translated in order, each on its own, for one pipeline
    (a ``CREATE FLOW`` sees the tables declared before it), so that an error
    in one does not hide those of the next ones; :func:`translate` stops at the
    first. ``sdp-expect migrate`` reports them all.

    :param statements: The file's statements (:func:`sdp_expect.dbsql.parse.check`).
    :param file: The file as shown in messages.
    :param conf: Pipeline settings, as for :func:`translate`.
    :param spark_version: The Spark the SQL is for, as for :func:`translate`.
    """
    translator = _translator(conf, spark_version)
    errors = []
    for statement in statements:
        try:
            translator.translate([statement], file)
        except SdpExpectError as error:
            errors.append(error)
    return errors


def _translator(conf: Optional[Mapping[str, str]], spark_version: Optional[str]) -> Translator:
    """A translator for one pipeline of settings ``conf``, for Spark ``spark_version``."""
    options, settings = _settings(conf)
    return Translator(PlanState(options=options, batch_per_micro_batch=spark_has(
        WATERMARK_IN_HIVE_SESSION, spark_version)), settings)


def _settings(conf: Optional[Mapping[str, str]]) -> tuple[PipelineOptions, dict[str, str]]:
    """The pipeline settings, and the values of the Spark settings some flows change
    (:data:`~sdp_expect.emit.sql.DEFAULT_FLOW_SETTINGS`), that ``conf`` gives."""
    given = dict(conf or {})
    return read_options(given.get), {key: given.get(key, default)
                                     for key, default in DEFAULT_FLOW_SETTINGS.items()}


def _translate_file(translator: Translator, path: str, shown: str) -> Translation:
    """Read, parse and translate the file at the absolute ``path``, named ``shown`` in
    messages (SDPX-SQL-305 when it cannot be read)."""
    statements = parse(read_file(path, shown), shown, base_dir=os.path.dirname(path))
    return translator.translate(statements, shown)


def _matching_files(pattern: str, base_dir: str, caller: Location) -> list[str]:
    """The ``.sql`` files a folder, glob or file names (relative to ``base_dir``), sorted;
    SDPX-SQL-303 at ``caller``, the ``include`` call, when none."""
    full = os.path.normpath(pattern if os.path.isabs(pattern) else os.path.join(base_dir, pattern))
    if any(character in pattern for character in _GLOB_CHARACTERS):
        found = glob.glob(full, recursive=True)
    elif os.path.isdir(full):
        found = [os.path.join(folder, name) for folder, _, names in os.walk(full)
                 for name in names]
    else:
        found = [full]
    files = sorted(os.path.normpath(path) for path in found
                   if os.path.isfile(path) and path.lower().endswith(".sql"))
    if not files:
        raise SdpExpectError("SDPX-SQL-303", f"sql.include({pattern!r}) found no .sql file "
                             f"(looked for {full})", location=caller)
    return files


def _shown(path: str) -> str:
    """The absolute ``path`` relative to the current directory (the pipeline's), else as is."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _pipeline_flow_settings(registry: Any) -> dict[str, str]:
    """The pipeline's values of the Spark settings some flows change
    (:data:`~sdp_expect.emit.sql.DEFAULT_FLOW_SETTINGS`), from the Spark session of
    the graph's ``registry``; Spark's defaults for those it cannot read."""
    from pyspark.sql import SparkSession

    spark = getattr(registry, "_spark", None) or SparkSession.getActiveSession()
    settings = dict(DEFAULT_FLOW_SETTINGS)
    if spark is None:
        return settings
    for key in settings:
        try:
            value = spark.conf.get(key, None)
        except Exception:  # a configuration look-up that fails leaves Spark's default
            value = None
        if value:
            settings[key] = value
    return settings
