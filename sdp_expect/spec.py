"""The pipeline spec file (``spark-pipeline.yml``): its names and its ``libraries``.

No pyspark: ``sdp-expect`` commands and the Python API read the same spec the
same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

__all__ = ["SPEC_FILE_NAMES", "library_files", "spec_in"]

SPEC_FILE_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")
"""The spec file names ``spark-pipelines`` looks for."""


def spec_in(folder: Path) -> Optional[Path]:
    """The first spec file in ``folder`` (not its parents), if any."""
    for name in SPEC_FILE_NAMES:
        if (folder / name).is_file():
            return folder / name
    return None


def _globs(data: Any) -> list[str]:
    libraries = data.get("libraries") if isinstance(data, dict) else None
    found: list[str] = []
    for entry in libraries if isinstance(libraries, list) else []:
        glob = entry.get("glob") if isinstance(entry, dict) else None
        include = glob.get("include") if isinstance(glob, dict) else None
        if isinstance(include, str):
            found.append(include)
    return found


def library_files(spec: Path, suffix: str) -> list[Path]:
    """The files with ``suffix`` that the spec's ``libraries`` globs match, as
    ``spark-pipelines`` finds them (relative to the spec's folder); none when the
    spec cannot be read.
    """
    import yaml

    try:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    folder = spec.parent
    files: list[Path] = []
    for pattern in _globs(data):
        # spark-pipelines accepts a file path or a folder ending in /**, which it reads
        # as <folder>/**/* (everything below the folder); it rejects any other glob.
        if pattern.endswith("/**"):
            pattern += "/*"
        try:
            matches = sorted(folder.glob(pattern))
        except (ValueError, NotImplementedError):
            continue
        files.extend(p for p in matches if p.is_file() and p.suffix == suffix
                     and "__pycache__" not in p.parts and p not in files)
    return files
