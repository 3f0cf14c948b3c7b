#!/usr/bin/env bash
# Interop tests: the official TypeScript MCP SDK client (@modelcontextprotocol/sdk, pinned)
# against `mcp-tasks serve --stdio --store memory`.
#
#   interop/run.sh                      # uses $MCP_TASKS_BIN, else <repo>/target/debug/mcp-tasks
#   MCP_TASKS_BIN=/path/to/mcp-tasks interop/run.sh
#   interop/run.sh --test-name-pattern='cancel'   # extra args go to `node --test`
#
# Exits non-zero when any test fails. Node's test runner prints its summary
# ("ℹ tests N", "ℹ pass N", "ℹ fail N") at the end.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$here"

if [ ! -d node_modules/@modelcontextprotocol/sdk ]; then
  echo "interop: installing the pinned npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund
fi

if [ -z "${MCP_TASKS_BIN:-}" ]; then
  export MCP_TASKS_BIN="$repo/target/debug/mcp-tasks"
  if [ ! -x "$MCP_TASKS_BIN" ]; then
    echo "interop: $MCP_TASKS_BIN missing, building it (cargo build -p mcp-tasks)" >&2
    (cd "$repo" && cargo build -p mcp-tasks)
  fi
fi
if [ ! -x "$MCP_TASKS_BIN" ]; then
  echo "interop: server binary $MCP_TASKS_BIN is not executable" >&2
  exit 1
fi
echo "interop: server $MCP_TASKS_BIN; SDK $(node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version' 2>/dev/null || echo '?')" >&2

if [ "$#" -eq 0 ]; then
  npm test
else
  # Options must precede the test path for Node 20's runner.
  node --test --test-concurrency=1 --test-reporter=spec "$@" test/
fi
