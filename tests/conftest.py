"""Shared fixtures: one Spark Connect server for the whole test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from sdp_runner import MakePipeline, Pipeline, SparkServer

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkServer]:
    server = SparkServer(tmp_path_factory.mktemp("spark-server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def make_pipeline(spark_server: SparkServer, tmp_path: Path) -> MakePipeline:
    """Build a :class:`Pipeline` (its own database and storage) in the shared server."""

    def make(definitions: Any = None, *, files: Path | None = None,
             conf: dict[str, str] | None = None) -> Pipeline:
        return Pipeline(spark_server, tmp_path, definitions=definitions, files=files,
                        conf=dict(conf or {}))

    return make
