"""A fail rule's message under the writer's wrapping error (issue: the same failure line on
every table format; docs/formats.md).

On Delta Lake, the failed flow of the dataset itself reports Delta's writer error
(``[TASK_WRITE_FAILED] Task failed while writing rows to ...``) while its companions'
flows report the ``[EXPECTATION_VIOLATION]`` message; ``sdp-expect run`` shows the message
under the wrapped error, once, whatever order the events come in. The events below are
``spark-pipelines``' output of a real run (pyspark 4.1.4, Delta Lake 4.4.0, 6 Dec 2026;
the run itself: ``test_table_formats_spark.py``).
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from sdp_expect.base.violation import Violation, format_message
from sdp_expect.runtime.run_output import CAUSED_BY, ChildOutput
from sdp_expect.runtime.spark_pipelines import EventLog

MESSAGE = ("[EXPECTATION_VIOLATION] Flow 'orders' failed to meet the expectation. Violated "
           "expectations: 'amount_known'. Output record: '{\"id\":3,\"amount\":null}'.")
WRAPPED = ("Error: [TASK_WRITE_FAILED] Task failed while writing rows to "
           "file:/tmp/warehouse/shop.db/orders. SQLSTATE: 58030")
FAILURES = {
    "orders": ["2026-12-06 21:14:18: Flow 'spark_catalog.shop.orders' has FAILED.", WRAPPED],
    "orders_quarantine": [
        "2026-12-06 21:14:18: Flow 'spark_catalog.shop.orders_quarantine' has FAILED.",
        f"Error: [USER_RAISED_EXCEPTION] {MESSAGE} SQLSTATE: P0001"],
    "orders_dq_metrics": [
        "2026-12-06 21:14:18: Flow 'spark_catalog.shop.orders_dq_metrics' has FAILED.",
        f"Error: [USER_RAISED_EXCEPTION] {MESSAGE} SQLSTATE: P0001"],
}
BEFORE = ["2026-12-06 21:14:17: Flow spark_catalog.shop.orders is RUNNING."]
AFTER = ["2026-12-06 21:14:19: Flow 'spark_catalog.shop.totals' SKIPPED due to upstream "
         "failure(s).", "2026-12-06 21:14:19: Run is FAILED."]


def shown(lines: list[str]) -> list[str]:
    """What ``sdp-expect run`` shows of ``lines`` by default (as ``run_pipeline`` feeds
    them: the event log first, then the display, then the causes found so far)."""
    events, output, out = EventLog(), ChildOutput(None), []
    for line in lines:
        events.feed(line + "\n")
        out += output.feed(line + "\n")
        out += output.causes(events.violations, events.tolerance_failures,
                             events.dataset_rule_failures)
    return [line.rstrip("\n") for line in out + output.finish()]


@given(st.permutations(sorted(FAILURES)))
@example(["orders", "orders_dq_metrics", "orders_quarantine"])
@example(["orders_dq_metrics", "orders", "orders_quarantine"])
def test_the_message_is_shown_once_under_the_wrapped_error(order: list[str]) -> None:
    lines = BEFORE + [line for flow in order for line in FAILURES[flow]] + AFTER
    out = shown(lines)
    cause = CAUSED_BY + format_message(Violation("orders", ("amount_known",),
                                                 '{"id":3,"amount":null}'))
    assert cause == f"{CAUSED_BY}{MESSAGE}"
    assert out.count(cause) == 1, out
    # under the wrapped error: right after it, or as soon as a companion reported it
    assert out.index(cause) > out.index(WRAPPED), out
    told = out.index(cause)
    assert out[told - 1] == WRAPPED or MESSAGE in out[told - 1], out


def test_an_unwrapped_failure_adds_no_line() -> None:
    """Parquet: the dataset's own flow reports the message itself."""
    lines = [*BEFORE, FAILURES["orders"][0], f"Error: [USER_RAISED_EXCEPTION] {MESSAGE}",
             *FAILURES["orders_dq_metrics"], *AFTER]
    assert not [line for line in shown(lines) if line.startswith(CAUSED_BY)]


def test_a_wrapped_failure_of_another_cause_adds_no_line() -> None:
    """A writer error with no rule behind it (no message for the dataset) stays as it is."""
    lines = BEFORE + FAILURES["orders"] + AFTER
    out = shown(lines)
    assert WRAPPED in out and not [line for line in out if line.startswith(CAUSED_BY)]


def test_a_dataset_without_companions_shows_the_cause_its_own_event_carries() -> None:
    """No quarantine and no metrics: no companion's flow reports the message. The failed
    flow's event carries Spark's cause on the line after its error (``spark-pipelines``'
    output of a real run: pyspark 4.1.4, Delta Lake 4.4.0, ``sdp_expect.metrics:
    false``, 7 Dec 2026), and the message is shown under the wrapped error from there."""
    lines = [*BEFORE, FAILURES["orders"][0], WRAPPED,
             f"[USER_RAISED_EXCEPTION] {MESSAGE} SQLSTATE: P0001", *AFTER]
    out = shown(lines)
    cause = f"{CAUSED_BY}{MESSAGE}"
    assert out.count(cause) == 1, out
    assert out.index(cause) == out.index(WRAPPED) + 1, out
