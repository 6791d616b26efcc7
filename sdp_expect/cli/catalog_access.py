"""How a command that reads a project's catalog after a run reaches it (``report``,
``history``): through the project's warm server (``sdp-expect serve``) when it is up,
else through ``--remote``, else in a Spark process of its own on the project's catalog
(``metastore_db/``, which admits one process at a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from sdp_expect.cli.local_server import ServerRecord, warm_server
from sdp_expect.cli.spark_pipelines import default_confs, is_local
from sdp_expect.project import Project, UsageProblem

__all__ = ["CatalogAccess", "catalog_access", "parse_confs"]

_CATALOG_SETTINGS = frozenset({"spark.sql.catalogImplementation",
                               "spark.hadoop.javax.jdo.option.ConnectionURL"})
"""Settings that name another catalog than the project folder's."""


def parse_confs(pairs: Sequence[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as a dict.

    :raises UsageProblem: for an option that is not ``KEY=VALUE``.
    """
    given = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageProblem(f"--conf {pair!r} is not KEY=VALUE")
        given[key.strip()] = value
    return given


@dataclass(frozen=True)
class CatalogAccess:
    """The way to a project's catalog.

    :param remote: The user's Spark Connect URL, or None.
    :param warm: The project's warm server, or None.
    :param confs: The settings of a Spark process of the command's own (empty through a
        remote server).
    :param own_catalog: True when the catalog is the project folder's, read by a process
        of the command's own.
    """

    remote: Optional[str]
    warm: Optional[ServerRecord]
    confs: dict[str, str]
    own_catalog: bool

    def missing(self, folder: Path) -> bool:
        """True when the catalog is the project folder's and no run has made it yet."""
        return self.own_catalog and not (folder / "metastore_db").is_dir()


def catalog_access(project: Project, remote: Optional[str],
                   given: dict[str, str]) -> CatalogAccess:
    """The way to ``project``'s catalog for ``--remote remote`` and ``--conf`` ``given``."""
    remote = remote if not is_local(remote) else None
    warm = warm_server(project.folder.resolve()) if remote is None else None
    confs = {} if remote else {**default_confs(project.folder), **given}
    own = not (remote or warm or _CATALOG_SETTINGS & set(given))
    return CatalogAccess(remote, warm, confs, own)
