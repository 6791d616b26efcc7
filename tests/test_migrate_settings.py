"""``sdp-expect migrate`` and what Lakeflow code reads from its pipeline's settings or
hands to Spark as SQL text (issue: what real projects still trip on).

- ``spark.conf.get(key)`` without a default reads a Lakeflow pipeline parameter:
  migrate carries the value from the project's settings (a bundle or a pipeline settings
  JSON file), else writes the key with a placeholder that ``run`` refuses
  (SDPX-PRJ-403) and reports every line that reads it.
- A Databricks-only SQL function inside a Python string that Spark reads as SQL is
  reported with its line, without Spark.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from sdp_expect.base.databricks_functions import DATABRICKS_ONLY_SQL_FUNCTIONS
from sdp_expect.base.errors import Location
from sdp_expect.base.project import UNSET_VALUE
from sdp_expect.checks.layout import layout_problems
from sdp_expect.migrate import migrate
from sdp_expect.migrate.result import NOT_CONVERTED

PIPELINE = '''\
from pyspark import pipelines as dp

@dp.materialized_view
def orders():
    return spark.read.table(spark.conf.get("orders.source")).where(
        "amount > " + spark.conf.get("orders.min_amount", "0"))

@dp.materialized_view
def customers():
    return spark.read.table(spark.conf.get("customers.source"))
'''


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return src


def spec_configuration(dst: Path) -> dict[str, Any]:
    data = yaml.safe_load((dst / "spark-pipeline.yml").read_text(encoding="utf-8"))
    return dict(data.get("configuration") or {})


def findings(result: Any, kind: str) -> dict[tuple[str, Any], str]:
    return {(f.file, f.line): f.message for f in result.findings if f.kind == kind}


def test_a_setting_read_without_default_gets_a_placeholder_run_refuses(
        tmp_path: Path) -> None:
    src = project(tmp_path, {"transformations/orders.py": PIPELINE})
    result = migrate(src, tmp_path / "dst")
    configuration = spec_configuration(tmp_path / "dst")
    # Both reads without a default are in the spec, as placeholders; the one with a
    # default is not (the code says its value).
    assert configuration == {"orders.source": UNSET_VALUE, "customers.source": UNSET_VALUE}
    missing = findings(result, NOT_CONVERTED)
    for line, key in ((5, "orders.source"), (10, "customers.source")):
        message = missing[("transformations/orders.py", line)]
        assert f"spark.conf.get({key!r}) has no default" in message
        assert "SDPX-PRJ-403" in message
    spec = tmp_path / "dst" / "spark-pipeline.yml"
    lines = {line.split(":")[0].strip(): number for number, line in
             enumerate(spec.read_text(encoding="utf-8").splitlines(), start=1)}
    problems = layout_problems(spec)
    assert sorted((p.code, p.place.line) for p in problems if p.place) == sorted(
        ("SDPX-PRJ-403", lines[key]) for key in ("orders.source", "customers.source"))
    assert {p.place for p in problems} == {
        Location("spark-pipeline.yml", lines[key]) for key in ("orders.source", "customers.source")}


@pytest.mark.parametrize("settings", ["bundle", "json", "json_wrapped"])
def test_a_setting_the_project_s_settings_give_is_carried_with_its_value(
        tmp_path: Path, settings: str) -> None:
    configuration = {"orders.source": "raw_orders"}
    files = {"transformations/orders.py": PIPELINE}
    if settings == "bundle":
        files["databricks.yml"] = yaml.safe_dump({"resources": {"pipelines": {"p": {
            "name": "orders_pipeline", "configuration": configuration}}}})
    else:
        spec = {"name": "orders_pipeline", "configuration": configuration,
                "libraries": [{"file": {"path": "transformations/orders.py"}}],
                "development": True}
        files["pipeline.json"] = json.dumps(
            {"pipeline_id": "1", "spec": spec} if settings == "json_wrapped" else spec)
    src = project(tmp_path, files)
    result = migrate(src, tmp_path / "dst")
    assert result.name == "orders_pipeline"
    assert spec_configuration(tmp_path / "dst") == {
        "orders.source": "raw_orders", "customers.source": UNSET_VALUE}
    missing = findings(result, NOT_CONVERTED)
    assert ("transformations/orders.py", 5) not in missing
    assert "customers.source" in missing[("transformations/orders.py", 10)]
    if settings != "bundle":
        assert "pipeline setting `development` not carried over" in missing[
            ("pipeline.json", None)]


def test_a_rule_file_in_json_is_not_taken_for_pipeline_settings(tmp_path: Path) -> None:
    src = project(tmp_path, {
        "transformations/orders.py": PIPELINE,
        "rules/orders.json": json.dumps({"version": 1, "datasets": {"orders": {
            "configuration": {"orders.source": "x"}}}})})
    result = migrate(src, tmp_path / "dst")
    assert spec_configuration(tmp_path / "dst")["orders.source"] == UNSET_VALUE
    assert result.name == "src"


def one_dataset(body: str, decorator: str = "dp.expect('fine', 'true')") -> str:
    """A pipeline file of one materialized view: ``decorator`` on line 6, ``body`` on 8."""
    return ("from pyspark import pipelines as dp\n"
            "from pyspark.sql import functions as F\n"
            "from pyspark.sql.functions import expr\n\n"
            "@dp.materialized_view\n"
            f"@{decorator}\n"
            f"def out():\n    {body}\n")


def migrated_findings(tmp_path: Path, code: str) -> dict[tuple[str, Any], str]:
    src = project(tmp_path, {"transformations/out.py": code})
    return findings(migrate(src, tmp_path / "dst"), NOT_CONVERTED)


SQL_TEXT_FORMS = {
    "expr": 'return spark.read.table("src").select(expr("{call}"))',
    "F.expr": 'return spark.read.table("src").select(F.expr("{call}"))',
    "selectExpr": 'return spark.read.table("src").selectExpr("{call} AS c")',
    "filter": 'return spark.read.table("src").filter("{call} > 0")',
    "where": 'return spark.read.table("src").where("{call} > 0")',
    "sql": 'return spark.sql("SELECT {call} AS c FROM src")',
}


@pytest.mark.parametrize("form", sorted(SQL_TEXT_FORMS))
@pytest.mark.parametrize("function", ["ai_classify", "h3_longlatash3", "secret"])
def test_a_databricks_only_function_in_sql_text_is_reported_with_its_line(
        tmp_path: Path, form: str, function: str) -> None:
    body = SQL_TEXT_FORMS[form].format(call=f"{function}(a, 'b')")
    missing = migrated_findings(tmp_path, one_dataset(body))
    message = missing[("transformations/out.py", 8)]
    assert f"{function}() in" in message and "UNRESOLVED_ROUTINE" in message
    assert DATABRICKS_ONLY_SQL_FUNCTIONS[function] in message


@pytest.mark.parametrize("decorator", [
    'dp.expect("ok", "ai_classify(a, \'b\') = \'x\'")',
    'dp.expect_or_drop("ok", "ai_classify(a, \'b\') = \'x\'")',
    'dp.expect_all({"ok": "ai_classify(a, \'b\') = \'x\'"})',
    'dp.expect_all_or_fail({"fine": "a > 0", "ok": "ai_classify(a, \'b\') = \'x\'"})',
])
def test_a_databricks_only_function_in_an_expectation_is_reported_with_its_line(
        tmp_path: Path, decorator: str) -> None:
    missing = migrated_findings(tmp_path, one_dataset("return spark.read.table('src')",
                                                      decorator))
    assert "ai_classify() in" in missing[("transformations/out.py", 6)]


def test_a_column_or_a_method_of_the_same_name_is_not_a_function_call(tmp_path: Path) -> None:
    code = ('from pyspark import pipelines as dp\n\n'
            '@dp.materialized_view\n'
            '@dp.expect("ok", "secret IS NOT NULL AND t.ai_classify(1) > 0")\n'
            'def out():\n'
            '    return spark.read.table("src").selectExpr("secret", "is_member")\n')
    src = project(tmp_path, {"transformations/out.py": code})
    missing = findings(migrate(src, tmp_path / "dst"), NOT_CONVERTED)
    assert not [m for m in missing.values() if "Databricks-only SQL function" in m], missing
