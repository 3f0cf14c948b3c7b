//! The transport against a scripted HTTP/1.1 server: the cases a well-behaved server
//! rarely produces (a stream closed after its priming event, a stream without ids, a
//! session that vanished, an error status).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, Request};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use super::*;
use crate::peer::{Handler, RequestContext};

/// One request the fake server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
    fn rpc_method(&self) -> Option<&str> {
        self.body.get("method").and_then(Value::as_str)
    }
}

type Script = Arc<dyn Fn(&Seen, usize) -> Vec<u8> + Send + Sync>;

/// Serves each connection once with what `script` returns for the request (and its
/// index), then closes it.
async fn fake(script: Script) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let script = Arc::clone(&script);
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut r = BufReader::new(r);
                let mut line = String::new();
                r.read_line(&mut line).await.unwrap();
                let method = line.split_whitespace().next().unwrap_or("").to_owned();
                let mut headers = HashMap::new();
                loop {
                    line.clear();
                    r.read_line(&mut line).await.unwrap();
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                    }
                }
                let len: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                r.read_exact(&mut body).await.unwrap();
                let seen = Seen {
                    method,
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                };
                let index = {
                    let mut l = log.lock();
                    l.push(seen.clone());
                    l.len() - 1
                };
                let out = script(&seen, index);
                let _ = w.write_all(&out).await;
                let _ = w.shutdown().await;
            });
        }
    });
    (url, seen)
}

fn json_reply(session: Option<&str>, body: &Value) -> Vec<u8> {
    let text = body.to_string();
    let sid = session.map_or(String::new(), |s| format!("Mcp-Session-Id: {s}\r\n"));
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{sid}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .into_bytes()
}

fn sse_reply(events: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{events}"
    )
    .into_bytes()
}

fn status(code: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn result_for(seen: &Seen, result: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": result})
}

fn init_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "0"}})
}

struct Quiet;

#[async_trait]
impl Handler for Quiet {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        _req: Request,
    ) -> Result<Value, ErrorObject> {
        Ok(json!({}))
    }
}

/// A transport to `url` without a standalone stream, with what `configure` sets.
fn start_with(
    url: &str,
    configure: impl FnOnce(&mut HttpClientConfig),
) -> (Peer, HttpClientTransport) {
    let (peer, rx) = Peer::new(Arc::new(Quiet));
    let mut config = HttpClientConfig::new(url);
    config.standalone_stream = false;
    configure(&mut config);
    let t = HttpClientTransport::start(peer.clone(), rx, config).unwrap();
    (peer, t)
}

/// [`start_with`] a short retry interval and a bearer token.
fn start(url: &str) -> (Peer, HttpClientTransport) {
    start_with(url, |config| {
        config.default_retry = Duration::from_millis(10);
        config.bearer_token = Some("t0k".into());
    })
}

/// A [`start`]ed transport, after the `initialize` handshake.
async fn initialized(url: &str) -> (Peer, HttpClientTransport) {
    let (peer, t) = start(url);
    initialize(&peer).await;
    (peer, t)
}

/// A request of `method`, without params, on the standalone route.
async fn call(peer: &Peer, method: &str) -> Result<Value, crate::PeerError> {
    peer.request(method, None, crate::Route::Standalone).await
}

/// The first request of `method` the fake server saw.
fn first(seen: &Mutex<Vec<Seen>>, method: &str) -> Seen {
    seen.lock()
        .iter()
        .find(|s| s.rpc_method() == Some(method))
        .cloned()
        .unwrap()
}

async fn initialize(peer: &Peer) {
    peer.request(
        "initialize",
        Some(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})),
        crate::Route::Standalone,
    )
    .await
    .unwrap();
    peer.notify("notifications/initialized", None, crate::Route::Standalone)
        .await;
}

fn accepted() -> Vec<u8> {
    b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
}

fn bad_request() -> Vec<u8> {
    status(400, "Bad Request", "{}")
}

#[tokio::test]
async fn json_and_sse_replies_with_session_headers() {
    let (url, seen) = fake(Arc::new(|s: &Seen, _| match s.rpc_method() {
        Some("initialize") => json_reply(Some("s1"), &result_for(s, &init_result())),
        Some("notifications/initialized") => accepted(),
        Some("ping") => sse_reply(&format!(
            "id: e1\ndata: {}\n\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
            result_for(s, &json!({"pong": true}))
        )),
        _ => bad_request(),
    }))
    .await;
    let (peer, t) = initialized(&url).await;
    assert_eq!(call(&peer, "ping").await.unwrap(), json!({"pong": true}));
    assert_eq!(t.session_id().as_deref(), Some("s1"));
    let init = first(&seen, "initialize");
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("authorization"), Some("Bearer t0k"));
    let ping = first(&seen, "ping");
    assert_eq!(ping.method, "POST");
    assert_eq!(ping.header("mcp-session-id"), Some("s1"));
    assert_eq!(ping.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(
        ping.header("accept"),
        Some("application/json, text/event-stream")
    );
}

#[tokio::test]
async fn a_stream_closed_before_the_reply_is_resumed_with_last_event_id() {
    let (url, seen) = fake(Arc::new(|s: &Seen, _| {
        match (s.method.as_str(), s.rpc_method()) {
            ("POST", Some("initialize")) => json_reply(Some("s1"), &result_for(s, &init_result())),
            ("POST", Some("notifications/initialized")) => accepted(),
            // Priming event and a retry, then the connection closes.
            ("POST", Some("slow")) => sse_reply("id: 7-0\ndata:\n\nretry: 20\n\n"),
            ("GET", _) if s.header("last-event-id") == Some("7-0") => sse_reply(&format!(
                "id: 7-1\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "id": 2, "result": {"done": 1}})
            )),
            _ => bad_request(),
        }
    }))
    .await;
    let (peer, t) = initialized(&url).await;
    assert_eq!(call(&peer, "slow").await.unwrap(), json!({"done": 1}));
    assert_eq!(t.resumptions(), 1);
    let get = seen
        .lock()
        .iter()
        .find(|s| s.method == "GET")
        .cloned()
        .unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s1"));
}

#[tokio::test]
async fn a_stream_without_ids_that_ends_early_fails_the_request() {
    let (url, _) = fake(Arc::new(|s: &Seen, _| match s.rpc_method() {
        Some("initialize") => json_reply(None, &result_for(s, &init_result())),
        Some("notifications/initialized") => accepted(),
        _ => sse_reply("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"),
    }))
    .await;
    let (peer, _t) = initialized(&url).await;
    let err = call(&peer, "lost").await.unwrap_err();
    assert!(matches!(err, crate::PeerError::Transport(_)), "{err:?}");
}

#[tokio::test]
async fn a_404_starts_a_new_session_and_retries() {
    let (url, seen) = fake(Arc::new(|s: &Seen, _| {
        let sid = s.header("mcp-session-id").map(str::to_owned);
        match (s.rpc_method(), sid.as_deref()) {
            (Some("initialize"), None) => {
                // First session s1, the replayed initialize gets s2.
                let n = if s.body["id"].is_string() { "s2" } else { "s1" };
                json_reply(Some(n), &result_for(s, &init_result()))
            }
            (Some("notifications/initialized"), Some(_)) => accepted(),
            (Some("work"), Some("s1")) => status(404, "Not Found", "{}"),
            (Some("work"), Some("s2")) => json_reply(None, &result_for(s, &json!({"ok": true}))),
            _ => bad_request(),
        }
    }))
    .await;
    let (peer, t) = initialized(&url).await;
    assert_eq!(call(&peer, "work").await.unwrap(), json!({"ok": true}));
    assert_eq!(t.reinitializations(), 1);
    assert_eq!(t.session_id().as_deref(), Some("s2"));
    let seen = seen.lock().clone();
    let inits: Vec<_> = seen
        .iter()
        .filter(|s| s.rpc_method() == Some("initialize"))
        .collect();
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[0].body["params"], inits[1].body["params"]);
    assert_eq!(inits[1].header("mcp-session-id"), None);
}

#[tokio::test]
async fn http_errors_carry_their_status_and_message() {
    let (url, _) = fake(Arc::new(|s: &Seen, _| match s.rpc_method() {
        Some("initialize") => status(
            500,
            "Internal Server Error",
            r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"boom"}}"#,
        ),
        _ => bad_request(),
    }))
    .await;
    let (peer, _t) = start(&url);
    let err = peer
        .request("initialize", Some(json!({})), crate::Route::Standalone)
        .await
        .unwrap_err();
    let crate::PeerError::Transport(err) = err else {
        panic!("expected a transport error, got {err:?}")
    };
    assert!(
        err.message.contains("boom") && err.message.contains("500"),
        "{err:?}"
    );
    assert_eq!(err.http_status, Some(500));
    assert_eq!(
        err.to_error_object().data.unwrap()[crate::error::TRANSPORT_ERROR_DATA]["httpStatus"],
        json!(500)
    );
}

#[tokio::test]
async fn configured_headers_go_on_every_request_and_managed_ones_are_refused() {
    let (url, seen) = fake(Arc::new(|s: &Seen, _| match s.rpc_method() {
        Some("initialize") => json_reply(Some("s1"), &result_for(s, &init_result())),
        Some("notifications/initialized") => accepted(),
        Some("ping") => json_reply(None, &result_for(s, &json!({}))),
        _ => bad_request(),
    }))
    .await;
    let (peer, _t) = start_with(&url, |config| {
        config.headers = vec![("X-Api-Key".into(), " k-123 ".into())];
    });
    initialize(&peer).await;
    call(&peer, "ping").await.unwrap();
    let seen = seen.lock().clone();
    assert_eq!(seen.len(), 3);
    for s in &seen {
        assert_eq!(s.header("x-api-key"), Some("k-123"), "{:?}", s.rpc_method());
    }

    for (name, value) in [
        ("Mcp-Session-Id", "x"),
        ("accept", "text/plain"),
        ("bad name", "x"),
        ("X-Ok", "line\nbreak"),
    ] {
        let (peer, rx) = Peer::new(Arc::new(Quiet));
        let mut config = HttpClientConfig::new(&url);
        config.headers = vec![(name.into(), value.into())];
        let err = HttpClientTransport::start(peer, rx, config).unwrap_err();
        assert!(
            matches!(&err, HttpClientError::InvalidHeader { name: n, .. } if n == name),
            "{name}: {err}"
        );
    }
}

#[tokio::test]
async fn a_resumed_session_is_used_without_initialize_and_replaced_when_gone() {
    let (url, seen) = fake(Arc::new(|s: &Seen, _| {
        let sid = s.header("mcp-session-id").map(str::to_owned);
        match (s.rpc_method(), sid.as_deref()) {
            (Some("initialize"), None) => json_reply(Some("s2"), &result_for(s, &init_result())),
            (Some("notifications/initialized"), Some("s2")) => accepted(),
            (Some("tasks/get"), Some("old")) => {
                json_reply(None, &result_for(s, &json!({"session": "old"})))
            }
            (Some("work"), Some("old")) => status(404, "Not Found", "{}"),
            (Some("work"), Some("s2")) => json_reply(None, &result_for(s, &json!({"ok": true}))),
            _ => bad_request(),
        }
    }))
    .await;
    let init_params = json!({"protocolVersion": "2025-06-18", "capabilities": {"x": {}}, "clientInfo": {"name": "t", "version": "0"}});
    let (peer, t) = start_with(&url, |config| {
        config.resume = Some(ResumeSession {
            session_id: "old".into(),
            protocol_version: Some("2025-06-18".into()),
            init_params: init_params.clone(),
        });
    });
    assert_eq!(t.session_id().as_deref(), Some("old"));
    let r = call(&peer, "tasks/get").await.unwrap();
    assert_eq!(r, json!({"session": "old"}));
    {
        let seen = seen.lock();
        assert_eq!(seen.len(), 1, "no initialize before the first request");
        assert_eq!(seen[0].header("mcp-protocol-version"), Some("2025-06-18"));
    }
    // The server has forgotten the session: a new one, initialized with the same params.
    assert_eq!(call(&peer, "work").await.unwrap(), json!({"ok": true}));
    assert_eq!(t.session_id().as_deref(), Some("s2"));
    assert_eq!(t.reinitializations(), 1);
    assert_eq!(first(&seen, "initialize").body["params"], init_params);
}

/// 2026-07-28: a request given up on (here by its timeout) is cancelled by dropping its
/// POST, and no `notifications/cancelled` is sent. Spec (cancellation, "Transport-Specific
/// Cancellation"): "Streamable HTTP: Closing the SSE response stream is the cancellation
/// signal. ... No `notifications/cancelled` message is required or expected."
#[tokio::test]
async fn a_modern_request_given_up_on_is_cancelled_by_dropping_its_post() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<String>();
    let posts = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&posts);
    tokio::spawn(async move {
        let mut closed_tx = Some(closed_tx);
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            // Read the head and body, never answer, and report when the client hangs up.
            let mut r = BufReader::new(sock);
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                if line.trim_end().is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body).await;
            let method = serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null)["method"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            log.lock().push(method.clone());
            let mut rest = Vec::new();
            let _ = r.read_to_end(&mut rest).await;
            if let Some(tx) = closed_tx.take() {
                let _ = tx.send(method);
            }
        }
    });
    let (peer, _t) = start_with(&url, |c| {
        c.revision = mcp_tasks_proto::Revision::V2026_07_28
    });
    let params =
        json!({"name": "slow", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let r = peer
        .request_with(
            "tools/call",
            Some(params),
            crate::RequestOptions::new(crate::Route::Standalone)
                .timeout(Some(Duration::from_millis(200))),
        )
        .await;
    assert!(r.is_err(), "{r:?}");
    let hung_up = tokio::time::timeout(Duration::from_secs(5), closed_rx)
        .await
        .expect("the POST of the given-up request was not dropped")
        .unwrap();
    assert_eq!(hung_up, "tools/call");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(*posts.lock(), ["tools/call"], "a notification was POSTed");
}

/// A `tools/list` result read by the transport teaches the tools' `x-mcp-header`
/// parameters (an unannotated or invalid tool is forgotten), for at most
/// `MAX_PARAM_HEADER_TOOLS` tools.
#[tokio::test]
async fn tools_list_results_teach_param_headers_within_a_bound() {
    let (_peer, t) = start("http://127.0.0.1:9/mcp");
    let annotated = |name: &str| {
        json!({"name": name, "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}})
    };
    t.state.learn_param_headers(&json!({"tools": [
        annotated("a"),
        {"name": "plain", "inputSchema": {"type": "object"}},
    ]}));
    assert_eq!(t.state.param_headers.lock().len(), 1);
    assert!(t.state.param_headers.lock().contains_key("a"));
    // Listed again without its annotation: forgotten.
    t.state
        .learn_param_headers(&json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}));
    assert!(t.state.param_headers.lock().is_empty());
    let many: Vec<Value> = (0..MAX_PARAM_HEADER_TOOLS + 10)
        .map(|i| annotated(&format!("t{i}")))
        .collect();
    t.state.learn_param_headers(&json!({ "tools": many }));
    assert_eq!(t.state.param_headers.lock().len(), MAX_PARAM_HEADER_TOOLS);
}
