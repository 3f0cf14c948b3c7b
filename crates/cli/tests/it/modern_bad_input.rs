//! Bad input in the 2026-07-28 era, against the binary over stdio: each gets a precise
//! JSON-RPC error naming what is wrong, nothing changes, and the server keeps serving
//! (the in-process tests of `crates/server/tests/it/modern*.rs` cover the same rules on
//! the library; these prove them end to end, on the process a client really spawns).

use mcp_tasks_testkit::wire::modern_meta;
use serde_json::{Value, json};

use crate::common::Stdio;

fn ext() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}})
}

/// Send `method` with these `params` as they are (no `_meta` added); the response.
fn raw(s: &mut Stdio, id: &str, method: &str, params: Value) -> Value {
    s.send_raw(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
    );
    s.response_to(&json!(id))
}

/// `method` with a well-formed modern `_meta` declaring `caps`.
fn modern(s: &mut Stdio, id: &str, method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = modern_meta(caps);
    raw(s, id, method, params)
}

fn error(r: &Value, code: i64, mentions: &str) -> Value {
    assert_eq!(r["error"]["code"], code, "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(mentions), "{mentions:?} not in {r}");
    r["error"].clone()
}

/// The server still answers, in both eras.
fn still_serving(s: &mut Stdio, n: &str) {
    let d = modern(
        s,
        &format!("alive-{n}"),
        "server/discover",
        json!({}),
        json!({}),
    );
    assert_eq!(d["result"]["resultType"], "complete", "{d}");
}

#[test]
fn malformed_modern_meta_is_refused_precisely_and_the_server_keeps_serving() {
    let mut s = Stdio::spawn(&[]);
    let v = "io.modelcontextprotocol/protocolVersion";
    let caps = "io.modelcontextprotocol/clientCapabilities";
    // The version but no capabilities.
    let r = raw(
        &mut s,
        "a",
        "tools/list",
        json!({"_meta": {v: "2026-07-28"}}),
    );
    error(&r, -32602, "clientCapabilities");
    // Capabilities that are not an object.
    let r = raw(
        &mut s,
        "b",
        "tools/list",
        json!({"_meta": {v: "2026-07-28", caps: "all"}}),
    );
    error(&r, -32602, "clientCapabilities");
    // A version that is not a string.
    let r = raw(
        &mut s,
        "c",
        "server/discover",
        json!({"_meta": {v: 20260728, caps: {}}}),
    );
    error(&r, -32602, "protocolVersion");
    still_serving(&mut s, "1");
    // Capabilities but no version: -32602 naming the missing key (not -32002).
    let r = raw(&mut s, "d0", "tools/list", json!({"_meta": {caps: {}}}));
    error(&r, -32602, "protocolVersion");
    // No `_meta` at all, and this connection has not initialized: -32602 naming both
    // ways in.
    let r = raw(&mut s, "d", "tools/list", json!({}));
    let e = error(&r, -32602, "protocolVersion");
    assert!(e["message"].as_str().unwrap().contains("initialize"), "{r}");
    // A `_meta` that is not an object is not a modern request either.
    let r = raw(
        &mut s,
        "e",
        "server/discover",
        json!({"_meta": "2026-07-28"}),
    );
    error(&r, -32601, "server/discover");
    still_serving(&mut s, "2");
}

#[test]
fn an_unsupported_version_on_stdio_is_32022_listing_the_supported_ones() {
    let mut s = Stdio::spawn(&[]);
    for (n, version) in ["1900-01-01", "2025-11-25", ""].into_iter().enumerate() {
        let mut meta = modern_meta(json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(version);
        let r = raw(
            &mut s,
            &format!("v{n}"),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "_meta": meta}),
        );
        let e = error(&r, -32022, "");
        assert_eq!(e["data"]["requested"], version, "{r}");
        let supported = e["data"]["supported"].as_array().unwrap();
        assert_eq!(supported[0], "2026-07-28", "{r}");
        assert!(supported.contains(&json!("2025-11-25")), "{r}");
    }
    still_serving(&mut s, "v");
    // The legacy era still opens on the same process.
    s.initialize();
}

#[test]
fn bad_tasks_update_input_is_refused_and_the_task_waits_on() {
    let mut s = Stdio::spawn(&[]);
    // Unknown task.
    let r = modern(
        &mut s,
        "u1",
        "tasks/update",
        json!({"taskId": "no-such-task", "inputResponses": {}}),
        ext(),
    );
    error(&r, -32602, "");
    // A task that asks.
    let c = modern(
        &mut s,
        "c",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Name?"}}),
        ext(),
    );
    assert_eq!(c["result"]["resultType"], "task", "{c}");
    let id = c["result"]["taskId"].as_str().unwrap().to_owned();
    let key = {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let mut n = 0;
        loop {
            n += 1;
            let t = modern(
                &mut s,
                &format!("g{n}"),
                "tasks/get",
                json!({"taskId": id}),
                ext(),
            );
            if let Some(k) = t["result"]["inputRequests"]
                .as_object()
                .and_then(|m| m.keys().next().cloned())
            {
                break k;
            }
            assert!(std::time::Instant::now() < deadline, "never asked: {t}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    // `inputResponses` that is not an object.
    let r = modern(
        &mut s,
        "u2",
        "tasks/update",
        json!({"taskId": id, "inputResponses": [1, 2]}),
        ext(),
    );
    error(&r, -32602, "inputResponses");
    // No `inputResponses`.
    let r = modern(&mut s, "u3", "tasks/update", json!({"taskId": id}), ext());
    error(&r, -32602, "inputResponses");
    // An entry that is not an object.
    let r = modern(
        &mut s,
        "u4",
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.clone(): "Ada"}}),
        ext(),
    );
    error(&r, -32602, &key);
    // An elicitation answer of the wrong shape (no valid `action`).
    let r = modern(
        &mut s,
        "u5",
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.clone(): {"action": "maybe"}}}),
        ext(),
    );
    error(&r, -32602, "action");
    // Nothing changed: still asking, with the same key.
    let t = modern(&mut s, "g", "tasks/get", json!({"taskId": id}), ext());
    assert_eq!(t["result"]["status"], "input_required", "{t}");
    assert!(t["result"]["inputRequests"].get(&key).is_some(), "{t}");
    // A valid answer completes it.
    let ack = modern(
        &mut s,
        "u6",
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"answer": "Ada"}}}}),
        ext(),
    );
    assert_eq!(
        ack["result"],
        json!({"resultType": "complete", "_meta": ack["result"]["_meta"]}),
        "{ack}"
    );
    still_serving(&mut s, "t");
}

#[test]
fn a_client_with_only_the_legacy_tasks_capability_is_non_declaring() {
    let mut s = Stdio::spawn(&[]);
    let legacy = json!({"tasks": {"requests": {"elicitation": {"create": {}}}}, "elicitation": {"form": {}}});
    let r = modern(
        &mut s,
        "a",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "?"}}),
        legacy.clone(),
    );
    let e = error(&r, -32021, "");
    assert_eq!(
        e["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{r}"
    );
    let r = modern(&mut s, "g", "tasks/get", json!({"taskId": "x"}), legacy);
    error(&r, -32021, "");
    still_serving(&mut s, "l");
}

/// Streamable HTTP: "Servers MUST validate the `Origin` header on all incoming
/// connections": a 2026-07-28 POST (no session, no initialize) from a foreign origin is
/// 403 before any dispatch, and the same request without it is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_post_from_a_foreign_origin_is_403() {
    use crate::http_common::{Server, send};
    let server = Server::start(&[]);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                      "params": {"_meta": modern_meta(json!({}))}})
    .to_string();
    let headers = |origin: Option<&str>| {
        let mut h: Vec<(String, String)> = vec![
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("MCP-Protocol-Version".into(), "2026-07-28".into()),
            ("Mcp-Method".into(), "server/discover".into()),
        ];
        if let Some(o) = origin {
            h.push(("Origin".into(), o.into()));
        }
        h
    };
    let r = send(
        server.addr,
        "POST",
        "/mcp",
        &headers(Some("http://evil.example")),
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.status, 403);
    let r = send(server.addr, "POST", "/mcp", &headers(None), body.as_bytes()).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json().await["result"]["resultType"], "complete");
}
