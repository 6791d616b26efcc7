#!/usr/bin/env bash
# Usage: scripts/run-example.sh [spark41|spark42|sql|delta]
# (sql: the Databricks SQL example, on pyspark 4.1.x like spark41; delta: the example on
# Delta Lake, on pyspark 4.1.x, whose jars sdp-expect run fetches once into its cache)
# Installs what running needs (pyspark and sdp-expect in a virtual environment
# under .venv/, no test or lint tools), runs the example pipeline with
# `sdp-expect run` on embedded local Spark (its events, then the data-quality
# summary), and prints the tables it produced. Run it again: the catalog
# persists between runs (sdp-expect run keeps it in the example's folder).
set -euo pipefail
cd "$(dirname "$0")/.."
example=${1:-spark41}
case "$example" in
  spark41|sql|delta) spec="~=4.1.0" ;;
  *) spec=">=4.1,<5" ;;
esac
venv=$(scripts/venv.sh "$spec" "")
export PATH="$PWD/$venv/bin:$PATH"
cd "examples/$example"
echo "== sdp-expect run in examples/$example (pyspark $(python -c 'import pyspark; print(pyspark.__version__)'))"
status=0
first=()
if [ ! -d metastore_db ]; then
  # The example's storage (under /tmp) outlives this clone: a first run here refreshes
  # every table, so that no checkpoint of another clone's run is resumed (SDPX-PRJ-409).
  first=(--full-refresh-all)
  echo "== a first run in this folder: sdp-expect run --full-refresh-all"
fi
sdp-expect run "${first[@]}" || status=$?
echo "== the tables"
# Spark's own start-up lines (JVM and log4j warnings) are shown only if reading fails.
log=$(mktemp)
if ! python ../../scripts/show_tables.py . 2>"$log"; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
exit $status
