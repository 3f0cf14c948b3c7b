#!/usr/bin/env bash
# Everything the interop tests need, pinned, from the package registries:
#   npm:  interop/ (TypeScript SDK 1.32.2, server-everything, ext-tasks 0.2.2 and its
#         peer @modelcontextprotocol/client 2.3.1, playwright-core) and interop/inspector/
#         (MCP Inspector 2.12.0), each by its package-lock.json;
#   PyPI: target/venv-fastmcp4 (fastmcp[tasks]==4.1.4) and target/venv-mcp1 (mcp==1.30.0),
#         by interop/python/constraints-*.txt.
#
#   interop/setup.sh          # idempotent; scripts/setup.sh (so scripts/test.sh) runs it
#
# `npm ci` runs for a folder whose node_modules is missing or older than its
# package-lock.json (npm ci's own record, node_modules/.package-lock.json, is the mark).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for dir in "$here" "$here/inspector"; do
  mark="$dir/node_modules/.package-lock.json"
  if [ ! -f "$mark" ] || [ "$dir/package-lock.json" -nt "$mark" ]; then
    npm ci --prefix "$dir" --no-audit --no-fund
  fi
done
"$here/python/setup.sh"
