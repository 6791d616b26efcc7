"""Reading a project's data-quality tables, and the history ``sdp-expect run`` keeps.

Reading a local catalog happens in a separate Python process (``python -m
sdp_expect.report.reader``) with a plain local Spark session on the project's
catalog: the embedded Derby metastore admits one process at a time, and the
reader must not inherit the state of a Spark Connect client. :func:`read_tables`
starts that process and returns what it found. Through the project's own Spark
Connect server (which holds the catalog while it is up),
:func:`read_through_server` reads in this process; nothing else here needs Spark.

What ``sdp-expect run`` keeps of each dataset's last successful update is in
:mod:`sdp_expect.report.last_summaries`.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import importlib
import json
import math
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from sdp_expect.base import names
from sdp_expect.base.project import Project
from sdp_expect.quality.history_table import read_history
from sdp_expect.quality.summary import (
    DEFAULT_SAMPLE,
    FAILED_EXPECTATIONS,
    METRICS_COLUMNS,
    METRICS_SUFFIX,
    QUARANTINE_COMMENT,
    TOLERANCE_METRICS_COLUMNS,
    TREND_UPDATES,
    WHOLE_METRICS_COLUMNS,
    ReadError,
    TableReading,
)
from sdp_expect.runtime.catalog_access import catalog_access, catalog_turn
from sdp_expect.runtime.local_server import ServerProblem
from sdp_expect.spark.own_process import run_module
from sdp_expect.spark.sessions import connect

__all__ = ["TablesUnavailable", "prepare_reading", "read_project_tables", "read_tables",
           "read_through_server"]


class TablesUnavailable(Exception):
    """A project's tables could not be read; the message (one or more lines, ending with a
    newline) says why, and what to do."""


def read_project_tables(project: Project, given: dict[str, str], *, remote: Optional[str],
                        wait: float, command: str, say: Callable[[str], None],
                        sample: int = DEFAULT_SAMPLE, rule_counts: bool = False,
                        history_of: Optional[str] = None) -> TableReading:
    """The metrics and quarantine tables of ``project``'s catalog, as the read-only
    commands (``report``, ``quarantine``) read them: through the project's warm server
    (``sdp-expect serve``) while it is up, else through ``remote``, else in a Spark
    process of their own, in the project's turn at its catalog.

    :param given: The ``--conf`` settings of the catalog.
    :param remote: ``--remote``: a Spark Connect server to read through.
    :param wait: Seconds to wait for another command using the catalog (``--wait``).
    :param command: The command's name, for what ``say`` tells while it waits.
    :param say: Where to write what the command waits for.
    :param sample: Quarantined records to read per dataset.
    :param rule_counts: Also count each quarantine's records per failed rule.
    :param history_of: Also read this pipeline's recent history (:func:`read_tables`).
    :raises TablesUnavailable: no catalog yet, no server, or the tables could not be read.
    """
    try:
        access = catalog_access(project, remote, given)
        with catalog_turn(project, access, wait=wait, command=command, say=say):
            if access.missing(project.folder):
                raise TablesUnavailable(
                    f"no catalog in {project.folder} (metastore_db/): run the pipeline first "
                    "with `sdp-expect run`\n")
            if access.warm is not None:  # it holds the project's catalog: read through it
                return read_through_server(access.warm.url, access.warm.token,
                                           catalog=project.catalog, database=project.database,
                                           sample=sample, rule_counts=rule_counts,
                                           history_of=history_of)
            return read_tables(project.folder, access.confs, catalog=project.catalog,
                               database=project.database, remote=access.remote,
                               sample=sample, rule_counts=rule_counts,
                               history_of=history_of)
    except ServerProblem as problem:
        raise TablesUnavailable(problem.render()) from problem
    except ReadError as error:
        raise TablesUnavailable(f"cannot read the tables: {error}\n") from error


def read_tables(folder: Path, confs: Mapping[str, str], *, catalog: Optional[str],
                database: Optional[str], remote: Optional[str] = None,
                sample: int = DEFAULT_SAMPLE, rule_counts: bool = False,
                history_of: Optional[str] = None,
                history_updates: int = TREND_UPDATES,
                timeout: float = 900.0) -> TableReading:
    """Read the metrics and quarantine tables of a project's catalog.

    Starts ``python -m sdp_expect.report.reader`` in ``folder`` with a local Spark
    session configured with ``confs`` (or connected to ``remote``), and waits for it.

    :param folder: The project folder (the reader's working directory).
    :param confs: Spark settings of the catalog (the same as the run's).
    :param catalog: The spec's catalog; ``None`` for the session's current one.
    :param database: The spec's database; ``None`` for the session's current one.
    :param remote: A Spark Connect URL (``sc://...``) to read through instead.
    :param sample: Quarantined records to read per dataset.
    :param rule_counts: Also count each quarantine's records per failed rule (a pass over
        its ``_failed_expectations``; the run's summary does not show them).
    :param history_of: Also read this pipeline's newest ``history_updates`` updates of
        the history table (the report's trends); ``None``: do not.
    :param history_updates: How many updates of the history to read at most.
    :param timeout: Seconds to wait for the reader.
    :raises ReadError: when the reader fails; the message ends with its last output lines.
    """
    arguments = ["--sample", str(sample), *(["--rule-counts"] if rule_counts else [])]
    if catalog:
        arguments += ["--catalog", catalog]
    if database:
        arguments += ["--database", database]
    if remote:
        arguments += ["--remote", remote]
    if history_of is not None:
        arguments += ["--history-of", history_of, "--history-updates", str(history_updates)]
    try:
        done = run_module("sdp_expect.report.reader", arguments, folder=folder, confs=confs,
                          timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise ReadError(f"reading the tables took more than {timeout:.0f} s") from error
    if done.returncode != 0 or done.result is None:
        raise ReadError(f"the table reader exited with status {done.returncode}:\n{done.tail}")
    return TableReading.from_json(done.result)


def _json_ready(value: Any) -> Any:
    """A value from a Spark row as something ``json.dumps`` writes faithfully."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, (datetime.date, datetime.datetime, decimal.Decimal)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if hasattr(value, "asDict"):
        return _json_ready(value.asDict(recursive=True))
    return str(value)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _read_in_this_process(options: argparse.Namespace) -> dict[str, Any]:
    """The reader process: open the catalog with Spark and collect what a summary needs."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("sdp-expect data-quality reader")
    if options.remote:
        builder = builder.remote(options.remote)
    else:
        builder = (builder.master("local[1]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "1"))
        for pair in options.conf:
            key, _, value = pair.partition("=")
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not options.remote:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        return _collect(spark, catalog=options.catalog, database=options.database,
                        sample=options.sample, rule_counts=options.rule_counts,
                        history_of=options.history_of,
                        history_updates=options.history_updates)
    finally:
        spark.stop()


def prepare_reading() -> None:
    """Import what :func:`read_through_server` needs (pyspark's Spark Connect client), in a
    thread of its own: called before a run, the reading after it starts at once."""
    threading.Thread(target=importlib.import_module, args=("pyspark.sql.connect.session",),
                     name="sdp-expect: import the reader", daemon=True).start()


def read_through_server(url: str, token: str, *, catalog: Optional[str],
                        database: Optional[str], sample: int = DEFAULT_SAMPLE,
                        rule_counts: bool = False,
                        history_of: Optional[str] = None,
                        history_updates: int = TREND_UPDATES) -> TableReading:
    """Read the metrics and quarantine tables through a project's own Spark Connect server
    (``sdp-expect run``'s, or the one ``sdp-expect serve`` keeps), in this process.

    A Spark Connect client runs no Spark of its own and holds no catalog, so nothing
    needs a process apart (as :func:`read_tables` does for a local catalog), and a
    Python with pyspark does not have to start again.

    :param url: The server (``sc://localhost:PORT``).
    :param token: Its token.
    :param catalog: The spec's catalog; ``None`` for the session's current one.
    :param database: The spec's database; ``None`` for the session's current one.
    :param sample: Quarantined records to read per dataset.
    :param rule_counts: Also count each quarantine's records per failed rule (a pass over
        its ``_failed_expectations``; the run's summary does not show them).
    :param history_of: Also read this pipeline's newest ``history_updates`` updates of
        the history table; ``None``: do not.
    :param history_updates: How many updates of the history to read at most.
    :raises ReadError: when the server cannot be reached or a table cannot be read.
    """
    try:
        spark = connect(f"{url}/;token={token}")
        try:
            return TableReading.from_json(_collect(spark, catalog=catalog, database=database,
                                                   sample=sample, rule_counts=rule_counts,
                                                   history_of=history_of,
                                                   history_updates=history_updates))
        finally:
            spark.stop()
    except Exception as error:  # Spark's errors, as the reader process reports them
        first = str(error).strip().splitlines()[:1] or [type(error).__name__]
        raise ReadError(f"reading through {url} failed: {first[0]}") from error


_INDEX = "_sdp_expect_index"
"""The column that says which table a row of a union of tables comes from."""


_NO_NAME = "CAST(NULL AS STRING)"
_NO_TIME = "CAST(NULL AS TIMESTAMP)"


def _count_row(index: int, kind: str, name: str = _NO_NAME, started: str = _NO_TIME
               ) -> list[str]:
    """One row of the query of every quarantine's counts: which quarantine, what is
    counted (``size``, a failed ``rule``, an ``update``), its name and start (SQL), and
    the count."""
    return [f"{index} AS {_INDEX}", f"'{kind}' AS kind", f"{name} AS name",
            f"{started} AS started", "count"]


def _collect(spark: Any, *, catalog: Optional[str], database: Optional[str],
             sample: int, rule_counts: bool = False, history_of: Optional[str] = None,
             history_updates: int = TREND_UPDATES) -> dict[str, Any]:
    """What a summary needs from the catalog, as JSON values (with ``rule_counts``, each
    quarantine's records per failed rule; for ``history_of``, that pipeline's newest
    ``history_updates`` updates of the history table)."""
    notes: list[str] = []
    if catalog:
        spark.catalog.setCurrentCatalog(catalog)
    if database:
        spark.catalog.setCurrentDatabase(database)
    catalog = spark.catalog.currentCatalog()
    database = spark.catalog.currentDatabase()
    tables = {t.name: (t.description or "") for t in spark.catalog.listTables()
              if not t.isTemporary}
    # Few round trips to the server (each is part of a run's time): the metrics tables
    # are read by one query (a union of them), the quarantines' sizes by another.
    metrics_tables: list[tuple[str, list[str]]] = []
    read = None
    for name in sorted(t for t in tables if t.endswith(METRICS_SUFFIX)):
        frame = spark.table(f"{_quoted(database)}.{_quoted(name)}")
        if not set(METRICS_COLUMNS) <= set(frame.columns):
            continue
        columns = [*METRICS_COLUMNS,
                   *(c for c in (*TOLERANCE_METRICS_COLUMNS, *WHOLE_METRICS_COLUMNS)
                     if c in frame.columns)]
        selected = frame.selectExpr(f"{len(metrics_tables)} AS {_INDEX}",
                                    *(_quoted(c) for c in columns))
        read = selected if read is None else read.unionByName(selected,
                                                              allowMissingColumns=True)
        metrics_tables.append((name, columns))
    rows_of: list[list[dict[str, Any]]] = [[] for _ in metrics_tables]
    for row in read.collect() if read is not None else []:
        values = row.asDict(recursive=True)
        columns = metrics_tables[values[_INDEX]][1]
        rows_of[values[_INDEX]].append(_json_ready({c: values[c] for c in columns}))
    metrics = [{"table": name, "comment": tables[name], "rows": rows}
               for (name, _), rows in zip(metrics_tables, rows_of, strict=True)]
    quarantines: list[dict[str, Any]] = []
    counts = None
    for name, comment in sorted(tables.items()):
        match = QUARANTINE_COMMENT.match(comment)
        if match is None and not name.endswith(names.QUARANTINE_SUFFIX):
            continue
        frame = spark.table(f"{_quoted(database)}.{_quoted(name)}")
        if FAILED_EXPECTATIONS not in frame.columns:
            continue
        dataset = match.group("dataset") if match else name[: -len(names.QUARANTINE_SUFFIX)]
        rows = [_json_ready(row.asDict(recursive=True))
                for row in frame.limit(sample).collect()]
        # Its size and, with rule_counts, how many of its records failed each rule and
        # how many each update quarantined, in the one query of every quarantine's counts.
        index = len(quarantines)
        size = frame.groupBy().count().selectExpr(*_count_row(index, "size"))
        updated = names.QUARANTINE_UPDATE_COLUMN in frame.columns and \
            names.QUARANTINE_TIME_COLUMN in frame.columns
        if rule_counts:
            size = size.union(
                frame.selectExpr(f"explode({_quoted(FAILED_EXPECTATIONS)}) AS rule")
                .groupBy("rule").count().selectExpr(*_count_row(index, "rule", "rule")))
        if rule_counts and updated:
            size = size.union(
                frame.groupBy(names.QUARANTINE_UPDATE_COLUMN, names.QUARANTINE_TIME_COLUMN)
                .count().selectExpr(*_count_row(index, "update",
                                                _quoted(names.QUARANTINE_UPDATE_COLUMN),
                                                _quoted(names.QUARANTINE_TIME_COLUMN))))
        counts = size if counts is None else counts.union(size)
        quarantines.append({"table": name, "dataset": dataset, "records": 0,
                            "by_rule": {} if rule_counts else None,
                            "by_update": [] if rule_counts and updated else None,
                            "columns": list(frame.columns), "sample": rows})
    for row in counts.collect() if counts is not None else []:
        quarantine = quarantines[row[_INDEX]]
        if row["kind"] == "size":
            quarantine["records"] = int(row["count"])
        elif row["kind"] == "rule":
            quarantine["by_rule"][str(row["name"])] = int(row["count"])
        else:
            quarantine["by_update"].append({"update": row["name"],
                                            "started": _json_ready(row["started"]),
                                            "records": int(row["count"])})
    for quarantine in quarantines:  # the rules most records failed first
        if quarantine["by_rule"] is not None:
            quarantine["by_rule"] = dict(sorted(quarantine["by_rule"].items(),
                                                key=lambda item: (-item[1], item[0])))
        if quarantine["by_update"] is not None:  # the newest update first
            quarantine["by_update"].sort(key=lambda u: (u["started"] is not None,
                                                        u["started"] or "", u["update"] or ""),
                                         reverse=True)
    found: dict[str, Any] = {"catalog": catalog, "database": database, "metrics": metrics,
                             "quarantines": quarantines, "notes": notes}
    if history_of is not None:
        found["history_updates"] = history_updates
        try:
            found["history"] = [_json_ready(row) for row in read_history(
                spark, catalog=catalog, database=database, limit=history_updates,
                pipeline=history_of)]
        except Exception as error:  # the report is still made, without its trends
            first = str(error).strip().splitlines()[:1] or [type(error).__name__]
            notes.append(f"the history table {names.HISTORY_TABLE} could not be read: "
                         f"{first[0]}")
    return found


def _reader_main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m sdp_expect.report.reader`` (the reader process)."""
    parser = argparse.ArgumentParser(prog="python -m sdp_expect.report.reader",
                                     description="Read the data-quality tables (internal).")
    parser.add_argument("--out", required=True)
    parser.add_argument("--catalog")
    parser.add_argument("--database")
    parser.add_argument("--remote")
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE)
    parser.add_argument("--rule-counts", action="store_true")
    parser.add_argument("--history-of")
    parser.add_argument("--history-updates", type=int, default=TREND_UPDATES)
    parser.add_argument("--conf", action="append", default=[])
    options = parser.parse_args(argv)
    found = _read_in_this_process(options)
    with open(options.out, "w", encoding="utf-8") as handle:
        json.dump(found, handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(_reader_main())
