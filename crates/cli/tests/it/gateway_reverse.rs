//! Gateway, the reverse bridge: a 2025-11-25 client in front of a 2026-07-28 upstream
//! (`--upstream-protocol modern`; docs/adr/0005-two-generations.md). The upstream is our
//! own `mcp-tasks serve` over stdio, spoken to in 2026-07-28 (it answers with SEP-2663
//! tasks and `inputRequests`), keeping its tasks in a SQLite file the test reads.

use std::path::Path;

use serde_json::{Value, json};

use crate::client_support::HttpServer;
use crate::common::{Stdio, bin, text_of};
use crate::gateway_common::{
    an_upstream_question_is_answered, listed_tool, task_id, task_result, until_terminal,
    upstream_db, wait_upstream,
};

/// A gateway on stdio in front of a modern `mcp-tasks serve` keeping its tasks in
/// `dir/up.db` (a call not finished within 100 ms becomes an upstream task), initialized
/// as a 2025-11-25 client with elicitation and sampling.
fn gateway(dir: &Path) -> Stdio {
    let upstream = format!(
        "{} serve --stdio --task-after 100ms --store sqlite:{}",
        bin(),
        upstream_db(dir).display()
    );
    let mut s = Stdio::spawn(&["--upstream-cmd", &upstream, "--upstream-protocol", "modern"]);
    s.initialize();
    s
}

/// The same in front of `mcp-tasks serve` over Streamable HTTP, the protocol chosen by
/// `MCP_TASKS_UPSTREAM_PROTOCOL` (the environment variable of the flag).
fn http_gateway(dir: &Path) -> (Stdio, HttpServer) {
    let store = format!("sqlite:{}", upstream_db(dir).display());
    let up = HttpServer::start(&["--task-after", "100ms", "--store", &store]);
    let mut s = Stdio::spawn_args(
        &[
            "serve",
            "--stdio",
            "--store",
            "memory",
            "--upstream-url",
            &up.url,
        ],
        &[("MCP_TASKS_UPSTREAM_PROTOCOL", "modern")],
    );
    s.initialize();
    (s, up)
}

#[test]
fn upstream_tools_are_optional_and_a_sleep_task_completes() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = gateway(dir.path());
    let tools = s.ok("tools/list", json!({}))["tools"].clone();
    let tools = tools.as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "ask"), "{tools:?}");
    for t in tools {
        assert_eq!(t["execution"]["taskSupport"], "optional", "{t}");
    }
    // A quick plain call: the upstream answers `complete`, passed down as a legacy result.
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    );
    assert_eq!(text_of(&r), "slept 1");
    assert!(r.get("resultType").is_none(), "{r}");

    // A legacy task whose upstream call outlives --task-after: an upstream task, followed.
    let id = task_id(&s.create_task("sleep", json!({"ms": 600})));
    let r = task_result(&mut s, &id);
    assert_eq!(text_of(&r["result"]), "slept 600", "{r}");
    assert!(r["result"].get("resultType").is_none(), "{r}");
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
    wait_upstream(dir.path(), "600", "completed");
}

#[test]
fn an_upstream_question_is_asked_on_tasks_result_and_answered_with_tasks_update() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = gateway(dir.path());
    an_upstream_question_is_answered(&mut s, dir.path(), "colour?", "blue");
}

#[test]
fn cancelling_the_task_cancels_the_upstream_task() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = gateway(dir.path());
    let id = task_id(&s.create_task("sleep", json!({"ms": 60_000})));
    wait_upstream(dir.path(), "60000", "working");
    let c = s.ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(c["status"], "cancelled", "{c}");
    wait_upstream(dir.path(), "60000", "cancelled");
}

#[test]
fn an_upstream_error_fails_the_task_and_is_error_stays_a_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = gateway(dir.path());

    let id = task_id(&s.create_task(
        "error",
        json!({"message": "broken", "code": -32001, "ms": 400}),
    ));
    let r = task_result(&mut s, &id);
    // 2026-07-28 (basic, "Error Codes"): the legacy sub-range -32000..-32019 "new
    // implementations SHOULD NOT use": the upstream answers the gateway in 2026-07-28, so
    // the tool's -32001 arrives as -32603 with the code in `data.originalCode`, and the
    // gateway passes that on.
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(r["error"]["data"]["originalCode"], -32001, "{r}");
    assert_eq!(r["error"]["message"], "broken", "{r}");
    assert_eq!(until_terminal(&mut s, &id)["status"], "failed");
    wait_upstream(dir.path(), "broken", "failed");

    let id = task_id(&s.create_task("fail", json!({"message": "bad input", "ms": 400})));
    let r = task_result(&mut s, &id);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(text_of(&r["result"]), "bad input");
    // 2025-11-25: a tool result with isError ends the task `failed`. The upstream stores
    // its task `failed` too (one task, read `completed` only by a 2026-07-28 client).
    assert_eq!(until_terminal(&mut s, &id)["status"], "failed");
    wait_upstream(dir.path(), "bad input", "failed");

    // Plain calls: the error and the isError result pass as the upstream sent them (in
    // 2026-07-28, which "MUST NOT emit" -32002: -32603 with the code in `data`).
    let e = s.err(
        "tools/call",
        json!({"name": "error", "arguments": {"message": "now", "code": -32002}}),
    );
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(e["data"]["originalCode"], -32002, "{e}");
    let r = s.ok(
        "tools/call",
        json!({"name": "fail", "arguments": {"message": "plain bad"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
}

#[test]
fn over_http_a_question_and_a_cancel_reach_the_modern_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, _up) = http_gateway(dir.path());
    let ask = listed_tool(&mut s, "ask");
    assert_eq!(ask["execution"]["taskSupport"], "optional", "{ask}");

    let id = task_id(&s.create_task("ask", json!({"question": "size?"})));
    let rid = s.start("tasks/result", json!({"taskId": id}));
    let req = s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["message"], "size?");
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"answer": "large"}}}));
    let r = s.response_to(&rid);
    assert_eq!(text_of(&r["result"]), "large", "{r}");
    wait_upstream(dir.path(), "size?", "completed");

    let id = task_id(&s.create_task("sleep", json!({"ms": 60_000})));
    wait_upstream(dir.path(), "60000", "working");
    s.ok("tasks/cancel", json!({"taskId": id}));
    wait_upstream(dir.path(), "60000", "cancelled");
}

#[test]
fn a_sampling_question_of_an_upstream_task_is_relayed_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = gateway(dir.path());
    let id = task_id(&s.create_task("summarize", json!({"text": "a long text"})));
    let rid = s.start("tasks/result", json!({"taskId": id}));
    let req = s.wait_for("sampling/createMessage", |m| {
        m["method"] == "sampling/createMessage"
    });
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}}));
    let r = s.response_to(&rid);
    assert!(text_of(&r["result"]).contains("short"), "{r}");
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
}

#[test]
fn auto_finds_a_modern_upstream_and_falls_back_for_a_legacy_one() {
    // Our own server answers server/discover: spoken to in 2026-07-28, so `ask` (its own
    // taskSupport `required`) is listed `optional`, as every tool of a modern upstream.
    let dir = tempfile::tempdir().unwrap();
    let upstream = format!(
        "{} serve --stdio --task-after 100ms --store sqlite:{}",
        bin(),
        upstream_db(dir.path()).display()
    );
    let mut s = Stdio::spawn(&["--upstream-cmd", &upstream, "--upstream-protocol", "auto"]);
    s.initialize();
    let ask = listed_tool(&mut s, "ask");
    assert_eq!(ask["execution"]["taskSupport"], "optional", "{ask}");
    let id = task_id(&s.create_task("sleep", json!({"ms": 400})));
    assert_eq!(text_of(&task_result(&mut s, &id)["result"]), "slept 400");
    wait_upstream(dir.path(), "400", "completed");

    // A 2025-11-25-only upstream refuses server/discover: initialize follows on the same
    // connection and the gateway works as with `legacy`.
    let fake = crate::gateway_common::Fake::new("reverse-auto-legacy", false);
    let mut s = fake.gateway(&["--upstream-protocol", "auto"]);
    let r = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert!(r.get("resultType").is_none(), "{r}");
    let methods: Vec<String> = fake
        .received()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect();
    let discover = methods.iter().position(|m| m == "server/discover");
    let init = methods.iter().position(|m| m == "initialize");
    assert!(
        matches!((discover, init), (Some(d), Some(i)) if d < i),
        "{methods:?}"
    );
}

/// A scripted 2026-07-28 upstream (Node.js): `mrtr` answers `input_required` with one
/// elicitation until the retry carries its answer and the state, then the answer;
/// `forever` always asks again. Every request it receives is appended to `log`.
const MRTR_UPSTREAM: &str = r#"
const { createInterface } = require('node:readline');
const { appendFileSync } = require('node:fs');
const log = process.argv[2];
const send = m => process.stdout.write(JSON.stringify(m) + '\n');
const ask = n => ({ resultType: 'input_required', requestState: 'state-' + n,
  inputRequests: { ['q' + n]: { method: 'elicitation/create', params: { mode: 'form',
    message: 'round ' + n, requestedSchema: { type: 'object', properties: {} } } } } });
createInterface({ input: process.stdin }).on('line', line => {
  const m = JSON.parse(line);
  appendFileSync(log, line + '\n');
  if (m.id === undefined) return;
  const p = m.params || {};
  let result;
  if (m.method === 'server/discover') {
    result = { resultType: 'complete', supportedVersions: ['2026-07-28'],
      capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mrtr', version: '1' } } };
  } else if (m.method === 'tools/list') {
    result = { resultType: 'complete', ttlMs: 0, cacheScope: 'public', tools: [
      { name: 'mrtr', inputSchema: { type: 'object' } },
      { name: 'forever', inputSchema: { type: 'object' } }] };
  } else if (m.method === 'tools/call' && p.name === 'mrtr') {
    const r = p.inputResponses && p.inputResponses.q1;
    result = r && p.requestState === 'state-1'
      ? { resultType: 'complete', content: [{ type: 'text', text: 'got ' + r.content.colour }] }
      : ask(1);
  } else if (m.method === 'tools/call') {
    result = ask(Object.keys(p.inputResponses || {}).length + 1);
  } else {
    return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no ' + m.method } });
  }
  send({ jsonrpc: '2.0', id: m.id, result });
});
"#;

#[test]
fn an_input_required_answer_is_relayed_and_the_call_retried_at_most_32_times() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("mrtr.cjs");
    std::fs::write(&script, MRTR_UPSTREAM).unwrap();
    let log = dir.path().join("mrtr.log");
    let upstream = format!("node {} {}", script.display(), log.display());
    let mut s = Stdio::spawn(&["--upstream-cmd", &upstream, "--upstream-protocol", "modern"]);
    s.initialize();

    // A plain call: the question reaches the client on the call's own stream.
    let id = s.start(
        "tools/call",
        json!({"name": "mrtr", "arguments": {}, "_meta": {"progressToken": "p"}}),
    );
    let req = s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["message"], "round 1");
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"colour": "green"}}}));
    let r = s.response_to(&id);
    assert_eq!(text_of(&r["result"]), "got green", "{r}");
    assert!(r["result"].get("resultType").is_none(), "{r}");
    let received: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    // No session is opened: server/discover first, never initialize or initialized.
    assert_eq!(received[0]["method"], "server/discover", "{received:?}");
    assert!(
        !received.iter().any(|m| m["method"]
            .as_str()
            .is_some_and(|x| x.contains("initialize"))),
        "{received:?}"
    );
    let calls: Vec<&Value> = received
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let retry = &calls[1]["params"];
    assert_eq!(retry["requestState"], "state-1", "{retry}");
    assert_eq!(retry["inputResponses"]["q1"]["content"]["colour"], "green");
    assert_eq!(retry["_meta"]["progressToken"], "p", "{retry}");
    assert_eq!(
        retry["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "{retry}"
    );
    assert!(
        retry["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            ["io.modelcontextprotocol/tasks"]
            .is_object(),
        "{retry}"
    );

    // An upstream that never stops asking: past 32 rounds the call fails.
    let id = s.start("tools/call", json!({"name": "forever", "arguments": {}}));
    let mut asked = 0;
    let r = loop {
        let m = s.recv();
        if m["method"] == "elicitation/create" {
            asked += 1;
            s.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept", "content": {}}}));
        } else if m["id"] == id {
            break m;
        }
    };
    assert_eq!(asked, 32, "one question relayed per round, 32 rounds");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("more than 32 times"), "{r}");
}
