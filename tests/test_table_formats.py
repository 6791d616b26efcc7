"""The project's table format (``sdp_expect.format``): which release fits which
pyspark line, the coded refusals before Spark starts, the jar cache, and what the
planner declares to SDP. No Spark here: the format's pipelines run in
``test_table_formats_spark.py``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sdp_expect.base.errors import Location, SdpExpectError
from sdp_expect.base.options import PipelineOptions, read_options
from sdp_expect.base.project import Project
from sdp_expect.base.table_formats import (
    DELTA,
    ICEBERG,
    KEY_TABLE_FORMAT,
    release_for,
    table_format,
)
from sdp_expect.core.model import Action, DatasetKind, DatasetRules, Expectation
from sdp_expect.core.planner import (
    PlanState,
    plan_dataset,
    plan_declared_table,
    plan_unchecked_dataset,
)
from sdp_expect.runtime.format_jars import (
    CACHE_VARIABLE,
    REPOSITORY_VARIABLE,
    format_setup,
)


def test_a_spec_without_a_format_is_parquet_and_names_are_read_loosely() -> None:
    assert table_format({}).name == "parquet"
    assert table_format({KEY_TABLE_FORMAT: " Delta "}).name == "delta"
    with pytest.raises(SdpExpectError) as raised:
        table_format({KEY_TABLE_FORMAT: "hudi"})
    assert raised.value.code == "SDPX-CFG-204" and "'hudi'" in str(raised.value)


@pytest.mark.parametrize(("version", "artifact"), [
    ("4.1.4", "delta-spark_4.1_2.13"), ("4.2.1", "delta-spark_4.2_2.13")])
def test_delta_has_a_release_for_the_41_and_42_lines(version: str, artifact: str) -> None:
    release = release_for(DELTA, version)
    assert release is not None
    assert [a.coordinate for a in release.artifacts] == [
        f"io.delta:{artifact}:4.4.0", "io.delta:delta-storage:4.4.0"]


def test_a_line_without_a_release_stops_with_the_versions_and_the_fix() -> None:
    with pytest.raises(SdpExpectError) as raised:
        release_for(DELTA, "4.3.0")
    error = raised.value
    assert error.code == "SDPX-PRJ-404"
    assert "pyspark 4.3.0" in str(error) and "pyspark 4.1, 4.2" in str(error)
    assert error.fix is not None and "pip install 'pyspark[pipelines]~=4.2.0'" in error.fix


@pytest.mark.parametrize("version", ["4.1.4", "4.2.1", "4.3.0"])
def test_iceberg_is_refused_on_every_line_with_the_reason(version: str) -> None:
    """Not yet run by sdp-expect (docs/formats.md): said before Spark starts, never a
    server that hangs on its metastore."""
    with pytest.raises(SdpExpectError) as raised:
        release_for(ICEBERG, version)
    assert raised.value.code == "SDPX-PRJ-404" and f"pyspark {version}" in str(raised.value)
    assert raised.value.fix is not None and "delta" in raised.value.fix


def test_the_spec_s_format_must_be_the_session_s_default_format() -> None:
    """A pipeline run by a Spark that was not started for the spec's format would store
    every table as parquet: refused where the pipeline is defined (SDPX-CFG-205)."""
    given = {KEY_TABLE_FORMAT: "delta"}
    with pytest.raises(SdpExpectError) as raised:
        read_options(given.get)
    assert raised.value.code == "SDPX-CFG-205" and "parquet" in str(raised.value)
    started = {KEY_TABLE_FORMAT: "delta", "spark.sql.sources.default": "delta"}
    assert read_options(started.get).default_format == "delta"
    assert read_options({KEY_TABLE_FORMAT: "parquet"}.get).default_format == "parquet"


def _rules(name: str) -> DatasetRules:
    rules = DatasetRules(name)
    rules.extend([Expectation("positive", "id > 0", Action.DROP)])
    return rules


@pytest.mark.parametrize(("default", "given", "declared"), [
    ("delta", "delta", None),         # the session's default: not declared (see below)
    ("delta", "DELTA", None),
    ("iceberg", "parquet", "parquet"),  # another format than the default: as given
    ("parquet", "parquet", "parquet"),  # Spark's file formats: as given, as before
])
def test_a_format_that_is_the_session_s_default_is_not_declared_to_sdp(
        default: str, given: str, declared: str | None) -> None:
    """SDP sets a declared format again as the ``provider`` property on each update, which
    Delta refuses (the second update fails after emptying the view); undeclared, the
    table takes the same default format."""
    options = PipelineOptions(default_format=default)
    state = PlanState(options)
    view = plan_dataset(_rules("v"), DatasetKind.MATERIALIZED_VIEW, options, state=state,
                        format=given)
    table = plan_declared_table(_rules("t"), options, state=state, format=given)
    assert {d.format for d in view.datasets if d.name == "v"} == {declared}
    # A streaming table's companions take the table's format, so the same one.
    assert {d.format for d in table.datasets if d.query is None} == {declared}


def _repository(root: Path, jars: dict[str, bytes]) -> Path:
    """A Maven repository in a folder: each jar with its ``.sha1``, as Maven Central has."""
    for path, body in jars.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        Path(f"{target}.sha1").write_text(hashlib.sha1(body).hexdigest() + "  x.jar\n")
    return root


def _delta_jars() -> dict[str, bytes]:
    release = release_for(DELTA, "4.1.4")
    assert release is not None
    return {a.path: f"jar of {a.coordinate}".encode() for a in release.artifacts}


def test_jars_are_fetched_once_then_read_from_the_cache_without_the_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.m2 of the machine's
    repository = _repository(tmp_path / "repo", _delta_jars())
    project = Project(spec=tmp_path / "spark-pipeline.yml",
                      configuration={KEY_TABLE_FORMAT: "delta"})
    env = {CACHE_VARIABLE: str(tmp_path / "cache"), REPOSITORY_VARIABLE: repository.as_uri()}
    first = format_setup(project, pyspark_version="4.1.4", environ=env)
    assert [jar.read_bytes() for jar in first.jars] == list(_delta_jars().values())
    assert first.settings["spark.sql.sources.default"] == "delta"
    assert first.settings["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    options = first.server_options()
    assert options[:2] == ["--jars", ",".join(str(jar) for jar in first.jars)]
    assert first.confs()["spark.jars"] == options[1]
    # The repository gone (no network): the cache serves the same jars.
    env[REPOSITORY_VARIABLE] = (tmp_path / "gone").as_uri()
    assert format_setup(project, pyspark_version="4.1.4", environ=env).jars == first.jars


def test_a_jar_whose_checksum_differs_is_refused_and_not_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    jars = _delta_jars()
    repository = _repository(tmp_path / "repo", jars)
    first_path = next(iter(jars))
    (repository / first_path).write_bytes(b"something else")
    project = Project(spec=tmp_path / "spark-pipeline.yml",
                      configuration={KEY_TABLE_FORMAT: "delta"})
    env = {CACHE_VARIABLE: str(tmp_path / "cache"), REPOSITORY_VARIABLE: repository.as_uri()}
    with pytest.raises(SdpExpectError) as raised:
        format_setup(project, pyspark_version="4.1.4", environ=env)
    assert raised.value.code == "SDPX-PRJ-405"
    assert "io.delta:delta-spark_4.1_2.13:4.4.0" in str(raised.value)
    assert "SHA-1" in str(raised.value)
    assert not (tmp_path / "cache" / first_path).exists()


def test_a_jar_the_repository_lacks_names_the_artifact_and_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = Project(spec=tmp_path / "spark-pipeline.yml",
                      configuration={KEY_TABLE_FORMAT: "delta"})
    env = {CACHE_VARIABLE: str(tmp_path / "cache"),
           REPOSITORY_VARIABLE: (tmp_path / "empty").as_uri()}
    with pytest.raises(SdpExpectError) as raised:
        format_setup(project, pyspark_version="4.2.1", environ=env)
    assert raised.value.code == "SDPX-PRJ-405"
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in str(raised.value)
    assert str(tmp_path / "cache") in str(raised.value)


def test_a_jar_mvn_left_in_m2_is_copied_when_its_checksum_is_the_repository_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    jars = _delta_jars()
    repository = _repository(tmp_path / "repo", jars)
    _repository(home / ".m2" / "repository", jars)
    for path in jars:  # the repository keeps only the checksums
        (repository / path).unlink()
    project = Project(spec=tmp_path / "spark-pipeline.yml",
                      configuration={KEY_TABLE_FORMAT: "delta"})
    env = {CACHE_VARIABLE: str(tmp_path / "cache"), REPOSITORY_VARIABLE: repository.as_uri()}
    setup = format_setup(project, pyspark_version="4.1.4", environ=env)
    assert [jar.read_bytes() for jar in setup.jars] == list(jars.values())


def test_parquet_needs_no_jars_and_no_settings(tmp_path: Path) -> None:
    setup = format_setup(Project(spec=tmp_path / "spark-pipeline.yml"), pyspark_version="4.3.0",
                         environ={CACHE_VARIABLE: str(tmp_path / "cache")})
    assert setup.jars == () and dict(setup.settings) == {} and setup.server_options() == []
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("written", "using"), [("DELTA", None), ("PARQUET", "USING PARQUET")])
def test_sql_using_the_session_s_default_format_is_left_out_as_in_python(
        written: str, using: str | None) -> None:
    """The SQL emitter writes the plan's format, not the statement's: ``USING DELTA`` in
    a Delta session is left out like ``format="delta"`` in Python; another format is
    kept as written."""
    from sdp_expect import sql

    text = ("CREATE OR REFRESH MATERIALIZED VIEW orders (CONSTRAINT positive EXPECT (id > 0) "
            f"ON VIOLATION DROP ROW) USING {written} AS SELECT * FROM raw;\n")
    out = sql.translate(text, "f.sql", conf={"spark.sql.sources.default": "delta"})
    heads = [line for line in out.splitlines() if line.startswith("USING")]
    creates = [line for line in out.splitlines()
               if line.startswith("CREATE MATERIALIZED VIEW orders")]
    assert creates
    assert heads == ([using] if using else []), out


@pytest.mark.parametrize("kind", ["view", "declared", "unchecked"])
@pytest.mark.parametrize(("given", "default"), [("delta", "parquet"), ("Delta", "iceberg"),
                                                ("iceberg", "delta")])
def test_def_120_a_versioned_format_the_pipeline_is_not_stored_in(
        kind: str, given: str, default: str) -> None:
    """Without the project's format, ``format="delta"`` would run once and fail every
    later update (DELTA_CANNOT_CHANGE_PROVIDER, after emptying the view): stopped at
    definition, naming the dataset, where it is, and the one setting that fixes it."""
    options = PipelineOptions(default_format=default)
    state = PlanState(options)
    where = Location("transformations/silver.py", 12)
    with pytest.raises(SdpExpectError) as caught:
        if kind == "view":
            plan_dataset(_rules("orders"), DatasetKind.MATERIALIZED_VIEW, options, state=state,
                         format=given, location=where)
        elif kind == "declared":
            plan_declared_table(_rules("orders"), options, state=state, format=given,
                                location=where)
        else:
            plan_unchecked_dataset("orders", DatasetKind.STREAMING_TABLE, state=state,
                                   format=given, location=where)
    error = caught.value
    assert error.code == "SDPX-DEF-120" and error.dataset == "orders"
    assert error.place == where
    assert f"sdp_expect.format: {given.lower()}" in str(error)
    assert f"stores its tables as {default}" in str(error)
    assert "sdp_expect.format: delta" in (error.fix or "")


def test_def_120_is_left_to_spark_for_a_table_of_another_catalog() -> None:
    options = PipelineOptions(default_format="parquet")
    plan = plan_dataset(_rules("lake.sales.orders"), DatasetKind.MATERIALIZED_VIEW, options,
                        state=PlanState(options), format="iceberg")
    assert {d.format for d in plan.datasets if d.name == "lake.sales.orders"} == {"iceberg"}


def test_sql_using_delta_without_the_project_s_format_is_def_120() -> None:
    from sdp_expect import sql

    text = ("CREATE OR REFRESH MATERIALIZED VIEW orders (CONSTRAINT positive EXPECT (id > 0) "
            "ON VIOLATION DROP ROW) USING DELTA AS SELECT * FROM raw;\n")
    with pytest.raises(SdpExpectError, match="SDPX-DEF-120"):
        sql.translate(text, "f.sql", conf={"spark.sql.sources.default": "parquet"})


def test_translate_with_a_spec_that_names_the_format_translates_as_its_run_would(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Delta project's ``translate --spec``: the session of ``sdp-expect run`` stores
    tables in Delta, so ``USING DELTA`` is left out as there (no SDPX-DEF-120)."""
    from sdp_expect import cli

    source = tmp_path / "orders.sql"
    source.write_text("CREATE OR REFRESH MATERIALIZED VIEW orders USING DELTA AS "
                      "SELECT * FROM raw;\n")
    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text(f"name: p\nconfiguration:\n  {KEY_TABLE_FORMAT}: delta\n")
    assert cli.main(["translate", str(source), "--spec", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "CREATE MATERIALIZED VIEW orders" in out and "USING" not in out
    spec.write_text("name: p\n")
    assert cli.main(["translate", str(source), "--spec", str(spec)]) == 1
    assert "SDPX-DEF-120" in capsys.readouterr().err


def test_one_run_option_chooses_the_format_for_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sdp-expect run --conf sdp_expect.format=delta``: the project's server gets the
    format's jars and settings as if the spec said it (on a line without a release, the
    run stops before anything starts, SDPX-PRJ-404)."""
    import pyspark

    from sdp_expect.runtime.local_server import ServerProblem, plan_server
    from sdp_expect.runtime.spark_pipelines import build_command

    monkeypatch.setenv(CACHE_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setenv(REPOSITORY_VARIABLE, _repository(tmp_path / "repo", _all_delta_jars())
                       .as_uri())
    project = Project(spec=tmp_path / "spark-pipeline.yml")
    plain = plan_server(project, build_command("run", project, []))
    assert plain.format_options == ()
    invocation = build_command("run", project, ["--conf", f"{KEY_TABLE_FORMAT}=delta"])
    try:
        release = release_for(DELTA, pyspark.__version__)
    except SdpExpectError:
        with pytest.raises(ServerProblem, match="SDPX-PRJ-404"):
            plan_server(project, invocation)
        return
    assert release is not None
    options = plan_server(project, invocation).format_options
    jars = options[options.index("--jars") + 1].split(",")
    assert [Path(jar).name for jar in jars] == [a.file_name for a in release.artifacts]
    assert "spark.sql.sources.default=delta" in options


def _all_delta_jars() -> dict[str, bytes]:
    return {a.path: f"jar of {a.coordinate}".encode()
            for line in DELTA.releases.values() for a in line.artifacts}
