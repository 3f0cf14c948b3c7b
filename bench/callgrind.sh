#!/usr/bin/env bash
# bench/callgrind.sh: instructions per operation of our server, per era, counted by
# valgrind's callgrind (user space). Unlike CPU time on this shared machine the counts
# barely move between runs (about ±0.5 %, the server's timers), so two builds or two eras
# compare in one run each.
#
# For each era the release server (target/release/mcp-tasks, or $BIN; default SQLite
# store in a temporary directory, one bearer token, `sleep` a required-task tool) serves
# `mcp-tasks bench -c 4 -k 100` with N1, then N2 operations of $SCEN; the difference of
# the two totals over N2 - N1 is the cost of one operation (start-up, the K creations and
# shutdown cancel out).
#
#   bench/callgrind.sh                                   # tasks/get of finished tasks
#   SCEN=create N1=300 N2=1300 bench/callgrind.sh         # task creations
#   SERVE_EXTRA="--max-active-tasks 5000" BENCH_EXTRA="--work-ms 3600000" \
#       bench/callgrind.sh                               # tasks/get of working tasks
#   ERAS=modern bench/callgrind.sh                       # one era
#
# Prints instructions per operation per era and modern/legacy; totals.txt and the
# callgrind files (for callgrind_annotate) in $OUT (default bench/results/<UTC>-callgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/mcp-tasks}
SCEN=${SCEN:-get}
N1=${N1:-1000}
N2=${N2:-5000}
ERAS=${ERAS:-legacy modern}
PORT=${PORT:-18977}
OUT=${OUT:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-callgrind}
command -v valgrind >/dev/null || { echo "bench/callgrind.sh needs valgrind" >&2; exit 2; }
mkdir -p "$OUT"

# total_of TAG ERA N: the instructions of one server run.
total_of() {
    local tag=$1 era=$2 n=$3 data spid
    data=$(mktemp -d)
    # shellcheck disable=SC2086 # SERVE_EXTRA and BENCH_EXTRA are lists of arguments
    XDG_DATA_HOME=$data MCP_TASKS_AUTH_TOKENS="bench-token bench" RUST_LOG=warn \
        valgrind --tool=callgrind --callgrind-out-file="$OUT/$tag.out" "$BIN" serve \
        --listen 127.0.0.1:"$PORT" --max-stored-tasks unlimited --max-stored-bytes unlimited \
        --max-store-bytes unlimited --tool-task-support sleep=required ${SERVE_EXTRA:-} \
        2>"$OUT/$tag.log" &
    spid=$!
    for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
        sleep 0.2
    done
    # shellcheck disable=SC2086
    "$BIN" bench --url "http://127.0.0.1:$PORT/mcp" --token bench-token --era "$era" \
        -s "$SCEN" -c 4 -k 100 -n "$n" ${BENCH_EXTRA:-} --warmup 0s --json >"$OUT/$tag.json"
    kill -TERM "$spid"
    wait "$spid" || true
    rm -rf "$data"
    grep -E '^(summary|totals):' "$OUT/$tag.out" | head -1 | awk '{print $2}'
}

declare -A per_op
for era in $ERAS; do
    t1=$(total_of "$era-$N1" "$era" "$N1")
    t2=$(total_of "$era-$N2" "$era" "$N2")
    echo "$era-$N1 $t1" >>"$OUT/totals.txt"
    echo "$era-$N2 $t2" >>"$OUT/totals.txt"
    per_op[$era]=$(( (t2 - t1) / (N2 - N1) ))
    echo "$SCEN $era: ${per_op[$era]} instructions per operation" | tee -a "$OUT/summary.txt"
done
if [ -n "${per_op[legacy]:-}" ] && [ -n "${per_op[modern]:-}" ]; then
    awk -v m="${per_op[modern]}" -v l="${per_op[legacy]}" -v s="$SCEN" \
        'BEGIN { printf "%s modern/legacy: %.3f\n", s, m / l }' | tee -a "$OUT/summary.txt"
fi
echo "results in $OUT"
