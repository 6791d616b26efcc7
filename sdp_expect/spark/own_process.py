"""A reading or writing module of sdp-expect, run in a Python process of its own.

A project's local catalog (the embedded Derby metastore of ``spark-warehouse/``) admits
one process at a time, and a Spark of sdp-expect's own must not share this process's
Spark Connect client state. So the report's reader (:mod:`sdp_expect.report.reader`)
and the history table's writer (:mod:`sdp_expect.quality.history_table`) run as
``python -m <module> --out FILE ...`` in the project's folder, and hand back JSON in
``FILE``. This module starts them; what a failure means is for each caller to say.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

__all__ = ["Finished", "local_spark_environment", "run_module"]


def local_spark_environment() -> dict[str, str]:
    """The environment of a local Spark process started from here.

    Drops the state a Spark Connect client leaves in ``os.environ`` (a reader must
    start a plain local session, not connect) and runs Spark's Python workers
    with this Python.
    """
    env = dict(os.environ)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SPARK_REMOTE",
                "SPARK_CONNECT_AUTHENTICATE_TOKEN"):
        env.pop(key, None)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


@dataclass(frozen=True)
class Finished:
    """How the process ended.

    :param returncode: Its exit status.
    :param tail: The last lines it printed (stdout and stderr together).
    :param result: The JSON it wrote to its ``--out`` file; ``None`` when it wrote none.
    """

    returncode: int
    tail: str
    result: Optional[Any]


def run_module(module: str, arguments: Sequence[str], *, folder: Path,
               confs: Mapping[str, str], timeout: float, lines: int = 15) -> Finished:
    """Run ``python -m module --out FILE *arguments --conf KEY=VALUE ...`` in ``folder``.

    :param confs: Spark settings, passed as ``--conf`` (the project's).
    :param lines: How many of its last output lines :attr:`Finished.tail` keeps.
    :raises subprocess.TimeoutExpired: when it takes longer than ``timeout`` seconds.
    """
    with tempfile.TemporaryDirectory(prefix="sdp-expect-") as scratch:
        out = os.path.join(scratch, "out.json")
        command = [sys.executable, "-m", module, "--out", out, *arguments]
        for key, value in confs.items():
            command += ["--conf", f"{key}={value}"]
        done = subprocess.run(command, cwd=folder, env=local_spark_environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, check=False)
        output = done.stdout.decode("utf-8", "replace").strip().splitlines()
        result = None
        if os.path.exists(out):
            with open(out, encoding="utf-8") as handle:
                result = json.load(handle)
        return Finished(done.returncode, "\n".join(output[-lines:]), result)
