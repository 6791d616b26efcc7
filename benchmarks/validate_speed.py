"""How long ``validate_paths`` takes for 1,000 rules: in a rule file, and in a SQL file.

Run from the repository root::

    python benchmarks/validate_speed.py [--rules 1000] [--repeat 5]

It writes the rules in the list format (YAML, and the same rules as JSON), and
as ``CONSTRAINT ... EXPECT`` clauses of one Databricks SQL materialized view,
to a temporary directory, times :func:`sdp_expect.checks.validate.validate_paths` on
each file ``--repeat`` times and prints the median. The target is under one
second for 1,000 rules.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sdp_expect.checks.validate import validate_paths

ACTIONS = ("warn", "drop", "fail")
TARGET_SECONDS = 1.0


def make_rules(count: int) -> list[dict[str, object]]:
    """``count`` valid list-format rules of varied shapes.

    :param count: How many rules.
    """
    shapes = (
        "col_{i} IS NOT NULL",
        "amount_{i} >= 0 AND amount_{i} < 1000000",
        "status_{i} IN ('open', 'shipped', 'closed')",
        "length(trim(code_{i})) = 3 OR upper(code_{i}) LIKE 'X%'",
        "CASE WHEN kind_{i} = 'a' THEN price_{i} > 0 ELSE true END",
    )
    return [
        {
            "name": f"rule_{i:04d}",
            "constraint": shapes[i % len(shapes)].format(i=i),
            "failureAction": ACTIONS[i % len(ACTIONS)],
            "tags": ["silver", f"team_{i % 7}"],
        }
        for i in range(count)
    ]


def write_yaml(rules: list[dict[str, object]], path: Path) -> None:
    """Write ``rules`` as a YAML list, the way a person would.

    :param rules: The rules.
    :param path: The file to write.
    """
    lines = []
    for rule in rules:
        lines.append(f"- name: {rule['name']}")
        lines.append(f"  constraint: {json.dumps(rule['constraint'])}")
        lines.append(f"  failureAction: {rule['failureAction']}")
        lines.append(f"  tags: [{', '.join(rule['tags'])}]")  # type: ignore[arg-type]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_sql(rules: list[dict[str, object]], path: Path) -> None:
    """Write ``rules`` as the constraints of one Databricks SQL materialized view.

    :param rules: The rules.
    :param path: The file to write.
    """
    violation = {"warn": "", "drop": " ON VIOLATION DROP ROW", "fail": " ON VIOLATION FAIL UPDATE"}
    clauses = ",\n".join(
        f"  CONSTRAINT {rule['name']} EXPECT ({rule['constraint']})"
        f"{violation[str(rule['failureAction'])]}"
        for rule in rules
    )
    path.write_text(f"CREATE OR REFRESH MATERIALIZED VIEW orders (\n{clauses}\n)\n"
                    "AS SELECT * FROM orders_bronze;\n", encoding="utf-8")


def median_seconds(path: Path, repeat: int, expected_rules: int) -> float:
    """The median time of ``repeat`` runs of ``validate_paths([path])``.

    :param path: The rule file.
    :param repeat: How many runs.
    :param expected_rules: How many rules each run must report, all valid.
    """
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        report = validate_paths([str(path)])
        times.append(time.perf_counter() - started)
        if not report.ok or report.rules_checked != expected_rules:
            first = "\n".join(report.to_text().splitlines()[:5])
            raise SystemExit(f"unexpected report for {path}:\n{first}")
    return statistics.median(times)


def main() -> int:
    """Generate the files, time them, print the medians; exit 1 when over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rules = make_rules(args.rules)
    slowest = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        yaml_path = Path(tmp) / "rules.yml"
        json_path = Path(tmp) / "rules.json"
        sql_path = Path(tmp) / "orders.sql"
        write_yaml(rules, yaml_path)
        json_path.write_text(json.dumps(rules, indent=2), encoding="utf-8")
        write_sql(rules, sql_path)
        for path in (yaml_path, json_path, sql_path):
            seconds = median_seconds(path, args.repeat, args.rules)
            slowest = max(slowest, seconds)
            size = path.stat().st_size
            print(f"validate_paths, {args.rules} rules, {path.suffix[1:].upper()} "
                  f"({size} bytes): median of {args.repeat} = {seconds:.3f} s")
    verdict = "within" if slowest < TARGET_SECONDS else "OVER"
    print(f"target: under {TARGET_SECONDS:.1f} s for 1,000 rules: {verdict}")
    return 0 if slowest < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
