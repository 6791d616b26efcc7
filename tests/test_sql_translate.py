"""The Databricks SQL translator without Spark: statements, rewrites, errors, the CLI."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from sql_text import statements_of

from sdp_expect import cli, sql
from sdp_expect.base.errors import SdpExpectError
from sdp_expect.core.model import Action
from sdp_expect.dbsql.parse import check, parse
from sdp_expect.dbsql.statements import (
    DatasetStatement,
    DatasetType,
    FlowStatement,
    PassThrough,
    SetStatement,
    UseStatement,
)

DOCS = Path(__file__).resolve().parent / "fixtures" / "sql" / "lakeflow_docs"


def one(text: str) -> DatasetStatement:
    statements = parse(textwrap.dedent(text), "f.sql")
    assert len(statements) == 1
    statement = statements[0]
    assert isinstance(statement, DatasetStatement)
    return statement


def translated(text: str, **conf: str) -> str:
    return sql.translate(textwrap.dedent(text), "f.sql",
                         conf={k.replace("__", "."): v for k, v in conf.items()})


def raises(code: str, text: str, **kwargs: object) -> SdpExpectError:
    with pytest.raises(SdpExpectError) as caught:
        sql.translate(textwrap.dedent(text), "f.sql", **kwargs)  # type: ignore[arg-type]
    assert caught.value.code == code, str(caught.value)
    return caught.value


# --------------------------------------------------------------------------- the docs' examples


def test_docs_several_constraints_on_a_streaming_table() -> None:
    text = (DOCS / "several_constraints.sql").read_text()
    statement = parse(text, "docs.sql")[0]
    assert isinstance(statement, DatasetStatement)
    assert statement.type is DatasetType.STREAMING_TABLE
    assert [(e.name, e.constraint, e.action) for e in statement.rules.expectations] == [
        ("valid_id", "order_id IS NOT NULL", Action.DROP),
        ("valid_amount", "amount >= 0", Action.FAIL),
        ("recent", "order_date >= '2020-01-01'", Action.WARN),
    ]
    assert statement.query is not None
    assert statement.query.text == "SELECT * FROM STREAM(orders_bronze)"
    translated = sql.translate(text, "docs.sql", spark_version="4.2")
    heads = [s.split(" AS ")[0] for s in statements_of(translated)]
    assert heads == [
        "SET spark.sql.pipelines.maxFlowRetryAttempts = 0",
        "CREATE STREAMING TABLE orders_silver",
        "CREATE STREAMING TABLE orders_silver_dq_batches COMMENT 'Batch log of "
        "orders_silver: records, dropped records and violations per rule, with the time of "
        "their micro-batch (sdp-expect metrics log)'",
        "SET spark.sql.shuffle.partitions = 1",
        "CREATE TEMPORARY VIEW _sdpx_batch_input_orders_silver",
        "CREATE FLOW orders_silver_to_dq_batches",
        "SET spark.sql.pipelines.maxFlowRetryAttempts = 2",
        "SET spark.sql.shuffle.partitions = 200",
        "CREATE MATERIALIZED VIEW orders_silver_dq_metrics COMMENT 'Data-quality metrics of "
        "orders_silver, cumulative since its last full refresh'",
    ]


def test_docs_examples_with_quarantine_get_the_python_api_s_companions() -> None:
    text = (DOCS / "warn_drop_fail.sql").read_text()
    out = statements_of(sql.translate(text, "docs.sql", conf={"sdp_expect.quarantine": "true"},
                                      spark_version="4.2"))
    heads = [s.split(" AS ")[0] for s in out if s.startswith("CREATE")]
    assert heads == [
        "CREATE STREAMING TABLE orders_clean",
        "CREATE STREAMING TABLE orders_clean_quarantine COMMENT 'Records that sdp-expect "
        "dropped from orders_clean'",
        "CREATE STREAMING TABLE orders_clean_dq_batches COMMENT 'Batch log of orders_clean: "
        "records, dropped records and violations per rule, with the time of their micro-batch "
        "(sdp-expect metrics log)'",
        "CREATE FLOW orders_clean_to_quarantine",
        "CREATE TEMPORARY VIEW _sdpx_batch_input_orders_clean",
        "CREATE FLOW orders_clean_to_dq_batches",
        "CREATE MATERIALIZED VIEW orders_clean_dq_metrics COMMENT 'Data-quality metrics of "
        "orders_clean, cumulative since its last full refresh'",
        "CREATE STREAMING TABLE orders_critical",
        "CREATE STREAMING TABLE orders_critical_dq_batches COMMENT 'Batch log of "
        "orders_critical: records, dropped records and violations per rule, with the time of "
        "their micro-batch (sdp-expect metrics log)'",
        "CREATE TEMPORARY VIEW _sdpx_batch_input_orders_critical",
        "CREATE FLOW orders_critical_to_dq_batches",
        "CREATE MATERIALIZED VIEW orders_critical_dq_metrics COMMENT 'Data-quality metrics of "
        "orders_critical, cumulative since its last full refresh'",
    ]
    # orders_critical has a fail rule (retries off around it), orders_clean none.
    sets = [s for s in out if s.startswith("SET")]
    # Each batch log's flow has one shuffle partition, set back after it.
    assert sets == ["SET spark.sql.shuffle.partitions = 1",
                    "SET spark.sql.shuffle.partitions = 200",
                    "SET spark.sql.pipelines.maxFlowRetryAttempts = 0",
                    "SET spark.sql.shuffle.partitions = 1",
                    "SET spark.sql.pipelines.maxFlowRetryAttempts = 2",
                    "SET spark.sql.shuffle.partitions = 200"]


def test_docs_three_part_source_name_is_kept() -> None:
    out = sql.translate((DOCS / "customers.sql").read_text(), "docs.sql")
    assert "SELECT * FROM STREAM(datasets.samples.raw_customers)" in out
    assert "coalesce((age BETWEEN 0 AND 120), false)" in out


def test_docs_read_files_example_is_a_coded_error_naming_file_line_and_construct() -> None:
    text = (DOCS / "read_files.sql").read_text()
    with pytest.raises(SdpExpectError) as caught:
        sql.translate(text, "databricks_sql/orders_raw.sql")
    error = caught.value
    assert error.code == "SDPX-SQL-301"
    assert error.location == "databricks_sql/orders_raw.sql:4:27"
    assert "read_files()" in str(error) and "spark.readStream" in error.fix


def test_materialized_view_with_group_by() -> None:
    out = translated("""\
        CREATE OR REFRESH MATERIALIZED VIEW revenue (
          CONSTRAINT revenue_not_negative EXPECT (revenue >= 0) ON VIOLATION FAIL UPDATE
        ) AS SELECT customer, sum(amount) AS revenue FROM LIVE.orders GROUP BY customer;
        """)
    heads = [s.split(" AS ")[0] for s in statements_of(out)]
    assert heads == ["SET spark.sql.pipelines.maxFlowRetryAttempts = 0",
                     "CREATE MATERIALIZED VIEW revenue",
                     "CREATE MATERIALIZED VIEW revenue_dq_metrics COMMENT 'Data-quality metrics "
                     "of revenue for the latest update'",
                     "SET spark.sql.pipelines.maxFlowRetryAttempts = 2"]
    assert "(\nSELECT customer, sum(amount) AS revenue FROM orders GROUP BY customer\n) " \
        "AS _sdpx_source" in out


# --------------------------------------------------------------------------- statements


@pytest.mark.parametrize(("written", "kind", "private"), [
    ("CREATE OR REFRESH STREAMING TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE STREAMING TABLE", DatasetType.STREAMING_TABLE, False),
    ("create or refresh private streaming table", DatasetType.STREAMING_TABLE, True),
    ("CREATE OR REFRESH MATERIALIZED VIEW", DatasetType.MATERIALIZED_VIEW, False),
    ("CREATE PRIVATE MATERIALIZED VIEW", DatasetType.MATERIALIZED_VIEW, True),
    ("CREATE OR REFRESH LIVE TABLE", DatasetType.MATERIALIZED_VIEW, False),
    ("CREATE LIVE TABLE", DatasetType.MATERIALIZED_VIEW, False),
    ("CREATE TEMPORARY LIVE TABLE", DatasetType.MATERIALIZED_VIEW, True),
    ("CREATE OR REFRESH STREAMING LIVE TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE INCREMENTAL LIVE TABLE", DatasetType.STREAMING_TABLE, False),
    ("CREATE TEMPORARY LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE LIVE VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE TEMPORARY VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE OR REPLACE TEMPORARY VIEW", DatasetType.TEMPORARY_VIEW, False),
    ("CREATE VIEW", DatasetType.VIEW, False),
])
def test_dataset_statements_and_their_open_source_keywords(written: str, kind: DatasetType,
                                                           private: bool) -> None:
    statement = one(f"{written} t AS SELECT 1 AS id")
    assert statement.type is kind
    assert statement.private is private
    out = statements_of(translated(f"{written} t AS SELECT 1 AS id"))
    assert out == [f"CREATE {kind.value} t AS SELECT 1 AS id"]


def test_private_is_explained_in_the_translation() -> None:
    out = translated("CREATE OR REFRESH PRIVATE MATERIALIZED VIEW t AS SELECT 1 AS id;")
    assert "open-source SDP has no private datasets" in out
    assert "PRIVATE" not in " ".join(statements_of(out))


def test_live_qualifiers_go_and_everything_else_stays() -> None:
    out = translated("""\
        CREATE LIVE TABLE t AS
        SELECT live.a, x.live.b, `live` FROM LIVE.src JOIN `LIVE`.other USING (id)
        WHERE 'LIVE.x' <> "live.y" -- LIVE.z in a comment
          AND /* LIVE.w */ TRUE;
        CREATE STREAMING TABLE s AS SELECT * FROM STREAM(LIVE.src) UNION ALL
        SELECT * FROM STREAM live.more;
        """)
    assert statements_of(out) == [
        "CREATE MATERIALIZED VIEW t AS SELECT a, x.live.b, `live` FROM src JOIN other "
        "USING (id) WHERE 'LIVE.x' <> \"live.y\" AND TRUE",
        "CREATE STREAMING TABLE s AS SELECT * FROM STREAM(src) UNION ALL "
        "SELECT * FROM STREAM more",
    ]
    assert "-- LIVE.z in a comment\n  AND /* LIVE.w */ TRUE" in out


def test_flows_set_use_and_other_statements() -> None:
    statements = parse(textwrap.dedent("""\
        SET spark.sql.shuffle.partitions = 4;
        USE SCHEMA sales;
        CREATE FLOW f COMMENT 'backfill' AS INSERT INTO LIVE.t BY NAME SELECT * FROM STREAM(s);
        """), "f.sql")
    assert [type(s) for s in statements] == [SetStatement, UseStatement, FlowStatement]
    set_statement, _, flow = statements
    assert isinstance(set_statement, SetStatement) and isinstance(flow, FlowStatement)
    assert (set_statement.key, set_statement.value) == ("spark.sql.shuffle.partitions", "4")
    assert (flow.name.text, flow.target.text, flow.comment) == ("f", "t", "'backfill'")
    assert flow.query.text == "SELECT * FROM STREAM(s)"


@pytest.mark.parametrize("text", [
    "CREATE TEMPORARY FUNCTION plus_one(x INT) RETURNS INT RETURN x + 1",
    "SELECT * FROM orders",
    "CREATE TABLE t (x INT)",
])
def test_a_statement_that_is_not_a_pipeline_statement_is_an_error_at_its_line(text: str) -> None:
    """Open-source SDP refuses these in a pipeline's SQL file (checked on a real graph):
    parse raises SDPX-SQL-308 at the statement's line; check lists it and reads on."""
    source = f"CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;\n{text};\nSET k = v;\n"
    with pytest.raises(SdpExpectError) as raised:
        parse(source, "f.sql")
    assert raised.value.code == "SDPX-SQL-308"
    assert raised.value.location == "f.sql:2:1"
    findings = check(source, "f.sql")
    assert [e.code for e in findings.errors] == ["SDPX-SQL-308"]
    assert [type(s) for s in findings.statements] == [DatasetStatement, SetStatement]


def test_check_says_what_each_statement_declares_even_when_it_has_errors() -> None:
    """``statements`` leaves out the statements with errors; ``declared`` does not, so that
    migrate knows a pipeline file whose datasets it must rewrite or report."""
    findings = check("SET a = 1;\n"
                     "CREATE MATERIALIZED VIEW m LOCATION '/x' AS SELECT 1;\n"
                     "CREATE FLOW f AS INSERT INTO t BY NAME SELECT 1;\n"
                     "SELECT 1;\n"
                     "CREATE STREAMING TABLE s AS SELECT * FROM read_files('/d');\n"
                     "USE s", "f.sql", auto_cdc=True)
    assert [e.code for e in findings.errors] == ["SDPX-SQL-301", "SDPX-SQL-308", "SDPX-SQL-301"]
    assert [s.kind for s in findings.summary] == ["set", "flow", "use"]
    assert findings.declared == ["set", "materialized view", "flow", "other", "streaming table",
                                 "use"]


def test_clauses_pass_on_and_sdp_expect_properties_are_consumed() -> None:
    statement = one("""\
        CREATE OR REFRESH MATERIALIZED VIEW sales.orders (
          order_id INT NOT NULL COMMENT 'the id',
          items ARRAY<STRUCT<sku: STRING, qty: INT>>,
          CONSTRAINT valid_id EXPECT (order_id > 0) ON VIOLATION DROP ROW,
          amount DECIMAL(10, 2)
        )
        COMMENT 'Orders'
        PARTITIONED BY (order_date)
        TBLPROPERTIES ('sdp_expect.quarantine' = 'true', 'delta.x' = 'y',
                       sdp_expect.metrics = false, pipelines.reset.allowed = true)
        CLUSTER BY (order_id)
        AS SELECT * FROM raw
        """)
    assert statement.columns == ["order_id INT NOT NULL COMMENT 'the id'",
                                 "items ARRAY<STRUCT<sku: STRING, qty: INT>>",
                                 "amount DECIMAL(10, 2)"]
    assert statement.table_properties == ["'delta.x' = 'y'", "pipelines.reset.allowed = true"]
    assert statement.rules.quarantine is not None and statement.rules.metrics is False
    assert statement.name.parts == ("sales", "orders")
    out = statements_of(sql.translate(textwrap.dedent("""\
        CREATE MATERIALIZED VIEW sales.`my orders` (
          CONSTRAINT valid_id EXPECT (order_id > 0) ON VIOLATION DROP ROW
        ) TBLPROPERTIES ('sdp_expect.quarantine' = 'true', 'a' = 'b')
        PARTITIONED BY (region) COMMENT 'x' USING parquet
        AS SELECT * FROM raw;"""), "f.sql"))
    assert out[0].startswith("CREATE MATERIALIZED VIEW sales.`my orders` USING parquet "
                             "PARTITIONED BY (region) COMMENT 'x' TBLPROPERTIES ('a' = 'b') "
                             "AS SELECT")
    assert out[1].startswith("CREATE MATERIALIZED VIEW sales.`my orders_quarantine` COMMENT")
    assert out[2].startswith("CREATE MATERIALIZED VIEW sales.`my orders_dq_metrics` COMMENT")
    assert "'dataset', 'sales.my orders'" in out[2]


def test_constraints_hold_strings_comments_and_parentheses_as_data() -> None:
    statement = one("""\
        create or refresh materialized view t (
          constraint `it's ``odd``` /* c */ expect (
            (note <> 'EXPECT (x) ON VIOLATION DROP ROW;') AND (coalesce(a, (1 + 2)) > 0)
            -- a comment with ) and ;
            AND note NOT LIKE "%--%"
          ) on violation fail update,
          CONSTRAINT Mixed_Case expect(a>0)
        ) as select * from src
        """)
    first, second = statement.rules.expectations
    assert first.name == "it's `odd`" and first.action is Action.FAIL
    assert first.constraint == (
        "(note <> 'EXPECT (x) ON VIOLATION DROP ROW;') AND (coalesce(a, (1 + 2)) > 0)\n"
        "    -- a comment with ) and ;\n"
        "    AND note NOT LIKE \"%--%\"")
    assert (second.name, second.constraint, second.action) == ("Mixed_Case", "a>0", Action.WARN)
    out = sql.translate(textwrap.dedent("""\
        CREATE MATERIALIZED VIEW t (CONSTRAINT c EXPECT (a > 0 -- a comment
        AND b > 0) ON VIOLATION DROP ROW) AS SELECT * FROM src;"""), "f.sql")
    assert "coalesce((a > 0 -- a comment\nAND b > 0\n), false)" in out


def test_comments_anywhere_and_any_keyword_case() -> None:
    statement = one("""\
        /* a */ CrEaTe /* b */ Or -- c
        ReFrEsH /* d */ StReAmInG tAbLe -- e
        t /* f */ ( /* g */ CoNsTrAiNt /* h */ c /* i */ ExPeCt /* j */ ( a > 0 ) /* k */
        On /* l */ ViOlAtIoN DrOp -- m
        RoW /* n */ ) /* o */ As /* p */ SELECT * FROM STREAM(src) -- q
        """)
    assert statement.type is DatasetType.STREAMING_TABLE
    assert [(e.name, e.constraint, e.action) for e in statement.rules.expectations] == [
        ("c", "a > 0", Action.DROP)]
    assert statement.query is not None and statement.query.text == "SELECT * FROM STREAM(src)"


def test_a_semicolon_in_a_string_does_not_end_the_statement() -> None:
    statements = parse("CREATE LIVE TABLE t (CONSTRAINT c EXPECT (x <> ';')) AS SELECT ';' AS x;"
                       "CREATE LIVE TABLE u AS SELECT 1", "f.sql")
    assert len(statements) == 2


def test_streaming_table_without_query_records_its_rules_for_flows_in_any_file(
        tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text(textwrap.dedent("""\
        CREATE OR REFRESH STREAMING TABLE events (
          CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW
        ) TBLPROPERTIES ('sdp_expect.quarantine' = 'true');
        """))
    (tmp_path / "b.sql").write_text(
        "CREATE FLOW web AS INSERT INTO events BY NAME SELECT * FROM STREAM(raw_web);\n"
        "CREATE FLOW shop AS INSERT INTO events BY NAME SELECT * FROM STREAM(raw_shop);\n")
    files = [str(tmp_path / "a.sql"), str(tmp_path / "b.sql")]
    # Two flows into a parquet table (the default) are SDPX-DEF-112 at the second one...
    with pytest.raises(SdpExpectError) as caught:
        sql.translate_files(files)
    assert caught.value.code == "SDPX-DEF-112" and caught.value.dataset == "events"
    assert caught.value.place is not None and caught.value.place.line == 2
    assert "UNION ALL" in (caught.value.fix or "")
    # ... unless the table's format is known safe (USING delta) or the user says it is.
    first, second = sql.translate_files(
        files, conf={"sdp_expect.multiple_flows_on_file_formats": "allow"}, spark_version="4.2")
    assert [s.split(" AS ")[0] for s in statements_of(first.text)] == [
        "CREATE STREAMING TABLE events",
        "CREATE STREAMING TABLE events_quarantine COMMENT 'Records that sdp-expect dropped from "
        "events'",
        "CREATE STREAMING TABLE events_dq_batches COMMENT 'Batch log of events: "
        "records, dropped records and violations per rule, with the time of their micro-batch "
        "(sdp-expect metrics log)'",
        "CREATE MATERIALIZED VIEW events_dq_metrics COMMENT 'Data-quality metrics of events, "
        "cumulative since its last full refresh'",
    ]
    flows = [s.split(" BY NAME")[0] for s in statements_of(second.text)
             if not s.startswith("CREATE TEMPORARY VIEW")]
    assert flows == [
        "CREATE FLOW web AS INSERT INTO events",
        "CREATE FLOW web_to_quarantine AS INSERT INTO events_quarantine",
        "SET spark.sql.shuffle.partitions = 1",
        "CREATE FLOW web_to_dq_batches AS INSERT INTO events_dq_batches",
        "SET spark.sql.shuffle.partitions = 200",
        "CREATE FLOW shop AS INSERT INTO events",
        "CREATE FLOW shop_to_quarantine AS INSERT INTO events_quarantine",
        "SET spark.sql.shuffle.partitions = 1",
        "CREATE FLOW shop_to_dq_batches AS INSERT INTO events_dq_batches",
        "SET spark.sql.shuffle.partitions = 200",
    ]


def test_temporary_view_keeps_only_the_filter() -> None:
    out = statements_of(translated("""\
        CREATE TEMPORARY LIVE VIEW v (CONSTRAINT c EXPECT (a > 0) ON VIOLATION DROP ROW)
        AS SELECT * FROM src;"""))
    assert out == ["CREATE TEMPORARY VIEW v AS SELECT * FROM ( SELECT * FROM src ) AS "
                   "_sdpx_source WHERE (a > 0)"]


# --------------------------------------------------------------------------- settings


def test_null_result_and_quarantine_settings_of_the_pipeline_apply() -> None:
    text = "CREATE LIVE TABLE t (CONSTRAINT c EXPECT (a > 0) ON VIOLATION DROP ROW) AS SELECT 1;"
    assert "coalesce((a > 0), true)" in translated(text, sdp_expect__null_result="pass")
    assert "t_quarantine" in translated(text, sdp_expect__quarantine="true")
    assert "t_quarantine" not in translated(text)
    assert "t_dq_metrics" not in translated(text, sdp_expect__metrics="false")
    with pytest.raises(SdpExpectError, match="SDPX-CFG-201"):
        translated(text, sdp_expect__quarantine="maybe")


def test_set_of_an_sdp_expect_setting_applies_to_the_rest_of_the_file() -> None:
    out = translated("""\
        CREATE LIVE TABLE a (CONSTRAINT c EXPECT (x > 0) ON VIOLATION DROP ROW) AS SELECT 1 x;
        SET sdp_expect.quarantine = true;
        CREATE LIVE TABLE b (CONSTRAINT c EXPECT (x > 0) ON VIOLATION DROP ROW) AS SELECT 1 x;
        """)
    assert "a_quarantine" not in out and "CREATE MATERIALIZED VIEW b_quarantine" in out
    assert not [s for s in statements_of(out) if s.startswith("SET")]
    raises("SDPX-SQL-304", "SET sdp_expect.quarantne = true;")


def test_retry_setting_is_restored_to_the_value_in_effect_before() -> None:
    fail = ("CREATE LIVE TABLE {} (CONSTRAINT c EXPECT (x > 0) ON VIOLATION FAIL UPDATE) "
            "AS SELECT 1 x")
    out = statements_of(translated(f"""\
        {fail.format('a')};
        SET spark.sql.pipelines.maxFlowRetryAttempts = 5;
        {fail.format('b')};
        """, spark__sql__pipelines__maxFlowRetryAttempts="3"))
    sets = [s.split("= ")[1] for s in out if s.startswith("SET")]
    assert sets == ["0", "3", "5", "0", "5"]


def test_rules_from_a_rule_file_come_after_the_constraints(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "orders.yml").write_text(textwrap.dedent("""\
        - name: has_amount
          constraint: amount IS NOT NULL
          failureAction: drop
        - name: small
          constraint: amount < 100
          tag: ranges
        """))
    text = textwrap.dedent("""\
        CREATE LIVE TABLE t (CONSTRAINT positive EXPECT (id > 0))
        TBLPROPERTIES ('sdp_expect.rules' = 'rules/orders.yml'{tag})
        AS SELECT * FROM src""")
    statement = parse(text.format(tag=""), "f.sql", base_dir=str(tmp_path))[0]
    assert isinstance(statement, DatasetStatement)
    assert [(e.name, e.action) for e in statement.rules.expectations] == [
        ("positive", Action.WARN), ("has_amount", Action.DROP), ("small", Action.WARN)]
    tagged = parse(text.format(tag=", 'sdp_expect.rules.tag' = 'ranges'"), "f.sql",
                   base_dir=str(tmp_path))[0]
    assert isinstance(tagged, DatasetStatement)
    assert [e.name for e in tagged.rules.expectations] == ["positive", "small"]
    with pytest.raises(SdpExpectError, match="SDPX-VAL-071"):
        parse(text.replace("positive", "small").format(tag=""), "f.sql", base_dir=str(tmp_path))
    with pytest.raises(SdpExpectError, match="SDPX-VAL-003"):
        parse(text.format(tag=""), "f.sql", base_dir=str(tmp_path / "elsewhere"))


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("text", "location", "words"), [
    ("CREATE LIVE TABLE t (CONSTRAINT c EXPECT (a > 0) ON VIOLATION DROP) AS SELECT 1",
     "f.sql:1:67", "expected ON VIOLATION DROP ROW"),
    ("CREATE LIVE TABLE t (CONSTRAINT c EXPECT a > 0) AS SELECT 1",
     "f.sql:1:42", "expected '(' after EXPECT"),
    ("CREATE LIVE TABLE t (CONSTRAINT c EXPECT (a > 0) AS SELECT 1",
     "f.sql:1:21", "'(' is never closed"),
    ("CREATE LIVE TABLE t (a INT,, b INT) AS SELECT 1", "f.sql:1:28", "empty entry"),
    ("CREATE MATERIALIZED VIEW t (CONSTRAINT c EXPECT (a > 0))", "f.sql:1:57", "needs AS"),
    ("\n\nCREATE LIVE TABLE t AS SELECT 'unterminated", "f.sql:3:31", "unterminated string"),
    ("CREATE LIVE TABLE t COMENT 'x' AS SELECT 1", "f.sql:1:21", "unexpected 'COMENT'"),
    ("CREATE FLOW f AS INSERT INTO t SELECT 1", "f.sql:1:32", "expected BY NAME"),
    ("CREATE OR WHATEVER LIVE TABLE t AS SELECT 1", "f.sql:1:11", "REFRESH or REPLACE"),
])
def test_syntax_errors_name_file_line_and_column(text: str, location: str, words: str) -> None:
    error = raises("SDPX-SQL-302", text)
    assert error.location == location, str(error)
    assert words in error.detail, str(error)


@pytest.mark.parametrize(("text", "construct"), [
    ("CREATE STREAMING TABLE t AS SELECT * FROM cloud_files('/x', 'json')", "cloud_files()"),
    ("CREATE STREAMING TABLE t AS SELECT * FROM STREAM read_kafka(bootstrapServers => 'h')",
     "read_kafka()"),
    ("APPLY CHANGES INTO LIVE.t FROM STREAM(s) KEYS (id) SEQUENCE BY ts", "APPLY CHANGES INTO"),
    ("CREATE LIVE TABLE t LOCATION '/x' AS SELECT 1", "LOCATION"),
    ("CREATE LIVE TABLE t CLUSTER BY AUTO AS SELECT 1", "CLUSTER BY AUTO"),
    ("CREATE LIVE TABLE t WITH ROW FILTER f ON (a) AS SELECT 1", "ROW FILTER"),
    ("CREATE LIVE TABLE t (a STRING MASK m) AS SELECT 1", "MASK"),
    ("CREATE LIVE TABLE t SCHEDULE REFRESH EVERY 1 HOUR AS SELECT 1", "SCHEDULE"),
    ("CREATE LIVE TABLE t (CONSTRAINT pk PRIMARY KEY (id)) AS SELECT 1", "PRIMARY"),
    ("CREATE FLOW f AS INSERT INTO ONCE t BY NAME SELECT 1", "ONCE"),
])
def test_databricks_only_constructs_are_named_with_what_to_do(text: str, construct: str) -> None:
    error = raises("SDPX-SQL-301", text)
    assert construct in error.detail and error.location and error.location.startswith("f.sql:1:")
    assert error.fix and "Fix" in str(error)


def test_auto_cdc_depends_on_the_spark_version() -> None:
    flow = "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(s) KEYS (id) SEQUENCE BY ts"
    with pytest.raises(SdpExpectError, match="SDPX-SQL-301") as caught:
        parse(flow, "f.sql", auto_cdc=False)
    assert "create_auto_cdc_flow" in caught.value.fix
    passed = parse(flow, "f.sql", auto_cdc=True)
    assert isinstance(passed[0], PassThrough) and passed[0].flow_target == "t"
    table = "CREATE OR REFRESH STREAMING TABLE t (CONSTRAINT c EXPECT (id > 0)) " \
        "FLOW AUTO CDC FROM STREAM(s) KEYS (id) SEQUENCE BY ts"
    with pytest.raises(SdpExpectError, match="SDPX-DEF-108"):
        parse(table, "f.sql", auto_cdc=True)


def test_definition_mistakes_of_the_python_api_have_the_same_codes(tmp_path: Path) -> None:
    (tmp_path / "flows.sql").write_text(
        "CREATE STREAMING TABLE t;\n"
        "CREATE FLOW f AS INSERT INTO t BY NAME SELECT * FROM STREAM(s);\n"
        "CREATE STREAMING TABLE t (CONSTRAINT c EXPECT (a > 0));\n")
    with pytest.raises(SdpExpectError) as caught:
        sql.translate_files([str(tmp_path / "flows.sql")])
    assert caught.value.code == "SDPX-DEF-105"
    assert caught.value.location == f"{tmp_path / 'flows.sql'}:3"
    error = raises("SDPX-DEF-106", """\
        CREATE TEMPORARY VIEW v (CONSTRAINT c EXPECT (a > 0) ON VIOLATION DROP ROW)
        TBLPROPERTIES ('sdp_expect.quarantine' = 'true') AS SELECT 1 AS a""")
    assert "TBLPROPERTIES" in error.fix
    raises("SDPX-VAL-010", "CREATE LIVE TABLE t (CONSTRAINT c EXPECT (sum(a) > 0)) AS SELECT 1")
    raises("SDPX-VAL-001", "CREATE LIVE TABLE t (CONSTRAINT c EXPECT ()) AS SELECT 1")
    raises("SDPX-SQL-304", "CREATE LIVE TABLE t TBLPROPERTIES ('sdp_expect.quarantin' = 'true') "
           "AS SELECT 1")
    raises("SDPX-SQL-304", "CREATE LIVE TABLE t TBLPROPERTIES ('sdp_expect.metrics' = 'often') "
           "AS SELECT 1")


# --------------------------------------------------------------------------- the command


def test_translate_command_prints_writes_and_reports(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "orders.sql"
    source.write_text((DOCS / "several_constraints.sql").read_text())
    assert cli.main(["translate", str(source), "--conf", "sdp_expect.quarantine=true"]) == 0
    printed = capsys.readouterr().out
    assert printed == sql.translate_files([str(source)],
                                          conf={"sdp_expect.quarantine": "true"})[0].text
    assert "CREATE FLOW orders_silver_to_quarantine" in printed

    out = tmp_path / "oss"
    assert cli.main(["translate", str(source), str(DOCS / "customers.sql"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["customers.sql", "orders.sql"]
    single = tmp_path / "single.sql"
    assert cli.main(["translate", str(source), "-o", str(single)]) == 0
    assert single.read_text() == (out / "orders.sql").read_text()

    assert cli.main(["translate", str(DOCS / "read_files.sql")]) == 1
    error = capsys.readouterr().err
    assert re.search(r"\[SDPX-SQL-301\] .*read_files\.sql:4:27.*Fix: ", error), error
    assert cli.main(["translate", str(tmp_path / "missing.sql")]) == 1
    assert "[SDPX-SQL-305]" in capsys.readouterr().err
    assert cli.main(["translate", str(source), "--conf", "spark.other=1"]) == 2
    assert cli.main(["translate"]) == 2


def test_include_finds_a_folder_a_glob_or_a_file_relative_to_the_caller(tmp_path: Path) -> None:
    from sdp_expect.base.errors import Location
    from sdp_expect.sql import _matching_files

    caller = Location("p.py", 3)  # where sql.include was called

    folder = tmp_path / "databricks_sql"
    (folder / "sub").mkdir(parents=True)
    for name in ("b.sql", "a.SQL", "sub/c.sql", "rules.yml", "notes.txt"):
        (folder / name).write_text("SELECT 1")
    base = str(tmp_path / "transformations")
    expected = [str(folder / n) for n in ("a.SQL", "b.sql", "sub/c.sql")]
    assert _matching_files("../databricks_sql", base, caller) == expected
    assert _matching_files("../databricks_sql/**", base, caller) == expected
    assert _matching_files("../databricks_sql/*.sql", base, caller) == [str(folder / "b.sql")]
    assert _matching_files(str(folder / "b.sql"), "/elsewhere", caller) == [
        str(folder / "b.sql")]
    for pattern in ("../missing/", "../databricks_sql/*.yml", "../databricks_sql/rules.yml"):
        with pytest.raises(SdpExpectError) as caught:
            _matching_files(pattern, base, caller)
        assert caught.value.code == "SDPX-SQL-303" and caught.value.location == "p.py:3"


def test_a_batch_log_s_shuffle_setting_is_set_back_to_the_one_in_effect() -> None:
    """The batch log's flow runs with one shuffle partition; the statements after it get
    the pipeline's value back: the file's own ``SET``, else the pipeline's setting."""
    table = """CREATE OR REFRESH STREAMING TABLE t (CONSTRAINT c EXPECT (a > 0))
        AS SELECT * FROM STREAM(src);"""
    sets = [s for s in statements_of(sql.translate(table, "t.sql", spark_version="4.2"))
            if s.startswith("SET")]
    assert sets == ["SET spark.sql.shuffle.partitions = 1",
                    "SET spark.sql.shuffle.partitions = 200"]  # Spark's default
    given = sql.translate(table, "t.sql", conf={"spark.sql.shuffle.partitions": "16"},
                          spark_version="4.2")
    assert [s for s in statements_of(given) if s.startswith("SET")][-1] == \
        "SET spark.sql.shuffle.partitions = 16"
    in_file = sql.translate("SET spark.sql.shuffle.partitions = '8';\n" + table, "t.sql",
                            spark_version="4.2")
    assert [s for s in statements_of(in_file) if s.startswith("SET")] == [
        "SET spark.sql.shuffle.partitions = '8'",
        "SET spark.sql.shuffle.partitions = 1",
        "SET spark.sql.shuffle.partitions = 8"]
    # The view the flow reads is declared under the same setting (SDP merges a view's
    # settings into its readers' and refuses two values of one key).
    statements = statements_of(sql.translate(table, "t.sql", spark_version="4.2"))
    view = next(i for i, s in enumerate(statements) if s.startswith("CREATE TEMPORARY VIEW"))
    flow = next(i for i, s in enumerate(statements) if s.startswith("CREATE FLOW t_to_dq"))
    assert statements[view - 1] == "SET spark.sql.shuffle.partitions = 1" and flow == view + 1


def test_for_spark_4_1_a_batch_log_has_a_row_per_record_and_no_setting() -> None:
    """Spark 4.1's Hive session cannot resolve ``WATERMARK`` (SPARK-56453): the batch log's
    flow then selects a row per record from the same view, with no shuffle ``SET``; the
    Spark the SQL is for decides, whatever pyspark translates it."""
    table = """CREATE OR REFRESH STREAMING TABLE t (CONSTRAINT c EXPECT (a > 0))
        AS SELECT * FROM STREAM(src);"""
    for version in ("4.1", "4.1.4"):
        statements = statements_of(sql.translate(table, "t.sql", spark_version=version))
        assert not [s for s in statements if s.startswith("SET")]
        (flow,) = [s for s in statements if s.startswith("CREATE FLOW t_to_dq_batches")]
        assert "WATERMARK" not in flow and "GROUP BY" not in flow
        assert "FROM STREAM(_sdpx_batch_input_t)" in flow
    newer = statements_of(sql.translate(table, "t.sql", spark_version="4.3.0"))
    (flow,) = [s for s in newer if s.startswith("CREATE FLOW t_to_dq_batches")]
    assert "WATERMARK _batch_time DELAY OF INTERVAL 0 SECONDS" in flow


def test_translate_refuses_an_unreadable_spark_version(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    source = tmp_path / "t.sql"
    source.write_text("CREATE OR REFRESH STREAMING TABLE t AS SELECT * FROM STREAM(src);\n")
    assert cli.main(["translate", str(source), "--spark-version", "four"]) == 2
    assert "--spark-version 'four'" in capsys.readouterr().err
