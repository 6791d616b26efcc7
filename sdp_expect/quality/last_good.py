"""The last good data of a materialized view, brought back after a failed update.

Open-source SDP empties every materialized view it refreshes when an update starts
(``TRUNCATE TABLE``, in the table materialization that comes before any flow runs), and
each view's flow then writes its records. When a flow fails (a fail rule, any error) or
is skipped (it reads a dataset that failed), its view stays empty; Lakeflow keeps the
last good contents instead. A table format that keeps versions (Delta Lake) still has
them: the version before this update's ``TRUNCATE`` is the last good update's data.

:func:`views_to_restore` decides, from the definitions file's datasets and the run's
flow states, which views to bring back: every materialized view defined through
sdp-expect whose flow did not complete, and with it every materialized view of the same
dataset's group (its quarantine and metrics, which must agree with it), whether their
own flows completed or not. Streaming tables are never restored: they keep the batches
they committed, and their checkpoints would no longer match older data.
:func:`restore_last_good` then reads each view's history (``DESCRIBE HISTORY``, rows
read as values) and restores the version before its newest ``TRUNCATE`` (``RESTORE
TABLE ... TO VERSION AS OF``). A view whose format keeps no versions (parquet), or that
has no earlier version (its first update failed), is reported as not restored, with why.

No full refresh is undone: a view that the run was asked to refresh from scratch is
left as the run left it (the caller passes ``full_refresh``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from sdp_expect.base.definitions import DefinedDataset
from sdp_expect.base.names import METRICS_SUFFIX
from sdp_expect.core.compiler import quoted

__all__ = [
    "DONE_STATES",
    "Restored",
    "restore_last_good",
    "restored_metrics",
    "version_before_truncate",
    "views_to_restore",
]

DONE_STATES = frozenset({"COMPLETED", "EXCLUDED"})
"""Flow states after which a flow writes nothing more in this run: ``COMPLETED`` (a view
then holds this update's data) or ``EXCLUDED`` (not selected by ``--refresh``: not
touched). ``FAILED`` is not one: SDP may start a failed flow again."""

MATERIALIZED_VIEW = "materialized view"
"""The ``type`` the definitions file gives a materialized view."""

TRUNCATE = "TRUNCATE"
"""Delta Lake's operation name for ``TRUNCATE TABLE``."""


@dataclass(frozen=True)
class Restored:
    """What became of one view of a failed update.

    :param table: The view.
    :param version: The version it was restored to; ``None``: it was not.
    :param reason: Why not, when it was not.
    """

    table: str
    version: Optional[int] = None
    reason: Optional[str] = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"table": self.table, "version": self.version, "reason": self.reason}


def _last_part(name: str) -> str:
    return name.split(".")[-1].strip("`").lower()


def views_to_restore(datasets: Iterable[DefinedDataset], flows: Mapping[str, str], *,
                     full_refresh: Iterable[str] = (), full_refresh_all: bool = False
                     ) -> list[str]:
    """The materialized views to bring back after a run whose flows ended in ``flows``.

    :param datasets: The datasets sdp-expect registered (the definitions file).
    :param flows: Each flow of the run (qualified, as the events name it) -> its last
        state. A materialized view's own flow has the view's name.
    :param full_refresh: The datasets the run was asked to refresh from scratch.
    :param full_refresh_all: The run refreshed everything from scratch.
    :returns: The views, by registered name, in the order of ``datasets``; none when
        every flow is done.
    """
    if full_refresh_all:
        return []
    fresh = {_last_part(name) for name in full_refresh}
    states = {_last_part(flow): state for flow, state in flows.items()}
    views = [d for d in datasets if d.type == MATERIALIZED_VIEW]
    failed_owners = {_last_part(d.owner) for d in views
                     if _last_part(d.name) in states
                     and states[_last_part(d.name)] not in DONE_STATES}
    chosen: list[str] = []
    for view in views:
        key = _last_part(view.name)
        if key in fresh or states.get(key) == "EXCLUDED" or key not in states:
            continue
        if _last_part(view.owner) in failed_owners and view.name not in chosen:
            chosen.append(view.name)
    return chosen


def _qualified(name: str, catalog: Optional[str], database: Optional[str]) -> str:
    """``name`` in the pipeline's catalog and database, backquoted part by part."""
    parts = [part.strip("`") for part in name.split(".")]
    if len(parts) == 1 and database:
        parts = [database, *parts]
    if len(parts) == 2 and catalog:
        parts = [catalog, *parts]
    return ".".join(quoted(part) for part in parts)


def version_before_truncate(history: Sequence[tuple[int, str]]) -> Optional[int]:
    """The version before the newest ``TRUNCATE`` of a table's history (version,
    operation), or None when it has none or it is the first version."""
    truncates = [version for version, operation in history if operation.upper() == TRUNCATE]
    if not truncates or max(truncates) == 0:
        return None
    return max(truncates) - 1


def restore_last_good(spark: Any, views: Sequence[str], *, catalog: Optional[str] = None,
                      database: Optional[str] = None) -> list[Restored]:
    """Restore each of ``views`` to the version before its newest ``TRUNCATE``.

    :param spark: A session of the pipeline's Spark.
    :param views: From :func:`views_to_restore`.
    :param catalog: The pipeline's catalog (the spec's), for names of one or two parts.
    :param database: The pipeline's database (the spec's), for names of one part.
    :returns: One entry per view, restored or not (with why).
    """
    done: list[Restored] = []
    for view in views:
        table = _qualified(view, catalog, database)
        try:
            rows = spark.sql(f"DESCRIBE HISTORY {table}").select("version", "operation").collect()
        except Exception as error:  # Spark's refusal is the reason shown
            first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            done.append(Restored(view, reason="its table format keeps no earlier versions "
                                 f"({first[:200]})"))
            continue
        version = version_before_truncate([(int(r["version"]), str(r["operation"]))
                                            for r in rows])
        if version is None:
            done.append(Restored(view, reason="it has no earlier version to go back to "
                                 "(no update of it had completed)"))
            continue
        spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF {int(version)}")
        done.append(Restored(view, version))
    return done


def restored_metrics(datasets: Iterable[DefinedDataset], restored: Iterable[Restored]
                     ) -> dict[str, int]:
    """The metrics view of each dataset whose own view was brought back, by its last name
    part (as the catalog lists it), with the version the dataset's view was restored to:
    what the history table records for that dataset in this update
    (:func:`sdp_expect.quality.history_table.restored_view_rows_sql`).

    :param datasets: The datasets sdp-expect registered (the definitions file).
    :param restored: What :func:`restore_last_good` did.
    """
    versions: dict[str, int] = {_last_part(r.table): r.version for r in restored
                                if r.version is not None}
    found: dict[str, int] = {}
    for metrics in datasets:
        name, owner = _last_part(metrics.name), _last_part(metrics.owner)
        if metrics.type != MATERIALIZED_VIEW or not name.endswith(METRICS_SUFFIX):
            continue
        if name in versions and owner in versions:
            found[name] = versions[owner]
    return found
