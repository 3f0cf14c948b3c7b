#!/usr/bin/env bash
# A/B: PostgreSQL create at 16 clients, old binary (trigger NOTIFY) vs new (announced after commit).
set -u
OLD=/work/wt/h-perf/target/release/mcp-tasks
NEW=/work/main/target/release/mcp-tasks
ADMIN=postgres://postgres@127.0.0.1:5432/postgres
OUT=${OUT:-/tmp/pgab/out}; mkdir -p $OUT
export MCP_TASKS_AUTH_TOKENS="tok-bench bench"
for round in 1 2 3; do
  for v in old new; do
    BIN=$OLD; [ $v = new ] && BIN=$NEW
    db=mcp_tasks_ab_${v}_$round
    psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
    TMP=$(mktemp -d)
    XDG_DATA_HOME=$TMP $BIN serve --listen 127.0.0.1:18091 --store "postgres://postgres@127.0.0.1:5432/$db?pool=16" \
      --max-stored-tasks unlimited --max-stored-bytes unlimited $EXTRA 2>$OUT/serve-$v-$round.log &
    pid=$!
    for _ in $(seq 300); do curl -sf http://127.0.0.1:18091/readyz >/dev/null && break; sleep 0.1; done
    $NEW bench --token tok-bench --duration 8s --warmup 2s --json --url http://127.0.0.1:18091/mcp -s create -c 16 --server-pid $pid > $OUT/$v-$round.json 2>>$OUT/bench.log
    echo "$v round $round: $(jq -r '"\(.figure.value) creations/s, p50 \(.ops["tools/call"].p50_ms) ms, errors \(.errors.total), server CPU \(.cpu.server_us_per_op // "-") us/op"' $OUT/$v-$round.json)"
    kill $pid; wait $pid 2>/dev/null
    psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
    rm -rf $TMP
  done
done
