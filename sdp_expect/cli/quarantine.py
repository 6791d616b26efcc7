"""``sdp-expect quarantine``: what a project's quarantines hold, rule by rule.

It reads each ``<dataset>_quarantine`` table of the catalog that ``sdp-expect run``
keeps in the project folder (through ``sdp-expect serve``'s server while it is up),
as ``sdp-expect report`` does (:mod:`sdp_expect.report.reader`), and prints per
quarantine how many records it holds, how many of them failed each rule (from their
``_failed_expectations``) and a sample of them, as text or one JSON document. It runs
no pipeline and changes no table.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Optional

from sdp_expect.base.project import UsageProblem
from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from sdp_expect.quality.summary import QuarantineInfo, TableReading, UpdateCount
from sdp_expect.report.build import quarantine_info
from sdp_expect.report.reader import TablesUnavailable, read_project_tables
from sdp_expect.runtime.catalog_access import add_catalog_arguments, catalog_project

__all__ = ["DEFAULT_QUARANTINE_SAMPLE", "QUARANTINE_DESCRIPTION", "add_quarantine",
           "chosen_quarantines", "command_quarantine", "quarantine_json", "quarantine_text"]

DEFAULT_QUARANTINE_SAMPLE = 5
"""Quarantined records shown per quarantine unless ``--sample`` says otherwise."""

QUARANTINE_DESCRIPTION = """\
Show what the quarantines of a pipeline hold: per <dataset>_quarantine table,
how many records it holds, how many of them failed each rule (their
_failed_expectations: a record counts once for each rule it failed) and a
sample of them. A streaming table's quarantine holds every record dropped since
its last full refresh; a materialized view's, the records its last update
dropped. Reads the catalog that `sdp-expect run` keeps in the project folder
(runs no pipeline, changes nothing); while `sdp-expect serve` keeps the
project's server up, reads through it.

Exit status: 0 shown; 1 the tables could not be read, or --dataset names no
quarantine; 2 usage error.
"""


def add_quarantine(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``quarantine`` and its arguments."""
    parser = subparsers.add_parser(
        "quarantine", help="what the quarantines hold: records per failed rule, a sample",
        description=QUARANTINE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_catalog_arguments(parser)
    parser.add_argument("--dataset", metavar="NAME",
                        help="only the quarantine of this dataset (default: every quarantine)")
    parser.add_argument("--sample", type=int, default=DEFAULT_QUARANTINE_SAMPLE, metavar="N",
                        help="quarantined records shown per quarantine "
                        f"(default: {DEFAULT_QUARANTINE_SAMPLE})")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="what to print: text (default) or one JSON document")
    parser.set_defaults(handler=command_quarantine)


def _say(text: str) -> None:
    write_text(sys.stderr, f"sdp-expect quarantine: {text}")


def command_quarantine(args: argparse.Namespace) -> int:
    """``sdp-expect quarantine``: read the quarantines, print them; the exit status."""
    try:
        project, given = catalog_project(args)
        if args.sample < 0:
            raise UsageProblem("--sample must be 0 or more")
    except UsageProblem as problem:
        _say(f"error: {problem}\n")
        return EXIT_USAGE
    try:
        reading = read_project_tables(project, given, remote=args.remote, wait=args.wait,
                                      command="quarantine", sample=args.sample, rule_counts=True,
                                      say=lambda text: write_text(sys.stderr, text))
    except TablesUnavailable as problem:
        _say(str(problem))
        return EXIT_PROBLEMS
    try:
        found = chosen_quarantines(reading, args.dataset)
    except LookupError as missing:
        _say(f"{missing}\n")
        return EXIT_PROBLEMS
    if args.format == "json":
        write_text(sys.stdout, quarantine_json(reading, found, spec=str(project.spec)) + "\n")
    else:
        write_text(sys.stdout, quarantine_text(reading, found))
    return EXIT_OK


def chosen_quarantines(reading: TableReading, dataset: Optional[str]
                       ) -> list[tuple[str, QuarantineInfo]]:
    """The quarantines read, each with its dataset: all of them, or ``dataset``'s.

    :raises LookupError: ``dataset`` has none; the message names those that have one.
    """
    found = [(str(q["dataset"]), quarantine_info(q)) for q in reading.quarantines]
    if dataset is None:
        return found
    own = [(name, q) for name, q in found if name == dataset]
    if not own:
        known = ", ".join(sorted(name for name, _ in found)) or "none"
        raise LookupError(
            f"dataset {dataset!r} has no quarantine in {reading.catalog}.{reading.database} "
            f"(datasets with one: {known}); a dataset has one with @dp.quarantine(), or "
            "sdp_expect.quarantine: true and a drop rule")
    return own


def _entry(dataset: str, quarantine: QuarantineInfo) -> dict[str, Any]:
    return {"dataset": dataset, "table": quarantine.table, "records": quarantine.records,
            "by_rule": quarantine.by_rule,
            "by_update": None if quarantine.by_update is None
            else [asdict(count) for count in quarantine.by_update],
            "columns": quarantine.columns, "sample": quarantine.sample}


def quarantine_json(reading: TableReading, found: list[tuple[str, QuarantineInfo]], *,
                    spec: str) -> str:
    """The JSON document of ``sdp-expect quarantine --format json``: the catalog and
    database read, and per quarantine its dataset, table, records, ``by_rule`` (records
    per failed rule, the most first), ``by_update`` (records per update that quarantined
    them, the newest first), columns and sample."""
    return json.dumps({"command": "quarantine", "spec": spec, "catalog": reading.catalog,
                       "database": reading.database,
                       "quarantines": [_entry(d, q) for d, q in found]}, indent=2)


def _update_lines(counts: list[UpdateCount]) -> list[str]:
    """The table of a quarantine's records per update, the newest first."""
    table = [("update", "started", "records")] + [
        (c.update or "(not named)", c.started or "", str(c.records)) for c in counts]
    widths = [max(len(row[i]) for row in table) for i in range(2)]
    return [f"  {u:<{widths[0]}}  {t:<{widths[1]}}  {n:>7}" for u, t, n in table]


def quarantine_text(reading: TableReading, found: list[tuple[str, QuarantineInfo]]) -> str:
    """What ``sdp-expect quarantine`` prints: per quarantine a heading, a table of the
    records per failed rule, and the sample one JSON object a line."""
    lines = [f"== Quarantines in {reading.catalog}.{reading.database}"]
    if not found:
        lines.append("no quarantine: no dataset has one (@dp.quarantine(), or "
                     "sdp_expect.quarantine: true and a drop rule)")
    for dataset, q in found:
        lines += ["", f"{q.table}  dataset {dataset}: {q.records} records"]
        if q.by_rule:
            width = max(len("failed rule"), *(len(rule) for rule in q.by_rule))
            lines.append(f"  {'failed rule':<{width}}  records")
            lines += [f"  {rule:<{width}}  {count:>7}" for rule, count in q.by_rule.items()]
        if q.by_update:
            lines += _update_lines(q.by_update)
        if q.sample:
            lines.append(f"  sample ({len(q.sample)} of {q.records}):")
            lines += ["    " + json.dumps(row, ensure_ascii=False, sort_keys=False)
                      for row in q.sample]
    return "\n".join(lines) + "\n"
