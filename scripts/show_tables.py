"""Print the tables a local example run left in its project folder.

Usage: python scripts/show_tables.py PROJECT_DIR

The example runs keep their catalog in PROJECT_DIR (an embedded Derby
metastore, ``metastore_db``, and ``spark-warehouse``); this opens the same
catalog with a plain local Spark session and shows every table in it. A project
whose spec names a table format (``sdp_expect.format: delta``) is read with that
format's jars and settings, as ``sdp-expect run`` wrote it (docs/formats.md).
"""

from __future__ import annotations

import os
import sys


def main(project: str) -> int:
    os.chdir(project)
    from pathlib import Path

    from pyspark.sql import SparkSession

    from sdp_expect.base.project import find_spec, load_project
    from sdp_expect.runtime.format_jars import format_setup

    table_format = format_setup(load_project(find_spec(None, Path.cwd()))).confs()
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("sdp-expect show tables")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.ui.enabled", "false")
    )
    for key, value in table_format.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        names = sorted(t.name for t in spark.catalog.listTables("default"))
        if not names:
            print("No tables: run the pipeline first.")
            return 1
        for name in names:
            frame = spark.read.table(f"default.{name}")
            print(f"\n== {name} ({frame.count()} rows)")
            frame.show(20, truncate=False)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
