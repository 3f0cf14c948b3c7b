//! Bad input gets the right JSON-RPC error, and the server keeps serving.

use mcp_tasks_server::ServerConfig;
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};

use crate::support::{serve, server};

async fn assert_error_then_ping(s: &mut Wire, raw: &str, code: i64, id: &Value) {
    s.send_raw(raw).await;
    let r = s.recv().await;
    assert_eq!(r["error"]["code"], code, "{raw} -> {r}");
    // An unreadable id is omitted (MCP's schema has no null id; see docs/adr/0001).
    assert_eq!(&r["id"], id, "{raw} -> {r}");
    assert_eq!(
        s.ok("ping", json!({})).await,
        json!({}),
        "server still serves after {raw}"
    );
}

#[tokio::test]
async fn parse_error_is_32700_with_null_id() {
    let mut s = server().await;
    s.initialize().await;
    assert_error_then_ping(
        &mut s,
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
        -32700,
        &Value::Null,
    )
    .await;
    assert_error_then_ping(&mut s, "not json at all", -32700, &Value::Null).await;
}

#[tokio::test]
async fn invalid_requests_are_32600() {
    let mut s = server().await;
    s.initialize().await;
    for (raw, id) in [
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
        ("[]", Value::Null),
        ("42", Value::Null),
        (r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#, json!(9)),
        (r#"{"jsonrpc":"2.0","id":10,"method":5}"#, json!(10)),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"ping","params":"x"}"#,
            json!(11),
        ),
    ] {
        assert_error_then_ping(&mut s, raw, -32600, &id).await;
    }
}

#[tokio::test]
async fn unknown_method_is_32601() {
    let mut s = server().await;
    s.initialize().await;
    assert_error_then_ping(
        &mut s,
        r#"{"jsonrpc":"2.0","id":"u","method":"no/such"}"#,
        -32601,
        &json!("u"),
    )
    .await;
}

#[tokio::test]
async fn an_oversized_line_is_32600_and_skipped() {
    let mut s = serve(ServerConfig::default().with_max_line_bytes(4096)).await;
    s.initialize().await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "x".repeat(10_000)
    );
    assert_error_then_ping(&mut s, &big, -32600, &Value::Null).await;
    // No response for the skipped request ever arrives.
    let late: Vec<Value> = s.drain_for(std::time::Duration::from_millis(200)).await;
    assert!(late.iter().all(|m| m["id"] != json!(77)), "{late:?}");
}

#[tokio::test]
async fn blank_lines_are_ignored() {
    let mut s = server().await;
    s.send_raw("").await;
    s.send_raw("   ").await;
    s.initialize().await;
    assert_eq!(s.ok("ping", json!({})).await, json!({}));
}
