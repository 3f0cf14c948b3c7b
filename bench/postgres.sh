#!/usr/bin/env bash
# bench/postgres.sh: mcp-tasks bench against one and three replicas on PostgreSQL, and
# against the default SQLite store in the same session for comparison.
#
#   bench/postgres.sh [OUT_DIR]
#   DURATION=5s bench/postgres.sh            # shorter runs
#   PARTS="rt" bench/postgres.sh             # only some parts: sqlite one three rt wake
#
# Needs target/release/mcp-tasks (or $BIN), psql and curl on the PATH, jq, and
# PostgreSQL at $PG_ADMIN (default postgres://postgres@127.0.0.1:5432/postgres) with the
# right to create databases. Each part gets a fresh database, dropped at the end.
#
# Every server runs without the per-requester quotas (one principal creates more than the
# default 10,000 stored tasks in a run, as in bench/compare.sh). Two variants on
# PostgreSQL: `default` keeps the default --max-store-bytes (every creation and completion
# takes the store-wide advisory lock, see ADR 0004), `unlimited` turns that bound off.
# No CPU pinning: PostgreSQL shares the machine's cores with the servers and the load
# generator, so the figures are what one machine running everything gives.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/mcp-tasks}
ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
PG_BASE=${ADMIN%/*}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
OUT=${1:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-postgres}
mkdir -p "$OUT"
TOKEN=tok-bench
export MCP_TASKS_AUTH_TOKENS="$TOKEN bench"
export RUST_LOG=${RUST_LOG:-warn}
NO_QUOTAS=(--max-stored-tasks unlimited --max-stored-bytes unlimited)
PIDS=()
TMP=$(mktemp -d)
PREFIX="mcp_tasks_bench_$$"
PARTS=${PARTS:-sqlite one three rt wake}
part() { [[ " $PARTS " == *" $1 "* ]]; }

cleanup() {
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] && wait "$p" 2>/dev/null || true
    done
    PIDS=()
}
drop_dbs() {
    for d in $(psql "$ADMIN" -Atc "SELECT datname FROM pg_database WHERE datname LIKE '${PREFIX}_%'"); do
        psql "$ADMIN" -qc "DROP DATABASE $d WITH (FORCE)" >/dev/null || true
    done
}
trap 'cleanup; drop_dbs; rm -rf "$TMP"' EXIT

fresh_db() {
    local db="${PREFIX}_$1"
    psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
    psql "$ADMIN" -qc "CREATE DATABASE $db" >/dev/null
    echo "$db"
}
# Transactions of database $1 so far (every statement outside an explicit transaction
# is one). The statistics collector lags by up to 500 ms: callers sleep first.
commits() { psql "$ADMIN" -Atc "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$1'"; }

# serve PORT STORE [ARGS...]: start a server, wait until /readyz answers; pid in $SERVED.
serve() {
    local port=$1 store=$2
    shift 2
    XDG_DATA_HOME=$TMP "$BIN" serve --listen "127.0.0.1:$port" --store "$store" \
        "${NO_QUOTAS[@]}" "$@" 2>>"$OUT/serve-$port.log" &
    SERVED=$!
    PIDS+=("$SERVED")
    for _ in $(seq 300); do
        if curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; then return 0; fi
        if ! kill -0 "$SERVED" 2>/dev/null; then
            echo "the server on $port exited:" >&2
            cat "$OUT/serve-$port.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "the server on $port did not become ready" >&2
    exit 1
}
# bench FILE ARGS...: one run, JSON to FILE; a run with errors is kept and reported.
bench() {
    local file=$1
    shift
    if ! "$BIN" bench --token "$TOKEN" --duration "$DURATION" --warmup "$WARMUP" --json "$@" \
        >"$file" 2>>"$OUT/bench.log"; then
        echo "   (errors in $file: $(jq -c '.errors.by_class | map_values(.count)' "$file" 2>/dev/null))"
    fi
}
line() {
    jq -r --arg n "$1" '"\($n): \(.figure.name) \(.figure.value) (p50 \(.ops[.scenario | if . == "create" then "tools/call" else "tasks/get" end].p50_ms) ms, p99 \(.ops[.scenario | if . == "create" then "tools/call" else "tasks/get" end].p99_ms) ms), errors \(.errors.total), server CPU \(.cpu.server_us_per_op // "-") us/op"' "$2" \
        | tee -a "$OUT/summary.txt"
}

echo "== $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); load: $(uptime)" | tee "$OUT/summary.txt"

# SQLite, default store (synchronous=FULL) in a temporary directory, same flags.
if part sqlite; then
    serve 18081 "sqlite:$TMP/bench.db"
    bench "$OUT/sqlite-create.json" --url http://127.0.0.1:18081/mcp -s create -c 16 --server-pid "$SERVED"
    line "sqlite create" "$OUT/sqlite-create.json"
    bench "$OUT/sqlite-get.json" --url http://127.0.0.1:18081/mcp -s get -c 16 -k 1000 --server-pid "$SERVED"
    line "sqlite get" "$OUT/sqlite-get.json"
    cleanup
fi

for variant in default unlimited; do
    extra=()
    if [ "$variant" = unlimited ]; then extra=(--max-store-bytes unlimited); fi
    # One replica.
    if part one; then
    db=$(fresh_db "one_$variant")
    serve 18081 "$PG_BASE/$db?pool=16" "${extra[@]}"
    for s in create get result-wait; do
        k=()
        if [ "$s" = get ]; then k=(-k 1000); fi
        bench "$OUT/one-$variant-$s.json" --url http://127.0.0.1:18081/mcp -s "$s" -c 16 "${k[@]}" --server-pid "$SERVED"
        if [ "$s" = result-wait ]; then
            jq -r '"one '"$variant"' result-wait: lateness p50 \(.ops["result-lateness"].p50_ms) ms, p99 \(.ops["result-lateness"].p99_ms) ms, errors \(.errors.total)"' \
                "$OUT/one-$variant-$s.json" | tee -a "$OUT/summary.txt"
        else
            line "one $variant $s" "$OUT/one-$variant-$s.json"
        fi
    done
    cleanup
    fi
    # Three replicas on one database, each driven by its own load generator
    # (6 + 5 + 5 = 16 clients); the three throughputs add up.
    if part three; then
    db=$(fresh_db "three_$variant")
    for port in 18081 18082 18083; do serve "$port" "$PG_BASE/$db?pool=10" "${extra[@]}"; done
    for s in create get; do
        k=()
        if [ "$s" = get ]; then k=(-k 1000); fi
        runs=()
        i=0
        for port in 18081 18082 18083; do
            c=5
            if [ $i = 0 ]; then c=6; fi
            bench "$OUT/three-$variant-$s-$port.json" --url "http://127.0.0.1:$port/mcp" -s "$s" -c "$c" "${k[@]}" &
            runs+=($!)
            i=$((i + 1))
        done
        for r in "${runs[@]}"; do wait "$r" || true; done
        jq -s -r '"three '"$variant"' '"$s"': \(map(.figure.value) | add | . * 100 | round / 100) \(.[0].figure.name) in all (\(map(.figure.value) | map(tostring) | join(" + "))), errors \(map(.errors.total) | add)"' \
            "$OUT"/three-"$variant"-"$s"-*.json | tee -a "$OUT/summary.txt"
    done
    cleanup
    fi
done

# Wake-up across replicas: two replicas on one database; result-wait (16 clients, 100 ms
# of work) creates each task on A and waits for its tasks/result either on A too
# (`same`) or on B (`cross`, --wait-url), alternating, ROUNDS times. The difference of the
# lateness (result arrival - (creation sent + work)) is what crossing replicas costs.
if part wake; then
    db=$(fresh_db wake)
    serve 18081 "$PG_BASE/$db?pool=10"
    serve 18082 "$PG_BASE/$db?pool=10"
    for round in $(seq "${ROUNDS:-3}"); do
        for where in same cross; do
            w=(--wait-url http://127.0.0.1:18081/mcp)
            if [ "$where" = cross ]; then w=(--wait-url http://127.0.0.1:18082/mcp); fi
            bench "$OUT/wake-$where-$round.json" --url http://127.0.0.1:18081/mcp "${w[@]}" -s result-wait -c 16 --work-ms 100
            jq -r --arg n "wake $where $round" '"\($n): lateness p50 \(.ops["result-lateness"].p50_ms) ms, p90 \(.ops["result-lateness"].p90_ms) ms, p99 \(.ops["result-lateness"].p99_ms) ms, \(.ops["result-lateness"].count) results, errors \(.errors.total)"' \
                "$OUT/wake-$where-$round.json" | tee -a "$OUT/summary.txt"
        done
    done
    cleanup
fi

# Round trips: database transactions per operation (every statement the store sends
# outside an explicit transaction is one, and pg_stat_database counts them), the idle
# background rate of the replica subtracted. A backend reports its counts when it has
# been idle for up to 10 s (PostgreSQL 15: PGSTAT_IDLE_INTERVAL), hence the long pauses
# before each reading. The replica's own store-operation counters (/metrics) say which
# operations the requests made.
if part rt; then
    db=$(fresh_db rt)
    serve 18081 "$PG_BASE/$db?pool=4" --metrics-principal bench
    sleep 12
    c0=$(commits "$db")
    sleep 20
    c1=$(commits "$db")
    idle_x20=$((c1 - c0)) # per 20 s
    echo "round trips: idle background $idle_x20 transactions per 20 s" | tee -a "$OUT/round-trips.txt"
    SEEDED=100
    create_x1000=0
    for s in create get; do
        k=()
        n=2000
        if [ "$s" = get ]; then k=(-k "$SEEDED"); n=5000; fi
        before=$(commits "$db")
        t0=$(date +%s%N)
        "$BIN" bench --token "$TOKEN" --url http://127.0.0.1:18081/mcp -s "$s" -c 4 -n "$n" --warmup 0s "${k[@]}" --json >"$OUT/rt-$s.json" || true
        sleep 12
        t1=$(date +%s%N)
        after=$(commits "$db")
        ms=$(((t1 - t0) / 1000000))
        idle=$((idle_x20 * ms / 20000))
        delta=$((after - before - idle))
        curl -s -H "Authorization: Bearer $TOKEN" http://127.0.0.1:18081/metrics |
            grep -E '^mcp_tasks_store_operation_duration_seconds_count' >"$OUT/store-ops-after-$s.txt" || true
        if [ "$s" = create ]; then
            create_x1000=$((delta * 1000 / n))
            echo "create: $((after - before)) transactions for $n creations (each completed), idle ~$idle over $ms ms: $(echo "scale=2; $delta / $n" | bc) per creation with its completion" | tee -a "$OUT/round-trips.txt"
        else
            seeding=$((SEEDED * create_x1000 / 1000))
            echo "get: $((after - before)) transactions for $n tasks/get + $SEEDED creations, idle ~$idle over $ms ms: $(echo "scale=2; ($delta - $seeding) / $n" | bc) per tasks/get" | tee -a "$OUT/round-trips.txt"
        fi
        sed 's/^/   /' "$OUT/store-ops-after-$s.txt" | tee -a "$OUT/round-trips.txt"
    done
    cleanup
    # What this PostgreSQL commits at 16 clients right now, one single-row INSERT per
    # transaction (pgbench, 5 s): the ceiling for anything that commits per operation.
    if command -v pgbench >/dev/null; then
        psql "$PG_BASE/$db" -qc "CREATE TABLE IF NOT EXISTS pgb (x int)" >/dev/null
        echo "INSERT INTO pgb VALUES (1);" >"$TMP/pgb.sql"
        pgbench -n -c 16 -j 2 -T 5 -f "$TMP/pgb.sql" "$PG_BASE/$db" 2>/dev/null |
            grep -E "^tps|latency average" | sed 's/^/pgbench 16 clients, 1 INSERT per commit: /' | tee -a "$OUT/round-trips.txt"
    fi
fi
echo "== $(date -u +%FT%TZ) load: $(uptime)" | tee -a "$OUT/summary.txt"
if [ -f "$OUT/round-trips.txt" ]; then cat "$OUT/round-trips.txt" >>"$OUT/summary.txt"; fi
echo "results in $OUT"
