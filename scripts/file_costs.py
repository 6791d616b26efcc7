"""Write tests/file_costs.json: each test file's measured time on each pyspark line.

Usage: python scripts/file_costs.py JUNIT... (one line's ``test-results/pyspark-VERSION.xml``
each, from one ``scripts/test.sh --all``)

pytest-xdist (``--dist loadfile``) keeps a test file on one worker. ``tests/conftest.py``
hands the files to the workers longest first (longest processing time first), from
these figures, so that no long file starts near the end of a line while the other
workers wait for it (docs/testing.md, "One server, shared"). A file's figure is the sum
of its tests' times on that line (JUnit ``time``: setup, call and teardown), in whole
seconds. Files not in the table take a figure from their tier (``conftest.py``), so
the table only needs regenerating when the figures have moved a lot.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "tests" / "file_costs.json"


def line_of(junit: Path) -> str:
    """``pyspark-4.1.4.xml`` -> ``4.1``."""
    version = junit.stem.removeprefix("pyspark-")
    return ".".join(version.split(".")[:2])


def costs(junit: Path) -> dict[str, int]:
    """Test file (``test_a.py``) -> its tests' seconds on the line of ``junit``."""
    seconds: Counter[str] = Counter()
    for case in ElementTree.parse(junit).iter("testcase"):
        module = str(case.get("classname", "")).split(".")
        name = next((part for part in module if part.startswith("test_")), None)
        if name is not None:
            seconds[f"{name}.py"] += float(case.get("time") or 0)
    return {name: round(total) for name, total in seconds.most_common() if round(total) > 0}


def main(*junit_files: str) -> int:
    if not junit_files:
        print(__doc__, file=sys.stderr)
        return 2
    table = {line_of(Path(junit)): costs(Path(junit)) for junit in sorted(junit_files)}
    TARGET.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    counts = ", ".join(f"{line}: {len(files)} files" for line, files in table.items())
    print(f"wrote {TARGET} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
