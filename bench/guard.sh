#!/usr/bin/env bash
# bench/guard.sh: the instruction-count guard. Instructions per operation of our server
# (callgrind, user space, deterministic to about ±1 %), for create, get, result and list
# over HTTP on the memory, SQLite and PostgreSQL stores, compared with the baseline in
# bench/baseline/instructions.json. Exits 1 when one figure rises more than $LIMIT
# (default 10) per cent over its baseline; prints every figure and its ratio.
#
#   bench/guard.sh                    # build (profile bench-guard), measure, compare
#   bench/guard.sh --update           # measure and write the baseline (a deliberate rise:
#                                     # commit it with the change, the reason in the message)
#   STORES="memory sqlite" OPS=get bench/guard.sh     # a part (the rest is not compared)
#   BIN=path bench/guard.sh          # measure that binary (no build)
#   RESULTS=file bench/guard.sh      # no measurement: compare the figures in that file
#                                    # (the format of the baseline) with the baseline
#   BIN=old LOADGEN=new bench/guard.sh  # an older server, today's load generator
#   KEEP=1 bench/guard.sh            # keep the callgrind files (<store>-<op>-<N>.out) in
#                                    # $OUT, for callgrind_annotate
#
# How one figure is measured: the server runs under callgrind twice, serving N1 and then
# N2 operations of the workload from `mcp-tasks bench` (one client, so that group commits
# and seeding happen in the same order in every run; the load generator runs natively);
# (total(N2) - total(N1)) / (N2 - N1) is the cost of one operation: start-up, the session,
# the seeded tasks and shutdown cancel out. The workloads (legacy era, default quotas):
#   create  task-augmented tools/call of `sleep` {ms: 0}
#   get     tasks/get of finished tasks, random ids among 50
#   result  create + tasks/result of it (work 0 ms), then tasks/get of it (its lastUpdatedAt:
#           the result-wait overhead of `mcp-tasks bench`)
#   list    tasks/list pages through 100 tasks
# PostgreSQL: a fresh database per server run at $PG_ADMIN's server (skipped with a note
# when it is not reachable, unless GUARD_REQUIRE_PG=1); the database's own work is not
# counted, only our process's.
#
# The build: profile `bench-guard` (release code generation, incremental), see
# docs/performance.md for the choice. Results in $OUT (default
# bench/results/<UTC>-guard): instructions.json, the callgrind files and server logs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
UPDATE=0
for a in "$@"; do
    case "$a" in
    --update) UPDATE=1 ;;
    *)
        echo "usage: bench/guard.sh [--update]" >&2
        exit 2
        ;;
    esac
done
BASELINE=${BASELINE:-bench/baseline/instructions.json}
LIMIT=${LIMIT:-10}
STORES=${STORES:-memory sqlite postgres}
OPS=${OPS:-create get result list}
PORT=${PORT:-18987}
ADMIN=${PG_ADMIN:-postgres://postgres@127.0.0.1:5432/postgres}
OUT=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-guard}
command -v valgrind >/dev/null || { echo "bench/guard.sh needs valgrind" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench/guard.sh needs jq" >&2; exit 2; }
mkdir -p "$OUT"

if [ -n "${RESULTS:-}" ]; then
    STORES="" # nothing to measure
elif [ -z "${BIN:-}" ]; then
    echo "== building (cargo build --profile bench-guard -p mcp-tasks)"
    cargo build --profile bench-guard -p mcp-tasks --locked
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/bench-guard/mcp-tasks
fi
# The load generator (`mcp-tasks bench`): this build's unless LOADGEN names another (to
# measure an older server with today's workloads).
LOADGEN=${LOADGEN:-${BIN:-}}

# N1 N2 and the bench arguments of each workload.
declare -A N1=([create]=100 [get]=200 [result]=100 [list]=20)
declare -A N2=([create]=500 [get]=1200 [result]=400 [list]=100)
declare -A ARGS=(
    [create]="-s create"
    [get]="-s get -k 50"
    [result]="-s result-wait --work-ms 0"
    [list]="-s list -k 100"
)

# psql quietly (no NOTICE of a database that is not there to drop).
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
PG_OK=0
if [[ " $STORES " == *" postgres "* ]]; then
    if command -v psql >/dev/null && psql "$ADMIN" -qAtc 'SELECT 1' >/dev/null 2>&1; then
        PG_OK=1
    elif [ "${GUARD_REQUIRE_PG:-0}" = 1 ]; then
        echo "PostgreSQL at $ADMIN is not reachable (GUARD_REQUIRE_PG=1)" >&2
        exit 2
    else
        echo "note: PostgreSQL at $ADMIN is not reachable; its figures are not measured" >&2
    fi
fi
PG_DB=""
SPID=""
DATA=""
cleanup() {
    if [ -n "$SPID" ]; then kill -TERM "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; fi
    if [ -n "$DATA" ]; then rm -rf "$DATA"; fi
    if [ -n "$PG_DB" ]; then psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# total STORE OP N: the instructions of one server run serving N operations of OP.
total() {
    local store=$1 op=$2 n=$3 tag="$1-$2-$3" store_args=() t
    DATA=$(mktemp -d)
    case "$store" in
    memory) store_args=(--store memory) ;;
    sqlite) ;;
    postgres)
        PG_DB="mcp_tasks_guard_$$"
        psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
        psql "$ADMIN" -qc "CREATE DATABASE $PG_DB" >/dev/null
        store_args=(--store "${ADMIN%/*}/$PG_DB")
        ;;
    esac
    XDG_DATA_HOME=$DATA MCP_TASKS_AUTH_TOKENS="guard-token guard" RUST_LOG=warn \
        valgrind --tool=callgrind --callgrind-out-file="$OUT/$tag.out" "$BIN" serve \
        --listen "127.0.0.1:$PORT" "${store_args[@]}" 2>"$OUT/$tag.log" &
    SPID=$!
    for _ in $(seq 600); do
        curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break
        kill -0 "$SPID" 2>/dev/null || { echo "the server exited:" >&2; cat "$OUT/$tag.log" >&2; exit 1; }
        sleep 0.1
    done
    # shellcheck disable=SC2086 # ARGS are lists of arguments
    if ! "$LOADGEN" bench --url "http://127.0.0.1:$PORT/mcp" --token guard-token ${ARGS[$op]} \
        -c 1 --seed-concurrency 1 -n "$n" --warmup 0s --json >"$OUT/$tag.json" 2>>"$OUT/bench.log"; then
        echo "the $op workload on $store saw errors: $(jq -c '.errors' "$OUT/$tag.json" 2>/dev/null)" >&2
        exit 1
    fi
    kill -TERM "$SPID"
    wait "$SPID" || true
    SPID=""
    rm -rf "$DATA"
    DATA=""
    if [ -n "$PG_DB" ]; then
        psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null
        PG_DB=""
    fi
    t=$(grep -E '^(summary|totals):' "$OUT/$tag.out" | head -1 | awk '{print $2}')
    if [ "${KEEP:-0}" != 1 ]; then rm -f "$OUT/$tag.out"; fi
    echo "$t"
}

echo "== bench/guard.sh: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), ${RESULTS:-$BIN}"
results="{}"
for store in $STORES; do
    if [ "$store" = postgres ] && [ "$PG_OK" = 0 ]; then continue; fi
    for op in $OPS; do
        t1=$(total "$store" "$op" "${N1[$op]}")
        t2=$(total "$store" "$op" "${N2[$op]}")
        per=$(((t2 - t1) / (${N2[$op]} - ${N1[$op]})))
        echo "$store $op: $per instructions per operation (totals $t1, $t2)"
        results=$(jq -c --arg s "$store" --arg o "$op" --argjson v "$per" '.[$s][$o] = $v' <<<"$results")
    done
done
if [ -n "${RESULTS:-}" ]; then
    jq . "$RESULTS" >"$OUT/instructions.json"
else
    jq . <<<"$results" >"$OUT/instructions.json"
fi

if [ "$UPDATE" = 1 ]; then
    mkdir -p "$(dirname "$BASELINE")"
    # Figures not measured in this run (a part, or PostgreSQL away) keep their baseline.
    if [ -f "$BASELINE" ]; then
        jq -s '.[0] * .[1]' "$BASELINE" "$OUT/instructions.json" >"$BASELINE.new"
    else
        cp "$OUT/instructions.json" "$BASELINE.new"
    fi
    mv "$BASELINE.new" "$BASELINE"
    echo "== baseline written: $BASELINE"
    exit 0
fi

[ -f "$BASELINE" ] || { echo "no baseline at $BASELINE (bench/guard.sh --update writes it)" >&2; exit 2; }
echo "== against $BASELINE (fails above +$LIMIT %)"
verdict=$(jq -r -s --argjson limit "$LIMIT" '
    .[0] as $base | .[1] as $now
    | [ $now | to_entries[] | .key as $s | .value | to_entries[] | .key as $o
        | ($base[$s][$o] // null) as $b
        | { s: $s, o: $o, now: .value, base: $b,
            ratio: (if $b == null then null else .value / $b end) } ]
    | (map(
        if .base == null then "\(.s) \(.o): \(.now) (no baseline)"
        else "\(.s) \(.o): \(.now) vs \(.base): \(.ratio * 1000 | round / 1000)"
            + (if .ratio > 1 + $limit / 100 then "  <-- MORE THAN +\($limit) %" else "" end)
        end) | join("\n"))
      + "\n" + (if any(.[]; .ratio != null and .ratio > 1 + $limit / 100) then "FAIL" else "OK" end)
' "$BASELINE" "$OUT/instructions.json")
echo "$verdict" | tee "$OUT/verdict.txt"
[ "$(tail -1 <<<"$verdict")" = OK ]
