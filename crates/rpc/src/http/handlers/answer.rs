//! How a request POSTed to a session is answered: a read served in its POST and answered
//! as JSON text, or anything through the peer's queue, routed back by the session as one
//! JSON object or an SSE stream.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use mcp_tasks_proto::{ErrorObject, Message, RequestId, codes};
use tokio::sync::oneshot;

use crate::http::config::ReplyMode;
use crate::http::session::{Connect, First, HttpSession, Pending, Reader};
use crate::http::state::Shared;
use crate::peer::RouteDelivery;

use super::response::{EVENT_STREAM, empty, http_error, json_message_response, json_response};

/// How a request got answered.
pub(super) enum Answer {
    /// One JSON response.
    Json(Message),
    /// One JSON response to request `.0`: its result as JSON text, or its error.
    Text(RequestId, Result<String, ErrorObject>),
    /// An SSE stream.
    Stream(Reader),
    /// The request id is already in flight on this session.
    Busy(Message),
    /// No answer: the session ended or the client cancelled the request.
    Gone,
}

impl Answer {
    /// The HTTP response. A JSON-RPC error [`codes::RATE_LIMITED`] answered as JSON is
    /// status 429 with `Retry-After` (whole seconds, rounded up, from
    /// `data.retryAfterMs`); an SSE stream has begun with 200 and carries it as it is.
    pub(super) fn into_response(self, session: &HttpSession) -> Response {
        match self {
            Self::Json(m) => json_message_response(m),
            Self::Text(id, Ok(result)) => json_response(
                StatusCode::OK,
                mcp_tasks_proto::jsonrpc::response_json(&id, &result),
            ),
            Self::Text(id, Err(e)) => json_message_response(Message::reply(id, Err(e))),
            Self::Busy(m) => json_response(StatusCode::OK, m.to_json()),
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
                let mut st = self.session.state.lock();
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

/// The task id of a `tasks/result` request.
fn task_of_result(req: &mcp_tasks_proto::Request) -> Option<&str> {
    req.params.as_ref()?.get("taskId")?.as_str()
}

/// Deliver request `req` to the session's peer and wait for how to answer it.
///
/// Spec: "If the input is a JSON-RPC request, the server MUST either return
/// `Content-Type: text/event-stream`, to initiate an SSE stream, or `Content-Type:
/// application/json`, to return one JSON object."
pub(super) async fn answer(
    shared: &Shared,
    session: &Arc<HttpSession>,
    req: mcp_tasks_proto::Request,
    mode: ReplyMode,
) -> Answer {
    let id = req.id.clone();
    session.ack_completed();
    // A request answered as JSON is served and its answer written as text, without a trip
    // through the peer's queue and the session's routing: a read (`tasks/get` above all)
    // here, in the POST's task; anything else (a task-augmented `tools/call` above all) in
    // a task of its own, cancelled if the POST goes away (as `WaitGuard` cancels a queued
    // one).
    if mode == ReplyMode::Json && !session.peer.handler().is_sequential(&req.method) {
        if session.state.lock().pending.contains_key(&id) {
            return Answer::Busy(Message::reply(id.clone(), Err(id_in_use(&id))));
        }
        let out = if session.peer.reads_in_place(&req.method) {
            session
                .peer
                .serve_read_text(req, RouteDelivery::Diverted)
                .await
        } else {
            session.peer.serve_text(req, RouteDelivery::Diverted).await
        };
        return match out {
            Some(out) => Answer::Text(id, out),
            None => Answer::Gone,
        };
    }
    // Boxed: see `post`.
    let queued = Box::pin(answer_queued(shared, session, req, mode));
    queued.await
}

/// [`answer`] through the peer's queue: the request is served (spawned, or here for a
/// read) and its answer routed back by the session, as JSON or on a stream.
async fn answer_queued(
    shared: &Shared,
    session: &Arc<HttpSession>,
    req: mcp_tasks_proto::Request,
    mode: ReplyMode,
) -> Answer {
    let id = req.id.clone();
    let (tx, mut rx) = oneshot::channel();
    // With shared sessions, a tasks/result stream another replica can answer again.
    let tag = shared
        .config
        .sessions
        .as_ref()
        .and_then(|_| crate::http::session::resume::tag_for(&req));
    let stream = {
        let mut st = session.state.lock();
        if st.pending.contains_key(&id) {
            return Answer::Busy(Message::reply(id.clone(), Err(id_in_use(&id))));
        }
        if mode == ReplyMode::Stream {
            Some(HttpSession::new_request_stream(
                &mut st,
                id.clone(),
                tag.clone(),
            ))
        } else {
            st.pending.insert(
                id.clone(),
                Pending::Waiting {
                    tx,
                    upgrade: mode == ReplyMode::Auto,
                    tag: tag.clone(),
                },
            );
            None
        }
    };
    // A tasks/result on a stream of a shared session carries its task's notifications,
    // wherever the task runs (the other replicas are told, unless it runs here).
    if mode != ReplyMode::Json
        && let Some(task) = tag.as_ref().and_then(|_| task_of_result(&req))
        && !session.peer.handler().runs_task_here(task)
    {
        session.follow_task(task, &id);
    }
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
    session.peer.serve_read_here(req, delivery).await;
    let first = if mode == ReplyMode::Auto {
        match tokio::time::timeout(shared.config.peek, &mut rx).await {
            Ok(r) => r.ok(),
            Err(_) => {
                let upgraded = {
                    let mut st = session.state.lock();
                    if matches!(st.pending.get(&id), Some(Pending::Waiting { .. })) {
                        st.pending.remove(&id);
                        Some(HttpSession::new_request_stream(&mut st, id.clone(), tag))
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

/// -32600 for a request whose id a request in flight on the session has.
fn id_in_use(id: &RequestId) -> ErrorObject {
    ErrorObject::invalid_request(format!(
        "request id {id} is already in use by a request in flight"
    ))
}

fn connect(shared: &Shared, session: &Arc<HttpSession>, stream: u64) -> Answer {
    match session.connect(stream, None, shared.shutdown.clone()) {
        Connect::Reader(r) => Answer::Stream(r),
        Connect::Complete | Connect::Unknown => Answer::Gone,
    }
}

pub(super) fn sse_response(reader: Reader) -> Response {
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
