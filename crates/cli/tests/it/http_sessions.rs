//! Sessions over Streamable HTTP: `Mcp-Session-Id` at initialize, 400 without it, 404
//! when unknown or ended, DELETE, idle expiry, the protocol version header, session-less
//! `server/discover`, and what is not a request.

use crate::http_common;

use std::time::Duration;

use http_common::{Auth, BOTH, Client, Server, check, check_response, start_as};
use serde_json::json;

#[tokio::test]
async fn initialize_assigns_a_secure_session_id() {
    let server = Server::start(&[]);
    let mut a = Client::new(&server);
    let init = a.initialize().await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let sid = a.session.clone().unwrap();
    // Visible ASCII, and long enough to be a 128-bit secret.
    assert!(sid.len() >= 32, "{sid}");
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{sid}");
    let mut b = Client::new(&server);
    b.initialize().await;
    assert_ne!(a.session, b.session);
    // The session works.
    let tools = a.rpc("tools/list", json!({})).await;
    assert!(tools["result"]["tools"].as_array().unwrap().len() >= 5);
}

#[tokio::test]
async fn requests_without_a_session_get_400() {
    let server = Server::start(&[]);
    let c = Client::new(&server);
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    assert_eq!(r.status, 400);
    let body = r.json().await;
    assert!(body.get("id").is_none(), "{body}");
    let r = c
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(c.get(None).await.status, 400);
    assert_eq!(c.delete().await.status, 400);
}

#[tokio::test]
async fn unknown_and_deleted_sessions_get_404() {
    for auth in BOTH {
        unknown_and_deleted_sessions_get_404_as(auth).await;
    }
}

async fn unknown_and_deleted_sessions_get_404_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let mut stranger = c.clone();
    stranger.session = Some("00000000000000000000000000000000".into());
    let r = stranger
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        .await;
    assert_eq!(r.status, 404);
    r.json().await;

    // A task started before DELETE keeps running and stays reachable by id.
    let task = c.start_task("sleep", json!({"ms": 300})).await;
    let r = c.delete().await;
    assert_eq!(r.status, 204, "{r:?}");
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}))
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(c.get(None).await.status, 404);
    assert_eq!(c.delete().await.status, 404);

    let mut other = c.fresh();
    other.initialize().await;
    let done = other.wait_status(&task, "completed").await;
    assert_eq!(done["taskId"], task.as_str());
    let result = other.rpc("tasks/result", json!({"taskId": task})).await;
    assert_eq!(result["result"]["content"][0]["text"], "slept 300");
}

#[tokio::test]
async fn idle_sessions_expire() {
    let server = Server::start(&["--session-idle", "300ms"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    // Activity keeps it alive.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        c.rpc("ping", json!({})).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn protocol_version_header_is_checked() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}).to_string();
    let r = c
        .post_with(&[("MCP-Protocol-Version", "1999-01-01")], ping.as_bytes())
        .await;
    assert_eq!(r.status, 400);
    let body = r.json().await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP-Protocol-Version")
    );
    // Supported older revisions and an absent header are accepted.
    let r = c
        .post_with(&[("MCP-Protocol-Version", "2025-06-18")], ping.as_bytes())
        .await;
    assert_eq!(r.status, 200);
    let mut bare = c.clone();
    bare.protocol = None;
    assert_eq!(bare.rpc("ping", json!({})).await["result"], json!({}));
    // GET and DELETE are checked too.
    let mut bad = c.clone();
    bad.protocol = Some("2099-12-31".into());
    assert_eq!(bad.get(None).await.status, 400);
    assert_eq!(bad.delete().await.status, 400);
}

#[tokio::test]
async fn sessionless_server_discover_is_method_not_found() {
    let server = Server::start(&[]);
    let c = Client::new(&server);
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": "d1", "method": "server/discover", "params": {}}))
        .await;
    assert_eq!(r.status, 200);
    assert!(r.is_json());
    assert!(
        r.header("mcp-session-id").is_none(),
        "no session for discover"
    );
    let msg = r.json().await;
    assert_eq!(msg["id"], "d1");
    assert_eq!(msg["error"]["code"], -32601);
}

#[tokio::test]
async fn notifications_and_responses_are_accepted_with_202() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let r = c
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
        .await;
    assert_eq!(r.status, 202);
    assert!(r.bytes().await.is_empty());
    // A response nobody waits for is accepted (and ignored).
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": "nobody", "result": {}}))
        .await;
    assert_eq!(r.status, 202);
}

#[tokio::test]
async fn malformed_bodies_get_400_with_a_jsonrpc_error() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let r = c.post_with(&[], b"{not json").await;
    assert_eq!(r.status, 400);
    let body = r.json().await;
    assert_eq!(body["error"]["code"], -32700);
    assert!(body.get("id").is_none());
    let r = c.post_with(&[], b"[]").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json().await["error"]["code"], -32600);
    let r = c.post_with(&[], br#"{"jsonrpc":"2.0","id":3}"#).await;
    assert_eq!(r.status, 400);
    let body = r.json().await;
    assert_eq!(body["error"]["code"], -32600);
    check(&body);
    let r = c.post_with(&[("Content-Type", "text/plain")], b"{}").await;
    assert_eq!(r.status, 415);
    // The session is still fine.
    let m = c.rpc("ping", json!({})).await;
    check_response("ping", &m);
}

#[tokio::test]
async fn a_request_id_in_flight_cannot_be_reused() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let task = c.start_task("sleep", json!({"ms": 60_000})).await;
    let first = c
        .post(&json!({"jsonrpc": "2.0", "id": 777, "method": "tasks/result", "params": {"taskId": task}}))
        .await;
    assert!(first.is_sse());
    let second = c
        .post(&json!({"jsonrpc": "2.0", "id": 777, "method": "tasks/result", "params": {"taskId": task}}))
        .await;
    assert_eq!(second.status, 200);
    let msg = second.json().await;
    assert_eq!(msg["id"], 777);
    assert_eq!(msg["error"]["code"], -32600);
}

/// Issue 15, item 13: a plain call answered as JSON whose client closes the connection is
/// cancelled (a JSON answer cannot be resumed): its handler stops, so its request id is
/// free again at once instead of "in use" until the handler's end (here 60 s).
#[tokio::test]
async fn a_json_call_whose_client_leaves_is_cancelled() {
    use tokio::io::AsyncWriteExt;

    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let call = |name: &str, args: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": 555, "method": "tools/call",
               "params": {"name": name, "arguments": args}})
        .to_string()
    };
    let body = call("sleep", json!({"ms": 60_000}));
    let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", server.addr);
    for (k, v) in c.headers() {
        let v = if k == "Accept" {
            "application/json".into()
        } else {
            v
        };
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    // While the call runs, its id is in use.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let echo = call("echo", json!({"text": "again"}));
    let json_only = [("Accept", "application/json")];
    let busy = c.post_with(&json_only, echo.as_bytes()).await.json().await;
    assert_eq!(busy["error"]["code"], -32600, "{busy}");
    drop(tcp);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let m = c.post_with(&json_only, echo.as_bytes()).await.json().await;
        if m["result"]["content"][0]["text"] == "again" {
            break;
        }
        assert_eq!(m["error"]["code"], -32600, "{m}");
        assert!(
            std::time::Instant::now() < deadline,
            "the abandoned call still holds its id: {m}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
