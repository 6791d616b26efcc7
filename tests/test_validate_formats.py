"""``sdp-expect validate --format github`` and ``--format sarif``: the same errors as the
report, each placed by its values (file, line, column), in the forms other tools read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdp_expect.checks.validate import validate_paths
from sdp_expect.cli import main

SQL = """\
CREATE MATERIALIZED VIEW orders (
  CONSTRAINT c EXPECT (sum(a) > 0),
  CONSTRAINT d EXPECT (rand() > 0.5)
) AS SELECT * FROM raw;
"""
RULES = "- {name: r, constraint: 'b > 0', failureAction: explode}\n"


def project(root: Path) -> Path:
    folder = root / "odd, name: 100%"  # every character GitHub's properties escape
    folder.mkdir()
    (folder / "gold.sql").write_text(SQL)
    (folder / "rules.yml").write_text(RULES)
    (folder / "fine.yml").write_text("- {name: ok, constraint: 'b > 0'}\n")
    return folder


def _unescape(text: str) -> str:
    return (text.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n")
            .replace("%0D", "\r").replace("%25", "%"))


def test_github_annotations_place_each_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    folder = project(tmp_path)
    report = validate_paths([folder])
    assert main(["validate", "--format", "github", str(folder)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(report.errors) == 3
    for line, issue in zip(lines, report.errors, strict=True):
        assert line.startswith("::error ")
        head, message = line[len("::error "):].split("::", 1)
        properties = dict(part.split("=", 1) for part in head.split(","))
        assert _unescape(properties["file"]) == issue.file
        assert properties["title"] == issue.code
        assert properties.get("line") == (None if issue.line is None else str(issue.line))
        assert properties.get("col") == (None if issue.column is None else str(issue.column))
        assert _unescape(message).startswith(f"[{issue.code}] ")
        assert issue.message in _unescape(message)
    # the SQL errors are at their lines; a rule file's error names the file only
    assert [(Path(i.file).name, i.line) for i in report.errors] == [
        ("gold.sql", 2), ("gold.sql", 3), ("rules.yml", None)]


def test_sarif_log_has_one_result_per_error_and_the_rules_they_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = project(tmp_path)
    report = validate_paths([folder])
    assert main(["validate", "--format", "sarif", str(folder)]) == 1
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "sdp-expect"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == sorted({issue.code for issue in report.errors})
    assert all(rule["shortDescription"]["text"] and rule["help"]["text"]
               for rule in driver["rules"])
    results = run["results"]
    assert len(results) == len(report.errors)
    for result, issue in zip(results, report.errors, strict=True):
        assert result["ruleId"] == issue.code == rule_ids[result["ruleIndex"]]
        assert result["level"] == "error" and issue.message in result["message"]["text"]
        [location] = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == issue.file
        region = physical.get("region")
        assert region == (None if issue.line is None else
                          {"startLine": issue.line,
                           **({} if issue.column is None else {"startColumn": issue.column})})


def test_no_error_is_an_empty_annotation_list_and_an_empty_sarif_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "fine.yml").write_text("- {name: ok, constraint: 'b > 0'}\n")
    assert main(["validate", "--format", "github", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["validate", "--format", "sarif", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["results"] == []
