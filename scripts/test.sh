#!/usr/bin/env bash
# Usage: scripts/test.sh [pytest arguments]
# The whole test suite, from a fresh clone: for the newest 4.1.x, 4.2.x and
# 4.x (4.3 or later) of pyspark, each in its own virtual environment
# under .venv/, install sdp-expect with its test and lint extras, lint,
# type-check and check the import layers (once), then run pytest. Exits
# non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each entry is a pip specifier, optionally followed by "@" and a pytest marker
# expression, and then by "@" and the test files that line runs (default: all).
# To keep CI within its time: the middle line runs the tests of what Spark 4.2
# added and a few core graph families only (test_versions, test_companions,
# test_streaming, test_history; the lines around it run everything; on a slow
# machine the whole suite on three lines took more than CI's 90 minutes), the
# standalone cluster and the
# SIGKILL fault loop (markers "cluster", "faults", ~3 min) run on the newest
# line only; the middle line skips the true command-line runs (marker "cli"), and
# the slowest true CLI runs that do not depend on the line run on one line only
# (tests/cli_helpers.py NEWEST_LINE: among them the example's run and report,
# test_cli_run_report; OLDEST_LINE: the two examples, on 4.1 as
# scripts/run-example.sh runs them, and the key rules' run; the corpus CLI runs on 4.1).
# The pre-commit hook that installs its own environment (marker "hook_env",
# 16-80 s) installs the newest pyspark whatever the line: it runs on the newest.
middle="tests/test_versions.py tests/test_companions.py tests/test_streaming.py tests/test_history.py"
specs=${SDPX_PYSPARK_SPECS:-"~=4.1.0@not cluster and not faults and not hook_env;~=4.2.0@not cli and not hook_env@$middle;>=4.3,<5"}
status=0
first=1
IFS=';' read -r -a spec_list <<< "$specs"
for entry in "${spec_list[@]}"; do
  spec=${entry%%@*}
  markers=()
  paths=()
  if [[ $entry == *@* ]]; then
    rest=${entry#*@}
    markers=(-m "${rest%%@*}")
    if [[ $rest == *@* ]]; then read -r -a paths <<< "${rest#*@}"; fi
  fi
  venv=$(scripts/venv.sh "$spec")
  version=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
  echo "== pyspark $version ($entry) in $venv"
  if [[ $first == 1 ]]; then
    first=0
    echo "== ruff"; "$venv/bin/ruff" check sdp_expect tests scripts examples benchmarks || status=1
    echo "== mypy"; "$venv/bin/mypy" || status=1
    echo "== import-linter (the layers of docs/architecture.md)"
    "$venv/bin/lint-imports" || status=1
  fi
  echo "== pytest"
  PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pytest "${markers[@]}" "$@" "${paths[@]}" \
    || status=1
done
exit $status
