"""The hooks of ``.pre-commit-hooks.yaml``, run by pre-commit on a sample repository.

The sample repository's ``.pre-commit-config.yaml`` names a git repository holding
this tree's hook definitions and package, at a commit, as a user's names
sdp-expect's (docs/cli.md, "pre-commit"). ``pre-commit run --all-files`` must fail
on a bad rule file, naming it with validate's report, pass once it is fixed, and
leave alone the YAML files that are not rule files.

``sdp-expect-validate`` (``language: system``) runs the ``sdp-expect`` of this
environment: seconds. ``sdp-expect-validate-isolated`` (``language: python``) makes
pre-commit build an environment of its own and pip-install sdp-expect into it,
pyspark included: 16 s to 80 s here with pyspark's wheel in pip's cache (docs/cli.md),
minutes without it. It installs the newest pyspark whatever the line under test, so
it runs on the newest line only (marker ``hook_env``, scripts/test.sh).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_helpers import copy_distribution, repo_env, user_env

from sdp_expect.checks.validate import validate_paths

REPO = Path(__file__).resolve().parent.parent
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"

SPEC = """\
name: sample
storage: file:///tmp/sample-storage
libraries:
  - glob:
      include: transformations/**
"""
GOOD_RULES = """\
- name: valid_id
  constraint: id IS NOT NULL
  failureAction: drop
"""
BAD_RULES = """\
- name: known_status
  constraint: status IN ('open', 'shipped')
  failureAction: explode
"""
FIXED_RULES = BAD_RULES.replace("explode", "fail")
SQL = """\
CREATE OR REFRESH MATERIALIZED VIEW revenue (
  CONSTRAINT positive EXPECT (total > 0) ON VIOLATION DROP ROW
) AS SELECT sum(amount) AS total FROM orders_silver;
"""
# Not a rule file: validate would reject it, so the hooks must not be given it.
NOT_RULES = "server:\n  port: 8080\n"

SAMPLE = {
    "spark-pipeline.yml": SPEC,
    "transformations/orders.py": "from sdp_expect import pipelines as dp\n",
    "rules/orders.yml": GOOD_RULES,
    "rules/customers.yml": BAD_RULES,
    "databricks_sql/gold.sql": SQL,
    "config/settings.yml": NOT_RULES,
    ".github/workflows/ci.yml": NOT_RULES,
}
# The files the hooks' `files:` pattern selects, in the order pre-commit passes them.
CHECKED = ["databricks_sql/gold.sql", "rules/customers.yml", "rules/orders.yml",
           "spark-pipeline.yml", "transformations/orders.py"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=sdp-expect tests", "-c", "user.email=tests@example.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, check=True,
    )
    return done.stdout.strip()


def hook_repository(directory: Path) -> tuple[Path, str]:
    """A git repository holding this tree's hook definitions and package, committed:
    what pre-commit clones (the tree itself may hold uncommitted changes)."""
    copy_distribution(directory, HOOKS_FILE.name)
    git(directory, "init", "-q")
    git(directory, "add", "-A")
    git(directory, "commit", "-q", "-m", "sdp-expect hooks")
    return directory, git(directory, "rev-parse", "HEAD")


def sample_repository(directory: Path, hook_repo: Path, rev: str, hook: str) -> Path:
    directory.mkdir()
    for name, text in SAMPLE.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text, encoding="utf-8")
    config = {"repos": [{"repo": str(hook_repo), "rev": rev, "hooks": [{"id": hook}]}]}
    (directory / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git(directory, "init", "-q")
    git(directory, "add", "-A")
    return directory


def pre_commit(sample: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never", *args],
        cwd=sample, env=env, capture_output=True, text=True, timeout=1500,
    )


def hook_env(tmp_path: Path, isolated: bool) -> dict[str, str]:
    """The environment pre-commit runs in: a user's, with a cache folder of its own; the
    system hook finds sdp-expect next to this Python and runs this tree's code, the
    isolated one nothing of this tree."""
    env = user_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    if isolated:
        env.pop("PYTHONPATH", None)  # the hook must run the sdp-expect pre-commit installed
    else:
        env["PYTHONPATH"] = repo_env()["PYTHONPATH"]  # this tree's, whatever pip installed
    return env


def test_the_hooks_file_declares_both_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))}
    assert {i: h["language"] for i, h in hooks.items()} == {
        "sdp-expect-validate": "system", "sdp-expect-validate-isolated": "python"}
    assert {h["entry"] for h in hooks.values()} == {"sdp-expect validate"}
    assert hooks["sdp-expect-validate"]["files"] == hooks["sdp-expect-validate-isolated"]["files"]


@pytest.mark.parametrize(
    "hook",
    [
        "sdp-expect-validate",
        pytest.param("sdp-expect-validate-isolated",
                     marks=[pytest.mark.hook_env, pytest.mark.timeout(3000)]),
    ],
)
def test_pre_commit_fails_on_a_bad_rule_file_and_passes_once_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str
) -> None:
    hook_repo, rev = hook_repository(tmp_path / "hooks")
    sample = sample_repository(tmp_path / "sample", hook_repo, rev, hook)
    env = hook_env(tmp_path, isolated=hook.endswith("isolated"))
    monkeypatch.chdir(sample)  # validate_paths names the files as pre-commit passes them

    failed = pre_commit(sample, env)
    expected = validate_paths(CHECKED)
    assert {e.file for e in expected.errors} == {"rules/customers.yml"}
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert expected.to_text() in failed.stdout, failed.stdout

    (sample / "rules" / "customers.yml").write_text(FIXED_RULES, encoding="utf-8")
    git(sample, "add", "-A")
    passed = pre_commit(sample, env, "--verbose")  # --verbose: the output of a hook that passes
    fixed = validate_paths(CHECKED)
    # the three, the spec (read for its layout) and its Python file (parsed, its rules
    # read), passed by the hook and reached through the spec: checked once
    assert fixed.ok and fixed.files_checked == 5
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert fixed.to_text() in passed.stdout, passed.stdout
