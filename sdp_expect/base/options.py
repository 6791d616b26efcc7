"""Pipeline-wide settings of sdp-expect, read from the pipeline configuration.

They are set in ``spark-pipeline.yml``::

    configuration:
      sdp_expect.null_result: fail     # or pass: a NULL constraint result passes
      sdp_expect.quarantine: "false"   # "true": quarantine for every dataset with drop rules
      sdp_expect.metrics: "true"       # "false": no <dataset>_dq_metrics tables
      sdp_expect.multiple_flows_on_file_formats: error   # or allow (SDPX-DEF-112)
      sdp_expect.metrics_from: query   # or output: a materialized view's metrics counted
                                       # from the view and its quarantine
      sdp_expect.format: delta   # or iceberg, parquet: the tables' format
                                       # (sdp_expect.base.table_formats, docs/formats.md)

``spark-pipelines`` puts the configuration on the Spark session before the
pipeline's files are imported, so reading it is a configuration look-up, not
a Spark action.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from sdp_expect.base.errors import SdpExpectError
from sdp_expect.base.project import read_bool
from sdp_expect.base.table_formats import DEFAULT_FORMAT_KEY, KEY_TABLE_FORMAT, table_format

__all__ = ["KEY_DEFAULT_FORMAT", "KEY_FILE_FORMAT_FLOWS", "KEY_METRICS", "KEY_METRICS_FROM",
           "KEY_NULL_RESULT", "KEY_QUARANTINE", "OPTION_KEYS", "SETTING_PREFIX",
           "SETTING_PREFIXES", "PipelineOptions", "read_options"]

KEY_NULL_RESULT = "sdp_expect.null_result"
KEY_QUARANTINE = "sdp_expect.quarantine"
KEY_METRICS = "sdp_expect.metrics"
KEY_FILE_FORMAT_FLOWS = "sdp_expect.multiple_flows_on_file_formats"
KEY_METRICS_FROM = "sdp_expect.metrics_from"
KEY_DEFAULT_FORMAT = DEFAULT_FORMAT_KEY
"""Spark's own setting: the format of a table declared without one
(:data:`~sdp_expect.base.table_formats.DEFAULT_FORMAT_KEY`)."""
OPTION_KEYS = (KEY_NULL_RESULT, KEY_QUARANTINE, KEY_METRICS, KEY_FILE_FORMAT_FLOWS,
               KEY_METRICS_FROM)
"""The pipeline-wide settings :func:`read_options` reads (with ``sdp_expect.format``)."""
SETTING_PREFIX = "sdp_expect."
"""The prefix of every setting of sdp-expect in a spec's configuration."""
SETTING_PREFIXES = ("sdp_expect.alert.", "sdp_expect.migrate.")
"""Families of settings read elsewhere: the alerts (checked when ``run`` reads them,
before Spark starts; docs/alerts.md) and what ``migrate`` writes for the pipeline's own
code to read (``sdp_expect.migrate.data_root``)."""


@dataclass(frozen=True)
class PipelineOptions:
    """The pipeline-wide settings.

    :param null_passes: True when a NULL constraint result counts as passing
        (``sdp_expect.null_result = pass``); by default NULL is a violation.
    :param quarantine: True to give every dataset with drop rules a quarantine.
    :param metrics: False to create no ``<dataset>_dq_metrics`` tables.
    :param multiple_flows_on_file_formats: True (``allow``) to let two or more
        flows write a streaming table stored in one of Spark's file formats
        (SDPX-DEF-112 otherwise).
    :param metrics_from_output: True (``output``) to count a materialized view's
        metrics from what the view and its quarantine wrote, when it has a quarantine,
        instead of from a pass of their own over the query (``query``, the default).
    :param default_format: The format of a table declared without one
        (``spark.sql.sources.default``; Spark's default is parquet).
    """

    null_passes: bool = False
    quarantine: bool = False
    metrics: bool = True
    multiple_flows_on_file_formats: bool = False
    metrics_from_output: bool = False
    default_format: str = "parquet"


def _parse_bool(key: str, raw: str) -> bool:
    value = read_bool(raw)
    if value is not None:
        return value
    raise SdpExpectError("SDPX-CFG-201", f"{key} = {raw!r} is not 'true' or 'false'")


def _choice(key: str, raw: str, no: str, yes: str) -> bool:
    """A setting that takes one of two words: False for ``no``, True for ``yes``."""
    value = raw.strip().lower()
    if value in (no, yes):
        return value == yes
    raise SdpExpectError("SDPX-CFG-201", f"{key} = {raw!r} is not {no!r} or {yes!r}")


def read_options(get: Callable[[str], Optional[str]]) -> PipelineOptions:
    """Build :class:`PipelineOptions` from a configuration look-up.

    :param get: Returns the configured value of a key, or None when unset.
    :raises SdpExpectError: SDPX-CFG-201 for a value it does not understand; SDPX-CFG-204
        for a table format it does not know; SDPX-CFG-205 when the spec names a table
        format that the session's default format is not (a Spark started without the
        format's settings would store every table in another format).
    """
    default_format = get(KEY_DEFAULT_FORMAT) or "parquet"
    named_raw = get(KEY_TABLE_FORMAT)
    if named_raw:
        named = table_format({KEY_TABLE_FORMAT: named_raw})
        if named.name != default_format.strip().lower():
            raise SdpExpectError("SDPX-CFG-205", (
                f"the spec's configuration says {KEY_TABLE_FORMAT} = {named.name}, and the "
                f"Spark session running the pipeline stores tables as {default_format} "
                f"({KEY_DEFAULT_FORMAT}): it was not started with {named.title}'s jars and "
                "settings"))
    flows_raw = get(KEY_FILE_FORMAT_FLOWS)
    metrics_from_raw = get(KEY_METRICS_FROM)
    null_raw = get(KEY_NULL_RESULT)
    quarantine_raw = get(KEY_QUARANTINE)
    metrics_raw = get(KEY_METRICS)
    return PipelineOptions(
        null_passes=(_choice(KEY_NULL_RESULT, null_raw, "fail", "pass") if null_raw is not None
                     else False),
        quarantine=_parse_bool(KEY_QUARANTINE, quarantine_raw) if quarantine_raw else False,
        metrics=_parse_bool(KEY_METRICS, metrics_raw) if metrics_raw else True,
        multiple_flows_on_file_formats=(_choice(KEY_FILE_FORMAT_FLOWS, flows_raw, "error", "allow")
                                        if flows_raw else False),
        metrics_from_output=(_choice(KEY_METRICS_FROM, metrics_from_raw, "query", "output")
                             if metrics_from_raw else False),
        default_format=default_format,
    )
