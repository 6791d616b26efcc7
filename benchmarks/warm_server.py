"""A re-run on the project's warm server (``sdp-expect serve``) against a cold run.

Run from the repository root, with the Python whose environment has pyspark and
sdp-expect (the ``sdp-expect`` script next to it is the one timed)::

    python benchmarks/warm_server.py [--rounds 3] [--example spark41] [--out warm.json]

The example project is copied to a scratch folder and run once, untimed (the
first run creates its catalog). Then, in each round, the same project is
re-run after an edit (a comment appended to ``transformations/silver.py``),
the whole ``sdp-expect run --format json`` command timed from the outside:

1. **cold**: no server is up, so the run starts a Spark Connect server of its
   own and stops it at the end (what every run did before ``serve``);
2. ``sdp-expect serve --background`` starts the project's server (timed
   apart, not a run);
3. **warm 1**, **warm 2**, **warm 3**: three re-runs on that server (the first
   after its start; the others as the later edit-and-run cycles of a working
   session are);
4. ``sdp-expect serve --stop``.

Every run must exit 0 with the data-quality summary of the first one. Printed:
each round, the medians, the ratio of a later warm re-run (warm 2 and 3) to a
cold run (of the medians, and per round; the target: at most a third), the
first warm re-run's ratio, the command, the pyspark version, the date and the
machine's load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TARGET = 1 / 3


def sdp_expect_script() -> str:
    found = shutil.which("sdp-expect", path=os.path.dirname(sys.executable))
    if not found:
        raise SystemExit("the sdp-expect command is not installed next to this Python")
    return found


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE",
                "SPARK_CONNECT_AUTHENTICATE_TOKEN"):
        env.pop(key, None)
    return env


def copy_example(example: str, scratch: Path) -> Path:
    project = scratch / example
    shutil.copytree(REPO / "examples" / example, project, ignore=shutil.ignore_patterns(
        "spark-warehouse", "metastore_db", "pipeline-storage", "derby.log", "__pycache__",
        ".sdp-expect"))
    spec = project / "spark-pipeline.yml"
    spec.write_text("\n".join(
        f"storage: {(scratch / 'storage').as_uri()}" if line.startswith("storage:") else line
        for line in spec.read_text().splitlines()) + "\n")
    return project


def command(project: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``sdp-expect ARGS`` in the project; its wall-clock seconds and result."""
    began = time.perf_counter()
    done = subprocess.run([sdp_expect_script(), *args], cwd=project, env=environment(),
                          capture_output=True, text=True, timeout=1800, check=False)
    return time.perf_counter() - began, done


def summary(document: dict[str, Any]) -> Any:
    return [(d["dataset"], d["total_records"], d["dropped_records"],
             [(r["expectation"], r["passed_records"], r["failed_records"]) for r in d["rules"]])
            for d in document["datasets"]]


def timed_run(project: Path, label: str, edit: int, expected: Any) -> dict[str, Any]:
    silver = project / "transformations" / "silver.py"
    with open(silver, "a", encoding="utf-8") as handle:
        handle.write(f"# edit {edit}\n")
    seconds, done = command(project, "run", "--format", "json")
    if done.returncode != 0:
        raise SystemExit(f"{label}: exit status {done.returncode}\n{done.stdout}\n{done.stderr}")
    document = json.loads(done.stdout)
    if expected is not None and summary(document) != expected:
        raise SystemExit(f"{label}: another summary than the first run's:\n{done.stdout}")
    server = document["server"]
    warm = label.startswith("warm")
    if server["warm"] is not warm:
        raise SystemExit(f"{label}: the run's server was {'' if server['warm'] else 'not '}warm")
    print(f"  {label:7} {seconds:6.1f} s  (server port {server['port']}, "
          f"{'warm' if warm else 'its own'})", flush=True)
    return {"label": label, "seconds": seconds, "server": server, "summary": summary(document)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--example", default=None,
                        help="examples/<name> (default: spark42 on pyspark 4.2+, else spark41)")
    parser.add_argument("--out", help="also write every figure to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    import pyspark

    version = pyspark.__version__
    example = args.example or ("spark42" if tuple(map(int, version.split(".")[:2])) >= (4, 2)
                               else "spark41")
    scratch = Path(tempfile.mkdtemp(prefix="sdpx-warm-"))
    started = datetime.datetime.now().astimezone()
    print(f"sdp-expect run, cold against warm (sdp-expect serve): examples/{example}, "
          f"pyspark {version}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{started:%Y-%m-%d %H:%M %Z}, load average {os.getloadavg()[0]:.2f}", flush=True)
    runs: list[dict[str, Any]] = []
    serve_starts: list[float] = []
    try:
        project = copy_example(example, scratch)
        seconds, first = command(project, "run", "--format", "json")
        if first.returncode != 0:
            raise SystemExit(f"the first run failed:\n{first.stdout}\n{first.stderr}")
        expected = summary(json.loads(first.stdout))
        print(f"  first run (creates the catalog, untimed in the figures): {seconds:.1f} s")
        edit = 0
        for number in range(1, args.rounds + 1):
            print(f"round {number}", flush=True)
            edit += 1
            runs.append({"round": number, **timed_run(project, "cold", edit, expected)})
            seconds, served = command(project, "serve", "--background")
            if served.returncode != 0:
                raise SystemExit(f"serve failed:\n{served.stdout}\n{served.stderr}")
            serve_starts.append(seconds)
            print(f"  (serve --background: {seconds:.1f} s)", flush=True)
            try:
                for label in ("warm 1", "warm 2", "warm 3"):
                    edit += 1
                    runs.append({"round": number, **timed_run(project, label, edit, expected)})
            finally:
                command(project, "serve", "--stop")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)

    def seconds(round_: int, *labels: str) -> list[float]:
        return [r["seconds"] for r in runs if r["round"] == round_ and r["label"] in labels]

    rounds = range(1, args.rounds + 1)
    cold = statistics.median(t for n in rounds for t in seconds(n, "cold"))
    first = statistics.median(t for n in rounds for t in seconds(n, "warm 1"))
    later = statistics.median(t for n in rounds for t in seconds(n, "warm 2", "warm 3"))
    per_round = [statistics.median(seconds(n, "warm 2", "warm 3")) / seconds(n, "cold")[0]
                 for n in rounds]
    ratio = later / cold
    print(f"\nmedians of {args.rounds} rounds: cold {cold:.1f} s; warm: first re-run "
          f"{first:.1f} s, later re-runs {later:.1f} s; serve start "
          f"{statistics.median(serve_starts):.1f} s")
    print(f"later warm re-run / cold run: {ratio:.2f} (per round: "
          f"{', '.join(f'{r:.2f}' for r in per_round)}); first warm re-run / cold run: "
          f"{first / cold:.2f}; target: at most {TARGET:.2f}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps({
            "command": " ".join([sys.executable, *sys.argv]), "pyspark": version,
            "example": example, "started": started.isoformat(), "cpus": os.cpu_count(),
            "runs": runs, "serve_starts": serve_starts,
            "medians": {"cold": cold, "warm first": first, "warm later": later},
            "ratio": ratio, "ratio_per_round": per_round}, indent=2))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
