"""The data-quality summary: read the metrics and quarantine tables, format them.

After ``spark-pipelines`` has run, every dataset with expectations has a
``<dataset>_dq_metrics`` table (contract section 6) and, when quarantine is on,
a quarantine table (section 5). This module reads them and turns them into a
:class:`QualityReport` that ``sdp-expect run`` and ``sdp-expect report`` print
as text or JSON and :mod:`sdp_expect.html_report` draws.

Reading happens in a separate Python process (``python -m sdp_expect.dq_summary``)
with a plain local Spark session on the project's catalog: the embedded Derby
metastore admits one process at a time, and the reader must not inherit the
state of a Spark Connect client. :func:`read_tables` starts that process and
returns what it found; nothing else here needs Spark.

``sdp-expect run`` also keeps, in ``<project>/.sdp-expect/dq-history.json``, the
summary of each dataset's last successful update: a materialized view is empty
after a failed update (and so is its metrics table), and ``sdp-expect report``
shows the last successful numbers from there.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, TextIO

from sdp_expect import names
from sdp_expect.violation import Violation, names_text

__all__ = [
    "DatasetSummary",
    "QualityReport",
    "QuarantineInfo",
    "ReadError",
    "RuleResult",
    "TableReading",
    "Violation",
    "build_report",
    "load_history",
    "paint",
    "read_tables",
    "report_dict",
    "save_history",
    "to_json",
    "to_text",
    "use_color",
    "violation_dict",
    "violation_lines",
    "write_text",
]

METRICS_SUFFIX = "_dq_metrics"
"""Suffix of a dataset's metrics table."""
METRICS_COLUMNS = names.METRICS_COLUMNS
"""The metrics table's columns (contract section 6)."""
FAILED_EXPECTATIONS = names.FAILED_EXPECTATIONS_COLUMN
"""The quarantine's column with the names of the rules a record violated."""
QUARANTINE_COMMENT = re.compile(
    "^" + re.escape(names.quarantine_comment("")) + "(?P<dataset>.+)$")
"""The comment sdp-expect gives a quarantine table (Python and SQL front ends)."""
STREAMING_METRICS_COMMENT = names.metrics_comment("", streaming=True).split(", ", 1)[1]
"""Part of the comment of a streaming table's metrics table."""
HISTORY_FILE = os.path.join(".sdp-expect", "dq-history.json")
"""Where ``sdp-expect run`` keeps each dataset's last successful summary (in the project)."""
DEFAULT_SAMPLE = 20
"""Quarantined rows read per dataset, by default."""

# Dataset states shown in a summary.
UPDATED = "updated"
"""The dataset's metrics were recomputed by this run."""
FAILED = "failed"
"""The dataset's flow failed in this run (for example a fail expectation)."""
SKIPPED = "skipped"
"""SDP skipped the dataset in this run (an upstream flow failed)."""
NOT_RUN = "not run"
"""This run did not update the dataset (for example ``--refresh`` of other datasets)."""
LAST_SUCCESS = "last successful update"
"""``report``: the numbers are those of the last successful update."""
NO_SUCCESS = "no successful update"
"""``report``: the metrics table is empty and no earlier summary was kept."""


class ReadError(RuntimeError):
    """The tables could not be read (the reader process failed)."""


# --------------------------------------------------------------------------- the model


@dataclass
class RuleResult:
    """One expectation's row of a metrics table.

    :param expectation: The expectation's name.
    :param action: ``warn``, ``drop`` or ``fail``.
    :param constraint: The constraint as written.
    :param passed_records: Records for which the constraint was TRUE.
    :param failed_records: Records that violated it.
    """

    expectation: str
    action: str
    constraint: str
    passed_records: int
    failed_records: int

    @property
    def total_records(self) -> int:
        """Passed plus failed: the records the query produced."""
        return self.passed_records + self.failed_records

    @property
    def failure_percentage(self) -> Optional[float]:
        """Failed records as a percentage of all records; ``None`` when there were none."""
        if self.total_records == 0:
            return None
        return 100.0 * self.failed_records / self.total_records


@dataclass
class QuarantineInfo:
    """A dataset's quarantine table.

    :param table: Its name.
    :param records: How many records it holds.
    :param columns: Its columns, ``_failed_expectations`` included.
    :param sample: Up to a few of its records, as JSON-ready dicts.
    """

    table: str
    records: int
    columns: list[str]
    sample: list[dict[str, Any]]


@dataclass
class DatasetSummary:
    """The data quality of one dataset with expectations.

    :param dataset: The dataset's name.
    :param metrics_table: Its metrics table.
    :param streaming: True for a streaming table (counts since its last full refresh).
    :param total_records: Records the query produced (0 when unknown).
    :param dropped_records: Records dropped by the dataset.
    :param rules: One entry per expectation, in the metrics table's order.
    :param quarantine: Its quarantine table, when it has one.
    :param status: One of the dataset states (``updated``, ``failed``, ...).
    :param violations: Records that failed the dataset's fail rules in this run.
    :param recorded_at: For numbers kept from an earlier run: when they were recorded.
    """

    dataset: str
    metrics_table: str
    streaming: bool = False
    total_records: int = 0
    dropped_records: int = 0
    rules: list[RuleResult] = field(default_factory=list)
    quarantine: Optional[QuarantineInfo] = None
    status: str = UPDATED
    violations: list[Violation] = field(default_factory=list)
    recorded_at: Optional[str] = None

    @property
    def has_numbers(self) -> bool:
        """Whether there are metrics to show."""
        return bool(self.rules)


@dataclass
class QualityReport:
    """Everything a summary shows.

    :param datasets: One entry per dataset with a metrics table, by name.
    :param violations: Every expectation violation the run printed.
    :param catalog: The catalog read.
    :param database: The database (schema) read.
    :param run_status: The run's final state (``COMPLETED``, ``FAILED``...), for ``run``.
    :param notes: Things the reader should know (a table that could not be read...).
    """

    datasets: list[DatasetSummary] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    catalog: Optional[str] = None
    database: Optional[str] = None
    run_status: Optional[str] = None
    notes: list[str] = field(default_factory=list)

    def dataset(self, name: str) -> Optional[DatasetSummary]:
        """The summary of ``name``, if it has one."""
        return next((d for d in self.datasets if d.dataset == name), None)


# --------------------------------------------------------------------------- reading


@dataclass
class TableReading:
    """What the reader process found in the catalog.

    :param catalog: The catalog it read.
    :param database: The database it read.
    :param metrics: Per metrics table: ``table``, ``comment`` and ``rows`` (dicts).
    :param quarantines: Per quarantine table: ``table``, ``dataset``, ``records``,
        ``columns``, ``sample``.
    :param notes: Tables it could not read, and why.
    """

    catalog: str
    database: str
    metrics: list[dict[str, Any]]
    quarantines: list[dict[str, Any]]
    notes: list[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableReading:
        """Rebuild a reading from the reader's JSON output."""
        return cls(catalog=str(data.get("catalog") or ""), database=str(data.get("database") or ""),
                   metrics=list(data.get("metrics", [])),
                   quarantines=list(data.get("quarantines", [])),
                   notes=[str(note) for note in data.get("notes", [])])


def reader_environment() -> dict[str, str]:
    """The environment of a local Spark process started from here.

    Drops the state a Spark Connect client leaves in ``os.environ`` (a reader must
    start a plain local session, not connect) and runs Spark's Python workers
    with this Python.
    """
    env = dict(os.environ)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_REMOTE",
                "SPARK_CONNECT_AUTHENTICATE_TOKEN"):
        env.pop(key, None)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


def read_tables(folder: Path, confs: Mapping[str, str], *, catalog: Optional[str],
                database: Optional[str], remote: Optional[str] = None,
                sample: int = DEFAULT_SAMPLE, timeout: float = 900.0) -> TableReading:
    """Read the metrics and quarantine tables of a project's catalog.

    Starts ``python -m sdp_expect.dq_summary`` in ``folder`` with a local Spark
    session configured with ``confs`` (or connected to ``remote``), and waits for it.

    :param folder: The project folder (the reader's working directory).
    :param confs: Spark settings of the catalog (the same as the run's).
    :param catalog: The spec's catalog; ``None`` for the session's current one.
    :param database: The spec's database; ``None`` for the session's current one.
    :param remote: A Spark Connect URL (``sc://...``) to read through instead.
    :param sample: Quarantined records to read per dataset.
    :param timeout: Seconds to wait for the reader.
    :raises ReadError: when the reader fails; the message ends with its last output lines.
    """
    with tempfile.TemporaryDirectory(prefix="sdp-expect-read-") as scratch:
        out = os.path.join(scratch, "tables.json")
        command = [sys.executable, "-m", "sdp_expect.dq_summary", "--out", out,
                   "--sample", str(sample)]
        if catalog:
            command += ["--catalog", catalog]
        if database:
            command += ["--database", database]
        if remote:
            command += ["--remote", remote]
        for key, value in confs.items():
            command += ["--conf", f"{key}={value}"]
        try:
            done = subprocess.run(command, cwd=folder, env=reader_environment(),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as error:
            raise ReadError(f"reading the tables took more than {timeout:.0f} s") from error
        output = done.stdout.decode("utf-8", "replace")
        if done.returncode != 0 or not os.path.exists(out):
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise ReadError(f"the table reader exited with status {done.returncode}:\n{tail}")
        with open(out, encoding="utf-8") as handle:
            return TableReading.from_json(json.load(handle))


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
    notes: list[str] = []
    try:
        if options.catalog:
            spark.catalog.setCurrentCatalog(options.catalog)
        if options.database:
            spark.catalog.setCurrentDatabase(options.database)
        catalog = spark.catalog.currentCatalog()
        database = spark.catalog.currentDatabase()
        tables = {t.name: (t.description or "") for t in spark.catalog.listTables()
                  if not t.isTemporary}
        metrics = []
        for name in sorted(t for t in tables if t.endswith(METRICS_SUFFIX)):
            frame = spark.table(f"{_quoted(database)}.{_quoted(name)}")
            if not set(METRICS_COLUMNS) <= set(frame.columns):
                continue
            rows = [_json_ready(row.asDict(recursive=True))
                    for row in frame.select(*METRICS_COLUMNS).collect()]
            metrics.append({"table": name, "comment": tables[name], "rows": rows})
        quarantines = []
        for name, comment in sorted(tables.items()):
            match = QUARANTINE_COMMENT.match(comment)
            if match is None and not name.endswith("_quarantine"):
                continue
            frame = spark.table(f"{_quoted(database)}.{_quoted(name)}")
            if FAILED_EXPECTATIONS not in frame.columns:
                continue
            dataset = match.group("dataset") if match else name[: -len("_quarantine")]
            sample = [_json_ready(row.asDict(recursive=True))
                      for row in frame.limit(options.sample).collect()]
            quarantines.append({"table": name, "dataset": dataset, "records": frame.count(),
                                "columns": list(frame.columns), "sample": sample})
        return {"catalog": catalog, "database": database, "metrics": metrics,
                "quarantines": quarantines, "notes": notes}
    finally:
        spark.stop()


def _reader_main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m sdp_expect.dq_summary`` (the reader process)."""
    parser = argparse.ArgumentParser(prog="python -m sdp_expect.dq_summary",
                                     description="Read the data-quality tables (internal).")
    parser.add_argument("--out", required=True)
    parser.add_argument("--catalog")
    parser.add_argument("--database")
    parser.add_argument("--remote")
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE)
    parser.add_argument("--conf", action="append", default=[])
    options = parser.parse_args(argv)
    found = _read_in_this_process(options)
    with open(options.out, "w", encoding="utf-8") as handle:
        json.dump(found, handle)
    return 0


# --------------------------------------------------------------------------- building


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _dataset_from_table(entry: Mapping[str, Any]) -> DatasetSummary:
    table = str(entry["table"])
    rows = list(entry.get("rows", []))
    name = str(rows[0]["dataset"]) if rows else table[: -len(METRICS_SUFFIX)]
    summary = DatasetSummary(
        dataset=name, metrics_table=table,
        streaming=STREAMING_METRICS_COMMENT in str(entry.get("comment", "")))
    for row in rows:
        summary.rules.append(RuleResult(
            expectation=str(row["expectation"]), action=str(row["action"]),
            constraint=str(row["constraint"]), passed_records=_int(row["passed_records"]),
            failed_records=_int(row["failed_records"])))
        summary.total_records = _int(row["total_records"])
        summary.dropped_records = _int(row["dropped_records"])
    return summary


def _short(name: str) -> str:
    """``spark_catalog.default.orders`` -> ``orders``."""
    return name.rsplit(".", 1)[-1].strip("`")


def build_report(reading: TableReading, *, flows: Optional[Mapping[str, str]] = None,
                 violations: Sequence[Violation] = (), run_status: Optional[str] = None,
                 history: Optional[Mapping[str, Any]] = None) -> QualityReport:
    """Combine what the tables hold with what a run said.

    :param reading: The tables, from :func:`read_tables`.
    :param flows: For ``run``: each flow's last state, by (qualified) flow name.
        ``None`` for ``report``: every dataset is shown as of its last successful update.
    :param violations: For ``run``: the expectation violations the run reported.
    :param run_status: The run's final state.
    :param history: Kept summaries (:func:`load_history`), used for a dataset whose
        metrics table is empty; for ``report``, its last run's violations are shown.
    """
    states = {_short(flow): state for flow, state in (flows or {}).items()}
    if flows is None:
        # `report`: the violations of the last run, as `sdp-expect run` kept them.
        violations = _kept_violations(history or {})
    report = QualityReport(catalog=reading.catalog, database=reading.database,
                           run_status=run_status, violations=list(violations),
                           notes=list(reading.notes))
    quarantines = {str(q["dataset"]): q for q in reading.quarantines}
    kept = dict((history or {}).get("datasets", {}))
    for entry in reading.metrics:
        summary = _dataset_from_table(entry)
        q = quarantines.get(summary.dataset)
        if q is not None:
            summary.quarantine = QuarantineInfo(
                table=str(q["table"]), records=_int(q["records"]),
                columns=[str(c) for c in q.get("columns", [])], sample=list(q.get("sample", [])))
        if flows is None:
            summary.status = LAST_SUCCESS
            if not summary.has_numbers:
                # Empty after a failed update: show the last successful numbers that
                # `sdp-expect run` kept.
                earlier = kept.get(summary.dataset)
                if earlier:
                    summary = _from_history(earlier, summary)
                else:
                    summary.status = NO_SUCCESS
        summary.violations = [v for v in report.violations
                              if _short(v.dataset) == summary.dataset]
        if flows is not None:
            summary.status = _run_state(summary, states)
        report.datasets.append(summary)
    report.datasets.sort(key=lambda d: d.dataset)
    return report


def _kept_violations(history: Mapping[str, Any]) -> list[Violation]:
    """The violations of the last run, from the history ``sdp-expect run`` wrote."""
    last_run = history.get("last_run")
    entries = last_run.get("violations", []) if isinstance(last_run, dict) else []
    found: list[Violation] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        violation = Violation(dataset=str(entry.get("dataset")),
                              expectations=tuple(str(n) for n in entry.get("expectations", [])),
                              record=str(entry.get("record")))
        if violation not in found:
            found.append(violation)
    return found


def _run_state(summary: DatasetSummary, states: Mapping[str, str]) -> str:
    own = states.get(summary.dataset)
    metrics = states.get(summary.metrics_table)
    if summary.violations or own == "FAILED" or metrics == "FAILED":
        return FAILED
    if metrics == "COMPLETED":
        return UPDATED
    if own == "SKIPPED" or metrics == "SKIPPED":
        return SKIPPED
    return NOT_RUN


def _from_history(kept: Mapping[str, Any], current: DatasetSummary) -> DatasetSummary:
    """A dataset's kept summary, for a dataset whose metrics table is empty now."""
    data = dict(kept.get("summary", {}))
    restored = DatasetSummary(
        dataset=current.dataset, metrics_table=current.metrics_table,
        streaming=bool(data.get("streaming", current.streaming)),
        total_records=_int(data.get("total_records")),
        dropped_records=_int(data.get("dropped_records")),
        rules=[RuleResult(expectation=str(r["expectation"]), action=str(r["action"]),
                          constraint=str(r["constraint"]),
                          passed_records=_int(r["passed_records"]),
                          failed_records=_int(r["failed_records"]))
               for r in data.get("rules", [])],
        status=LAST_SUCCESS, recorded_at=str(kept.get("recorded_at")))
    q = data.get("quarantine")
    if isinstance(q, dict):
        restored.quarantine = QuarantineInfo(
            table=str(q["table"]), records=_int(q.get("records")),
            columns=[str(c) for c in q.get("columns", [])], sample=list(q.get("sample", [])))
    return restored


# --------------------------------------------------------------------------- history


def load_history(folder: Path) -> dict[str, Any]:
    """The summaries ``sdp-expect run`` kept in the project (empty when none)."""
    path = folder / HISTORY_FILE
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_history(folder: Path, report: QualityReport) -> None:
    """Keep the summary of every dataset this run updated (an unwritable folder is ignored)."""
    data = load_history(folder)
    kept = dict(data.get("datasets", {}))
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    for summary in report.datasets:
        if summary.status == UPDATED and summary.has_numbers:
            kept[summary.dataset] = {"recorded_at": now, "summary": _summary_dict(summary)}
    data["datasets"] = kept
    data["last_run"] = {"finished_at": now, "status": report.run_status,
                        "violations": [violation_dict(v, parsed=False)
                                       for v in report.violations]}
    path = folder / HISTORY_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
    except OSError:
        pass


# --------------------------------------------------------------------------- formatting


def write_text(stream: TextIO, text: str) -> None:
    """Write ``text`` even when the stream's encoding cannot hold every character."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def use_color(choice: str, stream: TextIO) -> bool:
    """Whether to colour output: ``always``, ``never``, or ``auto`` (a terminal, NO_COLOR unset)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ \
        and os.environ.get("TERM") != "dumb"


_STYLES = {
    "bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35",
    "cyan": "36", "bold red": "1;31", "bold green": "1;32", "bold yellow": "1;33",
    "reverse red": "1;41;97",
}


def paint(text: str, style: str, enabled: bool) -> str:
    """``text`` in an ANSI terminal style when ``enabled``, else unchanged."""
    if not enabled or not text:
        return text
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


_ACTION_STYLE = {"warn": "yellow", "drop": "magenta", "fail": "bold red"}
_STATUS_TEXT = {
    UPDATED: "updated in this run",
    FAILED: "FAILED in this run",
    SKIPPED: "skipped in this run (an upstream flow failed)",
    NOT_RUN: "not updated by this run (numbers of its last update)",
    LAST_SUCCESS: "last successful update",
    NO_SUCCESS: "no successful update recorded",
}


def _percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _kind(summary: DatasetSummary) -> str:
    return ("streaming table, counts since its last full refresh" if summary.streaming
            else "materialized view")


def _status_line(summary: DatasetSummary, color: bool) -> str:
    text = _STATUS_TEXT.get(summary.status, summary.status)
    if summary.recorded_at:
        text += f" (kept by sdp-expect run at {summary.recorded_at})"
    if summary.status == FAILED:
        return paint(text, "bold red", color)
    if summary.status in (SKIPPED, NO_SUCCESS):
        return paint(text, "yellow", color)
    return paint(text, "dim", color)


def violation_lines(violation: Violation, color: bool, indent: str = "") -> list[str]:
    """A violated fail rule and its record, highlighted (names quoted as in the message)."""
    names = names_text(violation.expectations)
    noun = "expectation" if len(violation.expectations) == 1 else "expectations"
    return [
        indent + paint(f"FAILED: {noun} {names} violated by the record", "bold red", color),
        indent + "  " + paint(violation.record, "reverse red", color),
    ]


def _rule_table(summary: DatasetSummary, color: bool) -> list[str]:
    header = ("rule", "action", "passed", "failed", "failed %")
    rows = [(r.expectation, r.action, str(r.passed_records), str(r.failed_records),
             _percent(r.failure_percentage)) for r in summary.rules]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str], styles: Sequence[Optional[str]]) -> str:
        parts = []
        for index, (cell, style) in enumerate(zip(cells, styles, strict=True)):
            padded = cell.ljust(widths[index]) if index < 2 else cell.rjust(widths[index])
            parts.append(paint(padded, style, color) if style else padded)
        return "    " + "  ".join(parts).rstrip()

    out = [line(header, ["dim"] * len(header))]
    for rule, cells in zip(summary.rules, rows, strict=True):
        bad = rule.failed_records > 0
        style = _ACTION_STYLE.get(rule.action) if bad else None
        out.append(line(cells, [None, _ACTION_STYLE.get(rule.action), None, style, style]))
    return out


def to_text(report: QualityReport, *, color: bool = False, title: str = "Data quality") -> str:
    """The summary as text for a person (ANSI colours when ``color``)."""
    where = ".".join(part for part in (report.catalog, report.database) if part)
    count = len(report.datasets)
    lines = [paint(f"== {title}" + (f" ({where})" if where else "")
                   + f": {count} dataset{'s' if count != 1 else ''} with expectations",
                   "bold", color)]
    shown: set[Violation] = set()
    for summary in report.datasets:
        lines.append("")
        lines.append(f"{paint(summary.dataset, 'bold', color)}  {_kind(summary)}, "
                     + _status_line(summary, color))
        for violation in summary.violations:
            lines.extend(violation_lines(violation, color, "  "))
            shown.add(violation)
        if summary.has_numbers:
            dropped = f"{summary.dropped_records} dropped"
            if summary.dropped_records:
                dropped = paint(dropped, "magenta", color)
            facts = [f"{summary.total_records} records", dropped]
            if summary.quarantine is not None:
                facts.append(f"quarantine {summary.quarantine.table}: "
                             f"{summary.quarantine.records} records")
            lines.append("  " + ", ".join(facts))
            lines.extend(_rule_table(summary, color))
        elif summary.status == FAILED:
            lines.append("  no metrics: a failed update records none")
        else:
            lines.append("  no metrics recorded")
    for violation in report.violations:
        if violation not in shown:
            lines.append("")
            lines.append(f"{paint(violation.dataset, 'bold', color)}  "
                         + paint("FAILED in this run", "bold red", color))
            lines.extend(violation_lines(violation, color, "  "))
    for note in report.notes:
        lines.append(paint(f"note: {note}", "yellow", color))
    if not report.datasets and not report.violations:
        lines.append("No <dataset>_dq_metrics tables found: no dataset with expectations "
                     "has been updated yet (run `sdp-expect run`).")
    return "\n".join(lines) + "\n"


def violation_dict(violation: Violation, *, parsed: bool = True) -> dict[str, Any]:
    """A violation as JSON-ready data; the record parsed (``parsed``) or as its JSON text."""
    return {"dataset": violation.dataset, "expectations": list(violation.expectations),
            "record": violation.record_value() if parsed else violation.record}


def _summary_dict(summary: DatasetSummary) -> dict[str, Any]:
    rules = [dict(asdict(rule), total_records=rule.total_records,
                  failure_percentage=None if rule.failure_percentage is None
                  else round(rule.failure_percentage, 2)) for rule in summary.rules]
    data = asdict(summary)
    data["rules"] = rules
    data["violations"] = [violation_dict(v) for v in summary.violations]
    return data


def report_dict(report: QualityReport) -> dict[str, Any]:
    """The summary as JSON-ready data (the ``--format json`` document)."""
    return {
        "catalog": report.catalog,
        "database": report.database,
        "run_status": report.run_status,
        "datasets": [_summary_dict(d) for d in report.datasets],
        "violations": [violation_dict(v) for v in report.violations],
        "notes": list(report.notes),
    }


def to_json(report: QualityReport, **extra: Any) -> str:
    """The summary as one JSON document, with ``extra`` top-level keys first."""
    return json.dumps({**extra, **report_dict(report)}, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    raise SystemExit(_reader_main())
