"""The jars and Spark settings of a project's table format, fetched once and cached.

:func:`format_setup` reads the spec's ``sdp_expect.format``
(:mod:`sdp_expect.base.table_formats`), picks the release for the installed pyspark
line and makes sure its jars are in the jar cache: a jar already there is used as it
is (no network); one that is not is copied from ``~/.m2`` (what ``mvn
dependency:get`` left there) or downloaded from Maven Central, and checked against
the repository's SHA-1 before it is kept. Every Spark that sdp-expect starts for the
project (its server, the report's reader, the history table's writer) takes the
result: :meth:`FormatSetup.server_options` for ``spark-submit``,
:meth:`FormatSetup.confs` for a session builder.

Why not Spark's own ``--packages``: it also fetches the format's libraries'
dependencies (33 jars for Delta 4.4.0, among them older Jackson, log4j and Hadoop
jars than Spark's own), needs the network each time unless its Ivy cache is set up
by hand, and fails on the pom-only entries ``mvn dependency:get`` leaves in
``~/.m2``. The format's own jars are all Spark needs (docs/formats.md).

The cache folder: ``$SDP_EXPECT_JAR_CACHE``, else ``$XDG_CACHE_HOME/sdp-expect/jars``,
else ``~/.cache/sdp-expect/jars``, laid out as a Maven repository. The repository:
``$SDP_EXPECT_MAVEN_REPOSITORY`` (a mirror), else Maven Central.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import Project
from sdp_expect.base.table_formats import (
    DEFAULT_FORMAT_KEY,
    KEY_TABLE_FORMAT,
    Artifact,
    TableFormat,
    release_for,
    table_format,
)

__all__ = [
    "CACHE_VARIABLE",
    "MAVEN_CENTRAL",
    "REPOSITORY_VARIABLE",
    "FormatSetup",
    "fetch_artifact",
    "format_setup",
    "jar_cache",
]

CACHE_VARIABLE = "SDP_EXPECT_JAR_CACHE"
"""The environment variable that names the jar cache folder."""
REPOSITORY_VARIABLE = "SDP_EXPECT_MAVEN_REPOSITORY"
"""The environment variable that names a Maven repository to fetch from (a mirror)."""
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
"""Where jars come from by default."""
FETCH_TIMEOUT = 120.0
"""Seconds one download may take."""


@dataclass(frozen=True)
class FormatSetup:
    """What a Spark of the project needs for its table format.

    :param format: The format.
    :param jars: The jars to put on Spark's class path (none for parquet).
    :param settings: The Spark settings: the format's own and ``spark.sql.sources.default``.
    """

    format: TableFormat
    jars: tuple[Path, ...] = ()
    settings: Mapping[str, str] = field(default_factory=dict)

    def server_options(self) -> list[str]:
        """``spark-submit`` options: ``--jars`` and a ``--conf`` per setting."""
        options = ["--jars", ",".join(str(jar) for jar in self.jars)] if self.jars else []
        for key, value in self.settings.items():
            options += ["--conf", f"{key}={value}"]
        return options

    def confs(self) -> dict[str, str]:
        """The settings of a session started from Python, ``spark.jars`` among them."""
        jars = {"spark.jars": ",".join(str(jar) for jar in self.jars)} if self.jars else {}
        return {**jars, **self.settings}


def jar_cache(environ: Optional[Mapping[str, str]] = None) -> Path:
    """The jar cache folder (see the module's text)."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_VARIABLE):
        return Path(env[CACHE_VARIABLE]).expanduser()
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "sdp-expect" / "jars"


def _pyspark_version() -> str:
    return importlib.metadata.version("pyspark")


def format_setup(project: Project, *, given: Optional[Mapping[str, str]] = None,
                 pyspark_version: Optional[str] = None,
                 environ: Optional[Mapping[str, str]] = None) -> FormatSetup:
    """The jars and settings of ``project``'s table format, the jars fetched when the
    cache lacks them.

    :param project: The project (its spec's ``sdp_expect.format``).
    :param given: The command's own ``--conf`` settings: ``sdp_expect.format`` there
        chooses the format for this command, over the spec's.
    :param pyspark_version: The installed pyspark's version; default the one installed.
    :param environ: The environment (the cache and repository variables); default
        ``os.environ``.
    :raises SdpExpectError: SDPX-CFG-204 for a format it does not know; SDPX-PRJ-404
        when the pyspark line has no release of the format; SDPX-PRJ-405 when a jar
        cannot be had.
    """
    chosen = table_format({**project.configuration, **(given or {})})
    release = release_for(chosen, pyspark_version or _pyspark_version())
    if release is None:
        return FormatSetup(chosen)
    env = os.environ if environ is None else environ
    cache = jar_cache(env)
    repository = (env.get(REPOSITORY_VARIABLE) or MAVEN_CENTRAL).rstrip("/")
    jars = tuple(fetch_artifact(artifact, cache, repository, chosen) for artifact in
                 release.artifacts)
    return FormatSetup(chosen, jars, {**chosen.settings, DEFAULT_FORMAT_KEY: chosen.name})


def fetch_artifact(artifact: Artifact, cache: Path, repository: str,
                   chosen: TableFormat) -> Path:
    """The cached jar of ``artifact``: from the cache, else ``~/.m2``, else ``repository``.

    :raises SdpExpectError: SDPX-PRJ-405 when it cannot be had.
    """
    kept = cache / artifact.path
    if kept.is_file():
        return kept
    local = Path.home() / ".m2" / "repository" / artifact.path
    try:
        expected = _download(f"{repository}/{artifact.path}.sha1").decode("ascii").split()[0]
        data = local.read_bytes() if local.is_file() else b""
        if hashlib.sha1(data).hexdigest() != expected:
            data = _download(f"{repository}/{artifact.path}")
        if hashlib.sha1(data).hexdigest() != expected:
            raise OSError(f"its SHA-1 is not the repository's ({expected})")
        kept.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=kept.parent, delete=False) as handle:
            handle.write(data)
        shutil.move(handle.name, kept)  # whole or not at all
    except (OSError, ValueError, IndexError, UnicodeDecodeError) as error:
        raise SdpExpectError("SDPX-PRJ-405", (
            f"{KEY_TABLE_FORMAT} = {chosen.name} needs {artifact.coordinate}, which is not "
            f"in the jar cache ({kept}) and could not be fetched from {repository}: "
            f"{error}")) from None
    return kept


def _download(url: str) -> bytes:
    """The bytes at ``url`` (an OSError when they cannot be had)."""
    if not url.startswith(("https://", "http://", "file://")):
        raise ValueError(f"{url} is not an http(s) or file URL")
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response:
            body: bytes = response.read()
            return body
    except urllib.error.URLError as error:
        raise OSError(f"{url}: {error.reason}") from None
