//! POST: a JSON-RPC message on the endpoint and `initialize`; how a request gets answered
//! (one JSON object or an SSE stream) is in `answer`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use mcp_tasks_proto::logged::digest;
use mcp_tasks_proto::{Message, RequestId, codes, methods};
use serde_json::Value;

use crate::http::config::ReplyMode;
use crate::http::metrics::Refusal;
use crate::http::session::directory::{SharedSession, now_ms};
use crate::http::session::{HttpSession, new_session_id};
use crate::http::state::{Shared, owner_key};
use crate::peer::Peer;

use super::answer::{Answer, answer};
use super::checks::{find_session, legacy_version_check, read_body};
use super::response::{
    Accept, JSON, MCP_SESSION_ID, accept, bad_request, empty, error_body, header_str, http_error,
    json_message_response, json_response, not_acceptable, session_refused, store_unavailable,
};

/// The client's address, put in every request's extensions by [`HttpServer::serve`](crate::http::HttpServer::serve).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) std::net::SocketAddr);

pub(super) async fn post(
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
    let client = parts.extensions.get::<ClientAddr>().map(|c| c.0.ip());
    let bytes = match read_body(shared, parts, body).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    // The revision is decided here, once per POST: a stateless one when the
    // `MCP-Protocol-Version` header or the request's `_meta` names it (handlers/modern.rs
    // serves it, its checked `_meta` handed on in `RequestContext::request_meta`), else
    // the session's.
    let named = super::modern::header_revision(&parts.headers);
    // A well-formed modern request is read in one pass, its `_meta` straight into its
    // types (`mcp_tasks_proto::modern::parse_request`); anything else the general way,
    // which answers what is wrong with it.
    if named.is_some()
        && let Some((mut req, meta)) = mcp_tasks_proto::modern::parse_request(&bytes)
    {
        adopt_trace_headers(&parts.headers, &mut req);
        // The branches a session's request does not take are boxed (here, below,
        // `initialize`, `receive`, the relays, a request's queued answer): a future keeps
        // room for each future it awaits (rustc lays them out side by side more than it
        // overlaps them), and that room was copied each time the future moved, on every
        // request (docs/performance.md, "The get, trimmed"). Each is boxed in a statement
        // of its own: a future built in the statement that awaits it keeps its room.
        let modern = Box::pin(super::modern::post(
            shared,
            &parts.headers,
            req,
            Some(meta),
            principal,
            client,
            acc,
        ));
        return modern.await;
    }
    let message = match Message::parse(&bytes) {
        Ok(m) => m,
        Err(f) => {
            return json_response(StatusCode::BAD_REQUEST, error_body(f.id.as_ref(), &f.error));
        }
    };
    let message = match message {
        Message::Request(mut req) => {
            adopt_trace_headers(&parts.headers, &mut req);
            Message::Request(req)
        }
        other => other,
    };
    let message = match message {
        Message::Request(req)
            if named.is_some()
                || mcp_tasks_proto::modern::names_revision_in_meta(req.params.as_ref()) =>
        {
            let modern = Box::pin(super::modern::post(
                shared,
                &parts.headers,
                req,
                None,
                principal,
                client,
                acc,
            ));
            return modern.await;
        }
        other => other,
    };
    if named.is_some() {
        return super::modern::not_a_request(&message);
    }
    if let Err(r) = legacy_version_check(shared, &parts.headers) {
        return *r;
    }
    let has_session = parts.headers.contains_key(MCP_SESSION_ID);
    match message {
        Message::Request(req) if !has_session => {
            if req.method == methods::INITIALIZE || req.method == methods::SERVER_DISCOVER {
                // `server/discover` is answered by a throwaway session's handler (-32601),
                // so that a newer client falls back to initialize.
                let keep = req.method == methods::INITIALIZE;
                let init = Box::pin(initialize(shared, req, principal, client, acc, keep));
                init.await
            } else {
                bad_request(format!(
                    "Bad Request: the Mcp-Session-Id header is required for `{}` (send initialize first)",
                    req.method
                ))
            }
        }
        other => {
            let session = match find_session(shared, &parts.headers, principal.as_ref()).await {
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
                    if let Err(e) = session.peer.handler().admit_message(Some(&n.method)) {
                        return json_message_response(Message::reply_null(e));
                    }
                    let cancelled = (n.method == methods::CANCELLED)
                        .then(|| n.params.as_ref().and_then(|p| p.get("requestId")))
                        .flatten()
                        .and_then(request_id_of);
                    let n = Message::Notification(n);
                    let relay = Box::pin(shared.relay_if_foreign(&session, &n));
                    if let Err(why) = relay.await {
                        return relay_refused(&why);
                    }
                    let receive = Box::pin(session.peer.receive(n));
                    receive.await;
                    if let Some(id) = cancelled {
                        session.request_cancelled(&id);
                    }
                    empty(StatusCode::ACCEPTED)
                }
                response => {
                    // Counted as a request of its sender, before it is relayed anywhere.
                    if let Err(e) = session.peer.handler().admit_message(None) {
                        return json_message_response(Message::reply_null(e));
                    }
                    // Answers to what the server asked, possibly on another stream or
                    // session: the peer (and behind it the handler) routes them by id;
                    // one answering a request of another replica's goes there too.
                    let relay = Box::pin(shared.relay_if_foreign(&session, &response));
                    if let Err(why) = relay.await {
                        return relay_refused(&why);
                    }
                    let receive = Box::pin(session.peer.receive(response));
                    receive.await;
                    empty(StatusCode::ACCEPTED)
                }
            }
        }
    }
}

/// A message this replica had to relay to the others and could not (over the
/// directory's bounds): 400 with a JSON-RPC error saying why, rather than a 202 for a
/// message nobody will receive.
fn relay_refused(why: &str) -> Response {
    bad_request(format!(
        "Bad Request: this message answers or cancels a request held by another replica, \
         and could not be passed on: {why}"
    ))
}

/// A W3C `traceparent` (and `tracestate`) header of the POST, into the request's `_meta`
/// where the session's request span reads it, unless `_meta` carries its own; a malformed
/// header is ignored (see [`mcp_tasks_proto::trace`]).
fn adopt_trace_headers(headers: &axum::http::HeaderMap, req: &mut mcp_tasks_proto::Request) {
    use mcp_tasks_proto::trace;
    if let Some(parent) = header_str(headers, trace::TRACEPARENT) {
        trace::adopt(
            &mut req.params,
            parent.trim(),
            header_str(headers, trace::TRACESTATE).map(str::trim),
        );
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

/// A new session of `principal`, with a fresh id and a peer from the server's factory.
pub(super) fn start_session(shared: &Arc<Shared>, principal: Option<String>) -> Arc<HttpSession> {
    let handler = shared.factory.create(principal.as_deref());
    let (peer, outbound) = Peer::new(handler);
    let s = HttpSession::start(
        new_session_id(),
        principal,
        peer,
        outbound,
        shared.config.limits(),
        Arc::clone(&shared.replay_bytes),
    );
    if let Some(relay) = shared.relay() {
        s.set_relay(relay);
    }
    s
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
    let owner = owner_key(principal.as_deref(), client);
    let session = start_session(shared, principal);
    let mut guard = EndUnlessKept(Some(Arc::clone(&session)));
    let id = req.id.clone();
    let mode = mode_for(shared, &req, acc);
    let answer = answer(shared, &session, req, mode).await;
    let ok = match &answer {
        Answer::Json(m) => matches!(m, Message::Response(_)),
        Answer::Text(_, out) => out.is_ok(),
        Answer::Stream(_) => true,
        Answer::Gone | Answer::Busy(_) => false,
    };
    if keep
        && ok
        && let Err(why) = shared.admit(&session, &owner)
    {
        shared.refused(Refusal::Limit);
        return session_refused(Some(&id), &why);
    }
    if keep
        && ok
        && let Err(r) = share(shared, &session, &owner).await
    {
        shared.remove(&session.id);
        return *r;
    }
    if keep && ok {
        guard.0 = None;
        tracing::info!(session = %digest(&session.id), principal = ?session.principal, "session started");
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

/// With shared sessions, record the new session `session` of `owner` in the directory so
/// that every replica serves it; beyond the principal's bound there, its sessions closest
/// to expiry end (everywhere). The directory failing is 503: a session the other replicas
/// would not know is not handed out.
async fn share(
    shared: &Arc<Shared>,
    session: &Arc<HttpSession>,
    owner: &str,
) -> Result<(), Box<Response>> {
    let Some(dir) = &shared.config.sessions else {
        return Ok(());
    };
    let Some(state) = session.peer.handler().shared_state() else {
        // This handler cannot be served elsewhere: a session of this process only.
        return Ok(());
    };
    let idle = shared
        .config
        .session_init_idle
        .min(shared.config.session_idle);
    let until = now_ms().saturating_add(i64::try_from(idle.as_millis()).unwrap_or(i64::MAX));
    let rec = SharedSession::new(
        session.id.clone(),
        session.principal.clone(),
        owner.to_owned(),
        state,
        until,
    );
    match dir
        .insert(&rec, shared.config.max_sessions_per_principal.max(1))
        .await
    {
        Ok(replaced) => {
            session.set_stored_until(until);
            for id in replaced {
                tracing::info!(session = %digest(&id), "session ended to make room for a new one (the principal's session bound, every replica)");
                shared.ended_elsewhere(&id);
            }
            Ok(())
        }
        Err(e) => {
            tracing::warn!(session = %digest(&session.id), error = %e, "could not record a shared session");
            Err(Box::new(store_unavailable()))
        }
    }
}
