#!/usr/bin/env bash
# Usage: scripts/venv.sh SPEC [EXTRAS] — prints the path of a virtual environment
# with sdp-expect (editable, with the extras EXTRAS, default "test,lint"; "" for
# none) and pyspark SPEC installed, creating it on first use. SPEC is a pip
# version specifier:
#   "~=4.1.0"   the newest 4.1.x (the lowest Spark sdp-expect supports)
#   "~=4.2.0"   the newest 4.2.x
#   ">=4.3,<5"  the newest 4.x
set -euo pipefail
cd "$(dirname "$0")/.."
spec="$1"
extras=${2-test,lint}
python=${PYTHON:-python3}
slug=$(printf '%s' "$spec" | tr -c 'A-Za-z0-9.' '_')
venv=".venv/pyspark$slug"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv" >&2
fi
# pip's warnings about package-index folders this machine lacks are noise here.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "pyspark[pipelines]$spec" -e ".${extras:+[$extras]}" 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; } >&2
echo "$venv"
