"""Names and comments of the companion datasets and their columns, and the
environment variable through which ``sdp-expect run`` and its pipeline share
the definitions file.

Kept apart from the compiler, without Spark imports, so that commands that only
read the companion tables (``sdp-expect report``) or only check files
(``sdp-expect validate``) need not import pyspark to know them, and the
command need not import the library's registration to read what it wrote.
"""

from __future__ import annotations

__all__ = [
    "DEFINITIONS_VARIABLE",
    "DROPPED_FLAG_COLUMN",
    "FAILED_EXPECTATIONS_COLUMN",
    "METRICS_COLUMNS",
    "metrics_comment",
    "quarantine_comment",
    "record_log_comment",
]

DEFINITIONS_VARIABLE = "SDP_EXPECT_DEFINITIONS"
"""The environment variable naming the file where definitions are recorded (JSON lines).

``sdp-expect run`` and ``dry-run`` set it for their ``spark-pipelines`` child and read
the file back: which check view stands for which expectation (written by
:mod:`sdp_expect.registration`). Values, never text that was printed.
"""

FAILED_EXPECTATIONS_COLUMN = "_failed_expectations"
"""The quarantine's extra column: names of all warn and drop rules a record violated."""

DROPPED_FLAG_COLUMN = "_dropped"
"""In a streaming table's record log: whether the record was dropped."""

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
"""The columns of ``<dataset>_dq_metrics``, in order (contract section 6)."""


def quarantine_comment(dataset: str) -> str:
    """The comment of a dataset's quarantine (every front end writes this one).

    :param dataset: The dataset's name.
    """
    return f"Records that sdp-expect dropped from {dataset}"


def record_log_comment(dataset: str) -> str:
    """The comment of a streaming table's record log.

    :param dataset: The streaming table's name.
    """
    return (f"Per record of {dataset}: whether dropped, and the rules it violated "
            "(sdp-expect metrics log)")


def metrics_comment(dataset: str, *, streaming: bool) -> str:
    """The comment of a dataset's metrics view.

    :param dataset: The dataset's name.
    :param streaming: True for a streaming table (cumulative counts).
    """
    if streaming:
        return f"Data-quality metrics of {dataset}, cumulative since its last full refresh"
    return f"Data-quality metrics of {dataset} for the latest update"
