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
        // Header names are case-insensitive (tower-http sends them lowercase).
        let expose = r
            .header("access-control-expose-headers")
            .unwrap_or("")
            .to_ascii_lowercase();
        for h in ["mcp-session-id", "mcp-protocol-version", "www-authenticate"] {
            assert!(expose.contains(h), "{expose}");
        }
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
    // A preflight is answered with an "ok status" (any 2xx, Fetch standard).
    assert!((200..300).contains(&pre.status), "{}", pre.status);
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

#[tokio::test]
async fn other_paths_get_404_and_other_methods_405_with_json_rpc_errors() {
    let server = Server::start(&[]);
    let r = send(server.addr, "POST", "/other", &[], b"{}").await;
    assert_eq!(r.status, 404);
    let body = r.json().await;
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("/mcp"),
        "{body}"
    );
    let r = send(server.addr, "PUT", "/mcp", &[], b"{}").await;
    assert_eq!(r.status, 405);
    let allow = r.header("allow").unwrap_or("").to_owned();
    for m in ["GET", "POST", "DELETE"] {
        assert!(allow.contains(m), "{allow}");
    }
    let body = r.json().await;
    assert_eq!(body["error"]["code"], -32600, "{body}");
    // A foreign origin is refused before routing, on any path.
    let r = send(
        server.addr,
        "GET",
        "/other",
        &[("Origin".into(), "http://evil.example".into())],
        b"",
    )
    .await;
    assert_eq!(r.status, 403);
}
