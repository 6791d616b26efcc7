"""The fixes of the graph's definition errors, worded for Databricks SQL.

The planner (:mod:`sdp_expect.core.planner`) raises its definition-time errors with
the catalogue's fix, which names the Python API's decorators; a statement of a SQL
file is fixed with SQL clauses instead (``CONSTRAINT``, ``TBLPROPERTIES``, ``USING``).
The SQL front end words them here, in one place, for every error the planner raises
about a SQL statement.
"""

from __future__ import annotations

from sdp_expect.base.errors import SdpExpectError

__all__ = ["SQL_FIXES", "worded_for_sql"]

SQL_FIXES = {
    "SDPX-DEF-105": "put CREATE STREAMING TABLE ... (CONSTRAINT ...) before the CREATE FLOW "
                    "statements (or append_flow definitions) that write into the table",
    "SDPX-DEF-106": "remove 'sdp_expect.quarantine' from the view's TBLPROPERTIES and set it "
                    "on the materialized view or streaming table that reads the view",
    "SDPX-DEF-108": "put the CONSTRAINT ... EXPECT clauses on the dataset the Auto CDC flow "
                    "reads (e.g. a temporary view), not on its target",
    "SDPX-DEF-113": "define the dataset as a MATERIALIZED VIEW to enforce the tolerance, "
                    "make it a warn rule (no ON VIOLATION clause: reported in the metrics), or "
                    "remove its 'sdp_expect.max_failed.<expectation>' property (a streaming "
                    "table's micro-batches commit one by one, docs/thresholds.md)",
    "SDPX-DEF-114": "define a MATERIALIZED VIEW that reads the streaming table or view, "
                    "and give it the rule file with the key rule (docs/dataset-rules.md)",
    "SDPX-DEF-112": "store the table in a format with transactional appends (USING delta or "
                    "USING iceberg), or write it with one CREATE FLOW over a UNION ALL of the "
                    "sources; if the format is safe, set "
                    "sdp_expect.multiple_flows_on_file_formats = allow in the configuration",
}
"""The SQL wording of the fixes of the planner's errors, by code (the others keep the
catalogue's, which names no decorator)."""


def worded_for_sql(error: SdpExpectError) -> SdpExpectError:
    """``error`` with its fix worded for SQL, when the planner raised it; else ``error``.

    :param error: An error raised while a SQL statement was planned.
    """
    fix = SQL_FIXES.get(error.code)
    if fix is None:
        return error
    return SdpExpectError(error.code, error.detail, dataset=error.dataset,
                          expectation=error.expectation, fix=fix,
                          location=error.place or error.location)
