"""The faults tests' source records and oracle, and a process killed with its group.

The fault fixtures (``tests/fixtures/faults``) read folders of small JSON files, one
file per micro-batch; the oracle computes in plain Python what the streaming table
``orders``, its quarantine, batch log and metrics must hold for the records sent, once
an update completes, whatever happened to the updates before it
(``tests/test_faults.py``, and on a table format ``tests/test_table_formats_spark.py``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "faults"
SCHEMA = "seq BIGINT, id INT, amount INT, note STRING"
COLUMNS = ("seq", "id", "amount", "note")
FAILED = "_failed_expectations"

# The fixture's rules, in declaration order: (name, action, passes(record)).
RULES: list[tuple[str, str, Any]] = [
    ("small", "warn", lambda r: r["amount"] is not None and r["amount"] < 900),
    ("valid_id", "drop", lambda r: r["id"] is not None),
    ("not_negative", "drop", lambda r: r["amount"] is not None and r["amount"] >= 0),
]


# ------------------------------------------------------------------------------- source data
def make_records(rng: random.Random, first_seq: int, count: int) -> list[dict[str, Any]]:
    """``count`` records with unique ``seq``; NULLs and bad values in every rule's column."""
    notes = [None, "ok", "it's \"quoted\"", "ünïcödé ✓", "a,b;c"]
    return [
        {
            "seq": seq,
            "id": None if rng.random() < 0.12 else seq % 997,
            "amount": rng.choice([None, -7, 0, 12, 350, 899, 900, 1500]),
            "note": rng.choice(notes),
        }
        for seq in range(first_seq, first_seq + count)
    ]


def write_file(folder: Path, index: int, records: list[dict[str, Any]]) -> None:
    """One JSON-lines file, its modification time ordered by ``index``.

    The file source takes the oldest files first: explicit times make the order of
    the micro-batches the order of the indexes.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{index:05d}.json"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    stamp = 1_700_000_000 + index
    os.utime(path, (stamp, stamp))


# ------------------------------------------------------------------------------------ oracle
@dataclass
class Oracle:
    """What the streaming table and its companions must hold for a set of records."""

    kept: list[tuple[Any, ...]]
    quarantined: list[tuple[Any, ...]]
    metrics: dict[str, dict[str, Any]]
    total: int
    dropped: int


def oracle(records: list[dict[str, Any]], rules: list[tuple[str, str, Any]] = RULES) -> Oracle:
    kept, quarantined = [], []
    failed = {name: 0 for name, _, _ in rules}
    for record in records:
        violated = [name for name, _, passes in rules if not passes(record)]
        for name in violated:
            failed[name] += 1
        row = tuple(record[c] for c in COLUMNS)
        drops = [n for n, action, _ in rules if action == "drop" and n in violated]
        if drops:
            named = [n for n, action, _ in rules if action != "fail" and n in violated]
            quarantined.append((*row, tuple(named)))
        else:
            kept.append(row)
    total, dropped = len(records), len(quarantined)
    metrics = {
        name: {"dataset": "orders", "expectation": name, "action": action,
               "passed_records": total - failed[name], "failed_records": failed[name],
               "total_records": total, "dropped_records": dropped}
        for name, action, _ in rules
    }
    return Oracle(sorted(kept), sorted(quarantined, key=lambda r: r[0]), metrics, total, dropped)


def as_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows)


def as_quarantine(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(((*(r[c] for c in COLUMNS), tuple(r[FAILED])) for r in rows),
                  key=lambda r: r[0])


def as_metrics(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["expectation"]: {k: v for k, v in r.items() if k != "constraint"} for r in rows}


def assert_tables_match(tables: dict[str, list[dict[str, Any]]], expected: Oracle,
                        context: str = "") -> None:
    """Target, quarantine, batch log and metrics hold every record once, as the oracle."""
    target = as_rows(tables["orders"])
    seqs = [row[0] for row in target]
    assert len(seqs) == len(set(seqs)), f"{context}duplicated records in the target"
    assert target == expected.kept, f"{context}target differs from the oracle"
    assert as_quarantine(tables["orders_quarantine"]) == expected.quarantined, (
        f"{context}quarantine differs from the oracle")
    log = tables["orders_dq_batches"]
    logged = sum(r["_records"] for r in log)
    assert logged == expected.total, f"{context}batch log: {logged} != {expected.total}"
    assert sum(r["_dropped"] for r in log) == expected.dropped, f"{context}batch log"
    assert as_metrics(tables["orders_dq_metrics"]) == expected.metrics, (
        f"{context}metrics differ from the oracle")


# ------------------------------------------------------------------------------- processes
class GroupProcess:
    """A command in its own process group (``start_new_session``), its output read line
    by line: what a crash takes down whole (launcher, Python, the Spark JVMs)."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace", start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def kill(self) -> None:
        """SIGKILL the whole process group."""
        with_group_gone(self.process.pid, signal.SIGKILL, self.process)
        self.reader.join(30)

    def wait(self, timeout: float) -> int:
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        self.reader.join(30)
        return code


def with_group_gone(pgid: int, sig: int, leader: subprocess.Popen[str]) -> None:
    """Signal a process group and wait until none of its processes is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    leader.wait(60)  # reap the leader: until then it is a zombie of the group
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    raise AssertionError(f"process group {pgid} still alive 30 s after signal {sig}")
