"""The definitions file: facts about the graph, recorded while it is defined.

``sdp-expect run`` and ``dry-run`` name a file in :data:`DEFINITIONS_VARIABLE` for
their ``spark-pipelines`` child; while the pipeline is defined, the child appends
one JSON value per line (:func:`record_definition`), such as which check view
stands for which expectation. The tool layer reads it back
(:class:`sdp_expect.runtime.run_output.Definitions`): values, never text that was
printed. No pyspark here, so that both emitters and the tools can import it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Mapping, Optional, Sequence

from sdp_expect.base.errors import Location, SdpExpectError

__all__ = ["DEFINITIONS_VARIABLE", "DefinedDataset", "record_check_view", "record_dataset",
           "record_definition", "record_errors_on_exit", "record_query_view", "record_route"]

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


def record_query_view(view: str, *, dataset: str, flow: str, derived: Sequence[str]) -> None:
    """Record the check view of a flow's query alone (``{"kind": "query", ...}``).

    :param view: The view.
    :param dataset: The dataset with expectations.
    :param flow: The flow whose query it reads.
    :param derived: The flows that a broken constraint of the dataset also fails.
    """
    record_definition({"kind": "query", "view": view, "dataset": dataset, "flow": flow,
                       "derived": list(derived)})


def record_check_view(view: str, *, dataset: str, flow: str, expectation: str,
                      constraint: str, action: str, place: Optional[Location],
                      query_view: Optional[str]) -> None:
    """Record the check view of one rule (``{"kind": "check", ...}``): the rule, its
    ``file:line`` and the view of its flow's query alone.

    :param view: The view.
    :param dataset: The dataset with expectations.
    :param flow: The flow whose query it reads.
    :param expectation: The rule's name.
    :param constraint: The rule's constraint, as written.
    :param action: ``warn``, ``drop`` or ``fail``.
    :param place: Where the rule was declared.
    :param query_view: The view of the flow's query alone.
    """
    record_definition({
        "kind": "check", "view": view, "dataset": dataset, "flow": flow,
        "expectation": expectation, "constraint": constraint, "action": action,
        "location": None if place is None else str(place),
        "place": None if place is None else place.as_dict(), "query_view": query_view})


@dataclass(frozen=True)
class DefinedDataset:
    """A dataset sdp-expect registered, as the definitions file records it.

    :param name: Its name as registered (one, two or three parts).
    :param type: ``materialized view``, ``streaming table`` or ``temporary view``.
    :param owner: The dataset whose plan registered it (itself, or the dataset a
        companion belongs to).
    """

    name: str
    type: str
    owner: str


def record_dataset(name: str, *, type: str, owner: str) -> None:
    """Record a dataset sdp-expect registers (``{"kind": "dataset", ...}``): after a
    failed update, ``sdp-expect run`` brings back the last good data of the
    materialized views among them (:mod:`sdp_expect.quality.last_good`).

    :param name: The dataset, as registered.
    :param type: Its kind's value (``materialized view``, ``streaming table``,
        ``temporary view``).
    :param owner: The dataset whose plan registers it (itself, or the one a companion
        belongs to).
    """
    record_definition({"kind": "dataset", "name": name, "type": type, "owner": owner})


def record_route(flow: str, views: Mapping[str, Optional[str]]) -> None:
    """Record the route views a flow reads (``{"kind": "route", ...}``).

    :param flow: The flow.
    :param views: Each route view it reads -> the table it stands for (None: SQL text).
    """
    record_definition({"kind": "route", "flow": flow, "views": dict(views)})


def _coded(error: Optional[BaseException]) -> Optional[SdpExpectError]:
    """The sdp-expect error in an exception's chain (pyspark may wrap it)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, SdpExpectError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def record_errors_on_exit() -> None:
    """When a definitions file is asked for, record the coded error that stops the
    definition (``{"kind": "error", ...}``: code, dataset, expectation, place), so that
    tools read where it is as values instead of from the printed traceback.

    ``spark-pipelines`` lets an error raised while a pipeline file is imported reach the
    top of its process: Python's ``sys.excepthook`` sees it, and this records it first.
    """
    if not os.environ.get(DEFINITIONS_VARIABLE) or getattr(sys.excepthook, "_sdpx", False):
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], error: BaseException,
             trace: Optional[TracebackType]) -> None:
        coded = _coded(error)
        if coded is not None:
            record_definition({"kind": "error", **coded.as_dict()})
        previous(kind, error, trace)

    hook._sdpx = True  # type: ignore[attr-defined]
    sys.excepthook = hook
