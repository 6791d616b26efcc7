"""The corpus projects (tests/corpus/*) as the tests run them: copied, pointed at their own
landing folder, storage and database, run with ``sdp-expect run --format json --remote
URL`` on a server the test gives, and every table of the database read back through
Spark to compare with the plain-Python oracle (``corpus_oracle.py``). Used by
``test_corpus.py`` (the shared server, parquet) and ``test_table_formats_spark.py`` (the
same projects on a table format's server)."""

from __future__ import annotations

import json
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping, Optional

import pytest
import yaml
from cli_helpers import sdp_expect, set_storage
from corpus_oracle import ORACLES, Expected, Table, batch_log_sums
from pyspark.sql.connect.session import SparkSession
from sdp_runner import SparkServer, copy_project

from sdp_expect.base.names import (
    EVENT_LOG_VIEW,
    FAILED_EXPECTATIONS_COLUMN,
    HISTORY_TABLE,
    QUARANTINE_KEY_COLUMN,
    QUARANTINE_TIME_COLUMN,
    QUARANTINE_UPDATE_COLUMN,
)

CORPUS = Path(__file__).resolve().parent / "corpus"
UPDATES = ("1", "2", "3")


# ---------------------------------------------------------------------------------------
# Projects
# ---------------------------------------------------------------------------------------
def spec_of(project: Path) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((project / "spark-pipeline.yml").read_text())
    return spec


def land(name: str, update: str, landing: Path) -> None:
    """The files of one update arrive in the landing folder."""
    arrivals = CORPUS / name / "arrivals" / update
    assert arrivals.is_dir(), arrivals
    for source in arrivals.iterdir():
        target = landing / source.name
        target.mkdir(parents=True, exist_ok=True)
        for file in source.iterdir():
            assert not (target / file.name).exists(), f"{file} landed twice"
            shutil.copy(file, target / file.name)


@dataclass
class CorpusProject:
    """One corpus project, copied, run with ``sdp-expect run`` on the shared server.

    :param root: The copy (its spec names its own storage, landing folder, database).
    :param spark: A session of the shared server, to read the project's tables.
    :param summaries: The JSON summary of each update's run.
    """

    name: str
    root: Path
    landing: Path
    database: str
    server: SparkServer
    spark: SparkSession
    summaries: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Table]] = field(default_factory=list)
    quarantine_updates: list[QuarantineUpdates] = field(default_factory=list)
    expected: list[Expected] = field(default_factory=list)

    def run(self) -> tuple[int, dict[str, Any], str]:
        """One ``sdp-expect run --format json`` of the project on the shared server: its
        exit status, its JSON summary and its standard error (the events)."""
        done = sdp_expect("run", "--spec", str(self.root), "--format", "json",
                          "--remote", self.server.url, cwd=self.root.parent)
        try:
            summary: dict[str, Any] = json.loads(done.stdout)
        except ValueError:
            pytest.fail(f"{self.name}: no JSON summary (exit {done.returncode}):\n"
                        f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
        return done.returncode, summary, done.stderr


def open_project(server: SparkServer, name: str, tmp: Path, *,
                 configuration: Optional[Mapping[str, str]] = None) -> CorpusProject:
    """A copy of the project with its own landing folder, storage and database;
    ``configuration`` adds settings to its spec's (a table format, say)."""
    root = copy_project(CORPUS / name, tmp / name / "project")
    landing = tmp / name / "landing"
    landing.mkdir()
    set_storage(root, tmp / name / "storage")
    database = f"corpus_{name}_{uuid.uuid4().hex[:8]}"
    spec = root / "spark-pipeline.yml"
    lines = spec.read_text().splitlines()
    assert not any(line.startswith(("database:", "schema:", "catalog:")) for line in lines)
    added = "".join(f"\n  {key}: {value}" for key, value in (configuration or {}).items())
    spec.write_text("\n".join(
        f"  corpus.landing: {landing}{added}" if line.strip().startswith("corpus.landing:")
        else line for line in lines) + f"\ndatabase: {database}\n")
    written = spec_of(root)["configuration"]
    assert written["corpus.landing"] == str(landing)
    assert all(written[key] == value for key, value in (configuration or {}).items())
    spark = server.session()
    spark.sql(f"CREATE DATABASE `{database}`")
    return CorpusProject(name, root, landing, database, server, spark)


# ---------------------------------------------------------------------------------------
# Comparing the catalog with the oracle
# ---------------------------------------------------------------------------------------
NOT_PIPELINE_TABLES = {HISTORY_TABLE, EVENT_LOG_VIEW}
"""The history table and its view grow with every run, not with the pipeline's data (they
are not pipeline datasets; tests/test_history.py checks them)."""


QuarantineUpdates = dict[str, Counter[str]]
"""Per quarantine table, its records per update id (``_quarantine_update``)."""


def snapshot(project: CorpusProject, updates: Optional[QuarantineUpdates] = None
             ) -> dict[str, Table]:
    """Every table of the project's database, read through Spark (a batch log summed,
    as the oracle gives it: its rows depend on the micro-batches; a quarantine without
    the key and update of each record, which :func:`quarantine_columns` checks and
    counts into ``updates``)."""
    tables = {}
    for table in project.spark.catalog.listTables(project.database):
        if table.name in NOT_PIPELINE_TABLES:
            continue
        name = f"`{project.database}`.`{table.name}`"
        # The command's own session wrote it: this session's cached file list is stale.
        project.spark.catalog.refreshTable(name)
        frame = project.spark.read.table(name)
        if table.name.endswith("_dq_batches"):
            tables[table.name] = batch_log_sums(row.asDict() for row in frame.collect())
            continue
        if FAILED_EXPECTATIONS_COLUMN in frame.columns:
            frame = quarantine_columns(table.name, frame, updates)
        tables[table.name] = Table(tuple(frame.columns), [tuple(row) for row in frame.collect()])
    return tables


ADDED = (QUARANTINE_KEY_COLUMN, QUARANTINE_UPDATE_COLUMN, QUARANTINE_TIME_COLUMN)


def quarantine_columns(name: str, frame: Any, updates: Optional[QuarantineUpdates]) -> Any:
    """The quarantine ``frame`` without the columns the oracle cannot compute, after
    checking them: records written alike share a key and others do not; each update id
    has one start time."""
    assert list(frame.columns[-4:]) == [FAILED_EXPECTATIONS_COLUMN, *ADDED], frame.columns
    record = frame.columns[:-4]
    rows = frame.collect()
    keys: dict[str, set[str]] = {}
    records: dict[str, set[str]] = {}
    times: dict[str, set[Any]] = {}
    for row in rows:
        written = repr(tuple(row[c] for c in record))
        keys.setdefault(written, set()).add(row[QUARANTINE_KEY_COLUMN])
        records.setdefault(row[QUARANTINE_KEY_COLUMN], set()).add(written)
        times.setdefault(row[QUARANTINE_UPDATE_COLUMN], set()).add(row[QUARANTINE_TIME_COLUMN])
    assert all(len(k) == 1 for k in keys.values()), f"{name}: one record, two keys: {keys}"
    assert all(len(r) == 1 for r in records.values()), f"{name}: one key, two records"
    assert all(len(t) == 1 and None not in t for t in times.values()), f"{name}: {times}"
    if updates is not None:
        updates[name] = Counter(row[QUARANTINE_UPDATE_COLUMN] for row in rows)
    return frame.drop(*ADDED)


def check_quarantine_updates(name: str, runs: list[str], now: QuarantineUpdates,
                             before: Optional[QuarantineUpdates]) -> None:
    """After the run whose update id is ``runs[-1]`` (``sdp-expect run`` says it, and
    hands it to the pipeline): every quarantined record names one of the project's runs;
    a materialized view's quarantine (recomputed) names this run alone, a streaming
    table's (appended to) keeps the records of earlier runs as they were."""
    for table, counts in now.items():
        assert set(counts) <= set(runs), f"{name}: {table} names {set(counts) - set(runs)}"
        earlier = Counter({u: n for u, n in counts.items() if u != runs[-1]})
        if earlier and before is not None:
            assert earlier == before.get(table, Counter()), (
                f"{name}: {table}: records of earlier updates changed: {earlier} "
                f"!= {before.get(table)}")


def canonical(value: Any) -> Any:
    """One spelling per SQL value: 1, 1.0 and 1.00 of a DECIMAL are one number."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, Decimal)):
        return Decimal(value).normalize()
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return value


def records(table: Table) -> Counter[str]:
    return Counter(repr(tuple(canonical(v) for v in row)) for row in table.rows)


def assert_tables_equal(actual: dict[str, Table], expected: dict[str, Table], context: str
                        ) -> None:
    assert sorted(actual) == sorted(expected), f"{context}: the catalog's tables differ"
    problems = []
    for name in sorted(expected):
        want, got = expected[name], actual[name]
        if got.columns != want.columns:
            problems.append(f"{name}: columns {got.columns} != {want.columns}")
            continue
        missing, extra = records(want) - records(got), records(got) - records(want)
        if missing or extra:
            problems.append(f"{name} {want.columns}:\n    missing {sorted(missing.elements())}"
                            f"\n    unexpected {sorted(extra.elements())}")
    assert not problems, f"{context}:\n  " + "\n  ".join(problems)


def metrics_of(expected: Expected) -> dict[str, dict[str, dict[str, Any]]]:
    """dataset -> rule -> its expected metrics row."""
    shown: dict[str, dict[str, dict[str, Any]]] = {}
    for name, table in expected.tables.items():
        if name.endswith("_dq_metrics"):
            for row in table.rows:
                record = dict(zip(table.columns, row, strict=True))
                shown.setdefault(record["dataset"], {})[record["expectation"]] = record
    return shown


# ---------------------------------------------------------------------------------------
# Three updates
# ---------------------------------------------------------------------------------------
def three_updates(server: SparkServer, tmp: Path, name: str,
                  done: dict[str, CorpusProject], *,
                  configuration: Optional[Mapping[str, str]] = None) -> CorpusProject:
    """The project after three updates, each checked to complete (run once per test
    session: ``done`` keeps the projects already run)."""
    if name not in done:
        project = open_project(server, name, tmp, configuration=configuration)
        for update in UPDATES:
            land(name, update, project.landing)
            code, summary, events = project.run()
            assert code == 0 and summary["status"] == "COMPLETED", (
                f"{name}, update {update}: exit {code}\n{events[-6000:]}")
            project.summaries.append(summary)
            updates: QuarantineUpdates = {}
            project.snapshots.append(snapshot(project, updates))
            check_quarantine_updates(name, [s["update_id"] for s in project.summaries],
                                     updates, project.quarantine_updates[-1]
                                     if project.quarantine_updates else None)
            project.quarantine_updates.append(updates)
            expected = ORACLES[name](project.landing)
            assert not expected.violations, (
                f"{name}, update {update}: the corpus data must not violate fail rules here: "
                f"{expected.violations}")
            project.expected.append(expected)
        done[name] = project
    return done[name]
