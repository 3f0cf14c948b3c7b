#!/bin/bash
# usage: perf_pgrun.sh BIN [query] ; runs create 5s on a fresh db, prints function stats
B=$1; Q=${2:-}; A=postgres://postgres@127.0.0.1:5432
psql $A/postgres -qc 'DROP DATABASE IF EXISTS perf_cnt WITH (FORCE)' -qc 'CREATE DATABASE perf_cnt' -qc "ALTER DATABASE perf_cnt SET track_functions='pl'" 2>/dev/null
D=$(mktemp -d); XDG_DATA_HOME=$D MCP_TASKS_AUTH_TOKENS="bench-token bench" RUST_LOG=warn taskset -c 0 $B serve --listen 127.0.0.1:18931 --max-stored-tasks unlimited --max-stored-bytes unlimited --max-store-bytes unlimited --store "$A/perf_cnt$Q" > /tmp/perf_srv.log 2>&1 & SP=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18931/ && break; sleep 0.1; done
taskset -c 1 $B bench --url http://127.0.0.1:18931/mcp --token bench-token --server-pid $SP -s create -c 16 -d 5s --warmup 1s --json > /tmp/perf_c.json 2>/tmp/perf_c.err
jq -c '[.figure.value, .cpu.server_pct, .cpu.server_us_per_op]' /tmp/perf_c.json
psql $A/perf_cnt -Atc "select funcname, calls, round(total_time::numeric,1), round((total_time/greatest(calls,1))::numeric,3), round((self_time/greatest(calls,1))::numeric,3) from pg_stat_user_functions order by calls desc limit 12"
psql $A/perf_cnt -Atc "select 'tasks', count(*) from mcp_tasks.tasks"
kill $SP; wait $SP 2>/dev/null; rm -rf $D
