"""Each quarantined record's key and update (docs/semantics.md#quarantine), on real
updates: a materialized view's quarantine (recomputed each update) and a streaming
table's (appended to), over two updates of one pipeline.

The key is checked against :func:`record_key.record_key` (SHA-256 of the record's JSON,
computed in plain Python); the update by what the updates share and do not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark import pipelines as sdp
from pyspark.sql import DataFrame
from pyspark.sql.connect.session import SparkSession
from record_key import record_key
from sdp_runner import MakePipeline

from sdp_expect import pipelines as dp
from sdp_expect.base.names import (
    FAILED_EXPECTATIONS_COLUMN,
    QUARANTINE_COLUMNS,
    QUARANTINE_KEY_COLUMN,
    QUARANTINE_TIME_COLUMN,
    QUARANTINE_UPDATE_COLUMN,
)

SCHEMA = "id INT, amount INT, name STRING"
COLUMNS = ["id", "amount", "name"]
FIRST = [(1, 5, "a"), (None, 7, "b"), (3, -2, "c"), (3, -2, "c"), (4, None, None)]
"""Two records identical in every column (one key), a NULL in a record."""
SECOND = [(5, -9, "d"), (None, 7, "b")]
"""A new bad record, and one written as a record of the first update was."""


def write_json(folder: Path, name: str, rows: list[tuple[Any, ...]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(
        json.dumps(dict(zip(COLUMNS, row, strict=True))) + "\n" for row in rows))


def quarantined(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The oracle: the records that break a drop rule (``id IS NOT NULL``, ``amount >=
    0``; a NULL verdict breaks it), each with its key."""
    bad = [r for r in rows if r[0] is None or r[1] is None or r[1] < 0]
    return sorted(((r, record_key(dict(zip(COLUMNS, r, strict=True)))) for r in bad), key=repr)


def records(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(((tuple(r[c] for c in COLUMNS), r[QUARANTINE_KEY_COLUMN]) for r in rows),
                  key=repr)


def updates(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], Any]:
    """Per record, the update (id, start) that quarantined it; records alike: one."""
    found: dict[tuple[Any, ...], set[Any]] = {}
    for r in rows:
        found.setdefault(tuple(r[c] for c in COLUMNS), set()).add(
            (r[QUARANTINE_UPDATE_COLUMN], r[QUARANTINE_TIME_COLUMN]))
    assert all(len(v) == 1 for v in found.values()), found
    return {record: next(iter(v)) for record, v in found.items()}


def stream_with_rules(spark: SparkSession, inbox: Path) -> None:
    """The streaming table ``stream`` over the inbox, with the oracle's two drop rules
    and a quarantine."""

    @dp.table
    @dp.quarantine()
    @dp.expect_or_drop("valid_id", "id IS NOT NULL")
    @dp.expect_or_drop("not_negative", "amount >= 0")
    def stream() -> DataFrame:
        return spark.readStream.schema(SCHEMA).json(str(inbox))


def test_a_quarantined_record_has_its_key_and_the_update_that_quarantined_it(
        make_pipeline: MakePipeline) -> None:
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")

    def define(spark: SparkSession) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect_or_drop("valid_id", "id IS NOT NULL")
        @dp.expect_or_drop("not_negative", "amount >= 0")
        def batch() -> DataFrame:
            return spark.read.schema(SCHEMA).json(str(inbox))

        stream_with_rules(spark, inbox)

    pipeline.definitions = define
    write_json(inbox, "1.json", FIRST)
    first = pipeline.run()
    assert first.ok, first.output
    for table in ("batch_quarantine", "stream_quarantine"):
        assert first.table(table).columns == [*COLUMNS, *QUARANTINE_COLUMNS]
        assert records(first.rows(table)) == quarantined(FIRST), table
    schema = {f.name: f.dataType.simpleString() for f in first.table("stream_quarantine").schema}
    assert [schema[c] for c in QUARANTINE_COLUMNS] == [
        "array<string>", "string", "string", "timestamp"]
    one = set(updates(first.rows("batch_quarantine")).values())
    assert one == set(updates(first.rows("stream_quarantine")).values())
    assert len(one) == 1, one  # every record of both tables: the one update
    first_update = next(iter(one))

    write_json(inbox, "2.json", SECOND)
    second = pipeline.run()
    assert second.ok, second.output
    # The materialized view's quarantine is recomputed: every record again, each with
    # the key it had, now all of the second update.
    assert records(second.rows("batch_quarantine")) == quarantined(FIRST + SECOND)
    recomputed = set(updates(second.rows("batch_quarantine")).values())
    assert len(recomputed) == 1 and recomputed != one, recomputed
    second_update = next(iter(recomputed))
    assert second_update[1] > first_update[1]  # started later
    # The streaming table's keeps what the first update wrote, as it was, and appends
    # the second's records: the record written as one of the first's has its key, and
    # each is counted by the update that read it.
    stream = second.rows("stream_quarantine")
    assert records(stream) == quarantined(FIRST + SECOND)
    by_update: dict[Any, list[tuple[Any, ...]]] = {}
    for r in stream:
        by_update.setdefault(r[QUARANTINE_UPDATE_COLUMN], []).append(
            (tuple(r[c] for c in COLUMNS), r[QUARANTINE_TIME_COLUMN]))
    assert sorted(by_update[first_update[0]], key=repr) == sorted(
        ((r, first_update[1]) for r, _ in quarantined(FIRST)), key=repr)
    assert sorted(by_update[second_update[0]], key=repr) == sorted(
        ((r, second_update[1]) for r, _ in quarantined(SECOND)), key=repr)
    assert {r[FAILED_EXPECTATIONS_COLUMN][0] for r in stream} == {"valid_id", "not_negative"}


def test_a_streaming_quarantine_written_before_the_key_and_update_gains_them(
        make_pipeline: MakePipeline) -> None:
    """A streaming table's quarantine that an earlier sdp-expect wrote (its records and
    ``_failed_expectations``, from the same flows): the next update adds the three
    columns, the earlier records keep theirs (NULL in the new ones), none is lost or
    written again, and the new records have their key and update."""
    pipeline = make_pipeline()
    inbox = pipeline.path("inbox")

    def earlier(spark: SparkSession) -> None:
        # What an earlier version registered: the same names, no key or update.
        def source() -> DataFrame:
            return spark.readStream.schema(SCHEMA).json(str(inbox))

        sdp.create_streaming_table("stream")
        sdp.create_streaming_table("stream_quarantine")

        @sdp.append_flow(target="stream", name="stream")
        def kept() -> DataFrame:
            return source().where("id IS NOT NULL AND amount >= 0")

        @sdp.append_flow(target="stream_quarantine", name="stream_to_quarantine")
        def dropped() -> DataFrame:
            return source().where("NOT coalesce(id IS NOT NULL AND amount >= 0, false)") \
                .selectExpr("*", "CAST(array('earlier') AS ARRAY<STRING>) "
                            "AS _failed_expectations")

    pipeline.definitions = earlier
    write_json(inbox, "1.json", FIRST)
    first = pipeline.run()
    assert first.ok, first.output
    assert first.table("stream_quarantine").columns == [*COLUMNS, FAILED_EXPECTATIONS_COLUMN]

    pipeline.definitions = lambda spark: stream_with_rules(spark, inbox)
    write_json(inbox, "2.json", SECOND)
    second = pipeline.run()
    assert second.ok, second.output
    # Spark adds the new columns at the end of the table, in its own order.
    columns = second.table("stream_quarantine").columns
    assert columns[:4] == [*COLUMNS, FAILED_EXPECTATIONS_COLUMN]
    assert sorted(columns[4:]) == sorted(QUARANTINE_COLUMNS[1:])
    rows = second.rows("stream_quarantine")
    old = sorted((tuple(r[c] for c in COLUMNS) for r in rows
                  if r[FAILED_EXPECTATIONS_COLUMN] == ["earlier"]), key=repr)
    assert old == sorted((r for r, _ in quarantined(FIRST)), key=repr)
    assert all(r[c] is None for r in rows if r[FAILED_EXPECTATIONS_COLUMN] == ["earlier"]
               for c in QUARANTINE_COLUMNS[1:])
    new = [r for r in rows if r[FAILED_EXPECTATIONS_COLUMN] != ["earlier"]]
    assert records(new) == quarantined(SECOND)
    assert len(updates(new)) == len(quarantined(SECOND)) and None not in {
        r[QUARANTINE_UPDATE_COLUMN] for r in new}
    assert [r["id"] for r in second.rows("stream")] == [1]
