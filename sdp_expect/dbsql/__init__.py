"""Databricks SQL pipeline files, read: the front end of ``sql.include``, ``translate``,
``validate`` and ``migrate``.

Four steps, each in its own module (the third in a few; the fourth, the SQL emitter, is
:mod:`sdp_expect.emit.sql`):

* :mod:`sdp_expect.base.sqltokens` scans the text into tokens (quotes, comments,
  nesting);
* :mod:`sdp_expect.dbsql.split` splits the tokens into statements (``;``, the
  cells of an exported notebook, ``SET`` lines, ``-- MAGIC`` cells): the one
  statement list that ``sql.include``, ``sdp-expect translate``, ``validate``
  and ``migrate`` read;
* :mod:`sdp_expect.dbsql.parse` reads the tokens into the statement model of
  :mod:`sdp_expect.dbsql.statements` (expectations become the one
  :class:`~sdp_expect.core.model.DatasetRules` model), with the readers of
  :mod:`~sdp_expect.dbsql.statement_reader` (one statement),
  :mod:`~sdp_expect.dbsql.dataset_clauses` (a dataset's ``CONSTRAINT ...
  EXPECT`` and other clauses), :mod:`~sdp_expect.dbsql.table_properties`
  (its ``sdp_expect.*`` properties) and the token cursor they share
  (:mod:`~sdp_expect.dbsql.cursor`);
* :mod:`sdp_expect.emit.sql` writes open-source SQL: the plan of
  :mod:`sdp_expect.core.planner` for every dataset with expectations, each flow's
  logic as :mod:`sdp_expect.core.compiler` writes it.

The public entry points are in :mod:`sdp_expect.sql`.
"""
