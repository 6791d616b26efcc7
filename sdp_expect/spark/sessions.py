"""The Spark Connect sessions sdp-expect opens in its own process.

A Spark Connect session closes its client when it is garbage-collected
(``SparkSession.__del__``), and on pyspark 4.1 that close shuts down the thread
pool every client of the process shares and waits for its threads
(SPARK-55362, SPARK-55406: fixed in 4.2). Garbage collection runs at any
allocation: in the middle of another session's call, or in a thread of that
pool, which then waits for itself forever. So a session sdp-expect opens (to
write the history, read a project's tables, warm a server up) is never left to
the collector: :func:`connect` keeps it referenced until the process ends, and
the caller stops it when done (a stopped session holds no server resources).
"""

from __future__ import annotations

from typing import Any

__all__ = ["connect"]

_OPENED: list[Any] = []
"""Every session :func:`connect` opened, referenced until the process ends."""


def connect(url: str) -> Any:
    """A new Spark Connect session on ``url`` (``sc://host:port/;token=...``), kept
    referenced until the process ends (see the module's text).

    :param url: The server's Spark Connect URL.
    :returns: The session (``pyspark.sql.connect.session.SparkSession``).
    """
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(url).create()
    _OPENED.append(session)
    return session
