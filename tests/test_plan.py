"""The one planner of the companion graph (``sdp_expect.core.planner``), without Spark.

The Python API, the Databricks SQL translator and rule files (read by either)
hand the planner the same rules and get the same plan: the same datasets and
flows, with the same names, kinds, comments, formats, Spark confs and SQL, and
the same check views. The planner's definition-time checks (SDPX-DEF-105,
-106, -108) are tested here on their own, for both front ends' wording.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from batch_log import PER_MICRO_BATCH
from cli_helpers import assert_runs_without_pyspark
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.options import PipelineOptions
from sdp_expect.core import planner
from sdp_expect.core.model import Action, DatasetKind, DatasetRules, Expectation, QuarantineSpec
from sdp_expect.core.planner import (
    NO_RETRY_CONF,
    Plan,
    PlanState,
    Role,
    Step,
    plan_append_flow,
    plan_auto_cdc_flow,
    plan_dataset,
    plan_declared_table,
)
from sdp_expect.dbsql.fixes import worded_for_sql
from sdp_expect.emit.sql import check_select, flow_select

RULES_YAML = """\
- name: recent
  constraint: "order_date >= '2020-01-01'"
  failureAction: warn
- name: valid_id
  constraint: "order_id IS NOT NULL"
  failureAction: drop
- name: valid_amount
  constraint: "amount >= 0"
  failureAction: fail
"""
"""The three rules that every front end below declares, in this order."""

CONSTRAINTS = """\
  CONSTRAINT recent EXPECT (order_date >= '2020-01-01'),
  CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW,
  CONSTRAINT valid_amount EXPECT (amount >= 0) ON VIOLATION FAIL UPDATE"""


# --------------------------------------------------------------------------- what is compared


def shape(plan: Plan) -> dict[str, Any]:
    """Everything a plan says, the SQL of every flow included; the rules' locations
    (a decorator's line, a SQL statement's line) left out."""
    def flow(spec: planner.FlowSpec) -> tuple[Any, ...]:
        source = "src" if spec.reads is None else spec.reads
        return (spec.name, spec.target, spec.step, spec.reads, spec.also_reads,
                dict(spec.spark_conf), flow_select(plan, spec, source, spec.also_reads))

    return {
        "rules": [(e.name, e.constraint, e.action) for e in plan.rules.expectations],
        "dataset": plan.rules.dataset,
        "kind": plan.kind,
        "companions": plan.companions,
        "datasets": [(d.name, d.kind, d.role, d.comment, d.format,
                      flow(d.query) if d.query is not None else None) for d in plan.datasets],
        "flows": [flow(f) for f in plan.flows],
        "checks": [(c.view, c.expectation, c.dataset, c.flow, c.derived, c.query_view,
                    check_select(plan, c, "src")) for c in plan.checks],
        "no_retry": plan.no_retry,
    }


def _recording(monkeypatch: pytest.MonkeyPatch, module: Any, plans: list[Plan]) -> None:
    """Record every plan with expectations that ``module`` asks the planner for (the
    definitions without them are planned too, as their query alone)."""
    def record(*args: Any, **kwargs: Any) -> Any:
        result = planner.plan(*args, **kwargs)
        if not _as_written(result):
            plans.append(result)
        return result

    monkeypatch.setattr(module, "plan", record)


def _as_written(plan: Plan) -> bool:
    """True for the plan of a definition without expectations: one dataset or flow, its
    query as written, nothing else."""
    specs = [*plan.flows, *(d.query for d in plan.datasets)]
    return plan.checks == () and all(s is None or s.step is Step.QUERY for s in specs) and (
        len(plan.datasets) + len(plan.flows) == 1) and plan.rules.empty and (
        plan.rules.quarantine is None)


# --------------------------------------------------------------------------- the front ends


@pytest.fixture
def python_plans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[Any], None]],
                                                                         list[Plan]]]:
    """Run Python pipeline definitions through ``sdp_expect.pipelines`` without Spark and
    return the plans it emitted: the graph's registration is replaced, nothing else."""
    from sdp_expect import pipelines
    from sdp_expect.spark.registration import GraphState

    def define(body: Callable[[Any], None], conf: dict[str, Any] | None = None) -> list[Plan]:
        plans: list[Plan] = []
        emitted: list[Plan] = []
        state = GraphState(options=PipelineOptions(**(conf or {})))
        _recording(monkeypatch, pipelines, plans)
        monkeypatch.setattr(pipelines, "graph_state", lambda: state)
        monkeypatch.setattr(pipelines, "evaluate_query", lambda func, *a, **k: object())
        monkeypatch.setattr(pipelines, "is_streaming", lambda query: False)  # of object()
        monkeypatch.setattr(pipelines, "located", lambda location: contextlib.nullcontext())
        monkeypatch.setattr(pipelines, "registering", lambda name: contextlib.nullcontext())
        monkeypatch.setattr(pipelines, "note_datasets", lambda *names: None)
        monkeypatch.setattr(pipelines, "emit", lambda plan, *a, **k: emitted.append(plan))
        body(pipelines)
        # every plan is emitted as planned
        assert [p for p in emitted if not _as_written(p)] == plans
        return plans

    yield define


def sql_plans(monkeypatch: pytest.MonkeyPatch, text: str, base_dir: Path,
              conf: dict[str, str] | None = None) -> list[Plan]:
    """Translate Databricks SQL and return the plans the translator wrote."""
    from sdp_expect import sql
    from sdp_expect.emit import sql as render

    plans: list[Plan] = []
    _recording(monkeypatch, render, plans)
    sql.translate(textwrap.dedent(text), "f.sql", conf=conf, base_dir=str(base_dir))
    return plans


@pytest.fixture
def rule_file(tmp_path: Path) -> Path:
    path = tmp_path / "orders.yml"
    path.write_text(RULES_YAML)
    return path


# --------------------------------------------------------------------------- one plan for all


def test_a_materialized_view_is_planned_alike_by_every_front_end(
        python_plans: Any, monkeypatch: pytest.MonkeyPatch, rule_file: Path) -> None:
    def decorators(dp: Any) -> None:
        @dp.materialized_view
        @dp.quarantine()
        @dp.expect("recent", "order_date >= '2020-01-01'")
        @dp.expect_or_drop("valid_id", "order_id IS NOT NULL")
        @dp.expect_or_fail("valid_amount", "amount >= 0")
        def orders() -> None: ...

    def from_file(dp: Any) -> None:
        @dp.materialized_view(name="orders")
        @dp.quarantine()
        @dp.expect_from_file(str(rule_file))
        def anything() -> None: ...

    plans = [
        *python_plans(decorators),
        *python_plans(from_file),
        *sql_plans(monkeypatch, f"""\
            CREATE OR REFRESH MATERIALIZED VIEW orders (
            {CONSTRAINTS}
            ) TBLPROPERTIES ('sdp_expect.quarantine' = 'true')
            AS SELECT * FROM src""", rule_file.parent),
        *sql_plans(monkeypatch, f"""\
            CREATE OR REFRESH MATERIALIZED VIEW orders
            TBLPROPERTIES ('sdp_expect.quarantine' = 'true', 'sdp_expect.rules' = '{rule_file}')
            AS SELECT * FROM src""", rule_file.parent),
    ]
    assert len(plans) == 4
    first = shape(plans[0])
    for other in plans[1:]:
        assert shape(other) == first
    assert [(d.name, d.role) for d in plans[0].datasets] == [
        ("orders", Role.TARGET), ("orders_quarantine", Role.QUARANTINE),
        ("orders_dq_metrics", Role.METRICS)]
    assert plans[0].flows == ()
    assert all(d.query is not None and d.query.spark_conf == NO_RETRY_CONF
               for d in plans[0].datasets)
    assert plans[0].datasets[2].query is not None
    assert plans[0].datasets[2].query.step is Step.METRICS_FROM_QUERY


def test_metrics_from_the_output_read_the_view_and_its_quarantine() -> None:
    """``sdp_expect.metrics_from = output``: a materialized view with a quarantine gets
    metrics that read it and its quarantine; without a quarantine, from the query."""
    options = PipelineOptions(metrics_from_output=True, quarantine=True)
    state = PlanState(options)
    rules = _rules("m", Action.WARN, Action.DROP, Action.FAIL)
    plan_of_m = plan_dataset(rules, DatasetKind.MATERIALIZED_VIEW, options, state=state)
    target, kept_out, metrics = (d.query for d in plan_of_m.datasets)
    assert target is not None and kept_out is not None and metrics is not None
    # The flows that check the fail rule are not retried; these metrics check nothing.
    assert target.spark_conf == NO_RETRY_CONF and kept_out.spark_conf == NO_RETRY_CONF
    assert metrics.step is Step.METRICS_FROM_COMPANIONS and dict(metrics.spark_conf) == {}
    assert (metrics.reads, metrics.also_reads) == ("m", "m_quarantine")
    text = flow_select(plan_of_m, metrics, "m", "m_quarantine")
    assert "FROM m)" in text and "FROM m_quarantine)" in text
    alone = plan_dataset(_rules("n", Action.DROP), DatasetKind.MATERIALIZED_VIEW,
                         dataclasses.replace(options, quarantine=False), state=state)
    assert [d.query.step for d in alone.datasets if d.query is not None] == [
        Step.TARGET, Step.METRICS_FROM_QUERY]


def test_a_streaming_table_and_its_flows_are_planned_alike(
        python_plans: Any, monkeypatch: pytest.MonkeyPatch, rule_file: Path) -> None:
    def python(dp: Any) -> None:
        @dp.table(format="parquet")
        @dp.quarantine()
        @dp.expect_from_file(str(rule_file))
        def events() -> None: ...

        dp.create_streaming_table("sink_t", format="parquet", quarantine=True,
                                  expect_all={"recent": "order_date >= '2020-01-01'"},
                                  expect_all_or_drop={"valid_id": "order_id IS NOT NULL"},
                                  expect_all_or_fail={"valid_amount": "amount >= 0"})

        @dp.append_flow(target="sink_t", name="backfill")
        def backfill() -> None: ...

    sql_text = f"""\
        CREATE OR REFRESH STREAMING TABLE events (
        {CONSTRAINTS}
        ) USING parquet TBLPROPERTIES ('sdp_expect.quarantine' = 'true')
        AS SELECT * FROM STREAM(src);
        CREATE OR REFRESH STREAMING TABLE sink_t
        USING parquet TBLPROPERTIES ('sdp_expect.quarantine' = 'true',
                                     'sdp_expect.rules' = '{rule_file}');
        CREATE FLOW backfill AS INSERT INTO sink_t BY NAME SELECT * FROM STREAM(src);
        """
    from_python = python_plans(python)
    from_sql = sql_plans(monkeypatch, sql_text, rule_file.parent)
    assert [shape(p) for p in from_python] == [shape(p) for p in from_sql]
    table, declared, flow = from_python
    assert [(d.name, d.kind, d.role, d.format) for d in table.datasets] == [
        ("events", DatasetKind.STREAMING_TABLE, Role.TARGET, "parquet"),
        ("events_quarantine", DatasetKind.STREAMING_TABLE, Role.QUARANTINE, "parquet"),
        ("events_dq_batches", DatasetKind.STREAMING_TABLE, Role.BATCH_LOG, "parquet"),
        ("events_dq_metrics", DatasetKind.MATERIALIZED_VIEW, Role.METRICS, None),
        ("_sdpx_batch_input_events", DatasetKind.TEMPORARY_VIEW, Role.BATCH_LOG, None)]
    metrics = table.datasets[3].query
    assert metrics is not None and metrics.reads == "events_dq_batches"
    assert metrics.step is Step.METRICS_FROM_BATCH_LOG and dict(metrics.spark_conf) == {}
    no_retry = {"spark.sql.pipelines.maxFlowRetryAttempts": "0"}  # events has a fail rule
    inputs = table.datasets[4].query
    assert inputs is not None and inputs.reads is None and inputs.step is Step.BATCH_INPUT
    assert [(f.name, f.target, f.step, f.reads, dict(f.spark_conf)) for f in table.flows] == [
        ("events_to_quarantine", "events_quarantine", Step.QUARANTINE, None, no_retry),
        ("events_to_dq_batches", "events_dq_batches", Step.BATCH_LOG,
         "_sdpx_batch_input_events", {**no_retry, "spark.sql.shuffle.partitions": "1"})
        if PER_MICRO_BATCH else  # Spark 4.1: one row per record, no aggregation
        ("events_to_dq_batches", "events_dq_batches", Step.BATCH_LOG_BY_RECORD,
         "_sdpx_batch_input_events", no_retry)]
    assert declared.datasets[0].query is None and declared.flows == () and declared.checks == ()
    assert [(f.name, f.target) for f in flow.flows] == [
        ("backfill", "sink_t"), ("backfill_to_quarantine", "sink_t_quarantine"),
        ("backfill_to_dq_batches", "sink_t_dq_batches")]
    assert [c.view for c in flow.checks] == [f"_sdpx_check_backfill_{n}" for n in range(4)]


def test_a_temporary_view_is_planned_alike(python_plans: Any, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    def python(dp: Any) -> None:
        @dp.temporary_view
        @dp.expect_or_drop("valid_id", "order_id IS NOT NULL")
        def v() -> None: ...

    from_sql = sql_plans(monkeypatch, """\
        CREATE TEMPORARY VIEW v (
          CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW
        ) AS SELECT * FROM src""", tmp_path, conf={"sdp_expect.quarantine": "true"})
    from_python = python_plans(python, {"quarantine": True})
    assert [shape(p) for p in from_python] == [shape(p) for p in from_sql]
    assert [d.name for d in from_python[0].datasets] == ["v"]


# --------------------------------------------------------------------------- the planner itself


def _rules(dataset: str = "t", *actions: Action, quarantine: bool = False,
           metrics: bool | None = None) -> DatasetRules:
    rules = DatasetRules(dataset, quarantine=QuarantineSpec() if quarantine else None,
                         metrics=metrics)
    rules.extend(Expectation(f"r{i}", f"a > {i}", action)
                 for i, action in enumerate(actions or (Action.WARN,)))
    return rules


def _front_ends(line: int) -> list[tuple[Location, Callable[[SdpExpectError], SdpExpectError]]]:
    """Where each front end met a definition, and how it words the planner's errors: the
    Python API keeps the catalogue's fix, the SQL front end words it for SQL."""
    return [(Location("p.py", line), lambda error: error),
            (Location("f.sql", line), worded_for_sql)]


def test_def_105_rules_on_a_table_after_a_flow_writes_it() -> None:
    state = PlanState(PipelineOptions())
    assert _as_written(plan_append_flow("t", "f", state=state))  # no rules: a plain flow
    assert _as_written(plan_declared_table(DatasetRules("t"), PipelineOptions(), state=state))
    for (location, worded), fix in zip(_front_ends(3),
                                       ("dp.create_streaming_table", "CREATE STREAMING TABLE"),
                                       strict=True):
        with pytest.raises(SdpExpectError) as caught:
            plan_declared_table(_rules(), PipelineOptions(), state=state, location=location)
        error = worded(caught.value)
        assert error.code == "SDPX-DEF-105"
        assert error.place == location and error.dataset == "t"
        assert fix in (error.fix or "")
    assert "t" not in state.table_rules
    # a dataset's own flow writes it too
    planner.plan_unchecked_dataset("u", DatasetKind.MATERIALIZED_VIEW, state=state)
    with pytest.raises(SdpExpectError, match="SDPX-DEF-105"):
        plan_declared_table(_rules("u"), PipelineOptions(), state=state)


def test_def_106_quarantine_on_a_temporary_view() -> None:
    state = PlanState(PipelineOptions())
    for (location, worded), fix in zip(_front_ends(7), ("@dp.quarantine()", "TBLPROPERTIES"),
                                       strict=True):
        with pytest.raises(SdpExpectError) as caught:
            plan_dataset(_rules("v", Action.DROP, quarantine=True), DatasetKind.TEMPORARY_VIEW,
                         PipelineOptions(), state=state, location=location)
        error = worded(caught.value)
        assert error.code == "SDPX-DEF-106"
        assert error.place == location and error.dataset == "v"
        assert fix in (error.fix or "")
    # The pipeline-wide setting does not give a view a quarantine: no error.
    plan = plan_dataset(_rules("v", Action.DROP), DatasetKind.TEMPORARY_VIEW,
                        PipelineOptions(quarantine=True), state=state)
    assert [d.name for d in plan.datasets] == ["v"] and plan.flows == ()


_SPARK_FILE_SOURCES = {"parquet", "orc", "json", "csv", "text", "avro", "xml", "binaryfile"}
"""Spark's file data sources (written here apart from the planner's list: the oracle)."""


@settings(max_examples=200, deadline=None)
@given(table_format=st.sampled_from([None, "parquet", "PARQUET", "json", "orc", "delta",
                                     "iceberg", "my.custom.Format"]),
       default_format=st.sampled_from(["parquet", "delta", "orc"]),
       allow=st.booleans(), flows=st.integers(min_value=0, max_value=3),
       own_query=st.booleans(), declared_first=st.booleans(), with_rules=st.booleans())
def test_def_112_a_file_format_streaming_table_takes_one_flow(
        table_format: str | None, default_format: str, allow: bool, flows: int,
        own_query: bool, declared_first: bool, with_rules: bool) -> None:
    """SDPX-DEF-112 exactly when a streaming table whose format (given, else the
    session's default) is one of Spark's file sources gets a second writer, unless
    the setting allows it; raised at the definition that adds the second flow."""
    # A versioned format other than the session's is SDPX-DEF-120 at the table itself
    # (test_table_formats.py), whatever its flows.
    assume((table_format or "").lower() not in {"delta", "iceberg"}
           or (table_format or "").lower() == default_format)
    options = PipelineOptions(multiple_flows_on_file_formats=allow, default_format=default_format)
    state = PlanState(options)
    rules = _rules("t", Action.DROP) if with_rules else DatasetRules("t")
    effective = (table_format or default_format).lower()
    writers = 0
    raised_at: list[int] = []

    def add(definition: Callable[[], Any]) -> None:
        nonlocal writers
        writers += 1
        try:
            definition()
        except SdpExpectError as error:
            assert error.code == "SDPX-DEF-112" and error.dataset == "t"
            assert effective in str(error)
            raised_at.append(writers)

    if own_query:
        add(lambda: plan_dataset(rules, DatasetKind.STREAMING_TABLE, options, state=state,
                                 format=table_format) if with_rules else
            planner.plan_unchecked_dataset("t", DatasetKind.STREAMING_TABLE, state=state,
                                           format=table_format))
    elif declared_first or with_rules:  # rules must come before the flows (DEF-105)
        plan_declared_table(rules, options, state=state, format=table_format)
    for number in range(flows):
        if raised_at:
            break
        add(functools.partial(plan_append_flow, "t", f"f{number}", state=state))
    if not own_query and not (declared_first or with_rules) and not raised_at:
        writers_before = writers
        try:
            plan_declared_table(rules, options, state=state, format=table_format)
        except SdpExpectError as error:
            assert error.code == "SDPX-DEF-112"
            raised_at.append(writers_before)
    oracle_error = writers >= 2 and effective in _SPARK_FILE_SOURCES and not allow
    assert bool(raised_at) == oracle_error
    if raised_at and (own_query or declared_first or with_rules):
        assert raised_at == [2]  # at the second writer, not later


def test_def_112_names_the_flows_and_words_the_fix_for_the_front_end() -> None:
    for (location, worded), fix in zip(_front_ends(4), ("unionByName", "UNION ALL"), strict=True):
        state = PlanState(PipelineOptions())
        plan_declared_table(DatasetRules("events"), PipelineOptions(), state=state,
                            format="json")
        plan_append_flow("events", "a", state=state)
        with pytest.raises(SdpExpectError) as caught:
            plan_append_flow("events", "b", state=state, location=location)
        error = worded(caught.value)
        assert error.code == "SDPX-DEF-112" and error.dataset == "events"
        assert error.place == location
        assert "stored as json (its format)" in str(error) and "'a', 'b'" in str(error)
        assert fix in (error.fix or "")
        assert "sdp_expect.multiple_flows_on_file_formats" in (error.fix or "")


def test_def_108_rules_on_an_auto_cdc_target() -> None:
    state = PlanState(PipelineOptions())
    plan_auto_cdc_flow("plain", state=state)
    assert "plain" in state.flow_targets
    plan_declared_table(_rules("t"), PipelineOptions(), state=state)
    for (location, worded), fix in zip(_front_ends(9),
                                       ("@dp.temporary_view", "CONSTRAINT ... EXPECT"),
                                       strict=True):
        with pytest.raises(SdpExpectError) as caught:
            plan_auto_cdc_flow("t", state=state, location=location)
        error = worded(caught.value)
        assert error.code == "SDPX-DEF-108"
        assert error.place == location and error.dataset == "t"
        assert fix in (error.fix or "")
    error = worded_for_sql(planner.auto_cdc_target_error("t", Location("f.sql", 1)))
    assert error.code == "SDPX-DEF-108" and "CONSTRAINT" in (error.fix or "")


@settings(max_examples=80)
@example(given_format=None, default="delta", name="t", flow_first=False, with_rules=False)
@example(given_format="parquet", default="delta", name="db.t", flow_first=True,
         with_rules=True)
@example(given_format=None, default="delta", name="cat.db.t", flow_first=False,
         with_rules=False)
@example(given_format="hudi", default="parquet", name="t", flow_first=True, with_rules=False)
@given(given_format=st.sampled_from([None, "parquet", "JSON", "delta", "Delta", "iceberg",
                                     "hudi"]),
       default=st.sampled_from(["parquet", "delta", "iceberg"]),
       name=st.sampled_from(["t", "db.t", "spark_catalog.db.t", "cat.db.t", "`cat`.`db`.t",
                             "`spark_catalog`.db.t"]),
       flow_first=st.booleans(), with_rules=st.booleans())
def test_def_119_an_auto_cdc_target_whose_format_sdp_refuses(
        given_format: str | None, default: str, name: str, flow_first: bool,
        with_rules: bool) -> None:
    """SDPX-DEF-119 at the second of the two definitions (the flow, the table), in either
    order, exactly when the table lives in the session catalog and its format (given, or
    the session's default) is a file format or Delta; other catalogs and formats
    sdp-expect does not know are Spark's to judge. A versioned format that is not the
    session's is SDPX-DEF-120 at the table, whatever the flow."""
    options = PipelineOptions(default_format=default)
    state = PlanState(options)
    effective = (given_format or default).lower()
    refused = (effective in {"parquet", "json", "delta"}
               and name.split(".")[0].strip("`") not in {"cat"})
    location = Location("f.py", 3)

    def table() -> None:
        if with_rules:
            plan_dataset(_rules(name), DatasetKind.STREAMING_TABLE, options, state=state,
                         format=given_format)
        else:
            plan_declared_table(DatasetRules(name), options, state=state, format=given_format)

    def flow() -> None:
        plan_auto_cdc_flow(name, state=state, location=location)

    in_session = name.split(".")[0].strip("`") != "cat"
    if given_format is not None and given_format.lower() in {"delta", "iceberg"} \
            and given_format.lower() != default and in_session:
        if flow_first:
            flow()
        with pytest.raises(SdpExpectError, match="SDPX-DEF-120"):  # before any flow runs
            table()
        return
    first, second = (flow, table) if flow_first else (table, flow)
    first()
    if with_rules and not flow_first:  # rules on the target itself: SDPX-DEF-108 first
        with pytest.raises(SdpExpectError, match="SDPX-DEF-108"):
            second()
        return
    if not refused:
        second()
        return
    with pytest.raises(SdpExpectError) as caught:
        second()
    error = caught.value
    assert error.code == "SDPX-DEF-119" and error.dataset == name
    assert error.place == location
    assert f"stored as {effective}" in str(error)
    assert ("SPARK-57623" in str(error)) == (effective == "delta")
    assert "AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE" in str(error)
    assert "docs/formats.md#auto-cdc" in (error.fix or "")


def test_retries_the_users_conf_and_the_companions_by_setting() -> None:
    state = PlanState(PipelineOptions())
    plan = plan_dataset(_rules("m", Action.FAIL), DatasetKind.MATERIALIZED_VIEW,
                        PipelineOptions(), state=state,
                        spark_conf={planner.RETRY_KEY: "5", "x": "1"})
    target = plan.datasets[0].query
    assert target is not None and dict(target.spark_conf) == {planner.RETRY_KEY: "5", "x": "1"}
    assert plan.datasets[1].query is not None
    assert dict(plan.datasets[1].query.spark_conf) == NO_RETRY_CONF  # metrics: no user conf
    warn = plan_dataset(_rules("w"), DatasetKind.MATERIALIZED_VIEW, PipelineOptions(),
                        state=state)
    assert not warn.no_retry and [d.name for d in warn.datasets] == ["w", "w_dq_metrics"]
    off = plan_dataset(_rules("o", Action.DROP, metrics=False), DatasetKind.STREAMING_TABLE,
                       PipelineOptions(quarantine=True), state=state)
    assert [d.name for d in off.datasets] == ["o", "o_quarantine"]
    assert [f.name for f in off.flows] == ["o_to_quarantine"]
    assert state.table_rules["o"].companions == off.companions
    named = plan_dataset(dataclasses.replace(_rules("n", Action.DROP),
                                             quarantine=QuarantineSpec("bad_rows")),
                         DatasetKind.MATERIALIZED_VIEW, PipelineOptions(), state=state)
    assert named.companions.quarantine == "bad_rows"


def test_the_planner_the_compiler_and_the_translator_import_no_pyspark() -> None:
    assert_runs_without_pyspark(
        "import sdp_expect.core.planner, sdp_expect.core.compiler, sdp_expect.emit.sql\n"
        "from sdp_expect import sql\n"
        "text = sql.translate('CREATE STREAMING TABLE t (CONSTRAINT c EXPECT (a > 0) "
        "ON VIOLATION FAIL UPDATE) AS SELECT * FROM STREAM(s)')\n"
        "assert 't_dq_batches' in text and 'maxFlowRetryAttempts = 0' in text\n")


@pytest.mark.parametrize("per_micro_batch", [True, False])
def test_a_batch_log_is_grouped_per_micro_batch_or_written_per_record(
        per_micro_batch: bool) -> None:
    """The one switch between the batch log's two shapes (Spark 4.2+ / Spark 4.1): the
    same view, table and columns; a watermarked aggregation on one partition, or a row
    per record with no aggregation and no shuffle setting."""
    state = PlanState(PipelineOptions(), batch_per_micro_batch=per_micro_batch)
    plan = plan_dataset(_rules("t", Action.WARN, Action.DROP), DatasetKind.STREAMING_TABLE,
                        PipelineOptions(), state=state)
    (log,) = [f for f in plan.flows if f.target == "t_dq_batches"]
    assert log.reads == "_sdpx_batch_input_t"
    select = flow_select(plan, log, "STREAM(_sdpx_batch_input_t)")
    if per_micro_batch:
        assert log.step is Step.BATCH_LOG
        assert dict(log.spark_conf) == {"spark.sql.shuffle.partitions": "1"}
        assert "WATERMARK _batch_time" in select and "GROUP BY _batch_time" in select
    else:
        assert log.step is Step.BATCH_LOG_BY_RECORD and dict(log.spark_conf) == {}
        assert "WATERMARK" not in select and "GROUP BY" not in select
        assert "CAST(1 AS BIGINT) AS _records" in select
    assert select.startswith("SELECT _batch_time, ") and "AS _failed" in select


def _key_rules(dataset: str, action: Action) -> DatasetRules:
    from sdp_expect.core.model import Reference, UniqueKey, make_expectation

    rules = DatasetRules(dataset)
    rules.add(make_expectation("once", UniqueKey(("id",)), action, dataset=dataset))
    rules.add(make_expectation("known", Reference("c", ("cid",), ("id",)), Action.DROP,
                               dataset=dataset))
    return rules


def test_def_114_key_rules_on_a_streaming_table_or_temporary_view() -> None:
    """Key rules (docs/dataset-rules.md) on materialized views only: a streaming table
    (with a query or declared), a temporary view, a SQL fix for the SQL front end."""
    options = PipelineOptions()
    for kind in (DatasetKind.STREAMING_TABLE, DatasetKind.TEMPORARY_VIEW):
        for (location, worded), sql in zip(_front_ends(3), (False, True), strict=True):
            with pytest.raises(SdpExpectError) as caught:
                plan_dataset(_key_rules("t", Action.DROP), kind, options,
                             state=PlanState(options), location=location)
            error = worded(caught.value)
            assert (error.code, error.dataset, error.expectation) == (
                "SDPX-DEF-114", "t", "once")
            assert ("MATERIALIZED VIEW" in (error.fix or "")) is sql
    with pytest.raises(SdpExpectError) as caught:
        planner.plan_declared_table(_key_rules("t", Action.WARN), options,
                                    state=PlanState(options))
    assert caught.value.code == "SDPX-DEF-114"


@pytest.mark.parametrize(("action", "step"), [
    (Action.DROP, Step.METRICS_FROM_COMPANIONS),   # counted in the quarantine by name
    (Action.WARN, Step.METRICS_FROM_QUERY),        # its verdict on the kept records differs
])
def test_metrics_of_key_rules_from_the_output_only_when_no_key_rule_is_judged_on_kept(
        action: Action, step: Step) -> None:
    options = PipelineOptions(metrics_from_output=True, quarantine=True)
    plan = plan_dataset(_key_rules("m", action), DatasetKind.MATERIALIZED_VIEW, options,
                        state=PlanState(options))
    metrics = plan.datasets[-1].query
    assert metrics is not None and metrics.step is step
    # The target and its check views read the referenced dataset; the output has the
    # query's columns only.
    target = plan.datasets[0].query
    assert target is not None
    text = flow_select(plan, target, "src")
    assert text.startswith("SELECT _sdpx_rec.* FROM") and "FROM c)" in text
    checks = {c.expectation.name: check_select(plan, c, "src")
              for c in plan.checks if c.expectation}
    assert "PARTITION BY" in checks["once"] and "LEFT JOIN" not in checks["once"]
    assert "LEFT JOIN" in checks["known"] and "PARTITION BY" not in checks["known"]
