"""What sdp-expect costs at run time, next to no rules and to hand-written rules.

Run from the repository root::

    python benchmarks/cost.py [--rows 5000000] [--repeats 3] [--warmup 1]
        [--out cost.json] [--part all|cost|many] [--conf KEY=VALUE ...]
        [--format parquet|delta|both]

(the script puts the repository and ``tests/`` on ``sys.path`` itself: it
uses the test harness ``tests/sdp_runner.py``). ``--help`` lists every option.

Part ``cost``: one local Spark Connect server is started, an orders table of
``--rows`` rows is generated in its warehouse with Spark, and three pipelines
are run in turn, ``a b c a b c ...``, each time as a fresh pipeline (own
database, own storage) so that everything is recomputed, for each query before
the rules (``--query``): ``scan``, the orders as stored, and ``join``, the orders
joined with an aggregate of them (an expensive query):

a. plain: a materialized view ``silver`` reading the orders, no rules;
b. hand-written: the same 10 rules in plain ``pyspark.pipelines``: a
   filtered ``silver``, ``silver_quarantine`` with ``NOT coalesce(rule,
   false)`` and ``silver_dq_metrics`` with one ``count_if`` per rule;
c. sdp-expect with the same rules (4 warn, 6 drop), quarantine on and
   metrics on;
d. as c, with ``sdp_expect.metrics_from = output``: the metrics counted from
   what ``silver`` and its quarantine wrote instead of a third pass;
e. the rules by hand with the query evaluated once: a stored ``silver_checked`` (the
   query's records and one verdict column per rule) that the three outputs of b read
   (the "checked once" design of issue 14, measured before it is built).

It prints the median wall-clock time of ``Pipeline.run()`` (registration plus
update) and of the registration alone, the server's work during the run read
from its event log (``spark_work.py``: the tasks' run time, the time during
which a SQL execution ran, SQL executions and jobs), and the ratios c/b
(target: at most 1.00; the wall clock moves by SDP's one-second polling, the
tasks' time does not) and c/a.

Part ``many``: sdp-expect on a ``--many-rows`` table with ``--many-rules``
expectations against the same with one; registration, dry run and real run.

``--format`` (default parquet): the table format of every table, the source's
included. ``delta`` starts the server with Delta Lake's jars and settings as
``sdp-expect run`` does for ``sdp_expect.format: delta`` (pyspark 4.1 or 4.2);
``both`` measures parquet, then Delta, each on a server of its own, in one run,
and prints c/b of each side by side. The JSON holds each format's parts under
``formats``.

Every run must succeed and its outputs must match counts computed straight
from the source table. A run that fails, hangs (``--run-timeout``) or
produces wrong counts makes its part invalid: the reason is printed and
recorded in the JSON, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the harness
sys.path.insert(0, str(Path(__file__).resolve().parent))  # spark_work
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyspark
from pyspark import pipelines as sdp
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import Pipeline, RunResult, SparkServer
from spark_work import EventLog, server_conf

from sdp_expect import pipelines as dp
from sdp_expect.base.project import Project
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT
from sdp_expect.runtime.format_jars import format_setup

Definitions = Callable[[SparkSession], None]
Checker = Callable[[RunResult], dict[str, Any]]

DATA_DATABASE = "sdpx_bench_data"
TARGET = "silver"
QUARANTINE = f"{TARGET}_quarantine"
METRICS = f"{TARGET}_dq_metrics"
CHECKED = f"{TARGET}_checked"
WARN, DROP = "warn", "drop"
TARGET_RATIO = 1.00
"""Issue 31: sdp-expect never dearer than the same rules by hand."""
WORK = ("task_s", "cpu_s", "busy_s", "sql_executions", "jobs", "tasks")
"""The server's work per run (:class:`spark_work.Work`) whose medians are reported."""
QUERIES = ("scan", "join")
"""The query before the rules: the orders as stored, or joined with an aggregate."""
LOG_PATTERN = re.compile(
    r"^\d\d/\d\d/\d\d \S+ (WARN|ERROR) |Found too long generated code"
    r"|Whole-stage codegen disabled|grows beyond 64 KB|StackOverflowError|OutOfMemoryError"
)
"""Server log lines kept in the JSON: warnings, errors, code-generation fallbacks."""
NOTABLE = re.compile(r"codegen|64 KB|too long|OutOfMemory|StackOverflow|large task binary",
                     re.IGNORECASE)
"""Of those, the ones also printed while the benchmark runs."""

WARN_RULES = {
    "email_has_at": "email LIKE '%@%.%'",
    "country_iso2": "length(country) = 2 AND country = upper(country)",
    "amount_under_10k": "amount < 10000",
    "quantity_under_100": "quantity <= 100",
}
DROP_RULES = {
    "order_id_present": "order_id IS NOT NULL",
    "customer_known": "customer_id IS NOT NULL AND customer_id > 0",
    "amount_positive": "amount > 0",
    "quantity_positive": "quantity >= 1",
    "status_known": "status IN ('new', 'paid', 'shipped', 'delivered', 'cancelled')",
    "order_date_plausible": "order_date BETWEEN DATE'2020-01-01' AND DATE'2030-12-31'",
}
MANY_TEMPLATES = (
    "amount >= -{k}",
    "quantity < {k} + 1000",
    "length(email) < {k} + 200",
    "order_id <> -{k} - 1",
    "status <> 'status_{k}'",
    "customer_id >= -{k}",
    "order_date > date_sub(DATE'2000-01-01', {k})",
    "country <> 'C{k}'",
)


class BenchmarkError(RuntimeError):
    """A run failed or produced outputs that do not add up: nothing to measure."""


@dataclass(frozen=True)
class Rule:
    """One expectation: name, Spark SQL constraint, action (``warn`` or ``drop``)."""

    name: str
    constraint: str
    action: str


STANDARD_RULES = [Rule(n, c, WARN) for n, c in WARN_RULES.items()] + [
    Rule(n, c, DROP) for n, c in DROP_RULES.items()
]


# ---------------------------------------------------------------------------------------------
# Source data
# ---------------------------------------------------------------------------------------------
def _bucket(seed: int, size: int) -> Column:
    """A deterministic pseudo-random integer in ``[0, size)`` per row id."""
    return F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(size))


def _rare(seed: int, one_in: int) -> Column:
    """TRUE for about one row in ``one_in``."""
    return _bucket(seed, one_in) == 0


def _spoil(value: Column, seed: int, bad: Column, bad_one_in: int, null_one_in: int) -> Column:
    """``value``, replaced by ``bad`` in ~1/bad_one_in rows and NULL in ~1/null_one_in."""
    return (
        F.when(_rare(seed, null_one_in), F.lit(None))
        .when(_rare(seed + 1, bad_one_in), bad)
        .otherwise(value)
    )


def _pick(seed: int, values: list[str]) -> Column:
    """One of ``values``, pseudo-randomly per row."""
    position = (_bucket(seed, len(values)) + 1).cast("int")
    return F.element_at(F.array(*[F.lit(v) for v in values]), position)


def orders_frame(spark: SparkSession, rows: int) -> DataFrame:
    """An orders-like table of ``rows`` rows with NULLs and bad values in every column.

    :param spark: The session to build the frame in.
    :param rows: How many rows.
    """
    amount = F.round(_bucket(10, 500_000) / 100.0 + 0.01, 2)
    statuses = ["new", "paid", "shipped", "delivered", "cancelled"]
    countries = ["US", "DE", "FR", "GB", "NL", "ES", "IT", "PL", "SE", "JP"]
    first_day = F.lit("2020-01-01").cast("date")
    customer = _bucket(20, 200_000) + 1
    return spark.range(rows).select(
        F.when(_rare(1, 2000), F.lit(None)).otherwise(F.col("id")).alias("order_id"),
        _spoil(customer, 20, F.lit(-1).cast("bigint"), 1000, 500).alias("customer_id"),
        _spoil(amount, 30, amount * F.when(_rare(32, 2), -1).otherwise(100), 150, 400)
        .alias("amount"),
        _spoil((_bucket(40, 20) + 1).cast("int"), 40,
               F.when(_rare(42, 2), 0).otherwise(500).cast("int"), 200, 1000)
        .alias("quantity"),
        _spoil(_pick(50, statuses), 50, F.lit("unknown"), 400, 1000).alias("status"),
        _spoil(F.date_add(first_day, _bucket(60, 2000).cast("int")), 60,
               F.lit("2099-01-01").cast("date"), 500, 1000).alias("order_date"),
        _spoil(_pick(70, countries), 70, F.lower(_pick(72, countries)), 300, 800)
        .alias("country"),
        _spoil(F.concat(F.lit("user"), customer.cast("string"), F.lit("@example.com")), 80,
               F.concat(F.lit("user"), customer.cast("string")), 250, 600).alias("email"),
    )


def write_orders(spark: SparkSession, table: str, rows: int,
                 table_format: str = "parquet") -> float:
    """Generate the orders into a table; returns the seconds it took.

    :param spark: The session to write with.
    :param table: The table's qualified name.
    :param rows: How many rows.
    :param table_format: The table's format.
    """
    started = time.perf_counter()
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{DATA_DATABASE}`")
    orders_frame(spark, rows).write.format(table_format).mode("overwrite").saveAsTable(table)
    return time.perf_counter() - started


@dataclass
class Reference:
    """Counts computed straight from the source table, to check every run against."""

    total: int
    kept: int
    failed: dict[str, int]

    @property
    def dropped(self) -> int:
        """Records that violate at least one drop rule."""
        return self.total - self.kept


def _violated(constraint: str) -> Column:
    return ~F.coalesce(F.expr(constraint), F.lit(False))


def _all_of(conditions: list[Column]) -> Column:
    """AND of ``conditions`` as a balanced tree.

    A left-deep chain of a hundred ``&`` is a plan a hundred messages deep,
    which the Spark Connect client refuses to encode (protobuf depth limit).
    """
    if len(conditions) == 1:
        return conditions[0]
    middle = len(conditions) // 2
    return _all_of(conditions[:middle]) & _all_of(conditions[middle:])


def reference_counts(spark: SparkSession, table: str, rules: list[Rule]) -> Reference:
    """Total, kept and per-rule violation counts of ``table``, in one aggregate query.

    :param spark: The session to query with.
    :param table: The source table.
    :param rules: The rules (a record is kept when every drop rule is TRUE).
    """
    kept = _all_of(
        [F.coalesce(F.expr(r.constraint), F.lit(False)) for r in rules if r.action == DROP]
    )
    row = spark.read.table(table).agg(
        F.count(F.lit(1)).alias("total"),
        F.count_if(kept).alias("kept"),
        *[F.count_if(_violated(r.constraint)).alias(f"r{i}") for i, r in enumerate(rules)],
    ).first()
    assert row is not None
    failed = {r.name: int(row[f"r{i}"]) for i, r in enumerate(rules)}
    silent = [name for name, count in failed.items() if count == 0]
    if silent:
        raise BenchmarkError(f"rules without violations in the generated data: {silent}")
    return Reference(total=int(row["total"]), kept=int(row["kept"]), failed=failed)


# ---------------------------------------------------------------------------------------------
# The three pipelines
# ---------------------------------------------------------------------------------------------
def source_frame(spark: SparkSession, source: str, query: str) -> DataFrame:
    """The query every variant puts its rules on (the same in a, b and c).

    ``scan``: the orders as stored. ``join``: each order with its customer's order
    count and total (an aggregate of the orders joined back), an expensive query
    before the rules. The join keeps every order exactly once (the aggregate has one
    row per customer; a NULL customer matches nothing and keeps NULL totals), so the
    rules' counts are those of the orders.
    """
    orders = spark.read.table(source)
    if query == "scan":
        return orders
    customers = (spark.read.table(source).groupBy(F.col("customer_id").alias("c_id"))
                 .agg(F.count(F.lit(1)).alias("customer_orders"),
                      F.sum("amount").alias("customer_amount")))
    return orders.join(customers, orders["customer_id"] == customers["c_id"], "left")


def plain_definitions(source: str, query: str = "scan") -> Definitions:
    """(a) One materialized view over the source, no rules."""

    def define(spark: SparkSession) -> None:
        @sdp.materialized_view(name=TARGET)
        def silver() -> DataFrame:
            return source_frame(spark, source, query)

    return define


def hand_definitions(source: str, rules: list[Rule], query: str = "scan") -> Definitions:
    """(b) The rules written by hand in plain ``pyspark.pipelines``, as people do today."""
    drops = [r.constraint for r in rules if r.action == DROP]
    keep = " AND ".join(f"({c})" for c in drops)
    quarantined = " OR ".join(f"NOT coalesce({c}, false)" for c in drops)
    counts = ["count(*) AS total_records"] + [
        f"count_if(NOT coalesce({r.constraint}, false)) AS `{r.name}`" for r in rules
    ]

    def define(spark: SparkSession) -> None:
        @sdp.materialized_view(name=TARGET)
        def silver() -> DataFrame:
            return source_frame(spark, source, query).where(keep)

        @sdp.materialized_view(name=QUARANTINE)
        def silver_quarantine() -> DataFrame:
            return source_frame(spark, source, query).where(quarantined)

        @sdp.materialized_view(name=METRICS)
        def silver_dq_metrics() -> DataFrame:
            return source_frame(spark, source, query).selectExpr(*counts)

    return define


def once_definitions(source: str, rules: list[Rule], columns: list[str],
                     query: str = "scan") -> Definitions:
    """(e) The rules by hand, the query evaluated once: ``silver_checked`` stores the
    query's records with one verdict column per rule, and the three outputs of (b) read
    it. The design of issue 14's "checked once" mode, measured before it is built.

    :param columns: The query's columns (the outputs keep exactly these).
    """
    verdicts = [f"coalesce({r.constraint}, false) AS `_ok_{i}`" for i, r in enumerate(rules)]
    keep = " AND ".join(f"`_ok_{i}`" for i, r in enumerate(rules) if r.action == DROP)
    counts = ["count(*) AS total_records"] + [
        f"count_if(NOT `_ok_{i}`) AS `{r.name}`" for i, r in enumerate(rules)
    ]

    def define(spark: SparkSession) -> None:
        @sdp.materialized_view(name=CHECKED)
        def silver_checked() -> DataFrame:
            return source_frame(spark, source, query).selectExpr("*", *verdicts)

        @sdp.materialized_view(name=TARGET)
        def silver() -> DataFrame:
            return spark.read.table(CHECKED).where(keep).select(*columns)

        @sdp.materialized_view(name=QUARANTINE)
        def silver_quarantine() -> DataFrame:
            return spark.read.table(CHECKED).where(f"NOT ({keep})").select(*columns)

        @sdp.materialized_view(name=METRICS)
        def silver_dq_metrics() -> DataFrame:
            return spark.read.table(CHECKED).selectExpr(*counts)

    return define


def sdpx_definitions(source: str, query: str = "scan") -> Definitions:
    """(c) sdp-expect with the standard rules, written as a user would."""

    def define(spark: SparkSession) -> None:
        @dp.materialized_view(name=TARGET)
        @dp.quarantine()
        @dp.expect_all(WARN_RULES)
        @dp.expect_all_or_drop(DROP_RULES)
        def silver() -> DataFrame:
            return source_frame(spark, source, query)

    return define


def sdpx_rule_list_definitions(source: str, rules: list[Rule]) -> Definitions:
    """sdp-expect with any list of rules, one decorator per rule, in list order."""

    def define(spark: SparkSession) -> None:
        def silver() -> DataFrame:
            return spark.read.table(source)

        query = silver
        for rule in reversed(rules):
            decorator = dp.expect_or_drop if rule.action == DROP else dp.expect
            query = decorator(rule.name, rule.constraint)(query)
        dp.materialized_view(name=TARGET)(dp.quarantine()(query))

    return define


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
def _expect(what: str, actual: Any, expected: Any) -> None:
    if actual != expected:
        raise BenchmarkError(f"{what}: got {actual!r}, expected {expected!r}")


def check_plain(result: RunResult, ref: Reference) -> dict[str, Any]:
    """(a) wrote every source record."""
    target = result.table(TARGET).count()
    _expect("plain: silver rows", target, ref.total)
    return {"target": target}


def check_hand(result: RunResult, ref: Reference) -> dict[str, Any]:
    """(b) target, quarantine and metrics agree with the reference counts."""
    target = result.table(TARGET).count()
    quarantine = result.table(QUARANTINE).count()
    row = result.table(METRICS).first()
    assert row is not None
    failed = {name: int(row[name]) for name in ref.failed}
    _expect("hand: silver rows", target, ref.kept)
    _expect("hand: quarantine rows", quarantine, ref.dropped)
    _expect("hand: total_records", int(row["total_records"]), ref.total)
    _expect("hand: failed per rule", failed, ref.failed)
    return {"target": target, "quarantine": quarantine}


def check_sdpx(result: RunResult, ref: Reference) -> dict[str, Any]:
    """(c) target, quarantine and the metrics rows agree with the reference counts."""
    target = result.table(TARGET).count()
    quarantine = result.table(QUARANTINE)
    quarantined = quarantine.count()
    unexplained = quarantine.where(F.size("_failed_expectations") == 0).count()
    rows = result.table(METRICS).collect()
    failed = {r["expectation"]: int(r["failed_records"]) for r in rows}
    _expect("sdpx: silver rows", target, ref.kept)
    _expect("sdpx: quarantine rows", quarantined, ref.dropped)
    _expect("sdpx: quarantine rows without _failed_expectations", unexplained, 0)
    _expect("sdpx: metrics rows", len(rows), len(ref.failed))
    _expect("sdpx: failed per rule", failed, ref.failed)
    _expect("sdpx: total_records", {int(r["total_records"]) for r in rows}, {ref.total})
    _expect("sdpx: dropped_records", {int(r["dropped_records"]) for r in rows}, {ref.dropped})
    return {"target": target, "quarantine": quarantined}


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
class TimedPipeline(Pipeline):
    """A harness pipeline that remembers how long its last registration took."""

    register_seconds = 0.0

    def register(self) -> Any:
        """Create the graph and register the definitions, timed."""
        started = time.perf_counter()
        try:
            return super().register()
        finally:
            self.register_seconds = time.perf_counter() - started


def failure(result: RunResult) -> str:
    """A failed run in a few lines: the error, where our code raised it, the last events."""
    error = result.error
    assert error is not None
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "sdp_expect" in f.filename or f.filename == __file__]
    lines = [f"{type(error).__name__}: {str(error)[:2000]}"]
    lines += [f"  via {f.filename}:{f.lineno} ({f.name}): {f.line}" for f in ours[-3:]]
    lines += [f"  event: {event[:300]}" for event in result.events[-8:]]
    return "\n".join(lines)


@dataclass
class Variant:
    """A pipeline to measure: how to define it and how to check its outputs."""

    key: str
    label: str
    definitions: Definitions
    check: Checker
    conf: dict[str, str] = field(default_factory=dict)
    """Settings of this variant's pipelines, over the benchmark's ``--conf``."""


@dataclass
class Measurement:
    """One run of one variant."""

    variant: str
    round: int
    warmup: bool
    dry: bool
    register_s: float
    run_s: float
    work: dict[str, Any] = field(default_factory=dict)
    """What the server did during the run (:class:`spark_work.Work`)."""
    checks: dict[str, Any] = field(default_factory=dict)
    log_lines: list[str] = field(default_factory=list)


class Bench:
    """The server, a control session for data and checks, and a scratch folder.

    :param workdir: The scratch folder (server log, warehouse, pipeline storage).
    :param run_timeout: Seconds one pipeline run may take; after that the server
        is stopped and the benchmark reports the run as failed.
    :param conf: Spark SQL settings for every pipeline (the harness passes
        them to the dataflow graph); empty for the defaults.
    :param table_format: The format of every table (the server is started with its
        jars and settings, as ``sdp-expect run`` starts a project's).
    """

    def __init__(self, workdir: Path, run_timeout: float, conf: dict[str, str],
                 table_format: str = "parquet") -> None:
        self.workdir = workdir
        self.run_timeout = run_timeout
        self.table_format = table_format
        named = {} if table_format == "parquet" else {KEY_TABLE_FORMAT: table_format}
        self.conf = {**named, **conf}
        setup = format_setup(Project(spec=workdir / "spark-pipeline.yml", configuration=named))
        self.events = EventLog(workdir / "events")
        self.server = SparkServer(workdir, conf=[*setup.confs().items(),
                                                 *server_conf(self.events.folder)])
        self.control = self.server.session()
        self.pipelines_root = workdir / "pipelines"
        self.pipelines_root.mkdir(exist_ok=True)
        self.stopped = False

    def measure(self, variant: Variant, round_no: int, *, warmup: bool = False,
                dry: bool = False) -> Measurement:
        """Run ``variant`` once as a fresh pipeline, check it, then delete its outputs."""
        log_offset = self.server.log_path.stat().st_size
        pipeline = TimedPipeline(self.server, self.pipelines_root,
                                 definitions=variant.definitions,
                                 conf={**self.conf, **variant.conf})
        try:
            events_offset = self.events.offset()
            started = time.perf_counter()
            result = self._run(pipeline, dry)
            elapsed = time.perf_counter() - started
            if result is None:
                raise BenchmarkError(
                    f"{variant.label} did not finish in {self.run_timeout:.0f} s; the server "
                    "was stopped. Server log: " + " | ".join(self._log_lines(log_offset)[-5:]))
            if not result.ok:
                raise BenchmarkError(f"{variant.label} failed: {failure(result)}")
            work = asdict(self.events.work_since(events_offset))  # before the checks' queries
            checks = {} if dry else variant.check(result)
        finally:
            self._discard(pipeline)
        return Measurement(variant.key, round_no, warmup, dry, pipeline.register_seconds,
                           elapsed, work, checks, self._log_lines(log_offset))

    def _run(self, pipeline: Pipeline, dry: bool) -> Optional[RunResult]:
        """``pipeline.run()``; None when it did not finish in time (the server is then stopped).

        The run happens in a worker thread so that a hung server (say, a JVM
        thrashing in garbage collection) cannot hang the benchmark.
        """
        outcome: list[RunResult] = []
        worker = threading.Thread(target=lambda: outcome.append(pipeline.run(dry=dry)),
                                  name="pipeline-run", daemon=True)
        worker.start()
        worker.join(self.run_timeout)
        if outcome:
            return outcome[0]
        self.stopped = True
        self.server.stop()
        pipeline.spark.client.close()  # or its exit hook retries the dead server for minutes
        return None

    def _discard(self, pipeline: Pipeline) -> None:
        """Drop the pipeline's database and storage, and close its session."""
        if not self.stopped:
            self.control.sql(f"DROP DATABASE IF EXISTS `{pipeline.database}` CASCADE")
            pipeline.spark.stop()
        shutil.rmtree(self.pipelines_root / pipeline.name, ignore_errors=True)

    def _log_lines(self, offset: int) -> list[str]:
        """Server log lines since ``offset`` that hint at code-generation or memory trouble."""
        with open(self.server.log_path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
        return [line[:300] for line in text.splitlines() if LOG_PATTERN.search(line)]

    def close(self) -> None:
        """Stop the control session and the server."""
        if self.stopped:
            self.control.client.close()
            return
        self.control.stop()
        self.server.stop()


def alternate(bench: Bench, variants: list[Variant], repeats: int, warmup: int,
              dry: bool = False) -> list[Measurement]:
    """Run the variants in turn, ``warmup`` rounds (not counted) then ``repeats`` rounds."""
    measurements = []
    for round_no in range(warmup + repeats):
        for variant in variants:
            m = bench.measure(variant, round_no, warmup=round_no < warmup, dry=dry)
            tag = "warm-up" if m.warmup else f"round {round_no - warmup + 1}"
            print(f"  {tag:>9}  {variant.label:<28} register {m.register_s:7.3f} s   "
                  f"{'dry run' if dry else 'run'} {m.run_s:8.3f} s   tasks "
                  f"{m.work['task_s']:8.3f} s   busy {m.work['busy_s']:7.3f} s   "
                  f"{m.work['sql_executions']} SQL executions, {m.work['jobs']} jobs", flush=True)
            for line in [line for line in m.log_lines if NOTABLE.search(line)][:3]:
                print(f"             server log: {line}", flush=True)
            measurements.append(m)
    return measurements


def medians(measurements: list[Measurement], key: str) -> dict[str, Any]:
    """Median run and registration seconds of the counted runs of variant ``key``."""
    counted = [m for m in measurements if m.variant == key and not m.warmup]
    return {
        "run_s": statistics.median(m.run_s for m in counted),
        "register_s": statistics.median(m.register_s for m in counted),
        "runs_s": [round(m.run_s, 3) for m in counted],
        **{name: statistics.median(m.work[name] for m in counted) for name in WORK},
    }


# ---------------------------------------------------------------------------------------------
# Part 1: a, b, c
# ---------------------------------------------------------------------------------------------
def cost_part(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """Generate the orders, then per query (``--query``) run a b c alternately, report
    medians and ratios."""
    table = f"{DATA_DATABASE}.orders"
    print(f"generating {args.rows:,} orders into {table} ...", flush=True)
    generate_s = write_orders(bench.control, table, args.rows, bench.table_format)
    ref = reference_counts(bench.control, table, STANDARD_RULES)
    print(f"  {generate_s:.1f} s; kept {ref.kept:,}, dropped {ref.dropped:,}; violations per "
          f"rule: {ref.failed}", flush=True)
    out: dict[str, Any] = {"rows": args.rows, "generate_s": generate_s,
                           "reference": asdict(ref), "target_c_over_b": TARGET_RATIO}
    for query in QUERIES if args.query == "both" else (args.query,):
        print(f"query: {query}", flush=True)
        variants = [
            Variant("a", "a plain (no rules)", plain_definitions(table, query),
                    partial(check_plain, ref=ref)),
            Variant("b", "b hand-written SDP", hand_definitions(table, STANDARD_RULES, query),
                    partial(check_hand, ref=ref)),
            Variant("c", "c sdp-expect", sdpx_definitions(table, query),
                    partial(check_sdpx, ref=ref)),
            Variant("d", "d sdp-expect, metrics_from", sdpx_definitions(table, query),
                    partial(check_sdpx, ref=ref), {"sdp_expect.metrics_from": "output"}),
            Variant("e", "e by hand, checked once",
                    once_definitions(table, STANDARD_RULES,
                                     list(source_frame(bench.control, table, query).columns),
                                     query),
                    partial(check_hand, ref=ref)),
        ]
        variants = [v for v in variants if v.key in args.variants]
        measurements = alternate(bench, variants, args.repeats, args.warmup)
        summary = {v.key: medians(measurements, v.key) for v in variants}
        ratios = {name: value for name, value in _cost_ratios(summary).items()
                  if value is not None}
        rounds = paired(measurements, "c", "b")
        print_cost_table(variants, summary, ratios, args, query)
        print_paired(rounds)
        out[query] = {"medians": summary, "ratios": ratios, "paired_c_over_b": rounds,
                      "runs": [asdict(m) for m in measurements]}
    return out


PAIRED = ("run_s", "task_s", "cpu_s", "busy_s")
"""The measures compared round by round (:func:`paired`)."""


def paired(measurements: list[Measurement], top: str, bottom: str) -> dict[str, list[float]]:
    """Per measure of :data:`PAIRED`, ``top``'s value over ``bottom``'s in each counted
    round: the two ran one after the other, so a round's ratio is spared the machine's
    drift between rounds (empty when either variant did not run)."""
    rounds: dict[int, dict[str, Measurement]] = {}
    for m in measurements:
        if not m.warmup:
            rounds.setdefault(m.round, {})[m.variant] = m
    pairs = [(r[top], r[bottom]) for _, r in sorted(rounds.items()) if top in r and bottom in r]
    return {key: [round(_value(t, key) / _value(b, key), 3) for t, b in pairs]
            for key in PAIRED}


def _value(m: Measurement, key: str) -> float:
    """A measure of one run: its wall clock (``run_s``) or a field of its work."""
    return m.run_s if key == "run_s" else float(m.work[key])


def print_paired(rounds: dict[str, list[float]]) -> None:
    """c/b round by round, with the median of the rounds."""
    if not any(rounds.values()):
        return
    print("  c/b round by round (each round's c over the b run just before it):")
    for key, values in rounds.items():
        print(f"    {key:<7} median {statistics.median(values):.3f}   rounds {values}")
    print()


def _cost_ratios(summary: dict[str, Any]) -> dict[str, Optional[float]]:
    """The ratios between the variants measured (None where one of the two was not)."""

    def ratio(top: str, bottom: str, key: str = "run_s") -> Optional[float]:
        if top not in summary or bottom not in summary:
            return None
        return float(summary[top][key] / summary[bottom][key])

    return {
        "c/b": ratio("c", "b"),
        "c/b tasks": ratio("c", "b", "task_s"),
        "c/b busy": ratio("c", "b", "busy_s"),
        "c/b register": ratio("c", "b", "register_s"),
        "c/a": ratio("c", "a"),
        "b/a": ratio("b", "a"),
        "d/b": ratio("d", "b"),
        "d/c": ratio("d", "c"),
        "e/b": ratio("e", "b"),
    }


def print_cost_table(variants: list[Variant], summary: dict[str, Any], ratios: dict[str, float],
                     args: argparse.Namespace, query: str) -> None:
    """The part-1 table of one query (the ratios of the variants measured)."""
    print(f"\n{args.rows:,} rows, query {query}, median of {args.repeats} runs "
          f"(after {args.warmup} warm-up round(s)):")
    print(f"  {'variant':<28} {'run s':>9} {'register s':>11} {'tasks s':>9} {'busy s':>8} "
          f"{'SQL':>4} {'jobs':>5}   runs")
    for variant in variants:
        s = summary[variant.key]
        print(f"  {variant.label:<28} {s['run_s']:9.3f} {s['register_s']:11.3f} "
              f"{s['task_s']:9.3f} {s['busy_s']:8.3f} {s['sql_executions']:4.0f} "
              f"{s['jobs']:5.0f}   {s['runs_s']}")
    for name, what in (("c/b", "wall clock"), ("c/b tasks", "the tasks' run time"),
                       ("c/b busy", "time with a SQL execution running")):
        if name in ratios:
            verdict = "within target" if ratios[name] <= TARGET_RATIO else "OVER target"
            print(f"  {name:<9} = {ratios[name]:.3f} ({what}; target <= {TARGET_RATIO:.2f}: "
                  f"{verdict})")
    notes = {
        "c/b register": "registration, target <= 2",
        "c/a": "the price of data quality",
        "b/a": "the rules by hand against none",
        "d/b": "metrics counted from the output: sdp_expect.metrics_from = output",
        "d/c": "the same, against the default",
        "e/b": "the query evaluated once into a stored table, the three outputs read from it",
    }
    for name, note in notes.items():
        if name in ratios:
            print(f"  {name} = {ratios[name]:.3f} ({note})")
    print()


# ---------------------------------------------------------------------------------------------
# Part 2: many expectations
# ---------------------------------------------------------------------------------------------
def many_rules(count: int, drop_every: int = 5) -> list[Rule]:
    """``count`` distinct valid rules over the orders' columns, mixed warn and drop.

    :param count: How many rules.
    :param drop_every: Rule ``k`` drops when ``k % drop_every == 0`` (so rule 0
        always drops); the others warn.
    """
    return [
        Rule(f"rule_{k:04d}", MANY_TEMPLATES[k % len(MANY_TEMPLATES)].format(k=k),
             DROP if k % drop_every == 0 else WARN)
        for k in range(count)
    ]


def many_part(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """One rule against ``--many-rules`` rules: registration, dry run and real run."""
    table = f"{DATA_DATABASE}.orders_many"
    print(f"generating {args.many_rows:,} orders into {table} ...", flush=True)
    write_orders(bench.control, table, args.many_rows, bench.table_format)
    variants = []
    for count in (1, args.many_rules):
        rules = many_rules(count, args.many_drop_every)
        ref = reference_counts(bench.control, table, rules)
        variants.append(Variant(str(count), f"sdp-expect, {count} rule(s)",
                                sdpx_rule_list_definitions(table, rules),
                                partial(check_sdpx, ref=ref)))
    print("dry runs:", flush=True)
    dry = alternate(bench, variants, args.many_repeats, 0, dry=True)
    print("real runs:", flush=True)
    real = alternate(bench, variants, args.many_repeats, 0)
    summary = {
        v.key: {"dry": medians(dry, v.key), "run": medians(real, v.key)} for v in variants
    }
    one, many = summary["1"], summary[str(args.many_rules)]
    ratios = {
        "register": many["run"]["register_s"] / one["run"]["register_s"],
        "dry_run": many["dry"]["run_s"] / one["dry"]["run_s"],
        "run": many["run"]["run_s"] / one["run"]["run_s"],
    }
    print_many_table(variants, summary, ratios, args)
    return {"rows": args.many_rows, "rules": args.many_rules, "medians": summary,
            "ratios": ratios, "runs": [asdict(m) for m in dry + real]}


def print_many_table(variants: list[Variant], summary: dict[str, Any],
                     ratios: dict[str, float], args: argparse.Namespace) -> None:
    """The part-2 table."""
    print(f"\n{args.many_rows:,} rows, median of {args.many_repeats} runs:")
    print(f"  {'pipeline':<28} {'register s':>11} {'dry run s':>10} {'run s':>9}")
    for variant in variants:
        s = summary[variant.key]
        print(f"  {variant.label:<28} {s['run']['register_s']:11.3f} "
              f"{s['dry']['run_s']:10.3f} {s['run']['run_s']:9.3f}")
    print(f"  {args.many_rules} rules / 1 rule: register x{ratios['register']:.2f}, "
          f"dry run x{ratios['dry_run']:.2f}, run x{ratios['run']:.2f}\n")


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def _key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` from the command line."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="orders for a/b/c")
    parser.add_argument("--repeats", type=int, default=3, help="counted runs per variant")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    parser.add_argument("--many-rows", type=int, default=100_000, help="orders for part many")
    parser.add_argument("--many-rules", type=int, default=500,
                        help="expectations of the big pipeline in part many")
    parser.add_argument("--many-repeats", type=int, default=3,
                        help="runs per pipeline and kind (dry, real) in part many")
    parser.add_argument("--many-drop-every", type=int, default=5,
                        help="every n-th of the many rules drops, the others warn")
    parser.add_argument("--part", choices=("all", "cost", "many"), default="all")
    parser.add_argument("--variants", default="abcde",
                        help="part cost: the variants to run, as letters (default abcde; "
                        "bc: the hand-written rules and sdp-expect only)")
    parser.add_argument("--query", choices=(*QUERIES, "both"), default="both",
                        help="part cost: the query before the rules (scan: the orders; "
                        "join: joined with an aggregate of them); both: one after the other")
    parser.add_argument("--format", dest="table_format", choices=("parquet", "delta", "both"),
                        default="parquet", help="the tables' format; both: parquet, then "
                        "Delta Lake, each on a server of its own")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--workdir", type=Path,
                        help="where to make the scratch folder for server log, warehouse "
                        "and pipeline storage (default: the system temp dir)")
    parser.add_argument("--conf", type=_key_value, action="append", default=[],
                        metavar="KEY=VALUE",
                        help="a Spark SQL setting for every pipeline run (repeatable); "
                        "the default is none, i.e. what a user gets")
    parser.add_argument("--run-timeout", type=float, default=1800,
                        help="seconds one pipeline run may take before it counts as failed")
    parser.add_argument("--keep-workdir", action="store_true",
                        help="keep the scratch folder (server log, source tables)")
    args = parser.parse_args(argv)
    if args.repeats < 3 or args.many_repeats < 3:
        print("note: fewer than 3 counted runs; fine for a try-out, not for figures")
    return args


def environment() -> dict[str, Any]:
    """Versions and machine, for the JSON file."""
    return {"pyspark": pyspark.__version__, "python": platform.python_version(),
            "machine": platform.platform(), "cpus": os.cpu_count(),
            "server": "local[2], driver memory 3g, shuffle partitions 2"}


def run_parts(bench: Bench, args: argparse.Namespace, results: dict[str, Any]) -> bool:
    """Run the chosen parts into ``results``; False when one of them is invalid.

    A failed part is recorded under ``results[part]["error"]``; the next part
    still runs unless the server had to be stopped.
    """
    parts = {"cost": cost_part, "many": many_part}
    valid = True
    for name, part in parts.items():
        if args.part not in ("all", name) or bench.stopped:
            continue
        try:
            results[name] = part(bench, args)
        except BenchmarkError as error:
            print(f"BENCHMARK INVALID ({name}): {error}", file=sys.stderr, flush=True)
            results[name] = {"error": str(error)}
            valid = False
    return valid


def print_formats(formats: dict[str, Any]) -> None:
    """c/b of each format and query, side by side (when more than one format ran)."""
    if len(formats) < 2:
        return
    print("c/b per format (sdp-expect / the same rules by hand, median run time):")
    for table_format, parts in formats.items():
        cost = parts.get("cost", {})
        ratios = {query: cost[query]["ratios"]["c/b"] for query in QUERIES if query in cost}
        shown = ", ".join(f"{query} {ratio:.3f}" for query, ratio in ratios.items())
        print(f"  {table_format:<8} {shown or cost.get('error', 'not measured')}")


def main(argv: Optional[list[str]] = None) -> int:
    """Run the chosen parts; exit 1 when a run failed or outputs did not add up."""
    args = parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="sdpx-bench-", dir=args.workdir))
    results: dict[str, Any] = {"command": " ".join(sys.argv), "environment": environment(),
                               "conf": dict(args.conf)}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the server
    formats = ("parquet", "delta") if args.table_format == "both" else (args.table_format,)
    results["formats"] = {}
    valid = True
    try:
        for table_format in formats:
            print(f"== tables in {table_format}", flush=True)
            folder = workdir / table_format
            folder.mkdir()
            bench = Bench(folder, args.run_timeout, dict(args.conf), table_format)
            try:
                results["formats"][table_format] = {}
                valid = run_parts(bench, args, results["formats"][table_format]) and valid
            finally:
                bench.close()
        print_formats(results["formats"])
    finally:
        if args.keep_workdir:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {args.out}")
    return 0 if valid else 1


if __name__ == "__main__":
    raise SystemExit(main())
