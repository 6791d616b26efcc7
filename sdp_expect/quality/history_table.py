"""The history table: each update's data-quality counts, kept across runs (docs/history.md).

After an update, :func:`record_history` appends to ``sdp_expect_dq_history`` (in the
pipeline's catalog and database) one row per dataset and expectation with that
update's own counts: a materialized view's ``<dataset>_dq_metrics`` rows as they are;
for a streaming table the sums over the rows of its batch log ``<table>_dq_batches``
later than the newest ``_batch_time`` the history has counted for it. The view
``sdp_expect_event_log`` shows the same rows with Lakeflow's event-log columns.
Everything is computed by Spark in one write per update (one ``SELECT`` of every dataset's
rows, inserted by position): no record, no batch log row and no printed text of Spark
comes to Python.

The table is not a pipeline dataset: a full refresh of the pipeline does not touch it.

Used by ``sdp-expect run`` after its summary (through the same server) and by
``sdp-expect history record`` / ``show``
(:mod:`sdp_expect.cli.history`). Like :mod:`~sdp_expect.report.reader`, a local
catalog is opened in a process of its own (``python -m
sdp_expect.quality.history_table``); nothing here imports pyspark at module level.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Optional, Sequence, TypeVar

from sdp_expect.base import names
from sdp_expect.base.sqltokens import sql_string
from sdp_expect.base.table_formats import DEFAULT_FORMAT_KEY
from sdp_expect.quality.summary import STREAMING_METRICS_COMMENT, UPDATED, QualityReport
from sdp_expect.spark.own_process import run_module
from sdp_expect.spark.sessions import connect

__all__ = [
    "HISTORY_COLUMNS",
    "HistoryError",
    "HistoryWrite",
    "MATERIALIZED_VIEW",
    "STREAMING_TABLE",
    "create_table_sql",
    "event_log_view_sql",
    "history_format",
    "EVENT_LOG_VIEW_COMMENT",
    "on_server",
    "rows_sql",
    "materialized_view_rows_sql",
    "restored_view_rows_sql",
    "upgrade_sql",
    "ADDED_COLUMNS",
    "COMPLETED",
    "FAILED",
    "HISTORY_COMMENT",
    "read_history",
    "read_recent",
    "recent_in_own_process",
    "recent_sql",
    "recent_through",
    "record_history",
    "record_in_own_process",
    "record_through",
    "show_in_own_process",
    "show_through",
    "streaming_table_rows_sql",
    "updated_metrics_tables",
]

HISTORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("pipeline", "STRING"),
    ("update_id", "STRING"),
    ("update_time", "TIMESTAMP"),
    ("dataset", "STRING"),
    ("expectation", "STRING"),
    ("action", "STRING"),
    ("constraint", "STRING"),
    ("passed_records", "BIGINT"),
    ("failed_records", "BIGINT"),
    ("total_records", "BIGINT"),
    ("dropped_records", "BIGINT"),
    ("dataset_kind", "STRING"),
    ("last_batch_time", "TIMESTAMP"),
    ("outcome", "STRING"),
    ("restored_version", "BIGINT"),
)
"""The history table's columns and types, in order (docs/history.md#the-table)."""

ADDED_COLUMNS: tuple[tuple[str, str], ...] = HISTORY_COLUMNS[-2:]
"""The columns added to the table after it was first released (``outcome``,
``restored_version``): a table made before them gets them (``ALTER TABLE ... ADD
COLUMNS``) at the next write, its older rows reading NULL there (:data:`COMPLETED`)."""

HISTORY_COMMENT = "sdp-expect data-quality history, v2"
"""The history table's comment: a table whose comment differs (absent: made before
:data:`ADDED_COLUMNS`) is brought up to date at the next write. Bump the version when
the columns change again."""

COMPLETED = names.OUTCOME_COMPLETED
FAILED = names.OUTCOME_FAILED

_T = TypeVar("_T")

MATERIALIZED_VIEW = "materialized view"
"""``dataset_kind`` of a materialized view."""
STREAMING_TABLE = "streaming table"
"""``dataset_kind`` of a streaming table."""

FORMAT_SETTING = DEFAULT_FORMAT_KEY
"""The pipeline setting that names its table format (Spark's default: parquet)."""

_FORMAT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")

EVENT_LOG_VIEW_COMMENT = "sdp-expect event log over sdp_expect_dq_history, v2"
"""The event-log view's comment. A run replaces the view only when the catalog lists it
with another comment (absent, or made by an earlier version whose query differed):
bump the version whenever :func:`event_log_view_sql` changes."""


class HistoryError(RuntimeError):
    """The history could not be written or read."""


@dataclass
class HistoryWrite:
    """What :func:`record_history` wrote.

    :param table: The history table, qualified.
    :param update_id: The id given to this update's rows.
    :param datasets: The datasets recorded, by the name in their metrics rows (a dataset
        whose metrics table is empty has no rows, and is not listed).
    :param rows: The rows written.
    :param recent: When asked for (``recent_updates``): :func:`read_recent`'s rows for
        this update, read after writing it (not in :meth:`as_dict`).
    """

    table: str
    update_id: str
    datasets: list[str] = field(default_factory=list)
    rows: int = 0
    recent: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """As JSON values."""
        return {"table": self.table, "update_id": self.update_id,
                "datasets": list(self.datasets), "rows": self.rows}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _qualified(catalog: str, database: str, table: str) -> str:
    return ".".join(_quoted(part) for part in (catalog, database, table))


def history_format(configuration: Mapping[str, str]) -> Optional[str]:
    """The table format the pipeline's settings name (``spark.sql.sources.default``), if any."""
    value = str(configuration.get(FORMAT_SETTING) or "").strip()
    return value or None


def create_table_sql(table: str, table_format: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of the history table ``table`` (qualified, quoted).

    :raises HistoryError: when ``table_format`` is not a format name.
    """
    if not _FORMAT.match(table_format):
        raise HistoryError(f"{table_format!r} is not a table format name")
    columns = ", ".join(f"{_quoted(name)} {kind}" for name, kind in HISTORY_COLUMNS)
    return (f"CREATE TABLE IF NOT EXISTS {table} ({columns}) USING {table_format} "
            f"COMMENT {sql_string(HISTORY_COMMENT)}")


def upgrade_sql(table: str, columns: Collection[str]) -> list[str]:
    """The statements that bring the history ``table`` (qualified, quoted), whose columns
    are ``columns``, up to :data:`HISTORY_COLUMNS` and :data:`HISTORY_COMMENT`: the
    missing :data:`ADDED_COLUMNS` added at the end (older rows read NULL there), then
    the comment."""
    have = {name.lower() for name in columns}
    missing = [(name, kind) for name, kind in ADDED_COLUMNS if name not in have]
    statements = []
    if missing:
        added = ", ".join(f"{_quoted(name)} {kind}" for name, kind in missing)
        statements.append(f"ALTER TABLE {table} ADD COLUMNS ({added})")
    statements.append(f"COMMENT ON TABLE {table} IS {sql_string(HISTORY_COMMENT)}")
    return statements


def rows_sql(selections: Sequence[str], *, pipeline: str, update_id: str,
             update_time: datetime.datetime) -> str:
    """One ``SELECT`` of the rows of every selection (:func:`materialized_view_rows_sql`,
    :func:`streaming_table_rows_sql`), in the history table's column order, the
    update's own columns first: one write, and one file, per update however many
    datasets it recorded. Inserted by position (``insertInto``); its values are
    literals, not named parameters (``sql_string``: Spark 4.1 leaves named
    parameters unbound under Delta Lake's SQL parser, docs/formats.md).

    :param update_time: The update's time (a naive one is local time, as pyspark reads it).
    """
    moment = (update_time if update_time.tzinfo else update_time.astimezone()
              ).astimezone(datetime.timezone.utc).isoformat()
    own = (f"{sql_string(pipeline)} AS pipeline, {sql_string(update_id)} AS update_id, "
           f"CAST({sql_string(moment)} AS TIMESTAMP) AS update_time")
    return "\nUNION ALL\n".join(f"SELECT {own}, * FROM (\n{selection}\n)"
                                 for selection in selections)


def materialized_view_rows_sql(metrics: str) -> str:
    """This update's rows of a materialized view: its metrics rows as they are.

    The update's own columns (``pipeline``, ``update_id``, ``update_time``) are not in
    it: :func:`rows_sql` puts them first.
    """
    return ("SELECT m.dataset, m.expectation, m.action,\n"
            "  m.`constraint`, m.passed_records, m.failed_records, m.total_records,\n"
            f"  m.dropped_records, '{MATERIALIZED_VIEW}', CAST(NULL AS TIMESTAMP),\n"
            f"  '{COMPLETED}', CAST(NULL AS BIGINT)\n"
            f"FROM {metrics} m")


def restored_view_rows_sql(metrics: str, version: int) -> str:
    """The rows of a materialized view whose flow failed in the update and whose last good
    data was brought back to ``version`` (:mod:`sdp_expect.quality.last_good`): one per
    rule of its metrics view as restored (the last good update's rules), ``outcome``
    :data:`FAILED`, ``restored_version`` the view's version, and no counts (NULL: the
    update counted nothing that stayed).

    The update's own columns are not in it: :func:`rows_sql` puts them first.
    """
    return ("SELECT m.dataset, m.expectation, m.action, m.`constraint`,\n"
            "  CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),\n"
            f"  CAST(NULL AS BIGINT), '{MATERIALIZED_VIEW}', CAST(NULL AS TIMESTAMP),\n"
            f"  '{FAILED}', CAST({int(version)} AS BIGINT)\n"
            f"FROM {metrics} m")


def streaming_table_rows_sql(table: str, metrics: str, batch_log: str) -> str:
    """This update's rows of a streaming table: the sums over its batch log's rows later
    than the newest ``last_batch_time`` the history holds for the dataset (all rows when
    it holds none). The names, actions and constraints are the metrics view's.

    A rule absent from a row's ``_failed`` (a fail rule, a rule added later) counts 0
    there, as in the metrics view (docs/semantics.md#the-batch-log). ``last_batch_time``
    is the newest ``_batch_time`` counted so far: this update's newest micro-batch, or,
    when the update read nothing, the one recorded before.

    The update's own columns (``pipeline``, ``update_id``, ``update_time``) are not in
    it: :func:`rows_sql` puts them first.
    """
    time_, records, dropped, failed = (names.BATCH_TIME_COLUMN, names.BATCH_RECORDS_COLUMN,
                                       names.BATCH_DROPPED_COLUMN, names.BATCH_FAILED_COLUMN)
    return (
        "WITH since AS (\n"
        f"  SELECT max(h.last_batch_time) AS t FROM {table} h\n"
        f"  WHERE h.dataset IN (SELECT m.dataset FROM {metrics} m)\n"
        "), batches AS (\n"
        f"  SELECT b.{time_}, b.{records}, b.{dropped}, b.{failed}\n"
        f"  FROM {batch_log} b CROSS JOIN since\n"
        f"  WHERE since.t IS NULL OR b.{time_} > since.t\n"
        "), totals AS (\n"
        f"  SELECT coalesce(sum(b.{records}), 0) AS total_records,\n"
        f"         coalesce(sum(b.{dropped}), 0) AS dropped_records,\n"
        f"         max(b.{time_}) AS newest\n"
        "  FROM batches b\n"
        "), failed AS (\n"
        "  SELECT f.rule, sum(f.n) AS n\n"
        f"  FROM batches b LATERAL VIEW explode(b.{failed}) f AS rule, n\n"
        "  GROUP BY f.rule\n"
        ")\n"
        "SELECT m.dataset, m.expectation, m.action,\n"
        "  m.`constraint`,\n"
        "  CAST(t.total_records - coalesce(f.n, 0) AS BIGINT),\n"
        "  CAST(coalesce(f.n, 0) AS BIGINT),\n"
        "  CAST(t.total_records AS BIGINT), CAST(t.dropped_records AS BIGINT),\n"
        f"  '{STREAMING_TABLE}', coalesce(t.newest, s.t), '{COMPLETED}', CAST(NULL AS BIGINT)\n"
        f"FROM {metrics} m CROSS JOIN totals t CROSS JOIN since s\n"
        "LEFT JOIN failed f ON f.rule = m.expectation")


def event_log_view_sql(view: str, table: str) -> str:
    """``CREATE OR REPLACE VIEW`` of the event-log view ``view`` over the history ``table``
    (both qualified, quoted): one ``flow_progress`` event per recorded update and dataset,
    with Lakeflow's event-log columns (docs/history.md#the-event-log-view).

    ``details`` is a VARIANT built with ``to_variant_object``: its ``flow_progress``
    has ``status`` (``COMPLETED``, or ``FAILED`` for a view brought back to its last
    good data, with ``restored_version``) and ``data_quality``, which has
    ``dropped_records`` and ``expectations``, an array of objects with ``name``,
    ``dataset``, ``passed_records`` and ``failed_records`` (sorted by name).
    """
    expectations = ("array_sort(collect_list(named_struct('name', h.expectation, "
                    "'dataset', h.dataset, 'passed_records', h.passed_records, "
                    "'failed_records', h.failed_records)))")
    return (
        f"CREATE OR REPLACE VIEW {view} COMMENT '{EVENT_LOG_VIEW_COMMENT}' AS\n"
        "SELECT concat(h.update_id, '/', h.dataset) AS id,\n"
        "  h.update_time AS `timestamp`,\n"
        "  'flow_progress' AS event_type,\n"
        "  'INFO' AS level,\n"
        "  named_struct('pipeline_name', h.pipeline, 'update_id', h.update_id,\n"
        "               'flow_name', h.dataset, 'dataset_name', h.dataset) AS origin,\n"
        "  to_variant_object(named_struct('flow_progress', named_struct(\n"
        f"    'status', max(coalesce(h.outcome, '{COMPLETED}')),\n"
        "    'restored_version', max(h.restored_version),\n"
        "    'data_quality', named_struct('dropped_records', max(h.dropped_records),\n"
        f"                                 'expectations', {expectations})))) AS details\n"
        f"FROM {table} h\n"
        "GROUP BY h.pipeline, h.update_id, h.update_time, h.dataset")


def updated_metrics_tables(report: QualityReport) -> list[str]:
    """The metrics tables of the datasets a run updated (the report's state,
    :func:`sdp_expect.report.build.build_report`): the rows a run records."""
    return [summary.metrics_table for summary in report.datasets
            if summary.status == UPDATED and summary.has_numbers]


def record_history(spark: Any, *, pipeline: str, catalog: Optional[str] = None,
                   database: Optional[str] = None, table_format: Optional[str] = None,
                   metrics_tables: Optional[Collection[str]] = None,
                   update_id: Optional[str] = None,
                   update_time: Optional[datetime.datetime] = None,
                   recent_updates: Optional[int] = None,
                   restored: Optional[Mapping[str, int]] = None) -> HistoryWrite:
    """Append this update's counts to the history table (creating it if absent, bringing
    a table made by an earlier version up to date: :func:`upgrade_sql`), and (re)create
    the event-log view over it.

    :param spark: A Spark session (classic or Spark Connect) on the pipeline's catalog.
    :param pipeline: The pipeline's name (the spec's ``name``).
    :param catalog: The pipeline's catalog; ``None`` for the session's current one.
    :param database: The pipeline's database; ``None`` for the session's current one.
    :param table_format: The history table's format when it is created; ``None``: the
        session's ``spark.sql.sources.default`` (parquet unless set).
    :param metrics_tables: Record only these metrics tables (``sdp-expect run``: the
        datasets this run updated); ``None``: every ``<dataset>_dq_metrics`` table of the
        database. A metrics table that is empty (its update failed) adds no rows, and a
        table of that name whose comment is not sdp-expect's (a user's) is not recorded.
    :param update_id: The update's id (``sdp-expect run``: the one its quarantines'
        records name, :mod:`sdp_expect.base.update`); default a new uuid4.
    :param update_time: When the counts are recorded; default now.
    :param recent_updates: Also read, after writing, :func:`read_recent` for this update
        (into :attr:`HistoryWrite.recent`): what ``sdp-expect run`` compares and alerts on.
    :param restored: The metrics tables of the materialized views whose flows failed in
        the update and whose last good data was brought back, each with the version its
        view was restored to: their rows say so (:func:`restored_view_rows_sql`), whether
        or not ``metrics_tables`` names them.
    :raises HistoryError: when Spark refuses a statement.
    """
    restored = dict(restored or {})
    update_id = update_id or str(uuid.uuid4())
    update_time = update_time or datetime.datetime.now(datetime.timezone.utc)
    try:
        # Each statement is a round trip to the server (a warm re-run's time, docs/
        # performance.md#re-runs-on-a-warm-server): the table and the view are made only
        # when the catalog's one listing lacks them, all rows go in one INSERT, and the
        # rows written are counted from the recent rows read back when those are asked for.
        catalog = catalog or spark.catalog.currentCatalog()
        database = database or spark.catalog.currentDatabase()
        table = _qualified(catalog, database, names.HISTORY_TABLE)
        listed = {t.name: (t.description or "") for t in
                  spark.catalog.listTables(f"{_quoted(catalog)}.{_quoted(database)}")
                  if not t.isTemporary}
        if names.HISTORY_TABLE not in listed:
            fmt = table_format or spark.conf.get(FORMAT_SETTING, "parquet") or "parquet"
            spark.sql(create_table_sql(table, fmt))
        elif listed[names.HISTORY_TABLE] != HISTORY_COMMENT:
            for statement in upgrade_sql(table, spark.table(table).columns):
                spark.sql(statement)
        if listed.get(names.EVENT_LOG_VIEW) != EVENT_LOG_VIEW_COMMENT:
            spark.sql(event_log_view_sql(_qualified(catalog, database, names.EVENT_LOG_VIEW),
                                         table))
        written = HistoryWrite(table=table, update_id=update_id)
        selections = []
        for name in sorted(listed):
            if not name.endswith(names.METRICS_SUFFIX):
                continue
            if metrics_tables is not None and name not in metrics_tables \
                    and name not in restored:
                continue
            if not listed[name].startswith(names.METRICS_COMMENT_HEAD):
                continue  # a table of that name that sdp-expect did not make
            dataset = name[: -len(names.METRICS_SUFFIX)]
            metrics = _qualified(catalog, database, name)
            if name in restored:
                selections.append(restored_view_rows_sql(metrics, restored[name]))
            elif STREAMING_METRICS_COMMENT in listed[name]:
                log = _qualified(catalog, database, names.batch_log_name(dataset))
                selections.append(streaming_table_rows_sql(table, metrics, log))
            else:
                selections.append(materialized_view_rows_sql(metrics))
        if selections:
            spark.sql(rows_sql(selections, pipeline=pipeline, update_id=update_id,
                               update_time=update_time)).write.insertInto(table)
        if recent_updates is None:
            counted = [(str(row["dataset"]), int(row["n"])) for row in spark.sql(
                f"SELECT dataset, count(*) AS n FROM {table} "
                f"WHERE update_id = {sql_string(update_id)} GROUP BY dataset").collect()]
        else:
            try:
                written.recent = _recent_rows(spark, table, pipeline=pipeline,
                                              update_id=update_id, updates=recent_updates)
            except Exception as error:
                first = str(error).strip().splitlines()[:1] or [type(error).__name__]
                raise HistoryError(f"the rows were written (update {update_id}), but the "
                                   f"recent updates could not be read back: {first[0]}"
                                   ) from error
            datasets = [str(row["dataset"]) for row in written.recent
                        if row["update_id"] == update_id]
            counted = [(dataset, datasets.count(dataset)) for dataset in set(datasets)]
        written.datasets = sorted(dataset for dataset, _ in counted)
        written.rows = sum(n for _, n in counted)
        return written
    except HistoryError:
        raise
    except Exception as error:  # Spark's errors: what the command reports
        first = str(error).strip().splitlines()[:1] or [type(error).__name__]
        raise HistoryError(f"cannot write this update's rows: {first[0]}") from error


def _existing_table(spark: Any, catalog: Optional[str],
                    database: Optional[str]) -> Optional[str]:
    """The history table's qualified name in ``catalog``.``database`` (``None``: the
    session's current ones), or ``None`` when it does not exist (nothing recorded)."""
    catalog = catalog or spark.catalog.currentCatalog()
    database = database or spark.catalog.currentDatabase()
    if not spark.catalog.tableExists(f"{_quoted(catalog)}.{_quoted(database)}."
                                     f"{_quoted(names.HISTORY_TABLE)}"):
        return None
    return _qualified(catalog, database, names.HISTORY_TABLE)


def read_history(spark: Any, *, catalog: Optional[str] = None,
                 database: Optional[str] = None,
                 limit: Optional[int] = None,
                 pipeline: Optional[str] = None) -> list[dict[str, Any]]:
    """The history's rows, newest update first (an absent table: none), as JSON values.

    :param limit: At most this many updates (``None``: all): the newest ones (of
        ``pipeline``, when given).
    :param pipeline: Only this pipeline's rows (``None``: every pipeline's).
    """
    table = _existing_table(spark, catalog, database)
    if table is None:
        return []
    conditions = []
    if pipeline is not None:
        conditions.append(f"pipeline = {sql_string(pipeline)}")
    if limit is not None:
        of_pipeline = f"WHERE pipeline = {sql_string(pipeline)} " if pipeline is not None else ""
        conditions.append(f"update_id IN (SELECT update_id FROM {table} {of_pipeline}"
                          "GROUP BY update_id "
                          f"ORDER BY max(update_time) DESC LIMIT {int(limit)})")
    where = ("WHERE " + " AND ".join(conditions)) if conditions else ""
    rows = spark.sql(f"SELECT * FROM {table} {where} "
                     "ORDER BY update_time DESC, dataset, expectation").collect()
    return [{key: (value.isoformat() if isinstance(value, datetime.datetime) else value)
             for key, value in row.asDict().items()} for row in rows]


def recent_sql(table: str, updates: int, *, pipeline: str, update_id: str) -> str:
    """The query of :func:`read_recent` for ``pipeline``'s update ``update_id``: per
    rule of the update, its rows up to the update (by time, then id, as
    :func:`~sdp_expect.quality.trends.rule_trends` orders them) that are the update's or
    checked records, the newest ``updates + 1``. One scan of the table: a window finds
    each rule's time in the update, a second one (same partitions) ranks the rows."""
    columns = ", ".join(_quoted(name) for name, _ in HISTORY_COLUMNS)
    update = sql_string(update_id)
    return (
        f"WITH rules AS (SELECT h.*, max(CASE WHEN h.update_id = {update} THEN h.update_time "
        "END) OVER (PARTITION BY h.dataset, h.expectation) AS _this_time "
        f"FROM {table} h WHERE h.pipeline = {sql_string(pipeline)} "
        f"AND (h.update_id = {update} OR h.total_records > 0)), "
        "ranked AS (SELECT r.*, row_number() OVER (PARTITION BY r.dataset, r.expectation "
        "ORDER BY r.update_time DESC, r.update_id DESC) AS _rank FROM rules r "
        "WHERE r.update_time < r._this_time "
        f"OR (r.update_time = r._this_time AND r.update_id <= {update})) "
        f"SELECT {columns} FROM ranked WHERE _rank <= {int(updates) + 1} "
        "ORDER BY update_time DESC, dataset, expectation")


def read_recent(spark: Any, *, pipeline: str, update_id: Optional[str] = None,
                catalog: Optional[str] = None, database: Optional[str] = None,
                updates: int = 5) -> list[dict[str, Any]]:
    """The rows that :mod:`sdp_expect.quality.trends` needs to compare an update of a
    pipeline with its recent ones, newest first, as JSON values: for each dataset and
    expectation of the update, its row and the rows of the ``updates`` newest updates
    before it that checked records (``total_records > 0``). Not the last ``updates``
    updates of the table: a dataset that was not refreshed, or a streaming table that
    read nothing, has its recent updates further back, and other pipelines may share
    the table.

    :param update_id: The update; ``None``: the pipeline's newest (none recorded: no rows).
    """
    table = _existing_table(spark, catalog, database)
    if table is None:
        return []
    if update_id is None:
        newest = spark.sql(f"SELECT update_id FROM {table} "
                           f"WHERE pipeline = {sql_string(pipeline)} "
                           "ORDER BY update_time DESC, update_id DESC LIMIT 1").collect()
        if not newest:
            return []
        update_id = str(newest[0]["update_id"])
    return _recent_rows(spark, table, pipeline=pipeline, update_id=update_id,
                        updates=updates)


def _recent_rows(spark: Any, table: str, *, pipeline: str, update_id: str,
                 updates: int) -> list[dict[str, Any]]:
    """:func:`read_recent`'s rows from the existing history ``table`` (qualified)."""
    rows = spark.sql(recent_sql(table, updates, pipeline=pipeline,
                                update_id=update_id)).collect()
    return [{key: (value.isoformat() if isinstance(value, datetime.datetime) else value)
             for key, value in row.asDict().items()} for row in rows]


# --------------------------------------------------------------------------- sessions


def _connect(url: str) -> Any:
    return connect(url)


def _through(url: str, token: Optional[str]) -> str:
    return f"{url}/;token={token}" if token else url


def on_server(url: str, token: Optional[str], work: Callable[[Any], _T]) -> _T:
    """``work(spark)`` in a session of the Spark Connect server at ``url``, stopped after.

    :raises HistoryError: when the server cannot be reached or ``work`` fails (a
        :class:`HistoryError` of ``work`` as it is, another error by its first line).
    """
    try:
        spark = _connect(_through(url, token))
    except Exception as error:
        raise HistoryError(f"cannot reach {url}: {error}") from error
    try:
        return work(spark)
    except HistoryError:
        raise
    except Exception as error:
        raise HistoryError(str(error).strip().splitlines()[0]) from error
    finally:
        spark.stop()


def record_through(url: str, token: Optional[str], **options: Any) -> HistoryWrite:
    """:func:`record_history` through a Spark Connect server (the project's, with its
    ``token``, or a user's ``--remote``), in this process.

    :raises HistoryError: when the server cannot be reached or a statement fails.
    """
    return on_server(url, token, lambda spark: record_history(spark, **options))


def show_through(url: str, token: Optional[str], **options: Any) -> list[dict[str, Any]]:
    """:func:`read_history` through a Spark Connect server, in this process."""
    return on_server(url, token, lambda spark: read_history(spark, **options))


def _in_own_process(folder: Path, confs: Mapping[str, str], arguments: Sequence[str],
                    timeout: float) -> Any:
    """Run ``python -m sdp_expect.quality.history_table`` on the project's local catalog
    (the embedded Derby metastore admits one process at a time) and return its JSON."""
    try:
        done = run_module("sdp_expect.quality.history_table", arguments, folder=folder,
                          confs=confs, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise HistoryError(f"the history took more than {timeout:.0f} s") from error
    if done.result is None:
        raise HistoryError(f"the history process exited with status {done.returncode}:\n"
                           f"{done.tail}")
    if "error" in done.result:
        raise HistoryError(str(done.result["error"]))
    return done.result["result"]


def _options_arguments(catalog: Optional[str], database: Optional[str]) -> list[str]:
    arguments = []
    if catalog:
        arguments += ["--catalog", catalog]
    if database:
        arguments += ["--database", database]
    return arguments


def record_in_own_process(folder: Path, confs: Mapping[str, str], *, pipeline: str,
                          catalog: Optional[str], database: Optional[str],
                          table_format: Optional[str] = None,
                          metrics_tables: Optional[Collection[str]] = None,
                          recent_updates: Optional[int] = None,
                          restored: Optional[Mapping[str, int]] = None,
                          update_id: Optional[str] = None,
                          timeout: float = 900.0) -> HistoryWrite:
    """:func:`record_history` on the project's local catalog, in a Spark process of its own.

    :raises HistoryError: when it fails.
    """
    arguments = ["record", "--pipeline", pipeline, *_options_arguments(catalog, database)]
    if table_format:
        arguments += ["--table-format", table_format]
    for name in metrics_tables or ():
        arguments += ["--metrics-table", name]
    if metrics_tables is not None and not metrics_tables:
        arguments += ["--none"]
    if recent_updates is not None:
        arguments += ["--recent", str(recent_updates)]
    for name, version in (restored or {}).items():
        arguments += ["--restored", f"{name}={int(version)}"]
    if update_id:
        arguments += ["--update-id", update_id]
    found = _in_own_process(folder, confs, arguments, timeout)
    return HistoryWrite(table=str(found["table"]), update_id=str(found["update_id"]),
                        datasets=[str(d) for d in found["datasets"]], rows=int(found["rows"]),
                        recent=list(found.get("recent") or []))


def recent_through(url: str, token: Optional[str], **options: Any) -> list[dict[str, Any]]:
    """:func:`read_recent` through a Spark Connect server, in this process."""
    return on_server(url, token, lambda spark: read_recent(spark, **options))


def recent_in_own_process(folder: Path, confs: Mapping[str, str], *, pipeline: str,
                          catalog: Optional[str], database: Optional[str], updates: int,
                          timeout: float = 900.0) -> list[dict[str, Any]]:
    """:func:`read_recent` of the pipeline's newest update on the project's local catalog,
    in a Spark process of its own."""
    arguments = ["recent", "--pipeline", pipeline, "--recent", str(updates),
                 *_options_arguments(catalog, database)]
    return list(_in_own_process(folder, confs, arguments, timeout))


def show_in_own_process(folder: Path, confs: Mapping[str, str], *, catalog: Optional[str],
                        database: Optional[str], limit: Optional[int] = None,
                        timeout: float = 900.0) -> list[dict[str, Any]]:
    """:func:`read_history` on the project's local catalog, in a Spark process of its own."""
    arguments = ["show", *_options_arguments(catalog, database)]
    if limit is not None:
        arguments += ["--limit", str(limit)]
    return list(_in_own_process(folder, confs, arguments, timeout))


def _main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m sdp_expect.quality.history_table`` (internal)."""
    parser = argparse.ArgumentParser(prog="python -m sdp_expect.quality.history_table")
    parser.add_argument("what", choices=("record", "show", "recent"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipeline", default="")
    parser.add_argument("--catalog")
    parser.add_argument("--database")
    parser.add_argument("--table-format")
    parser.add_argument("--metrics-table", action="append")
    parser.add_argument("--none", action="store_true")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--recent", type=int)
    parser.add_argument("--restored", action="append", default=[])
    parser.add_argument("--update-id")
    parser.add_argument("--conf", action="append", default=[])
    options = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.appName("sdp-expect history").master("local[1]")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1"))
    for pair in options.conf:
        key, _, value = pair.partition("=")
        builder = builder.config(key, value)
    result: dict[str, Any]
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if options.what == "record":
            tables = [] if options.none else options.metrics_table
            written = record_history(
                spark, pipeline=options.pipeline, catalog=options.catalog,
                database=options.database, table_format=options.table_format,
                metrics_tables=tables, recent_updates=options.recent,
                update_id=options.update_id,
                restored={name: int(version) for name, _, version in
                          (pair.rpartition("=") for pair in options.restored)})
            result = {"result": dict(written.as_dict(), recent=written.recent)}
        elif options.what == "recent":
            result = {"result": read_recent(spark, pipeline=options.pipeline,
                                            catalog=options.catalog, database=options.database,
                                            updates=options.recent)}
        else:
            result = {"result": read_history(spark, catalog=options.catalog,
                                             database=options.database, limit=options.limit)}
    except Exception as error:
        result = {"error": str(error).strip().splitlines()[0] if str(error).strip()
                  else type(error).__name__}
    finally:
        spark.stop()
    with open(options.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
