#!/usr/bin/env bash
# bench/ab.sh: two variants of our server's use, A and B, measured in one session in
# alternating order, each run on a freshly started server, pinned as bench/compare.sh
# pins (server on CPU $SERVER_CPU, load generator on CPU $LOAD_CPU), medians printed.
#
#   bench/ab.sh eras      # legacy (2025-11-25) vs modern (2026-07-28 + tasks extension):
#                         # create, get and lifecycle (result by polling) per era
#   bench/ab.sh metrics   # /metrics off (--no-metrics) vs on and scraped every second:
#                         # create and get
#   bench/ab.sh builds REV  # the server built at REV (any commit) vs this tree's (HEAD
#                         # and its changes): create, get and lifecycle. REV is built in
#                         # its own git worktree and target dir ($AB_DIR, default
#                         # ../mcp-tasks-ab; kept, so the next build is incremental);
#                         # BIN_A=path uses a binary built before instead. One load
#                         # generator (this tree's) drives both.
#   STORE=memory bench/ab.sh builds 5ecf819
#   RUNS=5 DURATION=5s SCENARIOS="create" STORE=memory bench/ab.sh metrics
#   SCENARIOS=get BENCH_EXTRA="--work-ms 3600000" SERVE_EXTRA="--max-active-tasks 5000" \
#       bench/ab.sh eras  # tasks/get of working tasks (no outcome to read)
#
# The server: target/release/mcp-tasks (or $BIN), `serve` with the default durable SQLite
# store in a temporary directory (or --store $STORE), no per-requester quotas, one bearer
# token, RUST_LOG=warn. In `eras` both eras talk to the same server configuration, in
# which `sleep` is a required-task tool (`--tool-task-support sleep=required`): a legacy
# client asks for the task, a modern one gets it because the tool requires it.
#
# Raw JSON of every run in bench/results/<UTC time>-ab-<mode>/; the summary (medians per
# variant and scenario, B/A ratios) is printed and kept in summary.txt there.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:?usage: bench/ab.sh eras|metrics|builds REV}
BIN=${BIN:-target/release/mcp-tasks}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PORT=${PORT:-18941}
TOKEN=bench-token
OUT=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-ab-$MODE}
mkdir -p "$OUT"
case "$MODE" in
eras)
    SCENARIOS=${SCENARIOS:-create get lifecycle}
    A=legacy B=modern
    ;;
metrics)
    SCENARIOS=${SCENARIOS:-create get}
    A=off B=on
    ;;
builds)
    REV=${2:?usage: bench/ab.sh builds REV}
    SCENARIOS=${SCENARIOS:-create get lifecycle}
    A=base B=head
    if [ -z "${BIN_A:-}" ]; then
        AB_DIR=${AB_DIR:-$(cd .. && pwd)/mcp-tasks-ab}
        if [ ! -e "$AB_DIR/.git" ]; then git worktree add --detach "$AB_DIR" "$REV"; fi
        git -C "$AB_DIR" checkout -q --detach "$REV"
        (cd "$AB_DIR" && CARGO_TARGET_DIR="$AB_DIR/target" cargo build --release -p mcp-tasks)
        BIN_A=$AB_DIR/target/release/mcp-tasks
    fi
    if [ -z "${BIN_B:-}" ]; then
        cargo build --release -p mcp-tasks
        BIN_B=${CARGO_TARGET_DIR:-target}/release/mcp-tasks
    fi
    BIN=$BIN_B
    ;;
*)
    echo "unknown mode $MODE (eras, metrics or builds REV)" >&2
    exit 2
    ;;
esac

SPID=""
SCRAPER=""
DATA=""
stop_server() {
    if [ -n "$SCRAPER" ]; then
        kill "$SCRAPER" 2>/dev/null || true
        wait "$SCRAPER" 2>/dev/null || true
        SCRAPER=""
    fi
    if [ -n "$SPID" ]; then
        kill "$SPID" 2>/dev/null || true
        wait "$SPID" 2>/dev/null || true
        SPID=""
    fi
    if [ -n "$DATA" ]; then
        rm -rf "$DATA"
        DATA=""
    fi
}
trap stop_server EXIT

# start VARIANT: a fresh server for VARIANT, pinned to $SERVER_CPU.
start() {
    local bin=$BIN
    case "$1" in
    base) bin=$BIN_A ;;
    head) bin=$BIN_B ;;
    esac
    local args=(serve --listen "127.0.0.1:$PORT")
    # Builds from before the storage quotas have no such flags (and no such limits).
    if "$bin" serve --help | grep -q -- --max-stored-tasks; then
        args+=(--max-stored-tasks unlimited --max-stored-bytes unlimited --max-store-bytes unlimited)
    fi
    if [ -n "${STORE:-}" ]; then args+=(--store "$STORE"); fi
    # shellcheck disable=SC2206 # SERVE_EXTRA is a list of words on purpose
    args+=(${SERVE_EXTRA:-})
    case "$1" in
    legacy | modern) args+=(--tool-task-support sleep=required) ;;
    off) args+=(--no-metrics) ;;
    on) args+=(--metrics-principal bench) ;;
    esac
    DATA=$(mktemp -d)
    XDG_DATA_HOME=$DATA MCP_TASKS_AUTH_TOKENS="$TOKEN bench" RUST_LOG=warn \
        taskset -c "$SERVER_CPU" "$bin" "${args[@]}" 2>>"$OUT/serve.log" &
    SPID=$!
    for _ in $(seq 300); do
        if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then break; fi
        sleep 0.1
    done
    if [ "$1" = on ]; then
        # Scraped every second (15 times Prometheus' default rate), from the load CPU.
        (while sleep 1; do
            taskset -c "$LOAD_CPU" curl -sf -H "Authorization: Bearer $TOKEN" \
                "http://127.0.0.1:$PORT/metrics" -o /dev/null || echo "scrape failed" >>"$OUT/scrapes.log"
        done) &
        SCRAPER=$!
    fi
}

# run VARIANT SCENARIO RUN: one measured run, JSON to $OUT.
run() {
    local variant=$1 scenario=$2 i=$3 args=()
    case "$scenario" in
    create) args=(-s create -c 16) ;;
    get) args=(-s get -c 16 -k 1000) ;;
    lifecycle) args=(-s lifecycle -c 64 --work-ms 100 --poll-ms 50) ;;
    lifecycle-poll-interval) args=(-s lifecycle-poll-interval -c 64 --work-ms 100) ;;
    esac
    case "$variant" in
    legacy | modern) args+=(--era "$variant") ;;
    esac
    # shellcheck disable=SC2206 # BENCH_EXTRA is a list of words on purpose
    args+=(${BENCH_EXTRA:-})
    start "$variant"
    echo "-- run $i $scenario $variant"
    taskset -c "$LOAD_CPU" "$BIN" bench --url "http://127.0.0.1:$PORT/mcp" --token "$TOKEN" \
        --server-pid "$SPID" --duration "$DURATION" --warmup "$WARMUP" --json "${args[@]}" \
        >"$OUT/run$i-$scenario-$variant.json" 2>>"$OUT/bench.log" ||
        echo "   (errors: $(jq -c '.errors.by_class | map_values(.count)' "$OUT/run$i-$scenario-$variant.json" 2>/dev/null))"
    stop_server
}

{
    echo "== bench/ab.sh $MODE${REV:+ $REV}: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')${BIN_A:+, base $BIN_A}, RUNS=$RUNS DURATION=$DURATION WARMUP=$WARMUP STORE=${STORE:-default SQLite} SERVE_EXTRA=${SERVE_EXTRA:-} BENCH_EXTRA=${BENCH_EXTRA:-}"
    echo "== $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load before: $(uptime)"
} | tee "$OUT/summary.txt"
for i in $(seq 1 "$RUNS"); do
    if [ $((i % 2)) = 1 ]; then order="$A $B"; else order="$B $A"; fi
    for scenario in $SCENARIOS; do
        for v in $order; do run "$v" "$scenario" "$i"; done
    done
done
echo "== load after: $(uptime)" | tee -a "$OUT/summary.txt"

# Medians per variant and scenario: the figure, the figure's p50, the server's CPU per
# operation; then B/A.
median='sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end | if . == null then . else . * 100 | round / 100 end'
for scenario in $SCENARIOS; do
    for v in $A $B; do
        jq -s -r --arg v "$v" --arg s "$scenario" "
            def med: $median;
            (.[0].figure.name) as \$name
            | (if \$s == \"create\" then \"tools/call\" elif \$s == \"get\" then \"tasks/get\" else \"lifecycle\" end) as \$op
            | \"\(\$s) \(\$v): \(\$name) median \(map(.figure.value) | med) (runs: \(map(.figure.value | tostring) | join(\" · \"))); p50 \(map(.ops[\$op].p50_ms) | med) ms; p99 \(map(.ops[\$op].p99_ms) | med) ms; server CPU/op \(map(.cpu.server_us_per_op) | med) us (runs: \(map(.cpu.server_us_per_op | tostring) | join(\" · \"))); LG-bound \(map(select(.cpu.load_generator_bound)) | length)/\(length); errors \(map(.errors.total) | add)\"
        " "$OUT"/run*-"$scenario"-"$v".json | tee -a "$OUT/summary.txt"
    done
    # Per-run ratios B/A (runs paired by number), then their median.
    jq -n -r --arg s "$scenario" --arg a "$A" --arg b "$B" "
        def med: $median;
        [inputs] | group_by(.run) | map({a: (map(select(.v == \$a))[0]), b: (map(select(.v == \$b))[0])})
        | map({thr: (.b.figure.value / .a.figure.value), cpu: (.b.cpu.server_us_per_op / .a.cpu.server_us_per_op)}) as \$r
        | \"\(\$s) \(\$b)/\(\$a): throughput ratio per run \(\$r | map(.thr * 1000 | round / 1000 | tostring) | join(\" · \")), median \(\$r | map(.thr) | med | . * 1000 | round / 1000); server CPU/op ratio per run \(\$r | map(.cpu * 1000 | round / 1000 | tostring) | join(\" · \")), median \(\$r | map(.cpu) | med | . * 1000 | round / 1000)\"
    " < <(for f in "$OUT"/run*-"$scenario"-"$A".json "$OUT"/run*-"$scenario"-"$B".json; do
        b=$(basename "$f" .json)
        r=${b%%-*}
        v=${b##*-}
        jq -c --arg r "$r" --arg v "$v" '. + {run: $r, v: $v}' "$f"
    done) | tee -a "$OUT/summary.txt"
done
echo "results in $OUT"
