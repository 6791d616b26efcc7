"""The settings of sdp-expect in a spec's ``configuration``, checked before Spark starts.

A key under ``sdp_expect.`` is one sdp-expect reads: the pipeline-wide options
(:data:`~sdp_expect.base.options.OPTION_KEYS`), ``sdp_expect.format``, or one of the
families :data:`~sdp_expect.base.options.SETTING_PREFIXES` names. A misspelt key
(``sdp_expect.quarantne``) would be passed over without a word, and the pipeline would
run without what it asks for: SDPX-CFG-206, with the nearest key it knows. A value a
setting does not take is SDPX-CFG-201 (SDPX-CFG-204 for a format), and a
``spark.sql.sources.default`` the spec sets to another format than the one it names
SDPX-CFG-205, as when the pipeline is defined, here at the spec's line and all at once.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.options import OPTION_KEYS, SETTING_PREFIX, SETTING_PREFIXES, read_options
from sdp_expect.base.table_formats import DEFAULT_FORMAT_KEY, KEY_TABLE_FORMAT, table_format

__all__ = ["KNOWN_KEYS", "settings_problems"]

KNOWN_KEYS = (*OPTION_KEYS, KEY_TABLE_FORMAT)
"""The single settings of sdp-expect (the families apart)."""


def settings_problems(configuration: Mapping[str, str], lines: Mapping[str, int],
                      shown: str) -> list[SdpExpectError]:
    """Every ``sdp_expect.*`` setting of ``configuration`` that sdp-expect does not know
    or whose value it does not take, each at its line of the spec.

    :param configuration: The spec's ``configuration`` as text
        (:attr:`~sdp_expect.base.project.Project.configuration`; a value YAML read as
        something else is SDPX-PRJ-407's too, :mod:`sdp_expect.checks.spec`).
    :param lines: The line of each ``configuration.KEY``
        (:func:`~sdp_expect.checks.spec.key_lines`).
    :param shown: The spec's name in the errors.
    """
    problems: list[SdpExpectError] = []
    for key, value in configuration.items():
        if not key.startswith(SETTING_PREFIX) or key.startswith(SETTING_PREFIXES):
            continue
        where = Location(shown, lines.get(f"configuration.{key}"))
        if key not in KNOWN_KEYS:
            near = difflib.get_close_matches(key, [*KNOWN_KEYS, *SETTING_PREFIXES], n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            problems.append(SdpExpectError(
                "SDPX-CFG-206", f"{key} is not a setting sdp-expect knows{hint}: the "
                "pipeline would run as if it were not there", location=where))
            continue
        try:
            if key == KEY_TABLE_FORMAT:
                table_format({key: value})
            else:
                read_options({key: value}.get)
        except SdpExpectError as error:
            problems.append(SdpExpectError(error.code, error.detail, fix=error.fix,
                                           location=where))
    default = configuration.get(DEFAULT_FORMAT_KEY)
    if default is not None and not problems:
        # The spec sets Spark's default format itself: it must be the format it names
        # (SDPX-CFG-205, as at definition), else tables would be stored in another.
        try:
            read_options({KEY_TABLE_FORMAT: configuration.get(KEY_TABLE_FORMAT, ""),
                          DEFAULT_FORMAT_KEY: default}.get)
        except SdpExpectError as error:
            problems.append(SdpExpectError(error.code, error.detail, fix=error.fix,
                                           location=Location(shown, lines.get(
                                               f"configuration.{DEFAULT_FORMAT_KEY}"))))
    return problems
