"""Which Spark is installed, read without importing pyspark.

One place answers "does the installed Spark have this?": the Python API (names
that later Spark releases added to ``pyspark.pipelines``), the SQL front end
(``AUTO CDC`` in SQL) and ``sdp-expect validate``, which must not import
pyspark. The version comes from the installed distribution's metadata.
"""

from __future__ import annotations

import importlib.metadata
from typing import Optional

__all__ = [
    "AUTO_CDC_IN_SQL",
    "SCD_TYPE_2",
    "WATERMARK_IN_HIVE_SESSION",
    "installed_version",
    "release",
    "spark_has",
]

Release = tuple[int, int]

AUTO_CDC_IN_SQL: Release = (4, 3)
"""Spark reads ``CREATE FLOW ... AS AUTO CDC INTO`` in SQL from 4.3."""
SCD_TYPE_2: Release = (4, 3)
"""``create_auto_cdc_flow(stored_as_scd_type=2)`` from 4.3."""
WATERMARK_IN_HIVE_SESSION: Release = (4, 2)
"""SQL's ``WATERMARK`` clause resolves in a session with the Hive catalog from 4.2
(SPARK-56453): Spark 4.1's Hive session state lacks the rule that resolves it, so a
query using it fails with ``UNRESOLVED_COLUMN`` (the in-memory catalog is not affected)."""

_DISTRIBUTIONS = ("pyspark", "pyspark-client")


def installed_version() -> Optional[str]:
    """The installed pyspark's version, e.g. ``'4.1.4'``; ``None`` when none is installed."""
    for distribution in _DISTRIBUTIONS:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def release(version: str) -> Optional[Release]:
    """``(major, minor)`` of a version such as ``'4.3.0.dev1'``; ``None`` when unreadable.

    :param version: A pyspark version string.
    """
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return None
    return (major, minor)


def spark_has(since: Release, version: Optional[str] = None) -> bool:
    """Whether Spark of ``version`` (default: the installed one) is ``since`` or later.

    An unknown or unreadable version counts as having it: Spark then judges.

    :param since: The release that added the feature, e.g. ``(4, 3)``.
    :param version: A pyspark version; default :func:`installed_version`.
    """
    found = release(version) if version is not None else None
    if version is None:
        installed = installed_version()
        found = release(installed) if installed is not None else None
    return found is None or found >= since
