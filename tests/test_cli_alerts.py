"""``sdp-expect run`` compares each rule with its recent updates and checks the alerts
(true runs, docs/alerts.md, docs/history.md#the-comparison-in-the-run-summary): the
numbers equal an oracle over the history rows read with a plain Spark session; the
webhook receives exactly one documented message per alert."""

from __future__ import annotations

import decimal
import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

import pytest
from cli_helpers import (
    NEWEST_LINE,
    WebhookReceiver,
    closed_port,
    sdp_expect,
    served,
    write_project,
)

from sdp_expect.base import names

pytestmark = [pytest.mark.usefixtures("own_jvm"), pytest.mark.timeout(1800)]

CODE = """\
from pyspark.sql import SparkSession
from sdp_expect import pipelines as dp

spark = SparkSession.active()

@dp.materialized_view
@dp.expect("small", "amount < 10")
@dp.expect_or_drop("valid_id", "id IS NOT NULL")
def orders():
    return spark.read.schema("id INT, amount INT").json("{orders}")

@dp.table
@dp.expect_or_drop("not_negative", "amount >= 0")
def events():
    return spark.readStream.schema("id INT, amount INT").json("{events}")
"""

SETTINGS = """\
configuration:
  sdp_expect.alert.max_rate: "30%"
  sdp_expect.alert.max_rise: "20%"
  sdp_expect.alert.orders.valid_id.max_rate: "off"
  sdp_expect.alert.events.min_records: "3"
  sdp_expect.alert.orders.vaild_id.max_rate: "1%"
"""


def _orders(folder: Path, large: int) -> None:
    """Ten orders, ``large`` of them with an amount of 10 or more (rule ``small``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "1.json").write_text("".join(
        json.dumps({"id": i, "amount": 50 if i < large else 1}) + "\n" for i in range(10)))


def _percent(rate: Optional[Fraction]) -> Optional[float]:
    if rate is None:
        return None
    exact = decimal.Decimal(rate.numerator * 100) / decimal.Decimal(rate.denominator)
    return float(exact.quantize(decimal.Decimal("0.001"), rounding=decimal.ROUND_HALF_UP))


def _oracle(rows: list[dict[str, Any]], update_id: str) -> dict[tuple[str, str], Any]:
    """Each rule of ``update_id``: its counts, and the pooled counts of the 5 updates
    before it (by time) that checked records, from the history rows as Spark read them."""
    times = {row["update_id"]: str(row["update_time"]) for row in rows}
    found = {}
    for row in rows:
        if row["update_id"] != update_id:
            continue
        key = (row["dataset"], row["expectation"])
        earlier = sorted((r for r in rows if (r["dataset"], r["expectation"]) == key
                          and times[r["update_id"]] < times[update_id]
                          and r["total_records"] > 0),
                         key=lambda r: str(r["update_time"]))[-5:]
        failed, total = row["failed_records"], row["total_records"]
        rf = sum(r["failed_records"] for r in earlier)
        rt = sum(r["total_records"] for r in earlier)
        rate = Fraction(failed, total) if total else None
        recent = Fraction(rf, rt) if rt else None
        found[key] = {
            "update_id": update_id, "failed_records": failed, "total_records": total,
            "failure_percentage": _percent(rate), "recent_updates": len(earlier),
            "recent_failed_records": rf, "recent_total_records": rt,
            "recent_failure_percentage": _percent(recent),
            "change_points": _percent(None if rate is None or recent is None
                                      else rate - recent)}
    return found


@NEWEST_LINE
def test_run_compares_with_recent_updates_and_alerts(tmp_path: Path) -> None:
    orders, events = tmp_path / "data" / "orders", tmp_path / "data" / "events"
    project = write_project(tmp_path / "project", CODE.format(orders=orders, events=events),
                            configuration=SETTINGS)
    run = ("run", "--spec", str(project), "--progress", "none")
    events.mkdir(parents=True)
    (events / "1.json").write_text('{"id": 1, "amount": 1}\n{"id": 2, "amount": -1}\n')

    # Through the project's warm server (one server start for every command, CI's time).
    with served(project, keep_tables=True) as warm:
        # 1: nothing earlier to compare with; events fails 50 %, but of fewer than 3 records
        _orders(orders, 1)
        first = sdp_expect(*run, cwd=tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        section = first.stdout.split("== Compared with the recent updates")[1]
        assert "    small         warn  1 of 10 failed (10%)  no earlier update" in section
        assert "Alerts" not in first.stdout

        # 2: 40 % > 30 %, and 30 points above the recent 10 %; the webhook's port is closed:
        # said, in the JSON too, and the exit status stays 0 (no --fail-on)
        _orders(orders, 4)
        dead = f"http://127.0.0.1:{closed_port()}/hook"
        second = sdp_expect(*run, "--format", "json", "--alert-webhook", dead, cwd=tmp_path)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "was not delivered to the webhook" in second.stderr, second.stderr
        document = json.loads(second.stdout)
        assert document["server"]["warm"] is True
        assert [(a["kind"], a["failed_records"]) for a in document["alerts"]] == [
            ("max_rate", 4), ("max_rise", 4)]
        # the first alert tried three times; the webhook gave no answer, so the next once
        assert [(d["kind"], d["ok"], d["status"], d["tries"])
                for d in document["alert_deliveries"]] == [
            ("max_rate", False, None, 3), ("max_rise", False, None, 1)]
        # a misspelt rule in a setting's key never matches: said, with its code, every run
        assert [w["code"] for w in document["alert_setting_warnings"]] == ["SDPX-CFG-203"]
        assert ("sdp_expect.alert.orders.vaild_id.max_rate names no dataset or rule"
                in document["alert_setting_warnings"][0]["message"])
        assert "warning: [SDPX-CFG-203] sdp_expect.alert.orders.vaild_id" in second.stderr, \
            second.stderr

        # 3: 50 % > 30 %, and 25 points above the recent (1 + 4) / 20; --fail-on alert: 4
        _orders(orders, 5)
        with WebhookReceiver() as receiver:
            third = sdp_expect(*run, "--fail-on", "alert", "--alert-webhook", receiver.url,
                               cwd=tmp_path)
        assert third.returncode == 4, third.stdout + third.stderr
        assert "== Alerts: 2 triggered" in third.stdout, third.stdout
        assert ("ALERT max_rate: orders.small: 5 of 10 records failed (50%), above max_rate 30% "
                "(sdp_expect.alert.max_rate)") in third.stdout
        assert ("ALERT max_rise: orders.small: 5 of 10 records failed (50%), +25 pts over its "
                "recent rate 25% (2 updates), more than max_rise 20% (sdp_expect.alert.max_rise)"
                ) in third.stdout
        assert "small         warn  5 of 10 failed (50%)  recent 25% over 2 updates  (+25 pts)" \
            in third.stdout
        assert "events" in third.stdout and "no record checked" in third.stdout
        assert "2 alerts (exit status 4)" in third.stdout

        # after `spark-pipelines run` + `history record`: the same check on the newest update
        checked = sdp_expect("history", "alerts", "--spec", str(project), "--format", "json",
                             "--fail-on", "alert", cwd=tmp_path)
        assert checked.returncode == 4, checked.stdout + checked.stderr
        checked_document = json.loads(checked.stdout)

    rows = warm.tables[names.HISTORY_TABLE]
    updates = sorted({row["update_id"] for row in rows},
                     key=lambda u: min(str(r["update_time"]) for r in rows
                                       if r["update_id"] == u))
    assert len(updates) == 3
    # the comparison of update 2 (run's JSON) and 3 (history alerts) equal the oracle's
    trends = {(d["dataset"], r["expectation"]): r["trend"]
              for d in document["datasets"] for r in d["rules"]}
    assert trends == _oracle(rows, updates[1])
    assert trends[("events", "not_negative")]["total_records"] == 0
    assert trends[("events", "not_negative")]["recent_total_records"] == 2
    assert {(t.pop("dataset"), t.pop("expectation")): t
            for t in checked_document["trends"]} == _oracle(rows, updates[2])

    # the webhook's messages: one per alert, the documented JSON, equal to the oracle's
    assert [kind for kind, _ in receiver.bodies] == ["application/json; charset=utf-8"] * 2
    oracle = _oracle(rows, updates[2])[("orders", "small")]
    for (_, message), kind, bound in zip(receiver.bodies, ("max_rate", "max_rise"),
                                         ("30%", "20%"), strict=True):
        assert set(message) == {
            "schema", "pipeline", "update_id", "update_time", "dataset", "expectation",
            "action", "kind", "failed_records", "total_records", "failure_percentage",
            "bound", "bound_percentage", "setting", "recent_updates",
            "recent_failed_records", "recent_total_records", "recent_failure_percentage",
            "change_points", "text"}
        assert message["schema"] == "sdp-expect/alert/v1"
        assert (message["pipeline"], message["dataset"], message["expectation"],
                message["action"], message["kind"], message["bound"],
                message["setting"]) == ("cli_test", "orders", "small", "warn", kind, bound,
                                        f"sdp_expect.alert.{kind}")
        assert {k: message[k] for k in oracle} == oracle
    # history alerts gives the alerts of the same update as run did: the same messages
    assert checked_document["alerts"] == [message for _, message in receiver.bodies]
    assert all(a["update_id"] == updates[2] for a in checked_document["alerts"])
