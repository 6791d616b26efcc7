"""``sdp-expect migrate SRC DST``: a Databricks Lakeflow / DLT project to an
open-source SDP one. The command's arguments and output; the converting is
:mod:`sdp_expect.migrate`'s, the dry-run of the result
:mod:`sdp_expect.migrate.check`'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import EXIT_USAGE
from sdp_expect.migrate import MigrationError, migrate
from sdp_expect.migrate.check import dry_run
from sdp_expect.migrate.output import exit_status, to_json, to_text

__all__ = ["MIGRATE_DESCRIPTION", "add_migrate", "command_migrate"]

MIGRATE_DESCRIPTION = """\
Convert a Databricks Lakeflow / Delta Live Tables pipeline project in SRC into
an open-source Spark Declarative Pipelines project in DST that `sdp-expect
run` runs. Every file is copied to the same place in DST. Python pipeline
files get sdp-expect's imports (from pyspark import pipelines as dp -> from
sdp_expect import pipelines as dp; import dlt -> from sdp_expect import dlt),
LIVE. removed from table names, `spark = SparkSession.active()` where a file
uses spark without defining it (Spark 4.1), Auto Loader reads as the file
source (spark.readStream.format("json")...), df.column as df["column"], and
/Volumes/ and dbfs:/ paths read from one pipeline setting per root. SQL files
are registered through sdp_expect.sql.include by a generated databricks_sql.py;
their read_files()/cloud_files() become views in a generated Python file. A
spark-pipeline.yml lists the pipeline files and settings.

It prints every change, and every construct it could not convert (Auto Loader
options with no open-source equivalent, Databricks-only SQL functions, Delta
Lake, Auto CDC on Spark 4.1, path=/private=/row_filter=, dbutils, notebook
magics...) with its file and line. Then it dry-runs the result (sdp-expect
dry-run in DST, unless --no-check) and lists each error at the SOURCE file and
line. SRC is never modified.

Exit status: 0 converted completely and the dry-run passed; 1 the dry-run
failed: the result will not run as written; 2 usage error (SRC not a folder,
DST not new or empty); 3 the dry-run passed (or --no-check) but some constructs
are listed as not converted: look at them.
"""


def add_migrate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``migrate`` and its arguments."""
    parser = subparsers.add_parser(
        "migrate", help="convert a Databricks Lakeflow / DLT project to open-source SDP",
        description=MIGRATE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", metavar="SRC", help="the Databricks project folder (only read)")
    parser.add_argument("dst", metavar="DST", help="a new (or empty) folder for the result")
    parser.add_argument("--name", help="the pipeline's name (default: the bundle's pipeline "
                        "name, else SRC's folder name)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: text)")
    parser.add_argument("--no-check", action="store_true",
                        help="do not dry-run the result (the dry-run starts Spark)")
    parser.add_argument("--data-root", metavar="FOLDER",
                        help="where the files of the Databricks data roots are: each "
                        "/Volumes/<catalog>/<schema>/<volume> (dbfs:/mnt/<m>...) becomes the "
                        "pipeline setting FOLDER/<volume> (default: DST/data/<volume>, reported)")
    parser.add_argument("--wait", "--port-wait", dest="wait", type=float, metavar="SECONDS",
                        help="for the dry-run: how long to wait for another sdp-expect command "
                        "of DST (default 300)")
    parser.set_defaults(handler=command_migrate)


def command_migrate(args: argparse.Namespace) -> int:
    """``sdp-expect migrate``: the exit status."""
    try:
        result = migrate(Path(args.src), Path(args.dst), name=args.name,
                         data_root=getattr(args, "data_root", None))
    except MigrationError as error:
        write_text(sys.stderr, f"sdp-expect migrate: error: {error}\n")
        return EXIT_USAGE
    if not getattr(args, "no_check", False):
        if args.format != "json":
            write_text(sys.stderr, "sdp-expect migrate: dry-run of the result "
                       "(sdp-expect dry-run; --no-check skips it)...\n")
        result.check = dry_run(Path(args.dst), result.line_maps,
                               wait=getattr(args, "wait", None))
    write_text(sys.stdout, to_json(result) + "\n" if args.format == "json" else to_text(result))
    return exit_status(result)
