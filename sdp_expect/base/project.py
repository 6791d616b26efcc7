"""A pipeline project: its spec file (``spark-pipeline.yml``), what the spec says,
and how its settings' values read.

No pyspark and nothing of the ``sdp-expect`` command: the commands, the Python
API (which finds the spec's ``libraries``) and the pipeline-wide settings
(:mod:`sdp_expect.base.options`) read the same spec and the same values the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

__all__ = [
    "SPEC_FILE_NAMES",
    "UNSET_VALUE",
    "Project",
    "UsageProblem",
    "find_spec",
    "library_files",
    "library_globs",
    "load_project",
    "read_bool",
    "setting_text",
    "spec_in",
]

SPEC_FILE_NAMES = ("spark-pipeline.yaml", "spark-pipeline.yml")
"""The spec file names ``spark-pipelines`` looks for."""

UNSET_VALUE = "<set me>"
"""The value ``sdp-expect migrate`` writes for a setting that the code reads with
``spark.conf.get(key)`` and no default when the Databricks project does not say it: a
placeholder that ``run``, ``dry-run`` and ``validate`` refuse (SDPX-PRJ-403), so that no
pipeline runs with it."""


class UsageProblem(Exception):
    """A mistake on the command line, such as a spec that is not there (exit status 2)."""


# --------------------------------------------------------------------------- setting values


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def read_bool(raw: str) -> Optional[bool]:
    """The boolean a setting's text says (``true``/``false``, any case, also
    ``1``/``0``, ``yes``/``no``, ``on``/``off``); None when it says neither.
    """
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return None


def setting_text(value: Any) -> str:
    """A spec's YAML value as the text of a setting: a YAML boolean is ``true`` or
    ``false`` (as Spark writes them), not Python's ``True``.
    """
    return str(value).lower() if isinstance(value, bool) else str(value)


# --------------------------------------------------------------------------- the spec file


def spec_in(folder: Path) -> Optional[Path]:
    """The first spec file in ``folder`` (not its parents), if any."""
    for name in SPEC_FILE_NAMES:
        if (folder / name).is_file():
            return folder / name
    return None


def find_spec(given: Optional[str], start: Optional[Path] = None) -> Path:
    """The spec file: ``given``, else the first spec file in ``start`` or its parents.

    :param given: The ``--spec`` argument (a file, or a folder holding one).
    :param start: Where to look from; default the current directory.
    :raises UsageProblem: when there is none, or two in one folder.
    """
    if given is not None:
        path = Path(given).expanduser()
        if path.is_dir():
            return _only_spec_in(path) or _no_spec(path)
        if not path.is_file():
            raise UsageProblem(f"the spec file {given} does not exist")
        return path.resolve()
    folder = (start or Path.cwd()).resolve()
    while True:
        found = _only_spec_in(folder)
        if found is not None:
            return found
        if folder.parent == folder:
            return _no_spec(start or Path.cwd())
        folder = folder.parent


def _only_spec_in(folder: Path) -> Optional[Path]:
    found = [folder / name for name in SPEC_FILE_NAMES if (folder / name).is_file()]
    if len(found) > 1:
        raise UsageProblem(f"{folder} has both {SPEC_FILE_NAMES[0]} and {SPEC_FILE_NAMES[1]}; "
                           "keep one")
    return found[0].resolve() if found else None


def _no_spec(folder: Path) -> Path:
    raise UsageProblem(f"no {SPEC_FILE_NAMES[1]} (or .yaml) in {folder} or its parent folders; "
                       "give one with --spec")


@dataclass(frozen=True)
class Project:
    """A pipeline project: its spec file and what the spec says.

    :param spec: The spec file, absolute.
    :param name: The pipeline's name.
    :param catalog: The spec's default catalog, if any.
    :param database: The spec's default database (``database`` or ``schema``), if any.
    :param configuration: The spec's ``configuration``.
    :param storage: The spec's ``storage`` (where SDP keeps streaming checkpoints), if any.
    """

    spec: Path
    name: str = ""
    catalog: Optional[str] = None
    database: Optional[str] = None
    configuration: Mapping[str, str] = field(default_factory=dict)
    storage: Optional[str] = None

    @property
    def folder(self) -> Path:
        """The project folder: where the spec file is."""
        return self.spec.parent


def load_project(spec: Path) -> Project:
    """Read the parts of a spec file that sdp-expect needs.

    :raises UsageProblem: when the file is not a YAML mapping.
    """
    import yaml

    try:
        with open(spec, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        raise UsageProblem(f"cannot read the spec file {spec}: {error}") from None
    if not isinstance(data, dict):
        raise UsageProblem(f"the spec file {spec} is not a YAML mapping")
    configuration = data.get("configuration") or {}
    return Project(
        spec=spec,
        name=str(data.get("name", "")),
        catalog=_text(data.get("catalog")),
        database=_text(data.get("database", data.get("schema"))),
        configuration={str(k): setting_text(v) for k, v in configuration.items()}
        if isinstance(configuration, dict) else {},
        storage=_text(data.get("storage")),
    )


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _globs(data: Any) -> list[str]:
    libraries = data.get("libraries") if isinstance(data, dict) else None
    found: list[str] = []
    for entry in libraries if isinstance(libraries, list) else []:
        glob = entry.get("glob") if isinstance(entry, dict) else None
        include = glob.get("include") if isinstance(glob, dict) else None
        if isinstance(include, str):
            found.append(include)
    return found


def library_globs(spec: Path) -> list[tuple[str, list[Path]]]:
    """Each ``include`` of the spec's ``libraries``, in order, with the files it matches
    as ``spark-pipelines`` finds them (relative to the spec's folder; ``__pycache__``
    left out); none when the spec cannot be read. An include that ``spark-pipelines``
    would refuse (an absolute or empty pattern) matches nothing here."""
    import yaml

    try:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    folder = spec.parent
    found: list[tuple[str, list[Path]]] = []
    for include in _globs(data):
        # spark-pipelines accepts a file path or a folder ending in /**, which it reads
        # as <folder>/**/* (everything below the folder); it rejects any other glob.
        pattern = include + "/*" if include.endswith("/**") else include
        try:
            matches = sorted(folder.glob(pattern))
        except (ValueError, NotImplementedError):
            # pathlib refuses an absolute or empty pattern (NotImplementedError,
            # ValueError): spark-pipelines rejects such a library too, and says so
            matches = []
        found.append((include, [p for p in matches
                                if p.is_file() and "__pycache__" not in p.parts]))
    return found


def library_files(spec: Path, suffix: Optional[str] = None) -> list[Path]:
    """The files that the spec's ``libraries`` globs match, as ``spark-pipelines`` finds
    them (relative to the spec's folder), each once, those ending in ``suffix`` when
    given (None: every file, which ``spark-pipelines`` registers or refuses); none when
    the spec cannot be read (:func:`library_globs`).
    """
    files: list[Path] = []
    for _, matches in library_globs(spec):
        files.extend(p for p in matches if (suffix is None or p.suffix == suffix)
                     and p not in files)
    return files
