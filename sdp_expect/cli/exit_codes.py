"""What every ``sdp-expect`` command shares: its exit codes and the version it
reports (how it writes text: :mod:`sdp_expect.base.terminal`).

The commands import these from here, not from :mod:`sdp_expect.cli`, which
imports the commands to build its parser.
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["EXIT_ALERT", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "version"]

EXIT_OK = 0
"""Everything checked is fine."""
EXIT_PROBLEMS = 1
"""Something checked is wrong."""
EXIT_USAGE = 2
"""The command line itself is wrong."""
EXIT_ALERT = 4
"""``run --fail-on alert``: the run succeeded, and an alert fired (docs/alerts.md). 3 is
``migrate``'s "written, with constructs not converted"."""


def version() -> str:
    """The installed sdp-expect version (``sdp_expect.__version__``, else the package metadata)."""
    import sdp_expect

    found = getattr(sdp_expect, "__version__", None)
    if isinstance(found, str):
        return found
    try:
        return importlib.metadata.version("sdp-expect")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0+unknown"
