"""What both emitters record of a plan's check views in the definitions file.

A check view stands for a flow's query alone or for one of its rules
(:class:`~sdp_expect.core.planner.RuleCheck`); ``sdp-expect run`` reads the record to
name the rule, and its ``file:line``, whose constraint Spark could not analyse
(SDPX-DEF-111). No pyspark here: the SQL emitter imports it.
"""

from __future__ import annotations

from sdp_expect.base.definitions import record_check_view, record_query_view
from sdp_expect.core.planner import RuleCheck

__all__ = ["record_check"]


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
