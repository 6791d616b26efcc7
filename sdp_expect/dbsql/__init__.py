"""Databricks SQL pipeline files, translated to open-source SDP SQL.

Three steps, each in its own module:

* :mod:`sdp_expect.sqltokens` scans the text into tokens (quotes, comments,
  nesting);
* :mod:`sdp_expect.dbsql.parse` reads the tokens into the statement model of
  :mod:`sdp_expect.dbsql.statements` (expectations become the one
  :class:`~sdp_expect.model.DatasetRules` model);
* :mod:`sdp_expect.dbsql.render` writes open-source SQL, asking
  :mod:`sdp_expect.compiler` for every piece of expectation logic.

The public entry points are in :mod:`sdp_expect.sql`.
"""
