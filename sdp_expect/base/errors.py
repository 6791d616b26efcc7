"""Coded errors for every user mistake sdp-expect can detect.

Each error carries a stable code (``SDPX-...``), the dataset and the
expectation it concerns (when known), what is wrong, and what to do instead.
The catalogue below is the single list of codes; ``docs/errors.md`` documents
each one and a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

__all__ = ["ERROR_CATALOGUE", "ErrorSpec", "Location", "SdpExpectError"]


@dataclass(frozen=True)
class Location:
    """Where a mistake is, as values: a file and a line (and column) in it, or a part of a
    rule file. Readers use the fields; the text is for people.

    :param file: The file, as shown to the user.
    :param line: 1-based line, when known.
    :param column: 1-based column, when known (shown as ``file:line:column``).
    :param rule: 1-based number of a rule in a rule file's list (shown as ``file, rule 3``).
    :param label: A part of a rule file that no number names, as people read it: a rule
        by its key (``rule 'id > 0'``), a group (``group 'expect_or_drop'``). A rule file
        is input, so the grammar gives its keys shortened, never whole.
    """

    file: str
    line: Optional[int] = None
    column: Optional[int] = None
    rule: Optional[int] = None
    label: Optional[str] = None

    def __str__(self) -> str:
        part = self.part
        if part is not None:
            return f"{self.file}, {part}"
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"

    @property
    def part(self) -> Optional[str]:
        """The part of a rule file, as people read it (``rule 3``, ``rule 'id > 0'``);
        None for a place that is the whole file or a line of it."""
        if self.rule is not None:
            return f"rule {self.rule}"
        return self.label

    @classmethod
    def from_dict(cls, value: Any) -> Optional[Location]:
        """The location :meth:`as_dict` wrote (read back from JSON); None for anything else."""
        if not isinstance(value, dict) or not isinstance(value.get("file"), str):
            return None
        numbers = {key: value[key] for key in ("line", "column", "rule")
                   if isinstance(value.get(key), int)}
        label = value.get("label")
        return cls(value["file"], **numbers, label=label if isinstance(label, str) else None)

    def as_dict(self) -> dict[str, Any]:
        """For JSON documents (``None`` fields left out)."""
        return {key: value for key, value in (("file", self.file), ("line", self.line),
                                             ("column", self.column), ("rule", self.rule),
                                             ("label", self.label))
                if value is not None}


@dataclass(frozen=True)
class ErrorSpec:
    """One entry of the error catalogue.

    :param code: The stable code, for example ``SDPX-VAL-071``.
    :param title: A short description of the mistake.
    :param fix: What the user should do instead (a default; a raise site may
        give a more specific one).
    """

    code: str
    title: str
    fix: str


ERROR_CATALOGUE: dict[str, ErrorSpec] = {
    spec.code: spec
    for spec in [
        # -- the expectation model: shared by decorators, SQL and rule files --
        ErrorSpec(
            "SDPX-VAL-001",
            "an expectation has no constraint (missing, or empty text)",
            "give the expectation a Spark SQL boolean expression, e.g. 'amount >= 0'",
        ),
        ErrorSpec(
            "SDPX-VAL-002",
            "an expectation has an empty name",
            "give the expectation a non-empty name that says what it checks",
        ),
        ErrorSpec(
            "SDPX-VAL-003",
            "the rule file cannot be read",
            "check the path (a relative path is taken from the file that names it) and that "
            "the file is readable",
        ),
        ErrorSpec(
            "SDPX-VAL-006",
            "unknown action",
            "use one of the actions warn, drop or fail",
        ),
        ErrorSpec(
            "SDPX-VAL-008",
            "a value that must be text is not text",
            "write the name and the constraint as strings (quote values such as 2024 or true)",
        ),
        ErrorSpec(
            "SDPX-VAL-009",
            "the rule file is not a valid YAML or JSON document",
            "fix the syntax at the place the message names; a rule file is UTF-8 text in YAML "
            "or JSON, at most 10 MiB and 100 levels deep",
        ),
        ErrorSpec(
            "SDPX-VAL-010",
            "the constraint uses a construct that an expectation cannot contain",
            "use only literals, columns, deterministic built-in functions, CASE and AND/OR; "
            "for checks across records or tables, build a validation dataset (a join or an "
            "aggregate) and put expect_or_fail on it",
        ),
        ErrorSpec(
            "SDPX-VAL-011",
            "the constraint is not a well-formed SQL expression",
            "fix the expression: close every quote, comment and parenthesis, and write one "
            "boolean expression without ';'",
        ),
        ErrorSpec(
            "SDPX-VAL-012",
            "the tolerance max_failed is not a count or a percentage",
            "write a count of records as a whole number (max_failed=10 or '10') or a share of "
            "the records checked as a percentage (max_failed='1%' or '0.5%', at most 6 digits "
            "after the point); docs/thresholds.md",
        ),
        ErrorSpec(
            "SDPX-VAL-013",
            "the tolerance max_failed is a percentage above 100%",
            "give a percentage from 0% to 100% (100% is never exceeded); for a count of "
            "records write it without % (max_failed=150)",
        ),
        ErrorSpec(
            "SDPX-VAL-014",
            "a key rule (unique or references) has no key column",
            "name one or more columns: unique('order_id'), unique('a', 'b'), "
            "references('customers', 'customer_id'); in a rule file unique: [order_id] or "
            "references: {dataset: customers, columns: [customer_id]}",
        ),
        ErrorSpec(
            "SDPX-VAL-015",
            "a key rule's column or referenced dataset is not a non-empty string",
            "write each column and the referenced dataset as a name in quotes, e.g. "
            "unique('order_id') or references('customers', 'customer_id', to=['id'])",
        ),
        ErrorSpec(
            "SDPX-VAL-016",
            "a references rule's 'to' columns are not as many as its key columns",
            "give one referenced column per key column, in the same order: "
            "references('customers', 'cust_id', 'region', to=['id', 'region']), or leave "
            "'to' out when the referenced columns have the key's names",
        ),
        ErrorSpec(
            "SDPX-VAL-017",
            "a rule of a rule file has more than one of constraint, unique and references",
            "give each rule one of constraint, unique and references: write two rules to "
            "check two things",
        ),
        ErrorSpec(
            "SDPX-VAL-018",
            "a row-count rule has no bound, or a bound that is not a whole number from 0",
            "give min, max or both as whole numbers from 0: "
            "row_count(min=1), row_count(min=1, max=10_000_000); in a rule file "
            "row_count: {min: 1, max: 10000000} (docs/row-count-rules.md)",
        ),
        ErrorSpec(
            "SDPX-VAL-019",
            "an aggregate rule's expression calls no aggregate function",
            "write a boolean expression over aggregates of the records, e.g. "
            "aggregate('sum(amount) > 0') or aggregate(\"count_if(status = 'paid') >= 1\"); "
            "a check of each record on its own is a constraint (docs/aggregate-rules.md)",
        ),
        ErrorSpec(
            "SDPX-VAL-020",
            "a row-count rule's min is above its max: no count is within them",
            "give a min at most the max (both are included: row_count(min=5, max=5) is "
            "exactly 5 records), or leave one of them out",
        ),
        ErrorSpec(
            "SDPX-VAL-071",
            "two expectations of one dataset share a name",
            "give each expectation of a dataset its own name (the same name may be reused on "
            "another dataset)",
        ),
        # -- placement of the Python decorators --
        ErrorSpec(
            "SDPX-DEF-101",
            "expect_all, expect_all_or_drop and expect_all_or_fail take exactly one dict",
            "pass one dict {name: constraint}, e.g. expect_all_or_drop({'valid_id': 'id IS NOT "
            "NULL'}); for a single rule use expect_or_drop(name, constraint)",
        ),
        ErrorSpec(
            "SDPX-DEF-102",
            "an expectation decorator is not applied to a query function",
            "place the expectation decorators below the dataset decorator (@dp.table, "
            "@dp.materialized_view or @dp.temporary_view), directly above the function",
        ),
        ErrorSpec(
            "SDPX-DEF-103",
            "expectations on an append_flow",
            "put the expectations on the target: dp.create_streaming_table(name, "
            "expect_all={...}, expect_all_or_drop={...}, expect_all_or_fail={...}); they then "
            "apply to every flow that writes into it",
        ),
        ErrorSpec(
            "SDPX-DEF-104",
            "expectations on a sink",
            "sinks do not support expectations: put them on the dataset the sink's flow reads",
        ),
        ErrorSpec(
            "SDPX-DEF-105",
            "a streaming table receives expectations after a flow already writes into it",
            "call dp.create_streaming_table(..., expect_all...=...) before the append_flow "
            "definitions that write into the table (earlier in the file, or in a file that "
            "is loaded first)",
        ),
        ErrorSpec(
            "SDPX-DEF-106",
            "quarantine on a temporary view",
            "put @dp.quarantine() on the materialized view or streaming table that reads the "
            "view",
        ),
        ErrorSpec(
            "SDPX-DEF-107",
            "the dataset decorator was given something that is not a query function",
            "decorate a function that takes no arguments and returns a DataFrame",
        ),
        ErrorSpec(
            "SDPX-DEF-108",
            "expectations on the target of an Auto CDC flow",
            "put the expectations on the flow's source, e.g. a @dp.temporary_view with "
            "@dp.expect_or_drop that the Auto CDC flow reads",
        ),
        ErrorSpec(
            "SDPX-DEF-109",
            "the installed Spark does not have this pipelines feature yet",
            "install a pyspark that has it (the message names the Spark version that added "
            "it), e.g. pip install 'pyspark[pipelines]>=4.3,<5'",
        ),
        ErrorSpec(
            "SDPX-DEF-110",
            "a query applies a DataFrame method that makes open-source SDP read another "
            "dataset of the pipeline from the previous update",
            "write the same without the method (the message names the rewrite; "
            "docs/early-binding.md lists each method), or apply it where the data enters "
            "the pipeline, before the dataset is written",
        ),
        ErrorSpec(
            "SDPX-DEF-111",
            "Spark cannot analyse an expectation's constraint (a misspelled column, an "
            "unknown function, a type mismatch), reported by sdp-expect run and dry-run",
            "correct the constraint as Spark's reason says (it names the column, function or "
            "type, and suggests a name after 'Did you mean'), then run sdp-expect dry-run again",
        ),
        ErrorSpec(
            "SDPX-DEF-112",
            "a streaming table stored in a file format (parquet, the default, orc, json, "
            "csv, ...) is written by two or more flows: Spark's file sink keeps one commit "
            "log per table, and a reader would see one flow's records",
            "store the table in a format with transactional appends (format='delta' or "
            "'iceberg'), or define one flow over a union of the sources (unionByName); if "
            "your format is safe, set sdp_expect.multiple_flows_on_file_formats = allow in "
            "the pipeline configuration",
        ),
        ErrorSpec(
            "SDPX-DEF-113",
            "a tolerance (max_failed) on a fail or drop rule of a streaming table, or on any "
            "rule of a temporary view, which sdp-expect cannot enforce",
            "put the rule with its tolerance on a materialized view (a streaming table's "
            "micro-batches commit one by one, docs/thresholds.md#the-records-checked), make "
            "it a warn rule (reported in the metrics), or remove max_failed",
        ),
        ErrorSpec(
            "SDPX-DEF-114",
            "a unique key on a streaming table, or a key rule (unique or references) on a "
            "temporary view, which sdp-expect does not support",
            "put the key rule on a materialized view that reads the streaming table or view "
            "(a stream has no whole set of records to compare a key with, "
            "docs/dataset-rules.md#streaming-tables-and-temporary-views)",
        ),
        ErrorSpec(
            "SDPX-DEF-115",
            "a row-count or aggregate rule with the action drop: it judges the dataset as a "
            "whole and puts no record at fault, so no record can be dropped",
            "make it a warn rule (reported in the metrics: expect) or a fail rule (the "
            "update fails and writes nothing: expect_or_fail), docs/row-count-rules.md",
        ),
        ErrorSpec(
            "SDPX-DEF-116",
            "a tolerance (max_failed) on a row-count or aggregate rule, which has one "
            "verdict per update and no count of failed records",
            "remove max_failed; widen the rule's bounds instead (row_count(min=..., "
            "max=...)) or write the tolerance into the aggregate's expression",
        ),
        ErrorSpec(
            "SDPX-DEF-117",
            "a row-count or aggregate rule where sdp-expect cannot judge it: a fail row-count "
            "rule or any aggregate rule on a streaming table, or either on a temporary view",
            "put the rule on a materialized view that reads the streaming table or view "
            "(its whole content is known before it is written); on a streaming table a warn "
            "row-count rule is judged on the records since the last full refresh "
            "(docs/row-count-rules.md#streaming-tables)",
        ),
        ErrorSpec(
            "SDPX-DEF-118",
            "a dataset or flow name that starts with _sdpx_, which sdp-expect reserves for "
            "the views and columns it adds to a graph",
            "rename the dataset or flow (any name that does not start with _sdpx_)",
        ),
        ErrorSpec(
            "SDPX-DEF-119",
            "an Auto CDC flow into a streaming table whose format SDP cannot apply changes "
            "to (Spark's file formats, parquet the default; Delta Lake: SPARK-57623): the "
            "run would fail when the flow starts",
            "store the target in a format whose tables offer Spark row-level operations "
            "(MERGE through the DSv2 table interface; docs/formats.md#auto-cdc says which "
            "run where), or write the changes with a flow you define (an append_flow over "
            "the change records, then a materialized view that keeps each key's latest)",
        ),
        ErrorSpec(
            "SDPX-DEF-120",
            "a dataset declared with a versioned table format (format=\"delta\", USING DELTA, "
            "or Iceberg) that is not the format the pipeline stores its tables in: SDP "
            "writes its first update and fails every later one "
            "(DELTA_CANNOT_CHANGE_PROVIDER), after emptying a materialized view",
            "say the project's format once in the spec's configuration (sdp_expect.format: "
            "delta) and run with sdp-expect run, which starts Spark with the format's jars "
            "and settings; the dataset's format= or USING can stay as written "
            "(docs/formats.md)",
        ),
        ErrorSpec(
            "SDPX-DEF-121",
            "the environment variable SDP_EXPECT_UPDATE is set to something other "
            "than the update that sdp-expect run hands to its pipeline (a JSON object with "
            "the update's id and start time)",
            "unset SDP_EXPECT_UPDATE: sdp-expect run sets it for the pipeline it "
            "starts, and a pipeline run without it gets a new update id",
        ),
        # -- pipeline configuration --
        ErrorSpec(
            "SDPX-CFG-201",
            "a pipeline configuration value of sdp-expect is not one it understands",
            "set sdp_expect.null_result to 'fail' or 'pass', sdp_expect.quarantine and "
            "sdp_expect.metrics to 'true' or 'false', sdp_expect.metrics_from to 'query' or "
            "'output', and sdp_expect.multiple_flows_on_file_formats to 'error' or 'allow'",
        ),
        ErrorSpec(
            "SDPX-CFG-202",
            "an alert setting (sdp_expect.alert.*) is not one sdp-expect understands",
            "write sdp_expect.alert.<setting>, sdp_expect.alert.<dataset>.<setting> or "
            "sdp_expect.alert.<dataset>.<rule>.<setting>, where <setting> is max_rate or "
            "max_rise (a percentage such as \"5%\", or \"off\") or min_records (a whole "
            "number), and sdp_expect.alert.webhook an http:// or https:// URL; docs/alerts.md",
        ),
        ErrorSpec(
            "SDPX-CFG-203",
            "an alert setting names a dataset or rule the pipeline does not have (a "
            "warning: the setting never matches, so it never alerts)",
            "write the dataset's name as declared, and the rule's name as in its "
            "expectation (sdp_expect.alert.<dataset>.<rule>.<setting>); docs/alerts.md",
        ),
        ErrorSpec(
            "SDPX-CFG-204",
            "sdp_expect.format names a table format sdp-expect does not know",
            "set sdp_expect.format in the spec's configuration to delta, iceberg or "
            "parquet (the default); docs/formats.md",
        ),
        ErrorSpec(
            "SDPX-CFG-205",
            "the spec names a table format (sdp_expect.format) that the Spark session "
            "running the pipeline was not started for: its tables would be stored in another "
            "format (spark.sql.sources.default)",
            "run the pipeline with sdp-expect run (it starts Spark with the format's jars and "
            "settings), or start the Spark Connect server with the command line in "
            "docs/formats.md and run spark-pipelines --remote against it",
        ),
        ErrorSpec(
            "SDPX-CFG-206",
            "a key of the spec's configuration under sdp_expect. is not a setting "
            "sdp-expect knows: the pipeline would run as if it were not there",
            "correct the key (the message names the nearest one); the settings are "
            "sdp_expect.format, sdp_expect.quarantine, sdp_expect.metrics, "
            "sdp_expect.metrics_from, sdp_expect.null_result, "
            "sdp_expect.multiple_flows_on_file_formats and sdp_expect.alert.* "
            "(docs/semantics.md, docs/formats.md, docs/alerts.md)",
        ),
        # -- the project's layout (run, dry-run and validate, before Spark starts) --
        ErrorSpec(
            "SDPX-PRJ-401",
            "a file that spark-pipelines refuses (not .py or .sql, such as a rule file) is "
            "inside the spec's libraries",
            "move the file out of the folders that the spec's libraries include (keep rule "
            "files beside transformations/, e.g. rules/orders.yml, and name them from the "
            "Python file as expect_from_file('../rules/orders.yml')), or list the pipeline's "
            "files one by one in libraries",
        ),
        ErrorSpec(
            "SDPX-PRJ-402",
            "a Databricks SQL file (CREATE OR REFRESH, LIVE, CONSTRAINT ... EXPECT, "
            "sdp_expect.* properties) is inside the spec's libraries",
            "move the Databricks SQL files out of the folders that the spec's libraries "
            "include (e.g. to databricks_sql/ beside transformations/) and read them with "
            "sdp_expect.sql.include from a Python file, or translate them for good with "
            "sdp-expect translate ... -o transformations/",
        ),
        ErrorSpec(
            "SDPX-PRJ-403",
            "a setting of the spec's configuration still holds the placeholder '<set me>' "
            "that sdp-expect migrate wrote for a spark.conf.get(key) without a default (a "
            "Lakeflow pipeline parameter the Databricks project did not say)",
            "set the key in the spec's configuration to the value the Lakeflow pipeline "
            "gave it (the pipeline's settings, configuration), or give spark.conf.get a "
            "default in the code and delete the key",
        ),
        ErrorSpec(
            "SDPX-PRJ-404",
            "the table format the spec names has no release for the installed pyspark line",
            "install a pyspark of a line the format supports, or choose another format in "
            "sdp_expect.format; docs/formats.md lists the lines",
        ),
        ErrorSpec(
            "SDPX-PRJ-405",
            "the jars of the table format the spec names could not be fetched (no cached "
            "copy, and Maven Central, or the repository in SDP_EXPECT_MAVEN_REPOSITORY, did "
            "not give them)",
            "check the network (or set SDP_EXPECT_MAVEN_REPOSITORY to a mirror of Maven "
            "Central), or put the jars named in the message into the jar cache folder named "
            "there (SDP_EXPECT_JAR_CACHE); docs/formats.md",
        ),
        ErrorSpec(
            "SDPX-PRJ-406",
            "a Python file in the spec's libraries does not parse: spark-pipelines would stop "
            "at it once Spark had started",
            "correct the Python at the line and column shown (run and dry-run print the "
            "source line with a caret under the place, as Python does)",
        ),
        ErrorSpec(
            "SDPX-PRJ-407",
            "the pipeline spec has a field spark-pipelines refuses: one it does not know, "
            "no name or storage, a configuration value that is not text, or a library "
            "that is not a file path or a folder ending in /**",
            "correct the spec at the line shown: keep to the fields name, storage, catalog, "
            "database (or schema), configuration and libraries, give name and storage, "
            "quote configuration values (key: \"true\"), and list libraries as "
            "'- glob: {include: transformations/**}'",
        ),
        ErrorSpec(
            "SDPX-PRJ-408",
            "a library of the pipeline spec matches no file: spark-pipelines would run the "
            "pipeline without it, saying only 'Found 0 files' in its log",
            "correct the include's path (relative to the spec's folder: a file, or a folder "
            "ending in /** that holds the pipeline's files), or remove the library",
        ),
        ErrorSpec(
            "SDPX-PRJ-409",
            "the project's catalog is new (no metastore_db/ in the project folder) but the "
            "spec's storage holds streaming checkpoints from another catalog (a second copy "
            "of the project, or a deleted metastore_db/): its streaming flows would resume "
            "where that catalog's runs stopped, and fail or leave records out",
            "run once with --full-refresh-all: the tables are new in this catalog, so nothing "
            "is lost, and SDP starts new checkpoints beside the old ones; or give this copy "
            "of the project a storage of its own (the spec's storage: field)",
        ),
        # -- the project's local Spark server (run, dry-run, serve) --
        ErrorSpec(
            "SDPX-SRV-501",
            "the local Spark Connect server of the project did not start",
            "read the server's last lines shown below the message (and the run's log file): "
            "check that Java 17 is installed (java -version), that the options given for the "
            "server (--master, --driver-memory, --packages, --conf ...) are valid, and that no "
            "other Spark process uses the project's metastore_db/ (stop it, or wait for it)",
        ),
        ErrorSpec(
            "SDPX-SRV-502",
            "another sdp-expect command of the same project is using its catalog, and did "
            "not finish in the time given to wait for it",
            "wait for it to finish and run again, or wait longer with --wait SECONDS; the "
            "embedded metastore in the project folder admits one Spark at a time (runs of "
            "other projects do not wait)",
        ),
        ErrorSpec(
            "SDPX-SRV-503",
            "the project's warm server (sdp-expect serve) was started with other server "
            "options or another pyspark than this run's",
            "run without server options (the warm server's apply), or give the same ones as "
            "to sdp-expect serve; to change them, stop the server (sdp-expect serve --stop) "
            "and start it again with the new options",
        ),
        ErrorSpec(
            "SDPX-SRV-504",
            "sdp-expect serve was started for a project whose server is already up",
            "use the server that is up (runs of the project find it), or stop it first with "
            "sdp-expect serve --stop",
        ),
        # -- Databricks SQL files (sdp_expect.sql.include, sdp-expect translate) --
        ErrorSpec(
            "SDPX-SQL-301",
            "a Databricks SQL file uses a Databricks-only construct that open-source SDP "
            "cannot run",
            "replace the construct named in the message (the message says with what), or "
            "define that dataset in a Python file of the pipeline",
        ),
        ErrorSpec(
            "SDPX-SQL-302",
            "a Databricks SQL file has a syntax error",
            "fix the statement at the file, line and column named in the message",
        ),
        ErrorSpec(
            "SDPX-SQL-303",
            "sql.include() found no .sql file",
            "give a folder or a glob of .sql files, relative to the Python file that calls "
            "sql.include() (e.g. sql.include('databricks_sql/'))",
        ),
        ErrorSpec(
            "SDPX-SQL-304",
            "a table property or SET of sdp-expect is not one it understands",
            "use 'sdp_expect.quarantine' = 'true' or 'false', 'sdp_expect.quarantine.name' = "
            "'<table>', 'sdp_expect.metrics' = 'true' or 'false', 'sdp_expect.rules' = "
            "'<rule file>', 'sdp_expect.rules.tag' = '<tag>' and "
            "'sdp_expect.max_failed.<expectation>' = '<count or percentage>'",
        ),
        ErrorSpec(
            "SDPX-SQL-305",
            "a Databricks SQL file cannot be read",
            "check the path and that the file is readable UTF-8 text",
        ),
        ErrorSpec(
            "SDPX-SQL-306",
            "Spark rejected a statement translated from a Databricks SQL file",
            "fix the statement at the file and line named in the message; run sdp-expect "
            "translate on the file to see the SQL that Spark was given",
        ),
        ErrorSpec(
            "SDPX-SQL-307",
            "a cell of an exported Databricks SQL notebook is in another language than SQL "
            "(%python, %scala, %r, %sh, %pip, %run, ...)",
            "move what the cell does into a Python file of the pipeline (or outside the "
            "pipeline) and delete the cell; SQL cells and markdown cells (%md) may stay",
        ),
        ErrorSpec(
            "SDPX-SQL-308",
            "a statement that open-source SDP does not run in a pipeline's SQL file",
            "keep only pipeline statements in the file (CREATE MATERIALIZED VIEW, STREAMING "
            "TABLE, [TEMPORARY] VIEW, FLOW, SET, USE): delete a query or a statement meant for "
            "a notebook, or move it out of the pipeline",
        ),
    ]
}


class SdpExpectError(ValueError):
    """A mistake in how expectations are declared, found while the pipeline is defined.

    The message has the form::

        [SDPX-VAL-071] Dataset 'orders', expectation 'valid_id': two expectations of one
        dataset share a name. Fix: give each expectation ...

    :param code: A code from :data:`ERROR_CATALOGUE`.
    :param detail: What exactly is wrong in this case; defaults to the catalogue title.
    :param dataset: The dataset concerned, when known.
    :param expectation: The expectation concerned, when known.
    :param fix: What to do instead; defaults to the catalogue's fix.
    :param location: Where the mistake is: a :class:`Location` (its fields are
        :attr:`place`). Every raise site of sdp-expect gives one.
    """

    def __init__(
        self,
        code: str,
        detail: Optional[str] = None,
        *,
        dataset: Optional[str] = None,
        expectation: Optional[str] = None,
        fix: Optional[str] = None,
        # Text is still accepted (``.place`` is then None): the class is public, and code
        # outside the package, which raises or rebuilds it (``with_context`` on an error
        # made from text), has no Location to give.
        location: Union[Location, str, None] = None,
    ) -> None:
        spec = ERROR_CATALOGUE[code]
        self.code = code
        self.detail = detail or spec.title
        self.dataset = dataset
        self.expectation = expectation
        self.fix = fix or spec.fix
        self.place: Optional[Location] = location if isinstance(location, Location) else None
        """Where the mistake is, as values, when the raise site knew them."""
        self.location: Optional[str] = str(location) if location else None
        """Where the mistake is, as shown."""
        super().__init__(self.render())

    def render(self, *, with_location: bool = True) -> str:
        """The one-line message shown to the user (``with_location=False``: without
        the place, for a reader that shows it apart)."""
        where = []
        if self.location and with_location:
            where.append(self.location)
        if self.dataset is not None:
            where.append(f"dataset {self.dataset!r}")
        if self.expectation is not None:
            where.append(f"expectation {self.expectation!r}")
        prefix = f"[{self.code}] " + (", ".join(where) + ": " if where else "")
        return f"{prefix}{self.detail}. Fix: {self.fix}."

    def with_context(
        self,
        *,
        dataset: Optional[str] = None,
        location: Union[Location, str, None] = None,
    ) -> SdpExpectError:
        """Return the same error with the dataset or location filled in where missing."""
        return SdpExpectError(
            self.code,
            self.detail,
            dataset=self.dataset if self.dataset is not None else dataset,
            expectation=self.expectation,
            fix=self.fix,
            location=(self.place or self.location) or location,
        )

    def as_dict(self) -> dict[str, Any]:
        """The error as JSON values: code, dataset, expectation, place, message."""
        found: dict[str, Any] = {"code": self.code, "dataset": self.dataset,
                                 "expectation": self.expectation,
                                 "location": self.location, "message": self.render()}
        if self.place is not None:
            found["place"] = self.place.as_dict()
        return found
