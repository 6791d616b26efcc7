"""``sdp-expect translate FILE.sql... [--spec SPEC] [--conf KEY=VALUE]... [-o OUT]``:
print the open-source SDP SQL of Databricks SQL pipeline files, without Spark
(:func:`sdp_expect.sql.translate_files` does the translating).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from sdp_expect.base.options import (
    KEY_DEFAULT_FORMAT,
    KEY_FILE_FORMAT_FLOWS,
    KEY_METRICS,
    KEY_METRICS_FROM,
    KEY_NULL_RESULT,
    KEY_QUARANTINE,
)
from sdp_expect.base.project import setting_text
from sdp_expect.base.table_formats import KEY_TABLE_FORMAT, as_run_sees
from sdp_expect.base.terminal import write_text
from sdp_expect.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE
from sdp_expect.core.planner import RETRY_KEY, SHUFFLE_PARTITIONS_KEY

__all__ = ["add_translate"]

_TRANSLATE_KEYS = (KEY_QUARANTINE, KEY_METRICS, KEY_NULL_RESULT, KEY_METRICS_FROM,
                   KEY_FILE_FORMAT_FLOWS, KEY_DEFAULT_FORMAT, KEY_TABLE_FORMAT, RETRY_KEY,
                   SHUFFLE_PARTITIONS_KEY)


def add_translate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``translate`` and its arguments."""
    parser = subparsers.add_parser(
        "translate",
        help="print the open-source SDP SQL of Databricks SQL pipeline files",
        description="Translate Databricks SQL pipeline files (CREATE OR REFRESH ..., "
        "CONSTRAINT ... EXPECT, LIVE.) to open-source SDP SQL, as sdp_expect.sql.include "
        "does, without starting Spark. The files are translated in the order given, as "
        "files of one pipeline. Saved as .sql files in the pipeline's libraries, the output "
        "gives the same tables. Exit status: 0 all translated, 1 errors found, 2 usage error.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.sql", help="a Databricks SQL file")
    parser.add_argument("--spec", metavar="SPEC",
                        help="take those settings from the configuration of this pipeline "
                        "spec (spark-pipeline.yml); --conf overrides it")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a pipeline setting the translation depends on: "
                        + ", ".join(_TRANSLATE_KEYS) + " (repeatable; default: as in a "
                        "pipeline that sets none)")
    parser.add_argument("--spark-version", metavar="X.Y",
                        help="the Spark version the SQL is for (default: the installed "
                        "pyspark's); on 4.1 a batch log has one row per record")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write to OUT instead of printing: a file for one input, a folder "
                        "(one .sql file per input) for several or when OUT is a folder")
    parser.set_defaults(handler=_run_translate)


def _spec_conf(path: str) -> dict[str, str]:
    """The translation settings in a pipeline spec's ``configuration``."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        try:
            spec = yaml.safe_load(handle)
        except yaml.YAMLError as error:
            raise ValueError(f"not a YAML document: {error}") from None
    configuration = spec.get("configuration") if isinstance(spec, dict) else None
    if configuration is None:
        return {}
    if not isinstance(configuration, dict):
        raise ValueError("'configuration' is not a mapping")
    # sdp-expect run stores the tables of a project that names its format in it
    # (spark.sql.sources.default): translate as that run's session would.
    return as_run_sees({key: setting_text(value) for key, value in configuration.items()
                        if key in _TRANSLATE_KEYS})


def _run_translate(args: argparse.Namespace) -> int:
    import os

    from sdp_expect.base.errors import SdpExpectError
    from sdp_expect.base.spark_version import release
    from sdp_expect.sql import translate_files

    conf: dict[str, str] = {}
    if args.spec is not None:
        try:
            conf.update(_spec_conf(args.spec))
        except (OSError, ValueError) as error:
            write_text(sys.stderr, f"sdp-expect translate: error: --spec {args.spec}: {error}\n")
            return EXIT_USAGE
    for item in args.conf:
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or key not in _TRANSLATE_KEYS:
            write_text(sys.stderr, f"sdp-expect translate: error: --conf {item!r}: expected "
                   f"KEY=VALUE with KEY one of {', '.join(_TRANSLATE_KEYS)}\n")
            return EXIT_USAGE
        conf[key] = value.strip()
    if args.spark_version is not None and release(args.spark_version) is None:
        write_text(sys.stderr, f"sdp-expect translate: error: --spark-version "
                   f"{args.spark_version!r}: expected a version such as 4.1 or 4.2.1\n")
        return EXIT_USAGE
    try:
        translations = translate_files(args.files, conf=conf, spark_version=args.spark_version)
    except SdpExpectError as error:
        write_text(sys.stderr, f"error: {error}\n")
        return EXIT_PROBLEMS
    output: Optional[str] = args.output
    if output is None:
        write_text(sys.stdout, "\n".join(t.text for t in translations))
        return EXIT_OK
    to_folder = len(translations) > 1 or os.path.isdir(output) or output.endswith(os.sep)
    if to_folder:
        os.makedirs(output, exist_ok=True)
        names = [os.path.basename(t.file) for t in translations]
        if len(set(names)) != len(names):
            write_text(sys.stderr, "sdp-expect translate: error: two input files have the same "
                   "name; translate them into different folders\n")
            return EXIT_USAGE
    for translation in translations:
        target = os.path.join(output, os.path.basename(translation.file)) if to_folder \
            else output
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(translation.text)
        write_text(sys.stderr, f"{translation.file} -> {target}\n")
    return EXIT_OK
