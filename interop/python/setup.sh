#!/usr/bin/env bash
# Python peers of the interop tests, each in a venv under target/ (pinned, from PyPI):
#   target/venv-fastmcp4  fastmcp[tasks]==4.1.4  (constraints-fastmcp4.txt)
#     for crates/cli/tests/it/interop_fastmcp.rs (a 2026-07-28 client with the tasks extension)
#   target/venv-mcp1      mcp==1.30.0            (constraints-mcp1.txt)
#     for the same file's legacy smoke test (the Python SDK 1.x speaks only 2025-11-25)
#
#   interop/python/setup.sh        # creates what is missing or out of date; idempotent
#
# Needs python3 (>= 3.10) with the venv module. A venv is rebuilt when its constraints
# file changed since it was made.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"

make_venv() {
  local name="$1" requirement="$2" constraints="$here/$3"
  local venv="$repo/target/$name"
  if [ -x "$venv/bin/python" ] && cmp -s "$constraints" "$venv/.constraints"; then
    return 0
  fi
  echo "interop/python: creating target/$name ($requirement)" >&2
  mkdir -p "$repo/target"
  "$python" -m venv --clear "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    "$requirement" -c "$constraints"
  cp "$constraints" "$venv/.constraints"
}

make_venv venv-fastmcp4 'fastmcp[tasks]==4.1.4' constraints-fastmcp4.txt
make_venv venv-mcp1 'mcp==1.30.0' constraints-mcp1.txt
