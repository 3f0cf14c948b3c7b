//! Lifecycle: initialize, version negotiation, requests before initialization.

mod common;
use common::Stdio;
use serde_json::json;

#[test]
fn negotiates_2025_11_25_and_declares_tasks() {
    let mut s = Stdio::spawn(&[]);
    let r = s.initialize();
    assert_eq!(r["protocolVersion"], "2025-11-25");
    assert_eq!(
        r["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert_eq!(r["serverInfo"]["name"], "mcp-tasks");
}

#[test]
fn accepts_older_revisions_without_tasks() {
    for v in ["2025-06-18", "2025-03-26"] {
        let mut s = Stdio::spawn(&[]);
        let r = s.initialize_with(v, json!({}));
        assert_eq!(r["protocolVersion"], v);
        assert!(r["capabilities"].get("tasks").is_none(), "{v}: {r}");
        // tools/list carries no execution, and a `task` field is ignored: the call runs plainly.
        let tools = s.ok("tools/list", json!({}));
        assert!(
            tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
        let r = s.ok(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
        );
        assert_eq!(common::text_of(&r), "slept 1");
        assert_eq!(s.err("tasks/list", json!({}))["code"], -32601);
    }
}

#[test]
fn answers_a_newer_revision_with_2025_11_25() {
    let mut s = Stdio::spawn(&[]);
    let r = s.initialize_with("2026-07-28", json!({}));
    assert_eq!(r["protocolVersion"], "2025-11-25");
}

#[test]
fn server_discover_is_method_not_found_so_clients_fall_back() {
    let mut s = Stdio::spawn(&[]);
    assert_eq!(s.err("server/discover", json!({}))["code"], -32601);
    s.initialize();
}

#[test]
fn refuses_requests_before_initialize_with_a_clear_error() {
    let mut s = Stdio::spawn(&[]);
    let e = s.err("tools/list", json!({}));
    assert_eq!(e["code"], -32002);
    assert!(e["message"].as_str().unwrap().contains("initialize"), "{e}");
    // ping is allowed at any time
    assert_eq!(s.ok("ping", json!({})), json!({}));
    s.initialize();
    s.ok("tools/list", json!({}));
}

#[test]
fn a_second_initialize_is_refused() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let e = s.err("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}));
    assert_eq!(e["code"], -32600);
    s.ok("ping", json!({}));
}

#[test]
fn initialize_without_protocol_version_is_invalid_params_naming_the_field() {
    let mut s = Stdio::spawn(&[]);
    let e = s.err("initialize", json!({"capabilities": {}}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("protocolVersion"));
    s.initialize();
}

#[test]
fn requests_pipelined_after_initialize_see_it() {
    let mut s = Stdio::spawn(&[]);
    let init = json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"});
    s.send_raw(&format!("{init}\n{list}"));
    let r = s.response_to(&json!("l"));
    assert!(r.get("result").is_some(), "{r}");
}
