"""Names and comments of the companion datasets and their columns, and the
environment variable through which ``sdp-expect run`` and its pipeline share
the definitions file.

Kept apart from the compiler, without Spark imports, so that commands that only
read the companion tables (``sdp-expect report``) or only check files
(``sdp-expect validate``) need not import pyspark to know them, and the
command need not import the library's registration to read what it wrote.
"""

from __future__ import annotations

import re

__all__ = [
    "BATCH_INPUT_VIEW_PREFIX",
    "CHECK_VIEW_PREFIX",
    "RESERVED_PREFIX",
    "ROUTE_PREFIX",
    "SESSION_CATALOG",
    "batch_input_view_name",
    "check_view_name",
    "BATCH_DROPPED_COLUMN",
    "BATCH_FAILED_COLUMN",
    "BATCH_RECORDS_COLUMN",
    "BATCH_TIME_COLUMN",
    "EVENT_LOG_VIEW",
    "FAILED_EXPECTATIONS_COLUMN",
    "QUARANTINE_COLUMNS",
    "QUARANTINE_KEY_COLUMN",
    "QUARANTINE_TIME_COLUMN",
    "QUARANTINE_UPDATE_COLUMN",
    "HISTORY_TABLE",
    "OUTCOME_COMPLETED",
    "OUTCOME_FAILED",
    "METRICS_COMMENT_HEAD",
    "METRICS_COLUMNS",
    "METRICS_SUFFIX",
    "TOLERANCE_METRICS_COLUMNS",
    "WHOLE_METRICS_COLUMNS",
    "QUARANTINE_SUFFIX",
    "metrics_comment",
    "metrics_name",
    "quarantine_comment",
    "quarantine_flow_name",
    "quarantine_name",
    "batch_log_comment",
    "batch_log_flow_name",
    "batch_log_name",
    "catalog_of",
]

QUARANTINE_SUFFIX = "_quarantine"
"""Appended to a dataset's name: its quarantine, unless the user names one."""

METRICS_SUFFIX = "_dq_metrics"
"""Appended to a dataset's name: its metrics materialized view."""

BATCH_LOG_SUFFIX = "_dq_batches"
"""Appended to a streaming table's name: its batch log (one row of counts per micro-batch)."""

HISTORY_TABLE = "sdp_expect_dq_history"
"""The history table: one row per dataset, expectation and update, in the pipeline's catalog
and database; not a pipeline dataset, so a full refresh keeps it (docs/history.md)."""

OUTCOME_COMPLETED = "COMPLETED"
"""The history's ``outcome`` of a dataset the update recomputed: its counts are the
update's own (rows written before the column existed read NULL, and were all such)."""
OUTCOME_FAILED = "FAILED"
"""The history's ``outcome`` of a materialized view whose flow failed in the update and
whose last good data was brought back (``restored_version``): no counts."""

EVENT_LOG_VIEW = "sdp_expect_event_log"
"""The view over :data:`HISTORY_TABLE` with Lakeflow's event-log columns (docs/history.md)."""

QUARANTINE_FLOW_SUFFIX = "_to_quarantine"
"""Appended to a flow's name: the flow that feeds the table's quarantine."""

BATCH_LOG_FLOW_SUFFIX = "_to_dq_batches"
"""Appended to a flow's name: the flow that feeds the table's batch log."""


def quarantine_name(dataset: str) -> str:
    """The default quarantine of ``dataset`` (``@dp.quarantine()`` without a name)."""
    return f"{dataset}{QUARANTINE_SUFFIX}"


def metrics_name(dataset: str) -> str:
    """The metrics materialized view of ``dataset``."""
    return f"{dataset}{METRICS_SUFFIX}"


def batch_log_name(dataset: str) -> str:
    """The batch log of the streaming table ``dataset``."""
    return f"{dataset}{BATCH_LOG_SUFFIX}"


def quarantine_flow_name(flow: str) -> str:
    """The flow that feeds a streaming table's quarantine from the table's flow ``flow``."""
    return f"{flow}{QUARANTINE_FLOW_SUFFIX}"


def batch_log_flow_name(flow: str) -> str:
    """The flow that feeds a streaming table's batch log from the table's flow ``flow``."""
    return f"{flow}{BATCH_LOG_FLOW_SUFFIX}"

FAILED_EXPECTATIONS_COLUMN = "_failed_expectations"
"""The quarantine's extra column: names of all warn and drop rules a record violated."""

QUARANTINE_KEY_COLUMN = "_quarantine_key"
"""In a quarantine: the record's key, a hash of its columns (records identical in every
column share it), the same in every update that quarantines the record."""

QUARANTINE_UPDATE_COLUMN = "_quarantine_update"
"""In a quarantine: the id of the update that quarantined the record."""

QUARANTINE_TIME_COLUMN = "_quarantine_time"
"""In a quarantine: when the update that quarantined the record started."""

QUARANTINE_COLUMNS = (FAILED_EXPECTATIONS_COLUMN, QUARANTINE_KEY_COLUMN,
                      QUARANTINE_UPDATE_COLUMN, QUARANTINE_TIME_COLUMN)
"""The columns a quarantine adds after the record's, in order."""

BATCH_TIME_COLUMN = "_batch_time"
"""In a streaming table's batch log: the micro-batch's time (``current_timestamp()``)."""

BATCH_RECORDS_COLUMN = "_records"
"""In a streaming table's batch log: how many records the micro-batch had."""

BATCH_DROPPED_COLUMN = "_dropped"
"""In a streaming table's batch log: how many of them were dropped."""

BATCH_FAILED_COLUMN = "_failed"
"""In a streaming table's batch log: per warn and drop rule (by name), how many of the
micro-batch's records violated it."""

METRICS_COLUMNS = (
    "dataset",
    "expectation",
    "action",
    "constraint",
    "passed_records",
    "failed_records",
    "total_records",
    "dropped_records",
)
"""The columns of ``<dataset>_dq_metrics``, in order (docs/semantics.md#metrics)."""

TOLERANCE_METRICS_COLUMNS = ("max_failed", "tolerance_exceeded")
"""The columns that follow :data:`METRICS_COLUMNS` in the metrics of a dataset with
tolerances (docs/thresholds.md#dataset_dq_metrics)."""

WHOLE_METRICS_COLUMNS = ("observed", "violated")
"""The columns at the end of the metrics of a dataset with a rule on the dataset as a
whole, a row count or an aggregate (docs/row-count-rules.md#metrics)."""


def quarantine_comment(dataset: str) -> str:
    """The comment of a dataset's quarantine (every front end writes this one).

    :param dataset: The dataset's name.
    """
    return f"Records that sdp-expect dropped from {dataset}"


def batch_log_comment(dataset: str) -> str:
    """The comment of a streaming table's batch log.

    :param dataset: The streaming table's name.
    """
    return (f"Batch log of {dataset}: records, dropped records and violations per rule, "
            "with the time of their micro-batch (sdp-expect metrics log)")


def metrics_comment(dataset: str, *, streaming: bool) -> str:
    """The comment of a dataset's metrics view.

    :param dataset: The dataset's name.
    :param streaming: True for a streaming table (cumulative counts).
    """
    if streaming:
        return f"{METRICS_COMMENT_HEAD}{dataset}, cumulative since its last full refresh"
    return f"{METRICS_COMMENT_HEAD}{dataset} for the latest update"


METRICS_COMMENT_HEAD = "Data-quality metrics of "
"""How the comment of every metrics view sdp-expect makes starts (:func:`metrics_comment`):
what tells its ``<dataset>_dq_metrics`` tables from a user's table of that name."""


# ------------------------------------------------------------ names only the graph holds
RESERVED_PREFIX = "_sdpx_"
"""The start of every dataset, flow and view name that sdp-expect adds to a graph and
that no catalog holds (route views, check views, batch-log inputs): a user's dataset or
flow may not start with it (SDPX-DEF-118)."""

CHECK_VIEW_PREFIX = RESERVED_PREFIX + "check_"
"""The start of the name of a rule's check view (:func:`check_view_name`)."""

BATCH_INPUT_VIEW_PREFIX = RESERVED_PREFIX + "batch_input_"
"""The start of the name of a batch log's input view (:func:`batch_input_view_name`)."""

ROUTE_PREFIX = RESERVED_PREFIX + "route_"
"""The start of the name of a route view (``sdp_expect.spark.routing``)."""


def _identifier(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name)


def check_view_name(flow: str, number: int) -> str:
    """The temporary view that checks rule ``number`` (1-based; 0: the query alone) of ``flow``."""
    return f"{CHECK_VIEW_PREFIX}{_identifier(flow)}_{number}"


def batch_input_view_name(flow: str) -> str:
    """The temporary view of the per-record batch-log inputs of ``flow``."""
    return f"{BATCH_INPUT_VIEW_PREFIX}{_identifier(flow)}"


SESSION_CATALOG = "spark_catalog"
"""The name of Spark's session catalog, where a one- or two-part name lives."""


def catalog_of(name: str) -> str:
    """The catalog a dataset name refers to: the first of three parts
    (``cat.db.table``, backquoted parts included), else :data:`SESSION_CATALOG`."""
    parts = re.findall(r"`(?:[^`]|``)*`|[^.`]+", name)
    return parts[0].strip("`").lower() if len(parts) >= 3 else SESSION_CATALOG
