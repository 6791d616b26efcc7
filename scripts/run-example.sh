#!/usr/bin/env bash
# Usage: scripts/run-example.sh [spark41|spark42|sql]
# (sql: the Databricks SQL example, on pyspark 4.1.x like spark41)
# Installs what the example needs (a virtual environment under .venv/), runs the
# example pipeline with spark-pipelines on embedded local Spark, and prints the
# tables it produced. Run it again: the catalog persists between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
example=${1:-spark41}
case "$example" in
  spark41|sql) spec="~=4.1.0" ;;
  *) spec=">=4.1,<5" ;;
esac
venv=$(scripts/venv.sh "$spec")
export PATH="$PWD/$venv/bin:$PATH"
cd "examples/$example"
echo "== spark-pipelines run in examples/$example (pyspark $(python -c 'import pyspark; print(pyspark.__version__)'))"
spark-pipelines --conf spark.sql.catalogImplementation=hive run
python ../../scripts/show_tables.py .
