//! Bad input gets the right JSON-RPC error, and the server keeps serving: what needs the
//! binary (its demo tools, its default line bound). The framing errors themselves are
//! tested in process in `crates/server/tests/it/bad_input.rs`.

use crate::common;
use common::Stdio;
use serde_json::{Value, json};

fn assert_error_then_ping(s: &mut Stdio, raw: &str, code: i64, id: &Value) {
    s.send_raw(raw);
    let r = s.recv();
    assert_eq!(r["error"]["code"], code, "{raw} -> {r}");
    // An unreadable id is omitted (MCP's schema has no null id; see docs/adr/0001).
    assert_eq!(&r["id"], id, "{raw} -> {r}");
    assert_eq!(
        s.ok("ping", json!({})),
        json!({}),
        "server still serves after {raw}"
    );
}

#[test]
fn invalid_params_name_the_field() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let e = s.err("tools/call", json!({"arguments": {}}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("name"), "{e}");
    // Arguments the tool's schema rejects are a tool execution error (2025-11-25 tools
    // page: "Input validation errors"), not -32602.
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": "soon"}}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["content"][0]["text"],
        "Invalid arguments for tool `sleep`: ms: \"soon\" is not of type \"integer\"",
        "{r}"
    );
    let e = s.err("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("nope"), "{e}");
    let e = s.err("tasks/get", json!({"taskId": 5}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("taskId"), "{e}");
    assert_eq!(s.ok("ping", json!({})), json!({}));
}

#[test]
fn the_default_bound_is_16_mib() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    // Just under the bound is served.
    let text = "y".repeat(15 * 1024 * 1024);
    let r = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
    );
    assert_eq!(common::text_of(&r).len(), text.len());
    // Over it is refused, and the server goes on.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(17 * 1024 * 1024)
    );
    assert_error_then_ping(&mut s, &big, -32600, &Value::Null);
}
