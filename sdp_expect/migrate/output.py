"""What ``sdp-expect migrate`` did, for a person or as JSON, and its exit status."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

from sdp_expect.migrate.result import CHANGED, NOT_CONVERTED, NOTE, Finding, MigrationResult

__all__ = ["EXIT_REVIEW", "exit_status", "to_json", "to_text"]


EXIT_REVIEW = 3
"""``migrate``: the result passed its dry-run (or was not checked), but some constructs
are listed as not converted and need a look by hand."""


def exit_status(result: MigrationResult) -> int:
    """0 complete and checked (or not checked); 1 the dry-run failed; 3 runs, but
    something is listed as not converted."""
    if result.check is not None and not result.check.ok:
        return 1
    return 0 if result.complete else EXIT_REVIEW


def _check_findings(result: MigrationResult) -> list[Finding]:
    if result.check is None or result.check.ok:
        return []
    found = []
    for error in result.check.errors:
        where = f" (migrated file {error.dst})" if error.dst else ""
        found.append(Finding(NOT_CONVERTED, error.file or ".", error.line,
                             f"dry-run: {error.message}{where}"))
    return found


def to_text(result: MigrationResult) -> str:
    """What migrate did, for a person."""
    lines = [f"sdp-expect migrate: {result.src} -> {result.dst}", ""]
    changed = result.of(CHANGED)
    lines.append(f"Changed ({len(changed)}):")
    lines += [f"  {f.where}: {f.message}" for f in changed] or ["  nothing"]
    notes = result.of(NOTE)
    if notes:
        lines += ["", f"Notes ({len(notes)}):"]
        lines += [f"  {f.where}: {f.message}" for f in notes]
    missing = result.of(NOT_CONVERTED)
    lines += ["", f"Not converted ({len(missing)}){', fix by hand:' if missing else ''}"]
    if missing:
        lines += [f"  {f.where}: {f.message}" for f in missing]
    elif result.check is not None and result.check.ok:
        lines.append("  nothing: every construct was converted, and the dry-run passed")
    elif result.check is None:
        lines.append("  nothing found (the result was not dry-run: --no-check)")
    else:
        lines.append("  nothing found by reading the files, but the dry-run failed (below)")
    failed = _check_findings(result)
    if result.check is None:
        lines += ["", "Dry-run: not run (--no-check). Check with: sdp-expect dry-run"]
    elif result.check.ok:
        lines += ["", "Dry-run: passed: every definition of the migrated pipeline is valid"]
    else:
        lines += ["", f"Dry-run: FAILED, the migrated project will not run as written "
                      f"({len(failed)} error(s), at the source file and line):"]
        lines += [f"  {f.where}: {f.message}" for f in failed]
    lines += ["", f"{len(result.copied)} files written. Next: cd {result.dst} && sdp-expect run"]
    return "\n".join(lines) + "\n"


def to_json(result: MigrationResult) -> str:
    """What migrate did, as one JSON document."""
    check: Optional[dict[str, Any]] = None
    if result.check is not None:
        check = {"ok": result.check.ok, "status": result.check.status,
                 "errors": [dataclasses.asdict(f) for f in _check_findings(result)]}
    return json.dumps({
        "src": str(result.src), "dst": str(result.dst), "name": result.name,
        "complete": result.complete and (result.check is None or result.check.ok),
        "exit_code": exit_status(result),
        "python_files": result.python_files,
        "sql_files": result.sql_files, "files_written": result.copied,
        "configuration": result.configuration,
        "changed": [dataclasses.asdict(f) for f in result.of(CHANGED)],
        "not_converted": [dataclasses.asdict(f) for f in result.of(NOT_CONVERTED)],
        "notes": [dataclasses.asdict(f) for f in result.of(NOTE)],
        "dry_run": check,
    }, indent=2)
