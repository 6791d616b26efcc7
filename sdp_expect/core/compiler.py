"""The one compiler: expectations in, Spark query logic out.

Every front end (Python decorators, Databricks SQL, rule files) hands this
module a :class:`~sdp_expect.core.model.DatasetRules`; it returns the Spark logic
of the rules as Spark SQL text, and nothing else: which datasets and flows
carry that logic is :mod:`sdp_expect.core.planner`'s decision, and applying the text to
DataFrames is :mod:`sdp_expect.emit.python`'s (with ``selectExpr``/``where``
only). This module imports no pyspark.

The meaning of a rule, in one place:

* a record *passes* an expectation when its constraint is TRUE; FALSE and
  NULL are violations (``coalesce(constraint, false)``), unless the pipeline
  sets ``sdp_expect.null_result = pass`` (``coalesce(constraint, true)``);
* a record is *kept* when it passes every drop expectation;
* a record that violates a fail expectation without tolerance raises
  ``[EXPECTATION_VIOLATION] ...``; the check and the drop filter are one
  ``CASE`` expression that references every column of the record, so the
  optimizer cannot push the drop filter (or an inferred ``isnotnull``, a
  parquet filter or partition pruning) below the fail check, and the check is a filter
  Spark neither combines with nor pushes below the query's own (:data:`CHECK_BARRIER`),
  so it sees the query's records and no other;
* a fail or drop rule with a tolerance (``max_failed``) fails the flow with
  ``[EXPECTATION_TOLERANCE_EXCEEDED] ...`` when its violations over all the
  records the query produces exceed it: a one-row aggregate over the same query,
  cross-joined to its records, checks it before any is written (docs/thresholds.md);
* a key rule (unique, references: docs/dataset-rules.md) is judged against other
  records: a *prepared relation* (:meth:`RuleLogic.prepared`) adds to each record of the
  query one boolean column per key rule (``_sdpx_key_<i>``, a window count or a left
  join) and keeps the record itself as a struct (``_sdpx_rec``), which the target and
  quarantine end with (``_sdpx_rec.*``): everything above reads the rule's column as
  its ``passes``, and the datasets still have exactly the query's columns;
* a rule on the dataset as a whole (row count, aggregate: docs/row-count-rules.md,
  docs/aggregate-rules.md) has one verdict per update, computed in the one-row counts
  the metrics already aggregate; a fail one joins the tolerance guard (its
  ``raise_error`` says ``[EXPECTATION_DATASET_RULE_FAILED]``). It is no per-record
  expression: no record is dropped for it or names it in ``_failed_expectations``.
"""

from __future__ import annotations

from typing import Callable, Optional

from sdp_expect.base import violation
from sdp_expect.base.names import (
    BATCH_DROPPED_COLUMN,
    BATCH_FAILED_COLUMN,
    BATCH_RECORDS_COLUMN,
    BATCH_TIME_COLUMN,
    FAILED_EXPECTATIONS_COLUMN,
    METRICS_COLUMNS,
    QUARANTINE_KEY_COLUMN,
    QUARANTINE_TIME_COLUMN,
    QUARANTINE_UPDATE_COLUMN,
    batch_log_comment,
    metrics_comment,
    quarantine_comment,
)
from sdp_expect.base.sqltokens import sql_string
from sdp_expect.base.update import UpdateStamp
from sdp_expect.core.model import (
    Action,
    DatasetKind,
    DatasetRules,
    Expectation,
    Reference,
    RowCount,
    UniqueKey,
    count_exceeded_sql,
    fraction_exceeded_sql,
    table_identifier,
)

__all__ = [
    "FAILED_EXPECTATIONS_COLUMN",
    "METRICS_COLUMNS",
    "DatasetKind",
    "RuleLogic",
    "metrics_comment",
    "quarantine_comment",
    "batch_log_comment",
    "sql_string",
]


GUARD_RECORDS = "_sdpx_q"
"""The alias of the records in a tolerance guard's cross join."""

GUARD_ROW = "_sdpx_g"
"""The alias of the guard's one row (column ``_sdpx_ok``) in the same join."""

RECORD_COLUMN = "_sdpx_rec"
"""The prepared relation's struct of the query's record (docs/dataset-rules.md)."""

PREPARED_LEFT = "_sdpx_l"
"""The alias of the records in each step of the prepared relation (a number follows)."""

PREPARED_RIGHT = "_sdpx_r"
"""The alias of a referenced dataset's keys in the prepared relation's left join."""

FOUND_COLUMN = "_sdpx_found"
"""The referenced keys' column that is TRUE where the left join found the key."""


def quoted(name: str) -> str:
    """A column name as a SQL identifier: backquoted, backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


def _balanced(terms: list[str], operator: str, empty: str) -> str:
    """Combine boolean SQL terms as a balanced tree: depth log2(n), not n.

    A chain of hundreds of ANDs nests as deep as it is long, deeper than Spark
    parses or plans comfortably; a balanced tree of 10,000 rules is 14 deep.
    """
    if not terms:
        return empty
    level = list(terms)
    while len(level) > 1:
        pairs = [f"({level[i]} {operator} {level[i + 1]})" for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def _all(terms: list[str]) -> str:
    return _balanced(terms, "AND", "true")


def _any(terms: list[str]) -> str:
    return _balanced(terms, "OR", "false")


def _expected(whole: object) -> str:
    """What a rule on the dataset as a whole expects, as its failure message says it."""
    if isinstance(whole, RowCount):
        return whole.bound_text
    return "true"


def _embedded(constraint: str) -> str:
    """A constraint inside generated SQL, parenthesised.

    Constraints reach here checked (balanced parentheses, no unterminated
    string or comment, no ``;``); a trailing ``--`` comment is ended by a line
    break so that it cannot swallow what follows.
    """
    return f"({constraint}\n)" if "--" in constraint else f"({constraint})"


CHECK_BARRIER = "spark_partition_id() >= 0"
"""Always TRUE, and not deterministic to Spark's optimizer: in the fail check's CASE, it
keeps the check a filter of its own above the query's filters. Spark combines adjacent
deterministic filters into one conjunction, ``query_filter AND check``, and a
conjunction whose left side is NULL evaluates its right side: without codegen (for
example, a table of more than ``spark.sql.codegen.maxFields`` columns) the check would
then raise for a record the query's own filter left out with a NULL result. A
nondeterministic filter is neither combined with the one below it nor pushed below
it, so the check sees exactly the query's records."""


_KEY_JSON = ("map('ignoreNullFields', 'false', 'timeZone', 'UTC', "
             "'timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX', "
             "'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS')")
"""How a record is written for its key: every column, NULLs included, times in UTC to
the microsecond (``to_json`` writes them to the millisecond, in the session's zone, by
default), so that the key depends on the record alone."""


def record_key(record: str) -> str:
    """A quarantined record's key: SHA-256 (64 hex digits) of the struct ``record`` as
    JSON (:data:`_KEY_JSON`). The same record has the same key in every update and
    every front end; records identical in every column share it. Only the quarantined
    records are hashed."""
    return f"sha2(to_json({record}, {_KEY_JSON}), 256)"


class RuleLogic:
    """The Spark logic of one dataset's expectations.

    Every piece is built once, as Spark SQL text; :mod:`sdp_expect.emit.python`
    applies that text with ``expr``/``where``/``selectExpr`` (Python front end)
    and the ``*_select`` methods wrap it in ``SELECT`` statements (SQL
    translation). Both therefore run exactly the same expressions.

    The one pipeline-wide setting it reads is the NULL policy: it takes that fact, not
    the pipeline's settings (:class:`~sdp_expect.base.options.PipelineOptions`), which
    the planner and the emitters read for everything else.

    :param rules: The dataset's expectations, in declaration order.
    :param null_passes: True when a constraint whose result is NULL counts as passing
        (``sdp_expect.null_result: pass``); false by default, as on Databricks.
    :param update: The update the rules are registered for, which the quarantine's
        records name (:mod:`sdp_expect.base.update`); None where SQL is written for
        later updates (``sdp-expect translate``): the quarantine's update columns are
        then NULL.
    """

    def __init__(self, rules: DatasetRules, *, null_passes: bool = False,
                 update: Optional[UpdateStamp] = None) -> None:
        self.rules = rules
        self._null_result = "true" if null_passes else "false"
        self.update = update

    # -- per-record expressions (SQL text) ---------------------------------------------
    def passes(self, expectation: Expectation, *, in_filter: bool = False) -> str:
        """TRUE when the record passes ``expectation``, never NULL. A key rule's is its
        column of the prepared relation (:meth:`prepared`). A rule on the dataset as a
        whole has no per-record verdict (:meth:`whole_verdict`).

        :param in_filter: The verdict is a filter's condition (``WHERE``), which leaves
            out a record whose condition is NULL as it does one whose condition is FALSE:
            where a NULL verdict fails (the default policy) the constraint then goes in as
            written, without ``coalesce``, so that Spark infers ``IS NOT NULL`` from it and
            hands it to the source (parquet row groups, a join's sides) as it does for the
            same rule written by hand (docs/performance.md). It may then be NULL.
        """
        if expectation.whole is not None:
            raise ValueError(f"{expectation.name!r} judges the dataset as a whole, "
                             "not a record")
        if expectation.check is not None:
            return self.key_column(expectation)
        constraint = _embedded(expectation.constraint)
        if in_filter and self._null_result == "false":
            return constraint
        return f"coalesce({constraint}, {self._null_result})"

    def violates(self, expectation: Expectation) -> str:
        """TRUE when the record violates ``expectation``, never NULL."""
        return f"NOT {self.passes(expectation)}"

    def kept(self, *, in_filter: bool = False) -> str:
        """TRUE when the record passes every drop rule (``in_filter``: as a filter's
        condition, see :meth:`passes`)."""
        return _all([self.passes(e, in_filter=in_filter) for e in self.rules.of(Action.DROP)])

    def _stopping(self) -> list[Expectation]:
        """The fail rules without tolerance: a violating record stops the flow."""
        return [e for e in self.rules.expectations if e.stops_at_first]

    def violation_error(self) -> str:
        """``raise_error`` with the ``[EXPECTATION_VIOLATION]`` message for this record.

        The message's format and its parser live together in :mod:`sdp_expect.base.violation`.
        """
        checks = [(self.violates(e), e.name) for e in self._stopping()]
        # Over the prepared relation of key rules, the record is its struct: the message
        # shows the record's own columns, not the key rules' flags beside it.
        record = violation.record_sql(RECORD_COLUMN if self.rules.has_dataset_checks else None)
        return f"raise_error({violation.message_sql(self.rules.dataset, checks, record)})"

    def guarded(self, value: str) -> str:
        """``value``, or the violation error for a record that violates a fail rule.

        Evaluating the fail check and ``value`` in one CASE is what keeps the
        optimizer from filtering a record out before the check sees it. The CASE
        also holds :data:`CHECK_BARRIER`, which keeps it from reaching a record the
        query itself filtered out.
        """
        fail_rules = self._stopping()
        if not fail_rules:
            return value
        violated = _any([self.violates(e) for e in fail_rules])
        return (f"CASE WHEN {CHECK_BARRIER} AND {violated} THEN {self.violation_error()} "
                f"ELSE {value} END")

    def failed_names(self) -> str:
        """ARRAY<STRING>: names of the warn and drop rules the record violated, in order.

        One array per rule, the rule's name or none, joined with ``concat``: Spark compiles
        it with the rest of the stage (whole-stage code generation), where dropping the
        NULLs of ``array(CASE ...)`` with the lambda of ``filter`` is interpreted, record by
        record, and takes its stage out of the generated code (docs/performance.md).
        The type stays ``ARRAY<STRING>`` with NULL elements allowed (the ``CAST``), as the
        quarantines that earlier versions wrote have it.
        """
        empty = "CAST(array() AS ARRAY<STRING>)"
        named = [f"IF({self.violates(e)}, array({sql_string(e.name)}), {empty})"
                 for _, e in self._logged()]
        if not named:
            return empty
        return f"CAST(concat({', '.join(named)}) AS ARRAY<STRING>)"

    # -- key rules: the prepared relation (docs/dataset-rules.md) ------------------------
    def key_rules(self) -> list[tuple[int, Expectation]]:
        """The key rules (unique, references), with their position among the rules."""
        return [(i, e) for i, e in enumerate(self.rules.expectations) if e.check is not None]

    def key_column(self, expectation: Expectation) -> str:
        """The prepared relation's column of a key rule: TRUE when the record passes it."""
        for i, e in enumerate(self.rules.expectations):
            if e is expectation or e.name == expectation.name:
                return f"_sdpx_key_{i}"
        raise ValueError(f"{expectation.name!r} is not a rule of {self.rules.dataset!r}")

    def output_columns(self) -> str:
        """What the target and the quarantine select of the query's record: ``*``, or the
        prepared relation's record struct (``_sdpx_rec.*``) when there are key rules."""
        return f"{RECORD_COLUMN}.*" if self.rules.has_dataset_checks else "*"

    @staticmethod
    def record_columns(alias: str) -> list[str]:
        """The first step of the prepared relation over the query aliased ``alias``: its
        columns, and the record as one struct."""
        return [f"{alias}.*", f"struct({alias}.*) AS {RECORD_COLUMN}"]

    @staticmethod
    def _no_null(columns: tuple[str, ...], alias: str) -> str:
        return _any([f"{alias}.{quoted(c)} IS NULL" for c in columns])

    def unique_flag(self, check: UniqueKey, alias: str) -> str:
        """TRUE when a record of ``alias`` passes ``check``: a NULL in its key, or its key
        once among the query's records (one window, partitioned by the key)."""
        keys = ", ".join(f"{alias}.{quoted(c)}" for c in check.columns)
        return f"({self._no_null(check.columns, alias)} OR count(1) OVER (PARTITION BY {keys}) = 1)"

    @staticmethod
    def reference_keys(check: Reference) -> list[str]:
        """The referenced dataset's key columns, renamed ``_sdpx_k<j>``: grouped by them
        (each key once, so that the left join multiplies no record) they are
        :meth:`reference_relation`."""
        return [f"{quoted(c)} AS _sdpx_k{j}" for j, c in enumerate(check.to_columns)]

    @staticmethod
    def reference_group(check: Reference) -> list[str]:
        """The grouping columns of the referenced keys."""
        return [f"_sdpx_k{j}" for j in range(len(check.to_columns))]

    @staticmethod
    def reference_found() -> str:
        """The referenced keys' one aggregate column: TRUE."""
        return f"true AS {FOUND_COLUMN}"

    def reference_relation(self, check: Reference) -> str:
        """The referenced dataset's distinct keys, as a relation."""
        group = ", ".join(self.reference_group(check))
        return (f"(SELECT {group}, {self.reference_found()} FROM (SELECT "
                f"{', '.join(self.reference_keys(check))} FROM "
                f"{table_identifier(check.dataset)}) GROUP BY {group})")

    @staticmethod
    def reference_condition(check: Reference, left: str, right: str) -> str:
        """The left join's condition: the record's key equals a referenced key."""
        return _all([f"{left}.{quoted(c)} = {right}._sdpx_k{j}"
                     for j, c in enumerate(check.columns)])

    def reference_flag(self, check: Reference, left: str, right: str) -> str:
        """TRUE when a record of ``left`` passes ``check``: a NULL in its key, or the
        left join found its key in ``right``."""
        return f"({self._no_null(check.columns, left)} OR {right}.{FOUND_COLUMN} IS NOT NULL)"

    def prepared(self, source: str, only: Optional[Expectation] = None) -> str:
        """The relation of ``source``'s records with the key rules' columns and the record
        struct; ``source`` itself without key rules. ``only``: that key rule's column
        alone (its check view)."""
        rules = [(i, e) for i, e in self.key_rules() if only is None or e is only]
        if not rules:
            return source
        left = f"{PREPARED_LEFT}0"
        relation = (f"(SELECT {', '.join(self.record_columns(left))} "
                    f"FROM (SELECT * FROM {source}) AS {left})")
        for step, (i, e) in enumerate(rules, start=1):
            left = f"{PREPARED_LEFT}{step}"
            check = e.check
            if isinstance(check, UniqueKey):
                relation = (f"(SELECT {left}.*, {self.unique_flag(check, left)} AS _sdpx_key_{i}"
                            f"\nFROM {relation} AS {left})")
            else:
                assert isinstance(check, Reference)
                relation = (f"(SELECT {left}.*, {self.reference_flag(check, left, PREPARED_RIGHT)}"
                            f" AS _sdpx_key_{i}\nFROM {relation} AS {left}\n"
                            f"LEFT JOIN {self.reference_relation(check)} AS {PREPARED_RIGHT}\n"
                            f"ON {self.reference_condition(check, left, PREPARED_RIGHT)})")
        return f"{relation} AS _sdpx_prepared"

    # -- what each dataset keeps (SQL text) ---------------------------------------------
    def target_condition(self) -> Optional[str]:
        """The target's filter, or None when every record is written unchecked."""
        if not self.rules.of(Action.DROP) and not self._stopping():
            return None
        return self.guarded(self.kept(in_filter=True))

    def quarantine_condition(self) -> str:
        """The quarantine's filter: dropped records; fail rules checked."""
        return self.guarded(f"NOT {self.kept()}")

    def quarantine_columns(self) -> list[str]:
        """The quarantine's columns: the record's, then ``_failed_expectations``, the
        record's key and the update that quarantined it (docs/semantics.md#quarantine)."""
        record = RECORD_COLUMN if self.rules.has_dataset_checks else "struct(*)"
        update = self.update
        return [self.output_columns(),
                f"{self.failed_names()} AS {FAILED_EXPECTATIONS_COLUMN}",
                f"{record_key(record)} AS {QUARANTINE_KEY_COLUMN}",
                f"{update.id_sql() if update else 'CAST(NULL AS STRING)'}"
                f" AS {QUARANTINE_UPDATE_COLUMN}",
                f"{update.time_sql() if update else 'CAST(NULL AS TIMESTAMP)'}"
                f" AS {QUARANTINE_TIME_COLUMN}"]

    def metrics_condition(self) -> Optional[str]:
        """The filter of the records a materialized view's metrics count: None, or
        the fail check (a violated fail rule raises)."""
        return self.guarded("true") if self._stopping() else None

    def _logged(self) -> list[tuple[int, Expectation]]:
        """The rules a batch log counts and ``_failed_expectations`` names (warn and drop,
        and fail with a tolerance: a violated fail rule without one stops the flow), with
        their position among the dataset's expectations."""
        return [(i, e) for i, e in enumerate(self.rules.expectations)
                if not e.stops_at_first and e.whole is None]

    # -- rules on the dataset as a whole (docs/row-count-rules.md, aggregate-rules.md) ----
    def whole_verdict(self, expectation: Expectation, count: str) -> str:
        """SQL over one group of the records checked (an aggregate context): TRUE when
        ``expectation``, a rule on the dataset as a whole, holds; never NULL (an aggregate
        expression that is NULL follows the NULL policy). ``count`` is the SQL of the
        records checked (BIGINT)."""
        whole = expectation.whole
        if isinstance(whole, RowCount):
            return whole.verdict_sql(count)
        assert whole is not None
        return f"coalesce({_embedded(whole.expression)}, {self._null_result})"

    @staticmethod
    def whole_observed(expectation: Expectation, count: str) -> str:
        """SQL (STRING) of what a rule on the dataset as a whole observed: the record count
        for a row count, the expression's value (``true``, ``false`` or NULL) for an
        aggregate."""
        whole = expectation.whole
        if isinstance(whole, RowCount):
            return f"CAST({count} AS STRING)"
        assert whole is not None
        return f"CAST({_embedded(whole.expression)} AS STRING)"

    def _failed_count(self, i: int, e: Expectation, count: str) -> str:
        """SQL of one rule's ``failed`` entry in one-row counts: its violations, or for a
        rule on the dataset as a whole ``count`` when it fails, else 0."""
        if e.whole is None:
            return f"count_if({self.violates(e)})"
        return (f"CASE WHEN {self.whole_verdict(e, count)} THEN CAST(0 AS BIGINT) "
                f"ELSE CAST({count} AS BIGINT) END")

    def _outcome(self, count: str) -> str:
        """The one-row counts' ``outcome`` array (with rules on the dataset as a whole):
        per rule, ``(observed STRING, violated BOOLEAN)``, both NULL for a record rule."""
        return "array(" + ", ".join(
            (f"named_struct('observed', {self.whole_observed(e, count)}, "
             f"'violated', NOT {self.whole_verdict(e, count)})") if e.whole is not None
            else "named_struct('observed', CAST(NULL AS STRING), "
                 "'violated', CAST(NULL AS BOOLEAN))"
            for e in self.rules.expectations) + ") AS outcome"

    def _whole_guarded(self) -> list[tuple[int, Expectation]]:
        """The fail rules on the dataset as a whole, with their position: a violated one
        fails the flow before any record is written."""
        return [(i, e) for i, e in enumerate(self.rules.expectations)
                if e.whole is not None and e.action is Action.FAIL]

    # -- tolerances (docs/thresholds.md) -------------------------------------------------
    def _tolerance_guarded(self) -> list[tuple[int, Expectation]]:
        """The fail and drop rules with a tolerance, with their position: exceeding one
        fails the flow."""
        return [(i, e) for i, e in enumerate(self.rules.expectations) if e.guarded]

    def needs_tolerance_guard(self) -> bool:
        """True when the records may be written only after the guard's check: a fail or
        drop rule with a tolerance, or a fail rule on the dataset as a whole."""
        return bool(self._tolerance_guarded()) or bool(self._whole_guarded())

    def tolerance_counts(self) -> list[str]:
        """The one-row counts the guard's check reads: the records checked
        (``_sdpx_total``), the violations of each guarded rule (``_sdpx_failed_<i>``), and
        per fail rule on the dataset as a whole its verdict (``_sdpx_ok_<i>``) and what
        it observed (``_sdpx_obs_<i>``)."""
        return ["count(1) AS _sdpx_total",
                *(f"count_if({self.violates(e)}) AS _sdpx_failed_{i}"
                  for i, e in self._tolerance_guarded()),
                *(part for i, e in self._whole_guarded() for part in (
                    f"{self.whole_verdict(e, 'count(1)')} AS _sdpx_ok_{i}",
                    f"{self.whole_observed(e, 'count(1)')} AS _sdpx_obs_{i}"))]

    def tolerance_check(self, failed: Callable[[int], str], total: str,
                        holds: Optional[Callable[[int], str]] = None,
                        observed: Optional[Callable[[int], str]] = None) -> str:
        """TRUE, or ``raise_error`` with ``[EXPECTATION_TOLERANCE_EXCEEDED]`` naming every
        guarded rule over its tolerance, else with ``[EXPECTATION_DATASET_RULE_FAILED]``
        naming every fail rule on the dataset as a whole that does not hold, from one row
        of counts: ``failed(i)`` is the SQL of rule ``i``'s violations, ``total`` of the
        records checked, ``holds(i)`` and ``observed(i)`` a whole rule's verdict and
        observed value (default: the columns of :meth:`tolerance_counts`)."""
        holds = holds or (lambda i: f"_sdpx_ok_{i}")
        observed = observed or (lambda i: f"_sdpx_obs_{i}")
        checks = []
        for i, e in self._tolerance_guarded():
            assert e.max_failed is not None
            checks.append((e.max_failed.exceeded_sql(failed(i), total), e.name, failed(i),
                           e.max_failed.text))
        wholes = [(f"NOT {holds(i)}", e.name, observed(i), e.whole)
                  for i, e in self._whole_guarded()]
        if not checks and not wholes:
            return "true"
        cases = []
        if checks:
            message = violation.tolerance_message_sql(self.rules.dataset, checks, total)
            exceeded = _any([condition for condition, _, _, _ in checks])
            cases.append(f"WHEN {exceeded} THEN raise_error({message})")
        if wholes:
            message = violation.dataset_rule_message_sql(self.rules.dataset, [
                (condition, name, value, _expected(whole))
                for condition, name, value, whole in wholes])
            failed_any = _any([condition for condition, _, _, _ in wholes])
            cases.append(f"WHEN {failed_any} THEN raise_error({message})")
        return f"CASE {' '.join(cases)} ELSE true END"

    def tolerance_guard_column(self) -> str:
        """The one column of the guard over :meth:`tolerance_counts`: ``_sdpx_ok``."""
        check = self.tolerance_check(lambda i: f"_sdpx_failed_{i}", "_sdpx_total")
        return f"{check} AS _sdpx_ok"

    def counts_condition(self) -> Optional[str]:
        """The filter of the one-row ``(total, dropped, failed[])`` counts of a
        materialized view's metrics: the tolerance check (a flow over its tolerance writes
        no metrics), or None."""
        if not self.needs_tolerance_guard():
            return None
        return self.tolerance_check(lambda i: f"failed[{i}]", "total",
                                    lambda i: f"NOT outcome[{i}].violated",
                                    lambda i: f"outcome[{i}].observed")

    def tolerance_guarded_select(self, source: str) -> str:
        """The relation of ``source``'s records, each written only if no guarded rule
        exceeds its tolerance (a one-row guard cross-joined to them); ``source``
        itself when there is nothing to guard."""
        if not self.needs_tolerance_guard():
            return source
        return (f"(SELECT {GUARD_RECORDS}.* FROM (SELECT * FROM {source}) AS {GUARD_RECORDS}\n"
                f"CROSS JOIN (SELECT {self.tolerance_guard_column()}\n"
                f"FROM (SELECT {', '.join(self.tolerance_counts())}\nFROM {source})"
                f" AS _sdpx_counts) AS {GUARD_ROW}\n"
                f"WHERE {GUARD_ROW}._sdpx_ok) AS _sdpx_guarded")

    def batch_log_inputs(self) -> list[str]:
        """Per record, what a streaming table's batch log counts: the micro-batch's time
        (``current_timestamp()`` is the batch's timestamp in a streaming query), whether
        the record is dropped (a violated fail rule raises here too), and per warn and
        drop rule whether the record violates it."""
        return [
            f"current_timestamp() AS {BATCH_TIME_COLUMN}",
            f"{self.guarded(f'NOT {self.kept()}')} AS _sdpx_dropped",
            *(f"{self.violates(e)} AS _sdpx_failed_{i}" for i, e in self._logged()),
        ]

    def _failed_map(self, count: str) -> str:
        """The batch log's ``_failed`` map: per warn and drop rule (by name), ``count``
        formatted with the rule's input column (``_sdpx_failed_<i>``)."""
        logged = self._logged()
        if not logged:
            return "CAST(map() AS MAP<STRING, BIGINT>)"
        names = ", ".join(sql_string(e.name) for _, e in logged)
        counts = ", ".join(count.format(f"_sdpx_failed_{i}") for i, _ in logged)
        return f"map_from_arrays(array({names}), array({counts}))"

    def batch_log_counts(self) -> list[str]:
        """The aggregates of one micro-batch's :meth:`batch_log_inputs`, grouped by
        ``_batch_time``: how many records, how many dropped, and per rule (by name) how
        many violated it."""
        return [
            f"count(1) AS {BATCH_RECORDS_COLUMN}",
            f"count_if(_sdpx_dropped) AS {BATCH_DROPPED_COLUMN}",
            f"{self._failed_map('count_if({})')} AS {BATCH_FAILED_COLUMN}",
        ]

    def batch_log_record_counts(self) -> list[str]:
        """The counts of one record's :meth:`batch_log_inputs`, with the columns and types
        of :meth:`batch_log_counts`: one record, 1 or 0 dropped, 1 or 0 per rule."""
        return [
            f"CAST(1 AS BIGINT) AS {BATCH_RECORDS_COLUMN}",
            f"CAST(_sdpx_dropped AS BIGINT) AS {BATCH_DROPPED_COLUMN}",
            f"{self._failed_map('CAST({} AS BIGINT)')} AS {BATCH_FAILED_COLUMN}",
        ]

    def counts_from_query(self) -> list[str]:
        """The one-row counts ``(total, dropped, failed[])`` over the query's records."""
        return [
            "count(1) AS total",
            f"count_if(NOT {self.kept()}) AS dropped",
            "array(" + ", ".join(self._failed_count(i, e, "count(1)")
                                 for i, e in enumerate(self.rules.expectations)) + ") AS failed",
            *([self._outcome("count(1)")] if self.rules.has_whole_checks else []),
        ]

    def counts_from_batch_log(self) -> list[str]:
        """The one-row counts ``(total, dropped, failed[])`` summed over a batch log (a
        rule the log does not name, a fail rule or a rule added later, counts 0 there)."""
        logged = {i for i, _ in self._logged()}
        total = f"coalesce(sum({BATCH_RECORDS_COLUMN}), 0)"
        failed = [f"coalesce(sum(try_element_at({BATCH_FAILED_COLUMN}, {sql_string(e.name)})), 0)"
                  if i in logged else self._failed_count(i, e, total) if e.whole is not None
                  else "CAST(0 AS BIGINT)"
                  for i, e in enumerate(self.rules.expectations)]
        return [
            f"{total} AS total",
            f"coalesce(sum({BATCH_DROPPED_COLUMN}), 0) AS dropped",
            f"array({', '.join(failed)}) AS failed",
            *([self._outcome(total)] if self.rules.has_whole_checks else []),
        ]

    @staticmethod
    def count_named(expectation: Expectation) -> str:
        """How many records name ``expectation`` in ``_failed_expectations`` (a
        quarantine's), the one reading of that column back."""
        return (f"count_if(array_contains({FAILED_EXPECTATIONS_COLUMN}, "
                f"{sql_string(expectation.name)}))")

    def counts_from_kept(self) -> list[str]:
        """The one-row counts of the records a materialized view kept (read back from
        the view itself): how many, and per rule how many violate it. Only warn rules and
        fail rules with a tolerance are evaluated: a kept record passed every drop rule
        and every fail rule without tolerance when it was checked, so those count 0 here
        by definition (not by evaluating them a second time)."""
        return ["count(1) AS _sdpx_kept",
                *(f"count_if({self.violates(e)}) AS _sdpx_kept_{i}"
                  if e.whole is None and (e.action is Action.WARN or (
                      e.action is Action.FAIL and not e.stops_at_first))
                  else f"CAST(0 AS BIGINT) AS _sdpx_kept_{i}"
                  for i, e in enumerate(self.rules.expectations))]

    def counts_from_quarantine(self) -> list[str]:
        """The one-row counts of the records a materialized view dropped (its quarantine):
        how many, and per rule how many name it in ``_failed_expectations``."""
        return ["count(1) AS _sdpx_dropped",
                *(f"{self.count_named(e)} AS _sdpx_dropped_{i}"
                  if not e.stops_at_first and e.whole is None
                  else f"CAST(0 AS BIGINT) AS _sdpx_dropped_{i}"
                  for i, e in enumerate(self.rules.expectations))]

    def counts_from_companions(self) -> list[str]:
        """The one-row counts ``(total, dropped, failed[])`` from the joined one-row
        counts of :meth:`counts_from_kept` and :meth:`counts_from_quarantine`. Not for
        rules on the dataset as a whole: an aggregate is not known from the counts of what
        was written, so such a dataset's metrics count the query
        (:func:`sdp_expect.core.planner.plan_dataset`)."""
        if self.rules.has_whole_checks:
            raise ValueError(f"{self.rules.dataset!r} has rules on the dataset as a whole: "
                             "its metrics are counted from the query")
        return [
            "_sdpx_kept + _sdpx_dropped AS total",
            "_sdpx_dropped AS dropped",
            "array(" + ", ".join(f"_sdpx_kept_{i} + _sdpx_dropped_{i}"
                                 for i in range(len(self.rules.expectations))) + ") AS failed",
        ]

    def metrics_rows(self) -> str:
        """One row per expectation from the one-row ``(total, dropped, failed[])`` counts.

        The rows are generated from the counts' row itself rather than joined
        with a table of rules: a join lets Catalyst's constraint propagation grow
        with the square of the rules. The rules' names, actions and constraints
        are one constant array (folded into a single literal) zipped with the
        ``failed`` counts: one struct expression per rule instead would make the
        generated Java code of the plan grow beyond the JVM's 64 KB method limit
        at a few hundred rules (Spark then logs a compile error and falls back).
        """
        tolerances = self.rules.has_tolerances
        wholes = self.rules.has_whole_checks
        rules = ", ".join(
            f"named_struct('rule_name', {sql_string(e.name)}, "
            f"'rule_action', {sql_string(e.action.value)}, "
            f"'rule_constraint', {sql_string(e.constraint)}"
            + (self._tolerance_fields(e) if tolerances else "") + ")"
            for e in self.rules.expectations
        )
        # With rules on the dataset as a whole, the counts have one more array (outcome):
        # the rules are first zipped with it, then with the failed counts.
        zipped = (f"zip_with(array({rules}), outcome, (_sdpx_r, _sdpx_o) -> "
                  "named_struct('rule', _sdpx_r, 'outcome', _sdpx_o))" if wholes
                  else f"array({rules})")
        rule = "_sdpx_rule.rule" if wholes else "_sdpx_rule"
        return (
            f"inline(zip_with({zipped}, failed, (_sdpx_rule, _sdpx_failed) -> "
            f"named_struct('dataset', {sql_string(self.rules.dataset)}, "
            f"'expectation', {rule}.rule_name, "
            f"'action', {rule}.rule_action, "
            f"'constraint', {rule}.rule_constraint, "
            "'passed_records', CAST(total AS BIGINT) - CAST(_sdpx_failed AS BIGINT), "
            "'failed_records', CAST(_sdpx_failed AS BIGINT), "
            "'total_records', CAST(total AS BIGINT), "
            "'dropped_records', CAST(dropped AS BIGINT)"
            + (f", 'max_failed', {rule}.rule_max_failed, "
               f"'tolerance_exceeded', CASE WHEN {rule}.rule_max_failed IS NULL THEN NULL "
               f"WHEN {rule}.rule_fraction THEN "
               + fraction_exceeded_sql("_sdpx_failed", "total", f"{rule}.rule_numerator",
                                       f"{rule}.rule_denominator")
               + " ELSE " + count_exceeded_sql("CAST(_sdpx_failed AS BIGINT)",
                                               f"{rule}.rule_numerator") + " END"
               if tolerances else "")
            + (", 'observed', _sdpx_rule.outcome.observed, "
               "'violated', _sdpx_rule.outcome.violated" if wholes else "")
            + ")))"
        )

    @staticmethod
    def _tolerance_fields(expectation: Expectation) -> str:
        """The tolerance of one rule in :meth:`metrics_rows`' constant array: as written,
        and the numbers of :meth:`~sdp_expect.core.model.Tolerance.exceeded_sql` (NULL and 0
        without a tolerance)."""
        tolerance = expectation.max_failed
        if tolerance is None:
            return (", 'rule_max_failed', CAST(NULL AS STRING), 'rule_fraction', false, "
                    "'rule_numerator', CAST(0 AS BIGINT), 'rule_denominator', CAST(1 AS BIGINT)")
        return (f", 'rule_max_failed', {sql_string(tolerance.text)}, "
                f"'rule_fraction', {'true' if tolerance.fraction else 'false'}, "
                f"'rule_numerator', CAST({tolerance.numerator} AS BIGINT), "
                f"'rule_denominator', CAST({tolerance.denominator} AS BIGINT)")

    def rule_check_column(self, expectation: Expectation) -> str:
        """The one column of a rule's check view: its constraint alone, as written.

        sdp-expect registers a check view per rule (:func:`sdp_expect.core.planner.rule_checks`):
        SDP analyses it (dry-run and run) but never executes it, and a constraint that
        Spark cannot resolve fails exactly that view's flow, which names the rule. A key
        rule's is its column of the prepared relation of that rule alone (an unknown
        column or referenced dataset fails this view).
        """
        if expectation.check is not None:
            return f"{self.key_column(expectation)} AS _sdpx_check"
        if expectation.whole is not None:
            return f"{self.whole_verdict(expectation, 'count(1)')} AS _sdpx_check"
        return f"{_embedded(expectation.constraint)} AS _sdpx_check"

    # -- SELECT statements (SQL translation) -------------------------------------------
    def rule_check_select(self, source: str, expectation: Optional[Expectation]) -> str:
        """``SELECT`` of a check view from the relation ``source`` (the query alone
        when ``expectation`` is None)."""
        if expectation is None:
            return f"SELECT * FROM {source}"
        return (f"SELECT {self.rule_check_column(expectation)} "
                f"FROM {self.prepared(source, expectation)}")

    def target_select(self, source: str) -> str:
        """``SELECT`` of the target's records from the relation ``source``."""
        source = self.prepared(source)
        condition = self.target_condition()
        where = "" if condition is None else f"\nWHERE {condition}"
        return (f"SELECT {self.output_columns()} FROM {self.tolerance_guarded_select(source)}"
                f"{where}")

    def quarantine_select(self, source: str) -> str:
        """``SELECT`` of the quarantine's records from the relation ``source``."""
        source = self.prepared(source)
        return (f"SELECT {', '.join(self.quarantine_columns())}\n"
                f"FROM {self.tolerance_guarded_select(source)}\n"
                f"WHERE {self.quarantine_condition()}")

    def batch_input_select(self, source: str) -> str:
        """``SELECT`` of a batch log's per-record inputs (:meth:`batch_log_inputs`) from
        the relation ``source`` (the flow's query): a temporary view that the batch log's
        flow reads as a stream."""
        return f"SELECT {', '.join(self.batch_log_inputs())}\nFROM {self.prepared(source)}"

    def batch_log_select(self, source: str) -> str:
        """``SELECT`` of a streaming table's batch log from the relation ``source`` (a
        stream of :meth:`batch_input_select`): one row per micro-batch, grouped on the
        batch's time under a watermark of no delay, so that Spark writes each batch's row
        (append mode) as soon as the next batch, or the batch without data that ends a
        triggered update, moves the watermark past it."""
        return (f"SELECT {BATCH_TIME_COLUMN}, {', '.join(self.batch_log_counts())}\n"
                f"FROM (SELECT * FROM {source})\n"
                f"WATERMARK {BATCH_TIME_COLUMN} DELAY OF INTERVAL 0 SECONDS AS _sdpx_batch\n"
                f"GROUP BY {BATCH_TIME_COLUMN}")

    def batch_log_record_select(self, source: str) -> str:
        """``SELECT`` of a streaming table's batch log from the relation ``source``, one
        row per record (Spark 4.1, whose Hive session cannot resolve the ``WATERMARK`` of
        :meth:`batch_log_select`, docs/semantics.md#the-batch-log): the same columns, so
        that the metrics sum it alike."""
        return (f"SELECT {BATCH_TIME_COLUMN}, {', '.join(self.batch_log_record_counts())}\n"
                f"FROM {source}")

    def metrics_select_from_query(self, source: str) -> str:
        """``SELECT`` of a materialized view's metrics from the relation ``source``."""
        source = self.prepared(source)
        condition = self.metrics_condition()
        where = "" if condition is None else f"\nWHERE {condition}"
        counts = ", ".join(self.counts_from_query())
        guard = self.counts_condition()
        checked = "" if guard is None else f"\nWHERE {guard}"
        return (f"SELECT {self.metrics_rows()}\n"
                f"FROM (SELECT {counts}\nFROM {source}{where}) AS _sdpx_counts{checked}")

    def metrics_select_from_companions(self, kept: str, quarantine: str) -> str:
        """``SELECT`` of a materialized view's metrics from what it wrote: the view
        ``kept`` and its quarantine ``quarantine`` (docs/performance.md)."""
        return (f"SELECT {self.metrics_rows()}\n"
                f"FROM (SELECT {', '.join(self.counts_from_companions())}\n"
                f"FROM (SELECT {', '.join(self.counts_from_kept())}\nFROM {kept}) AS _sdpx_k\n"
                f"CROSS JOIN (SELECT {', '.join(self.counts_from_quarantine())}\n"
                f"FROM {quarantine}) AS _sdpx_q) AS _sdpx_counts")

    def metrics_select_from_batch_log(self, log: str) -> str:
        """``SELECT`` of a streaming table's metrics from its batch log ``log``."""
        counts = ", ".join(self.counts_from_batch_log())
        return f"SELECT {self.metrics_rows()}\nFROM (SELECT {counts}\nFROM {log}) AS _sdpx_counts"
