"""SQL functions that exist on Databricks and not in open-source Spark, with what to do
instead: the one home of both lists.

- :data:`DATABRICKS_ONLY_SQL_FUNCTIONS`, the scalar ones, read by ``sdp-expect migrate``
  to flag a constraint, an ``expr`` / ``selectExpr`` / ``filter`` string or a SQL file
  that calls one of them: open-source Spark would stop the flow with
  ``UNRESOLVED_ROUTINE`` when it runs;
- :data:`DATABRICKS_ONLY_TABLE_FUNCTIONS`, the table-valued ones (``read_files``,
  ``cloud_files``, ``read_kafka``...), which the Databricks SQL reader rejects
  (SDPX-SQL-301).

``tests/test_migrate_lakeflow.py`` checks, on every supported Spark line, that no
name on the list is in the installed Spark's function registry (``SHOW FUNCTIONS``,
``spark.catalog.functionExists``): a name that open-source Spark adds must leave the
list. Nothing here imports pyspark.
"""

from __future__ import annotations

__all__ = ["DATABRICKS_ONLY_SQL_FUNCTIONS", "DATABRICKS_ONLY_TABLE_FUNCTIONS", "fix_for"]

_AI = ("AI Functions call a model served by Databricks: compute the value in a Python "
       "UDF of your own (calling the model you use) or drop the rule")
_H3 = ("H3 geospatial functions are Databricks-only: compute the cell with the `h3` Python "
       "package in a UDF")
_IDENTITY = ("Unity Catalog identities do not exist in open-source Spark: pass what you need "
             "as a pipeline setting (spark.conf.get(...)) instead")
_SECRET = ("Databricks secrets do not exist in open-source Spark: pass the value as a "
           "pipeline setting or an environment variable")
_REMOTE = "Databricks-only: call the service from Python outside the query, or drop it"

DATABRICKS_ONLY_SQL_FUNCTIONS: dict[str, str] = {
    **{name: _AI for name in (
        "ai_analyze_sentiment", "ai_classify", "ai_extract", "ai_fix_grammar", "ai_forecast",
        "ai_gen", "ai_mask", "ai_parse_document", "ai_query", "ai_similarity", "ai_summarize",
        "ai_translate", "vector_search")},
    **{name: _H3 for name in (
        "h3_boundaryasgeojson", "h3_boundaryaswkb", "h3_boundaryaswkt", "h3_centerasgeojson",
        "h3_centeraswkb", "h3_centeraswkt", "h3_distance", "h3_h3tostring", "h3_hexring",
        "h3_ischildof", "h3_ispentagon", "h3_isvalid", "h3_kring", "h3_kringdistances",
        "h3_longlatash3", "h3_longlatash3string", "h3_maxchild", "h3_minchild", "h3_pointash3",
        "h3_pointash3string", "h3_polyfillash3", "h3_polyfillash3string", "h3_resolution",
        "h3_stringtoh3", "h3_tochildren", "h3_toparent", "h3_try_polyfillash3",
        "h3_validate")},
    **{name: _IDENTITY for name in ("is_account_group_member", "is_member",
                                     "current_metastore", "current_recipient")},
    **{name: _SECRET for name in ("secret", "try_secret", "list_secrets")},
    **{name: _REMOTE for name in ("http_request", "remote_query")},
}
"""Databricks-only SQL function (lower case) -> what to do instead."""


def fix_for(name: str) -> str:
    """What to write instead of the Databricks-only function ``name`` (any case)."""
    return DATABRICKS_ONLY_SQL_FUNCTIONS[name.lower()]


_FILE_SOURCE_FIX = (
    "read the files in a Python file of the pipeline, e.g. a @dp.table returning "
    "spark.readStream.format('json').schema(...).load(path) (spark.read for a materialized "
    "view), or point a table outside the pipeline at them; then read that dataset here, "
    "with STREAM(name) in a streaming table"
)
DATABRICKS_ONLY_TABLE_FUNCTIONS: dict[str, str] = {
    "read_files": _FILE_SOURCE_FIX,
    "cloud_files": _FILE_SOURCE_FIX,
    "read_kafka": "read Kafka in a Python file of the pipeline with "
    "spark.readStream.format('kafka').option('kafka.bootstrap.servers', ...)",
    "read_kinesis": "read the stream in a Python file of the pipeline with a Spark "
    "Structured Streaming source for it",
    "read_pubsub": "read the stream in a Python file of the pipeline with a Spark "
    "Structured Streaming source for it",
    "read_pulsar": "read the stream in a Python file of the pipeline with "
    "spark.readStream.format('pulsar') (the Pulsar connector)",
    "read_statestore": "open-source SDP has no state-store reader in SQL; remove the "
    "dataset or compute it in Python",
    "event_log": "open-source SDP has no event_log() table: read the events that "
    "spark-pipelines prints, and sdp-expect's counts in <dataset>_dq_metrics",
}
"""Databricks table-valued functions that open-source Spark lacks, with what to do instead."""
