#!/usr/bin/env bash
# Everything the interop tests need, pinned, from the package registries:
#   npm:  interop/ (TypeScript SDK 1.32.2, server-everything, ext-tasks 0.2.2 and its
#         peer @modelcontextprotocol/client 2.3.1, playwright-core) and interop/inspector/
#         (MCP Inspector 2.12.0), each by its package-lock.json;
#   PyPI: target/venv-fastmcp4 (fastmcp[tasks]==4.1.4) and target/venv-mcp1 (mcp==1.30.0),
#         by interop/python/constraints-*.txt.
#
#   interop/setup.sh          # idempotent; CI runs it before the tests
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
npm ci --prefix "$here" --no-audit --no-fund
npm ci --prefix "$here/inspector" --no-audit --no-fund
"$here/python/setup.sh"
