#!/usr/bin/env bash
# bench/targets.sh: the throughput targets in one run: `create` and `get` at 16 clients
# (and `result-wait`: 16 clients, 100 ms of work, the p50 and p99 of the result's
# lateness: its arrival - (creation sent + 100 ms), an upper bound of the time from the
# task's completion to the answer of its waiting `tasks/result`; and that time itself, the
# result-wait overhead: the result's arrival - the task's `lastUpdatedAt`, the completion
# as the server recorded it, read with a `tasks/get` after the result)
# against the TypeScript SDK 1.32.2 task server (bench/ts-server), our server on the
# default SQLite store and on PostgreSQL (one replica), and, with BIN_BEFORE, an earlier
# build of ours on the same two stores. Every server is started fresh for each run, the
# servers take turns within each round (ROUNDS rounds, order alternating), the server
# pinned to CPU $SERVER_CPU and the load generator to CPU $LOAD_CPU (PostgreSQL itself is
# not pinned: it shares the machine, as in bench/postgres.sh). Medians and the ratios
# ours/TS are printed and kept in $OUT/summary.txt.
#
#   bench/targets.sh
#   BIN_BEFORE=../old/target/release/mcp-tasks ROUNDS=3 DURATION=10s bench/targets.sh
#   BIN_BEFORE=/tmp/mt-5ecf819 BEFORE_STORES=sqlite bench/targets.sh   # a build without PostgreSQL
#   SCENS="create get" bench/targets.sh      # without result-wait
#   PG_QUERY='?writers=4' bench/targets.sh   # PostgreSQL store options (crates/store-postgres
#                                            # options.rs), for both PostgreSQL servers
#
# Needs: node + npm (bench/ts-server is installed from its lock file), jq, taskset, psql
# and PostgreSQL at $PG_ADMIN (default postgres://postgres@127.0.0.1:5432/postgres).
# Our servers run without the per-requester quotas (one principal creates more than the
# default 10,000 stored tasks in a run; the TS server has no such limits either).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/mcp-tasks}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PORT=${PORT:-18921}
ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
SCENS=${SCENS:-create get result-wait}
OUT=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-targets}
mkdir -p "$OUT"
(cd bench/ts-server && [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error)

SERVERS="ts sqlite postgres"
# BEFORE_STORES: the stores of the earlier build (default both; a build from before the
# PostgreSQL store, such as 5ecf819, takes BEFORE_STORES=sqlite).
if [ -n "${BIN_BEFORE:-}" ]; then
    for st in ${BEFORE_STORES:-sqlite postgres}; do SERVERS="$SERVERS $st-before"; done
fi
SPID="" DATA="" DB=""
stop() {
    if [ -n "$SPID" ]; then kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; fi
    if [ -n "$DATA" ]; then rm -rf "$DATA"; fi
    if [ -n "$DB" ]; then psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true; fi
    SPID="" DATA="" DB=""
}
trap stop EXIT

start() {
    local which=$1 bin=$BIN args=()
    case "$which" in *-before) bin=$BIN_BEFORE ;; esac
    if [ "$which" = ts ]; then
        taskset -c "$SERVER_CPU" node bench/ts-server/server.mjs "$PORT" 2>>"$OUT/ts.log" &
        SPID=$!
    else
        args=(serve --listen "127.0.0.1:$PORT")
        if "$bin" serve --help | grep -q -- --max-stored-tasks; then
            args+=(--max-stored-tasks unlimited --max-stored-bytes unlimited --max-store-bytes unlimited)
        fi
        case "$which" in postgres*)
            DB="mcp_tasks_targets_$$"
            psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
            psql "$ADMIN" -qc "CREATE DATABASE $DB" >/dev/null
            args+=(--store "${ADMIN%/*}/$DB${PG_QUERY:-}")
            ;;
        esac
        DATA=$(mktemp -d)
        XDG_DATA_HOME=$DATA MCP_TASKS_AUTH_TOKENS="bench-token bench" RUST_LOG=warn \
            taskset -c "$SERVER_CPU" "$bin" "${args[@]}" 2>>"$OUT/serve.log" &
        SPID=$!
    fi
    for _ in $(seq 300); do
        curl -s -o /dev/null "http://127.0.0.1:$PORT/" && return 0
        sleep 0.1
    done
    echo "$which did not start" >&2
    exit 1
}

for r in $(seq 1 "$ROUNDS"); do
    order=$SERVERS
    if [ $((r % 2)) = 0 ]; then order=$(tr ' ' '\n' <<<"$SERVERS" | tac | tr '\n' ' '); fi
    for scen in $SCENS; do
        for which in $order; do
            start "$which"
            echo "-- round $r $scen $which"
            extra=()
            if [ "$scen" = get ]; then extra=(-k 1000); fi
            if [ "$scen" = result-wait ]; then extra=(--work-ms 100); fi
            taskset -c "$LOAD_CPU" "$BIN" bench --url "http://127.0.0.1:$PORT/mcp" --token bench-token \
                --server-pid "$SPID" -s "$scen" -c 16 "${extra[@]}" -d "$DURATION" --warmup "$WARMUP" \
                --json >"$OUT/r$r-$scen-$which.json" 2>>"$OUT/bench.log" || echo "   (errors counted in the JSON)"
            stop
        done
    done
done

{
    echo "== bench/targets.sh $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD), ROUNDS=$ROUNDS DURATION=$DURATION, $BIN${BIN_BEFORE:+, before: $BIN_BEFORE}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for scen in $SCENS; do
        if [ "$scen" = result-wait ]; then
            # Latencies: the median over the runs of each run's p50 and p99 of the lateness.
            for which in $SERVERS; do
                jq -s -r --arg w "$which" '
                    def med: sort | (if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end);
                    [.[] | .ops["result-lateness"]] as $o
                    | "result-wait \($w): lateness p50 \($o | map(.p50_ms) | med * 100 | round / 100) ms, p99 \($o | map(.p99_ms) | med * 100 | round / 100) ms (p99 of the runs: \($o | map(.p99_ms * 100 | round / 100 | tostring) | join(" · ")) ms)"
                ' "$OUT"/r*-"$scen-$which".json
                jq -s -r --arg w "$which" '
                    def med: sort | (if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end);
                    [.[] | .ops["result-overhead"] | select(. != null)] as $o
                    | if ($o | length) == 0 then empty else
                      "result-wait \($w): overhead (completion to arrival) p50 \($o | map(.p50_ms) | med * 100 | round / 100) ms, p99 \($o | map(.p99_ms) | med * 100 | round / 100) ms (p99 of the runs: \($o | map(.p99_ms * 100 | round / 100 | tostring) | join(" · ")) ms)" end
                ' "$OUT"/r*-"$scen-$which".json
            done
            continue
        fi
        for which in $SERVERS; do
            jq -s -r --arg w "$which" --arg s "$scen" '
                map(.figure.value) | sort
                | (if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end) as $m
                | "\($s) \($w): median \($m | round)/s (runs: \(map(round | tostring) | join(" · ")))"
            ' "$OUT"/r*-"$scen-$which".json
        done
        ts=$(jq -s 'map(.figure.value) | add / length' "$OUT"/r*-"$scen"-ts.json)
        for which in $SERVERS; do
            [ "$which" = ts ] && continue
            jq -s -r --arg w "$which" --arg s "$scen" --argjson ts "$ts" '
                map(.figure.value) | add / length | "\($s) \($w)/ts: \(. / $ts * 100 | round / 100)x"
            ' "$OUT"/r*-"$scen-$which".json
        done
    done
} | tee "$OUT/summary.txt"
