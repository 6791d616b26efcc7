"""List the collected tests that ran on no pyspark line of a matrix run (a report).

Usage: python scripts/unrun_tests.py COLLECTED JUNIT...

COLLECTED holds the node ids of ``pytest --collect-only -q`` without ``-m`` (every
test of the suite); each JUNIT is one line's ``test-results/pyspark-VERSION.xml``. A
test counts as run when one line ran it without skipping it. The tests that no line
ran are printed with the reason each line gave (skipped, or not selected by its
``-m``), so that a tier or line change that leaves a test running nowhere shows up in
the log (docs/testing.md). Exits 0: the list is for the reader.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path


def junit_key(node_id: str) -> str:
    """``tests/test_a.py::Class::test[x]`` as JUnit writes it: ``tests.test_a.Class::test[x]``."""
    head, bracket, parameters = node_id.partition("[")  # ids may hold "::" ([x::int])
    path, *rest = head.split("::")
    parts = [path.removesuffix(".py").replace("/", "."), *rest[:-1]]
    return ".".join(parts) + "::" + rest[-1] + bracket + parameters


def main(collected_file: str, *junit_files: str) -> int:
    collected = [line.strip() for line in Path(collected_file).read_text().splitlines()
                 if "::" in line]
    ran: set[str] = set()
    skipped: dict[str, list[str]] = {}
    for junit in junit_files:
        line = Path(junit).stem.removeprefix("pyspark-")
        for case in ElementTree.parse(junit).iter("testcase"):
            key = f"{case.get('classname')}::{case.get('name')}"
            skip = case.find("skipped")
            if skip is None and case.find("error") is None:
                ran.add(key)
            elif skip is not None:
                skipped.setdefault(key, []).append(f"{line}: skipped")
    nowhere = [node for node in collected if junit_key(node) not in ran]
    print(f"tests run on no line: {len(nowhere)} of {len(collected)} collected")
    for node in nowhere:
        print(f"  {node} ({'; '.join(skipped.get(junit_key(node), [])) or 'not selected'})")
    return 1 if nowhere else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
