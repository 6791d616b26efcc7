"""Auto Loader and Databricks paths, translated for the open-source file source.

Auto Loader (``spark.readStream.format("cloudFiles").option("cloudFiles.format",
"json")...load(path)``, ``read_files(...)`` and ``cloud_files(...)`` in SQL) has an
open-source counterpart: the file streaming source
(``spark.readStream.format("json").load(path)``), which infers the files' schema
when ``spark.sql.streaming.schemaInference`` is on. What each Auto Loader option
becomes is decided here, once, for Python and SQL alike: :func:`translate_options`.

``/Volumes/...``, ``dbfs:/...`` and ``/dbfs/...`` paths are gathered by their root
(a Unity Catalog volume, a DBFS mount): each root becomes ONE pipeline setting
(:class:`DataRoots`) that the migrated code reads with ``spark.conf.get(...)``, so
that the user edits one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Optional

__all__ = [
    "AUTO_LOADER_FORMATS",
    "DataRoots",
    "OptionOutcome",
    "SCHEMA_INFERENCE",
    "SourceTranslation",
    "root_of",
    "translate_options",
]

SCHEMA_INFERENCE = "spark.sql.streaming.schemaInference"
"""The Spark setting that lets a file stream infer its schema from the files."""

ROOT_KEY = "sdp_expect.migrate.data_root"
"""The pipeline setting that holds the one data root (or the prefix of several)."""

AUTO_LOADER_FORMATS = {
    "json": "json", "csv": "csv", "parquet": "parquet", "orc": "orc", "text": "text",
    "xml": "xml", "binaryfile": "binaryFile", "avro": "avro",
}
"""``cloudFiles.format`` value (lower case) -> the open-source source's name."""

_AVRO = ("the Avro source is not built into open-source Spark: add it with `--packages "
         "org.apache.spark:spark-avro_2.13:<your Spark version>`")

# option (lower case, without "cloudFiles.") -> (outcome, explanation)
_KEEP, _DROP, _LOST = "kept", "dropped", "lost"
_OPTIONS: dict[str, tuple[str, str]] = {
    "schemalocation": (_DROP, "not needed: the file source infers the schema from the files "
                              "when the flow starts, and the flow's checkpoint is in the "
                              "pipeline storage"),
    "useincrementallisting": (_DROP, "the file source lists the folder at each trigger"),
    "usenotifications": (_DROP, "no file notification service in open-source Spark: the file "
                                "source lists the folder at each trigger instead (same rows, "
                                "slower on very large folders)"),
    "fetchparallelism": (_DROP, "a notification setting: not used by the file source"),
    "queueurl": (_DROP, "a notification setting: not used by the file source"),
    "region": (_DROP, "a notification setting: not used by the file source"),
    "backfillinterval": (_DROP, "a notification setting: the file source lists every file"),
    "validateoptions": (_DROP, "the file source checks its options itself"),
    "partitioncolumns": (_DROP, "the file source finds partition columns from `key=value` "
                                "folders by itself"),
    "maxfilespertrigger": (_KEEP, "maxFilesPerTrigger"),
    "schemaevolutionmode": (_LOST, "the file source does not evolve its schema: it infers it "
                                   "once, when the flow starts, and ignores columns that "
                                   "appear later. Fix: give the full schema with "
                                   ".schema('col TYPE, ...') and add new columns to it, or run "
                                   "with --full-refresh <table> when the files change"),
    "schemahints": (_LOST, "schema hints are Auto Loader's. Fix: give the full schema with "
                           ".schema('col TYPE, ...') (or cast the columns in the query)"),
    "rescueddatacolumn": (_LOST, "open-source sources have no rescued-data column. Fix: for "
                                 "JSON and CSV, .option('columnNameOfCorruptRecord', "
                                 "'<column>') keeps unparsable records whole in that column "
                                 "(it must be in a given .schema(...)); values of the wrong "
                                 "type become NULL"),
    "allowoverwrites": (_LOST, "the file source reads each file name once: a file written "
                               "again under the same name is not read again. Fix: write new "
                               "files under new names"),
    "includeexistingfiles": (_LOST, "the file source always reads the files already there "
                                    "when it starts for the first time. Fix: move the old "
                                    "files out of the folder"),
    "maxbytespertrigger": (_LOST, "the file source limits a micro-batch by files, not bytes. "
                                  "Fix: use maxFilesPerTrigger"),
    "cleansource": (_LOST, "Fix: the file source's own options are cleanSource "
                           "(archive|delete|off) and sourceArchiveDir"),
}


@dataclass(frozen=True)
class OptionOutcome:
    """What became of one Auto Loader option.

    :param name: The option as written.
    :param outcome: ``kept`` (carried over, maybe renamed), ``dropped`` (not needed),
        ``lost`` (no open-source equivalent: behaviour differs, see ``why``).
    :param why: What happens instead, and the fix for ``lost``.
    """

    name: str
    outcome: str
    why: str


@dataclass
class SourceTranslation:
    """An Auto Loader read as the open-source file source.

    :param format: The open-source source's name (``json``...), or None when unknown.
    :param options: The reader options to set, in order (carried over, and added).
    :param outcomes: One per Auto Loader option, in the order written.
    :param problems: What prevents the translation (no ``cloudFiles.format``...).
    :param added: Options added to keep Auto Loader's results (with why).
    :param verbatim: The options (as written) that the file source takes unchanged.
    """

    format: Optional[str]
    options: list[tuple[str, str]] = field(default_factory=list)
    outcomes: list[OptionOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    verbatim: set[str] = field(default_factory=set)


def translate_options(options: list[tuple[str, Optional[str]]], *,
                      infer_types_default: bool, has_schema: bool,
                      format_name: Optional[str] = None) -> SourceTranslation:
    """The file-source reader for Auto Loader ``options`` (``read_files`` options too).

    :param options: ``(name, value)`` as written (value None when not a constant),
        with or without the ``cloudFiles.`` prefix.
    :param infer_types_default: Auto Loader's default for ``inferColumnTypes``
        (``False`` for ``cloudFiles`` / ``cloud_files``, ``True`` for ``read_files``).
    :param has_schema: Whether the read gives its schema (``.schema(...)``): then
        nothing about inference applies.
    :param format_name: The format when given outside the options (``cloud_files``'s
        second argument, ``read_files``'s ``format =>``).
    """
    fmt = format_name
    infer: Optional[bool] = None
    kept: list[tuple[str, str]] = []
    outcomes: list[OptionOutcome] = []
    problems: list[str] = []
    verbatim: set[str] = set()
    for name, value in options:
        bare = name[len("cloudfiles."):] if name.lower().startswith("cloudfiles.") else name
        key = bare.lower()
        if key == "format":
            fmt = value
            continue
        if key == "infercolumntypes":
            infer = (value or "").strip().lower() == "true"
            continue
        if key == "includeexistingfiles" and (value or "").strip().lower() == "true":
            outcomes.append(OptionOutcome(name, _DROP, "the file source reads the files "
                                                       "already there, as Auto Loader does"))
            continue
        known = _OPTIONS.get(key)
        if known is not None:
            outcome, why = known
            if outcome == _KEEP:
                if value is None:
                    problems.append(f"option {name} has a value that is not a constant: "
                                    f"set {why} by hand")
                else:
                    kept.append((why, value))
                    outcomes.append(OptionOutcome(name, _KEEP, f"as {why}"))
            else:
                outcomes.append(OptionOutcome(name, outcome, why))
        elif name.lower().startswith("cloudfiles."):
            outcomes.append(OptionOutcome(name, _LOST, "an Auto Loader option with no "
                                                       "open-source equivalent. Fix: check "
                                                       "whether the rows depend on it"))
        elif value is None:
            problems.append(f"option {name} has a value that is not a constant: set it by hand")
        else:
            kept.append((bare, value))
            verbatim.add(name)
    translation = SourceTranslation(format=None, options=kept, outcomes=outcomes,
                                    problems=problems, verbatim=verbatim)
    if fmt is None:
        problems.append("no cloudFiles.format: Auto Loader needs one; write the format with "
                        "spark.readStream.format('<json|csv|parquet|...>')")
        return translation
    source = AUTO_LOADER_FORMATS.get(fmt.strip().lower())
    if source is None:
        problems.append(f"format {fmt!r} is not a file format open-source Spark reads")
        return translation
    translation.format = source
    if source == "avro":
        problems.append(_AVRO)
    infer_types = infer_types_default if infer is None else infer
    if not has_schema and source == "json" and not infer_types:
        kept.append(("primitivesAsString", "true"))
        translation.added.append("primitivesAsString=true: Auto Loader reads JSON values as "
                                 "strings unless inferColumnTypes is true")
    if not has_schema and source == "csv" and infer_types:
        kept.append(("inferSchema", "true"))
        translation.added.append("inferSchema=true: for inferColumnTypes")
    return translation


# --------------------------------------------------------------------------- paths


_ROOT = re.compile(r"(?P<root>/Volumes/[^/\s'\"{}]+/[^/\s'\"{}]+/[^/\s'\"{}]+"
                   r"|dbfs:/mnt/[^/\s'\"{}]+|dbfs:/(?!mnt/)[^/\s'\"{}]+"
                   r"|/dbfs/mnt/[^/\s'\"{}]+|/dbfs/(?!mnt/)[^/\s'\"{}]+)")


def root_of(text: str) -> Optional[re.Match[str]]:
    """The first Databricks data root in ``text``: a volume, a DBFS mount or top folder."""
    return _ROOT.search(text)


def all_roots(text: str) -> list[str]:
    """Every Databricks data root in ``text``, in order."""
    return [match.group("root") for match in _ROOT.finditer(text)]


@dataclass
class DataRoots:
    """The project's Databricks data roots, each one pipeline setting.

    :param roots: Every root found in the project (before any file is rewritten).
    :param base: The local folder the settings point to by default (``--data-root``).
    """

    roots: list[str]
    base: str
    uses: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unique = list(dict.fromkeys(self.roots))
        self.keys: dict[str, str] = {}
        if len(unique) == 1:
            self.keys[unique[0]] = ROOT_KEY
        else:
            taken: set[str] = set()
            for root in unique:
                name = re.sub(r"[^A-Za-z0-9_]", "_", PurePosixPath(root).name) or "root"
                candidate, number = name, 2
                while candidate in taken:
                    candidate, number = f"{name}_{number}", number + 1
                taken.add(candidate)
                self.keys[root] = f"{ROOT_KEY}.{candidate}"

    def key(self, root: str) -> str:
        """The setting for ``root``."""
        if root not in self.keys:  # found late (should not happen): its own key
            self.keys[root] = f"{ROOT_KEY}.{len(self.keys) + 1}"
        return self.keys[root]

    def value(self, root: str) -> str:
        """The default value of ``root``'s setting: a folder under :attr:`base`."""
        return f"{self.base.rstrip('/')}/{PurePosixPath(root).name}"

    def use(self, root: str, where: str) -> str:
        """Note a use of ``root`` at ``where`` (``file:line``); its setting."""
        self.uses.setdefault(root, []).append(where)
        return self.key(root)

    def configuration(self) -> dict[str, str]:
        """The settings of the roots actually used."""
        return {self.key(root): self.value(root) for root in self.uses}
