"""The ``sdp_expect.*`` table properties of a dataset statement.

A ``TBLPROPERTIES`` entry whose key starts with ``sdp_expect.`` is taken by
sdp-expect (quarantine, metrics, a rule file and its tag) and left out of the
table's properties; any other entry is kept as written. An ``sdp_expect.*``
key sdp-expect does not know, or one without a value, is SDPX-SQL-304.

Internal to :mod:`sdp_expect.dbsql`, whose reader starts in
:mod:`sdp_expect.dbsql.parse`. Nothing here imports pyspark.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Sequence

from sdp_expect import rules as rule_files
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.sqltokens import Token, TokenKind
from sdp_expect.core.model import QuarantineSpec, check_whole_rule, parse_tolerance
from sdp_expect.dbsql.cursor import Cursor, is_name_part, shown
from sdp_expect.dbsql.findings import Findings, RuleFileUse
from sdp_expect.dbsql.statements import DatasetStatement, Position

__all__ = ["Properties"]

_SQL_304 = "SDPX-SQL-304"

_BOOLEAN = {"true": True, "false": False}
_KNOWN_KEYS = ("sdp_expect.quarantine", "sdp_expect.quarantine.name", "sdp_expect.metrics",
               "sdp_expect.rules", "sdp_expect.rules.tag")
_MAX_FAILED = "sdp_expect.max_failed."
"""The start of the key of a rule's tolerance: ``'sdp_expect.max_failed.<rule>' = '1%'``
(docs/thresholds.md); the rule's name as written follows."""


class Properties:
    """The ``sdp_expect.*`` table properties of one dataset, collected then applied: a
    rule file's rules come after the ``CONSTRAINT`` clauses, whatever the order written."""

    def __init__(self) -> None:
        self.quarantine: Optional[bool] = None
        self.quarantine_name: Optional[str] = None
        self.metrics: Optional[bool] = None
        self.rules: Optional[str] = None
        self.rules_at: Optional[Position] = None
        self.tag: Optional[str] = None
        self.max_failed: dict[str, tuple[str, Position]] = {}

    def read(self, cursor: Cursor, prop: Sequence[Token], statement: DatasetStatement) -> None:
        """Read one ``key [=] value`` entry (its tokens): keep it for the table as written,
        or take it for sdp-expect, which marks the dataset as checked as an expectation
        decorator does."""
        dataset = statement.name.dataset
        index = 0
        if prop[0].kind is TokenKind.STRING:
            key = prop[0].value
            index = 1
        else:
            parts = []
            while index < len(prop) and is_name_part(prop[index]):
                parts.append(prop[index].value)
                index += 1
                if index < len(prop) and prop[index].kind is TokenKind.DOT:
                    index += 1
                else:
                    break
            if not parts:
                raise cursor.error(prop[0], f"expected a property key, found {shown(prop[0])}",
                                   dataset=dataset)
            key = ".".join(parts)
        if index < len(prop) and prop[index].kind is TokenKind.OPERATOR and prop[index].text == "=":
            index += 1
        rest = prop[index:]
        if len(rest) > 1:
            raise cursor.error(rest[1], f"unexpected {shown(rest[1])} in the property {key!r}",
                               dataset=dataset)
        value = None if not rest else rest[0].value
        if not key.lower().startswith("sdp_expect."):
            statement.table_properties.append(cursor.text(prop[0], prop[-1]))
            return
        statement.checked = True
        where = cursor.position(prop[0])
        if key.lower().startswith(_MAX_FAILED) and len(key) > len(_MAX_FAILED):
            if value is None:
                raise SdpExpectError(_SQL_304, f"the table property {key!r} needs a value",
                                     dataset=dataset, location=where.at_column())
            self.max_failed[key[len(_MAX_FAILED):]] = (value, where)
            return
        self._take(key.lower(), value, where, dataset)

    def _take(self, key: str, value: Optional[str], where: Position, dataset: str) -> None:
        def problem(detail: str) -> SdpExpectError:
            return SdpExpectError(_SQL_304, detail, dataset=dataset, location=where.at_column())

        if key not in _KNOWN_KEYS:
            raise problem(f"unknown table property {key!r}")
        if value is None or not value.strip():
            raise problem(f"the table property {key!r} needs a value")
        if key in ("sdp_expect.quarantine", "sdp_expect.metrics"):
            flag = _BOOLEAN.get(value.strip().lower())
            if flag is None:
                raise problem(f"{key} = {value!r} is not 'true' or 'false'")
            if key == "sdp_expect.quarantine":
                self.quarantine = flag
            else:
                self.metrics = flag
        elif key == "sdp_expect.quarantine.name":
            self.quarantine_name = value.strip()
        elif key == "sdp_expect.rules":
            self.rules = value
            self.rules_at = where
        else:
            self.tag = value

    def apply(self, statement: DatasetStatement, base_dir: Optional[str],
              findings: Optional[Findings] = None) -> None:
        """Set the per-dataset options, then append the rule file's rules (after the
        ``CONSTRAINT`` clauses), a relative rule-file path starting at ``base_dir``.

        With ``findings`` (:func:`~sdp_expect.dbsql.parse.check`), the rule file is
        recorded before its errors are raised (as one
        :class:`~sdp_expect.rules.RuleFileError`), so that ``validate`` knows a rule
        file that has errors too.
        """
        rules = statement.rules
        if self.quarantine_name is not None:
            rules.quarantine = QuarantineSpec(name=self.quarantine_name)
        elif self.quarantine:
            rules.quarantine = QuarantineSpec()
        rules.metrics = self.metrics
        if self.tag is not None and self.rules is None:
            raise SdpExpectError(_SQL_304, "'sdp_expect.rules.tag' without 'sdp_expect.rules'",
                                 dataset=rules.dataset, location=statement.position.at_line())
        if self.rules is not None:
            folder = base_dir if base_dir is not None else os.getcwd()
            checked = rule_files.check_file(self.rules, base_dir=folder, dataset=rules.dataset)
            if findings is not None:
                findings.rule_files.append(RuleFileUse(
                    checked, folder, self.rules_at or statement.position, rules.dataset))
            checked.raise_errors()
            rules.extend(checked.select(self.tag))
        self._apply_tolerances(statement)

    def _apply_tolerances(self, statement: DatasetStatement) -> None:
        """Give each rule named by an ``'sdp_expect.max_failed.<rule>'`` property its
        tolerance (the ``CONSTRAINT`` rules and the rule file's alike)."""
        rules = statement.rules
        for name, (value, where) in self.max_failed.items():
            at = next((i for i, e in enumerate(rules.expectations) if e.name == name), None)
            if at is None:
                known = ", ".join(repr(e.name) for e in rules.expectations) or "none"
                raise SdpExpectError(
                    _SQL_304, f"'{_MAX_FAILED}{name}' names no expectation of the dataset "
                    f"(its expectations: {known})", dataset=rules.dataset,
                    location=where.at_column(),
                    fix=f"write '{_MAX_FAILED}<name>' with the name of a CONSTRAINT of the "
                    "dataset (or of a rule of its rule file), as written")
            rule = rules.expectations[at]
            if rule.max_failed is not None:
                raise SdpExpectError(
                    _SQL_304, f"the rule already has max_failed {rule.max_failed.text!r} "
                    "from its rule file", dataset=rules.dataset, expectation=name,
                    location=where.at_column(),
                    fix="give the tolerance in one place: the rule file or the table property")
            if rule.whole is not None:  # SDPX-DEF-116: one verdict, no tolerance
                check_whole_rule(rule.whole, rule.action, value, rules.dataset, name,
                                 where.at_column())
            tolerance = parse_tolerance(value, dataset=rules.dataset, expectation=name,
                                        location=where.at_column())
            rules.expectations[at] = dataclasses.replace(rule, max_failed=tolerance)
