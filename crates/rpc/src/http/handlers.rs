//! The HTTP side: checks every request (origin, auth, protocol version, size), then POST,
//! GET and DELETE on the endpoint.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_tasks_proto::{ErrorObject, Message, RequestId, codes, methods};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::session::{Connect, First, HttpSession, Pending, Reader, new_session_id};
use super::stream::{EventId, STANDALONE};
use super::{ClientAddr, Refused, ReplyMode, Shared};
use crate::peer::{Peer, RouteDelivery};

const MCP_SESSION_ID: &str = "mcp-session-id";
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(endpoint).with_state(shared)
}

fn header_str(h: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// A JSON-RPC error object as a message; without an id when the request's is unknown.
///
/// Spec: "The HTTP response body MAY comprise a JSON-RPC error response that has no `id`."
fn error_body(id: Option<&RequestId>, error: &ErrorObject) -> String {
    let mut v = json!({ "jsonrpc": "2.0", "error": error });
    if let Some(id) = id {
        v["id"] = id.to_value();
    }
    v.to_string()
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    r
}

fn http_error(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    json_response(status, error_body(None, &ErrorObject::new(code, message)))
}

fn bad_request(message: impl Into<String>) -> Response {
    http_error(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

async fn endpoint(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    handle(shared, req).await
}

/// Serve one HTTP request on the endpoint (or 404 elsewhere).
pub(crate) async fn handle(shared: Arc<Shared>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let origin = header_str(&parts.headers, header::ORIGIN).map(str::to_owned);
    if let Some(o) = &origin
        && !shared.config.origins.allows(o)
    {
        tracing::debug!(origin = %o, "request from a foreign origin refused");
        return http_error(
            StatusCode::FORBIDDEN,
            codes::INVALID_REQUEST,
            format!("Forbidden: origin `{o}` is not allowed"),
        );
    }
    let mut resp = if parts.uri.path() != shared.config.path {
        http_error(
            StatusCode::NOT_FOUND,
            codes::INVALID_REQUEST,
            format!("Not found: the MCP endpoint is {}", shared.config.path),
        )
    } else if parts.method == Method::OPTIONS {
        preflight()
    } else {
        serve(&shared, parts, body).await
    };
    if let Some(o) = origin
        && let Ok(v) = HeaderValue::from_str(&o)
    {
        let h = resp.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
        h.insert(header::VARY, HeaderValue::from_static("Origin"));
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"),
        );
    }
    resp
}

/// CORS preflight of browser clients.
fn preflight() -> Response {
    let mut r = empty(StatusCode::NO_CONTENT);
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID",
        ),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    r
}

/// The principal of the request: `Ok(None)` without authentication; a 401 with
/// `WWW-Authenticate: Bearer` when a token is missing or unknown.
fn authenticate(shared: &Shared, headers: &HeaderMap) -> Result<Option<String>, Box<Response>> {
    let tokens = &shared.config.tokens;
    if tokens.is_empty() {
        return Ok(None);
    }
    let presented = header_str(headers, header::AUTHORIZATION).and_then(|v| {
        let (scheme, token) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    let (challenge, message) = match presented {
        None => (
            "Bearer realm=\"mcp\"",
            "Unauthorized: send `Authorization: Bearer <token>`",
        ),
        Some(t) => match tokens.authenticate(t) {
            Some(p) => return Ok(Some(p.to_owned())),
            None => (
                "Bearer realm=\"mcp\", error=\"invalid_token\"",
                "Unauthorized: the bearer token is not valid",
            ),
        },
    };
    let mut r = http_error(StatusCode::UNAUTHORIZED, codes::INVALID_REQUEST, message);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    Err(Box::new(r))
}

async fn serve(shared: &Arc<Shared>, parts: Parts, body: Body) -> Response {
    let principal = match authenticate(shared, &parts.headers) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    // Spec: "If the server receives a request with an invalid or unsupported
    // MCP-Protocol-Version, it MUST respond with 400 Bad Request." Without the header the
    // session's negotiated version (or 2025-03-26) applies; the handler knows it.
    if let Some(v) = parts.headers.get(MCP_PROTOCOL_VERSION) {
        let ok = v.to_str().is_ok_and(|v| {
            shared
                .config
                .protocol_versions
                .iter()
                .any(|s| s == v.trim())
        });
        if !ok {
            return bad_request(format!(
                "Bad Request: unsupported MCP-Protocol-Version {v:?} (supported: {})",
                shared.config.protocol_versions.join(", ")
            ));
        }
    }
    match parts.method {
        Method::POST => post(shared, &parts, body, principal).await,
        Method::GET => get(shared, &parts, principal.as_ref()),
        Method::DELETE => delete(shared, &parts, principal.as_ref()),
        _ => {
            let mut r = http_error(
                StatusCode::METHOD_NOT_ALLOWED,
                codes::INVALID_REQUEST,
                "Method not allowed: use POST, GET or DELETE",
            );
            r.headers_mut().insert(
                header::ALLOW,
                HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
            );
            r
        }
    }
}

/// The session a request names, if it is live and belongs to the same principal.
///
/// Spec: "Servers that require a session ID SHOULD respond to requests without an
/// `MCP-Session-Id` header (other than initialization) with HTTP 400 Bad Request." and
/// after a session ends, "it MUST respond to requests containing that session ID with
/// HTTP 404 Not Found." Another principal's session looks exactly like an unknown one.
fn find_session(
    shared: &Shared,
    headers: &HeaderMap,
    principal: Option<&String>,
) -> Result<Arc<HttpSession>, Box<Response>> {
    let Some(id) = header_str(headers, MCP_SESSION_ID) else {
        return Err(Box::new(bad_request(
            "Bad Request: the Mcp-Session-Id header is required (send initialize first)",
        )));
    };
    match shared.session(id.trim()) {
        Some(s) if s.principal.as_ref() == principal => {
            s.touch();
            // Any request naming the session shows the client has its id: initialization
            // completed (see `HttpConfig::session_init_idle`).
            s.set_initialized();
            Ok(s)
        }
        _ => Err(Box::new(http_error(
            StatusCode::NOT_FOUND,
            codes::INVALID_REQUEST,
            "Not found: the session does not exist or has ended; send initialize to start a new one",
        ))),
    }
}

/// Which answer content types the client accepts.
#[derive(Debug, Clone, Copy)]
struct Accept {
    json: bool,
    sse: bool,
}

fn accept(headers: &HeaderMap) -> Accept {
    let Some(v) = header_str(headers, header::ACCEPT) else {
        return Accept {
            json: true,
            sse: true,
        };
    };
    let mut a = Accept {
        json: false,
        sse: false,
    };
    for item in v.split(',') {
        let mut fields = item.split(';');
        let mt = fields.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = fields.any(|p| {
            let p = p.trim().replace(' ', "");
            p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
        });
        if refused {
            continue;
        }
        match mt.as_str() {
            "*/*" => {
                a.json = true;
                a.sse = true;
            }
            "application/*" | JSON => a.json = true,
            "text/*" | EVENT_STREAM => a.sse = true,
            _ => {}
        }
    }
    a
}

fn not_acceptable(what: &str) -> Response {
    http_error(
        StatusCode::NOT_ACCEPTABLE,
        codes::INVALID_REQUEST,
        format!("Not Acceptable: the client must accept {what}"),
    )
}

async fn read_body(
    shared: &Shared,
    parts: &Parts,
    body: Body,
) -> Result<bytes::Bytes, Box<Response>> {
    let max = shared.config.max_body_bytes;
    let too_large = || {
        http_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::INVALID_REQUEST,
            format!("Payload too large: the body limit is {max} bytes"),
        )
    };
    let declared = header_str(&parts.headers, header::CONTENT_LENGTH)
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(Box::new(too_large()));
    }
    // A client that sends its body slower than this holds a connection and a task for
    // nothing (slowloris): 408, and the connection closes.
    let limit = shared.config.body_read_timeout;
    let Ok(read) = tokio::time::timeout(limit, Limited::new(body, max).collect()).await else {
        let mut r = http_error(
            StatusCode::REQUEST_TIMEOUT,
            codes::INVALID_REQUEST,
            format!(
                "Request Timeout: the body was not received within {} ms (--body-read-timeout)",
                limit.as_millis()
            ),
        );
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return Err(Box::new(r));
    };
    match read {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(Box::new(too_large())),
        Err(e) => Err(Box::new(bad_request(format!(
            "Bad Request: could not read the body: {e}"
        )))),
    }
}

async fn post(
    shared: &Arc<Shared>,
    parts: &Parts,
    body: Body,
    principal: Option<String>,
) -> Response {
    if let Some(ct) = header_str(&parts.headers, header::CONTENT_TYPE) {
        let mt = ct.split(';').next().unwrap_or("").trim();
        if !mt.eq_ignore_ascii_case(JSON) {
            return http_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                codes::INVALID_REQUEST,
                format!("Unsupported Media Type: the body must be {JSON}, got `{ct}`"),
            );
        }
    }
    let acc = accept(&parts.headers);
    if !acc.json && !acc.sse {
        return not_acceptable("application/json or text/event-stream");
    }
    let bytes = match read_body(shared, parts, body).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let message = match Message::parse(&bytes) {
        Ok(m) => m,
        Err(f) => {
            return json_response(StatusCode::BAD_REQUEST, error_body(f.id.as_ref(), &f.error));
        }
    };
    let has_session = parts.headers.contains_key(MCP_SESSION_ID);
    let client = parts.extensions.get::<ClientAddr>().map(|c| c.0.ip());
    match message {
        Message::Request(req) if !has_session => {
            if req.method == methods::INITIALIZE {
                initialize(shared, req, principal, client, acc, true).await
            } else if req.method == methods::SERVER_DISCOVER {
                // Answered by a throwaway session's handler (-32601), so that a newer
                // client falls back to initialize.
                initialize(shared, req, principal, client, acc, false).await
            } else {
                bad_request(format!(
                    "Bad Request: the Mcp-Session-Id header is required for `{}` (send initialize first)",
                    req.method
                ))
            }
        }
        other => {
            let session = match find_session(shared, &parts.headers, principal.as_ref()) {
                Ok(s) => s,
                Err(r) => return *r,
            };
            match other {
                Message::Request(req) => {
                    let mode = mode_for(shared, &req, acc);
                    let answer = answer(shared, &session, req, mode).await;
                    answer.into_response(&session)
                }
                Message::Notification(n) => {
                    let cancelled = (n.method == methods::CANCELLED)
                        .then(|| n.params.as_ref().and_then(|p| p.get("requestId")))
                        .flatten()
                        .and_then(request_id_of);
                    session.peer.receive(Message::Notification(n)).await;
                    if let Some(id) = cancelled {
                        session.request_cancelled(&id);
                    }
                    empty(StatusCode::ACCEPTED)
                }
                response => {
                    // Answers to what the server asked, possibly on another stream or
                    // session: the peer (and behind it the handler) routes them by id.
                    session.peer.receive(response).await;
                    empty(StatusCode::ACCEPTED)
                }
            }
        }
    }
}

fn request_id_of(v: &Value) -> Option<RequestId> {
    match v {
        Value::String(s) => Some(RequestId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

fn mode_for(shared: &Shared, req: &mcp_tasks_proto::Request, acc: Accept) -> ReplyMode {
    let mode = (shared.config.reply_policy)(req);
    match (acc.json, acc.sse) {
        (true, false) => ReplyMode::Json,
        (false, true) => ReplyMode::Stream,
        _ => mode,
    }
}

/// Ends a session that never got registered when the POST that created it goes away.
struct EndUnlessKept(Option<Arc<HttpSession>>);

impl Drop for EndUnlessKept {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.end();
        }
    }
}

/// POST without a session: `initialize` creates one (kept when it succeeds); with
/// `keep == false` the session only answers this one request.
async fn initialize(
    shared: &Arc<Shared>,
    req: mcp_tasks_proto::Request,
    principal: Option<String>,
    client: Option<std::net::IpAddr>,
    acc: Accept,
    keep: bool,
) -> Response {
    let owner = super::owner_key(principal.as_deref(), client);
    let handler = shared.factory.create(principal.as_deref());
    let (peer, outbound) = Peer::new(handler);
    let session = HttpSession::start(
        new_session_id(),
        principal,
        peer,
        outbound,
        shared.config.limits(),
        Arc::clone(&shared.replay_bytes),
    );
    let mut guard = EndUnlessKept(Some(Arc::clone(&session)));
    let id = req.id.clone();
    let mode = mode_for(shared, &req, acc);
    let answer = answer(shared, &session, req, mode).await;
    let ok = match &answer {
        Answer::Json(m) => matches!(m, Message::Response(_)),
        Answer::Stream(_) => true,
        Answer::Gone | Answer::Busy(_) => false,
    };
    if keep
        && ok
        && let Err(why) = shared.admit(&session, &owner)
    {
        return session_refused(&id, &why);
    }
    if keep && ok {
        guard.0 = None;
        tracing::info!(session = %session.id, principal = ?session.principal, "session started");
        let mut r = answer.into_response(&session);
        if let Ok(v) = HeaderValue::from_str(&session.id) {
            r.headers_mut().insert(MCP_SESSION_ID, v);
        }
        r
    } else {
        let r = match answer {
            Answer::Stream(reader) => {
                // A throwaway session cannot keep a stream: read the answer whole.
                drop(reader);
                http_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    codes::INTERNAL_ERROR,
                    "the request could not be answered",
                )
            }
            other => other.into_response(&session),
        };
        drop(guard);
        r
    }
}

/// 503 for an `initialize` beyond the session bounds, every session being in use.
fn session_refused(id: &RequestId, why: &Refused) -> Response {
    let message = match why {
        Refused::Total(n) => format!(
            "Service Unavailable: the server holds its maximum of {n} sessions (--max-sessions), all in use; try again later"
        ),
        Refused::Owner(n) => format!(
            "Service Unavailable: this principal (or, without authentication, this client address) holds its maximum of {n} sessions (--max-sessions-per-principal), all in use; end one with DELETE or try again later"
        ),
    };
    let err = ErrorObject::new(codes::INTERNAL_ERROR, message);
    let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, error_body(Some(id), &err));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    r
}

/// How a request got answered.
enum Answer {
    /// One JSON response.
    Json(Message),
    /// An SSE stream.
    Stream(Reader),
    /// The request id is already in flight on this session.
    Busy(Message),
    /// No answer: the session ended or the client cancelled the request.
    Gone,
}

impl Answer {
    fn into_response(self, session: &HttpSession) -> Response {
        match self {
            Self::Json(m) | Self::Busy(m) => json_response(StatusCode::OK, m.to_json()),
            Self::Stream(reader) => sse_response(reader),
            Self::Gone if session.ended.is_cancelled() => http_error(
                StatusCode::NOT_FOUND,
                codes::INVALID_REQUEST,
                "Not found: the session ended",
            ),
            // Spec (cancellation): the receiver does not answer a cancelled request.
            Self::Gone => empty(StatusCode::NO_CONTENT),
        }
    }
}

/// Removes a still-waiting pending entry when the POST goes away first, and cancels its
/// request.
///
/// A POST whose answer is still to come as one JSON object (not yet upgraded to an SSE
/// stream) goes away when its client's connection closes. That answer can never be
/// delivered: a JSON response, unlike an SSE stream, has no event id to resume from. So
/// the request is cancelled, as if the client had sent `notifications/cancelled`: the
/// handler stops and the request id is free again. (The transports page says, of SSE
/// streams only: "Disconnection MAY occur at any time (e.g., due to network conditions).
/// Therefore: Disconnection SHOULD NOT be interpreted as the client cancelling its
/// request." An SSE stream left by its client is kept for resumption instead, and its
/// request cancelled only when the stream is dropped unread.)
struct WaitGuard<'a> {
    session: &'a HttpSession,
    id: &'a RequestId,
    armed: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let abandoned = {
                let mut st = self.session.lock();
                matches!(st.pending.get(self.id), Some(Pending::Waiting { .. }))
                    && st.pending.remove(self.id).is_some()
            };
            if abandoned {
                self.session.cancel_requests(
                    vec![self.id.clone()],
                    "the client closed the connection awaiting the JSON response",
                );
            }
        }
    }
}

/// Deliver request `req` to the session's peer and wait for how to answer it.
///
/// Spec: "If the input is a JSON-RPC request, the server MUST either return
/// `Content-Type: text/event-stream`, to initiate an SSE stream, or `Content-Type:
/// application/json`, to return one JSON object."
async fn answer(
    shared: &Shared,
    session: &Arc<HttpSession>,
    req: mcp_tasks_proto::Request,
    mode: ReplyMode,
) -> Answer {
    let id = req.id.clone();
    let (tx, mut rx) = oneshot::channel();
    session.ack_completed();
    let stream = {
        let mut st = session.lock();
        if st.pending.contains_key(&id) {
            let err = ErrorObject::invalid_request(format!(
                "request id {id} is already in use by a request in flight"
            ));
            return Answer::Busy(Message::reply(id, Err(err)));
        }
        if mode == ReplyMode::Stream {
            Some(HttpSession::new_request_stream(&mut st, id.clone()))
        } else {
            st.pending.insert(
                id.clone(),
                Pending::Waiting {
                    tx,
                    upgrade: mode == ReplyMode::Auto,
                },
            );
            None
        }
    };
    if let Some(n) = stream {
        session
            .peer
            .receive_with(Message::Request(req), RouteDelivery::OwnStream)
            .await;
        return connect(shared, session, n);
    }
    let mut guard = WaitGuard {
        session,
        id: &id,
        armed: true,
    };
    // Json: what the handler sends before the response goes to the standalone stream.
    let delivery = if mode == ReplyMode::Json {
        RouteDelivery::Diverted
    } else {
        RouteDelivery::OwnStream
    };
    session
        .peer
        .receive_with(Message::Request(req), delivery)
        .await;
    let first = if mode == ReplyMode::Auto {
        match tokio::time::timeout(shared.config.peek, &mut rx).await {
            Ok(r) => r.ok(),
            Err(_) => {
                let upgraded = {
                    let mut st = session.lock();
                    if matches!(st.pending.get(&id), Some(Pending::Waiting { .. })) {
                        st.pending.remove(&id);
                        Some(HttpSession::new_request_stream(&mut st, id.clone()))
                    } else {
                        None
                    }
                };
                match upgraded {
                    Some(n) => Some(First::Upgraded(n)),
                    // The router decided meanwhile; its answer is in the channel.
                    None => rx.await.ok(),
                }
            }
        }
    } else {
        rx.await.ok()
    };
    guard.armed = false;
    match first {
        Some(First::Response(m)) => Answer::Json(m),
        Some(First::Upgraded(n)) => connect(shared, session, n),
        None => Answer::Gone,
    }
}

fn connect(shared: &Shared, session: &Arc<HttpSession>, stream: u64) -> Answer {
    match session.connect(stream, None, shared.shutdown.clone()) {
        Connect::Reader(r) => Answer::Stream(r),
        Connect::Complete | Connect::Unknown => Answer::Gone,
    }
}

fn sse_response(reader: Reader) -> Response {
    let body = futures::stream::unfold(reader, |mut r| async move {
        r.next_chunk().await.map(|b| (Ok::<_, Infallible>(b), r))
    });
    let mut r = Response::new(Body::from_stream(body));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// GET: the standalone stream, or with `Last-Event-ID` the resumption of the stream that
/// event belongs to.
///
/// Spec: "The server MAY use this header to replay messages that would have been sent
/// after the last event ID, on the stream that was disconnected, and to resume the stream
/// from that point." and "The server MUST NOT replay messages that would have been
/// delivered on a different stream."
fn get(shared: &Arc<Shared>, parts: &Parts, principal: Option<&String>) -> Response {
    if !accept(&parts.headers).sse {
        return not_acceptable(EVENT_STREAM);
    }
    let session = match find_session(shared, &parts.headers, principal) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if shared.shutdown.is_cancelled() {
        let mut r = http_error(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::INTERNAL_ERROR,
            "the server is shutting down",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    }
    let (stream, from) = match header_str(&parts.headers, LAST_EVENT_ID) {
        // The event after `seq`, saturating: for the largest sequence number it used to
        // wrap to 0 and replay the whole stream (or panic in a debug build). A cursor past
        // the newest event is answered as "nothing after it" (`HttpSession::connect`).
        Some(v) => match EventId::parse(v) {
            Some(e) => (e.stream, Some(e.seq.saturating_add(1))),
            None => return bad_request(format!("Bad Request: malformed Last-Event-ID `{v}`")),
        },
        None => (STANDALONE, None),
    };
    match session.connect(stream, from, shared.shutdown.clone()) {
        Connect::Reader(reader) => sse_response(reader),
        // The stream ended (its response went out) and nothing follows the given event:
        // there is nothing to resume. (An empty SSE response here makes some clients
        // reconnect without `Last-Event-ID`, as if to the standalone stream.)
        Connect::Complete => empty(StatusCode::NO_CONTENT),
        Connect::Unknown => bad_request(format!(
            "Bad Request: the stream of Last-Event-ID `{}` is unknown or expired",
            header_str(&parts.headers, LAST_EVENT_ID).unwrap_or("")
        )),
    }
}

/// DELETE: end the session. What it started (tasks) goes on.
fn delete(shared: &Arc<Shared>, parts: &Parts, principal: Option<&String>) -> Response {
    let session = match find_session(shared, &parts.headers, principal) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    shared.remove(&session.id);
    session.end();
    tracing::info!(session = %session.id, "session ended by the client");
    empty(StatusCode::NO_CONTENT)
}
