//! One live connection to a server, for a program that passes on what the server sends
//! (the gateway's upstream): its requests, each bounded by a timeout and cancelled
//! upstream (`notifications/cancelled`) when abandoned; the revision it speaks (on a
//! stateless one, 2026-07-28, the `_meta` stamped on every request and the `complete`
//! results made plain); what the server answered when it started; and the
//! [`ServerMessages`] the server's own requests and notifications go to.
//!
//! A [`Connection`] is opened with a [`Connector`] ([`Connection::open`],
//! [`Connection::reattach`]) for a [`ServerMessages`]: the connection does not know who
//! receives the server's messages, only the trait. [`Connection::start`] opens and starts
//! one (the revision found, `initialize` or `server/discover`); [`ConnectionTasks`]
//! follows the server's tasks on it with the client's task following.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_proto::modern::{ResultType, SERVER_INFO_META};
use mcp_tasks_proto::{ErrorObject, Notification, Request, RequestId, Revision};
use mcp_tasks_rpc::http_client::ResumeSession;
use mcp_tasks_rpc::{Handler, Peer, RequestContext, RequestOptions, Route};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::ClientError;
use crate::connect::{Connected, Connector, SessionProbe};

mod start;
mod tasks;
pub use start::{StartAs, StartError, Started, request_meta};
pub use tasks::{Answers, ConnectionTasks};

/// Where the requests and notifications a server sends on a [`Connection`] go.
#[async_trait]
pub trait ServerMessages: Send + Sync + 'static {
    /// A request of the server; `stream_of` is our request on whose response stream it
    /// came (Streamable HTTP), if any.
    ///
    /// # Errors
    /// The JSON-RPC error to answer the server with.
    async fn request(
        &self,
        method: String,
        params: Option<Value>,
        stream_of: Option<RequestId>,
    ) -> Result<Value, ErrorObject>;

    /// A notification of the server.
    async fn notification(&self, method: String, params: Option<Value>);

    /// One of our requests got its answer (`ok`) or failed after `elapsed`; not called
    /// for a request abandoned before either.
    fn observe(&self, method: &str, elapsed: Duration, ok: bool) {
        let _ = (method, elapsed, ok);
    }
}

/// Passes what the server sends to its [`ServerMessages`].
struct Relay(Arc<dyn ServerMessages>);

#[async_trait]
impl Handler for Relay {
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        self.0.request(req.method, req.params, cx.stream_of).await
    }

    async fn handle_notification(&self, _peer: &Peer, n: Notification) {
        self.0.notification(n.method, n.params).await;
    }

    fn handle_unmatched_response(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let _ = outcome;
        tracing::debug!(id = %id, "late or unknown response from the upstream ignored");
    }
}

/// How a [`Connection`]'s requests are sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Requests {
    /// How long one request may wait for its answer ([`Connection::request`]).
    pub timeout: Option<Duration>,
    /// The `reason` of the `notifications/cancelled` sent for an abandoned request.
    pub cancel_reason: std::borrow::Cow<'static, str>,
}

impl Requests {
    /// Requests bounded by `timeout`, cancelled with `cancel_reason` when abandoned.
    pub fn new(
        timeout: Option<Duration>,
        cancel_reason: impl Into<std::borrow::Cow<'static, str>>,
    ) -> Self {
        Self {
            timeout,
            cancel_reason: cancel_reason.into(),
        }
    }
}

/// One connection: its peer, what the server answered when it started, and the
/// resources that keep it alive (dropping the last `Connection` tears it down).
pub struct Connection {
    peer: Peer,
    to: Arc<dyn ServerMessages>,
    requests: Requests,
    init: OnceLock<Value>,
    /// The `_meta` stamped on every request of a stateless revision (2026-07-28); unset
    /// for a 2025-11-25 connection.
    request_meta: OnceLock<Value>,
    generation: u64,
    session: Option<SessionProbe>,
    _guard: Box<dyn Send + Sync>,
}

mcp_tasks_proto::debug_non_exhaustive!(Connection, |s| { generation: s.generation });

/// A [`Connection`] just made, with what says when it ends and what to await (after
/// `notifications/initialized`) before it is used.
pub struct Adopted {
    /// The connection.
    pub connection: Connection,
    /// Resolves (with a human-readable reason) when the connection has ended.
    pub ended: oneshot::Receiver<String>,
    /// See [`Connected::settled`].
    pub settled: Option<futures::future::BoxFuture<'static, ()>>,
}

mcp_tasks_proto::debug_non_exhaustive!(Adopted, |s| { connection: s.connection });

impl Connection {
    /// Open a connection with `connector` whose server messages go to `to`, speaking
    /// `revision` where the connector chooses the revision by transport
    /// ([`Connector::revision_by_transport`]), else as the connector does; it is the next
    /// of `generations` (its owner's count of connections).
    ///
    /// # Errors
    /// The connector's ([`ClientError::Connect`]).
    pub async fn open(
        connector: &dyn Connector,
        to: Arc<dyn ServerMessages>,
        requests: Requests,
        revision: Revision,
        generations: &AtomicU64,
    ) -> Result<Adopted, ClientError> {
        let handler = Self::handler(&to);
        let connected = if connector.revision_by_transport() {
            connector.connect_as(handler, revision).await
        } else {
            connector.connect(handler).await
        }?;
        Ok(Self::adopt(connected, to, requests, generations))
    }

    /// Open a connection that takes up `session` again ([`Connector::reattach`]); `None`
    /// when the connector has no sessions to take up. As [`Self::open`] otherwise.
    ///
    /// # Errors
    /// The connector's ([`ClientError::Connect`]).
    pub async fn reattach(
        connector: &dyn Connector,
        to: Arc<dyn ServerMessages>,
        requests: Requests,
        session: ResumeSession,
        generations: &AtomicU64,
    ) -> Result<Option<Adopted>, ClientError> {
        let handler = Self::handler(&to);
        Ok(connector
            .reattach(handler, session)
            .await?
            .map(|connected| Self::adopt(connected, to, requests, generations)))
    }

    /// The handler to open a connection with, whose server messages go to `to`.
    fn handler(to: &Arc<dyn ServerMessages>) -> Arc<dyn Handler> {
        Arc::new(Relay(Arc::clone(to)))
    }

    /// The connection `connected` (opened with [`Self::handler`] of `to`), the next of
    /// `generations`, sending its requests as `requests` says.
    fn adopt(
        connected: Connected,
        to: Arc<dyn ServerMessages>,
        requests: Requests,
        generations: &AtomicU64,
    ) -> Adopted {
        let generation = generations.fetch_add(1, Ordering::AcqRel) + 1;
        let Connected {
            peer,
            ended,
            guard,
            settled,
            session,
        } = connected;
        Adopted {
            connection: Self {
                peer,
                to,
                requests,
                init: OnceLock::new(),
                request_meta: OnceLock::new(),
                generation,
                session,
                _guard: guard,
            },
            ended,
            settled,
        }
    }

    /// Which connection of its owner this is (1, 2, ... across restarts).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The session this connection speaks in now (its id, if it has one a later
    /// connection can take up, and the protocol version negotiated in it).
    pub fn session(&self) -> Option<(String, Option<String>)> {
        let (id, protocol_version) = (self.session.as_ref()?)();
        Some((id?, protocol_version))
    }

    /// What the server answered when the connection started (its `initialize` result,
    /// or the like of it for a stateless revision); `null` before.
    pub fn init_result(&self) -> &Value {
        static NULL: Value = Value::Null;
        self.init.get().unwrap_or(&NULL)
    }

    /// Keep `v` as [`Self::init_result`] (the first call wins).
    pub fn set_init_result(&self, v: Value) {
        let _ = self.init.set(v);
    }

    /// Speak 2026-07-28 on this connection: `meta` goes into the `_meta` of every request.
    pub fn speak_stateless(&self, meta: Value) {
        let _ = self.request_meta.set(meta);
    }

    /// The revision this connection speaks.
    pub fn revision(&self) -> Revision {
        if self.request_meta.get().is_some() {
            Revision::V2026_07_28
        } else {
            Revision::V2025_11_25
        }
    }

    /// Whether the server declared `tasks.requests.tools.call`.
    pub fn runs_tool_tasks(&self) -> bool {
        self.init_result()
            .pointer("/capabilities/tasks/requests/tools/call")
            .is_some_and(|v| !v.is_null())
    }

    /// Whether the connection's input has ended (a request on it fails at once).
    pub fn is_input_ended(&self) -> bool {
        self.peer.is_input_ended()
    }

    /// Whether the connection is closed.
    pub fn is_closed(&self) -> bool {
        self.peer.is_closed()
    }

    /// Close the connection: requests in flight fail.
    pub fn close(&self) {
        self.peer.close();
    }

    /// Send a request and wait for its answer (at most [`Requests::timeout`]). Dropping
    /// the future before the answer, or the timeout, cancels the request upstream
    /// (`notifications/cancelled`).
    ///
    /// # Errors
    /// The server's error ([`ClientError::Rpc`]), [`ClientError::Timeout`],
    /// [`ClientError::Transport`] (with the transport's explanation, an answer too large
    /// to read among them), [`ClientError::Closed`] when the connection ends first.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, ClientError> {
        self.send(method, params, self.requests.timeout, None).await
    }

    /// [`Self::request`], writing the request's id into `id_sink` when it is sent (what
    /// the server sends on this request's response stream can then be told apart).
    ///
    /// # Errors
    /// As [`Self::request`].
    pub async fn request_recorded(
        &self,
        method: &str,
        params: Option<Value>,
        id_sink: Arc<OnceLock<RequestId>>,
    ) -> Result<Value, ClientError> {
        self.send(method, params, self.requests.timeout, Some(id_sink))
            .await
    }

    /// [`Self::request`] without the timeout (the start of a connection has its own).
    ///
    /// # Errors
    /// As [`Self::request`].
    pub async fn request_unbounded(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        self.send(method, params, None, None).await
    }

    async fn send(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
        id_sink: Option<Arc<OnceLock<RequestId>>>,
    ) -> Result<Value, ClientError> {
        let mut options = RequestOptions::new(Route::Standalone)
            .timeout(timeout)
            .cancel_reason(self.requests.cancel_reason.clone());
        if let Some(sink) = id_sink {
            options = options.record_id(sink);
        }
        let params = match self.request_meta.get() {
            Some(meta) => Some(mcp_tasks_proto::meta::stamp(meta, params)),
            None => params,
        };
        let started = Instant::now();
        let mut answer = self.peer.request_with(method, params, options).await;
        // `server/discover` keeps its `_meta` serverInfo: it is the server's identity.
        if self.revision().is_stateless()
            && method != mcp_tasks_proto::modern::methods::SERVER_DISCOVER
            && let Ok(v) = &mut answer
        {
            strip_complete(v);
        }
        // A request abandoned (the future dropped) is not observed.
        self.to.observe(method, started.elapsed(), answer.is_ok());
        answer.map_err(|e| ClientError::of_request(method, e))
    }

    /// The server's `DiscoverResult` when it speaks 2026-07-28, as a [`crate::Client`]
    /// finds out: `server/discover` stamped with `meta` (the modern `_meta` of the
    /// connection's requests), answered within `timeout`; `None` for a server found to
    /// speak 2025-11-25 only, or that could not be told (the caller's `initialize` then
    /// says what it speaks).
    pub async fn probe(&self, meta: &Value, timeout: Duration) -> Option<Value> {
        let method = mcp_tasks_proto::modern::methods::SERVER_DISCOVER;
        let params = mcp_tasks_proto::meta::stamp(meta, None);
        let discover = || async {
            tokio::time::timeout(
                timeout,
                self.request_unbounded(method, Some(params.clone())),
            )
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    method: method.to_owned(),
                    timeout,
                })
            })
        };
        match crate::modern::probe_with(discover).await {
            Ok(crate::modern::Probe::Modern(v)) => Some(v),
            Ok(crate::modern::Probe::Legacy(why)) => {
                tracing::debug!(%why, "not a 2026-07-28 server");
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "server/discover did not tell the server's revision");
                None
            }
        }
    }

    /// Send a notification (best effort).
    pub async fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params, Route::Standalone).await;
    }

    /// The server's tools: `tools/list` followed through at most `max_pages` pages (each
    /// [`Self::request`]), the entries with a string `name` kept as they are; none when
    /// the server declared no `tools` capability.
    ///
    /// # Errors
    /// The error of a `tools/list` request ([`Self::request`]).
    pub async fn list_tools(&self, max_pages: usize) -> Result<Vec<Value>, ClientError> {
        if self
            .init_result()
            .pointer("/capabilities/tools")
            .is_none_or(Value::is_null)
        {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..max_pages {
            let params = cursor.take().map(|c| serde_json::json!({ "cursor": c }));
            let page = self
                .request(mcp_tasks_proto::methods::TOOLS_LIST, params)
                .await?;
            if let Some(tools) = page.get("tools").and_then(Value::as_array) {
                out.extend(
                    tools
                        .iter()
                        .filter(|t| t.get("name").is_some_and(Value::is_string))
                        .cloned(),
                );
            }
            match page.get("nextCursor") {
                Some(c @ Value::String(_)) => cursor = Some(c.clone()),
                _ => return Ok(out),
            }
        }
        Ok(out)
    }
}

/// A `complete` result as a 2025-11-25 one: without `resultType` and the `serverInfo` of
/// its `_meta` (an emptied `_meta` goes too). Other result types are left for the caller.
pub fn strip_complete(v: &mut Value) {
    if ResultType::of(v) != ResultType::Complete {
        return;
    }
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    obj.remove("resultType");
    if let Some(meta) = obj.get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(SERVER_INFO_META);
        if meta.is_empty() {
            obj.remove("_meta");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn complete_results_become_legacy_ones() {
        let mut v = json!({"resultType": "complete", "content": [], "_meta": {SERVER_INFO_META: {"name": "s", "version": "1"}}});
        strip_complete(&mut v);
        assert_eq!(v, json!({"content": []}));
        let mut t = json!({"resultType": "task", "taskId": "t"});
        strip_complete(&mut t);
        assert_eq!(t["resultType"], "task");
    }
}
