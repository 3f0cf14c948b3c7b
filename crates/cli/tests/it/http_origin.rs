//! `Origin` validation (403 for a foreign origin on every request; loopback and
//! `--allowed-origin` accepted; no header accepted) and CORS for browser clients.

use crate::http_common;

use http_common::{Client, Server, send};
use serde_json::json;

#[tokio::test]
async fn foreign_origins_get_403_on_every_method() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let mut evil = c.clone();
    evil.origin = Some("http://evil.example".into());
    let r = evil
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(r.status, 403);
    let body = r.json().await;
    assert!(body.get("id").is_none(), "{body}");
    assert_eq!(evil.get(None).await.status, 403);
    assert_eq!(evil.delete().await.status, 403);
    let pre = send(
        server.addr,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin".into(), "http://evil.example".into()),
            ("Access-Control-Request-Method".into(), "POST".into()),
        ],
        b"",
    )
    .await;
    assert_eq!(pre.status, 403);
    // Even initialize (no session yet) is refused, and a DNS-rebinding name for localhost
    // is not loopback.
    let mut fresh = Client::new(&server);
    fresh.origin = Some("http://localhost.evil.example:8080".into());
    let r = fresh
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .await;
    assert_eq!(r.status, 403);
    // The session itself is untouched.
    c.rpc("ping", json!({})).await;
}

#[tokio::test]
async fn loopback_and_configured_origins_are_served_with_cors() {
    let server = Server::start(&["--allowed-origin", "https://app.example.com"]);
    for origin in [
        "http://localhost:6274",
        "http://127.0.0.1:3000",
        "https://app.example.com",
    ] {
        let mut c = Client::new(&server);
        c.origin = Some(origin.into());
        c.initialize().await;
        let (_, r) = c.request("ping", json!({})).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("access-control-allow-origin"), Some(origin));
        let expose = r.header("access-control-expose-headers").unwrap_or("");
        assert!(expose.contains("Mcp-Session-Id"), "{expose}");
    }
    // Preflight.
    let pre = send(
        server.addr,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin".into(), "https://app.example.com".into()),
            ("Access-Control-Request-Method".into(), "POST".into()),
            (
                "Access-Control-Request-Headers".into(),
                "content-type, mcp-session-id, authorization".into(),
            ),
        ],
        b"",
    )
    .await;
    assert_eq!(pre.status, 204);
    assert_eq!(
        pre.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    let allow = pre
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in [
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "authorization",
        "last-event-id",
    ] {
        assert!(allow.contains(h), "{allow}");
    }
    assert!(
        pre.header("access-control-allow-methods")
            .unwrap()
            .contains("DELETE")
    );
    // Another origin is still refused.
    let mut c = Client::new(&server);
    c.origin = Some("https://other.example.com".into());
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
        .await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn requests_without_origin_are_served() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    assert!(c.origin.is_none());
    c.initialize().await;
    let (_, r) = c.request("ping", json!({})).await;
    assert!(r.header("access-control-allow-origin").is_none());
}
