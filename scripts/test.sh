#!/usr/bin/env bash
# The whole test suite, from a fresh clone: first scripts/setup.sh installs and starts
# what the tests need (Debian packages, PostgreSQL, cargo-nextest, the interop peers, the
# conformance suite) and says what it cannot; then the Rust unit and integration tests
# (nextest), doc tests, benchmarks in test mode, the interop tests against the official
# TypeScript SDK, and the conformance suite.
#
#   scripts/test.sh
#   MCP_TASKS_SKIP_SETUP=1 scripts/test.sh    # everything is in place: skip the setup
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ -z "${MCP_TASKS_SKIP_SETUP:-}" ]; then
  echo "== setup (scripts/setup.sh)"
  if ! scripts/setup.sh; then
    echo "scripts/test.sh: the setup is incomplete (see above); the tests that need what is missing will fail" >&2
  fi
fi
# With the interop packages in place, a missing one fails the tests that drive it instead
# of skipping them.
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

echo "== conformance (the official MCP conformance suite against the SDK's example)"
CONFORMANCE_BIN="$PWD/target/debug/examples/conformance" interop/conformance/run.sh

echo "== instruction-count guard (callgrind, against bench/baseline/instructions.json)"
GUARD_REQUIRE_PG=1 bench/guard.sh
