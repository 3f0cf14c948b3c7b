#!/usr/bin/env bash
# Side-by-side load test: our server (release build, default durable SQLite store in a
# temporary directory) against the TypeScript SDK 1.32.2's task server (McpServer +
# experimental.tasks.registerToolTask + InMemoryTaskStore, bench/ts-server/server.mjs),
# driven by `mcp-tasks bench`.
#
# The server under test runs on CPU $SERVER_CPU, the load generator on CPU $LOAD_CPU
# (taskset). Every scenario runs $RUNS times, the two servers in turn (alternating which
# goes first), each time on a freshly started server; figures are the medians. Raw JSON of
# every run goes to bench/results/<UTC time>/; the summary is printed and written into
# docs/performance.md (between the `results` markers; the rest of the file is kept).
#
#   bench/compare.sh                 # the full comparison (about 25 minutes)
#   RUNS=1 DURATION=3s LIST_BIG=20000 bench/compare.sh    # a quick look
#
# Needs: cargo, node >= 18 with npm (the SDK is installed from the npm registry with the
# committed package-lock.json), taskset (util-linux), jq is not needed.
set -euo pipefail

# The exact command, with the settings given in the environment.
COMMAND=""
for v in RUNS DURATION WARMUP LIST_BIG RSS_REQUESTS SERVER_CPU LOAD_CPU; do
    if [ -n "${!v+x}" ]; then COMMAND="$COMMAND$v=${!v} "; fi
done
COMMAND="${COMMAND}bench/compare.sh"

cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
LIST_BIG=${LIST_BIG:-1000000}
RSS_REQUESTS=${RSS_REQUESTS:-20000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PORT_OURS=${PORT_OURS:-18931}
PORT_TS=${PORT_TS:-18932}
TOKEN=bench-token
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$ROOT/bench/results/$STAMP}

# Server logs (our server logs every task at info level: megabytes per run) are kept out of
# the results and deleted when their server stopped cleanly.
LOGS=$(mktemp -d)
mkdir -p "$OUT"
echo "== results in $OUT (server logs in $LOGS while they run)"

echo "== installing the TypeScript SDK (bench/ts-server)"
(cd bench/ts-server && npm ci --no-audit --no-fund --loglevel=error)

echo "== building our server (release)"
cargo build --release -p mcp-tasks
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/mcp-tasks

SPID=""
SLOG=""
URL=""
STORE_DIR=""

# start_server ours|ts NAME: a fresh server pinned to $SERVER_CPU; sets SPID and URL.
# Ours without storage quotas: one principal creates more than the default 10,000 stored
# tasks in a run (the TS server has no such limit either).
start_server() {
    local which=$1 name=$2 log="$LOGS/$2.$1.log"
    SLOG=$log
    if [ "$which" = ours ]; then
        STORE_DIR=$(mktemp -d)
        XDG_DATA_HOME=$STORE_DIR MCP_TASKS_AUTH_TOKENS="$TOKEN bench" \
            taskset -c "$SERVER_CPU" "$BIN" serve --listen "127.0.0.1:$PORT_OURS" \
            --max-stored-tasks unlimited --max-stored-bytes unlimited \
            --max-store-bytes unlimited 2>"$log" &
        SPID=$!
        URL="http://127.0.0.1:$PORT_OURS/mcp"
    else
        taskset -c "$SERVER_CPU" node bench/ts-server/server.mjs "$PORT_TS" 2>"$log" &
        SPID=$!
        URL="http://127.0.0.1:$PORT_TS/mcp"
    fi
    for _ in $(seq 1 300); do
        if grep -q "listening on" "$log" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$SPID" 2>/dev/null; then
            echo "the $which server exited:" >&2
            cat "$log" >&2
            SPID=""
            exit 1
        fi
        sleep 0.1
    done
    echo "the $which server did not start" >&2
    exit 1
}

stop_server() {
    if [ -n "$SPID" ]; then
        kill "$SPID" 2>/dev/null || true
        wait "$SPID" 2>/dev/null || true
        rm -f "$SLOG"
    fi
    SPID=""
    if [ -n "$STORE_DIR" ]; then
        rm -rf "$STORE_DIR"
        STORE_DIR=""
    fi
}
trap 'stop_server; rmdir "$LOGS" 2>/dev/null || true' EXIT

# bench FILE ARGS...: one run of the load generator, pinned to $LOAD_CPU, JSON to FILE.
bench() {
    local file=$1
    shift
    if ! taskset -c "$LOAD_CPU" "$BIN" bench --url "$URL" --token "$TOKEN" \
        --server-pid "$SPID" --json "$@" >"$file" 2>>"$OUT/bench.log"; then
        echo "   (the run saw errors; they are counted in $file)"
    fi
}

# scenario NAME ARGS...: one fresh server of each kind, in the order given by $ORDER.
scenario() {
    local name=$1
    shift
    for which in $ORDER; do
        start_server "$which" "run$RUN-$name"
        echo "-- run $RUN $name $which"
        bench "$OUT/run$RUN-$which-$name.json" "$@"
        stop_server
    done
}

echo "== load: $(uptime)" | tee "$OUT/load-before.txt"
for RUN in $(seq 1 "$RUNS"); do
    if [ $((RUN % 2)) = 1 ]; then ORDER="ts ours"; else ORDER="ours ts"; fi
    scenario create -s create -c 16 -d "$DURATION" --warmup "$WARMUP"
    scenario get -s get -c 16 -k 1000 -d "$DURATION" --warmup "$WARMUP"
    scenario lifecycle -s lifecycle -c 64 --work-ms 100 --poll-ms 50 -d "$DURATION" --warmup "$WARMUP"
    scenario lifecycle-poll-interval -s lifecycle-poll-interval -c 64 --work-ms 100 -d "$DURATION" --warmup "$WARMUP"
    scenario result-wait -s result-wait -c 16 --work-ms 100 -d "$DURATION" --warmup "$WARMUP"
    scenario list-1k -s list -c 1 -k 1000 -d "$DURATION" --warmup "$WARMUP"
    scenario list-10k -s list -c 1 -k 10000 -d "$DURATION" --warmup "$WARMUP"
    # Peak RSS for the same number of requests: N task creations on a fresh server.
    scenario rss -s create -c 16 -n "$RSS_REQUESTS" --warmup 0
done

# A page at $LIST_BIG stored tasks (ours): create them once through the protocol (this is
# also task creation at a growing store), then page through them $RUNS times.
RUN=big
start_server ours "list-big"
echo "-- creating $LIST_BIG tasks"
bench "$OUT/once-ours-create-big.json" -s create -c 32 -n "$LIST_BIG" --warmup 0
for i in $(seq 1 "$RUNS"); do
    echo "-- list at $LIST_BIG tasks, run $i"
    bench "$OUT/run$i-ours-list-big.json" -s list -c 1 --no-seed -d "$DURATION" --warmup "$WARMUP"
done
stop_server
echo "== load: $(uptime)" | tee "$OUT/load-after.txt"

node bench/summarize.mjs "$OUT" "$COMMAND" "$LIST_BIG" "$RSS_REQUESTS"
