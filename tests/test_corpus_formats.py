"""The corpus on a table format: the projects of ``tests/corpus`` with
``sdp_expect.format`` in their spec, run with ``sdp-expect run --format json
--remote URL`` on the format's server (one for the module, as ``sdp-expect run``
starts a project's: ``format_server.py``), three updates each, and after every update
every table of the project's database read through Spark and compared with the same
plain-Python oracle as on parquet (``corpus_oracle.py``). The projects between them
hold drop, warn and fail rules, rule files, tolerances, temporary views, streaming
tables over files and over other streaming tables, joins, aggregates and SQL notebooks
(``test_corpus.py::test_the_corpus_covers_what_it_is_for``); every companion
(quarantine, metrics, batch log) must come out as on parquet, stored in the format.

Runs on the lines that have a release of the format (docs/formats.md), with the
``table_formats`` marker (docs/testing.md).
"""

from __future__ import annotations

import pytest
from corpus_oracle import ORACLES
from corpus_project import CORPUS, UPDATES, CorpusProject, assert_tables_equal, three_updates
from format_server import provider
from sdp_runner import SparkServer

from sdp_expect.base.table_formats import KEY_TABLE_FORMAT

pytestmark = pytest.mark.table_formats

_PROJECTS: dict[str, dict[str, CorpusProject]] = {}

FORMAT_PROJECTS = ("bike_rides", "iot_devices", "loans", "station_status")
"""The corpus projects run on a format: the three that use ``dropDuplicates`` (the
reads routing rewrites on 4.1 and 4.2) and ``loans``, Delta Live Tables Python
(``import dlt``), the code most pipelines moved off Databricks are written in. Between
them: pyspark.pipelines Python, a Delta Live Tables SQL notebook, a Databricks
notebook export, streaming tables over files and over streaming tables, joins,
aggregates, drop, warn and fail rules, a whole-pipeline quarantine. The other two run
on parquet on the newest line: ``retail_orders`` (Databricks SQL notebooks, as
``iot_devices``' SQL) and ``loan_risk`` (rule files: the same compiled rules as
decorators). An update on Delta costs two to three times one on parquet, and the two
cost 240 s of the 4.1 line's two cores (docs/testing.md, "Lines")."""


@pytest.mark.parametrize("name", FORMAT_PROJECTS)
def test_every_table_after_each_of_three_updates_in_the_format(
        format_server_of: tuple[str, SparkServer], tmp_path_factory: pytest.TempPathFactory,
        name: str) -> None:
    table_format, server = format_server_of
    done = _PROJECTS.setdefault(table_format, {})
    project = three_updates(server, tmp_path_factory.mktemp(f"{table_format}-{name}"), name,
                            done, configuration={KEY_TABLE_FORMAT: table_format})
    for update, actual, expected in zip(UPDATES, project.snapshots, project.expected,
                                        strict=True):
        assert_tables_equal(actual, expected.tables,
                            f"{name} on {table_format}, after update {update}")
    stored = {table: provider(project.spark, f"`{project.database}`.`{table}`")
              for table in project.snapshots[-1]}
    assert set(stored.values()) == {table_format}, stored


def test_the_format_projects_are_corpus_projects_with_every_routed_read() -> None:
    """A project renamed in the corpus must not drop out of the format's runs, and the
    projects whose reads routing rewrites (``dropDuplicates``) all run on the format."""
    assert set(FORMAT_PROJECTS) <= set(ORACLES)
    routed = {name for name in ORACLES
              if any("dropDuplicates" in path.read_text()
                     for path in (CORPUS / name).rglob("*") if path.suffix in (".py", ".sql"))}
    assert routed and routed <= set(FORMAT_PROJECTS), routed
