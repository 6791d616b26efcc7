"""``sdp-expect validate`` and ``validate_paths``: exit codes, text and JSON output."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import assert_runs_without_pyspark, repo_env

import sdp_expect
from sdp_expect import cli
from sdp_expect.checks.validate import (
    CHECKERS,
    FileResult,
    ValidationIssue,
    ValidationNote,
    register_checker,
    validate_paths,
)
from sdp_expect.cli import main

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rules"
GOOD = str(FIXTURES / "example_list.yml")
BAD = str(FIXTURES / "invalid.yml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- exit codes


def test_valid_file_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", GOOD)
    assert code == 0
    assert out.strip() == "checked 1 file, 2 rules: no errors"


def test_invalid_file_exits_1_and_names_file_rule_and_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "validate", GOOD, BAD)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"[SDPX-VAL-006] {BAD}, rule 1: ")
    assert "failureAction" in lines[0]
    assert lines[1].startswith(f"[SDPX-VAL-008] {BAD}, rule 2: ")
    assert lines[2].startswith(f"[SDPX-VAL-006] {BAD}, rule 3: ")
    assert lines[-1] == "checked 2 files, 5 rules: 3 errors"


def test_missing_file_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "validate", str(tmp_path / "nope.yml"))
    assert code == 1
    assert "SDPX-VAL-003" in out


@pytest.mark.parametrize(
    "argv",
    [[], ["validate", "--format", "xml", GOOD], ["frobnicate"], ["--nope"]],
    ids=["no-command", "bad-format", "unknown-command", "unknown-option"],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert "usage:" in err
    assert out == ""


def test_no_path_outside_a_project_exits_2(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With no PATH, validate checks the project around the current folder; with none
    there, it says so (tests/test_layout.py checks a project)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "validate")
    assert code == 2 and out == ""
    assert "no PATH given and no pipeline spec" in err and "give a PATH" in err, err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--help")
    assert code == 0
    assert "--format" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"sdp-expect {sdp_expect.__version__}"


def test_version_falls_back_to_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(sdp_expect, "__version__")
    monkeypatch.setattr(importlib.metadata, "version", lambda name: f"9.9.9 of {name}")
    assert cli.version() == "9.9.9 of sdp-expect"


def test_version_when_nothing_is_known(monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.delattr(sdp_expect, "__version__")
    monkeypatch.setattr(importlib.metadata, "version", unknown)
    assert cli.version() == "0.0.0+unknown"


# --------------------------------------------------------------------------- JSON output


def test_json_output_is_valid_json_with_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--format", "json", GOOD, BAD)
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False
    assert report["files_checked"] == 2
    assert report["rules_checked"] == 5
    assert [(e["code"], e["file"], e["rule"]) for e in report["errors"]] == [
        ("SDPX-VAL-006", BAD, "rule 1"),
        ("SDPX-VAL-008", BAD, "rule 2"),
        ("SDPX-VAL-006", BAD, "rule 3"),
    ]
    assert all(e["message"] for e in report["errors"])


def test_json_output_when_all_is_well(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", GOOD, "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "ok": True, "files_checked": 1, "rules_checked": 2, "errors": [], "notes": []
    }


def test_json_output_survives_odd_characters(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "odd.json"
    path.write_text('[{"name": "\\ud800é", "constraint": "a"}, {"name": "\\ud800é", '
                    '"constraint": "b"}]', encoding="utf-8")
    code, out, _ = run(capsys, "validate", "--format", "json", str(path))
    assert code == 1
    assert json.loads(out)["errors"][0]["code"] == "SDPX-VAL-071"
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 1
    assert "SDPX-VAL-071" in out


# --------------------------------------------------------------------------- directories


def test_directory_checks_every_rule_and_sql_file_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "b" / "z.yaml").write_text("- 1\n", encoding="utf-8")
    (tmp_path / "a.json").write_text("[]", encoding="utf-8")
    (tmp_path / "c.yml").write_text("id > 0:\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a rule file", encoding="utf-8")
    (tmp_path / "query.sql").write_text("CREATE MATERIALIZED VIEW one AS SELECT 1",
                                        encoding="utf-8")
    (tmp_path / ".hidden" / "x.yml").write_text("- 1\n", encoding="utf-8")
    report = validate_paths([tmp_path])
    assert report.files_checked == 4  # a.json, b/z.yaml, c.yml, query.sql
    assert report.rules_checked == 2
    assert [(e.file, e.code) for e in report.errors] == [
        (str(tmp_path / "b" / "z.yaml"), "SDPX-VAL-008")
    ]


def test_directory_of_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(FIXTURES))
    assert code == 1  # invalid.yml and invalid_dataset_rules.yml are among them
    assert out.count("[SDPX-VAL-") == 3 + 4 and out.count("[SDPX-DEF-") == 2
    assert out.splitlines()[-1].startswith(f"checked {len(list(FIXTURES.rglob('*.*')))} files")


def test_empty_directory_is_a_note_not_an_error(tmp_path: Path) -> None:
    report = validate_paths([tmp_path])
    assert report.ok and report.files_checked == 0
    assert report.notes[0].file == str(tmp_path)


def test_sql_file_is_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "orders.sql"
    path.write_text("CREATE MATERIALIZED VIEW x (CONSTRAINT c EXPECT (id > 0)) AS SELECT 1",
                    encoding="utf-8")
    code, out, _ = run(capsys, "validate", str(path), GOOD)
    assert code == 0
    assert "note:" not in out
    assert out.splitlines()[-1] == "checked 2 files, 3 rules: no errors"


def test_unknown_rule_keys_are_notes_and_the_exit_status_stays_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text("- name: a\n  constraint: x > 0\n  failure_action: fail\n")
    code, out, _ = run(capsys, "validate", str(rules))
    assert code == 0
    assert (f"note: {rules}: rule 1: the key 'failure_action' is not part of the grammar "
            "and is ignored; did you mean 'failureAction'?") in out


def test_a_project_folder_skips_its_pipeline_spec(tmp_path: Path) -> None:
    (tmp_path / "spark-pipeline.yml").write_text(
        "name: p\nstorage: file:///tmp/p-storage\nlibraries:\n"
        "  - glob:\n      include: transformations/**\n")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "orders.yml").write_text("id IS NOT NULL:\n  action: drop\n")
    (tmp_path / "transformations").mkdir()
    (tmp_path / "transformations" / "orders.py").write_text("x = 1\n")
    report = validate_paths([tmp_path])
    # the spec (its libraries checked), its Python file and the rule file
    assert report.ok and report.files_checked == 3 and report.rules_checked == 1
    named = validate_paths([tmp_path / "spark-pipeline.yml"])
    assert named.ok and named.files_checked == 2
    assert [n.message for n in named.notes] == [
        "a pipeline spec: its libraries checked for files that spark-pipelines refuses "
        "or cannot parse (not read as a rule file)"]


def test_explicit_file_with_another_suffix_is_read_as_a_rule_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.txt"
    path.write_text("- {name: n, constraint: ''}\n", encoding="utf-8")
    report = validate_paths([path])
    assert [e.code for e in report.errors] == ["SDPX-VAL-001"]


def test_a_checker_can_be_plugged_in_for_a_suffix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sdp_expect.checks.validate.CHECKERS", dict(CHECKERS))
    seen: list[str] = []

    def check_sql(path: str) -> FileResult:
        seen.append(path)
        return FileResult(2, (ValidationIssue("SDPX-VAL-011", path, "constraint 1", "bad"),))

    register_checker(".SQL", check_sql)
    (tmp_path / "q.sql").write_text("...", encoding="utf-8")
    report = validate_paths([tmp_path])
    assert seen == [str(tmp_path / "q.sql")]
    assert report.rules_checked == 2 and not report.ok and not report.notes


def test_report_to_text_and_json_agree() -> None:
    report = validate_paths([BAD])
    text = report.to_text()
    data = json.loads(report.to_json())
    assert len(data["errors"]) == len(report.errors) == text.count("[SDPX-VAL-")
    assert data["ok"] is report.ok is False


# --------------------------------------------------------------------------- a real process


def test_real_subprocess(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "sdp_expect.cli", "validate", GOOD],
                        capture_output=True, text=True, env=repo_env(), timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "no errors" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "sdp_expect.cli", "validate", "--format", "json", BAD],
        capture_output=True, text=True, env=repo_env(), timeout=60,
    )
    assert bad.returncode == 1, bad.stderr
    assert json.loads(bad.stdout)["errors"][0]["rule"] == "rule 1"
    usage = subprocess.run([sys.executable, "-m", "sdp_expect.cli", "validate"],
                           capture_output=True, text=True, env=repo_env(), timeout=60,
                           cwd=tmp_path)  # no PATH, and no project around it
    assert usage.returncode == 2
    assert "give a PATH" in usage.stderr


def test_validate_does_not_import_pyspark() -> None:
    assert_runs_without_pyspark(
        "from sdp_expect.cli import main\n"
        f"code = main(['validate', {BAD!r}])\n"
        "assert code == 1, code\n"
    )


def test_validate_notes_when_checking_stopped(tmp_path: Path) -> None:
    path = tmp_path / "broken.yml"
    path.write_text("- 1\n" * 5_000, encoding="utf-8")
    report = validate_paths([path])
    assert len(report.errors) == 1000
    assert report.notes == [ValidationNote(str(path), "checking stopped after 1000 errors")]
