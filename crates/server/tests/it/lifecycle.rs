//! Lifecycle: version negotiation, requests before initialization, a second
//! `initialize`, pipelined requests.

use serde_json::json;

use crate::support::{server, text_of};

#[tokio::test]
async fn accepts_older_revisions_without_tasks() {
    for v in ["2025-06-18", "2025-03-26"] {
        let mut s = server().await;
        let r = s.initialize_with(v, json!({})).await;
        assert_eq!(r["protocolVersion"], v);
        assert!(r["capabilities"].get("tasks").is_none(), "{v}: {r}");
        // tools/list carries no execution, and a `task` field is ignored: the call runs plainly.
        let tools = s.ok("tools/list", json!({})).await;
        assert!(
            tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
        let r = s
            .ok(
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
            )
            .await;
        assert_eq!(text_of(&r), "slept 1");
        assert_eq!(s.err("tasks/list", json!({})).await["code"], -32601);
    }
}

#[tokio::test]
async fn answers_a_newer_revision_with_2025_11_25() {
    let mut s = server().await;
    let r = s.initialize_with("2026-07-28", json!({})).await;
    assert_eq!(r["protocolVersion"], "2025-11-25");
}

#[tokio::test]
async fn server_discover_is_method_not_found_so_clients_fall_back() {
    let mut s = server().await;
    assert_eq!(s.err("server/discover", json!({})).await["code"], -32601);
    s.initialize().await;
}

#[tokio::test]
async fn refuses_requests_before_initialize_with_a_clear_error() {
    let mut s = server().await;
    let e = s.err("tools/list", json!({})).await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("initialize"), "{e}");
    // ping is allowed at any time
    assert_eq!(s.ok("ping", json!({})).await, json!({}));
    s.initialize().await;
    s.ok("tools/list", json!({})).await;
}

#[tokio::test]
async fn a_second_initialize_is_refused() {
    let mut s = server().await;
    s.initialize().await;
    let e = s
        .err(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(e["code"], -32600);
    s.ok("ping", json!({})).await;
}

#[tokio::test]
async fn initialize_without_protocol_version_is_invalid_params_naming_the_field() {
    let mut s = server().await;
    let e = s.err("initialize", json!({"capabilities": {}})).await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("protocolVersion"));
    s.initialize().await;
}

/// What a session keeps from `initialize` for its life is bounded: `capabilities` and
/// `clientInfo` past `MAX_INITIALIZE_KEPT_BYTES` are refused with -32602 naming the sizes;
/// the session stays uninitialized and a normal `initialize` then succeeds.
#[tokio::test]
async fn an_initialize_past_the_kept_bytes_bound_is_refused() {
    use mcp_tasks_server::MAX_INITIALIZE_KEPT_BYTES;
    let mut s = server().await;
    let big = "x".repeat(MAX_INITIALIZE_KEPT_BYTES);
    for params in [
        json!({"protocolVersion": "2025-11-25", "capabilities": {"experimental": {"k": big}}}),
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1", "description": big}}),
    ] {
        let e = s.err("initialize", params).await;
        assert_eq!(e["code"], -32602, "{e}");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains(&format!("{MAX_INITIALIZE_KEPT_BYTES}-byte bound")),
            "{e}"
        );
    }
    // Just within the bound: kept.
    let within = "x".repeat(MAX_INITIALIZE_KEPT_BYTES - 64);
    s.ok(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"experimental": {"k": within}}}),
    )
    .await;
}

#[tokio::test]
async fn requests_pipelined_after_initialize_see_it() {
    let mut s = server().await;
    let init = json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"});
    s.send_raw(&format!("{init}\n{list}")).await;
    let r = s.response_to(&json!("l")).await;
    assert!(r.get("result").is_some(), "{r}");
}
