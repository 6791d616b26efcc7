#!/usr/bin/env bash
# Usage: scripts/test.sh [--all] [pytest arguments]
#
# From a fresh clone: create the virtual environments under .venv/ (pyspark and
# sdp-expect with its test and lint extras, scripts/venv.sh), lint (ruff), type-check
# (mypy --strict) and check the import layers (import-linter), then run pytest. Exits
# non-zero if anything fails. The tiers and lines are explained in docs/testing.md.
#
#   scripts/test.sh         the everyday run: lint, then the pure and graph tiers on the
#                           newest pyspark line (hypothesis: explicit examples only)
#   scripts/test.sh --all   the whole matrix, as CI runs it (.ci/run): every test on the
#                           newest line with the full hypothesis example counts; the pure
#                           and graph tiers on pyspark 4.1 and what Spark 4.2 added on 4.2,
#                           with the explicit examples; one cold run of the example a line
#
# Pytest runs with pytest-xdist (SDPX_WORKERS to change), a test file on one worker:
# three workers sharing one interpreted Spark Connect server (every line, by default), or
# two workers with a server each (SERVERS "own", below; docs/testing.md, "One server").
# Each line ends within SDPX_LINE_TIMEOUT (default 45m). Per-test durations go to
# test-results/pyspark-VERSION.xml (JUnit) and the 40 slowest to the log; each line ends
# with its "tier counts:", and --all ends with all of them. SDPX_PYSPARK_SPECS overrides
# the lines: "SPEC@MARKERS@HYPOTHESIS@FILES@SERVERS;..." (the fields after SPEC optional;
# HYPOTHESIS is full or explicit; SERVERS is shared, the default, or own).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=fast
if [[ ${1-} == --all ]]; then
  mode=all
  shift
fi
newest=">=4.3,<5"
cold="tests/test_cli_e2e.py::test_example_dry_run_passes"  # a cold run of the example
# Delta on 4.2: a view declared with the format (the provider check differs per release)
# and the history table; the last good data, the several flows and the corpus on 4.1.
delta42="tests/test_table_formats_spark.py::test_a_view_declared_with_the_format_updates_again_and_again tests/test_table_formats_spark.py::test_the_history_table_is_written_and_read_in_the_format"
# The corpus projects whose pipelines routing rewrites on 4.1 and 4.2 (dropDuplicates), and
# one failing fourth update; the other projects run on the newest line (docs/testing.md).
corpus42="tests/test_corpus.py::test_every_table_after_each_of_three_updates[bike_rides] tests/test_corpus.py::test_every_table_after_each_of_three_updates[iot_devices] tests/test_corpus.py::test_every_table_after_each_of_three_updates[station_status] tests/test_corpus.py::test_a_fourth_update_that_violates_a_fail_rule[bike_rides]"
middle="$delta42 tests/test_versions.py tests/test_early_binding.py tests/test_routing_properties.py $corpus42 tests/test_companions.py tests/test_streaming.py tests/test_history.py $cold"
if [[ $mode == fast ]]; then
  default="$newest@pure or graph@explicit@@shared"
else
  # Every line shares one server between three workers, as the everyday run: the newest
  # runs every tier with the full hypothesis counts; 4.1 the pure and graph tiers and its
  # own true runs and the table formats' pipelines (Delta: no release for the newest line
  # yet; the corpus on Delta in place of parquet), explicit examples; 4.2 what it added and
  # Delta's graphs (docs/testing.md, "Lines").
  default="$newest@@full@@shared;~=4.1.0@(pure or graph or oldest_line or table_formats) and not slow and not corpus_parquet@explicit@@shared;~=4.2.0@@explicit@$middle@shared"
fi
specs=${SDPX_PYSPARK_SPECS:-$default}
mkdir -p test-results
rm -f test-results/pyspark-*.xml  # each run reports on its own lines only
counts="$PWD/test-results/tier-counts.jsonl"
: > "$counts"
status=0
first=1
began=$(date +%s)
IFS=';' read -r -a spec_list <<< "$specs"
# The environments of the later lines are made while the first line's tests run (one
# after another: two pip runs of one editable project at once could meet in its folder).
prepare_pid=""
# A hung line ends with its output and the next line runs, instead of CI's limit ending all.
line_limit=${SDPX_LINE_TIMEOUT:-45m}
limit_s=${line_limit%m}
if [[ $line_limit == *m ]]; then limit_s=$(( limit_s * 60 )); fi
# A line near its limit is hung: what it runs is written down before it is stopped, the
# tests in progress (tests/conftest.py notes them) and every JVM's and worker's stacks.
dump_hang() {  # $1: the line's pyspark version
  local out="test-results/hang-$1.txt"
  {
    echo "== the tests in progress, $(date -u +%H:%M:%S):"
    cat "$running"/*.txt 2>/dev/null || echo "  (none noted)"
    echo "== the processes of this clone:"
    ps -eo pid,etime,time,rss,args | grep -F -- "$PWD/" | grep -v grep | cut -c1-300 || true
    for pid in $(pgrep -f -- "$PWD/\.venv/.*(java|pytest|python)" || true); do
      echo "== stacks of $pid"
      if [[ $(ps -o comm= -p "$pid" 2>/dev/null) == java ]]; then
        timeout 60 jstack "$pid" 2>&1 || true
      elif command -v py-spy >/dev/null; then
        timeout 60 py-spy dump --pid "$pid" 2>&1 || true
      fi
    done
  } > "$out" 2>&1
  echo "== pyspark $1: $line_limit nearly spent; the tests in progress (stacks in $out):"
  cat "$running"/*.txt 2>/dev/null || echo "  (none noted)"
}
# Spark processes of this clone still alive after a line (a server a test did not stop)
# would slow every later line: each is named and ended.
end_leftovers() {
  local pids
  pids=$(pgrep -f -- "^[^ ]*java .*$PWD/" || true)
  if [[ -n $pids ]]; then
    echo "== JVMs left running by the line, ended:"
    ps -o pid,etime,time,args -p "${pids//$'\n'/,}" | cut -c1-200
    kill $pids 2>/dev/null || true
  fi
}
for entry in "${spec_list[@]}"; do
  IFS='@' read -r spec markers hypothesis paths servers <<< "$entry"
  if [[ $first == 0 && -n $prepare_pid ]]; then
    wait "$prepare_pid" || { echo "== making the later lines' environments failed:"; \
      cat test-results/venvs.log; exit 1; }
    prepare_pid=""
  fi
  if [[ ${servers:-shared} == shared ]]; then
    server=interpreted  # Spark without code generation: tests/conftest.py INTERPRETED
    shared=1            # the workers share one Spark Connect server (docs/testing.md)
    workers=${SDPX_WORKERS:-3}
  else
    server=default
    shared=0
    workers=${SDPX_WORKERS:-2}
  fi
  venv=$(scripts/venv.sh "$spec")
  if [[ $first == 1 && ${#spec_list[@]} -gt 1 ]]; then
    (for later in "${spec_list[@]:1}"; do scripts/venv.sh "${later%%@*}" >/dev/null; done) \
      > test-results/venvs.log 2>&1 &
    prepare_pid=$!
  fi
  version=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
  echo "== pyspark $version ($entry) in $venv"
  if [[ $first == 1 ]]; then
    first=0
    first_venv=$venv
    echo "== ruff"; "$venv/bin/ruff" check sdp_expect tests scripts examples benchmarks || status=1
    echo "== mypy"; "$venv/bin/mypy" || status=1
    echo "== import-linter (the layers of docs/architecture.md)"
    "$venv/bin/lint-imports" || status=1
  fi
  # A test that reaches its pytest-timeout limit runs once more (its stacks are printed
  # below); a worker ended because the limit's signal could not stop its test
  # (tests/conftest.py) is not replaced: pytest-xdist 3.8's loadfile scheduling can wait
  # forever after a replacement (pytest-xdist issue 784; the 4.1 line of CI's run of 7 Dec
  # 2026 spent its 45 minutes so). docs/testing.md, "The matrix".
  args=(-n "$workers" --dist loadfile --max-worker-restart 0
        --reruns 1 --only-rerun "from pytest-timeout"
        --junitxml "test-results/pyspark-$version.xml")
  if [[ -n $markers ]]; then args+=(-m "$markers"); fi
  read -r -a path_list <<< "${paths:-}"
  echo "== pytest ${args[*]} $* ${path_list[*]}"
  line_began=$(date +%s)
  rc=0
  running="$PWD/test-results/running"  # tests/conftest.py: each worker's test in progress
  rm -rf "$running" && mkdir -p "$running"
  (trap 'kill "$nap" 2>/dev/null; exit 0' TERM
   sleep $(( limit_s > 300 ? limit_s - 180 : limit_s / 2 )) > /dev/null 2>&1 & nap=$!
   wait "$nap" && dump_hang "$version") &
  watch_pid=$!
  PATH="$PWD/$venv/bin:$PATH" SDPX_HYPOTHESIS="${hypothesis:-full}" SDPX_TIER_COUNTS="$counts" \
    SDPX_RUNNING="$running" \
    SDPX_SERVER="$server" SDPX_SHARED_SERVER="$shared" \
    timeout --kill-after=60 "$line_limit" \
    "$venv/bin/python" -m pytest "${args[@]}" "$@" "${path_list[@]}" || rc=$?
  kill "$watch_pid" 2>/dev/null || true
  wait "$watch_pid" 2>/dev/null || true
  end_leftovers
  for stacks in "$running"/*-stacks.txt; do  # tests near their time limit (conftest.py)
    if [[ -f $stacks ]]; then echo "== $(head -1 "$stacks" | cut -c4-):"; sed -n '2,120p' "$stacks"; fi
  done
  if [[ $rc == 124 || $rc == 137 ]]; then
    echo "== pyspark $version: the line did not end within $line_limit (SDPX_LINE_TIMEOUT)"
    echo "== the tests still running then:"
    cat "$running"/*.txt 2>/dev/null || echo "  (none noted)"
  fi
  # 5: the arguments chose no test on this line (e.g. -k for a file another line runs).
  if [[ $rc != 0 && $rc != 5 ]]; then status=1; fi
  echo "== pyspark $version: pytest exit $rc in $(( $(date +%s) - line_began )) s"
done
echo "== tier counts (tests/conftest.py), per line:"
"${venv:-.venv}/bin/python" - "$counts" <<'EOF'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    entry = json.loads(line)
    print(f"  pyspark {entry['pyspark']}: " + " · ".join(
        f"{tier} " + (", ".join(f"{n} {o}" for o, n in outcomes.items()) or "0")
        for tier, outcomes in entry["tiers"].items()))
EOF
if [[ $mode == all ]]; then
  # The tests that no line ran (scripts/unrun_tests.py): a gate for the matrix as CI runs
  # it (the default lines, no pytest arguments), a report when lines or tests are chosen.
  echo "== tests run on no line (collected on the first line, without -m):"
  PATH="$PWD/$first_venv/bin:$PATH" "$first_venv/bin/python" -m pytest --collect-only \
    -o addopts="" -q -p no:cacheprovider tests 2>/dev/null > test-results/collected.txt || true
  if ! "$first_venv/bin/python" scripts/unrun_tests.py test-results/collected.txt \
      test-results/pyspark-*.xml; then
    if [[ -z ${SDPX_PYSPARK_SPECS:-} && $# == 0 ]]; then status=1; fi
  fi
fi
echo "== done in $(( $(date +%s) - began )) s, status $status"
exit $status
