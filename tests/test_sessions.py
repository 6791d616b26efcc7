"""The sessions sdp-expect opens in its own process are never left to the garbage
collector (``sdp_expect.spark.sessions``): on pyspark 4.1 a collected Spark Connect
session shuts down the thread pool all clients share and can wait for itself forever."""

from __future__ import annotations

import gc
import weakref

from sdp_runner import SparkServer

from sdp_expect.spark.sessions import connect


def test_a_session_sdp_expect_opens_outlives_every_reference_but_its_own(
        spark_server: SparkServer) -> None:
    session = connect(spark_server.url)
    assert session.range(3).count() == 3
    session.stop()
    seen = weakref.ref(session)
    del session
    gc.collect()
    assert seen() is not None, "the session was garbage-collected: its __del__ may deadlock"
