"""When ``sdp-expect run`` starts reading its summary: every flow of the run done
(cli/after_run.py), and a flow event noticed as a change (``EventLog.feed``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.cli.after_run import all_flows_completed
from sdp_expect.quality.last_good import DONE_STATES
from sdp_expect.runtime.spark_pipelines import EventLog

STATES = ["QUEUED", "PLANNING", "STARTING", "RUNNING", "COMPLETED", "FAILED", "SKIPPED",
          "STOPPED", "EXCLUDED", "IDLE"]


@given(st.dictionaries(st.sampled_from(["a", "b.c", "d"]), st.sampled_from(STATES)))
def test_all_flows_completed_only_when_each_is_done_and_one_completed(
        flows: dict[str, str]) -> None:
    expected = bool(flows) and "COMPLETED" in flows.values() and all(
        state in ("COMPLETED", "EXCLUDED") for state in flows.values())
    assert all_flows_completed(flows) == expected


def test_a_failed_flow_is_not_done_it_may_be_retried() -> None:
    assert "FAILED" not in DONE_STATES
    assert not all_flows_completed({"a": "COMPLETED", "b": "FAILED"})


def test_feed_says_when_a_flows_state_changes() -> None:
    events = EventLog()
    assert events.feed("2026-12-01 15:00:56: Flow spark_catalog.default.a is QUEUED.")
    assert not events.feed("2026-12-01 15:00:56: Flow spark_catalog.default.a is QUEUED.")
    assert not events.feed("2026-12-01 15:00:56: Starting run...")
    assert events.feed("2026-12-01 15:00:57: Flow spark_catalog.default.a has COMPLETED.")
    assert not events.feed("2026-12-01 15:01:01: Run is COMPLETED.")
    assert events.flows == {"spark_catalog.default.a": "COMPLETED"}
    assert events.run_state == "COMPLETED"
    # a failed flow reported COMPLETED too (its query stopped) stays FAILED: no change
    assert events.feed("2026-12-01 15:01:02: Flow 'spark_catalog.default.b' has FAILED.")
    assert not events.feed("2026-12-01 15:01:02: Flow spark_catalog.default.b has COMPLETED.")
