//! The client's era cache per HTTP endpoint (crates/client/src/era_cache.rs) against a
//! small fake server that is 2025-11-25 only, 2026-07-28 only (switchable while it runs)
//! or both, whose `server/discover` may carry a `ttlMs`, and that counts the detection
//! probes (`server/discover`) and `initialize`s it gets.
#![allow(missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_tasks_client::{
    Client, ClientConfig, ClientError, HttpClientConfig, Revision, RevisionChoice,
};
use serde_json::{Value, json};

#[derive(Default)]
struct State {
    modern: AtomicBool,
    /// Both eras: `server/discover` lists 2025-11-25 too, and `initialize` is served.
    dual: AtomicBool,
    /// The `ttlMs` of the `DiscoverResult`, if any.
    ttl_ms: Mutex<Option<u64>>,
    probes: AtomicUsize,
    initializes: AtomicUsize,
}

/// The fake endpoint: its URL and counters (a legacy HTTP upstream of the gateway too).
pub(crate) struct Fake {
    pub(crate) url: String,
    state: Arc<State>,
}

impl Fake {
    pub(crate) fn start(modern: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let state = Arc::new(State::default());
        state.modern.store(modern, Ordering::SeqCst);
        let st = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let st = Arc::clone(&st);
                std::thread::spawn(move || serve(&st, stream));
            }
        });
        Self { url, state }
    }

    pub(crate) fn probes(&self) -> usize {
        self.state.probes.load(Ordering::SeqCst)
    }

    pub(crate) fn initializes(&self) -> usize {
        self.state.initializes.load(Ordering::SeqCst)
    }

    fn set_modern(&self, modern: bool) {
        self.state.modern.store(modern, Ordering::SeqCst);
    }

    /// A server of both eras.
    fn start_dual() -> Self {
        let fake = Self::start(true);
        fake.state.dual.store(true, Ordering::SeqCst);
        fake
    }

    fn set_ttl_ms(&self, ttl: Option<u64>) {
        *self.state.ttl_ms.lock().unwrap() = ttl;
    }

    async fn connect(&self, protocol: RevisionChoice) -> Result<Client, ClientError> {
        self.connect_preferring(protocol, Revision::V2026_07_28)
            .await
    }

    async fn connect_preferring(
        &self,
        protocol: RevisionChoice,
        prefer: Revision,
    ) -> Result<Client, ClientError> {
        Client::connect_http(
            HttpClientConfig::new(self.url.clone()),
            ClientConfig::default()
                .with_protocol(protocol)
                .with_prefer_revision(prefer),
        )
        .await
    }
}

/// One HTTP/1.1 exchange, then the connection is closed.
fn serve(st: &State, stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0usize;
    let mut version = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let (k, v) = line.split_once(':').unwrap_or((&line, ""));
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
        if k == "content-length" {
            length = v.parse().unwrap_or(0);
        } else if k == "mcp-protocol-version" {
            version = v;
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let (status, headers, out) = answer(st, &request_line, &version, &body);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{out}",
        out.len()
    );
}

fn answer(
    st: &State,
    request_line: &str,
    version: &str,
    body: &[u8],
) -> (&'static str, String, String) {
    if !request_line.starts_with("POST") {
        // No standalone stream, nothing to delete.
        return ("405 Method Not Allowed", String::new(), String::new());
    }
    let msg: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let method = msg["method"].as_str().unwrap_or_default();
    let id = msg.get("id").cloned();
    if method == "server/discover" {
        st.probes.fetch_add(1, Ordering::SeqCst);
    }
    if method == "initialize" {
        st.initializes.fetch_add(1, Ordering::SeqCst);
    }
    let modern_request = version == "2026-07-28";
    let result = |r: Value| json!({"jsonrpc": "2.0", "id": id, "result": r}).to_string();
    let dual = st.dual.load(Ordering::SeqCst);
    if st.modern.load(Ordering::SeqCst) && (modern_request || !dual) {
        if !modern_request {
            // A modern-only server rejects what lacks the modern headers.
            return (
                "400 Bad Request",
                String::new(),
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "this server speaks 2026-07-28 only"}}).to_string(),
            );
        }
        let r = match method {
            "server/discover" => {
                let versions = if dual {
                    json!(["2026-07-28", "2025-11-25"])
                } else {
                    json!(["2026-07-28"])
                };
                let mut r = json!({"resultType": "complete", "supportedVersions": versions,
                "capabilities": {"tools": {}}, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern", "version": "1"}}});
                if let Some(ttl) = *st.ttl_ms.lock().unwrap() {
                    r["ttlMs"] = json!(ttl);
                    r["cacheScope"] = json!("public");
                }
                r
            }
            _ => json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}),
        };
        return ("200 OK", String::new(), result(r));
    }
    if modern_request {
        // A legacy server: a 400 without a modern JSON-RPC error body.
        return (
            "400 Bad Request",
            String::new(),
            "{\"error\": \"Bad Request: unsupported protocol version\"}".into(),
        );
    }
    match (method, id.is_some()) {
        ("initialize", _) => (
            "200 OK",
            "Mcp-Session-Id: s-1\r\n".into(),
            result(
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-legacy", "version": "1"}}),
            ),
        ),
        (_, false) => ("202 Accepted", String::new(), String::new()),
        _ => ("200 OK", String::new(), result(json!({"tools": []}))),
    }
}

#[tokio::test]
async fn a_legacy_endpoint_is_probed_once_then_initialized_at_once() {
    let fake = Fake::start(false);
    for n in 1..=3 {
        let c = fake.connect(RevisionChoice::Auto).await.unwrap();
        assert_eq!(c.revision(), Revision::V2025_11_25);
        assert!(c.list_tools().await.unwrap().is_empty());
        assert_eq!(fake.probes(), 1, "connection {n}");
        assert_eq!(fake.initializes(), n);
        c.close().await;
    }
    // `--protocol` overrides the cache: modern is asked (and refused) again.
    let e = fake
        .connect(RevisionChoice::Fixed(Revision::V2026_07_28))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e}");
    assert_eq!(fake.probes(), 2);
    let c = fake
        .connect(RevisionChoice::Fixed(Revision::V2025_11_25))
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2025_11_25);
    assert_eq!(fake.probes(), 2);
}

#[tokio::test]
async fn a_modern_endpoint_starts_from_the_cached_discover_result() {
    let fake = Fake::start(true);
    let a = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(a.revision(), Revision::V2026_07_28);
    assert_eq!(fake.probes(), 1);
    let b = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(b.revision(), Revision::V2026_07_28);
    assert_eq!(b.initialize_result().server_info["name"], "fake-modern");
    assert!(b.list_tools().await.unwrap().is_empty());
    assert_eq!(
        fake.probes(),
        1,
        "the second client sent no server/discover"
    );
    assert_eq!(fake.initializes(), 0);
    // Another path on the same host is another endpoint.
    let other = HttpClientConfig::new(fake.url.replace("/mcp", "/other"));
    let c = Client::connect_http(other, ClientConfig::default())
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!(fake.probes(), 2);
}

#[tokio::test]
async fn a_cached_legacy_era_contradicted_by_the_server_is_detected_again() {
    let fake = Fake::start(false);
    fake.connect(RevisionChoice::Auto)
        .await
        .unwrap()
        .close()
        .await;
    assert_eq!((fake.probes(), fake.initializes()), (1, 1));
    // The server is upgraded: initialize is refused with 400, the era found again.
    fake.set_modern(true);
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!((fake.probes(), fake.initializes()), (2, 2));
    // ... and kept.
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!(fake.probes(), 2);
}

#[tokio::test]
async fn a_cached_modern_era_contradicted_by_the_server_is_detected_again() {
    let fake = Fake::start(true);
    fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(fake.probes(), 1);
    // The server is downgraded: a client made from the cache meets the legacy 400 on its
    // first request, which drops the cached era ...
    fake.set_modern(false);
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    let e = c.list_tools().await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Transport { error, .. } if error.http_status == Some(400)),
        "{e}"
    );
    assert_eq!(fake.probes(), 1);
    // ... and the next connection detects it again, and keeps the new answer.
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2025_11_25);
    assert_eq!((fake.probes(), fake.initializes()), (2, 1));
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2025_11_25);
    assert_eq!((fake.probes(), fake.initializes()), (2, 2));
}

/// Schema (`CacheableResult.ttlMs`): "If 0, The response SHOULD be considered immediately
/// stale"; "If positive, the client SHOULD consider the result fresh for this many
/// milliseconds after receiving the response."
#[tokio::test]
async fn the_discover_result_is_kept_as_long_as_its_ttl_says() {
    let fake = Fake::start(true);
    fake.set_ttl_ms(Some(0));
    for n in 1..=3 {
        let c = fake.connect(RevisionChoice::Auto).await.unwrap();
        assert_eq!(c.revision(), Revision::V2026_07_28);
        assert_eq!(fake.probes(), n, "a result stale at once is not kept");
    }
    fake.set_ttl_ms(Some(60_000));
    fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(fake.probes(), 4);
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!(fake.probes(), 4, "fresh for the server's 60 s");
}

/// A server whose `server/discover` lists both eras is spoken to in the era the client
/// prefers for it (the CLI prefers 2025-11-25 for what only that era has); its
/// `DiscoverResult` stays cached, so that neither preference probes again.
#[tokio::test]
async fn a_dual_era_endpoint_is_spoken_to_in_the_preferred_era() {
    let fake = Fake::start_dual();
    let c = fake
        .connect_preferring(RevisionChoice::Auto, Revision::V2025_11_25)
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2025_11_25);
    assert!(c.list_tools().await.unwrap().is_empty());
    assert_eq!((fake.probes(), fake.initializes()), (1, 1));
    // From the cache: initialize at once.
    let c = fake
        .connect_preferring(RevisionChoice::Auto, Revision::V2025_11_25)
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2025_11_25);
    assert_eq!((fake.probes(), fake.initializes()), (1, 2));
    // The default preference: 2026-07-28, from the same cached result.
    let c = fake.connect(RevisionChoice::Auto).await.unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert!(c.list_tools().await.unwrap().is_empty());
    assert_eq!((fake.probes(), fake.initializes()), (1, 2));
    // A modern-only server is spoken to in 2026-07-28 whatever the preference.
    let modern = Fake::start(true);
    let c = modern
        .connect_preferring(RevisionChoice::Auto, Revision::V2025_11_25)
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!(modern.initializes(), 0);
}
