#!/bin/bash
# count statements per creation: N creations at 16 clients, log_statement=all on a fresh db
B=$1; N=${2:-400}; A=postgres://postgres@127.0.0.1:5432; L=/var/log/postgresql/postgresql-15-main.log
psql $A/postgres -qc 'DROP DATABASE IF EXISTS perf_cnt WITH (FORCE)' -qc 'CREATE DATABASE perf_cnt' 2>/dev/null
D=$(mktemp -d); XDG_DATA_HOME=$D MCP_TASKS_AUTH_TOKENS="bench-token bench" RUST_LOG=warn taskset -c 0 $B serve --listen 127.0.0.1:18931 --max-stored-tasks unlimited --max-stored-bytes unlimited --max-store-bytes unlimited --store "$A/perf_cnt" > /tmp/perf_srv.log 2>&1 & SP=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18931/ && break; sleep 0.1; done
sleep 1
psql $A/postgres -qc "ALTER DATABASE perf_cnt SET log_statement='all'"
# new connections pick it up: the pool's existing ones do not; restart server
kill $SP; wait $SP 2>/dev/null
XDG_DATA_HOME=$D MCP_TASKS_AUTH_TOKENS="bench-token bench" RUST_LOG=warn taskset -c 0 $B serve --listen 127.0.0.1:18931 --max-stored-tasks unlimited --max-stored-bytes unlimited --max-store-bytes unlimited --store "$A/perf_cnt" > /tmp/perf_srv.log 2>&1 & SP=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18931/ && break; sleep 0.1; done
s=$(wc -l < $L)
taskset -c 1 $B bench --url http://127.0.0.1:18931/mcp --token bench-token -s create -c 16 -n $N --warmup 0s --json > /tmp/perf_c.json 2>/tmp/perf_c.err
sleep 0.5
tail -n +$((s+1)) $L | grep -o 'execute [^:]*: .\{0,400\}\|statement: .\{0,400\}' | sed -e 's/\$[0-9]*//g' -e 's/execute [^:]*:/execute:/' | sed -e "s/SELECT .* FROM /SELECT .. FROM /" | cut -c1-80 | sort | uniq -c | sort -rn | head -30
kill $SP; wait $SP 2>/dev/null; rm -rf $D
psql $A/postgres -qc "ALTER DATABASE perf_cnt RESET log_statement"
