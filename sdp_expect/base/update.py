"""The update a pipeline's definitions are registered for: its id and when it started.

Open-source SDP gives a flow no id of its update, and the time a streaming query
reads (``current_timestamp()``) is its micro-batch's. So the update is stamped
where sdp-expect sees it once: when the definitions are registered, once per
graph, which is once per update (``spark-pipelines run`` registers the graph anew
for each). The stamp goes into the plans as two literals, the same in every
micro-batch of the update (Spark compiles a projection once per update, not once
per micro-batch as it would a batch time), and into every quarantine record the
update writes (``_quarantine_update``, ``_quarantine_time``; docs/semantics.md).

``sdp-expect run`` makes the stamp itself and hands it to its ``spark-pipelines``
child in :data:`UPDATE_VARIABLE`, so that the history rows it records after the
update carry the same id. Under plain ``spark-pipelines`` a new one is made.

No pyspark here.
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from dataclasses import dataclass
from typing import Mapping, Optional

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.sqltokens import sql_string

__all__ = ["UPDATE_VARIABLE", "UpdateStamp"]

UPDATE_VARIABLE = "SDP_EXPECT_UPDATE"
"""The environment variable that hands the update's stamp to the definitions:
``{"id": "...", "started": "<ISO 8601 with offset>"}``."""

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class UpdateStamp:
    """One update of a pipeline.

    :param id: The update's id (a uuid4 unless given).
    :param started: When it started: an aware time, kept to the microsecond.
    """

    id: str
    started: datetime.datetime

    @classmethod
    def new(cls) -> UpdateStamp:
        """A new update, starting now."""
        return cls(str(uuid.uuid4()), datetime.datetime.now(datetime.timezone.utc))

    @classmethod
    def from_environment(cls, env: Optional[Mapping[str, str]] = None) -> Optional[UpdateStamp]:
        """The stamp :data:`UPDATE_VARIABLE` hands over; None when it is not set.

        :raises SdpExpectError: SDPX-DEF-121 when it is set to something else than
            :meth:`to_environment` writes.
        """
        text = (os.environ if env is None else env).get(UPDATE_VARIABLE)
        if not text:
            return None
        try:
            value = json.loads(text)
            started = datetime.datetime.fromisoformat(value["started"])
            stamp = cls(str(value["id"]), started)
        except (ValueError, TypeError, KeyError) as error:
            raise _malformed(text, str(error)) from None
        if started.tzinfo is None or not stamp.id:
            raise _malformed(text, "it needs an id and a start time with its offset")
        return stamp

    @classmethod
    def for_definitions(cls) -> UpdateStamp:
        """The update being defined: the one ``sdp-expect run`` hands over, else a new one."""
        return cls.from_environment() or cls.new()

    def to_environment(self) -> str:
        """The value of :data:`UPDATE_VARIABLE` that hands this update over."""
        return json.dumps({"id": self.id, "started": self.started.isoformat()})

    @property
    def micros(self) -> int:
        """The start as microseconds since 1970-01-01 UTC."""
        delta = self.started - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds

    def id_sql(self) -> str:
        """The id as a SQL string literal."""
        return sql_string(self.id)

    def time_sql(self) -> str:
        """The start as a SQL ``TIMESTAMP``, exact and whatever the session's time zone."""
        return f"timestamp_micros({self.micros})"


def _malformed(text: str, why: str) -> SdpExpectError:
    return SdpExpectError("SDPX-DEF-121", f"{UPDATE_VARIABLE}={text!r}: {why}")
