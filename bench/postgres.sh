#!/usr/bin/env bash
# bench/postgres.sh: mcp-tasks bench against one and three replicas on PostgreSQL.
# Usage: bench/postgres.sh [OUT_DIR]   (needs target/release/mcp-tasks and PostgreSQL at
# $PG_ADMIN, default postgres://postgres@127.0.0.1:5432/postgres; psql on the PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/mcp-tasks}
ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
DURATION=${DURATION:-10s}
OUT=${1:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-postgres}
mkdir -p "$OUT"
export MCP_TASKS_AUTH_TOKENS="tok-bench bench"
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

fresh_db() {
  local db="mcp_tasks_bench_$$_$1"
  psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
  echo "$db"
}
commits() { psql "$ADMIN" -Atc "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$1'"; }
# serve PORT URL [ARGS...]: start a replica, wait until it listens; its pid in $SERVED.
serve() {
  local port=$1 url=$2; shift 2
  "$BIN" serve --listen "127.0.0.1:$port" --store "$url" "$@" 2>>"$OUT/serve-$port.log" &
  SERVED=$!; PIDS+=("$SERVED")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && return; sleep 0.1; done
  echo "replica on $port did not start" >&2; exit 1
}
bench() { "$BIN" bench --token tok-bench --duration "$DURATION" --json "$@"; }
stop_all() { cleanup; wait 2>/dev/null || true; PIDS=(); }

for variant in default unlimited; do
  extra=(); [ "$variant" = unlimited ] && extra=(--max-store-bytes unlimited)
  # One replica.
  db=$(fresh_db "one_$variant"); url="postgres://postgres@127.0.0.1:5432/$db?pool=16"
  serve 18081 "$url" "${extra[@]}"
  bench --url http://127.0.0.1:18081/mcp -s create -c 16 --server-pid "$SERVED" >"$OUT/one-$variant-create.json"
  bench --url http://127.0.0.1:18081/mcp -s get -c 16 -k 1000 --server-pid "$SERVED" >"$OUT/one-$variant-get.json"
  bench --url http://127.0.0.1:18081/mcp -s result-wait -c 16 --server-pid "$SERVED" >"$OUT/one-$variant-result-wait.json"
  stop_all
  # Three replicas, each with its own load generator (clients 6 + 5 + 5 = 16).
  db=$(fresh_db "three_$variant"); url="postgres://postgres@127.0.0.1:5432/$db?pool=10"
  for port in 18081 18082 18083; do serve $port "$url" "${extra[@]}"; done
  for s in create get; do
    k=(); [ $s = get ] && k=(-k 1000)
    bench --url http://127.0.0.1:18081/mcp -s $s -c 6 "${k[@]}" >"$OUT/three-$variant-$s-a.json" &
    bench --url http://127.0.0.1:18082/mcp -s $s -c 5 "${k[@]}" >"$OUT/three-$variant-$s-b.json" &
    bench --url http://127.0.0.1:18083/mcp -s $s -c 5 "${k[@]}" >"$OUT/three-$variant-$s-c.json" &
    wait %1 %2 %3 2>/dev/null || wait
  done
  stop_all
done

# Round trips: database transactions per operation (each statement outside a
# transaction is one; pg_stat_database counts them), idle background work subtracted.
db=$(fresh_db rt); url="postgres://postgres@127.0.0.1:5432/$db?pool=4"
serve 18081 "$url" --metrics-principal bench
sleep 3; c0=$(commits "$db"); sleep 10; c1=$(commits "$db")
idle_per_s=$(( (c1 - c0) / 10 ))
for s in create get; do
  k=(); [ $s = get ] && k=(-k 100)
  sleep 2; before=$(commits "$db"); t0=$(date +%s)
  "$BIN" bench --token tok-bench --url http://127.0.0.1:18081/mcp -s $s -c 4 -n 5000 --warmup 0s "${k[@]}" --json >"$OUT/rt-$s.json"
  sleep 2; after=$(commits "$db"); t1=$(date +%s)
  curl -s -H "Authorization: Bearer tok-bench" http://127.0.0.1:18081/metrics | grep -E '^mcp_tasks_store_operation_duration_seconds_count' >"$OUT/store-ops-after-$s.txt" || true
  echo "$s: $(( after - before )) transactions for 5000 ops (+ seeding), idle $idle_per_s/s over $(( t1 - t0 )) s" | tee -a "$OUT/round-trips.txt"
done
stop_all
for d in $(psql "$ADMIN" -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'mcp_tasks_bench_$$_%'"); do
  psql "$ADMIN" -qc "DROP DATABASE $d WITH (FORCE)"
done
echo "results in $OUT"
