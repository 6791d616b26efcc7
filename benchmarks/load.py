"""A streaming table fed by many small files: throughput, exact counts, bounded memory.

Run from the repository root::

    python benchmarks/load.py [--files 300] [--records-per-file 50] [--updates 1]
        [--repeats 3] [--warmup-files 20] [--driver-memory 2g] [--out load.json]

(the script puts the repository and ``tests/`` on ``sys.path`` itself: it uses
the test harness ``tests/sdp_runner.py``). ``--help`` lists every option.

``--files`` small JSON-lines files of ``--records-per-file`` records each are
generated once (seeded; NULLs and bad values in every rule's column). One
local Spark Connect server is started (``local[2]``, ``--driver-memory``), and
two pipelines are run in turn, ``a b a b ...``, each time as a fresh pipeline
(own database, storage and inbox) whose inbox receives the files in
``--updates`` equal slices, one update after each slice (each update in a new
client session, closed after it, as ``spark-pipelines --remote`` runs do):

a. plain: a streaming table (``pyspark.pipelines``, no rules) reading the
   inbox with ``maxFilesPerTrigger=1``: one micro-batch per file;
b. rules: the same table through sdp-expect with a warn rule and two drop
   rules, ``@dp.quarantine()`` and metrics on (the default): the target,
   quarantine and batch-log flows each take one micro-batch per file (the
   batch log's flow one more per update: the batch without data that writes
   the last micro-batch's row).

Every update is checked against counts computed in Python from the files
(target, quarantine, batch log, every metrics row, no record twice), and
every streaming flow must have committed exactly one micro-batch per file
(plus one per update for the batch log's). A
run that fails, hangs (``--run-timeout``) or counts wrong makes the benchmark
invalid: the reason is printed and the exit status is 1.

Throughput is records per second of update wall clock (``Pipeline.run()``:
graph registration plus the update), the median over ``--repeats`` runs;
the ratio is b/a. Memory: while everything runs, ``jstat -gc`` samples the
server JVM's heap once a second and ``/proc`` its resident set size; after
every update a full GC (``jcmd GC.run``, not timed) gives the heap the server
retains, and histograms of live objects before a run's first update and after
its last show which classes account for any growth. Bounded means: the retained heap
does not keep growing with the micro-batches processed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the harness
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # spark_work

import pyspark
from batch_log import PER_MICRO_BATCH
from pyspark import pipelines as sdp
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import Pipeline, RunResult, SparkServer, committed_batches
from spark_work import EventLog, server_conf

from sdp_expect import pipelines as dp

SCHEMA = "seq BIGINT, id INT, amount INT, note STRING"
TABLE = "orders"
FLOWS = {"a": {TABLE: TABLE},
         "b": {TABLE: TABLE, f"{TABLE}_quarantine": f"{TABLE}_to_quarantine",
               f"{TABLE}_dq_batches": f"{TABLE}_to_dq_batches"},
         "h": {TABLE: TABLE, f"{TABLE}_quarantine": f"{TABLE}_quarantine",
               f"{TABLE}_counts": f"{TABLE}_counts"}}
RULES: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = [
    ("small", "warn", lambda r: r["amount"] is not None and r["amount"] < 900),
    ("valid_id", "drop", lambda r: r["id"] is not None),
    ("not_negative", "drop", lambda r: r["amount"] is not None and r["amount"] >= 0),
]


class BenchmarkError(RuntimeError):
    """A run failed or its outputs do not add up: nothing to measure."""


# ---------------------------------------------------------------------------------------------
# Source files and the oracle
# ---------------------------------------------------------------------------------------------
def generate(folder: Path, files: int, per_file: int, seed: int) -> list[list[dict[str, Any]]]:
    """``files`` JSON-lines files with ordered modification times; returns their records."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    notes = [None, "ok", "it's \"quoted\"", "ünïcödé ✓"]
    contents = []
    for index in range(files):
        records = [{"seq": seq,
                    "id": None if rng.random() < 0.1 else seq % 997,
                    "amount": rng.choice([None, -7, 0, 12, 350, 899, 900, 1500]),
                    "note": rng.choice(notes)}
                   for seq in range(index * per_file, (index + 1) * per_file)]
        path = folder / f"part-{index:05d}.json"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                        encoding="utf-8")
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
        contents.append(records)
    return contents


@dataclass
class Expected:
    """Counts the pipeline's tables must show for a set of records."""

    total: int
    kept: int
    failed: dict[str, int]

    @property
    def dropped(self) -> int:
        return self.total - self.kept


def expected_counts(records: list[dict[str, Any]]) -> Expected:
    failed = {name: 0 for name, _, _ in RULES}
    kept = 0
    for record in records:
        drop = False
        for name, action, passes in RULES:
            if not passes(record):
                failed[name] += 1
                drop = drop or action == "drop"
        kept += not drop
    return Expected(total=len(records), kept=kept, failed=failed)


# ---------------------------------------------------------------------------------------------
# The two pipelines and their checks
# ---------------------------------------------------------------------------------------------
def plain_definitions(inbox: Path) -> Callable[[SparkSession], None]:
    """(a) A streaming table over the inbox, one file per micro-batch, no rules."""

    def define(spark: SparkSession) -> None:
        @sdp.table(name=TABLE)
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(
                str(inbox))

    return define


def rules_definitions(inbox: Path) -> Callable[[SparkSession], None]:
    """(b) The same table with a warn and two drop rules, quarantine and metrics."""

    def define(spark: SparkSession) -> None:
        @dp.table(name=TABLE)
        @dp.quarantine()
        @dp.expect("small", "amount < 900")
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def orders() -> DataFrame:
            return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(
                str(inbox))

    return define


KEEP = "coalesce(id IS NOT NULL, false) AND coalesce(amount >= 0, false)"
"""The two drop rules of (b), written by hand: a NULL verdict is a violation, as in sdp-expect."""


def hand_definitions(inbox: Path) -> Callable[[SparkSession], None]:
    """(h) What (b) does, written by hand in plain ``pyspark.pipelines``: the table of the
    kept records, the quarantine, a streaming table of per-record counts (no aggregation
    with state: what sdp-expect writes on Spark 4.1) and a metrics view summing it. Three
    streaming queries over the source, as in (b): the cost of the pattern, whoever writes
    it."""

    def define(spark: SparkSession) -> None:
        def source() -> DataFrame:
            return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(
                str(inbox))

        @sdp.table(name=TABLE)
        def orders() -> DataFrame:
            return source().where(KEEP)

        @sdp.table(name=f"{TABLE}_quarantine")
        def quarantine() -> DataFrame:
            return source().where(f"NOT ({KEEP})")

        @sdp.table(name=f"{TABLE}_counts")
        def counts() -> DataFrame:
            return source().selectExpr(
                "current_timestamp() AS batch_time", "1 AS records",
                f"CAST(NOT ({KEEP}) AS INT) AS dropped",
                "CAST(NOT coalesce(amount < 900, false) AS INT) AS small",
                "CAST(NOT coalesce(id IS NOT NULL, false) AS INT) AS valid_id",
                "CAST(NOT coalesce(amount >= 0, false) AS INT) AS not_negative")

        @sdp.materialized_view(name=f"{TABLE}_metrics")
        def metrics() -> DataFrame:
            return spark.read.table(f"{TABLE}_counts").selectExpr(
                "sum(records) AS total", "sum(dropped) AS dropped", "sum(small) AS small",
                "sum(valid_id) AS valid_id", "sum(not_negative) AS not_negative")

    return define


def _expect(what: str, actual: Any, expected: Any) -> None:
    if actual != expected:
        raise BenchmarkError(f"{what}: got {actual!r}, expected {expected!r}")


def check(key: str, result: RunResult, exp: Expected) -> dict[str, int]:
    """The tables of variant ``key`` against the expected counts; no record twice."""
    target = result.table(TABLE).agg(F.count(F.lit(1)).alias("n"),
                                     F.count_distinct("seq").alias("distinct")).first()
    assert target is not None
    counts = {"target": int(target["n"])}
    _expect(f"{key}: target records twice", int(target["distinct"]), counts["target"])
    if key == "a":
        _expect("a: target", counts["target"], exp.total)
        return counts
    if key == "h":
        _expect("h: target", counts["target"], exp.kept)
        counts["quarantine"] = result.table(f"{TABLE}_quarantine").count()
        _expect("h: quarantine", counts["quarantine"], exp.dropped)
        row = result.table(f"{TABLE}_metrics").first()
        assert row is not None
        _expect("h: metrics", {"total": row["total"], "dropped": row["dropped"],
                               **{name: row[name] for name, _, _ in RULES}},
                {"total": exp.total, "dropped": exp.dropped, **exp.failed})
        return counts
    _expect("b: target", counts["target"], exp.kept)
    counts["quarantine"] = result.table(f"{TABLE}_quarantine").count()
    _expect("b: quarantine", counts["quarantine"], exp.dropped)
    counts["batch_log"] = int(result.table(f"{TABLE}_dq_batches").selectExpr(
        "coalesce(sum(_records), 0)").first()[0])
    _expect("b: batch log", counts["batch_log"], exp.total)
    rows = {r["expectation"]: r for r in result.table(f"{TABLE}_dq_metrics").collect()}
    _expect("b: metrics failed per rule",
            {name: int(r["failed_records"]) for name, r in rows.items()}, exp.failed)
    _expect("b: metrics total", {int(r["total_records"]) for r in rows.values()}, {exp.total})
    _expect("b: metrics dropped", {int(r["dropped_records"]) for r in rows.values()},
            {exp.dropped})
    return counts


# ---------------------------------------------------------------------------------------------
# Server and memory
# ---------------------------------------------------------------------------------------------
class LoadServer(SparkServer):
    """The harness's local Spark Connect server (driver memory and settings as given)."""

    @property
    def jvm_pid(self) -> int:
        """The server JVM (spark-submit execs into it)."""
        return self.process.pid


def rss_mb(pid: int) -> Optional[float]:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


def parse_jstat(header: list[str], line: str) -> Optional[dict[str, float]]:
    values = line.split()
    if len(values) != len(header):
        return None
    try:
        row = dict(zip(header, (float(v.replace(",", ".")) for v in values), strict=True))
    except ValueError:
        return None
    heap = sum(row.get(k, 0.0) for k in ("S0U", "S1U", "EU", "OU")) / 1024
    return {"heap_mb": heap, "old_mb": row.get("OU", 0.0) / 1024,
            "young_gcs": row.get("YGC", 0.0), "full_gcs": row.get("FGC", 0.0)}


@dataclass
class Sample:
    """One second of the server: heap, old generation, resident set, progress."""

    t: float
    label: str
    batches: int
    heap_mb: Optional[float]
    old_mb: Optional[float]
    rss_mb: Optional[float]


class MemorySampler:
    """``jstat -gc <pid> 1000`` (one JVM for the whole run) plus /proc RSS, per second."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[Sample] = []
        self.label = "idle"
        self.progress: Callable[[], int] = lambda: 0
        self.started = time.monotonic()
        self.jstat = shutil.which("jstat")
        self._stop = threading.Event()
        self._process: Optional[subprocess.Popen[str]] = None
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self.jstat is None:
            while not self._stop.wait(1.0):
                self._record(None)
            return
        self._process = subprocess.Popen([self.jstat, "-gc", str(self.pid), "1000"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
        assert self._process.stdout is not None
        header: list[str] = []
        for line in self._process.stdout:
            if self._stop.is_set():
                break
            if line.split() and line.split()[0] == "S0C":
                header = line.split()
                continue
            self._record(parse_jstat(header, line) if header else None)

    def _record(self, gc: Optional[dict[str, float]]) -> None:
        try:
            batches = self.progress()
        except OSError:
            batches = -1
        self.samples.append(Sample(
            round(time.monotonic() - self.started, 1), self.label, batches,
            None if gc is None else round(gc["heap_mb"], 1),
            None if gc is None else round(gc["old_mb"], 1), rss_mb(self.pid)))

    def retained_after_full_gc(self) -> Optional[float]:
        """Heap in use right after a full GC (``jcmd GC.run``), in MB."""
        jcmd = shutil.which("jcmd")
        if jcmd is None or self.jstat is None:
            return None
        subprocess.run([jcmd, str(self.pid), "GC.run"], capture_output=True, timeout=120,
                       check=False)
        out = subprocess.run([self.jstat, "-gc", str(self.pid)], capture_output=True,
                             text=True, timeout=60, check=False).stdout.splitlines()
        if len(out) < 2:
            return None
        gc = parse_jstat(out[0].split(), out[1])
        return None if gc is None else round(gc["heap_mb"], 1)

    def stop(self) -> None:
        self._stop.set()
        if self._process is not None:
            self._process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(10)
        self._thread.join(10)


def slope(points: list[tuple[float, float]]) -> Optional[float]:
    """Least-squares slope of y over x."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return None if var == 0 else sum((x - mx) * (y - my) for x, y in points) / var


def class_histogram(pid: int) -> dict[str, tuple[int, int]]:
    """Live objects per class (``jcmd GC.class_histogram``, a full GC): instances, bytes."""
    jcmd = shutil.which("jcmd")
    if jcmd is None:
        return {}
    out = subprocess.run([jcmd, str(pid), "GC.class_histogram"], capture_output=True,
                         text=True, timeout=300, check=False).stdout
    classes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].rstrip(":").isdigit():
            classes[parts[3]] = (int(parts[1]), int(parts[2]))
    return classes


def histogram_growth(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]],
                     top: int = 10) -> list[dict[str, Any]]:
    """The classes whose live bytes grew most between two histograms."""
    grown = []
    for name, (count, size) in after.items():
        old_count, old_size = before.get(name, (0, 0))
        grown.append({"class": name, "bytes": size - old_size, "instances": count - old_count})
    return sorted(grown, key=lambda g: -g["bytes"])[:top]


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
@dataclass
class Measurement:
    """One fresh pipeline of one variant, through all its updates."""

    variant: str
    round: int
    warmup: bool
    files: int
    records: int
    update_s: list[float] = field(default_factory=list)
    retained_mb: list[Optional[float]] = field(default_factory=list)
    committed: dict[str, int] = field(default_factory=dict)
    checks: list[dict[str, int]] = field(default_factory=list)
    max_rss_mb: Optional[float] = None
    max_heap_mb: Optional[float] = None
    live_growth: list[dict[str, Any]] = field(default_factory=list)
    flows: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per streaming flow, its work over the run's updates (:class:`spark_work.FlowWork`)."""

    @property
    def seconds(self) -> float:
        return sum(self.update_s)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def batches_per_s(self) -> float:
        return self.files / self.seconds


class Bench:
    """The server, the sampler, the generated files and a scratch folder."""

    def __init__(self, workdir: Path, args: argparse.Namespace) -> None:
        self.workdir = workdir
        self.args = args
        self.events = EventLog(workdir / "events")
        self.server = LoadServer(workdir, args.driver_memory,
                                 [*server_conf(self.events.folder), *args.server_conf])
        self.control = self.server.session()
        self.sampler = MemorySampler(self.server.jvm_pid)
        self.root = workdir / "pipelines"
        self.root.mkdir()
        self.retained: list[tuple[str, Optional[float]]] = []
        self.stopped = False

    def measure(self, key: str, source: list[list[dict[str, Any]]], source_dir: Path,
                round_no: int, warmup: bool) -> Measurement:
        files = len(source)
        m = Measurement(key, round_no, warmup, files, sum(len(f) for f in source))
        pipeline = Pipeline(self.server, self.root)
        inbox = pipeline.path("inbox")
        inbox.mkdir(parents=True, exist_ok=True)
        pipeline.definitions = DEFINITIONS[key](inbox)
        flows = FLOWS[key]
        self.sampler.progress = lambda: committed_batches(pipeline.storage, flows,
                                                          pipeline.database)[TABLE]
        first_sample = len(self.sampler.samples)
        histogram = {} if warmup else class_histogram(self.server.jvm_pid)
        updates = max(1, min(self.args.updates, files))
        bounds = [round(files * (u + 1) / updates) for u in range(updates)]
        done = 0
        events_offset = self.events.offset()
        try:
            for update, end in enumerate(bounds, start=1):
                for index in range(done, end):
                    name = f"part-{index:05d}.json"
                    os.link(source_dir / name, inbox / name)
                done = end
                if update > 1:  # each update in a session of its own, as spark-pipelines does
                    pipeline.spark = self.server.session()
                self.sampler.label = f"{key} round {round_no} update {update}"
                started = time.perf_counter()
                result = self._run(pipeline)
                m.update_s.append(time.perf_counter() - started)
                if not result.ok:
                    raise BenchmarkError(f"{key} update {update} failed: {result.output[-3000:]}")
                self.sampler.label = "checks"
                m.checks.append(check(key, result, expected_counts(
                    [r for f in source[:done] for r in f])))
                pipeline.spark.stop()  # the client leaves, with its dataflow graph
                retained = self.sampler.retained_after_full_gc()
                m.retained_mb.append(retained)
                self.retained.append((f"{key}/{round_no}/{update}", retained))
                m.committed = committed_batches(pipeline.storage, flows, pipeline.database)
                if self.args.archive_processed:  # as the file source's cleanSource=archive
                    archive = pipeline.path("archive")
                    archive.mkdir(exist_ok=True)
                    for name in sorted(os.listdir(inbox)):
                        os.replace(inbox / name, archive / name)
                # One micro-batch per file; the batch log's flow also runs the batch
                # without data that ends each update and writes the last batch's row
                # (Spark 4.2+; on 4.1 it writes a row per record, with no aggregation).
                extra = update if PER_MICRO_BATCH else 0
                _expect(f"{key} update {update}: micro-batches per flow", m.committed,
                        {flow: done + (extra if flow.endswith("_to_dq_batches") else 0)
                         for flow in flows.values()})
            m.flows = {name: asdict(work) for name, work
                       in self.events.streaming_since(events_offset).items()}
            if not warmup:  # what the pipeline's updates left alive, before it is dropped
                m.live_growth = histogram_growth(histogram, class_histogram(self.server.jvm_pid))
        finally:
            self.sampler.label = "idle"
            self.sampler.progress = lambda: 0
            self._discard(pipeline)
        samples = [s for s in self.sampler.samples[first_sample:]
                   if s.label.startswith(f"{key} round {round_no} ")]
        rss = [s.rss_mb for s in samples if s.rss_mb is not None]
        heap = [s.heap_mb for s in samples if s.heap_mb is not None]
        m.max_rss_mb = round(max(rss), 1) if rss else None
        m.max_heap_mb = round(max(heap), 1) if heap else None
        return m

    def _run(self, pipeline: Pipeline) -> RunResult:
        outcome: list[RunResult] = []
        worker = threading.Thread(target=lambda: outcome.append(pipeline.run()),
                                  name="pipeline-run", daemon=True)
        worker.start()
        worker.join(self.args.run_timeout)
        if outcome:
            return outcome[0]
        self.stopped = True
        self.server.stop()
        pipeline.spark.client.close()
        raise BenchmarkError(f"an update took more than {self.args.run_timeout:.0f} s; "
                             f"server stopped (log: {self.server.log_path})")

    def _discard(self, pipeline: Pipeline) -> None:
        if not self.stopped:
            self.control.sql(f"DROP DATABASE IF EXISTS `{pipeline.database}` CASCADE")
            with contextlib.suppress(Exception):
                pipeline.spark.stop()
        shutil.rmtree(self.root / pipeline.name, ignore_errors=True)

    def close(self) -> None:
        self.sampler.stop()
        if self.stopped:
            self.control.client.close()
            return
        self.control.stop()
        self.server.stop()


LABELS = {"a": "a plain streaming table", "b": "b sdp-expect rules",
          "h": "h the same rules by hand"}
DEFINITIONS = {"a": plain_definitions, "b": rules_definitions, "h": hand_definitions}


def run(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """Warm-up, then ``a b a b ...``; medians, ratio, memory."""
    data = bench.workdir / "data"
    source = generate(data / "all", args.files, args.records_per_file, args.seed)
    warm = generate(data / "warmup", args.warmup_files, args.records_per_file, args.seed + 1)
    measurements: list[Measurement] = []
    for key in args.variants:
        if args.warmup_files:
            m = bench.measure(key, warm, data / "warmup", 0, warmup=True)
            print(f"    warm-up  {LABELS[key]:<26} {m.seconds:8.1f} s", flush=True)
    for round_no in range(1, args.repeats + 1):
        for key in args.variants:
            m = bench.measure(key, source, data / "all", round_no, warmup=False)
            measurements.append(m)
            print(f"  round {round_no}  {LABELS[key]:<26} {m.seconds:8.1f} s  "
                  f"{m.records_per_s:8.0f} records/s  {m.batches_per_s:6.2f} batches/s  "
                  f"updates {[round(s, 1) for s in m.update_s]}  max RSS {m.max_rss_mb} MB  "
                  f"max heap {m.max_heap_mb} MB  retained {m.retained_mb} MB", flush=True)
    summary = {}
    for key in args.variants:
        own = [m for m in measurements if m.variant == key]
        summary[key] = {
            "records_per_s": statistics.median(m.records_per_s for m in own),
            "batches_per_s": statistics.median(m.batches_per_s for m in own),
            "seconds": statistics.median(m.seconds for m in own),
            "runs_s": [round(m.seconds, 1) for m in own],
            "work": work_summary(own),
        }
    ratio = summary["b"]["records_per_s"] / summary["a"]["records_per_s"]
    retained = [(label, mb) for label, mb in bench.retained if mb is not None]
    memory = {
        "max_rss_mb": max((m.max_rss_mb or 0) for m in measurements),
        "max_heap_mb": max((m.max_heap_mb or 0) for m in measurements),
        "retained_after_full_gc_mb": retained,
        "retained_slope_mb_per_update": slope(
            [(float(i), mb) for i, (_, mb) in enumerate(retained)]),
        "live_growth_last_run": {m.variant: m.live_growth for m in measurements},
    }
    print_summary(args, summary, ratio, memory)
    return {"summary": summary, "ratio_b_over_a": ratio, "memory": memory,
            "runs": [dict(asdict(m), records_per_s=m.records_per_s) for m in measurements],
            "samples": [asdict(s) for s in bench.sampler.samples]}


WORK_MEASURES = ("batch_s", "planning_s", "add_batch_s", "task_s", "cpu_s")
"""The :class:`spark_work.FlowWork` measures that :func:`work_summary` reports."""


def work_summary(runs: list[Measurement]) -> dict[str, dict[str, float]]:
    """Per streaming flow, and summed over the flows (``"all flows"``): each of
    :data:`WORK_MEASURES` in milliseconds per source file (one micro-batch per file and
    flow), the median over ``runs``. Summed over the flows, it is the work the pipeline
    did per file, whatever the flows ran in parallel or waited for."""
    def per_file(m: Measurement, flow: Optional[str], measure: str) -> float:
        flows = list(m.flows.values()) if flow is None else [m.flows[flow]]
        return 1e3 * sum(f[measure] for f in flows) / m.files

    names = sorted({name for m in runs for name in m.flows})
    out = {}
    for name in [*names, None]:
        own = [m for m in runs if name is None or name in m.flows]
        out[name or "all flows"] = {
            measure.removesuffix("_s") + "_ms": round(statistics.median(
                per_file(m, name, measure) for m in own), 1) for measure in WORK_MEASURES}
    return out


def print_summary(args: argparse.Namespace, summary: dict[str, Any], ratio: float,
                  memory: dict[str, Any]) -> None:
    print(f"\n{args.files} files x {args.records_per_file} records, {args.updates} update(s) "
          f"per run, one micro-batch per file and flow; median of {args.repeats} runs:")
    print(f"  {'variant':<26} {'records/s':>10} {'batches/s':>10} {'run s':>8}   runs")
    for key in args.variants:
        s = summary[key]
        print(f"  {LABELS[key]:<26} {s['records_per_s']:10.0f} {s['batches_per_s']:10.2f} "
              f"{s['seconds']:8.1f}   {s['runs_s']}")
    print(f"  throughput b/a = {ratio:.3f}")
    if "h" in summary:
        hand = summary["h"]["records_per_s"]
        print(f"  throughput h/a = {hand / summary['a']['records_per_s']:.3f}, "
              f"b/h = {summary['b']['records_per_s'] / hand:.3f}")
    measures = [m.removesuffix("_s") + "_ms" for m in WORK_MEASURES]
    print("  work per file, per streaming flow (ms, median of the runs; Spark's event log: the "
          "micro-batch's duration, its planning and addBatch, its tasks' run and CPU time):")
    print(f"  {'variant':<9} {'flow':<24}" + "".join(f"{m:>14}" for m in measures))
    for key in args.variants:
        for flow, work in summary[key]["work"].items():
            print(f"  {key:<9} {flow:<24}" + "".join(f"{work[m]:14.1f}" for m in measures))
    if "h" in summary:
        b, h = summary["b"]["work"]["all flows"], summary["h"]["work"]["all flows"]
        print("  work of b over h, all flows (<= 1.00: sdp-expect does no more): "
              + ", ".join(f"{m} {b[m] / h[m]:.3f}" for m in measures if h[m]))
    print(f"  server: max RSS {memory['max_rss_mb']:.0f} MB, max heap in use "
          f"{memory['max_heap_mb']:.0f} MB (driver memory {args.driver_memory})")
    print("  heap retained after a full GC, update after update: "
          f"{[mb for _, mb in memory['retained_after_full_gc_mb']]} MB "
          f"(slope {memory['retained_slope_mb_per_update'] or 0:.2f} MB per update)")
    for key, growth in memory["live_growth_last_run"].items():
        print(f"  live objects that grew most over the last {LABELS[key]} run "
              "(MB, instances):")
        for g in growth[:6]:
            print(f"    {g['bytes'] / 2**20:8.2f}  {g['instances']:>9}  {g['class']}")
    print()


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def _variants(text: str) -> str:
    if not text or set(text) - set(LABELS) or "a" not in text or "b" not in text \
            or len(set(text)) != len(text):
        raise argparse.ArgumentTypeError(f"expected a and b and maybe h, each once; got {text!r}")
    return text


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300, help="files, one micro-batch each")
    parser.add_argument("--records-per-file", type=int, default=50)
    parser.add_argument("--updates", type=int, default=1,
                        help="updates per run; the files arrive in this many slices")
    parser.add_argument("--archive-processed", action="store_true",
                        help="after each update, move the files it read out of the inbox "
                             "(as the file source's cleanSource=archive does), so that each "
                             "update lists only its own files")
    parser.add_argument("--variants", default="ab", type=_variants,
                        help="which pipelines, run in this order each round: a (plain), b "
                             "(sdp-expect), h (the same rules by hand); default ab")
    parser.add_argument("--repeats", type=int, default=3, help="counted runs per variant")
    parser.add_argument("--warmup-files", type=int, default=20,
                        help="files of the uncounted warm-up run of each variant (0: none)")
    parser.add_argument("--driver-memory", default="2g", help="the server's heap")
    parser.add_argument("--server-conf", type=_key_value, action="append", default=[],
                        metavar="KEY=VALUE",
                        help="a Spark setting for the server (repeatable), e.g. the status "
                        "store's retention limits; the default is none")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--run-timeout", type=float, default=3600,
                        help="seconds one update may take before the benchmark gives up")
    parser.add_argument("--workdir", type=Path, help="where to make the scratch folder")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep-workdir", action="store_true")
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="sdpx-load-", dir=args.workdir))
    results: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "environment": {"pyspark": pyspark.__version__, "python": platform.python_version(),
                        "machine": platform.platform(), "cpus": os.cpu_count(),
                        "load_average_at_start": os.getloadavg(),
                        "server": f"local[2], driver memory {args.driver_memory}, "
                                  "shuffle partitions 2",
                        "server_conf": dict(args.server_conf)}}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the server
    started = time.monotonic()
    bench = Bench(workdir, args)
    valid = True
    try:
        results["load"] = run(bench, args)
    except BenchmarkError as error:
        print(f"BENCHMARK INVALID: {error}", file=sys.stderr, flush=True)
        results["error"] = str(error)
        valid = False
    finally:
        bench.close()
        results["environment"]["load_average_at_end"] = os.getloadavg()
        results["wall_clock_s"] = round(time.monotonic() - started, 1)
        if args.keep_workdir:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"wall clock {results['wall_clock_s']:.0f} s; load average at start "
          f"{results['environment']['load_average_at_start']}, at end "
          f"{results['environment']['load_average_at_end']}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {args.out}")
    return 0 if valid else 1


if __name__ == "__main__":
    raise SystemExit(main())
