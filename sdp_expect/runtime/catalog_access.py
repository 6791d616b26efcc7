"""How a command that reads a project's catalog after a run reaches it (``report``,
``history``): through the project's warm server (``sdp-expect serve``) when it is up,
else through ``--remote``, else in a Spark process of its own on the project's catalog
(``metastore_db/``, which admits one process at a time).
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.project import Project, UsageProblem, find_spec, load_project
from sdp_expect.runtime.format_jars import format_setup
from sdp_expect.runtime.local_server import ServerProblem, ServerRecord, project_lock, warm_server
from sdp_expect.runtime.spark_pipelines import default_confs, is_local

__all__ = ["DEFAULT_WAIT", "CatalogAccess", "add_wait_argument", "catalog_access", "catalog_turn",
           "parse_confs"]

DEFAULT_WAIT = 300.0
"""Seconds a command waits by default for another command of the project that uses its
catalog (``--wait``)."""

_CATALOG_SETTINGS = frozenset({"spark.sql.catalogImplementation",
                               "spark.hadoop.javax.jdo.option.ConnectionURL"})
"""Settings that name another catalog than the project folder's."""


def add_wait_argument(parser: argparse.ArgumentParser) -> None:
    """``--wait SECONDS`` (old name ``--port-wait``): how long to wait for another command
    of the same project that uses its catalog."""
    parser.add_argument("--wait", "--port-wait", dest="wait", type=float, default=DEFAULT_WAIT,
                        metavar="SECONDS",
                        help="when another sdp-expect command of the same project is using its "
                        f"catalog, wait this long for it to finish (default: {DEFAULT_WAIT:.0f}; "
                        "0: do not wait). Commands of other projects never wait")


def add_catalog_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a command that reads a project's catalog (``report``, ``quarantine``,
    ``history``): ``--spec``, ``--conf``, ``--remote`` and :func:`add_wait_argument`'s."""
    parser.add_argument("--spec", metavar="FILE",
                        help="the pipeline spec (spark-pipeline.yml), or its folder; default: the "
                        "first one in the current folder or its parents")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the catalog, as given to `sdp-expect run` "
                        "(repeatable); it wins over the defaults")
    parser.add_argument("--remote", metavar="URL",
                        help="go through this Spark Connect server (sc://host:port) instead of "
                        "the project's local catalog")
    add_wait_argument(parser)


def catalog_project(args: argparse.Namespace) -> tuple[Project, dict[str, str]]:
    """The project and the ``--conf`` settings of a command declared with
    :func:`add_catalog_arguments`.

    :raises UsageProblem: no spec file, or a ``--conf`` that is not ``KEY=VALUE``.
    """
    return load_project(find_spec(args.spec)), parse_confs(args.conf)


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
    """The way to ``project``'s catalog for ``--remote remote`` and ``--conf`` ``given``.

    A Spark process of the command's own has the project's table format's jars and
    settings (:func:`~sdp_expect.runtime.format_jars.format_setup`).

    :raises ServerProblem: with the format's code when its jars cannot be had.
    """
    remote = remote if not is_local(remote) else None
    warm = warm_server(project.folder.resolve()) if remote is None else None
    confs: dict[str, str] = {}
    if not remote:
        try:  # a process of the command's own needs the format's jars; a warm server has them
            table_format = {} if warm else format_setup(project, given=given).confs()
        except SdpExpectError as error:
            raise ServerProblem(error.with_context(location=Location(str(project.spec)))
                                ) from None
        confs = {**default_confs(project.folder), **table_format, **given}
    own = not (remote or warm or _CATALOG_SETTINGS & set(given))
    return CatalogAccess(remote, warm, confs, own)


@contextlib.contextmanager
def catalog_turn(project: Project, access: CatalogAccess, *, wait: float, command: str,
                 say: Callable[[str], None]) -> Iterator[None]:
    """The command's turn at the project folder's catalog.

    A command that reads that catalog in a Spark process of its own holds the project's
    lock while it does (as ``run`` does): the embedded Derby metastore admits one process
    at a time, so a ``report`` or ``history`` during a run would otherwise fail to open it.
    Through a warm server or a remote one, nothing is held.

    :param project: The project.
    :param access: How the command reaches the catalog (:func:`catalog_access`).
    :param wait: Seconds to wait for another command of the project (0: not at all).
    :param command: The command, for the message of one that waits for it.
    :param say: Tells the user that the command waits, once.
    :raises ServerProblem: SDPX-SRV-502 when the other command does not finish in time.
    """
    if not access.own_catalog:
        yield
        return
    with project_lock(project.folder.resolve(), wait=wait, say=say, command=command):
        yield
