//! Sending: a request and its reply (JSON or an SSE stream, resumed with
//! `Last-Event-ID`), one-way messages, and the standalone GET stream.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tasks_proto::{Message, Request, RequestId, methods};
use reqwest::header::{self, HeaderMap};
use reqwest::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::state::{is_event_stream, reply_id};
use super::{StandaloneState, State, transport_error};
use crate::error::{TransportError, TransportErrorKind};
use crate::peer::Outbound;
use crate::sse::SseParser;

impl State {
    /// POST one request and deliver its reply (or a made-up error) to the peer.
    pub(super) async fn send_request(self: Arc<Self>, req: Request) {
        let id = req.id.clone();
        let is_init = req.method == methods::INITIALIZE;
        // A modern `tools/list`: its result teaches the tools' `x-mcp-header` parameters,
        // whoever reads it (our `Client`, or a gateway's upstream connection).
        let learn_tools =
            self.config.revision.has_standard_headers() && req.method == methods::TOOLS_LIST;
        if is_init {
            let mut s = self.session.lock();
            s.init_params = req.params.clone();
        }
        let modern = self
            .config
            .revision
            .has_standard_headers()
            .then(|| super::modern::headers(&req, &self.param_headers.lock()));
        let body = Message::Request(req).to_json();
        let mut retried = false;
        loop {
            let extra = modern.clone().unwrap_or_default();
            let (resp, sent_session) = match self.post(body.clone(), extra).await {
                Ok(r) => r,
                Err(e) => {
                    self.fail_as(id, TransportErrorKind::Connect, format!("POST failed: {e}"));
                    return;
                }
            };
            let status = resp.status();
            if status == StatusCode::NOT_FOUND
                && let Some(failed) = sent_session
                && !retried
                && !is_init
            {
                retried = true;
                if let Err(e) = self.reinitialize(&failed).await {
                    self.fail(id, e);
                    return;
                }
                continue;
            }
            if !status.is_success() {
                if modern.is_some() {
                    self.modern_failure(id, resp).await;
                    return;
                }
                let err = self.http_failure(resp).await;
                self.fail(id, err);
                return;
            }
            if is_init {
                self.capture_session(&resp);
            }
            if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
                let err = transport_error(
                    TransportErrorKind::Protocol,
                    format!("the server answered a request with HTTP {status} and no reply"),
                    Some(status.as_u16()),
                );
                self.fail(id, err);
                return;
            }
            if is_event_stream(&resp) {
                self.follow_request_stream(id, resp, is_init, learn_tools)
                    .await;
            } else {
                match self.read_body(resp).await {
                    Ok(body) => match Message::parse(&body) {
                        Ok(m) => {
                            if is_init && let Message::Response(r) = &m {
                                self.capture_version(&r.result);
                            }
                            if learn_tools && let Message::Response(r) = &m {
                                self.learn_param_headers(&r.result);
                            }
                            self.deliver(m).await;
                        }
                        Err(f) => {
                            self.fail_as(
                                id,
                                TransportErrorKind::Body,
                                format!("unreadable reply: {}", f.error),
                            );
                        }
                    },
                    Err(e) => self.fail(id, e),
                }
            }
            return;
        }
    }

    /// Read a request's SSE stream until its reply; resume with `Last-Event-ID` when the
    /// connection ends first.
    pub(super) async fn follow_request_stream(
        self: &Arc<Self>,
        id: RequestId,
        first: Response,
        is_init: bool,
        learn_tools: bool,
    ) {
        let mut parser = SseParser::new(self.config.max_message_bytes);
        let mut resp = first;
        let mut failures = 0u32;
        loop {
            let mut init_result = None;
            let done = self
                .read_events(resp, &mut parser, Some(&id), |m| {
                    let mine = reply_id(&m) == Some(&id);
                    if mine
                        && is_init
                        && let Message::Response(r) = &m
                    {
                        init_result = Some(r.result.clone());
                    }
                    if mine
                        && learn_tools
                        && let Message::Response(r) = &m
                    {
                        self.learn_param_headers(&r.result);
                    }
                    (true, mine)
                })
                .await;
            if let Some(r) = init_result {
                self.capture_version(&r);
            }
            if done {
                return;
            }
            let Some(last) = parser.last_event_id.clone() else {
                self.fail_as(
                    id,
                    TransportErrorKind::Stream,
                    "the SSE stream ended before the reply, without an event id to resume from",
                );
                return;
            };
            // Spec: "If the client wishes to resume after a disconnection (whether due to
            // network failure or server-initiated closure), it SHOULD issue an HTTP GET to
            // the MCP endpoint, and include the Last-Event-ID header".
            loop {
                tokio::select! {
                    () = tokio::time::sleep(self.reply_retry(&parser)) => {}
                    () = self.stop.cancelled() => return,
                }
                match self.get(Some(&last)).await {
                    Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                        self.resumptions.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(last_event_id = %last, "SSE stream resumed");
                        resp = r;
                        failures = 0;
                        break;
                    }
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                        let err = transport_error(
                            TransportErrorKind::Session,
                            "the session ended (HTTP 404) before the reply came",
                            Some(404),
                        );
                        if let Some(s) = self.session_headers().1 {
                            let me = Arc::clone(self);
                            tokio::spawn(async move {
                                let _ = me.reinitialize(&s).await;
                            });
                        }
                        self.fail(id, err);
                        return;
                    }
                    Ok(r) => {
                        failures += 1;
                        tracing::debug!(status = %r.status(), "SSE resumption refused");
                        if failures >= self.config.max_resume_attempts {
                            let err = self.http_failure(r).await;
                            self.fail(id, err);
                            return;
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        tracing::debug!(error = %e, "SSE resumption failed");
                        if failures >= self.config.max_resume_attempts {
                            self.fail_as(
                                id,
                                TransportErrorKind::Connect,
                                format!("resuming the SSE stream failed: {e}"),
                            );
                            return;
                        }
                    }
                }
            }
        }
    }

    /// POST a notification or response; 202 expected.
    pub(super) async fn send_one_way(self: &Arc<Self>, message: Message) {
        let body = message.to_json();
        let mut retried = false;
        loop {
            match self.post(body.clone(), HeaderMap::new()).await {
                Ok((resp, sent)) => {
                    let status = resp.status();
                    if status == StatusCode::NOT_FOUND
                        && let Some(failed) = sent
                        && !retried
                    {
                        retried = true;
                        if self.reinitialize(&failed).await.is_ok() {
                            continue;
                        }
                    }
                    if !status.is_success() {
                        tracing::warn!(status = %status, "the server refused a message");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "POST of a message failed"),
            }
            return;
        }
    }

    /// The error for a non-success HTTP response: its JSON-RPC error if the body holds
    /// one, else the status line.
    pub(super) async fn http_failure(&self, resp: Response) -> TransportError {
        let status = resp.status();
        let www = www_authenticate(&resp);
        let body = self.read_body(resp).await.unwrap_or_default();
        failure_of(status, www, &body)
    }

    /// A modern request answered with an error status: its JSON-RPC error when the body is
    /// one (for this request, or with a null id), else a transport error with the status.
    ///
    /// Spec (streamable HTTP, backward compatibility): "On `400 Bad Request`, the client
    /// SHOULD inspect the response body before falling back".
    async fn modern_failure(&self, id: RequestId, resp: Response) {
        let status = resp.status();
        let www = www_authenticate(&resp);
        let body = self.read_body(resp).await.unwrap_or_default();
        if let Ok(Message::Error(mut e)) = Message::parse(&body)
            && e.id.as_ref().is_none_or(|i| *i == id)
        {
            e.id = Some(id);
            self.deliver(Message::Error(e)).await;
            return;
        }
        self.fail(id, failure_of(status, www, &body));
    }
}

fn www_authenticate(resp: &Response) -> Option<String> {
    resp.headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The transport error of an error status: the JSON-RPC error message of the body if it
/// holds one, else the body when short, and `WWW-Authenticate`.
fn failure_of(status: StatusCode, www: Option<String>, body: &[u8]) -> TransportError {
    let detail = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.get("message")).cloned())
        .and_then(|m| m.as_str().map(str::to_owned))
        .or_else(|| {
            let t = String::from_utf8_lossy(body).trim().to_owned();
            (!t.is_empty() && t.len() < 300).then_some(t)
        });
    let mut message = format!("HTTP {status}");
    if let Some(d) = detail {
        message.push_str(": ");
        message.push_str(&d);
    }
    if let Some(w) = www {
        message.push_str(&format!(" (WWW-Authenticate: {w})"));
    }
    transport_error(TransportErrorKind::Http, message, Some(status.as_u16()))
}

impl State {
    pub(super) fn start_standalone(self: &Arc<Self>) {
        if !self.config.standalone_stream || self.stop.is_cancelled() {
            return;
        }
        self.standalone_state.send_replace(StandaloneState::Pending);
        let me = Arc::clone(self);
        let h = tokio::spawn(async move { me.standalone().await });
        if let Some(old) = self.standalone.lock().replace(h) {
            old.abort();
        }
    }

    /// Keep the standalone GET stream open.
    pub(super) async fn standalone(self: Arc<Self>) {
        let mut parser = SseParser::new(self.config.max_message_bytes);
        // The delays after consecutive failures: twice the server's `retry`, doubling,
        // up to 32 times it and at most 30 s (the workspace's one backoff, `backon`'s).
        let mut failures: Option<backon::ExponentialBackoff> = None;
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            let last = parser.last_event_id.clone();
            match self.get(last.as_deref()).await {
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the server offers no standalone SSE stream (405)");
                    self.standalone_state
                        .send_replace(StandaloneState::Unavailable);
                    return;
                }
                Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                    if let Some(s) = self.session_headers().1 {
                        let me = Arc::clone(&self);
                        // Runs in its own task: it replaces (aborts) this one.
                        tokio::spawn(async move {
                            if let Err(e) = me.reinitialize(&s).await {
                                tracing::warn!(error = %e, "could not start a new session");
                            }
                        });
                    }
                    self.standalone_state.send_replace(StandaloneState::Failing);
                    return;
                }
                Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                    failures = None;
                    self.standalone_state.send_replace(StandaloneState::Open);
                    self.read_events(r, &mut parser, None, |_| (true, false))
                        .await;
                    self.standalone_state
                        .send_replace(StandaloneState::Reconnecting);
                    tokio::select! {
                        () = tokio::time::sleep(self.reply_retry(&parser)) => {}
                        () = self.stop.cancelled() => return,
                    }
                }
                other => {
                    match other {
                        Ok(r) => tracing::debug!(status = %r.status(), "standalone stream refused"),
                        Err(e) => tracing::debug!(error = %e, "standalone stream failed"),
                    }
                    self.standalone_state.send_replace(StandaloneState::Failing);
                    let retry = self.reply_retry(&parser);
                    let backoff = failures
                        .get_or_insert_with(|| standalone_retries(retry))
                        .next()
                        .unwrap_or(STANDALONE_MAX_DELAY);
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = self.stop.cancelled() => return,
                    }
                }
            }
        }
    }
}

/// The longest wait before reopening a failing standalone stream.
const STANDALONE_MAX_DELAY: Duration = Duration::from_secs(30);

/// The delays before reopening a failing standalone stream: `retry * 2^n` for the n-th
/// consecutive failure (n up to 5), at most [`STANDALONE_MAX_DELAY`].
fn standalone_retries(retry: Duration) -> backon::ExponentialBackoff {
    use backon::BackoffBuilder;
    let first = retry.saturating_mul(2).min(STANDALONE_MAX_DELAY);
    backon::ExponentialBuilder::new()
        .with_min_delay(first)
        .with_max_delay(retry.saturating_mul(32).min(STANDALONE_MAX_DELAY))
        .without_max_times()
        .build()
}

/// Drain the peer's queue: requests concurrently, notifications and responses in order.
pub(super) async fn drive(state: Arc<State>, mut outbound: mpsc::Receiver<Outbound>) {
    let closed = state.peer.closed();
    loop {
        let next = tokio::select! {
            m = outbound.recv() => m,
            () = state.stop.cancelled() => None,
            () = closed.cancelled() => None,
        };
        let Some(out) = next else { break };
        match out.message {
            Message::Request(r) if r.method == methods::INITIALIZE => {
                // Everything after initialize needs its session id.
                Arc::clone(&state).send_request(r).await;
            }
            Message::Request(r) if state.config.revision.is_stateless() => {
                let id = r.id.clone();
                let stop = CancellationToken::new();
                state.in_flight.lock().insert(id.clone(), stop.clone());
                let s = Arc::clone(&state);
                tokio::spawn(async move {
                    tokio::select! {
                        () = Arc::clone(&s).send_request(r) => {}
                        () = stop.cancelled() => {
                            tracing::debug!(%id, "request cancelled: its POST is dropped");
                        }
                    }
                    s.in_flight.lock().remove(&id);
                });
            }
            Message::Request(r) => {
                tokio::spawn(Arc::clone(&state).send_request(r));
            }
            Message::Notification(n)
                if state.config.revision.is_stateless() && n.method == methods::CANCELLED =>
            {
                // Spec (2026-07-28, cancellation): "Streamable HTTP: Closing the SSE
                // response stream is the cancellation signal. ... No
                // `notifications/cancelled` message is required or expected." The POST of
                // the request is dropped (its connection closed) instead.
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok());
                if let Some(stop) = id.and_then(|id| state.in_flight.lock().remove(&id)) {
                    stop.cancel();
                }
            }
            m @ Message::Notification(_) => {
                let initialized =
                    matches!(&m, Message::Notification(n) if n.method == methods::INITIALIZED);
                state.send_one_way(m).await;
                if initialized {
                    state.session.lock().initialized = true;
                    state.start_standalone();
                }
            }
            m => state.send_one_way(m).await,
        }
    }
    state.shutdown();
}
