"""What a unique-key rule and a reference rule cost, next to the same checks by hand.

Run from the repository root::

    python benchmarks/key_rules.py [--rows 5000000] [--repeats 3] [--warmup 1]
        [--out keys.json]

One local Spark Connect server (the harness of ``benchmarks/cost.py``) holds two
parquet tables generated with Spark: ``orders`` (``--rows`` rows, the columns of
``cost.py``'s orders, with about one ``order_id`` in 1,000 changed into its successor's,
so that some keys occur twice) and ``customers`` (ids 1 to 200,000 without the
multiples of 997, so that some orders' customers are missing). Five materialized-view
pipelines run in turn, each time fresh (own database, own storage):

a.  plain: ``silver`` reads the orders, no rules;
bu. by hand, unique ``order_id`` with drop, quarantine and metrics: three views over
    ``count(1) OVER (PARTITION BY order_id)`` (the target keeps NULL keys and keys seen
    once, the quarantine the rest, the metrics count them);
cu. sdp-expect: ``expect_or_drop("order_once", dp.unique("order_id"))``, quarantine on,
    metrics on (the default);
br. by hand, ``customer_id`` references the customers, drop, quarantine and metrics:
    three views over the orders left-joined with the customers' grouped keys;
cr. sdp-expect: ``expect_or_drop("customer_known", dp.references(<customers>,
    "customer_id"))``, quarantine on, metrics on.

The by-hand views have the semantics of docs/dataset-rules.md (NULL keys pass, a key
counted once in the referenced table), so the five pipelines' outputs are checked
against the same counts, computed from the source tables with a different query
(``GROUP BY ... HAVING count(*) > 1`` and a ``LEFT ANTI JOIN``). It prints the medians
and the ratios cu/bu and cr/br (target: at most 1.10).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Optional

import cost  # benchmarks/cost.py: the server, the orders, the alternating runs
from cost import (
    DATA_DATABASE,
    METRICS,
    QUARANTINE,
    TARGET,
    Bench,
    BenchmarkError,
    Definitions,
    Variant,
    alternate,
    medians,
)
from pyspark import pipelines as sdp
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.connect.session import SparkSession
from sdp_runner import RunResult

from sdp_expect import pipelines as dp

TARGET_RATIO = 1.10
ORDERS = f"{DATA_DATABASE}.key_orders"
CUSTOMERS = f"{DATA_DATABASE}.key_customers"
UNIQUE_RULE = "order_once"
REFERENCE_RULE = "customer_known"


def write_tables(spark: SparkSession, rows: int) -> None:
    """The orders (some ``order_id`` twice) and the customers (some ids missing)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{DATA_DATABASE}`")
    orders = cost.orders_frame(spark, rows)
    rare = F.pmod(F.xxhash64(F.col("order_id"), F.lit(90)), F.lit(1000)) == 0
    shifted = F.when(rare & F.col("order_id").isNotNull(),
                     F.col("order_id") + 1).otherwise(F.col("order_id"))
    orders.select(shifted.alias("order_id"), *[c for c in orders.columns if c != "order_id"]) \
        .write.format("parquet").mode("overwrite").saveAsTable(ORDERS)
    spark.range(1, 200_001).where(F.col("id") % 997 != 0) \
        .select(F.col("id").alias("customer_id"), F.concat(F.lit("c"), F.col("id")).alias("name")) \
        .write.format("parquet").mode("overwrite").saveAsTable(CUSTOMERS)


@dataclass
class KeyCounts:
    """Counts computed straight from the source tables."""

    total: int
    duplicated: int
    """Records whose non-NULL ``order_id`` occurs more than once."""
    unknown: int
    """Records whose non-NULL ``customer_id`` is not a customer."""


def key_counts(spark: SparkSession) -> KeyCounts:
    """The reference counts, with queries of another shape than the pipelines'."""
    total = spark.read.table(ORDERS).count()
    duplicated = spark.sql(
        f"SELECT count(*) AS n FROM {ORDERS} AS o JOIN (SELECT order_id FROM {ORDERS} "
        "WHERE order_id IS NOT NULL GROUP BY order_id HAVING count(*) > 1) AS d "
        "ON o.order_id = d.order_id").first()
    unknown = spark.sql(
        f"SELECT count(*) AS n FROM {ORDERS} AS o LEFT ANTI JOIN {CUSTOMERS} AS c "
        "ON o.customer_id = c.customer_id WHERE o.customer_id IS NOT NULL").first()
    assert duplicated is not None and unknown is not None
    counts = KeyCounts(total, int(duplicated["n"]), int(unknown["n"]))
    if not counts.duplicated or not counts.unknown:
        raise BenchmarkError(f"the generated data has no violations: {counts}")
    return counts


# ---------------------------------------------------------------------------------------------
# The pipelines
# ---------------------------------------------------------------------------------------------
def plain() -> Definitions:
    """(a) The orders, no rules."""

    def define(spark: SparkSession) -> None:
        @sdp.materialized_view(name=TARGET)
        def silver() -> DataFrame:
            return spark.read.table(ORDERS)

    return define


def _three_views(spark: SparkSession, checked: Any, ok: str, columns: list[str]) -> None:
    """The by-hand pattern: the kept records, the others, and the counts, each a view
    over ``checked()`` (the records with the rule's verdict column ``ok``)."""

    @sdp.materialized_view(name=TARGET)
    def silver() -> DataFrame:
        return checked().where(ok).select(*columns)

    @sdp.materialized_view(name=QUARANTINE)
    def silver_quarantine() -> DataFrame:
        return checked().where(f"NOT {ok}").select(*columns)

    @sdp.materialized_view(name=METRICS)
    def silver_dq_metrics() -> DataFrame:
        return checked().selectExpr("count(*) AS total_records",
                                    f"count_if(NOT {ok}) AS failed_records")


def hand_unique(columns: list[str]) -> Definitions:
    """(bu) unique ``order_id`` by hand: a window count."""

    def define(spark: SparkSession) -> None:
        def checked() -> DataFrame:
            return spark.read.table(ORDERS).selectExpr(
                "*", "order_id IS NULL OR count(1) OVER (PARTITION BY order_id) = 1 AS _ok")

        _three_views(spark, checked, "_ok", columns)

    return define


def hand_reference(columns: list[str]) -> Definitions:
    """(br) ``customer_id`` references the customers by hand: a left join with their
    grouped keys."""

    def define(spark: SparkSession) -> None:
        def checked() -> DataFrame:
            orders = spark.read.table(ORDERS).alias("o")
            keys = (spark.read.table(CUSTOMERS).groupBy(F.col("customer_id").alias("_k"))
                    .agg(F.lit(True).alias("_found")).alias("k"))
            return orders.join(keys, F.col("o.customer_id") == F.col("k._k"), "left") \
                .selectExpr("o.*", "o.customer_id IS NULL OR k._found IS NOT NULL AS _ok")

        _three_views(spark, checked, "_ok", columns)

    return define


def sdpx(rule: str, check: Any) -> Definitions:
    """(cu, cr) sdp-expect: one drop rule, quarantine and metrics on."""

    def define(spark: SparkSession) -> None:
        @dp.materialized_view(name=TARGET)
        @dp.quarantine()
        @dp.expect_or_drop(rule, check)
        def silver() -> DataFrame:
            return spark.read.table(ORDERS)

    return define


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------
def check_plain(result: RunResult, ref: KeyCounts) -> dict[str, Any]:
    """(a) wrote every record."""
    cost._expect("plain: silver rows", result.table(TARGET).count(), ref.total)
    return {}


def check_hand(result: RunResult, ref: KeyCounts, failed: int) -> dict[str, Any]:
    """(bu, br) the three views agree with the counts."""
    metrics = result.table(METRICS).first()
    assert metrics is not None
    cost._expect("hand: silver rows", result.table(TARGET).count(), ref.total - failed)
    cost._expect("hand: quarantine rows", result.table(QUARANTINE).count(), failed)
    cost._expect("hand: metrics", (int(metrics["total_records"]),
                                   int(metrics["failed_records"])), (ref.total, failed))
    return {"failed": failed}


def check_sdpx(result: RunResult, ref: KeyCounts, rule: str, failed: int) -> dict[str, Any]:
    """(cu, cr) the view, its quarantine and its metrics row agree with the counts."""
    rows = result.table(METRICS).collect()
    cost._expect("sdpx: metrics rows", [r["expectation"] for r in rows], [rule])
    cost._expect("sdpx: metrics", (int(rows[0]["total_records"]), int(rows[0]["failed_records"]),
                                   int(rows[0]["dropped_records"])),
                 (ref.total, failed, failed))
    cost._expect("sdpx: silver rows", result.table(TARGET).count(), ref.total - failed)
    cost._expect("sdpx: quarantine rows", result.table(QUARANTINE).count(), failed)
    return {"failed": failed}


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def run(bench: Bench, args: argparse.Namespace) -> dict[str, Any]:
    """Generate the tables, run the five pipelines alternately, return the figures."""
    print(f"generating {args.rows:,} orders into {ORDERS} and the customers ...", flush=True)
    write_tables(bench.control, args.rows)
    ref = key_counts(bench.control)
    columns = list(bench.control.read.table(ORDERS).columns)
    print(f"  duplicated order ids: {ref.duplicated:,} records; unknown customers: "
          f"{ref.unknown:,} records", flush=True)
    variants = [
        Variant("a", "a plain (no rules)", plain(), partial(check_plain, ref=ref)),
        Variant("bu", "bu unique, by hand", hand_unique(columns),
                partial(check_hand, ref=ref, failed=ref.duplicated)),
        Variant("cu", "cu unique, sdp-expect", sdpx(UNIQUE_RULE, dp.unique("order_id")),
                partial(check_sdpx, ref=ref, rule=UNIQUE_RULE, failed=ref.duplicated)),
        Variant("br", "br reference, by hand", hand_reference(columns),
                partial(check_hand, ref=ref, failed=ref.unknown)),
        Variant("cr", "cr reference, sdp-expect",
                sdpx(REFERENCE_RULE, dp.references(CUSTOMERS, "customer_id")),
                partial(check_sdpx, ref=ref, rule=REFERENCE_RULE, failed=ref.unknown)),
    ]
    measurements = alternate(bench, variants, args.repeats, args.warmup)
    summary = {v.key: medians(measurements, v.key) for v in variants}
    ratios = {
        "cu/bu": summary["cu"]["run_s"] / summary["bu"]["run_s"],
        "cr/br": summary["cr"]["run_s"] / summary["br"]["run_s"],
        "bu/a": summary["bu"]["run_s"] / summary["a"]["run_s"],
        "br/a": summary["br"]["run_s"] / summary["a"]["run_s"],
    }
    print(f"\n{args.rows:,} rows, median of {args.repeats} runs "
          f"(after {args.warmup} warm-up round(s)):")
    for variant in variants:
        s = summary[variant.key]
        print(f"  {variant.label:<28} {s['run_s']:9.3f} s   {s['runs_s']}")
    for key in ("cu/bu", "cr/br"):
        verdict = "within target" if ratios[key] <= TARGET_RATIO else "OVER target"
        print(f"  {key} = {ratios[key]:.3f} (target <= {TARGET_RATIO:.2f}: {verdict})")
    print(f"  bu/a = {ratios['bu/a']:.3f}, br/a = {ratios['br/a']:.3f} (a rule's price by hand)")
    return {"rows": args.rows, "reference": asdict(ref), "medians": summary, "ratios": ratios,
            "target": TARGET_RATIO, "runs": [asdict(m) for m in measurements]}


def main(argv: Optional[list[str]] = None) -> int:
    """Run the benchmark; exit 1 when a run failed or its outputs did not add up."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="counted runs per variant")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    parser.add_argument("--run-timeout", type=float, default=1800)
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="sdpx-keys-"))
    bench = Bench(workdir, args.run_timeout, {})
    results: dict[str, Any] = {"environment": cost.environment(), "command": sys.argv}
    status = 0
    try:
        results["keys"] = run(bench, args)
    except BenchmarkError as error:
        print(f"INVALID: {error}", file=sys.stderr)
        results["error"] = str(error)
        status = 1
    finally:
        bench.close()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"results written to {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
