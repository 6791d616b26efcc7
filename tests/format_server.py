"""A Spark Connect server for one table format, as ``sdp-expect run`` starts a project's
(:func:`sdp_expect.runtime.format_jars.format_setup`: the format's jars from the jar
cache, its settings, ``spark.sql.sources.default``): the ``format_server_of`` fixture
of conftest.py. Used by the tests of the ``table_formats`` marker
(``test_table_formats_spark.py``, ``test_corpus_formats.py``), which run on the pyspark
lines that have a release of the format and skip, with the reason, on the others
(docs/formats.md, docs/testing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyspark
import pytest
from sdp_runner import SparkServer, server_conf

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import Project
from sdp_expect.base.table_formats import FORMATS, KEY_TABLE_FORMAT, release_for
from sdp_expect.runtime.format_jars import format_setup

TESTED_FORMATS = ("delta",)
"""The formats whose pipelines the tests run. Iceberg has no release on any line yet
(refused with SDPX-PRJ-404; ``test_table_formats.py`` checks the refusal)."""


TEST_SPEED: dict[str, tuple[tuple[str, str], ...]] = {
    "delta": (("spark.databricks.delta.snapshotPartitions", "2"),),
}
"""Settings for speed only, as Delta's own tests set them: a Delta table's log is
replayed in 50 tasks by default, which on the tests' small tables and two cores is
most of a query's time (docs/testing.md)."""


def start(name: str, workdir: Path) -> Iterator[SparkServer]:
    """A server for the format ``name`` (a module fixture's body); skips the module when
    the installed pyspark line has no release of it."""
    try:
        release_for(FORMATS[name], pyspark.__version__)
    except SdpExpectError as error:
        lines = ", ".join(sorted(FORMATS[name].releases)) or "none yet"
        pytest.skip(f"{error.detail} (SDPX-PRJ-404): these tests run on the pyspark lines "
                    f"{FORMATS[name].title} has a release for ({lines}), which "
                    "scripts/test.sh --all runs them on (docs/testing.md)")
    setup = format_setup(Project(spec=workdir / "spark-pipeline.yml",
                                 configuration={KEY_TABLE_FORMAT: name}))
    server = SparkServer(workdir, conf=[*server_conf(), *setup.confs().items(),
                                        *TEST_SPEED.get(name, ())])
    try:
        yield server
    finally:
        server.stop()


def provider(spark: Any, table: str) -> str:
    """The provider of ``table`` (a quoted, qualified name), as ``DESCRIBE TABLE
    EXTENDED`` gives it, in lower case: the format the table is stored in."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return next(str(row[1]) for row in rows if row[0] == "Provider").lower()
