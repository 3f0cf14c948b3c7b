//! A JSON-RPC peer speaking newline-delimited messages over an in-process pipe
//! (`tokio::io::duplex`): the requestor's side of an in-process server or gateway.
//!
//! ```ignore
//! let (mut wire, (reader, writer)) = Wire::pair();
//! tokio::spawn(async move { server.serve(Transport::io(reader, writer), std::future::pending()).await });
//! wire.initialize().await;
//! let tools = wire.ok("tools/list", json!({})).await;
//! ```
//!
//! Every message received is validated against the official 2025-11-25 schema, and the
//! result of a request sent through [`Wire::send`] against the schema of its method's
//! result, as the tests driving the binary do. A request sent through
//! [`Wire::start_modern`] (and the `*_modern` helpers) carries the 2026-07-28 per-request
//! `_meta`, and its response is validated against the 2026-07-28 schema instead.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::schema::{LEGACY, MODERN, Revision};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// How long a message is waited for before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(15);

/// The server's end of the pipe: what its `serve_stdio` reads and writes.
pub type ServerIo = (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>);

/// The requestor's end of an in-process pipe to a server.
pub struct Wire {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: Option<WriteHalf<DuplexStream>>,
    backlog: VecDeque<Value>,
    next_id: i64,
    /// Methods of the requests sent, and the schema of their era, to validate their
    /// responses.
    methods: HashMap<String, (String, &'static Revision)>,
    /// The server closed its end.
    pub eof: bool,
}

mcp_tasks_proto::debug_non_exhaustive!(Wire, |s| { backlog: s.backlog, eof: s.eof });

impl Wire {
    /// A pipe (1 MiB each way): our end, and the server's.
    pub fn pair() -> (Self, ServerIo) {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (r, w) = tokio::io::split(ours);
        let wire = Self {
            reader: BufReader::new(r),
            writer: Some(w),
            backlog: VecDeque::new(),
            next_id: 0,
            methods: HashMap::new(),
            eof: false,
        };
        (wire, tokio::io::split(theirs))
    }

    /// Write one line as it is.
    ///
    /// # Panics
    /// When our end was closed or the server's end is gone.
    pub async fn send_raw(&mut self, text: &str) {
        let w = self.writer.as_mut().expect("our end is open");
        w.write_all(text.as_bytes()).await.expect("write");
        w.write_all(b"\n").await.expect("write");
        w.flush().await.expect("flush");
    }

    /// Send a message (a request's method is remembered to validate its result).
    pub async fn send(&mut self, v: &Value) {
        self.send_as(v, &LEGACY).await;
    }

    /// Send a message whose response is validated against `revision`'s schema.
    pub async fn send_as(&mut self, v: &Value, revision: &'static Revision) {
        if let (Some(id), Some(m)) = (v.get("id"), v.get("method").and_then(Value::as_str)) {
            self.methods
                .insert(id.to_string(), (m.to_owned(), revision));
        }
        self.send_raw(&v.to_string()).await;
    }

    /// Close our end: the server sees the end of its input.
    pub fn close(&mut self) {
        self.writer = None;
    }

    /// The next message (backlog first), or `None` at end of input or after `timeout`.
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        self.read_one(timeout).await
    }

    async fn read_one(&mut self, timeout: Duration) -> Option<Value> {
        if self.eof {
            return None;
        }
        let mut line = String::new();
        match tokio::time::timeout(timeout, self.reader.read_line(&mut line)).await {
            Ok(Ok(0) | Err(_)) => {
                self.eof = true;
                None
            }
            Ok(Ok(_)) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the server wrote non-JSON {line:?}: {e}"));
                self.check(&v);
                Some(v)
            }
            Err(_) => None,
        }
    }

    fn check(&self, v: &Value) {
        let sent = v
            .get("id")
            .filter(|_| v.get("method").is_none())
            .and_then(|id| self.methods.get(&id.to_string()));
        let revision = sent.map_or(&LEGACY, |(_, r)| *r);
        revision
            .validate_message(v)
            .unwrap_or_else(|e| panic!("{} schema violation in {v}: {e}", revision.version));
        if let (Some((method, _)), Some(result)) = (sent, v.get("result")) {
            revision
                .validate_result(method, result)
                .unwrap_or_else(|e| {
                    panic!(
                        "{} schema violation in the {method} result {v}: {e}",
                        revision.version
                    )
                });
        }
    }

    /// The next message.
    ///
    /// # Panics
    /// When none comes within [`TIMEOUT`].
    pub async fn recv(&mut self) -> Value {
        self.recv_timeout(TIMEOUT)
            .await
            .expect("a message from the server in time")
    }

    /// The first message matching `pred`; the others stay queued in order.
    ///
    /// # Panics
    /// When none comes within [`TIMEOUT`].
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i).expect("present");
        }
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Some(v) = self.read_one(left).await else {
                panic!("timed out waiting for {what}; backlog: {:?}", self.backlog)
            };
            if pred(&v) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Every message that arrives within `d` (after the backlog).
    pub async fn drain_for(&mut self, d: Duration) -> Vec<Value> {
        let mut out: Vec<Value> = self.backlog.drain(..).collect();
        let deadline = tokio::time::Instant::now() + d;
        while let Some(v) = self
            .read_one(deadline.saturating_duration_since(tokio::time::Instant::now()))
            .await
        {
            out.push(v);
        }
        out
    }

    /// The response to the request `id`.
    pub async fn response_to(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(&format!("the response to {id}"), move |v| {
            v.get("id") == Some(&id) && v.get("method").is_none()
        })
        .await
    }

    /// Send a request; return its id.
    pub async fn start(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Send a 2026-07-28 request: `params` with the per-request `_meta`
    /// ([`modern_meta`] of `capabilities`, merged into any `_meta` already there); its
    /// response is validated against the 2026-07-28 schema. Returns its id.
    pub async fn start_modern(
        &mut self,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> Value {
        let mut params = if params.is_object() {
            params
        } else {
            json!({})
        };
        let meta = params
            .as_object_mut()
            .expect("an object")
            .entry("_meta")
            .or_insert_with(|| json!({}));
        if let (Some(meta), Value::Object(add)) = (meta.as_object_mut(), modern_meta(capabilities))
        {
            for (k, v) in add {
                meta.entry(k).or_insert(v);
            }
        }
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send_as(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            &MODERN,
        )
        .await;
        id
    }

    /// [`Wire::start_modern`], then the whole response.
    pub async fn call_modern(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        let id = self.start_modern(method, params, capabilities).await;
        self.response_to(&id).await
    }

    /// [`Wire::call_modern`], returning its `result`.
    ///
    /// # Panics
    /// On an error response.
    pub async fn ok_modern(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        let r = self.call_modern(method, params, capabilities).await;
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    /// [`Wire::call_modern`], returning its `error`.
    ///
    /// # Panics
    /// On a result.
    pub async fn err_modern(&mut self, method: &str, params: Value, capabilities: Value) -> Value {
        let r = self.call_modern(method, params, capabilities).await;
        r.get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should have failed: {r}"))
    }

    /// Send a request and return the whole response.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params).await;
        self.response_to(&id).await
    }

    /// Send a request and return its `result`.
    ///
    /// # Panics
    /// On an error response.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params).await;
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    /// Send a request and return its `error`.
    ///
    /// # Panics
    /// On a result.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params).await;
        r.get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should have failed: {r}"))
    }

    /// `initialize` with `version` and `capabilities`, then `notifications/initialized`;
    /// returns the `initialize` result.
    pub async fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        let r = self
            .ok(
                "initialize",
                json!({"protocolVersion": version, "capabilities": capabilities,
                       "clientInfo": {"name": "in-process", "version": "0"}}),
            )
            .await;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        r
    }

    /// [`Wire::initialize_with`] 2025-11-25, with form elicitation and sampling.
    pub async fn initialize(&mut self) -> Value {
        self.initialize_with(
            "2025-11-25",
            json!({"elicitation": {"form": {}}, "sampling": {}}),
        )
        .await
    }

    /// Poll `tasks/get` until `pred` holds; returns that task.
    ///
    /// # Panics
    /// When it does not hold within [`TIMEOUT`].
    pub async fn poll_until(
        &mut self,
        id: &str,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let t = self.ok("tasks/get", json!({"taskId": id})).await;
            if pred(&t) {
                return t;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task {id} never became {what}; last: {t}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The 2026-07-28 per-request `_meta`: protocol version, `capabilities`, and a client
/// name.
pub fn modern_meta(capabilities: Value) -> Value {
    use mcp_tasks_proto::modern::{
        CLIENT_CAPABILITIES_META, CLIENT_INFO_META, PROTOCOL_VERSION, PROTOCOL_VERSION_META,
    };
    json!({
        PROTOCOL_VERSION_META: PROTOCOL_VERSION,
        CLIENT_CAPABILITIES_META: capabilities,
        CLIENT_INFO_META: {"name": "in-process", "version": "0"},
    })
}
