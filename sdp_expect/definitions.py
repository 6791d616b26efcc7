"""The definitions file: facts about the graph, recorded while it is defined.

``sdp-expect run`` and ``dry-run`` name a file in :data:`DEFINITIONS_VARIABLE` for
their ``spark-pipelines`` child; while the pipeline is defined, the child appends
one JSON value per line (:func:`record_definition`), such as which check view
stands for which expectation. The tool layer reads it back
(:class:`sdp_expect.cli.run_output.Definitions`): values, never text that was
printed. No pyspark here, so that both emitters and the tools can import it.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["DEFINITIONS_VARIABLE", "record_definition"]

DEFINITIONS_VARIABLE = "SDP_EXPECT_DEFINITIONS"
"""The environment variable naming the definitions file (JSON lines)."""


def record_definition(entry: dict[str, Any]) -> None:
    """Append one fact about the graph to the definitions file, when one is asked for."""
    path = os.environ.get(DEFINITIONS_VARIABLE)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    except OSError:  # the file only improves the messages of sdp-expect run
        pass
