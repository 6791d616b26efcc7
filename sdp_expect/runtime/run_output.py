"""What ``sdp-expect run`` / ``dry-run`` show of ``spark-pipelines``' output by default.

The child's output is sorted by the *kind* of each line, not by what it says:

- an **event** (``2026-01-31 12:00:00: ...``, printed by ``spark-pipelines`` for each
  pipeline event) is shown: its first line, and the first line of its error
  (``Error: [ERROR_CLASS] Spark's message``); the rest of the event (Spark's plans,
  stack traces) goes to the log file only;
- the JVM's log (``spark-pipelines``' stderr: log4j lines, Java stack traces, the
  launcher's warnings) is read apart (:func:`sdp_expect.runtime.spark_pipelines.run_pipeline`) and
  goes to the log file only; so does a log4j line on stdout and what follows it;
- Python warnings and other lines outside an event go to the log file only;
- a line with an sdp-expect code (``[SDPX-...]``) is always shown;
- a **Python traceback** is shown as the first line of its exception (the frames and
  the rest of the message go to the log file), and not at all when every failure it
  reports was already explained.

A flow that fails to resolve is matched, by its name, with the check views that
sdp-expect registered (one per rule, :func:`sdp_expect.base.names.check_view_name`)
and that the child recorded in the definitions file (JSON lines, values): a failed
check view becomes one ``SDPX-DEF-111`` line naming the dataset, the expectation,
its ``file:line`` and Spark's reason, and the failures of the same flow's dataset
and companions (caused by the same constraint) are left to the log file.

A read that sdp-expect routed through a graph-only view (:mod:`sdp_expect.spark.routing`) and
that fails (a table that does not exist, a mistake in ``spark.sql`` text) fails the route
view's flow first. The definitions file records which route views each flow reads and
the table each stands for, so that the failure is shown as plain SDP shows it: as the
user's flow's own failure with Spark's reason; no route view is named, and a flow that
failed because of an upstream route view names the table the view stands for.

A fail rule (or a tolerance, or a dataset rule) stops its flow with sdp-expect's own
message (:mod:`sdp_expect.base.violation`). Delta Lake's writer wraps it
(``Error: [TASK_WRITE_FAILED] Task failed while writing rows to ...``) in the event of
the dataset's own flow, while the dataset's companions report it as it is: the message
is then shown under the wrapped error, once (:meth:`ChildOutput.causes`,
:data:`CAUSED_BY`), so the failure reads the same on every table format.

The only Spark text read here is the start of three event messages
(:data:`RESOLUTION_FAILURE`, :data:`ERROR_PREFIX`, a flow's state in
:data:`FLOW_EVENT`), sdp-expect's own messages in an error line, the position suffix
Spark adds to an analysis message (:data:`POSITION`), and, in an upstream failure's
error line, the quoted name of a route view (a name sdp-expect made, looked for as it
was recorded); tests/test_rule_resolution.py and tests/test_wrapped_failures.py check
them on real output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from sdp_expect.base import violation as messages
from sdp_expect.base.definitions import DefinedDataset
from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.violation import DatasetRuleFailure, ToleranceFailure, Violation

__all__ = ["CAUSED_BY", "EVENT", "FLOW_EVENT", "ChildOutput", "Definitions", "RuleError",
           "line_kind"]



EVENT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: ")
"""How ``spark-pipelines`` prints a pipeline event: its timestamp, then its message."""
LOG4J = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d [A-Z]+ ")
"""Spark's console log4j layout (``yy/MM/dd HH:mm:ss LEVEL``)."""
RESOLUTION_FAILURE = re.compile(
    r"Failed to resolve flow(?P<upstream> due to upstream failure)?: '(?P<flow>[^']+)'")
"""The event SDP sends for a flow it cannot analyse, or does not analyse because a flow
it reads failed (Spark 4.1 to 4.3)."""
FLOW_EVENT = re.compile(EVENT.pattern + r"Flow (?:'(?P<quoted>[^']+)'|(?P<flow>\S+)) "
                        r"(?:(?:is|has) )?(?P<state>[A-Z_]+)\b")
"""A flow's progress event: ``Flow a.b.c is RUNNING.``, ``Flow 'a.b.c' has FAILED.``,
``Flow 'a.b.c' SKIPPED due to upstream failure(s).`` (the wording varies by Spark line)."""
ERROR_PREFIX = "Error: "
"""How ``spark-pipelines`` prints an event's error, on the line after the event."""
CAUSED_BY = "  caused by: "
"""How a failed flow's sdp-expect message is shown under the error that wrapped it."""
POSITION = re.compile(r";?\s*line \d+ pos \d+;?\s*$")
"""The position in the *generated* query that Spark appends to an analysis message."""
TRACEBACK = "Traceback (most recent call last):"


def line_kind(line: str) -> str:
    """``event``, ``log4j``, ``traceback``, ``coded`` or ``other``."""
    if EVENT.match(line):
        return "event"
    if LOG4J.match(line):
        return "log4j"
    if line.startswith(TRACEBACK):
        return "traceback"
    if "[SDPX-" in line:
        return "coded"
    return "other"


def _has_message(line: str) -> bool:
    """Whether an error line carries one of sdp-expect's messages (a violation, rules over
    their tolerance, dataset rules not met)."""
    return bool(messages.find_all(line) or messages.find_tolerance_failures(line)
                or messages.find_dataset_rule_failures(line))


def short_name(flow: str) -> str:
    """A flow's name without catalog and database (``spark_catalog.default.x`` -> ``x``)."""
    return flow.rsplit(".", 1)[-1].strip("`")


@dataclass
class Definitions:
    """What the child recorded while the pipeline was defined (the definitions file)."""

    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Check view name -> the rule it checks."""
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Query view name -> the flow, the dataset and the flows derived from it."""
    errors: list[dict[str, Any]] = field(default_factory=list)
    """The coded error that stopped the definition (``SdpExpectError.as_dict``), if any."""
    routes: dict[str, dict[str, Optional[str]]] = field(default_factory=dict)
    """Flow name -> the route views it reads -> the table each stands for (``None``: SQL
    text)."""
    datasets: list[DefinedDataset] = field(default_factory=list)
    """The datasets sdp-expect registered, in order (``record_dataset``)."""

    def route_views(self) -> dict[str, Optional[str]]:
        """Every route view of the graph -> the table it stands for."""
        return {view: reads for views in self.routes.values() for view, reads in views.items()}

    @classmethod
    def read(cls, path: Optional[Path]) -> Definitions:
        """The definitions in ``path`` (JSON lines); empty when there is none."""
        found = cls()
        if path is None or not path.is_file():
            return found
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(text)
            except ValueError:
                continue
            kind = entry.get("kind") if isinstance(entry, dict) else None
            if kind == "check":
                found.checks[str(entry["view"])] = entry
            elif kind == "query":
                found.queries[str(entry["view"])] = entry
            elif kind == "error":
                found.errors.append(entry)
            elif kind == "dataset":
                found.datasets.append(DefinedDataset(str(entry.get("name")),
                                                     str(entry.get("type")),
                                                     str(entry.get("owner"))))
            elif kind == "route" and isinstance(entry.get("views"), dict):
                found.routes.setdefault(str(entry["flow"]), {}).update(
                    {str(view): None if reads is None else str(reads)
                     for view, reads in entry["views"].items()})
        return found


@dataclass(frozen=True)
class RuleError:
    """A constraint Spark could not analyse (SDPX-DEF-111)."""

    dataset: str
    expectation: str
    constraint: str
    reason: str
    place: Optional[Location] = None
    """Where the expectation was declared, when the child recorded it."""

    def error(self) -> SdpExpectError:
        """The coded error."""
        return SdpExpectError(
            "SDPX-DEF-111",
            f"Spark cannot analyse the constraint {self.constraint!r}: {self.reason}",
            dataset=self.dataset, expectation=self.expectation,
            location=self.place)

    def as_dict(self) -> dict[str, Any]:
        """For ``--format json``."""
        return {**self.error().as_dict(), "constraint": self.constraint,
                "reason": self.reason}


def spark_reason(error_line: str) -> str:
    """Spark's message from an event's error line, without the generated query's position."""
    text = error_line[len(ERROR_PREFIX):] if error_line.startswith(ERROR_PREFIX) else error_line
    return POSITION.sub("", text.strip()).strip()


@dataclass
class _Block:
    lines: list[str]
    flow: str
    upstream: bool
    error: str = ""

    def as_own_failure(self, cause: _Block) -> _Block:
        """This upstream failure told as its own, with ``cause``'s error: what plain SDP
        says of a flow whose own read fails."""
        first = self.lines[0]
        match = RESOLUTION_FAILURE.search(first)
        if match is not None:
            first = (first[:match.start()] + f"Failed to resolve flow: '{match.group('flow')}'"
                     + first[match.end():])
        return _Block([first, *cause.lines[1:]], self.flow, False, cause.error)


def _without_route_views(failed: dict[str, _Block],
                         definitions: Definitions) -> dict[str, _Block]:
    """``failed`` (short flow name -> block) as if the reads had not been routed.

    A route view that fails on its own makes each flow that reads it (and the flows
    sdp-expect derives from that flow's query: its companions) fail on its own with
    the view's error; no route view is kept; an upstream failure whose error names a
    route view names the table the view stands for instead (or shows no error when the
    view stands for SQL text)."""
    views = definitions.route_views()
    if not views:
        return failed
    roots = {name: block for name, block in failed.items()
             if name in views and not block.upstream}
    kept = {name: block for name, block in failed.items() if name not in views}
    derived = {str(query.get("flow")): [str(name) for name in query.get("derived", [])]
               for query in definitions.queries.values()}
    for flow, read in definitions.routes.items():
        cause = next((roots[view] for view in read if view in roots), None)
        if cause is None:
            continue
        for reader in dict.fromkeys([flow, *derived.get(flow, [])]):
            block = kept.get(reader)
            if block is not None and block.upstream:
                kept[reader] = block.as_own_failure(cause)
    for block in kept.values():
        named = next((view for view in views if f"'{view}'" in block.error), None)
        if named is not None:
            table = views[named]
            block.error = "" if table is None else block.error.replace(
                f"'{named}'", f"'{table}'")
    return kept


class ChildOutput:
    """Sorts the child's lines into what the default output shows (:meth:`feed`).

    :param definitions: Where the child records its definitions (read when needed).
    """

    def __init__(self, definitions: Optional[Path]) -> None:
        self.definitions_path = definitions
        self.rule_errors: list[RuleError] = []
        self._block = "none"  # the kind of block the current line continues
        self._event_error_shown = True
        self._pending: list[_Block] = []
        self._explained = False
        self._traceback: list[str] = []
        self._failed_flow: Optional[str] = None  # the flow of the current FAILED event
        self._untold: set[str] = set()  # datasets whose error line held no message
        self._told: set[str] = set()

    def feed(self, line: str) -> list[str]:
        """The lines to show for one line of the child's output (newline included)."""
        kind = line_kind(line)
        shown: list[str] = []
        if kind in ("event", "log4j", "traceback") and self._pending:
            if not (kind == "event" and RESOLUTION_FAILURE.search(line)):
                shown += self._flush()
        if kind != "other" and self._block == "traceback" and kind != "coded":
            shown += self._end_traceback()
        if kind == "coded":
            return [*shown, line]
        if kind == "event":
            match = RESOLUTION_FAILURE.search(line)
            if match:
                self._pending.append(_Block([line], match.group("flow"),
                                            bool(match.group("upstream"))))
                self._block = "resolution"
                return shown
            self._block, self._event_error_shown = "event", False
            flow = FLOW_EVENT.match(line)
            self._failed_flow = (short_name(flow.group("quoted") or flow.group("flow"))
                                 if flow is not None and flow.group("state") == "FAILED"
                                 else None)
            return [*shown, line]
        if kind in ("log4j", "traceback"):
            self._block = kind
            if kind == "traceback":
                self._traceback = [line]
            return shown
        # a continuation line
        if self._block == "resolution":
            block = self._pending[-1]
            block.lines.append(line)
            if not block.error and line.startswith(ERROR_PREFIX):
                block.error = line
        elif self._block == "event" and not self._event_error_shown \
                and line.startswith(ERROR_PREFIX):
            self._event_error_shown = True
            shown.append(line)
            if self._failed_flow is not None and self._failed_flow not in self._told \
                    and not _has_message(line):
                self._untold.add(self._failed_flow)
        elif self._block == "traceback":
            self._traceback.append(line)
        return shown

    def causes(self, violations: Sequence[Violation],
               tolerance_failures: Sequence[ToleranceFailure] = (),
               dataset_rule_failures: Sequence[DatasetRuleFailure] = ()) -> list[str]:
        """The lines that show, under a failed flow's error that wrapped it (Delta Lake's
        writer reports a task's failure as ``[TASK_WRITE_FAILED] Task failed while
        writing rows to ...``), the sdp-expect message that stopped the flow: once
        each, as soon as the run has reported the message for the flow's dataset (its
        companions' flows report it unwrapped). So the failure line is the same on every
        table format.

        :param violations: Every violation the run reported so far (and the tolerance
            failures and dataset-rule failures likewise).
        """
        if not self._untold:  # the usual case: nothing wrapped waits (no message formatted)
            return []
        found = [*((v.dataset, messages.format_message(v)) for v in violations),
                 *((f.dataset, messages.format_tolerance_failure(f))
                   for f in tolerance_failures),
                 *((f.dataset, messages.format_dataset_rule_failure(f))
                   for f in dataset_rule_failures)]
        lines = []
        for dataset, message in found:
            name = short_name(dataset)
            if name in self._untold:
                self._untold.discard(name)
                self._told.add(name)
                lines.append(f"{CAUSED_BY}{message}\n")
        return lines

    def finish(self) -> list[str]:
        """The lines still held when the child's output ends."""
        return self._flush() + self._end_traceback()

    def _end_traceback(self) -> list[str]:
        lines, self._traceback = self._traceback, []
        if self._block == "traceback":
            self._block = "none"
        if not lines or self._explained:
            return []
        body = [line for line in lines[1:] if line.strip()]
        # the exception's first line (type and message); its frames and the rest of its
        # message (a streaming query's plan) stay in the log file
        return next(([line] for line in body if not line.startswith(" ")), [])

    def _flush(self) -> list[str]:
        blocks, self._pending = self._pending, []
        if not blocks:
            return []
        self._block = "none"
        definitions = Definitions.read(self.definitions_path)
        failed = _without_route_views({short_name(block.flow): block for block in blocks},
                                      definitions)
        hidden: set[str] = set()
        for view in definitions.queries:
            if view in failed:  # the query itself is broken: its own failure says so
                hidden.add(view)
                hidden.update(v for v, c in definitions.checks.items()
                              if c.get("query_view") == view)
        shown: list[str] = []
        for view, check in definitions.checks.items():
            block = failed.get(view)
            if block is None or view in hidden:
                continue
            hidden.add(view)
            query = definitions.queries.get(str(check.get("query_view")), {})
            hidden.update(str(name) for name in query.get("derived", []))
            rule = RuleError(dataset=str(check["dataset"]), expectation=str(check["expectation"]),
                             constraint=str(check["constraint"]),
                             reason=spark_reason(block.error),
                             place=Location.from_dict(check.get("place")))
            self.rule_errors.append(rule)
            shown.append(rule.error().render() + "\n")
        self._explained = True
        for name, block in failed.items():
            if name in hidden:
                continue
            self._explained = False
            shown.append(block.lines[0])
            if block.error:
                shown.append(block.error)
        return shown
