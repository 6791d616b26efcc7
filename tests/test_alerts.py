"""Alerts (report.alerts), the run summary's comparison (report.comparison) and the
webhook's POST (cli.webhook), without Spark (docs/alerts.md)."""

from __future__ import annotations

import datetime
import io
import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import WebhookReceiver, closed_port, sdp_expect
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import UsageProblem
from sdp_expect.cli.exit_codes import EXIT_ALERT, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from sdp_expect.cli.run import status_with_alerts
from sdp_expect.cli.webhook import RETRY_PAUSES, alert_settings, deliver, post_alert
from sdp_expect.quality.alerts import (
    MESSAGE_SCHEMA,
    evaluate_alerts,
    percent_text,
    points_text,
    read_alert_settings,
    unmatched_alert_keys,
)
from sdp_expect.quality.trends import rule_trends
from sdp_expect.report.comparison import add_trends, alert_lines, comparison_lines, trend_dict

T0 = datetime.datetime(2026, 12, 1, 8, 0, 0)
P = "sdp_expect.alert."


def _row(update: int, failed: int, total: int, *, dataset: str = "orders",
         expectation: str = "amount_positive") -> dict[str, Any]:
    return {"pipeline": "shop", "update_id": f"u{update:03d}",
            "update_time": (T0 + datetime.timedelta(minutes=update)).isoformat(),
            "dataset": dataset, "expectation": expectation, "action": "drop",
            "constraint": "amount > 0", "passed_records": total - failed,
            "failed_records": failed, "total_records": total, "dropped_records": failed,
            "dataset_kind": "materialized view", "last_batch_time": None}


def _trend(updates: list[tuple[int, int]], **names: str) -> Any:
    return rule_trends([_row(i, f, t, **names) for i, (f, t) in enumerate(updates)])[0]


def _kinds(settings: dict[str, str], *trends: Any) -> list[tuple[str, str, str]]:
    return sorted((a.trend.dataset, a.trend.expectation, a.kind)
                  for a in evaluate_alerts(read_alert_settings(settings), trends))


# --------------------------------------------------------------------------- bounds


def _fraction_of(text: str) -> Fraction:
    """The oracle's reading of a percentage: Decimal, independent of parse_tolerance."""
    return Fraction(Decimal(text.rstrip("%"))) / 100


percents = st.tuples(st.integers(0, 100), st.integers(0, 999_999),
                     st.integers(0, 6)).map(
    lambda t: f"{t[0]}%" if t[2] == 0 or t[0] == 100
    else f"{t[0]}.{str(t[1]).zfill(6)[:t[2]]}%")


@given(percents, st.integers(1, 10**9), st.data())
def test_max_rate_alerts_exactly_above_its_bound(bound: str, total: int,
                                                 data: st.DataObject) -> None:
    value = _fraction_of(bound)
    at = value * total  # failed exactly at the bound, when a whole number
    # failed at, just below and just above the bound, and anywhere
    candidates = {int(at), int(at) + 1, max(int(at) - 1, 0),
                  data.draw(st.integers(0, total))}
    for failed in sorted(c for c in candidates if c <= total):
        fired = _kinds({P + "max_rate": bound}, _trend([(failed, total)]))
        assert bool(fired) == (Fraction(failed, total) > value), (failed, total, bound)


def test_max_rate_at_the_bound_is_no_alert() -> None:
    assert _kinds({P + "max_rate": "5%"}, _trend([(5, 100)])) == []
    assert _kinds({P + "max_rate": "5%"}, _trend([(6, 100)])) == [
        ("orders", "amount_positive", "max_rate")]
    # 5.0001 % of a million is 50,001 records: at; one more is above
    assert _kinds({P + "max_rate": "5.0001%"}, _trend([(50_001, 1_000_000)])) == []
    assert _kinds({P + "max_rate": "5.0001%"}, _trend([(50_002, 1_000_000)])) != []
    assert _kinds({P + "max_rate": "100%"}, _trend([(7, 7)])) == []
    assert _kinds({P + "max_rate": "0%"}, _trend([(1, 10**12)])) != []


counts = st.tuples(st.integers(0, 60), st.integers(0, 60)).map(
    lambda pair: (min(pair), max(pair)))


@given(st.lists(counts, min_size=1, max_size=9), st.integers(1, 60), st.integers(0, 60),
       percents)
def test_max_rise_alerts_when_the_rate_passes_the_recent_pool_by_more_than_the_bound(
        earlier: list[tuple[int, int]], total: int, failed_raw: int, bound: str) -> None:
    failed = min(failed_raw, total)
    trend = _trend([*earlier, (failed, total)])
    # oracle: the 5 latest earlier updates with records, pooled; integers only
    kept = [(f, t) for f, t in reversed(earlier) if t > 0][:5]
    rf, rt = sum(f for f, _ in kept), sum(t for _, t in kept)
    b = _fraction_of(bound)
    expected = rt > 0 and (failed * rt - rf * total) * b.denominator > \
        b.numerator * total * rt
    fired = _kinds({P + "max_rise": bound}, trend)
    assert bool(fired) == expected


def test_max_rise_needs_a_recent_update_and_min_records_skips_small_updates() -> None:
    assert _kinds({P + "max_rise": "1%"}, _trend([(9, 10)])) == []
    assert _kinds({P + "max_rise": "1%"}, _trend([(0, 0), (9, 10)])) == []
    assert _kinds({P + "max_rise": "1%"}, _trend([(0, 10), (9, 10)])) == [
        ("orders", "amount_positive", "max_rise")]
    settings = {P + "max_rise": "1%", P + "min_records": "11"}
    assert _kinds(settings, _trend([(0, 10), (9, 10)])) == []
    assert _kinds(settings, _trend([(0, 10), (9, 11)])) != []
    # an update that checked nothing never alerts, whatever min_records says
    assert _kinds({P + "max_rate": "0%", P + "min_records": "0"}, _trend([(0, 0)])) == []


def test_the_rule_key_wins_over_the_dataset_key_over_the_pipeline_key() -> None:
    rule = _trend([(3, 100)])  # 3 %
    other = _trend([(3, 100)], expectation="other")
    events = _trend([(3, 100)], dataset="events")
    trends = (rule, other, events)
    settings = {P + "max_rate": "2%", P + "orders.max_rate": "4%",
                P + "orders.amount_positive.max_rate": "1%"}
    assert _kinds(settings, *trends) == [("events", "amount_positive", "max_rate"),
                                         ("orders", "amount_positive", "max_rate")]
    # off at the dataset turns the pipeline's bound off, and the rule can set one again
    settings = {P + "max_rate": "2%", P + "orders.max_rate": "off",
                P + "orders.other.max_rate": "2.5%"}
    assert _kinds(settings, *trends) == [("events", "amount_positive", "max_rate"),
                                         ("orders", "other", "max_rate")]
    alert = evaluate_alerts(read_alert_settings(settings), [other])[0]
    assert alert.bound.key == P + "orders.other.max_rate" and alert.bound.text == "2.5%"
    # min_records follows the same order
    settings = {P + "max_rate": "1%", P + "min_records": "1000",
                P + "orders.min_records": "10"}
    assert _kinds(settings, *trends) == [("orders", "amount_positive", "max_rate"),
                                         ("orders", "other", "max_rate")]


def test_only_the_given_update_alerts() -> None:
    trend = _trend([(50, 100), (0, 100)])
    settings = read_alert_settings({P + "max_rate": "10%"})
    assert evaluate_alerts(settings, [trend], update_id="u000") == []
    assert evaluate_alerts(settings, [trend], update_id="u001") == []
    assert evaluate_alerts(settings, [_trend([(50, 100)])], update_id="u000") != []


@pytest.mark.parametrize(("key", "value", "said"), [
    (P + "max_rate", "5", "is a count, not a percentage"),
    (P + "max_rate", "five", "is not a percentage"),
    (P + "max_rise", "150%", "is not a percentage"),
    (P + "orders.max_rate", "-1%", "is not a percentage"),
    (P + "max_rate", "0.0000001%", "is not a percentage"),
    (P + "min_records", "1e3", "is not a whole number of records"),
    (P + "orders.x.min_records", "-5", "is not a whole number of records"),
    (P + "webhook", "ftp://example.com/x", "is not an http:// or https:// URL"),
    (P + "webhook", "https://", "is not an http:// or https:// URL"),
    (P + "max_rat", "5%", "is not an alert setting"),
    (P + "orders.webhook", "https://example.com", "is not an alert setting"),
])
def test_a_bad_setting_is_refused_with_its_key_and_the_fix(key: str, value: str,
                                                           said: str) -> None:
    with pytest.raises(SdpExpectError) as caught:
        read_alert_settings({key: value, "sdp_expect.metrics": "true"})
    assert caught.value.code == "SDPX-CFG-202"
    assert key in str(caught.value) and said in str(caught.value)
    assert "docs/alerts.md" in caught.value.fix


def test_settings_read_off_webhook_and_other_keys() -> None:
    settings = read_alert_settings({P + "max_rate": " OFF ", "spark.x": "1",
                                    P + "webhook": " https://hooks.example.com/dq "})
    assert not settings.declared and settings.webhook == "https://hooks.example.com/dq"
    assert read_alert_settings({P + "max_rise": "0.5%"}).declared


# --------------------------------------------------------------------------- texts, JSON


def test_numbers_as_text_round_half_up_exactly() -> None:
    assert percent_text(Fraction(12, 1000)) == "1.2%"
    assert percent_text(Fraction(1, 64)) == "1.563%"
    assert percent_text(Fraction(0)) == "0%"
    assert points_text(Fraction(8, 1000)) == "+0.8 pts"
    assert points_text(Fraction(-1, 3)) == "-33.333 pts"
    assert points_text(Fraction(0)) == "+0 pts"


def test_the_comparison_lines_and_json() -> None:
    rows = [_row(i, f, t) for i, (f, t) in enumerate(
        [(99, 100), (1, 250), (0, 0), (2, 250), (1, 250), (0, 250), (2, 250), (12, 1000)])]
    rows += [_row(7, 0, 10, expectation="fresh"), _row(7, 0, 0, dataset="events")]
    trends = rule_trends(rows)
    text = "\n".join(comparison_lines(trends))
    assert "recent 0.48% over 5 updates" in text
    assert "12 of 1,000 failed (1.2%)" in text and "(+0.72 pts)" in text
    assert "fresh            drop  0 of 10 failed (0%)" in text
    assert "no earlier update" in text and "no record checked" in text
    assert text.splitlines()[2:4] == ["events", "    amount_positive  drop  no record checked"]
    assert trend_dict(trends[1]) == {
        "update_id": "u007", "failed_records": 12, "total_records": 1000,
        "failure_percentage": 1.2, "recent_updates": 5, "recent_failed_records": 6,
        "recent_total_records": 1250, "recent_failure_percentage": 0.48,
        "change_points": 0.72}
    document: dict[str, Any] = {"datasets": [{"dataset": "orders", "rules": [
        {"expectation": "amount_positive"}, {"expectation": "unknown"}]}]}
    add_trends(document, trends)
    assert document["datasets"][0]["rules"][0]["trend"]["recent_updates"] == 5
    assert "trend" not in document["datasets"][0]["rules"][1]
    assert comparison_lines([]) == [] and alert_lines([]) == []


def test_an_alert_as_json_and_text() -> None:
    trend = rule_trends([_row(i, f, t) for i, (f, t) in enumerate([(1, 100), (3, 100),
                                                                   (9, 100)])])[0]
    alerts = evaluate_alerts(read_alert_settings({P + "max_rate": "5%",
                                                  P + "max_rise": "2%"}), [trend])
    assert [a.kind for a in alerts] == ["max_rate", "max_rise"]
    rise = alerts[1].as_dict()
    assert rise == {
        "schema": MESSAGE_SCHEMA, "pipeline": "shop", "update_id": "u002",
        "update_time": "2026-12-01T08:02:00", "dataset": "orders",
        "expectation": "amount_positive", "action": "drop", "kind": "max_rise",
        "failed_records": 9, "total_records": 100, "failure_percentage": 9.0,
        "bound": "2%", "bound_percentage": 2.0, "setting": P + "max_rise",
        "recent_updates": 2, "recent_failed_records": 4, "recent_total_records": 200,
        "recent_failure_percentage": 2.0, "change_points": 7.0, "text": rise["text"]}
    assert rise["text"] == ("orders.amount_positive: 9 of 100 records failed (9%), +7 pts "
                            "over its recent rate 2% (2 updates), more than max_rise 2% "
                            f"({P}max_rise)")
    lines = alert_lines(alerts)
    assert lines[1] == "== Alerts: 2 triggered (docs/alerts.md)"
    assert lines[2].startswith("  ALERT max_rate: orders.amount_positive: 9 of 100")


# --------------------------------------------------------------------------- the webhook


def test_the_webhook_gets_the_json_and_failures_are_returned() -> None:
    with WebhookReceiver() as receiver:
        _post_three(receiver)


def _post_three(receiver: WebhookReceiver) -> None:
    url = receiver.url
    message = {"schema": MESSAGE_SCHEMA, "dataset": "orders", "expectation": "é",
               "kind": "max_rate"}
    waits: list[float] = []
    done = post_alert(url, message, sleep=waits.append)
    assert done.ok and done.status == 204 and done.error is None and done.tries == 1
    assert receiver.bodies == [("application/json; charset=utf-8", message)] and waits == []
    receiver.status = 500
    failed = post_alert(url, message, sleep=waits.append)
    assert not failed.ok and failed.status == 500 and "HTTP 500" in str(failed.error)
    assert failed.tries == 3 and waits == list(RETRY_PAUSES) and len(receiver.bodies) == 4
    waits.clear()
    refused = post_alert(f"http://127.0.0.1:{closed_port()}/", message, timeout=2,
                         sleep=waits.append)
    assert not refused.ok and refused.status is None and refused.error
    assert refused.tries == 3 and waits == list(RETRY_PAUSES)
    assert refused.as_dict()["dataset"] == "orders" and refused.as_dict()["tries"] == 3


def test_a_post_is_tried_again_only_while_its_failure_may_pass() -> None:
    message = {"dataset": "orders", "expectation": "x", "kind": "max_rate"}
    with WebhookReceiver() as receiver:
        for first, tries in ((503, 2), (429, 2), (500, 2), (400, 1), (404, 1), (302, 1)):
            receiver.bodies.clear()
            receiver.statuses = [first, 204]
            waits: list[float] = []
            got = post_alert(receiver.url, message, sleep=waits.append)
            assert got.tries == tries and len(receiver.bodies) == tries, first
            assert got.ok == (tries == 2) and waits == list(RETRY_PAUSES[:tries - 1]), first
        receiver.statuses = [503, 503, 204]  # the third try is the last
        assert post_alert(receiver.url, message, sleep=lambda _: None).ok
        receiver.statuses = [503, 503, 503, 204]
        assert post_alert(receiver.url, message, sleep=lambda _: None).status == 503


def test_a_webhook_that_does_not_answer_delays_the_command_by_one_alerts_tries() -> None:
    messages = [{"dataset": "orders", "expectation": e, "kind": "max_rate"} for e in "abc"]
    url = f"http://127.0.0.1:{closed_port()}/"
    waits: list[float] = []
    said = io.StringIO()
    got = deliver(messages, url, command="sdp-expect run", stderr=said, sleep=waits.append)
    assert [d.tries for d in got] == [3, 1, 1] and waits == list(RETRY_PAUSES)
    lines = said.getvalue().splitlines()
    assert len(lines) == 3 and "(3 tries)" in lines[0] and "tries" not in lines[1]
    assert all(line.endswith("(the exit status does not change)") for line in lines)
    with WebhookReceiver(status=503) as receiver:  # it answers: each alert gets its tries
        got = deliver(messages, receiver.url, command="c", stderr=io.StringIO(),
                      sleep=lambda _: None)
        assert [d.tries for d in got] == [3, 3, 3] and len(receiver.bodies) == 9


def test_fail_on_alert_gives_4_only_when_nothing_else_failed() -> None:
    assert EXIT_ALERT not in (EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, 3, 130)
    assert status_with_alerts(EXIT_OK, 2, "alert") == EXIT_ALERT
    assert status_with_alerts(EXIT_OK, 0, "alert") == EXIT_OK
    assert status_with_alerts(EXIT_OK, 2, None) == EXIT_OK
    assert status_with_alerts(EXIT_PROBLEMS, 2, "alert") == EXIT_PROBLEMS
    assert status_with_alerts(EXIT_USAGE, 1, "alert") == EXIT_USAGE


def test_the_command_line_webhook_wins_and_is_checked() -> None:
    configuration = {P + "webhook": "https://a.example.com/x", P + "max_rate": "1%"}
    assert alert_settings(configuration, None).webhook == "https://a.example.com/x"
    chosen = alert_settings(configuration, "http://127.0.0.1:9/y")
    assert chosen.webhook == "http://127.0.0.1:9/y" and chosen.declared
    with pytest.raises(UsageProblem, match="--alert-webhook 'localhost:9' is not an http"):
        alert_settings(configuration, "localhost:9")


def test_run_refuses_a_bad_setting_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "spark-pipeline.yml").write_text(
        "name: p\nconfiguration:\n  sdp_expect.alert.orders.max_rate: 5\nlibraries: []\n")
    done = sdp_expect("run", "--spec", str(tmp_path), cwd=tmp_path)
    assert done.returncode == EXIT_USAGE, done.stdout + done.stderr
    assert "[SDPX-CFG-202] sdp_expect.alert.orders.max_rate = '5' is a count" in done.stderr
    as_json = sdp_expect("run", "--spec", str(tmp_path), "--format", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["setting_errors"][0]["code"] == "SDPX-CFG-202"
    (tmp_path / "spark-pipeline.yml").write_text(
        "name: p\nstorage: file:///tmp/p-storage\nlibraries: []\n")
    done = sdp_expect("run", "--spec", str(tmp_path), "--no-summary", "--fail-on", "alert",
                      cwd=tmp_path)
    assert done.returncode == EXIT_USAGE and "need the summary" in done.stderr
    done = sdp_expect("history", "alerts", "--spec", str(tmp_path), "--alert-webhook", "x",
                      cwd=tmp_path)
    assert done.returncode == EXIT_USAGE and "is not an http" in done.stderr


def test_keys_that_name_no_dataset_or_rule_are_found() -> None:
    """SDPX-CFG-203: a misspelt dataset or rule in a key would never match."""
    settings = read_alert_settings({
        "sdp_expect.alert.max_rate": "5%",
        "sdp_expect.alert.orders.max_rise": "1%",
        "sdp_expect.alert.orders.amount_ok.max_rate": "off",
        "sdp_expect.alert.orderz.max_rate": "5%",
        "sdp_expect.alert.orders.amount_ko.min_records": "10",
        "sdp_expect.alert.events.amount_ok.max_rate": "2%"})
    rules = [("orders", "amount_ok"), ("events", "id_ok")]
    assert unmatched_alert_keys(settings, rules) == [
        "sdp_expect.alert.events.amount_ok.max_rate",
        "sdp_expect.alert.orders.amount_ko.min_records",
        "sdp_expect.alert.orderz.max_rate"]
    assert unmatched_alert_keys(read_alert_settings({"sdp_expect.alert.max_rate": "5%"}),
                                rules) == []
