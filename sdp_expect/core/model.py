"""The expectation model: what every front end builds and the compiler reads.

Python decorators, Databricks SQL ``CONSTRAINT ... EXPECT`` clauses and rule
files all produce :class:`Expectation` values and collect them per dataset in
:class:`DatasetRules`. Validation of names, constraints and actions lives here
and nowhere else.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.names import quarantine_name
from sdp_expect.core.constraint_check import check_constraint

__all__ = [
    "count_exceeded_sql",
    "fraction_exceeded_sql",
    "DECORATORS",
    "GROUP_DECORATORS",
    "Action",
    "Aggregate",
    "DatasetCheck",
    "DatasetRules",
    "Expectation",
    "QuarantineSpec",
    "Reference",
    "RowCount",
    "RuleNames",
    "Tolerance",
    "UniqueKey",
    "WholeCheck",
    "check_whole_rule",
    "either",
    "make_expectation",
    "parse_action",
    "parse_tolerance",
]


class DatasetKind(str, enum.Enum):
    """The kind of dataset expectations are attached to."""

    MATERIALIZED_VIEW = "materialized view"
    STREAMING_TABLE = "streaming table"
    TEMPORARY_VIEW = "temporary view"


class Action(str, enum.Enum):
    """What happens to a record that violates an expectation.

    The one definition of the action words (``warn``, ``drop``, ``fail``) and of the
    decorator names made from them (:attr:`decorator`, :attr:`group_decorator`): the
    front ends and tools read them from here.
    """

    WARN = "warn"
    """The record is written to the target and counted."""
    DROP = "drop"
    """The record is not written to the target; it is counted (and quarantined if on)."""
    FAIL = "fail"
    """The flow fails; nothing of this update is written to the target."""

    def __str__(self) -> str:
        return self.value

    @property
    def decorator(self) -> str:
        """The decorator of one rule: ``expect``, ``expect_or_drop``, ``expect_or_fail``
        (also a rule file's ``type`` and group)."""
        return _decorator("expect", self)

    @property
    def group_decorator(self) -> str:
        """The decorator of several rules, also a keyword of ``create_streaming_table``
        and a rule file's group: ``expect_all``, ``expect_all_or_drop``, ``expect_all_or_fail``."""
        return _decorator("expect_all", self)


def _decorator(stem: str, action: Action) -> str:
    # Databricks' naming: a warn rule is the bare stem, the others say their action.
    return stem if action is Action.WARN else f"{stem}_or_{action.value}"


DECORATORS: dict[str, Action] = {action.decorator: action for action in Action}
"""``expect``, ``expect_or_drop``, ``expect_or_fail`` and the action of each."""

GROUP_DECORATORS: dict[str, Action] = {action.group_decorator: action for action in Action}
"""``expect_all``, ``expect_all_or_drop``, ``expect_all_or_fail`` and the action of each."""


def either(words: Iterable[str]) -> str:
    """The choices a message offers: ``'warn, drop or fail'``."""
    listed = [str(word) for word in words]
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


def parse_action(value: object, *, dataset: Optional[str] = None,
                 expectation: Optional[str] = None,
                 location: Optional[Location] = None) -> Action:
    """Turn ``'warn' | 'drop' | 'fail'`` (any case) or an :class:`Action` into an Action.

    :raises SdpExpectError: SDPX-VAL-006 for anything else.
    """
    if isinstance(value, Action):
        return value
    if isinstance(value, str):
        try:
            return Action(value.strip().lower())
        except ValueError:
            pass
    raise SdpExpectError(
        "SDPX-VAL-006",
        f"unknown action {value!r}",
        dataset=dataset,
        expectation=expectation,
        location=location,
    )


MAX_COUNT = 2**63 - 1
"""The largest count a tolerance can be: Spark counts records in a BIGINT."""

PERCENT_DECIMALS = 6
"""At most this many digits after the point in a percentage (``"0.000001%"``): the
fraction's denominator stays at most 10^8, so that the exact comparison of
:meth:`Tolerance.exceeded_sql` fits Spark's DECIMAL(38, 0) for any BIGINT count."""

_COUNT = re.compile(r"[0-9]+")
_PERCENT = re.compile(r"([0-9]+)(?:\.([0-9]+))?%")


@dataclass(frozen=True)
class Tolerance:
    """How many of the records checked may violate a rule (``max_failed``,
    docs/thresholds.md).

    Either a count (:attr:`fraction` False: at most :attr:`numerator` violations) or a
    fraction of the records checked (at most ``numerator / denominator`` of them).

    :param text: The tolerance as shown (metrics, messages): ``"10"`` or ``"0.5%"``.
    :param numerator: The count, or the fraction's numerator.
    :param denominator: 1 for a count; the fraction's denominator (a power of ten).
    :param fraction: True for a share of the records checked.
    """

    text: str
    numerator: int
    denominator: int = 1
    fraction: bool = False

    def exceeded(self, failed: int, total: int) -> bool:
        """True when ``failed`` violations of ``total`` records checked are more than the
        tolerance allows (exactly at it is within it). The Python oracle of
        :meth:`exceeded_sql`."""
        if not self.fraction:
            return failed > self.numerator
        return failed * self.denominator > total * self.numerator

    def exceeded_sql(self, failed: str, total: str) -> str:
        """The SQL of :meth:`exceeded` over the BIGINT expressions ``failed`` and ``total``:
        integers only (no floating point), in DECIMAL(38, 0) so that no product overflows."""
        if not self.fraction:
            return count_exceeded_sql(failed, str(self.numerator))
        return fraction_exceeded_sql(failed, total, str(self.numerator), str(self.denominator))


def count_exceeded_sql(failed: str, count: str) -> str:
    """SQL: ``failed`` violations exceed a tolerance of ``count`` records (SQL operands)."""
    return f"({failed} > {count})"


def fraction_exceeded_sql(failed: str, total: str, numerator: str, denominator: str) -> str:
    """SQL: ``failed`` of ``total`` records exceed the fraction ``numerator/denominator``
    (SQL operands), in DECIMAL(38, 0) integers: no floating point, no overflow."""
    return (f"(CAST({failed} AS DECIMAL(38,0)) * {denominator} > "
            f"CAST({total} AS DECIMAL(38,0)) * {numerator})")


def parse_tolerance(value: object, *, dataset: Optional[str] = None,
                    expectation: Optional[str] = None,
                    location: Optional[Location] = None) -> Optional[Tolerance]:
    """Turn a ``max_failed`` value into a :class:`Tolerance` (None stays None).

    A count is a whole number (``10``, ``10.0``) or digits (``"10"``); a fraction is a number of
    percent (``"1%"``, ``"0.5%"``), from 0 to 100, with at most
    :data:`PERCENT_DECIMALS` digits after the point. Text is taken as written: no
    spaces, no sign.

    :raises SdpExpectError: SDPX-VAL-012 for anything that is not a count or a
        percentage, SDPX-VAL-013 for a percentage above 100.
    """
    if value is None:
        return None

    def refuse(detail: str, code: str = "SDPX-VAL-012") -> SdpExpectError:
        return SdpExpectError(code, detail, dataset=dataset, expectation=expectation,
                              location=location)

    if isinstance(value, float) and value.is_integer():
        # A number without a fraction is a count, as JSON and YAML read 10.0 (and as a
        # JSON Schema's integer type does).
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        shown = f"{type(value).__name__} {value!r}"
        if isinstance(value, float) or type(value).__name__ == "Decimal":
            raise refuse(f"max_failed={value!r} is a {type(value).__name__}: a count or "
                         "a fraction? Write a count as a whole number (max_failed=10) and a "
                         "fraction as text with % (max_failed='1%')")
        raise refuse(f"max_failed must be a count or a percentage, got {shown}")
    text = str(value)
    if _COUNT.fullmatch(text):
        count = int(text)
        if count > MAX_COUNT:
            raise refuse(f"max_failed={value!r} is more than a BIGINT counts ({MAX_COUNT})")
        return Tolerance(str(count), count)
    if isinstance(value, int):  # negative
        raise refuse(f"max_failed={value!r} is negative")
    percent = _PERCENT.fullmatch(text)
    if percent is None:
        raise refuse(f"max_failed={value!r} is neither a count (digits, e.g. '10') nor a "
                     "percentage (a number followed by %, e.g. '1%' or '0.5%')")
    whole, decimals = percent.group(1), (percent.group(2) or "")
    if len(decimals) > PERCENT_DECIMALS:
        raise refuse(f"max_failed={value!r} has more than {PERCENT_DECIMALS} digits after "
                     "the point")
    numerator = int(whole + decimals)
    denominator = 100 * 10 ** len(decimals)
    if numerator > denominator:
        raise refuse(f"max_failed={value!r} is more than 100% of the records checked",
                     "SDPX-VAL-013")
    shown = (whole.lstrip("0") or "0") + (f".{decimals}" if decimals else "") + "%"
    return Tolerance(shown, numerator, denominator, fraction=True)


def _quoted(name: str) -> str:
    """A column or table name as a SQL identifier: backquoted, backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


def table_identifier(name: str) -> str:
    """A dataset or table name as SQL: dotted parts as they are when each is a plain
    identifier (``customers``, ``cat.db.customers``), else quoted as one part, as the
    Python API's ``spark.read.table`` reads it."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        return name
    return _quoted(name)


@dataclass(frozen=True)
class UniqueKey:
    """A unique-key rule (docs/dataset-rules.md#unique-key): a record violates it when
    another record of the same update's query has the same key, all of its columns
    non-NULL.

    :param columns: The key's columns, by name (one or more).
    """

    columns: tuple[str, ...]

    @property
    def text(self) -> str:
        """The rule as the metrics' ``constraint`` column shows it: ``UNIQUE (a, b)``."""
        return f"UNIQUE ({', '.join(self.columns)})"

    def validate(self, *, dataset: Optional[str] = None, expectation: Optional[str] = None,
                 location: Optional[Location] = None) -> None:
        """SDPX-VAL-014 for no column, SDPX-VAL-015 for a column that is not a non-empty
        string."""
        _check_columns(self.columns, "unique", dataset, expectation, location)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Reference:
    """A reference (foreign key) rule (docs/dataset-rules.md#reference): a record violates
    it when all its key columns are non-NULL and no record of :attr:`dataset` has that
    key in :attr:`to_columns`.

    :param dataset: The referenced dataset: a dataset of the pipeline or any table.
    :param columns: The record's key columns (one or more).
    :param to_columns: The referenced dataset's columns, one per key column, in order.
    """

    dataset: str
    columns: tuple[str, ...]
    to_columns: tuple[str, ...]

    @property
    def text(self) -> str:
        """The rule as the metrics' ``constraint`` column shows it:
        ``REFERENCES customers (id)``, with ``FOREIGN KEY (a)`` first when the record's
        columns have other names."""
        to = f"REFERENCES {self.dataset} ({', '.join(self.to_columns)})"
        if tuple(self.columns) == tuple(self.to_columns):
            return to
        return f"FOREIGN KEY ({', '.join(self.columns)}) {to}"

    def validate(self, *, dataset: Optional[str] = None, expectation: Optional[str] = None,
                 location: Optional[Location] = None) -> None:
        """SDPX-VAL-015 for a dataset or column that is not a non-empty string,
        SDPX-VAL-014 for no column, SDPX-VAL-016 for ``to`` columns that do not pair
        with the key's."""
        if not isinstance(self.dataset, str) or not self.dataset.strip():
            raise SdpExpectError(
                "SDPX-VAL-015",
                f"references(): the referenced dataset must be a non-empty string, got "
                f"{type(self.dataset).__name__} {self.dataset!r}",
                dataset=dataset, expectation=expectation, location=location)
        _check_columns(self.columns, "references", dataset, expectation, location)
        _check_columns(self.to_columns, "references (to)", dataset, expectation, location)
        if len(self.to_columns) != len(self.columns):
            raise SdpExpectError(
                "SDPX-VAL-016",
                f"references({self.dataset!r}): {len(self.columns)} key column(s) "
                f"{list(self.columns)} but {len(self.to_columns)} referenced column(s) "
                f"{list(self.to_columns)}",
                dataset=dataset, expectation=expectation, location=location)

    def __str__(self) -> str:
        return self.text


DatasetCheck = Union[UniqueKey, Reference]
"""A record-level rule over the whole dataset (a key), in place of a constraint."""


@dataclass(frozen=True)
class RowCount:
    """A row-count rule (docs/row-count-rules.md): the dataset's records checked number
    from :attr:`min` to :attr:`max` (both included; None: unbounded on that side).

    :param min: The fewest records allowed, or None.
    :param max: The most records allowed, or None.
    """

    min: Optional[int] = None
    max: Optional[int] = None

    @property
    def text(self) -> str:
        """The rule as the metrics' ``constraint`` column shows it:
        ``ROW COUNT BETWEEN 1 AND 10``, ``ROW COUNT >= 1``, ``ROW COUNT <= 10``."""
        if self.min is not None and self.max is not None:
            return f"ROW COUNT BETWEEN {self.min} AND {self.max}"
        if self.min is not None:
            return f"ROW COUNT >= {self.min}"
        return f"ROW COUNT <= {self.max}"

    @property
    def bound_text(self) -> str:
        """The bounds as the failure message says them: ``at least 1 and at most 10``."""
        said = ([] if self.min is None else [f"at least {self.min}"]) + (
            [] if self.max is None else [f"at most {self.max}"])
        return " and ".join(said)

    def holds(self, count: int) -> bool:
        """True when ``count`` records are within the bounds: the Python oracle of
        :meth:`verdict_sql`."""
        return ((self.min is None or count >= self.min)
                and (self.max is None or count <= self.max))

    def verdict_sql(self, count: str) -> str:
        """SQL: TRUE when the BIGINT ``count`` is within the bounds (never NULL)."""
        terms = ([] if self.min is None else [f"{count} >= {self.min}"]) + (
            [] if self.max is None else [f"{count} <= {self.max}"])
        return "(" + " AND ".join(terms) + ")"

    def validate(self, *, dataset: Optional[str] = None, expectation: Optional[str] = None,
                 location: Optional[Location] = None) -> None:
        """SDPX-VAL-018 for no bound or a bound that is not a whole number from 0 to
        2^63 - 1, SDPX-VAL-020 for ``min`` above ``max``."""
        def refuse(detail: str) -> SdpExpectError:
            return SdpExpectError("SDPX-VAL-018", f"row_count(): {detail}", dataset=dataset,
                                  expectation=expectation, location=location)

        if self.min is None and self.max is None:
            raise refuse("no bound: give min, max or both")
        for label, bound in (("min", self.min), ("max", self.max)):
            if bound is None:
                continue
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise refuse(f"{label} must be a whole number, got "
                             f"{type(bound).__name__} {bound!r}")
            if bound < 0 or bound > MAX_COUNT:
                raise refuse(f"{label}={bound} is not from 0 to {MAX_COUNT}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise SdpExpectError(
                "SDPX-VAL-020", f"row_count(): min={self.min} is above max={self.max}: no "
                "count is within them", dataset=dataset, expectation=expectation,
                location=location)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Aggregate:
    """An aggregate rule (docs/aggregate-rules.md): a boolean SQL expression over
    aggregates of the dataset's records checked, such as ``sum(amount) > 0``.

    :param expression: The expression, as written.
    """

    expression: str

    @property
    def text(self) -> str:
        """The rule as the metrics' ``constraint`` column shows it: the expression."""
        return self.expression

    def validate(self, *, dataset: Optional[str] = None, expectation: Optional[str] = None,
                 location: Optional[Location] = None) -> None:
        """SDPX-VAL-008 for an expression that is not text, SDPX-VAL-001 for an empty one,
        SDPX-VAL-011 when not well formed, SDPX-VAL-010 for a window, subquery, generator
        or non-deterministic function, SDPX-VAL-019 without any aggregate function."""
        if not isinstance(self.expression, str):
            raise SdpExpectError(
                "SDPX-VAL-008", f"aggregate(): the expression must be a string of Spark SQL, "
                f"got {type(self.expression).__name__}", dataset=dataset,
                expectation=expectation, location=location)
        if not self.expression.strip():
            raise SdpExpectError("SDPX-VAL-001", "aggregate(): the expression is empty",
                                 dataset=dataset, expectation=expectation, location=location)
        problem = check_constraint(self.expression, aggregates=True)
        if problem is not None:
            raise SdpExpectError(problem.code, f"aggregate(): {problem.message} in "
                                 f"{self.expression!r}", dataset=dataset,
                                 expectation=expectation, location=location)

    def __str__(self) -> str:
        return self.text


WholeCheck = Union[RowCount, Aggregate]
"""A rule on the dataset as a whole (one verdict per update, no record at fault), in place
of a constraint: docs/row-count-rules.md, docs/aggregate-rules.md."""


def _check_columns(columns: object, rule: str, dataset: Optional[str],
                   expectation: Optional[str], location: Optional[Location]) -> None:
    if not isinstance(columns, tuple) or not columns:
        raise SdpExpectError(
            "SDPX-VAL-014", f"{rule}() was given no key column", dataset=dataset,
            expectation=expectation, location=location)
    for column in columns:
        if not isinstance(column, str) or not column.strip():
            raise SdpExpectError(
                "SDPX-VAL-015",
                f"{rule}(): a key column must be a non-empty string, got "
                f"{type(column).__name__} {column!r}",
                dataset=dataset, expectation=expectation, location=location)


@dataclass(frozen=True)
class Expectation:
    """One data-quality rule: ``(name, constraint, action)``.

    :param name: Unique within its dataset; used in metrics, the quarantine's
        ``_failed_expectations`` and error lines.
    :param constraint: A Spark SQL boolean expression, as written by the user.
    :param action: :class:`Action` for records that violate it.
    :param place: Where it was declared, when the front end knew it: a decorator's
        file and line, a SQL file's line, a rule file's rule (``str(place)`` for people).
    :param max_failed: Its tolerance (docs/thresholds.md), None for none.
    :param check: A key rule (:class:`UniqueKey`, :class:`Reference`) judged against
        other records, docs/dataset-rules.md; :attr:`constraint` is then its text
        (``UNIQUE (order_id)``), shown in the metrics. None for a SQL rule.
    :param whole: A rule on the dataset as a whole (:class:`RowCount`,
        :class:`Aggregate`); :attr:`constraint` is then its text. None otherwise.
    """

    name: str
    constraint: str
    action: Action = Action.WARN
    place: Optional[Location] = field(default=None, compare=False)
    max_failed: Optional[Tolerance] = None
    check: Optional[DatasetCheck] = None
    whole: Optional[WholeCheck] = None

    @property
    def on_dataset(self) -> bool:
        """True for a rule on the dataset as a whole (row count, aggregate): one verdict
        per update, no record at fault."""
        return self.whole is not None

    @property
    def stops_at_first(self) -> bool:
        """True for a fail rule without tolerance: its first violating record stops the
        flow (``[EXPECTATION_VIOLATION]``). A fail rule with a tolerance is counted like a
        warn rule, and fails the flow through the tolerance's check; a fail rule on the
        dataset as a whole fails it through the same guard."""
        return self.action is Action.FAIL and self.max_failed is None and self.whole is None

    @property
    def guarded(self) -> bool:
        """True for a fail or drop rule with a tolerance: exceeding it fails the flow."""
        return self.max_failed is not None and self.action is not Action.WARN


def make_expectation(
    name: object,
    constraint: object,
    action: object = Action.WARN,
    *,
    dataset: Optional[str] = None,
    place: Optional[Location] = None,
    max_failed: object = None,
) -> Expectation:
    """Validate the three parts of an expectation (and its tolerance) and build it.

    :param name: Must be a non-empty string.
    :param constraint: Must be a non-empty string holding one boolean SQL
        expression without subqueries, aggregate, window, generator or
        non-deterministic functions, or a key rule (:class:`UniqueKey`,
        :class:`Reference`: SDPX-VAL-014, -015, -016), or a rule on the dataset as a whole
        (:class:`RowCount`: SDPX-VAL-018, -020; :class:`Aggregate`: SDPX-VAL-001, -010, -011,
        -019; either: SDPX-DEF-115 for drop, SDPX-DEF-116 for ``max_failed``).
    :param action: ``warn``, ``drop``, ``fail`` or an :class:`Action`.
    :param dataset: The dataset it belongs to, for error messages.
    :param place: Where it was declared (:attr:`Expectation.place`, and the place of
        the errors raised here).
    :param max_failed: Its tolerance as the user wrote it (:func:`parse_tolerance`).
    :raises SdpExpectError: SDPX-VAL-002, -008, -001, -006, -010, -011, -012 or -013.
    """
    label = name if isinstance(name, str) else None
    if not isinstance(name, str):
        raise SdpExpectError(
            "SDPX-VAL-008",
            f"the expectation name must be a string, got {type(name).__name__} {name!r}",
            dataset=dataset,
            location=place,
        )
    if not name.strip():
        raise SdpExpectError("SDPX-VAL-002", dataset=dataset, expectation=name, location=place)
    # The rule's shape (action, tolerance) is checked before its expression, on every kind:
    # one error is raised per rule, and a mistake of shape is one that a rule file's schema
    # also finds (tests/test_rule_schema.py), which the expression's own may not be.
    if isinstance(constraint, (UniqueKey, Reference)):
        act = parse_action(action, dataset=dataset, expectation=label, location=place)
        tolerance = parse_tolerance(max_failed, dataset=dataset, expectation=label,
                                    location=place)
        constraint.validate(dataset=dataset, expectation=label, location=place)
        return Expectation(name=name, constraint=constraint.text, action=act, place=place,
                           max_failed=tolerance, check=constraint)
    if isinstance(constraint, (RowCount, Aggregate)):
        act = parse_action(action, dataset=dataset, expectation=label, location=place)
        check_whole_rule(constraint, act, max_failed, dataset, label, place)
        constraint.validate(dataset=dataset, expectation=label, location=place)
        return Expectation(name=name, constraint=constraint.text, action=act, place=place,
                           whole=constraint)
    if not isinstance(constraint, str):
        kind = "a Python callable" if callable(constraint) else type(constraint).__name__
        raise SdpExpectError(
            "SDPX-VAL-008",
            f"the constraint must be a string of Spark SQL, got {kind}",
            dataset=dataset,
            expectation=label,
            fix="write the constraint as SQL text, e.g. 'amount >= 0', or give a key rule "
            "(dp.unique('id'), dp.references('customers', 'customer_id')); Python functions "
            "and Column objects cannot be expectations",
            location=place,
        )
    if not constraint.strip():
        raise SdpExpectError("SDPX-VAL-001", dataset=dataset, expectation=label, location=place)
    act = parse_action(action, dataset=dataset, expectation=label, location=place)
    tolerance = parse_tolerance(max_failed, dataset=dataset, expectation=label, location=place)
    problem = check_constraint(constraint)
    if problem is not None:
        raise SdpExpectError(
            problem.code,
            f"{problem.message} in constraint {constraint!r}",
            dataset=dataset,
            expectation=label,
            location=place,
        )
    return Expectation(name=name, constraint=constraint, action=act, place=place,
                       max_failed=tolerance)


def check_whole_rule(rule: WholeCheck, action: Action, max_failed: object,
                     dataset: Optional[str], expectation: Optional[str],
                     place: Optional[Location]) -> None:
    """SDPX-DEF-115 for a drop rule on the dataset as a whole (no record is at fault, so
    none can be dropped); SDPX-DEF-116 for its tolerance (it has one verdict, not a count
    of records that violate it)."""
    kind = "row count" if isinstance(rule, RowCount) else "aggregate"
    unbounded = isinstance(rule, RowCount) and rule.min is None and rule.max is None
    shown = "row_count()" if unbounded else rule.text  # checked before its bounds are
    if action is Action.DROP:
        raise SdpExpectError(
            "SDPX-DEF-115",
            f"the {kind} rule {shown} cannot drop records: it judges the dataset as a "
            "whole and puts no record at fault", dataset=dataset, expectation=expectation,
            location=place)
    if max_failed is not None:
        raise SdpExpectError(
            "SDPX-DEF-116",
            f"max_failed={max_failed!r} on the {kind} rule {shown}: a rule on the "
            "dataset as a whole has one verdict per update, not a count of failed records",
            dataset=dataset, expectation=expectation, location=place)


class RuleNames:
    """The names the rules of one scope have so far, and where each was declared: the one
    check that no two rules share a name (SDPX-VAL-071).

    The scope is one dataset (:meth:`DatasetRules.add`), one rule file (its grammar)
    or the rules given to :func:`~sdp_expect.rules.as_kwargs`; the same name may be
    used again in another scope.

    :param dataset: The dataset the scope is, named in the error; None when unknown.
    """

    def __init__(self, dataset: Optional[str] = None) -> None:
        self.dataset = dataset
        self._places: dict[str, Optional[Location]] = {}

    def clash(self, name: str, place: Optional[Location] = None) -> Optional[SdpExpectError]:
        """Take ``name`` for the rule declared at ``place``; when an earlier rule has it,
        the name stays the earlier rule's and the error naming both places is returned
        (a reader that collects errors goes on, the others raise it)."""
        if name not in self._places:
            self._places[name] = place
            return None
        where = [str(p) for p in (self._places[name], place) if p is not None]
        of = "" if self.dataset is None else " of one dataset"
        return SdpExpectError(
            "SDPX-VAL-071",
            f"two expectations{of} share a name"
            + (f" (declared in {' and '.join(where)})" if where else ""),
            dataset=self.dataset,
            expectation=name,
        )


@dataclass(frozen=True)
class QuarantineSpec:
    """Quarantine for one dataset: the dropped records go to ``name``.

    :param name: The quarantine dataset's name; ``None`` means ``<dataset>_quarantine``.
    """

    name: Optional[str] = None

    def resolve(self, dataset: str) -> str:
        """The quarantine dataset's name for ``dataset``."""
        return self.name or quarantine_name(dataset)


@dataclass
class DatasetRules:
    """The expectations of one dataset, in declaration order, plus its options.

    :param dataset: The dataset's name as declared.
    :param expectations: The rules, in declaration order.
    :param quarantine: Quarantine settings, ``None`` when not set on the dataset.
    :param metrics: ``False`` to turn the metrics table off for this dataset,
        ``None`` to follow the pipeline configuration.
    """

    dataset: str
    expectations: list[Expectation] = field(default_factory=list)
    quarantine: Optional[QuarantineSpec] = None
    metrics: Optional[bool] = None

    def add(self, expectation: Expectation) -> None:
        """Append one rule, rejecting a name the dataset already has (SDPX-VAL-071)."""
        names = RuleNames(self.dataset)
        for existing in self.expectations:
            names.clash(existing.name, existing.place)
        clash = names.clash(expectation.name, expectation.place)
        if clash is not None:
            raise clash
        self.expectations.append(expectation)

    def extend(self, expectations: Iterable[Expectation]) -> None:
        """Append several rules in order."""
        for expectation in expectations:
            self.add(expectation)

    @property
    def has_dataset_checks(self) -> bool:
        """True when a rule is a key rule (unique, references): docs/dataset-rules.md."""
        return any(e.check is not None for e in self.expectations)

    @property
    def has_whole_checks(self) -> bool:
        """True when a rule judges the dataset as a whole (row count, aggregate)."""
        return any(e.whole is not None for e in self.expectations)

    @property
    def has_tolerances(self) -> bool:
        """True when a rule has a tolerance (``max_failed``)."""
        return any(e.max_failed is not None for e in self.expectations)

    @property
    def can_fail(self) -> bool:
        """True when violations can fail the flow: a fail rule, or a drop rule with a
        tolerance (the flow is then not retried)."""
        return any(e.action is Action.FAIL or e.guarded for e in self.expectations)

    def of(self, action: Action) -> list[Expectation]:
        """The rules with the given action, in declaration order."""
        return [e for e in self.expectations if e.action is action]

    @property
    def empty(self) -> bool:
        """True when the dataset has no expectations."""
        return not self.expectations

