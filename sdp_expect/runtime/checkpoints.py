"""Streaming checkpoints that the project's catalog has never seen (SDPX-PRJ-409).

``sdp-expect run`` keeps a project's catalog in the project folder (``metastore_db/``,
``spark-warehouse/``), while SDP keeps its streaming checkpoints under the spec's
``storage`` (``<storage>/_checkpoints/<catalog>/<database>/<table>/<flow>/<n>``), which
is an absolute URI and so is often shared: by a second clone of the same project, or
by a project whose ``metastore_db/`` was deleted. A run with a new catalog and such
checkpoints resumes each streaming flow where the other catalog's run stopped: it fails
(``Wrong basePath`` when the source's folder moved) or, worse, skips the records that
run had read and leaves the new tables without them. A first run of a new catalog is a
full refresh, so the check asks for one (``--full-refresh-all``, or ``--full-refresh``
naming every table with checkpoints), which makes SDP start new checkpoints and loses
nothing: the tables are new, the old checkpoints stay where they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlparse

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.project import Project
from sdp_expect.runtime.spark_pipelines import Invocation, default_confs, full_refresh_of

__all__ = ["checkpointed_tables", "new_catalog_problem", "storage_folder"]

_CATALOG_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"


def storage_folder(storage: Optional[str]) -> Optional[Path]:
    """The local folder of a spec's ``storage`` (a ``file:`` URI or an absolute path);
    None for storage elsewhere (``s3a://...``), which this check leaves alone."""
    if not storage:
        return None
    parsed = urlparse(storage)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if not parsed.scheme and Path(storage).is_absolute():
        return Path(storage)
    return None


def checkpointed_tables(storage: Path) -> list[str]:
    """The tables (``catalog.database.table``) that hold a flow's checkpoint under
    ``storage``, sorted."""
    root = storage / "_checkpoints"
    if not root.is_dir():
        return []
    return sorted(".".join(table.relative_to(root).parts)
                  for table in root.glob("*/*/*")
                  if table.is_dir() and any(flow.is_dir() for flow in table.iterdir()))


def _refreshed(table: str, named: list[str]) -> bool:
    parts = table.split(".")
    return any(name.split(".") == parts[-len(name.split(".")):] for name in named)


def new_catalog_problem(project: Project, invocation: Invocation) -> Optional[SdpExpectError]:
    """SDPX-PRJ-409 when a run would resume streaming checkpoints that its catalog has
    never seen: the run's catalog is the project folder's and no run has made it yet
    (no ``metastore_db/``), while the spec's storage holds checkpoints of tables that the
    run does not refresh from scratch. None when the run is on another catalog (a
    ``--remote`` server, a user's catalog settings) or nothing is to resume."""
    own = default_confs(project.folder)[_CATALOG_URL]
    if (not invocation.local or invocation.confs.get(_CATALOG_URL) != own
            or (project.folder / "metastore_db").is_dir()):
        return None
    folder = storage_folder(project.storage)
    if folder is None:
        return None
    named, every = full_refresh_of(invocation.command)
    left = [] if every else [table for table in checkpointed_tables(folder)
                             if not _refreshed(table, named)]
    if not left:
        return None
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    return SdpExpectError(
        "SDPX-PRJ-409",
        f"the catalog in {project.folder} is new (no metastore_db/), but the spec's storage "
        f"{folder} holds streaming checkpoints of {shown} from another catalog: their flows "
        "would resume where that catalog's runs stopped (and fail, or leave out the records "
        "those runs read)",
        location=Location(str(project.spec)))
