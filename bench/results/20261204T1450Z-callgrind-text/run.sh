#!/usr/bin/env bash
# run.sh BIN ERA N: total Ir of a callgrind'ed server serving K=100 creations + N tasks/get
set -u
BIN=$1 ERA=$2 N=$3 PORT=18977 TAG=$4
DATA=$(mktemp -d)
XDG_DATA_HOME=$DATA MCP_TASKS_AUTH_TOKENS="bench-token bench" RUST_LOG=warn \
  valgrind --tool=callgrind --callgrind-out-file=/tmp/perfcg/$TAG.out $BIN serve --listen 127.0.0.1:$PORT \
  --max-stored-tasks unlimited --max-stored-bytes unlimited --max-store-bytes unlimited \
  --tool-task-support sleep=required ${SERVE_EXTRA:-} 2>/tmp/perfcg/$TAG.log &
SPID=$!
for _ in $(seq 600); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && break; sleep 0.2; done
$BIN bench --url http://127.0.0.1:$PORT/mcp --token bench-token --era $ERA -s ${SCEN:-get} -c 4 -k 100 -n $N ${BENCH_EXTRA:-} --warmup 0s --json > /tmp/perfcg/$TAG.json 2>/dev/null
kill -TERM $SPID; wait $SPID
rm -rf $DATA
grep -E "^summary|^totals" /tmp/perfcg/$TAG.out | head -1 | awk -v t=$TAG '{print t, $2}'
