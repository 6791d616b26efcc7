"""What the collecting reader (:func:`sdp_expect.dbsql.parse.check`) finds in one file.

:class:`Findings` gathers the statements read, every error, the count of
``CONSTRAINT`` clauses and the rule files that ``'sdp_expect.rules'``
properties name (:class:`RuleFileUse`). :mod:`sdp_expect.dbsql.parse` offers
both names; the statement readers fill them in. Nothing here imports pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sdp_expect import rules as rule_files
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.dbsql.statements import Position, Statement, StatementSummary, summarize

__all__ = ["Findings", "RuleFileUse"]


@dataclass(frozen=True)
class RuleFileUse:
    """A rule file that a dataset's ``'sdp_expect.rules'`` property names, as checked.

    :param check: What :func:`sdp_expect.rules.check_file` found in it; its
        ``file`` is the path as written in the property.
    :param base_dir: The folder that path was taken from.
    :param position: Where the property is written.
    :param dataset: The dataset whose property it is.
    """

    check: rule_files.RuleFileCheck
    base_dir: str
    position: Position
    dataset: str


@dataclass
class Findings:
    """What :func:`~sdp_expect.dbsql.parse.check` found in one Databricks SQL file.

    :param statements: The statements read without error, in file order.
    :param errors: Every error, in file order (a rule file's errors come as one
        :class:`~sdp_expect.rules.RuleFileError`, also found in ``rule_files``).
    :param constraints: How many ``CONSTRAINT ... EXPECT`` (or ``CHECK``, ...)
        clauses were read, valid or not.
    :param rule_files: The rule files that ``'sdp_expect.rules'`` properties
        name, each as checked, in file order.
    :param declared: What each statement declares by its opening keywords, in
        file order, with errors or not (``statements`` leaves out a statement
        with errors): ``materialized view``, ``streaming table``, ``temporary
        view``, ``view``, ``flow`` (an ``AUTO CDC`` one too), ``set``, ``use`` or
        ``other``, the kinds of :class:`~sdp_expect.dbsql.statements.StatementSummary`.
    """

    statements: list[Statement] = field(default_factory=list)
    errors: list[SdpExpectError] = field(default_factory=list)
    constraints: int = 0
    rule_files: list[RuleFileUse] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)

    @property
    def summary(self) -> list[StatementSummary]:
        """What each statement read is, and where it starts."""
        return [summarize(statement) for statement in self.statements]
