"""The dry-run that ``sdp-expect migrate`` makes of its own result.

After writing DST, migrate runs ``sdp-expect dry-run --format json`` there
(``spark-pipelines dry-run`` with sdp-expect's defaults: every definition,
expectation and column is checked, no table is written). sdp-expect's own errors
come as values from its JSON document (``definition_errors``, ``rule_errors``:
code, message and place); Spark's errors are found in the full output (a Python
traceback's exception line, located by its frames in DST). Each place in DST is
mapped back to the SOURCE file and line through the line maps migrate kept while
rewriting (:attr:`MigrationResult.line_maps`): no message of sdp-expect's own is
read back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from sdp_expect.base.errors import Location

__all__ = ["CheckError", "CheckResult", "dry_run"]


@dataclass(frozen=True)
class CheckError:
    """One error of the dry-run.

    :param message: The error's first line, as Spark or sdp-expect printed it.
    :param dst: ``file:line`` in DST, when the output located it.
    :param file: The SRC file it maps to (or the DST file, for a generated one).
    :param line: The SRC line.
    """

    message: str
    dst: Optional[str]
    file: Optional[str]
    line: Optional[int]


@dataclass
class CheckResult:
    """The dry-run's outcome.

    :param ok: Whether it passed.
    :param status: Its exit status.
    :param errors: What failed, each once.
    :param output: Everything it printed.
    """

    ok: bool
    status: int
    errors: list[CheckError] = field(default_factory=list)
    output: str = ""


_SDPX = re.compile(r"\[SDPX-[A-Z]+-\d+\].*")
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(?:[A-Z]\w*(?:Exception|Error)): (.+)$")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
_NOISE = ("SparkConnectGrpcException", "KeyboardInterrupt", "INVALID_HANDLE")


def _command() -> list[str]:
    script = shutil.which("sdp-expect", path=os.path.dirname(sys.executable)) \
        or shutil.which("sdp-expect")
    if script is None:
        raise FileNotFoundError("the sdp-expect command is not installed next to this Python")
    return [script]


def dry_run(dst: Path, line_maps: dict[str, list[tuple[str, int]]], *,
            timeout: float = 900, wait: Optional[float] = None) -> CheckResult:
    """Run ``sdp-expect dry-run`` in ``dst`` and map its errors to the source.

    :param dst: The migrated project.
    :param line_maps: DST file -> per line, the SRC ``(file, line)``.
    :param timeout: Seconds before the dry-run is given up.
    :param wait: ``--wait`` for the dry-run (default: its own).
    """
    env = dict(os.environ)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        env.pop(key, None)
    dst = dst.resolve()
    # --verbose: the traceback frames (which locate Spark's errors in DST) are in the
    # output (on stderr; stdout holds the JSON document); no progress line in it
    command = [*_command(), "dry-run", "--spec", str(dst), "--color", "never", "--verbose",
               "--progress", "none", "--format", "json"]
    if wait is not None:
        command += ["--wait", str(int(wait))]
    try:
        done = subprocess.run(command, cwd=dst, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        return CheckResult(ok=False, status=1, output=str(error.stdout or ""), errors=[
            CheckError(f"the dry-run did not finish in {timeout:.0f} s", None, None, None)])
    document = _document(done.stdout)
    output = done.stderr if document else done.stdout + "\n" + done.stderr
    result = CheckResult(ok=done.returncode == 0, status=done.returncode, output=output)
    if not result.ok:
        coded = [*document.get("definition_errors", []), *document.get("rule_errors", []),
                 *document.get("server_errors", [])]  # e.g. a table format's (SDPX-PRJ-404)
        result.errors = [_coded_error(entry, line_maps) for entry in coded
                         if isinstance(entry, dict)]
        result.errors += errors_of(output, dst, line_maps)
        if not result.errors:
            last = [line for line in output.splitlines() if line.strip()][-1:] or ["(no output)"]
            result.errors.append(CheckError(f"the dry-run failed (exit status "
                                            f"{done.returncode}): {last[0].strip()}",
                                            None, None, None))
    return result


def _document(stdout: str) -> dict[str, Any]:
    """The dry-run's JSON document; empty when it printed none (it could not start)."""
    try:
        found = json.loads(stdout)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _coded_error(entry: dict[str, Any], line_maps: dict[str, list[tuple[str, int]]]
                 ) -> CheckError:
    """One of sdp-expect's errors, from its values, located in SRC where possible."""
    message = str(entry.get("message") or entry.get("code") or "")
    place = Location.from_dict(entry.get("place"))
    file = _dst_file(place.file, line_maps) if place is not None else None
    if place is None or file is None or place.line is None:
        return CheckError(message, None, None, None)
    return _mapped(message, file, place.line, line_maps)


def _dst_file(shown: str, line_maps: dict[str, list[tuple[str, int]]]) -> Optional[str]:
    """The DST file an error's place names: as shown (a path relative to DST, or a
    file's name alone, as pyspark gives Python locations); None when not one file."""
    if shown in line_maps:
        return shown
    found = [name for name in line_maps if name.endswith("/" + shown)]
    return found[0] if len(found) == 1 else None


def _mapped(message: str, file: str, number: int,
            line_maps: dict[str, list[tuple[str, int]]]) -> CheckError:
    source_file, source_line = file, number
    mapped = line_maps.get(file)
    if mapped and 0 < number <= len(mapped):
        source_file, source_line = mapped[number - 1]
    return CheckError(message, f"{file}:{number}", source_file, source_line)


def errors_of(output: str, dst: Path, line_maps: dict[str, list[tuple[str, int]]]
              ) -> list[CheckError]:
    """Every distinct error of Spark's in a dry-run's output (a Python exception line),
    located in SRC where possible; sdp-expect's own errors come as values instead."""
    root = str(dst.resolve())
    names = sorted(line_maps, key=len, reverse=True)
    errors: list[CheckError] = []
    seen: set[str] = set()
    frame: Optional[tuple[str, int]] = None
    for raw in output.splitlines():
        line = raw.strip()
        found = _FRAME.search(line)
        if found:
            path = os.path.realpath(found.group("path"))
            if path.startswith(root + os.sep):
                frame = (Path(path).relative_to(root).as_posix(), int(found.group("line")))
            continue
        exception = _EXCEPTION.match(line)
        if exception is None or _SDPX.search(line):
            continue
        message = exception.group(0)
        if any(noise in message for noise in _NOISE):
            continue
        key = re.sub(r"\s+", " ", message)[:300]
        if key in seen or any(key in other or other in key for other in seen):
            frame = None
            continue
        seen.add(key)
        where = _located(message, names) or frame
        frame = None
        if where is None:
            errors.append(CheckError(message, None, None, None))
            continue
        errors.append(_mapped(message, *where, line_maps))
    return errors


def _located(message: str, names: list[str]) -> Optional[tuple[str, int]]:
    """A ``file:line`` / ``file, line N`` naming a file of DST in Spark's message."""
    for name in names:
        escaped = re.escape(name)
        found = re.search(escaped + r"(?::|, line )(\d+)", message)
        if found:
            return name, int(found.group(1))
    return None
