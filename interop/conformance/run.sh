#!/usr/bin/env bash
# The official MCP conformance suite (interop/conformance/setup.sh installs it, pinned)
# against the SDK's conformance example over Streamable HTTP: every server scenario of the
# suite's 2025-11-25 group (at the 2025-11-25 wire), its 2026-07-28 group (at the
# 2026-07-28 wire) and the tasks extension (tasks-*, at the wire the suite gives it:
# 2026-07-28). A scenario the suite
# itself skips at that version counts as not applicable (n/a). Then the client scenarios:
# the suite serves each one itself and runs the client driver
# (crates/client/examples/conformance_client.rs) with its URL, at each of the two revisions
# the scenario is tagged with (groups client-2025-11-25, client-2026-07-28).
#
#   interop/conformance/run.sh                    # build the example, run everything
#   interop/conformance/run.sh 'tools-.*'         # only scenarios matching this regex
#   CONFORMANCE_BIN=/path/to/conformance interop/conformance/run.sh
#   (the client driver: CONFORMANCE_CLIENT_BIN, else conformance_client beside CONFORMANCE_BIN)
#
# Prints a table (group, scenario, result); per-scenario logs and results.tsv go to
# target/conformance/. Exits non-zero when any scenario fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
filter="${1:-.*}"
out="$repo/target/conformance"
"$here/setup.sh"
node="$here/node_modules/.bin/node"
suite=("$node" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js")

if [ -z "${CONFORMANCE_BIN:-}" ]; then
  (cd "$repo" && cargo build -q -p mcp-tasks-sdk --example conformance)
  CONFORMANCE_BIN="$repo/target/debug/examples/conformance"
fi
if [ -z "${CONFORMANCE_CLIENT_BIN:-}" ]; then
  CONFORMANCE_CLIENT_BIN="$(dirname "$CONFORMANCE_BIN")/conformance_client"
  [ -x "$CONFORMANCE_CLIENT_BIN" ] ||
    (cd "$repo" && cargo build -q -p mcp-tasks-client --example conformance_client)
fi

rm -rf "$out"
mkdir -p "$out/logs"

# The example on a free port; it prints `listening on http://ADDR/mcp` on stderr.
"$CONFORMANCE_BIN" --listen 127.0.0.1:0 2>"$out/server.log" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$out/server.log" | head -n1)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$out/server.log" >&2; echo "conformance: the example exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "conformance: the example did not start listening" >&2; exit 1; }
echo "conformance: the example listens on $url"

# The server scenarios and their tags, from the suite itself:
#   "  - tools-list [2025-06-18,2025-11-25,2026-07-28]"
listing="$("${suite[@]}" list --server)"
scenarios_of() { # $1: a tag (a spec version, or "tasks" for the extension's tasks-*)
  sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p' <<<"$listing" | while read -r name tags; do
    case "$1" in
      tasks) [[ "$name" == tasks-* ]] && echo "$name" ;;
      *) [[ ",$tags," == *",$1,"* ]] && echo "$name" ;;
    esac
  done
}

# Scenarios known to fail, each with its reason (docs/conformance.md): reported as
# "known FAIL" without failing the run, so that any other failure (a regression) fails it.
# A known one that passes is reported "pass (drop it from KNOWN_FAILING)" and fails the
# run, so that the list cannot go stale.
declare -A KNOWN_FAILING=(
  # [scenario]="reason"
)

failed=0
printf '%s\t%s\t%s\n' group scenario result >"$out/results.tsv"
for group in 2025-11-25 2026-07-28 tasks; do
  # An extension's scenarios are off the spec timeline: without --spec-version the suite
  # runs them at the wire of the revision the extension lives on (2026-07-28).
  version=(--spec-version "$group")
  [ "$group" = tasks ] && version=()
  for scenario in $(scenarios_of "$group"); do
    [[ "$scenario" =~ ^($filter)$ ]] || continue
    log="$out/logs/$group-$scenario.log"
    if "${suite[@]}" server --url "$url" --scenario "$scenario" "${version[@]}" \
      --timeout 30000 >"$log" 2>&1; then
      if grep -q '^SKIPPED' "$log"; then
        result="n/a"
      elif [ -n "${KNOWN_FAILING[$scenario]:-}" ]; then
        result="pass (drop it from KNOWN_FAILING)"
        failed=$((failed + 1))
      else
        result="pass"
      fi
    elif [ -n "${KNOWN_FAILING[$scenario]:-}" ]; then
      result="known FAIL: ${KNOWN_FAILING[$scenario]}"
    else
      result="FAIL"
      failed=$((failed + 1))
    fi
    printf '%s\t%s\t%s\n' "$group" "$scenario" "$result" >>"$out/results.tsv"
  done
done

# The client scenarios, "  - tools_call [2025-06-18,2025-11-25,2026-07-28]".
client_listing="$("${suite[@]}" list --client)"
# Client scenarios not played, each with its reason (docs/conformance.md): reported as
# "not run" without failing the run.
not_run() { # $1: a client scenario
  case "$1" in
    auth/*) echo "the client sends a bearer token it is given; it runs no OAuth flow" ;;
    sep-2640-*) echo "skills extension (SEP-2640): the client has no skills support" ;;
  esac
}
# Client scenarios known to fail, as KNOWN_FAILING.
declare -A KNOWN_FAILING_CLIENT=(
  # [scenario]="reason"
)
for version in 2025-11-25 2026-07-28; do
  group="client-$version"
  sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p' <<<"$client_listing" | while read -r name tags; do
    if [[ ",$tags," == *",$version,"* ]]; then echo "$name"; fi
  done >"$out/client-$version.txt"
  while read -r scenario; do
    [[ "$scenario" =~ ^($filter)$ ]] || continue
    reason="$(not_run "$scenario")"
    if [ -n "$reason" ]; then
      printf '%s\t%s\t%s\n' "$group" "$scenario" "not run: $reason" >>"$out/results.tsv"
      continue
    fi
    log="$out/logs/$group-${scenario//\//-}.log"
    if "${suite[@]}" client --command "$CONFORMANCE_CLIENT_BIN" --scenario "$scenario" \
      --spec-version "$version" --timeout 30000 >"$log" 2>&1; then
      if [ -n "${KNOWN_FAILING_CLIENT[$scenario]:-}" ]; then
        result="pass (drop it from KNOWN_FAILING_CLIENT)"
        failed=$((failed + 1))
      else
        result="pass"
      fi
    elif [ -n "${KNOWN_FAILING_CLIENT[$scenario]:-}" ]; then
      result="known FAIL: ${KNOWN_FAILING_CLIENT[$scenario]}"
    else
      result="FAIL"
      failed=$((failed + 1))
    fi
    printf '%s\t%s\t%s\n' "$group" "$scenario" "$result" >>"$out/results.tsv"
  done <"$out/client-$version.txt"
done


# The gateway passes resources, prompts, completion, logging, content blocks and
# `x-mcp-header` parameters through in both eras (issue 31): the scenarios about them, at
# each wire, against `mcp-tasks serve` in front of the example, once over stdio
# (`--upstream-cmd "<example> --stdio"`, group gw-stdio) and once over Streamable HTTP
# (`--upstream-url` of the example above, group gw-http).
GATEWAY_SCENARIOS="logging-set-level|completion-complete|tools-list|tools-call-simple-text|tools-call-image|tools-call-audio|tools-call-embedded-resource|tools-call-mixed-content|tools-call-with-logging|tools-call-error|tools-call-with-progress|resources-list|resources-read-text|resources-read-binary|resources-templates-read|resources-subscribe|resources-unsubscribe|sep-2164-resource-not-found|prompts-list|prompts-get-simple|prompts-get-with-args|prompts-get-embedded-resource|prompts-get-with-image|http-custom-header-server-validation"
if [ -z "${MCP_TASKS_BIN:-}" ]; then
  (cd "$repo" && cargo build -q --bin mcp-tasks)
  MCP_TASKS_BIN="$repo/target/debug/mcp-tasks"
fi
gateway_pid=""
trap 'kill "$server_pid" $gateway_pid 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for front in gw-stdio gw-http; do
  case "$front" in
    gw-stdio) upstream=(--upstream-cmd "$CONFORMANCE_BIN --stdio") ;;
    gw-http) upstream=(--upstream-url "$url") ;;
  esac
  "$MCP_TASKS_BIN" serve --listen 127.0.0.1:0 --store memory "${upstream[@]}" \
    2>"$out/$front.log" &
  gateway_pid=$!
  gw_url=""
  for _ in $(seq 1 100); do
    gw_url="$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$out/$front.log" | head -n1)"
    [ -n "$gw_url" ] && break
    kill -0 "$gateway_pid" 2>/dev/null || { cat "$out/$front.log" >&2; echo "conformance: the gateway exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$gw_url" ] || { echo "conformance: the gateway did not start listening" >&2; exit 1; }
  for version in 2025-11-25 2026-07-28; do
    for scenario in $(scenarios_of "$version"); do
      [[ "$scenario" =~ ^($GATEWAY_SCENARIOS)$ ]] || continue
      [[ "$scenario" =~ ^($filter)$ ]] || continue
      log="$out/logs/$front-$version-$scenario.log"
      if "${suite[@]}" server --url "$gw_url" --scenario "$scenario" --spec-version "$version" \
        --timeout 30000 >"$log" 2>&1; then
        if grep -q '^SKIPPED' "$log"; then result="n/a"; else result="pass"; fi
      else
        result="FAIL"
        failed=$((failed + 1))
      fi
      printf '%s\t%s\t%s\n' "$front $version" "$scenario" "$result" >>"$out/results.tsv"
    done
  done
  kill "$gateway_pid" 2>/dev/null || true
  wait "$gateway_pid" 2>/dev/null || true
  gateway_pid=""
done

while IFS=$'\t' read -r g s r; do printf '%-22s %-46s %s\n' "$g" "$s" "$r"; done <"$out/results.tsv"
echo
if [ "$failed" -gt 0 ]; then
  echo "conformance: $failed scenario(s) failed; logs in $out/logs/" >&2
  exit 1
fi
echo "conformance: every scenario passed (or is not applicable, or not run), but for $((${#KNOWN_FAILING[@]} + ${#KNOWN_FAILING_CLIENT[@]})) known failure(s) listed above"
