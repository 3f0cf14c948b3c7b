#!/usr/bin/env bash
# The whole test suite: Rust unit and integration tests (nextest), doc tests, benchmarks in
# test mode, and the interop tests against the official TypeScript SDK and MCP Inspector.
# Needs: Rust (cargo-nextest if present), Node 20 + npm (for interop/), PostgreSQL on
# 127.0.0.1:5432 for the PostgreSQL store tests when that store is built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== npm packages of the interop tests (pinned by their package-lock.json)"
# The Rust tests drive the official TypeScript SDK, server-everything and the Inspector
# too; with the packages in place, a missing one fails those tests instead of skipping them.
# (playwright-core drives Debian's chromium for the dashboard's browser test.)
for dir in interop interop/inspector; do
  if [ ! -d "$dir/node_modules" ] || { [ "$dir" = interop ] && [ ! -d interop/node_modules/playwright-core ]; }; then
    npm ci --prefix "$dir" --no-audit --no-fund
  fi
done
export MCP_TASKS_REQUIRE_INTEROP=1

echo "== build"
cargo build --workspace --all-targets --locked

echo "== rust tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --lib --bins --tests --examples --locked --no-fail-fast
else
  cargo test --workspace --lib --bins --tests --examples --locked --no-fail-fast
fi
cargo test --workspace --doc --locked

echo "== benchmarks, in test mode (each benchmark runs once)"
cargo test --workspace --benches --locked

echo "== interop (TypeScript SDK)"
MCP_TASKS_BIN="$PWD/target/debug/mcp-tasks" interop/run.sh
