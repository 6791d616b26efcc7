"""How long ``sdp-expect validate`` takes: 1,000 rules in a rule file and in a SQL
file, and whole projects checked before Spark.

Run from the repository root::

    python benchmarks/validate_speed.py [--rules 1000] [--repeat 5] [--files 200]

Part one writes the rules in the list format (YAML, and the same rules as JSON), and
as ``CONSTRAINT ... EXPECT`` clauses of one Databricks SQL materialized view,
to a temporary directory, times :func:`sdp_expect.checks.validate.validate_paths` on
each file ``--repeat`` times and prints the median. The target is under one
second for 1,000 rules.

Part two times the whole command, ``sdp-expect validate`` run in the project's folder
as a user or a pre-commit hook runs it (a new Python process each time: its start and
imports count), on each project of ``examples/`` and on a generated project of
``--files`` Python pipeline files (five decorated rules and one streaming table with
two more each, as a migrated Lakeflow pipeline writes them) and a rule file: the
spec's check, every Python file parsed and its rules read from the source, the rule
file. The targets are under one second for an example and five seconds for the
generated project (issue 47).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sdp_expect.checks.validate import validate_paths

ACTIONS = ("warn", "drop", "fail")
TARGET_SECONDS = 1.0
EXAMPLE_TARGET_SECONDS = 1.0
PROJECT_TARGET_SECONDS = 5.0
REPO = Path(__file__).resolve().parent.parent


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


PIPELINE_FILE = """\
from pyspark.sql import DataFrame, SparkSession

from sdp_expect import pipelines as dp

spark = SparkSession.active()


@dp.materialized_view(name="orders_{i}_clean")
@dp.expect("recent_{i}", "order_date >= DATE'2020-01-01'")
@dp.expect_or_drop("valid_id_{i}", "id IS NOT NULL")
@dp.expect_or_drop("amount_{i}", "amount >= 0 AND amount < 1000000")
@dp.expect_all_or_fail({{"status_{i}": "status IN ('open', 'shipped')",
                        "code_{i}": "length(trim(code)) = 3"}})
def orders_{i}() -> DataFrame:
    return spark.read.table("orders_{i}_raw")


dp.create_streaming_table("events_{i}", expect_all={{"kind_{i}": "kind IS NOT NULL"}},
                          expect_all_or_drop={{"ts_{i}": "ts > TIMESTAMP'2020-01-01'"}})
"""


def write_project(folder: Path, files: int) -> int:
    """A project of ``files`` pipeline files and one rule file; its number of rules."""
    (folder / "transformations").mkdir(parents=True)
    (folder / "rules").mkdir()
    (folder / "spark-pipeline.yml").write_text(
        f"name: bench\nstorage: {(folder / 'storage').as_uri()}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n", encoding="utf-8")
    for i in range(files):
        (folder / "transformations" / f"orders_{i:04d}.py").write_text(
            PIPELINE_FILE.format(i=i), encoding="utf-8")
    rules = make_rules(50)
    write_yaml(rules, folder / "rules" / "orders.yml")
    return files * 7 + len(rules)


def command_seconds(folder: Path, repeat: int) -> tuple[float, str]:
    """The median time of ``repeat`` runs of ``sdp-expect validate`` in ``folder``, and
    its summary line; every run must find no error."""
    command = shutil.which("sdp-expect", path=os.path.dirname(sys.executable))
    if command is None:
        raise SystemExit("the sdp-expect command is not installed next to this Python")
    times, last = [], ""
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([command, "validate"], cwd=folder, capture_output=True,
                              text=True, timeout=120)
        times.append(time.perf_counter() - started)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
        if done.returncode != 0:
            raise SystemExit(f"sdp-expect validate failed in {folder}:\n{done.stdout}"
                             f"{done.stderr}")
    return statistics.median(times), last


def project_part(args: argparse.Namespace) -> bool:
    """Part two; True when every median is within its target."""
    within = True
    for example in sorted(p for p in (REPO / "examples").iterdir()
                          if (p / "spark-pipeline.yml").is_file()):
        seconds, summary = command_seconds(example, args.repeat)
        within &= seconds < EXAMPLE_TARGET_SECONDS
        print(f"sdp-expect validate, examples/{example.name} ({summary}): median of "
              f"{args.repeat} = {seconds:.3f} s")
    with tempfile.TemporaryDirectory() as tmp:
        rules = write_project(Path(tmp) / "project", args.files)
        seconds, summary = command_seconds(Path(tmp) / "project", args.repeat)
        if f"{rules} rules" not in summary:
            raise SystemExit(f"expected {rules} rules: {summary}")
        within &= seconds < PROJECT_TARGET_SECONDS
        print(f"sdp-expect validate, {args.files} pipeline files ({summary}): median of "
              f"{args.repeat} = {seconds:.3f} s")
    print(f"targets: under {EXAMPLE_TARGET_SECONDS:.0f} s an example, under "
          f"{PROJECT_TARGET_SECONDS:.0f} s {args.files} files: "
          f"{'within' if within else 'OVER'}")
    return within


def main() -> int:
    """Generate the files, time them, print the medians; exit 1 when over a target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--files", type=int, default=200,
                        help="pipeline files of the generated project (part two)")
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
    projects_within = project_part(args)
    return 0 if slowest < TARGET_SECONDS and projects_within else 1


if __name__ == "__main__":
    raise SystemExit(main())
