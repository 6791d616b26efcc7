"""``python -m sdp_expect.runtime.pipelines_client ACTION --spec SPEC [...]``: the Python
program of ``spark-pipelines``, run without its launcher.

``spark-pipelines --remote URL`` starts two Java processes (the launcher, then
``spark-submit``) only to start pyspark's pipelines program
(``pyspark/pipelines/cli.py``) in Python with a few environment variables: on the
project's own server that is 2-3 s of every run for nothing. ``sdp-expect run``
starts this module instead (:meth:`sdp_expect.runtime.spark_pipelines.Invocation.through`
sets the variables ``spark-submit`` would: ``SPARK_REMOTE``, the ``--conf``
settings), and it runs that same program as ``spark-submit`` does: as
``__main__``, with its folder first on ``sys.path``, and its standard error
joined to its standard output, so that the lines come in one stream, in order.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from typing import Optional, Sequence

__all__ = ["main"]


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run pyspark's pipelines program with ``argv`` (default: this process's arguments)."""
    spec = importlib.util.find_spec("pyspark.pipelines.cli")
    if spec is None or spec.origin is None:
        raise SystemExit("pyspark's pipelines program (pyspark.pipelines.cli) is not installed")
    os.dup2(sys.stdout.fileno(), sys.stderr.fileno())
    sys.argv = [spec.origin, *(sys.argv[1:] if argv is None else argv)]
    sys.path[0] = os.path.dirname(spec.origin)
    runpy.run_path(spec.origin, run_name="__main__")


if __name__ == "__main__":
    main()
