"""The table formats a project can store its tables in, and what each needs from Spark.

A project says its format once, in its spec::

    configuration:
      sdp_expect.format: delta     # or iceberg; parquet (Spark's own) by default

and every Spark that sdp-expect starts for it (``run``, ``dry-run``, ``serve``,
``report``, ``history``) then has the format's jars and settings for the installed
pyspark line, with ``spark.sql.sources.default`` set to the format: every table
declared without a format of its own (the user's datasets, the companions, the
history table, the event log) is stored in it.

This module holds the facts only (which release of which artifacts fits which pyspark
line, the Spark settings, what the format can do); no Spark, no network. Fetching the
jars is :mod:`sdp_expect.runtime.format_jars`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from sdp_expect.base.errors import SdpExpectError

__all__ = [
    "DEFAULT_FORMAT_KEY",
    "FILE_FORMATS",
    "FILE_TABLES_HAVE_NO_MERGE",
    "FORMATS",
    "KEY_TABLE_FORMAT",
    "Artifact",
    "Release",
    "TableFormat",
    "pyspark_line",
    "release_for",
    "run_format",
    "table_format",
]

KEY_TABLE_FORMAT = "sdp_expect.format"
"""The spec's setting that names the project's table format."""

DEFAULT_FORMAT_KEY = "spark.sql.sources.default"
"""Spark's own setting: the format of a table declared without one."""


@dataclass(frozen=True)
class Artifact:
    """One jar of Maven Central.

    :param group: Its group (``io.delta``).
    :param name: Its artifact name (``delta-spark_4.1_2.13``).
    :param version: Its version.
    """

    group: str
    name: str
    version: str

    @property
    def coordinate(self) -> str:
        """``group:name:version``, as ``--packages`` takes it."""
        return f"{self.group}:{self.name}:{self.version}"

    @property
    def path(self) -> str:
        """Its jar's path in a Maven repository (``io/delta/.../x-4.4.0.jar``)."""
        return (f"{self.group.replace('.', '/')}/{self.name}/{self.version}/"
                f"{self.name}-{self.version}.jar")

    @property
    def file_name(self) -> str:
        """Its jar's file name."""
        return f"{self.name}-{self.version}.jar"


@dataclass(frozen=True)
class Release:
    """The release of a format that a pyspark line runs with.

    :param version: The format's version.
    :param artifacts: The jars Spark needs on its class path: the format's own, not
        the libraries Spark already ships (see docs/formats.md on why not all that
        ``--packages`` would fetch).
    """

    version: str
    artifacts: tuple[Artifact, ...]


@dataclass(frozen=True)
class TableFormat:
    """A table format and what Spark needs to store tables in it.

    :param name: The name a spec gives and Spark's data source name (``delta``).
    :param title: The format as people write it (``Delta Lake``).
    :param releases: The release for each pyspark line (``"4.1"``) that has one.
    :param settings: The Spark settings that turn it on.
    :param transactional_appends: Whether several flows can append to one streaming
        table stored in it without losing records (the file sink of Spark's file
        formats cannot: SDPX-DEF-112).
    :param missing_lines: For a pyspark line without a release, why (what is
        missing upstream), for the message that stops the run.
    :param auto_cdc_refused: Why SDP refuses a table stored in it as the target of an
        Auto CDC flow (None: it takes one). SDP applies the changes with the row-level
        operations of Spark's table interface (DSv2 ``SupportsRowLevelOperations``)
        and checks the target for them when the flow starts.
    :param restorable: Whether sdp-expect brings a materialized view back to its last
        good version after a failed update (the format keeps versions, and sdp-expect
        knows how to restore one: :mod:`sdp_expect.quality.last_good`).
    """

    name: str
    title: str
    releases: Mapping[str, Release]
    settings: Mapping[str, str]
    transactional_appends: bool
    missing_lines: Mapping[str, str]
    auto_cdc_refused: Optional[str] = None
    restorable: bool = False


def _delta(line: str, version: str) -> Release:
    return Release(version, (Artifact("io.delta", f"delta-spark_{line}_2.13", version),
                             Artifact("io.delta", "delta-storage", version)))


DELTA = TableFormat(
    name="delta",
    title="Delta Lake",
    # Delta 4.4.0 for both lines: the 4.1 builds before the June 2026 fixes break on
    # Spark 4.1.2 and later (delta-io/delta#6867); 4.4.0 is tested on 4.1.4 and 4.2.1.
    releases={"4.1": _delta("4.1", "4.4.0"), "4.2": _delta("4.2", "4.4.0")},
    settings={
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    },
    transactional_appends=True,
    missing_lines={"4.3": "Delta Lake has no release for Spark 4.3 yet (the newest, 4.4.0, "
                          "is built for Spark 4.1 and 4.2)"},
    auto_cdc_refused=(
        "Delta Lake's tables do not offer Spark the row-level operations (MERGE through "
        "the DSv2 table interface) that SDP's Auto CDC writes with, so SDP refuses the "
        "target when the flow starts (AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE; the Spark "
        "issue SPARK-57623 is open)"),
    restorable=True,
)

_ICEBERG_NOT_YET = (
    "sdp-expect does not run Apache Iceberg yet: in the project's Spark server, Iceberg's "
    "Hive catalog (iceberg-spark-runtime-4.1_2.13 1.12.0) cannot open the embedded "
    "metastore that Spark's own catalog holds (docs/formats.md)")

ICEBERG = TableFormat(
    name="iceberg",
    title="Apache Iceberg",
    # The runtime of 1.12.0 for Spark 4.1, once the catalog question is settled:
    # Artifact("org.apache.iceberg", "iceberg-spark-runtime-4.1_2.13", "1.12.0").
    releases={},
    settings={
        "spark.sql.extensions":
            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
    },
    transactional_appends=True,
    missing_lines={
        "4.1": _ICEBERG_NOT_YET,
        "4.2": "Apache Iceberg has no runtime for Spark 4.2 yet (the newest, 1.12.0, is "
               "built for Spark 4.1)",
        "4.3": "Apache Iceberg has no runtime for Spark 4.3 yet (the newest, 1.12.0, is "
               "built for Spark 4.1)",
    },
)

FILE_FORMATS = frozenset({"parquet", "orc", "json", "csv", "text", "avro", "xml", "binaryfile"})
"""Spark's file sources: a streaming table stored in one of them is written by Spark's
file sink, whose commit log (``_spark_metadata``) has room for one writer only."""


FILE_TABLES_HAVE_NO_MERGE = (
    "Spark's file tables (parquet, orc, json, csv, ...) have no row-level operations (MERGE), "
    "which SDP's Auto CDC writes with, so SDP refuses the target when the flow starts "
    "(AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE)")
"""Why an Auto CDC flow cannot write a table in one of Spark's file formats."""

PARQUET = TableFormat(name="parquet", title="Parquet (Spark's own)", releases={}, settings={},
                      transactional_appends=False, missing_lines={},
                      auto_cdc_refused=FILE_TABLES_HAVE_NO_MERGE)

FORMATS: Mapping[str, TableFormat] = {f.name: f for f in (PARQUET, DELTA, ICEBERG)}
"""The formats a spec can name, by name."""


def table_format(configuration: Mapping[str, str]) -> TableFormat:
    """The format a spec's configuration names (parquet when it names none).

    :raises SdpExpectError: SDPX-CFG-204 for a name that is not one of :data:`FORMATS`.
    """
    raw = configuration.get(KEY_TABLE_FORMAT)
    name = (raw or "parquet").strip().lower()
    if name not in FORMATS:
        raise SdpExpectError("SDPX-CFG-204", f"{KEY_TABLE_FORMAT} = {raw!r} is not a table "
                             f"format sdp-expect knows ({', '.join(FORMATS)})")
    return FORMATS[name]


def run_format(configuration: Mapping[str, str], confs: Mapping[str, str]) -> TableFormat:
    """The format a run stores its tables in: ``sdp_expect.format`` of the run's ``--conf``
    or the spec, else Spark's ``spark.sql.sources.default`` among the run's settings when
    it names a format sdp-expect knows, else parquet.

    :raises SdpExpectError: SDPX-CFG-204 for a ``sdp_expect.format`` it does not know.
    """
    named = confs.get(KEY_TABLE_FORMAT) or configuration.get(KEY_TABLE_FORMAT)
    if named:
        return table_format({KEY_TABLE_FORMAT: named})
    default = (confs.get(DEFAULT_FORMAT_KEY) or configuration.get(DEFAULT_FORMAT_KEY)
               or "parquet")
    return FORMATS.get(default.strip().lower(), PARQUET)


def as_run_sees(configuration: Mapping[str, str]) -> dict[str, str]:
    """A spec's configuration as the session ``sdp-expect run`` starts for it sees it:
    where it names a format (``sdp_expect.format``), with that format as
    ``spark.sql.sources.default`` (unless the configuration sets that itself). What
    static checks (``translate --spec``, ``migrate``) translate with, so that they
    accept what the run will accept.

    :raises SdpExpectError: SDPX-CFG-204 for a ``sdp_expect.format`` it does not know.
    """
    seen = dict(configuration)
    if seen.get(KEY_TABLE_FORMAT):
        seen.setdefault(DEFAULT_FORMAT_KEY, run_format(seen, {}).name)
    return seen


def pyspark_line(version: str) -> str:
    """The line of a pyspark version: ``4.1`` for ``4.1.4`` (or ``4.1.0.dev1``)."""
    return ".".join(version.split(".")[:2])


def release_for(chosen: TableFormat, pyspark_version: str) -> Optional[Release]:
    """The release of ``chosen`` for the installed pyspark; None for a format that needs
    no jars (parquet).

    :raises SdpExpectError: SDPX-PRJ-404 when the pyspark line has no release of it.
    """
    if not chosen.releases and not chosen.missing_lines:
        return None  # Spark's own (parquet): no jars
    line = pyspark_line(pyspark_version)
    release = chosen.releases.get(line)
    if release is not None:
        return release
    why = chosen.missing_lines.get(line, f"{chosen.title} has no release for Spark {line}")
    if not chosen.releases:
        raise SdpExpectError(
            "SDPX-PRJ-404", f"{KEY_TABLE_FORMAT} = {chosen.name}, and pyspark "
            f"{pyspark_version} is installed: {why}",
            fix=f"choose another format in {KEY_TABLE_FORMAT} (delta, or parquet); "
                "docs/formats.md says what runs where")
    lines = ", ".join(sorted(chosen.releases))
    raise SdpExpectError(
        "SDPX-PRJ-404",
        f"{KEY_TABLE_FORMAT} = {chosen.name}, and pyspark {pyspark_version} is installed: "
        f"{why}. sdp-expect runs {chosen.title} on pyspark {lines}",
        fix=f"install a pyspark of a line {chosen.title} supports (pip install "
            f"'pyspark[pipelines]~={sorted(chosen.releases)[-1]}.0'), or choose another "
            f"format in {KEY_TABLE_FORMAT}; docs/formats.md lists the lines")
