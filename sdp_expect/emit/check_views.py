"""What both emitters write and record of a plan's check views: a rule's view's ``SELECT``,
and its entry in the definitions file.

A check view stands for a flow's query alone or for one of its rules
(:class:`~sdp_expect.core.planner.RuleCheck`); ``sdp-expect run`` reads the record to
name the rule, and its ``file:line``, whose constraint Spark could not analyse
(SDPX-DEF-111). No pyspark here: the SQL emitter imports it.
"""

from __future__ import annotations

from sdp_expect.base.definitions import record_check_view, record_query_view
from sdp_expect.core.compiler import RuleLogic
from sdp_expect.core.planner import RuleCheck

__all__ = ["record_check", "rule_view_select"]


def rule_view_select(logic: RuleLogic, check: RuleCheck, *, streaming: bool, alias: str
                     ) -> str:
    """The ``SELECT`` of a rule's check view, for both emitters: the rule's column over
    the view of the flow's query alone (the query is analysed once, not per rule), read
    as a stream when the query reads one, under the name ``alias``.

    :param logic: The dataset's rule logic.
    :param check: A rule's check view (one with a ``query_view``).
    :param streaming: Whether the query reads a stream.
    :param alias: The relation's name in Spark's messages (a SQL identifier).
    """
    assert check.query_view is not None
    read = f"STREAM({check.query_view})" if streaming else check.query_view
    return logic.rule_check_select(f"{read} AS {alias}", check.expectation)


def record_check(check: RuleCheck) -> None:
    """Record one check view of a plan (the file is written only when a run asks for it).

    :param check: The check view.
    """
    expectation = check.expectation
    if expectation is None:
        record_query_view(check.view, dataset=check.dataset, flow=check.flow,
                          derived=check.derived)
        return
    record_check_view(check.view, dataset=check.dataset, flow=check.flow,
                      expectation=expectation.name, constraint=expectation.constraint,
                      action=expectation.action.value, place=expectation.place,
                      query_view=check.query_view)
