"""The update stamp that quarantined records name (sdp_expect.base.update), and where the
plans put it: pure, no Spark."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdp_expect import sql
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.names import QUARANTINE_COLUMNS
from sdp_expect.base.update import UPDATE_VARIABLE, UpdateStamp
from sdp_expect.core.compiler import RuleLogic
from sdp_expect.core.model import Action, DatasetRules, Expectation

UTC = datetime.timezone.utc


@given(st.datetimes(min_value=datetime.datetime(1970, 1, 1),
                    max_value=datetime.datetime(2200, 1, 1),
                    timezones=st.sampled_from([UTC, datetime.timezone(
                        datetime.timedelta(hours=-5, minutes=-30))])),
       st.uuids())
def test_the_stamp_goes_through_the_environment_unchanged(
        started: datetime.datetime, id: object) -> None:
    stamp = UpdateStamp(str(id), started)
    assert UpdateStamp.from_environment({UPDATE_VARIABLE: stamp.to_environment()}) == stamp
    # The SQL time is the same instant, to the microsecond, in any session time zone.
    as_utc = started.astimezone(UTC).replace(tzinfo=None)
    assert datetime.datetime(1970, 1, 1) + datetime.timedelta(
        microseconds=stamp.micros) == as_utc
    assert stamp.time_sql() == f"timestamp_micros({stamp.micros})"


def test_without_the_variable_each_definition_gets_a_new_update() -> None:
    assert UpdateStamp.from_environment({}) is None
    first, second = UpdateStamp.new(), UpdateStamp.new()
    assert first.id != second.id and first.started.tzinfo is not None


@pytest.mark.parametrize("value", ["not json", '{"id": "u"}', '{"id": "u", "started": "x"}',
                                   '{"id": "u", "started": "2026-12-07T10:00:00"}',
                                   '{"id": "", "started": "2026-12-07T10:00:00+00:00"}',
                                   '["u"]'])
def test_a_variable_sdp_expect_did_not_write_is_refused_with_its_code(value: str) -> None:
    with pytest.raises(SdpExpectError) as raised:
        UpdateStamp.from_environment({UPDATE_VARIABLE: value})
    assert raised.value.code == "SDPX-DEF-121"
    assert UPDATE_VARIABLE in str(raised.value) and repr(value) in str(raised.value)


def test_the_quarantine_s_columns_carry_the_update_given_and_null_without_one() -> None:
    rules = DatasetRules("orders", [Expectation("valid_id", "id IS NOT NULL", Action.DROP)])
    stamp = UpdateStamp("5f0c", datetime.datetime(2026, 12, 7, 21, 0, tzinfo=UTC))
    columns = RuleLogic(rules, update=stamp).quarantine_columns()
    assert [c.rsplit(" AS ", 1)[1] for c in columns[1:]] == list(QUARANTINE_COLUMNS)
    assert columns[3:] == ["'5f0c' AS _quarantine_update",
                           f"timestamp_micros({stamp.micros}) AS _quarantine_time"]
    assert RuleLogic(rules).quarantine_columns()[3:] == [
        "CAST(NULL AS STRING) AS _quarantine_update",
        "CAST(NULL AS TIMESTAMP) AS _quarantine_time"]


def test_a_translation_saved_for_later_updates_knows_no_update() -> None:
    """``sdp-expect translate`` writes SQL that later updates run: no update is known
    when it is written, so the update columns are NULL; the key is there."""
    text = sql.translate("CREATE OR REFRESH MATERIALIZED VIEW o (CONSTRAINT ok EXPECT "
                         "(id > 0) ON VIOLATION DROP ROW) AS SELECT * FROM src;",
                         conf={"sdp_expect.quarantine": "true"})
    assert "CAST(NULL AS STRING) AS _quarantine_update" in text
    assert "AS _quarantine_key" in text
