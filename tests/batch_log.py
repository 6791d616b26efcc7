"""Reading a batch log (``<table>_dq_batches``) in tests, whichever its shape.

On Spark 4.2 and later a batch log has one row per micro-batch; on Spark 4.1 one row
per record (its Hive session cannot resolve the ``WATERMARK`` the grouping needs,
docs/semantics.md#the-batch-log). Rows of one micro-batch share ``_batch_time``, so
summing the rows per ``_batch_time`` gives the per-micro-batch rows in both shapes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from sdp_expect.base.options import PipelineOptions
from sdp_expect.core.planner import PlanState

Row = dict[str, Any]

PER_MICRO_BATCH = PlanState(PipelineOptions()).batch_per_micro_batch
"""True when the installed Spark writes a batch log's row per micro-batch."""


def by_batch(rows: Iterable[Row]) -> list[Row]:
    """A batch log's rows summed per ``_batch_time``, in time order; checks the shape:
    one row per micro-batch, or (Spark 4.1) one row per record."""
    grouped: dict[Any, Row] = {}
    count = 0
    for row in rows:
        count += 1
        if not PER_MICRO_BATCH:
            assert row["_records"] == 1, f"Spark 4.1: one row per record, got {row}"
        into = grouped.setdefault(row["_batch_time"], {
            "_batch_time": row["_batch_time"], "_records": 0, "_dropped": 0,
            "_failed": defaultdict(int)})
        into["_records"] += row["_records"]
        into["_dropped"] += row["_dropped"]
        for name, failed in row["_failed"].items():
            into["_failed"][name] += failed
    if PER_MICRO_BATCH:
        assert count == len(grouped), f"{count} rows for {len(grouped)} micro-batches"
    return [dict(row, _failed=dict(row["_failed"]))
            for _, row in sorted(grouped.items(), key=lambda item: item[0])]
