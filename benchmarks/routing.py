"""What sdp-expect's routing costs: Lakeflow-style DataFrame methods against ``select``.

Run from the repository root::

    python benchmarks/routing.py [--rows 2000000] [--repeats 3] [--warmup 1]
        [--out routing.json]

(the script puts the repository and ``tests/`` on ``sys.path`` itself: it uses
the test harness ``tests/sdp_runner.py``). ``--help`` lists every option.

One local Spark Connect server is started and two source tables of ``--rows``
rows each are generated in its warehouse with Spark (an id, an int and a double
column with NULLs, the double also with NaN, strings with NULLs, a column that
the pipelines drop, and about 5% exact duplicate rows). The pipelines read the
source through a view that points at the first table during a run's first update
and at the second during its second update, so that a read bound to the previous
update's table would show as wrong counts. Two pipelines, both defined with
``sdp_expect.pipelines``, with the same ``bronze`` (the source) and the same
expectation on ``silver``, run alternately, ``a b a b ...``, each time as a fresh
pipeline with two updates:

a. by hand: ``silver`` over ``spark.read.table("bronze")`` written with
   ``select``, ``filter`` and ``groupBy`` only, which needs no routing;
b. routed: the same ``silver`` written the Lakeflow way, ``withColumn``,
   ``withColumnRenamed``, ``drop``, ``fillna({...})``, ``dropna(subset=...)``,
   ``dropDuplicates()``, which sdp-expect rewrites (``sdp_expect/spark/routing.py``;
   ``dropDuplicates`` only on Spark 4.1 and 4.2: Spark 4.3 plans it lazily itself).

It prints the median seconds of each update (the run without the registration)
and of each registration, and the ratios b/a. Every update's ``silver`` and
expectation metrics must match counts computed straight from the source with
plain Spark, every run of both pipelines must give the same rows, and the first
run's ``silver`` of (a) and of (b) must be equal row for row; otherwise the reason
is printed and recorded in the JSON, no figure is printed, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the harness
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyspark
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import Pipeline, RunResult, SparkServer

from sdp_expect import pipelines as dp
from sdp_expect.base.spark_version import spark_has
from sdp_expect.spark.early_binding import EARLY_BINDING_RELATIONS
from sdp_expect.spark.routing import is_route_name

Definitions = Callable[[SparkSession], None]

DATA_DATABASE = "sdpx_bench_routing"
SOURCE_VIEW = f"{DATA_DATABASE}.source"
"""What ``bronze`` reads: a view over the source table of the current update."""
BRONZE, SILVER = "bronze", "silver"
METRICS = f"{SILVER}_dq_metrics"
RULE_NAME, RULE = "qty_not_negative", "qty >= 0"
FILLS: dict[str, Any] = {"qty": 0, "price": 0.0, "customer_name": "unknown"}
SILVER_SCHEMA = [("id", "bigint"), ("qty", "int"), ("price", "double"),
                 ("customer_name", "string"), ("country", "string"), ("total", "double"),
                 ("id_bucket", "bigint")]
"""``silver``'s columns and types, the same in both pipelines (``note`` dropped)."""
COLUMNS = [name for name, _ in SILVER_SCHEMA]
COUNTRIES = ["US", "DE", "FR", "GB", "NL", "ES", "IT", "PL", "SE", "JP"]
UPDATES = 2


class BenchmarkError(RuntimeError):
    """A run failed or its outputs do not add up: nothing to measure."""


# ---------------------------------------------------------------------------------------------
# Source data
# ---------------------------------------------------------------------------------------------
def _hash(column: Column, seed: int, size: int) -> Column:
    """A deterministic pseudo-random integer in ``[0, size)`` of ``column``."""
    return F.pmod(F.xxhash64(column, F.lit(seed)), F.lit(size))


def source_frame(spark: SparkSession, rows: int, first_id: int) -> DataFrame:
    """``rows`` rows: about 5% exact copies of the row before, NULLs, NaN, a free text.

    Every column is a function of the row's key, so a row whose key is that of the
    row before (one in 20) is an exact duplicate of it.

    :param spark: The session to build the frame in.
    :param rows: How many rows.
    :param first_id: The first key (the two source tables have disjoint keys).
    """
    n = F.col("id")
    key = (F.when((_hash(n, 1, 20) == 0) & (n > 0), n - 1).otherwise(n)
           + F.lit(first_id)).alias("key")
    k = F.col("key")
    country = F.element_at(F.array(*[F.lit(c) for c in COUNTRIES]),
                           (_hash(k, 6, len(COUNTRIES)) + 1).cast("int"))
    return spark.range(rows).select(key).select(
        k.alias("id"),
        F.when(_hash(k, 2, 20) == 0, F.lit(None))
        .otherwise(_hash(k, 3, 60) - 5).cast("int").alias("qty"),
        F.when(_hash(k, 4, 25) == 0, F.lit(None))
        .when(_hash(k, 4, 25) == 1, F.lit(float("nan")))
        .otherwise(_hash(k, 5, 100_000) / 100.0).cast("double").alias("price"),
        F.when(_hash(k, 7, 30) == 0, F.lit(None))
        .otherwise(F.concat(F.lit("customer_"), _hash(k, 8, 50_000).cast("string")))
        .alias("name"),
        F.when(_hash(k, 9, 40) == 0, F.lit(None)).otherwise(country).alias("country"),
        F.concat(F.lit("free text of row "), k.cast("string")).alias("note"),
    )


def write_sources(spark: SparkSession, rows: int) -> tuple[list[str], float]:
    """The source tables of update 1 and update 2; their names and the seconds taken."""
    started = time.perf_counter()
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{DATA_DATABASE}`")
    tables = []
    for update in range(UPDATES):
        table = f"{DATA_DATABASE}.source_{update + 1}"
        source_frame(spark, rows, update * rows).write.format("parquet").mode(
            "overwrite").saveAsTable(table)
        tables.append(table)
    return tables, time.perf_counter() - started


def point_source(spark: SparkSession, table: str) -> None:
    """Make :data:`SOURCE_VIEW` read ``table`` (outside any pipeline, not timed)."""
    spark.sql(f"CREATE OR REPLACE VIEW {SOURCE_VIEW} AS SELECT * FROM {table}")


@dataclass
class Reference:
    """What ``silver`` must hold for one source table, computed with plain Spark."""

    source_rows: int
    duplicate_rows: int
    missing: dict[str, int]
    """NULLs (and NaN) per column in the source, which the pipelines fill or drop on."""
    checked: int
    """Distinct rows with a country: the records the expectation sees."""
    failed: int
    silver_rows: int
    qty_sum: int


def reference_counts(spark: SparkSession, table: str) -> Reference:
    """The expected contents of ``silver`` for ``table``: deduplicate, drop missing
    countries, fill ``qty``, keep ``qty >= 0``; and the source's NULLs, which must exist.

    :param spark: The session to query with.
    :param table: A source table.
    """
    source = spark.read.table(table)
    stats = source.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count_if(F.col("qty").isNull()).alias("qty"),
        F.count_if(F.col("price").isNull() | F.isnan("price")).alias("price"),
        F.count_if(F.col("name").isNull()).alias("name"),
        F.count_if(F.col("country").isNull()).alias("country"),
    ).first()
    qty = F.coalesce(F.col("qty"), F.lit(0))
    kept = source.distinct().where(F.col("country").isNotNull()).agg(
        F.count(F.lit(1)).alias("checked"),
        F.count_if(qty < 0).alias("failed"),
        F.sum(F.when(qty >= 0, qty)).alias("qty_sum"),
    ).first()
    distinct = source.distinct().count()
    assert stats is not None and kept is not None
    missing = {c: int(stats[c]) for c in ("qty", "price", "name", "country")}
    ref = Reference(int(stats["rows"]), int(stats["rows"]) - distinct, missing,
                    int(kept["checked"]), int(kept["failed"]),
                    int(kept["checked"]) - int(kept["failed"]), int(kept["qty_sum"]))
    if ref.duplicate_rows == 0 or ref.failed == 0 or 0 in missing.values():
        raise BenchmarkError(f"{table}: no duplicates, violations or NULLs to handle: {ref}")
    return ref


# ---------------------------------------------------------------------------------------------
# The two pipelines
# ---------------------------------------------------------------------------------------------
def define_bronze(spark: SparkSession) -> None:
    """``bronze``: the source as it is (the same in both pipelines)."""

    @dp.materialized_view(name=BRONZE)
    def bronze() -> DataFrame:
        return spark.read.table(SOURCE_VIEW)


def by_hand_silver(spark: SparkSession) -> DataFrame:
    """(a) ``silver`` with ``select``, ``filter`` and ``groupBy`` only: no routing."""
    price = F.coalesce(F.col("price"), F.lit(0.0))
    return (
        spark.read.table(BRONZE)
        .select(
            "id",
            F.coalesce(F.col("qty"), F.lit(FILLS["qty"])).alias("qty"),
            F.nanvl(price, F.lit(FILLS["price"])).alias("price"),
            F.coalesce(F.col("name"), F.lit(FILLS["customer_name"])).alias("customer_name"),
            "country",
            (F.col("qty") * F.col("price")).alias("total"),
            (F.col("id") % 100).alias("id_bucket"),
        )
        .filter(F.col("country").isNotNull())
        .groupBy(*COLUMNS)
        .agg(F.count(F.lit(1)).alias("copies"))
        .select(*COLUMNS)
    )


def routed_silver(spark: SparkSession) -> DataFrame:
    """(b) ``silver`` the Lakeflow way, with the methods sdp-expect routes."""
    return (
        spark.read.table(BRONZE)
        .withColumn("total", F.col("qty") * F.col("price"))
        .withColumn("id_bucket", F.col("id") % 100)
        .withColumnRenamed("name", "customer_name")
        .drop("note")
        .fillna(FILLS)
        .dropna(subset=["country"])
        .dropDuplicates()
    )


def definitions(silver_query: Callable[[SparkSession], DataFrame]) -> Definitions:
    """``bronze``, and ``silver`` from ``silver_query`` with the one expectation."""

    def define(spark: SparkSession) -> None:
        define_bronze(spark)

        @dp.materialized_view(name=SILVER)
        @dp.expect_or_drop(RULE_NAME, RULE)
        def silver() -> DataFrame:
            return silver_query(spark)

    return define


def dedup_note() -> str:
    """How this Spark gets ``dropDuplicates`` of (b) to wait."""
    fixed_in = EARLY_BINDING_RELATIONS["Deduplicate"].fixed_in
    if fixed_in is not None and spark_has(fixed_in):
        return (f"dropDuplicates is not routed: Spark {pyspark.__version__} plans it lazily "
                "itself; routed: withColumn(s), withColumnRenamed, drop, fillna, dropna")
    return "dropDuplicates is routed too (SQL SELECT DISTINCT over a route view)"


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
def _expect(what: str, actual: Any, expected: Any) -> None:
    if actual != expected:
        raise BenchmarkError(f"{what}: got {actual!r}, expected {expected!r}")


def check_update(result: RunResult, ref: Reference, label: str) -> dict[str, Any]:
    """``silver`` and its metrics after one update against ``ref``; returns what was read,
    with an order-independent fingerprint of the rows (the same in every run)."""
    silver = result.table(SILVER)
    schema = [(f.name, f.dataType.simpleString()) for f in silver.schema.fields]
    _expect(f"{label}: silver columns", schema, SILVER_SCHEMA)
    row = silver.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count_distinct("id").alias("ids"),
        F.sum("qty").alias("qty_sum"),
        F.count_if(F.col("qty").isNull() | F.col("price").isNull() | F.isnan("price")
                   | F.col("customer_name").isNull() | F.col("country").isNull())
        .alias("missing"),
        F.sum(F.xxhash64(*COLUMNS).cast("decimal(38,0)")).alias("fingerprint"),
    ).first()
    assert row is not None
    _expect(f"{label}: silver rows", int(row["rows"]), ref.silver_rows)
    _expect(f"{label}: silver rows with the same id", int(row["rows"]) - int(row["ids"]), 0)
    _expect(f"{label}: sum of qty", int(row["qty_sum"]), ref.qty_sum)
    _expect(f"{label}: NULL or NaN in filled or dropna columns", int(row["missing"]), 0)
    metrics = [(r["expectation"], int(r["total_records"]), int(r["failed_records"]))
               for r in result.table(METRICS).collect()]
    _expect(f"{label}: metrics (expectation, total, failed)", metrics,
            [(RULE_NAME, ref.checked, ref.failed)])
    routes = sorted(name for name in result.outputs if is_route_name(name))
    return {"silver_rows": ref.silver_rows, "fingerprint": str(row["fingerprint"]),
            "route_views": routes}


def check_routing(key: str, checks: dict[str, Any]) -> None:
    """(a) registers no route view, (b) at least one: else the benchmark compares nothing."""
    routes = checks["route_views"]
    if (key == "a") == bool(routes):
        raise BenchmarkError(f"pipeline {key}: unexpected route views {routes}")


def compare_kept(spark: SparkSession, first: str, second: str) -> dict[str, int]:
    """Rows of one kept ``silver`` missing from the other, both ways (must be 0)."""
    one, other = spark.read.table(first), spark.read.table(second)
    differences = {f"{first} - {second}": one.exceptAll(other).count(),
                   f"{second} - {first}": other.exceptAll(one).count()}
    if any(differences.values()):
        raise BenchmarkError(f"silver of (a) and of (b) differ: {differences}")
    return differences


def check_fingerprints(measurements: list[Measurement]) -> None:
    """Every run of both pipelines wrote the same rows in each update."""
    for update in range(UPDATES):
        prints = {m.updates[update].checks["fingerprint"] for m in measurements}
        if len(prints) != 1:
            raise BenchmarkError(f"update {update + 1}: runs wrote different rows "
                                 f"(fingerprints {sorted(prints)})")


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
class TimedPipeline(Pipeline):
    """A harness pipeline that notes how long each of its registrations took."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.registrations: list[float] = []

    def register(self) -> Any:
        """Create the graph and register the definitions, timed."""
        started = time.perf_counter()
        try:
            return super().register()
        finally:
            self.registrations.append(time.perf_counter() - started)


@dataclass
class Variant:
    """A pipeline to measure."""

    key: str
    label: str
    definitions: Definitions


@dataclass
class Update:
    """One update of one run: registration, the rest of the run, and what it wrote."""

    register_s: float
    update_s: float
    checks: dict[str, Any] = field(default_factory=dict)


@dataclass
class Measurement:
    """One run (a fresh pipeline, two updates) of one variant."""

    variant: str
    round: int
    warmup: bool
    updates: list[Update] = field(default_factory=list)


class Bench:
    """The server, a control session for data and checks, and a scratch folder.

    :param workdir: The scratch folder (server log, warehouse, pipeline storage).
    :param run_timeout: Seconds one update may take; then the server is stopped.

    Before the first :meth:`measure`, set :attr:`sources` (the source table of each
    update) and :attr:`references` (what ``silver`` must hold after each update).
    """

    def __init__(self, workdir: Path, run_timeout: float) -> None:
        self.workdir = workdir
        self.run_timeout = run_timeout
        self.server = SparkServer(workdir)
        self.control = self.server.session()
        self.pipelines_root = workdir / "pipelines"
        self.pipelines_root.mkdir(exist_ok=True)
        self.sources: list[str] = []
        self.references: list[Reference] = []
        self.kept: dict[str, str] = {}
        """Per variant, a copy of its first run's final ``silver``."""
        self.stopped = False

    def measure(self, variant: Variant, round_no: int, warmup: bool) -> Measurement:
        """Run ``variant`` as a fresh pipeline for two updates, check each, delete it."""
        pipeline = TimedPipeline(self.server, self.pipelines_root,
                                 definitions=variant.definitions)
        measurement = Measurement(variant.key, round_no, warmup)
        try:
            for update, (source, ref) in enumerate(zip(self.sources, self.references,
                                                       strict=True)):
                point_source(self.control, source)
                label = f"{variant.label}, update {update + 1}"
                started = time.perf_counter()
                result = self._run(pipeline, label)
                elapsed = time.perf_counter() - started
                register_s = pipeline.registrations[-1]
                checks = check_update(result, ref, label)
                check_routing(variant.key, checks)
                measurement.updates.append(Update(register_s, elapsed - register_s, checks))
            self._keep(variant.key, pipeline)
        finally:
            self._discard(pipeline)
        return measurement

    def _run(self, pipeline: Pipeline, label: str) -> RunResult:
        """One update, in a worker thread so that a hung server cannot hang the benchmark."""
        outcome: list[RunResult] = []
        worker = threading.Thread(target=lambda: outcome.append(pipeline.run()),
                                  name="pipeline-run", daemon=True)
        worker.start()
        worker.join(self.run_timeout)
        if not outcome:
            self.stopped = True
            self.server.stop()
            pipeline.spark.client.close()
            raise BenchmarkError(f"{label} did not finish in {self.run_timeout:.0f} s; "
                                 f"the server was stopped (log: {self.server.log_path})")
        result = outcome[0]
        if not result.ok:
            raise BenchmarkError(f"{label} failed: {type(result.error).__name__}: "
                                 f"{str(result.error)[:2000]} | last events: "
                                 + " | ".join(result.events[-5:]))
        return result

    def _keep(self, key: str, pipeline: Pipeline) -> None:
        """Copy the first run's final ``silver`` of each variant, to compare them."""
        if key in self.kept:
            return
        table = f"{DATA_DATABASE}.silver_{key}"
        self.control.read.table(f"`{pipeline.database}`.`{SILVER}`").write.format(
            "parquet").mode("overwrite").saveAsTable(table)
        self.kept[key] = table

    def _discard(self, pipeline: Pipeline) -> None:
        """Drop the pipeline's database and storage, and close its session."""
        if not self.stopped:
            self.control.sql(f"DROP DATABASE IF EXISTS `{pipeline.database}` CASCADE")
            pipeline.spark.stop()
        shutil.rmtree(self.pipelines_root / pipeline.name, ignore_errors=True)

    def close(self) -> None:
        """Stop the control session and the server."""
        if self.stopped:
            self.control.client.close()
            return
        self.control.stop()
        self.server.stop()


def alternate(bench: Bench, variants: list[Variant], repeats: int,
              warmup: int) -> list[Measurement]:
    """Run the variants in turn, ``warmup`` rounds (not counted) then ``repeats`` rounds."""
    measurements = []
    for round_no in range(warmup + repeats):
        for variant in variants:
            m = bench.measure(variant, round_no, warmup=round_no < warmup)
            tag = "warm-up" if m.warmup else f"round {round_no - warmup + 1}"
            times = "   ".join(f"update {i + 1}: register {u.register_s:6.3f} s, "
                               f"update {u.update_s:7.3f} s" for i, u in enumerate(m.updates))
            print(f"  {tag:>9}  {variant.label:<22} {times}", flush=True)
            measurements.append(m)
    return measurements


def medians(measurements: list[Measurement], key: str) -> dict[str, Any]:
    """Per update, the median update and registration seconds of ``key``'s counted runs."""
    counted = [m for m in measurements if m.variant == key and not m.warmup]
    out: dict[str, Any] = {}
    for update in range(UPDATES):
        done = [m.updates[update] for m in counted]
        out[f"update_{update + 1}"] = {
            "update_s": statistics.median(u.update_s for u in done),
            "register_s": statistics.median(u.register_s for u in done),
            "updates_s": [round(u.update_s, 3) for u in done],
        }
    return out


def ratios(summary: dict[str, Any]) -> dict[str, float]:
    """b/a of the median update and registration seconds, per update."""
    return {
        f"{kind}_{update}": summary["b"][update][f"{kind}_s"] / summary["a"][update][f"{kind}_s"]
        for update in summary["a"] for kind in ("update", "register")
    }


def print_table(variants: list[Variant], summary: dict[str, Any], ratio: dict[str, float],
                results: dict[str, Any], args: argparse.Namespace) -> None:
    """The figures."""
    env = results["environment"]
    print(f"\n{args.rows:,} rows per source table, median of {args.repeats} runs (after "
          f"{args.warmup} warm-up round(s)); pyspark {env['pyspark']}, {results['date']}")
    print(f"command: {results['command']}")
    print(f"note: {results['dedup']}")
    print(f"route views registered per update: {results['route_views']}")
    print(f"  {'pipeline':<22} {'update 1 s':>11} {'update 2 s':>11} {'register 1 s':>13} "
          f"{'register 2 s':>13}")
    for variant in variants:
        s = summary[variant.key]
        print(f"  {variant.label:<22} {s['update_1']['update_s']:11.3f} "
              f"{s['update_2']['update_s']:11.3f} {s['update_1']['register_s']:13.3f} "
              f"{s['update_2']['register_s']:13.3f}")
    print(f"  {'b/a':<22} {ratio['update_update_1']:11.3f} {ratio['update_update_2']:11.3f} "
          f"{ratio['register_update_1']:13.3f} {ratio['register_update_2']:13.3f}\n")


def benchmark(bench: Bench, args: argparse.Namespace, results: dict[str, Any]) -> None:
    """Generate the data, run a and b alternately, check, and fill ``results``."""
    print(f"generating 2 x {args.rows:,} source rows ...", flush=True)
    bench.sources, results["generate_s"] = write_sources(bench.control, args.rows)
    bench.references = [reference_counts(bench.control, t) for t in bench.sources]
    results["references"] = [asdict(r) for r in bench.references]
    for table, ref in zip(bench.sources, bench.references, strict=True):
        print(f"  {table}: {ref}", flush=True)
    variants = [Variant("a", "a by hand (select)", definitions(by_hand_silver)),
                Variant("b", "b routed (Lakeflow)", definitions(routed_silver))]
    measurements = alternate(bench, variants, args.repeats, args.warmup)
    results["runs"] = [asdict(m) for m in measurements]
    check_fingerprints(measurements)
    results["a_vs_b"] = compare_kept(bench.control, bench.kept["a"], bench.kept["b"])
    results["route_views"] = {v.key: len(next(m for m in measurements if m.variant == v.key)
                                         .updates[0].checks["route_views"]) for v in variants}
    summary = {v.key: medians(measurements, v.key) for v in variants}
    results["medians"], results["ratios"] = summary, ratios(summary)
    print_table(variants, summary, results["ratios"], results, args)


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000,
                        help="rows of each of the two source tables")
    parser.add_argument("--repeats", type=int, default=3, help="counted runs per pipeline")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--workdir", type=Path,
                        help="where to make the scratch folder (default: the system temp dir)")
    parser.add_argument("--run-timeout", type=float, default=1800,
                        help="seconds one update may take before it counts as failed")
    parser.add_argument("--keep-workdir", action="store_true",
                        help="keep the scratch folder (server log, source tables)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.repeats < 3:
        print("note: fewer than 3 counted runs; fine for a try-out, not for figures")
    return args


def environment() -> dict[str, Any]:
    """Versions and machine, for the JSON file."""
    return {"pyspark": pyspark.__version__, "python": platform.python_version(),
            "machine": platform.platform(), "cpus": os.cpu_count(),
            "load_average_at_start": list(os.getloadavg()),
            "server": "local[2], driver memory 3g, shuffle partitions 2"}


def main(argv: Optional[list[str]] = None) -> int:
    """Run the benchmark; exit 1 when a run failed or outputs did not add up."""
    args = parse_args(argv)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="sdpx-routing-", dir=args.workdir))
    results: dict[str, Any] = {"command": " ".join(sys.argv), "environment": environment(),
                               "date": datetime.date.today().isoformat(), "rows": args.rows,
                               "repeats": args.repeats, "warmup": args.warmup,
                               "dedup": dedup_note()}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the server
    valid = True
    bench = Bench(workdir, args.run_timeout)
    try:
        benchmark(bench, args, results)
    except BenchmarkError as error:
        print(f"BENCHMARK INVALID: {error}", file=sys.stderr, flush=True)
        results["error"] = str(error)
        valid = False
    finally:
        bench.close()
        results["environment"]["load_average_at_end"] = list(os.getloadavg())
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
