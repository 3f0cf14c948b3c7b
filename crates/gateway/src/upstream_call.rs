//! The gateway's calls on an upstream [`Connection`]: what a call that got no answer
//! tells the downstream client ([`CallError`]), [`Call`], the connection's requests
//! with that error, and [`Relay`], the upstream's questions relayed to the downstream
//! client.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_client::ClientError;
use mcp_tasks_client::connection::{Answers, Connection};
use mcp_tasks_proto::{ErrorObject, codes, methods};
use mcp_tasks_server::ToolContext;
use serde_json::{Map, Value, json};

use crate::error::unavailable;
use crate::lane::{LaneInner, Waiter};

/// Why a call to the upstream did not produce its answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallError {
    /// The upstream answered with this JSON-RPC error (passed on unchanged).
    Upstream(ErrorObject),
    /// The connection ended (or, over HTTP, the request or its answer was lost) before
    /// the answer came; with the transport's own explanation when it gave one.
    Lost(Option<String>),
    /// The gateway gave up on the call, with the error that says why: the answer was too
    /// large to read (`upstream reply too large: N bytes`), or it did not come within
    /// `--upstream-timeout` (the request was cancelled upstream).
    Failed(ErrorObject),
}

impl CallError {
    /// [`Self::of`] for an error that names its method when it has one.
    pub(crate) fn of_client(e: ClientError) -> Self {
        let method = match &e {
            ClientError::Rpc { method, .. }
            | ClientError::Timeout { method, .. }
            | ClientError::Transport { method, .. } => method.clone(),
            _ => String::new(),
        };
        Self::of(&method, e)
    }

    /// The error of call `method` that got no result: the one place a [`ClientError`]
    /// of the upstream connection becomes a gateway error.
    fn of(method: &str, e: ClientError) -> Self {
        match e {
            ClientError::Rpc { error, .. } => Self::Upstream(error),
            // An answer over the bound, which asking again would not mend.
            ClientError::Transport { error: t, .. } if t.is_too_large() => {
                tracing::warn!(method, error = %t, "upstream reply too large");
                Self::Failed(match (t.bytes, t.limit) {
                    (Some(bytes), _) => reply_too_large(method, bytes),
                    (None, limit) => ErrorObject::new(
                        mcp_tasks_proto::codes::INTERNAL_ERROR,
                        format!(
                            "upstream reply too large: exceeds {} bytes (the answer to `{method}` is over --max-message-bytes)",
                            limit.unwrap_or_default()
                        ),
                    ),
                })
            }
            // The request or its answer was lost.
            ClientError::Transport { error: t, .. } => {
                tracing::debug!(error = %t, "upstream transport error");
                Self::Lost(Some(t.message))
            }
            ClientError::Timeout { timeout, .. } => {
                tracing::warn!(method, timeout = ?timeout, "upstream call timed out");
                Self::Failed(timed_out(method, timeout))
            }
            _ => Self::Lost(None),
        }
    }
}

/// The error of a call whose answer was `bytes` long, over `--max-message-bytes`.
fn reply_too_large(method: &str, bytes: u64) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "upstream reply too large: {bytes} bytes (the answer to `{method}` is over --max-message-bytes)"
        ),
    )
}

/// The error of a call the upstream did not answer within `timeout`.
fn timed_out(method: &str, timeout: std::time::Duration) -> ErrorObject {
    ErrorObject::new(
        mcp_tasks_proto::codes::INTERNAL_ERROR,
        format!(
            "the upstream did not answer `{method}` within {timeout:?} (--upstream-timeout); the request was cancelled upstream"
        ),
    )
}

/// The upstream connection's requests, failing with a [`CallError`].
#[async_trait]
pub(crate) trait Call {
    /// [`Connection::request`]: at most `--upstream-timeout`, cancelled upstream when
    /// dropped or timed out.
    async fn call(&self, method: &str, params: Option<Value>) -> Result<Value, CallError>;

    /// [`Self::call`] on behalf of the call `waiter`: what the upstream sends on this
    /// request's response stream (Streamable HTTP) is that call's.
    async fn call_for(
        &self,
        method: &str,
        params: Option<Value>,
        waiter: &Arc<Waiter>,
    ) -> Result<Value, CallError>;
}

#[async_trait]
impl Call for Connection {
    async fn call(&self, method: &str, params: Option<Value>) -> Result<Value, CallError> {
        self.request(method, params)
            .await
            .map_err(|e| CallError::of(method, e))
    }

    async fn call_for(
        &self,
        method: &str,
        params: Option<Value>,
        waiter: &Arc<Waiter>,
    ) -> Result<Value, CallError> {
        let post = waiter.post();
        self.request_recorded(method, params, post.sink())
            .await
            .map_err(|e| CallError::of(method, e))
    }
}

/// The error of a call the upstream did not answer: the upstream's or the gateway's as
/// it is; for a lost connection, -32603 with why it was lost ([`LaneInner::lost_reason`]).
pub(crate) async fn call_error(lane: &LaneInner, conn: &Connection, e: CallError) -> ErrorObject {
    match e {
        CallError::Upstream(e) | CallError::Failed(e) => e,
        CallError::Lost(d) => unavailable(format!(
            "{} during the call",
            lane.lost_reason(conn, d.as_deref()).await
        )),
    }
}

/// Relay one input request of the upstream to the downstream client and return its
/// answer.
///
/// Spec (MRTR): "`inputRequests` values are request objects that MUST be one of
/// `ElicitRequest`, `CreateMessageRequest`, or `ListRootsRequest`".
pub(crate) async fn relay(cx: &ToolContext, request: &Value) -> Result<Value, ErrorObject> {
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    match method {
        methods::ELICITATION_CREATE => cx.elicit_raw(params).await,
        methods::SAMPLING_CREATE_MESSAGE => cx.sample_raw(params).await,
        "roots/list" => cx.request(method, params).await,
        other => Err(ErrorObject::new(
            codes::INTERNAL_ERROR,
            format!("the upstream asked for input with `{other}`, which is not an input request"),
        )),
    }
}

/// The questions of a call's upstream task, relayed to the downstream client of the call
/// `cx` ([`relay_all`]): who answers when the client's task following runs on the
/// upstream connection ([`mcp_tasks_client::connection::ConnectionTasks`]).
pub(crate) struct Relay<'a>(pub(crate) &'a ToolContext);

#[async_trait]
impl Answers for Relay<'_> {
    async fn answer(
        &self,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        relay_all(self.0, requests)
            .await
            .map_err(|(method, error)| ClientError::Unanswered { method, error })
    }
}

/// Relay each of `requests` (an `inputRequests` map) to the downstream client, one
/// after the other ([`relay`]): the answers by key, or the method of the first that got
/// none and its error.
pub(crate) async fn relay_all(
    cx: &ToolContext,
    requests: Map<String, Value>,
) -> Result<Map<String, Value>, (String, ErrorObject)> {
    let mut responses = Map::new();
    for (key, req) in requests {
        match relay(cx, &req).await {
            Ok(v) => {
                responses.insert(key, v);
            }
            Err(error) => {
                let method = req
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Err((method.to_owned(), error));
            }
        }
    }
    Ok(responses)
}
