//! The transport's state: the session, its headers, and reading replies.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tasks_proto::{Message, RequestId, methods};
use reqwest::Response;
use reqwest::header::{self, HeaderMap, HeaderValue};
use serde_json::Value;

use super::{
    ACCEPT_BOTH, EVENT_STREAM, LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, State,
    transport_error,
};
use crate::error::{TransportError, TransportErrorKind};
use crate::sse::SseParser;

impl State {
    pub(super) fn shutdown(&self) {
        self.stop.cancel();
        if let Some(h) = self.standalone.lock().take() {
            h.abort();
        }
        self.peer.close();
    }

    pub(super) fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .request(method, self.url.clone())
            .headers(self.extra.clone());
        if let Some(t) = &self.config.bearer_token {
            r = r.bearer_auth(t);
        }
        r
    }

    /// Session and protocol headers of the current session.
    pub(super) fn session_headers(&self) -> (HeaderMap, Option<String>) {
        let s = self.session.lock();
        let mut h = HeaderMap::new();
        if let Some(id) = &s.id
            && let Ok(v) = HeaderValue::from_str(id)
        {
            h.insert(MCP_SESSION_ID, v);
        }
        if let Some(pv) = &s.protocol_version
            && let Ok(v) = HeaderValue::from_str(pv)
        {
            h.insert(MCP_PROTOCOL_VERSION, v);
        }
        (h, s.id.clone())
    }

    /// POST `body` with the session headers and `extra` (a modern request's own).
    pub(super) async fn post(
        &self,
        body: String,
        extra: HeaderMap,
    ) -> Result<(Response, Option<String>), reqwest::Error> {
        let (headers, session) = self.session_headers();
        let r = self
            .request(reqwest::Method::POST)
            .headers(headers)
            .headers(extra)
            .header(header::ACCEPT, ACCEPT_BOTH)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await?;
        Ok((r, session))
    }

    pub(super) async fn get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Response, reqwest::Error> {
        let (headers, _) = self.session_headers();
        let mut r = self
            .request(reqwest::Method::GET)
            .headers(headers)
            .header(header::ACCEPT, EVENT_STREAM);
        if let Some(id) = last_event_id {
            r = r.header(LAST_EVENT_ID, id);
        }
        r.send().await
    }

    pub(super) async fn deliver(&self, message: Message) {
        self.peer.receive(message).await;
    }

    /// [`Self::deliver`] a message read on the response stream of our request
    /// `stream_of`, if it is one: a request's handler learns it.
    async fn deliver_on(&self, message: Message, stream_of: Option<&RequestId>) {
        self.peer
            .receive_on(message, crate::RouteDelivery::Shared, stream_of.cloned())
            .await;
    }

    pub(super) fn fail(&self, id: RequestId, error: TransportError) {
        self.peer.fail(id, error);
    }

    /// [`Self::fail`] with a transport error of `kind` that carries no HTTP status.
    pub(super) fn fail_as(
        &self,
        id: RequestId,
        kind: TransportErrorKind,
        message: impl std::fmt::Display,
    ) {
        self.fail(id, transport_error(kind, message, None));
    }

    pub(super) fn reply_retry(&self, parser: &SseParser) -> Duration {
        parser.retry.unwrap_or(self.config.default_retry)
    }

    /// Start a new session after a 404 to a request that carried `failed` as its session
    /// id: replay `initialize` and `notifications/initialized`, reopen the standalone
    /// stream. Does nothing when another task already did it.
    pub(super) async fn reinitialize(self: &Arc<Self>, failed: &str) -> Result<(), TransportError> {
        let _guard = self.reinit.lock().await;
        let params = {
            let mut s = self.session.lock();
            if s.id.as_deref() != Some(failed) {
                return Ok(());
            }
            s.id = None;
            s.initialized = false;
            s.init_params.clone()
        };
        let Some(params) = params else {
            return Err(transport_error(
                TransportErrorKind::Session,
                "the session ended (HTTP 404) before initialize completed",
                Some(404),
            ));
        };
        tracing::info!("the server ended the session (HTTP 404); starting a new one");
        let n = self.next_internal_id.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("mcp-tasks-reinitialize-{n}"));
        let msg = Message::request(id.clone(), methods::INITIALIZE, Some(params));
        let resp = self.reinit_post(&msg, "re-initialize failed").await?;
        self.capture_session(&resp);
        let reply = self.read_one_reply(resp, &id).await?;
        match reply {
            Message::Response(r) => self.capture_version(&r.result),
            Message::Error(e) => {
                return Err(transport_error(
                    TransportErrorKind::Session,
                    format!("re-initialize refused: {}", e.error),
                    None,
                ));
            }
            _ => {}
        }
        let note = Message::notification(methods::INITIALIZED, None);
        self.reinit_post(&note, "notifications/initialized refused")
            .await?;
        self.session.lock().initialized = true;
        self.reinitializations.fetch_add(1, Ordering::Relaxed);
        self.start_standalone();
        Ok(())
    }

    /// POST `msg` of a re-initialization; a failure to send, or an HTTP status other than
    /// success (`refused`: "HTTP <status>"), is a session error.
    async fn reinit_post(&self, msg: &Message, refused: &str) -> Result<Response, TransportError> {
        let (resp, _) = self
            .post(msg.to_json(), HeaderMap::new())
            .await
            .map_err(|e| {
                transport_error(
                    TransportErrorKind::Session,
                    format!("re-initialize failed: {e}"),
                    None,
                )
            })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(transport_error(
                TransportErrorKind::Session,
                format!("{refused}: HTTP {status}"),
                Some(status.as_u16()),
            ));
        }
        Ok(resp)
    }

    /// The one reply to `id` in a response, JSON or SSE (messages before it are delivered
    /// to the peer).
    pub(super) async fn read_one_reply(
        &self,
        resp: Response,
        id: &RequestId,
    ) -> Result<Message, TransportError> {
        if is_event_stream(&resp) {
            let mut parser = SseParser::new(self.config.max_message_bytes);
            let mut found = None;
            let _ = self
                .read_events(resp, &mut parser, None, |m| {
                    if reply_id(&m) == Some(id) {
                        found = Some(m);
                        return (false, true);
                    }
                    (true, false)
                })
                .await;
            found.ok_or_else(|| {
                transport_error(
                    TransportErrorKind::Stream,
                    "the stream ended without a reply",
                    None,
                )
            })
        } else {
            let body = self.read_body(resp).await?;
            Message::parse(&body).map_err(|f| {
                transport_error(
                    TransportErrorKind::Body,
                    format!("unreadable reply: {}", f.error),
                    None,
                )
            })
        }
    }

    pub(super) fn capture_session(&self, resp: &Response) {
        if let Some(id) = resp
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
        {
            self.session.lock().id = Some(id.to_owned());
        }
    }

    pub(super) fn capture_version(&self, result: &Value) {
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            self.session.lock().protocol_version = Some(v.to_owned());
        }
    }

    pub(super) async fn read_body(&self, mut resp: Response) -> Result<Vec<u8>, TransportError> {
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) => {
                    if body.len() + c.len() > self.config.max_message_bytes {
                        return Err(TransportError::too_large(
                            None,
                            self.config.max_message_bytes as u64,
                        ));
                    }
                    body.extend_from_slice(&c);
                }
                Ok(None) => return Ok(body),
                Err(e) => {
                    return Err(transport_error(
                        TransportErrorKind::Body,
                        format!("reading the reply failed: {e}"),
                        None,
                    ));
                }
            }
        }
    }

    /// Read SSE events of `resp`, passing each JSON-RPC message to `on`, which returns
    /// (deliver it to the peer, stop reading). Returns whether reading stopped because
    /// `on` asked (else the stream ended or broke). `stream_of`: the request of ours whose
    /// response stream this is (`None`: the standalone stream).
    pub(super) async fn read_events(
        &self,
        mut resp: Response,
        parser: &mut SseParser,
        stream_of: Option<&RequestId>,
        mut on: impl FnMut(Message) -> (bool, bool),
    ) -> bool {
        loop {
            let chunk = tokio::select! {
                c = resp.chunk() => c,
                () = self.stop.cancelled() => return true,
            };
            let chunk = match chunk {
                Ok(Some(c)) => c,
                Ok(None) => {
                    parser.finish();
                    return false;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "SSE connection broke");
                    parser.finish();
                    return false;
                }
            };
            let events = match parser.feed(&chunk) {
                Ok(ev) => ev,
                Err(e) => {
                    tracing::warn!(error = %e, "SSE stream dropped");
                    parser.finish();
                    return false;
                }
            };
            for ev in events {
                if ev.event != "message" {
                    continue;
                }
                match Message::parse(ev.data.as_bytes()) {
                    Ok(m) => {
                        let (deliver, stop) = on(m.clone());
                        if deliver {
                            self.deliver_on(m, stream_of).await;
                        }
                        if stop {
                            return true;
                        }
                    }
                    Err(f) => {
                        tracing::warn!(error = %f.error, "unreadable SSE event ignored");
                    }
                }
            }
        }
    }
}

pub(super) fn is_event_stream(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case(EVENT_STREAM))
        })
}

pub(super) fn reply_id(m: &Message) -> Option<&RequestId> {
    match m {
        Message::Response(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}
