"""history_table.read_recent: the few rows it reads give each rule of an update the same
comparison as the whole history (docs/history.md#the-comparison-in-the-run-summary)."""

from __future__ import annotations

import datetime
import random
from typing import Any

from sdp_runner import MakePipeline

from sdp_expect.base import names
from sdp_expect.quality.history_table import HISTORY_COLUMNS, create_table_sql, read_recent
from sdp_expect.quality.trends import RECENT_UPDATES, rule_trends

T0 = datetime.datetime(2026, 12, 1, 8, 0, 0)


def _history(seed: int) -> list[dict[str, Any]]:
    """Two pipelines sharing the table over 14 updates each; datasets left out of some
    updates (not refreshed), updates that checked nothing, updates whose view failed and
    was brought back (``FAILED``, no counts), equal times broken by id."""
    rng = random.Random(seed)
    rows = []
    for pipeline in ("shop", "other"):
        for update in range(14):
            when = T0 + datetime.timedelta(minutes=update // 2 * 2)  # pairs share a time
            for dataset, rules in (("orders", ("a", "b")), ("events", ("c",))):
                if update < 13 and rng.random() < 0.35:
                    continue
                total = 0 if rng.random() < 0.25 else rng.randint(1, 50)
                restored = rng.randint(1, 30) if rng.random() < 0.15 else None
                for rule in rules:
                    failed = rng.randint(0, total)
                    counts: dict[str, Any] = {
                        "passed_records": total - failed, "failed_records": failed,
                        "total_records": total, "dropped_records": 0}
                    if restored is not None:
                        counts = dict.fromkeys(counts)
                    rows.append({
                        "pipeline": pipeline, "update_id": f"{pipeline}-{update:02d}",
                        "update_time": when, "dataset": dataset, "expectation": rule,
                        "action": "warn", "constraint": "x", **counts,
                        "dataset_kind": "materialized view", "last_batch_time": None,
                        "outcome": "COMPLETED" if restored is None else "FAILED",
                        "restored_version": restored})
    return rows


def test_read_recent_gives_the_comparison_of_the_whole_history(
        make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    spark, database = pipeline.spark, pipeline.database
    table = f"`spark_catalog`.`{database}`.`{names.HISTORY_TABLE}`"
    for seed in (1,):
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(create_table_sql(table, "parquet"))
        rows = _history(seed)
        schema = ", ".join(f"`{name}` {kind}" for name, kind in HISTORY_COLUMNS)
        spark.createDataFrame([tuple(r[name] for name, _ in HISTORY_COLUMNS) for r in rows],
                              schema).write.insertInto(table)
        for update_id in ("shop-13", "shop-12", None):
            read = read_recent(spark, pipeline="shop", update_id=update_id,
                               catalog="spark_catalog", database=database,
                               updates=RECENT_UPDATES)
            wanted = update_id or "shop-13"
            # the oracle: the whole history up to that update, this pipeline's rows
            order = sorted({(r["update_time"], r["update_id"]) for r in rows
                            if r["pipeline"] == "shop"})
            upto = order[:[u for _, u in order].index(wanted) + 1]
            kept = [r for r in rows if (r["update_time"], r["update_id"]) in set(upto)]
            whole = {(t.dataset, t.expectation): t
                     for t in rule_trends(kept, pipeline="shop")
                     if t.latest.update_id == wanted}
            found = {(t.dataset, t.expectation): t for t in rule_trends(read)}
            assert set(found) == set(whole), (seed, update_id)
            assert len(read) <= len(whole) * (RECENT_UPDATES + 1)
            for key, trend in whole.items():
                def counts(points: Any) -> list[tuple[str, int, int]]:
                    return [(p.update_id, p.failed, p.total) for p in points]

                assert counts([found[key].latest]) == counts([trend.latest]), (seed, key)
                assert counts(found[key].recent()) == counts(trend.recent()), (seed, key)
                assert found[key].recent_rate() == trend.recent_rate()
    assert read_recent(spark, pipeline="nobody", catalog="spark_catalog",
                       database=database) == []
