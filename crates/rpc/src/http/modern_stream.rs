//! A 2026-07-28 request answered as an SSE stream: `subscriptions/listen` always, and a
//! call whose handler sends notifications (progress) while it runs.
//!
//! Spec (streamable HTTP, 2026-07-28): "If the body is a JSON-RPC _request_, the server
//! MUST return either `Content-Type: application/json` (a single JSON object) or
//! `Content-Type: text/event-stream` (an SSE response stream)"; "The server MAY send
//! JSON-RPC _notifications_ — for example, `notifications/progress` [...] — before the
//! final response. These notifications MUST relate to the originating client request";
//! "The server MUST NOT send independent JSON-RPC _requests_ on this stream"; "The final
//! JSON-RPC _response_ SHOULD terminate the stream"; "Long-lived notification streams are
//! obtained by sending a `subscriptions/listen` request. The server's response is itself
//! an SSE stream". Streams are not resumable ("Resumable SSE streams via `Last-Event-ID`
//! are not supported"): the events carry no ids.
//!
//! The request is served by the handler of the principal's modern requests (as a JSON
//! answer is, `super::stateless`), on a [`Peer`] of its own whose outgoing queue this
//! stream reads: what the handler sends on the request's route becomes an event. A call
//! that sends nothing before it finishes is answered as JSON, as before. Closing the
//! stream cancels the request (spec, cancellation: on HTTP "closing the SSE response
//! stream is itself the cancellation signal"). Each stream holds its HTTP/1.1 connection,
//! so their number is bounded by `HttpConfig::max_connections` and
//! `max_connections_per_ip`; a listen stream gets an SSE comment every
//! [`KEEPALIVE`] so that intermediaries do not close it while no notification flows.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use mcp_tasks_proto::jsonrpc::response_json;
use mcp_tasks_proto::modern::RequestMeta;
use mcp_tasks_proto::{ErrorObject, Message, Request, RequestId};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::peer::{CancelOnDrop, Handler, Outbound, Peer, RequestContext, RouteDelivery};

/// How often a quiet `subscriptions/listen` stream gets an SSE comment (`:`).
pub(crate) const KEEPALIVE: Duration = Duration::from_secs(15);

/// How a streamed request got answered.
pub(crate) enum Streamed {
    /// The handler finished before it sent anything: its answer as one JSON response
    /// (`Ok` the response text, `Err` the error response).
    Json(Result<String, Message>),
    /// An SSE stream: the notifications, then the response.
    Sse(Response),
}

/// Serve `req` with `handler` on a peer of its own; `always`: answer as a stream even
/// when the handler sends nothing first (`subscriptions/listen`).
pub(crate) async fn serve(
    handler: Arc<dyn Handler>,
    req: Request,
    meta: Option<Arc<RequestMeta>>,
    always: bool,
) -> Streamed {
    let (peer, mut outbound) = Peer::new(Arc::clone(&handler));
    let id = req.id.clone();
    let cancel = CancellationToken::new();
    let mut guard = CancelOnDrop(Some(cancel.clone()));
    let cx = RequestContext {
        peer,
        id: id.clone(),
        cancel,
        delivery: RouteDelivery::OwnStream,
        request_meta: meta,
        stream_of: None,
    };
    let mut work = tokio::spawn(async move { handler.handle_request_text(cx, req).await });
    let first = if always {
        None
    } else {
        // A notification already queued wins over a finished handler: it goes out first.
        let step = tokio::select! {
            biased;
            m = outbound.recv() => Step::Sent(m),
            out = &mut work => Step::Done(out),
        };
        let done = match step {
            Step::Sent(Some(m)) => Ok(m),
            // Nothing more can be sent: only the answer is left.
            Step::Sent(None) | Step::Tick => Err((&mut work).await),
            Step::Done(out) => Err(out),
        };
        match done {
            Ok(m) => Some(m),
            Err(out) => {
                guard.disarm();
                return Streamed::Json(answer(&id, joined(out)));
            }
        }
    };
    let state = State {
        id,
        outbound,
        work: Some(work),
        first,
        closed: false,
        keepalive: always
            .then(|| tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE)),
        guard,
    };
    let body = futures::stream::unfold(state, |mut s| async move {
        s.next().await.map(|b| (Ok::<_, Infallible>(b), s))
    });
    let mut r = Response::new(Body::from_stream(body));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Streamed::Sse(r)
}

/// The stream's state: what is left to send.
struct State {
    id: RequestId,
    outbound: mpsc::Receiver<Outbound>,
    /// The handler; `None` once its response went out.
    work: Option<JoinHandle<Result<String, ErrorObject>>>,
    /// A message read before the stream began.
    first: Option<Outbound>,
    keepalive: Option<tokio::time::Interval>,
    /// Whether the handler's outgoing queue is closed (nothing more will come on it).
    closed: bool,
    /// Cancels the request when the stream is dropped (the client closed it) before its
    /// response went out.
    guard: CancelOnDrop,
}

/// One step of a stream: what happened first.
enum Step {
    /// A message the handler sent (`None`: nothing more can be sent).
    Sent(Option<Outbound>),
    /// The handler finished.
    Done(Result<Result<String, ErrorObject>, tokio::task::JoinError>),
    /// Time for a keep-alive comment.
    Tick,
}

impl State {
    /// The next chunk of the body; `None` after the response.
    async fn next(&mut self) -> Option<Bytes> {
        if let Some(m) = self.first.take()
            && let Some(b) = event(m)
        {
            return Some(b);
        }
        loop {
            let step = {
                let Self {
                    outbound,
                    work,
                    keepalive,
                    closed,
                    ..
                } = &mut *self;
                let handle = work.as_mut()?;
                let tick = async {
                    match keepalive {
                        Some(k) => {
                            k.tick().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    biased;
                    m = outbound.recv(), if !*closed => Step::Sent(m),
                    out = handle => Step::Done(out),
                    () = tick => Step::Tick,
                }
            };
            match step {
                Step::Sent(Some(m)) => {
                    if let Some(b) = event(m) {
                        return Some(b);
                    }
                }
                Step::Sent(None) => self.closed = true,
                Step::Tick => return Some(Bytes::from_static(b":\n\n")),
                Step::Done(out) => {
                    self.work = None;
                    self.guard.disarm();
                    // What the handler queued before it answered goes first.
                    let mut chunk = Vec::new();
                    while let Ok(m) = self.outbound.try_recv() {
                        if let Some(b) = event(m) {
                            chunk.extend_from_slice(&b);
                        }
                    }
                    let text = match answer(&self.id, joined(out)) {
                        Ok(t) => t,
                        Err(m) => m.to_json(),
                    };
                    chunk.extend_from_slice(&frame(&text));
                    return Some(Bytes::from(chunk));
                }
            }
        }
    }
}

/// The SSE event of an outgoing message: a notification only (a modern handler sends no
/// requests, and its response is written by [`State::next`]).
fn event(m: Outbound) -> Option<Bytes> {
    match m.message {
        n @ Message::Notification(_) => Some(frame(&n.to_json())),
        other => {
            tracing::debug!(message = ?other, "not a notification: not sent on a 2026-07-28 stream");
            None
        }
    }
}

/// One SSE event carrying `json` (one line: serialized JSON has no raw newline).
fn frame(json: &str) -> Bytes {
    Bytes::from(format!("data: {json}\n\n"))
}

/// The handler's outcome; a panic or abort is -32603.
fn joined(
    r: Result<Result<String, ErrorObject>, tokio::task::JoinError>,
) -> Result<String, ErrorObject> {
    r.unwrap_or_else(|e| {
        if e.is_panic() {
            tracing::error!("a request's handler panicked");
        }
        Err(ErrorObject::internal("the request's handler failed"))
    })
}

/// The response text of `id`, or its error response.
fn answer(id: &RequestId, out: Result<String, ErrorObject>) -> Result<String, Message> {
    match out {
        Ok(result) => Ok(response_json(id, &result)),
        Err(e) => Err(Message::reply(id.clone(), Err(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use mcp_tasks_proto::RequestId;
    use serde_json::{Value, json};

    /// Notifies `n` times (`params.n`), then answers `{"done": n}`.
    struct Notifying;

    #[async_trait::async_trait]
    impl Handler for Notifying {
        async fn handle_request(
            &self,
            cx: RequestContext,
            req: Request,
        ) -> Result<Value, ErrorObject> {
            let n = req
                .params
                .as_ref()
                .and_then(|p| p["n"].as_u64())
                .unwrap_or(0);
            for i in 0..n {
                cx.notify(
                    "notifications/progress",
                    Some(json!({"progressToken": "t", "progress": i})),
                )
                .await;
            }
            Ok(json!({ "done": n }))
        }
    }

    fn request(n: u64) -> Request {
        Request {
            id: RequestId::Number(3),
            method: "tools/call".into(),
            params: Some(json!({ "n": n })),
        }
    }

    async fn lines(r: Response) -> Vec<String> {
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .split("\n\n")
            .filter(|b| !b.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// A handler that notifies first gets a stream: its notifications in order, then
    /// the response; one that sends nothing is answered as JSON; `always` streams even
    /// then.
    #[tokio::test]
    async fn a_stream_only_when_something_comes_before_the_answer() {
        let Streamed::Sse(r) = serve(Arc::new(Notifying), request(2), None, false).await else {
            panic!("notifications first: a stream");
        };
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        let events = lines(r).await;
        assert_eq!(events.len(), 3, "{events:?}");
        for (i, e) in events[..2].iter().enumerate() {
            let v: Value = serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(v["method"], "notifications/progress");
            assert_eq!(v["params"]["progress"], i);
        }
        let last: Value = serde_json::from_str(events[2].strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(
            last,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"done": 2}})
        );

        let Streamed::Json(Ok(text)) = serve(Arc::new(Notifying), request(0), None, false).await
        else {
            panic!("nothing first: JSON");
        };
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["result"], json!({"done": 0}));

        let Streamed::Sse(r) = serve(Arc::new(Notifying), request(0), None, true).await else {
            panic!("always: a stream");
        };
        let events = lines(r).await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(events[0].contains(r#""result":{"done":0}"#), "{events:?}");
    }

    /// Dropping the stream before the answer cancels the request.
    #[tokio::test]
    async fn dropping_the_stream_cancels_the_request() {
        struct Waits(tokio::sync::mpsc::Sender<()>);
        #[async_trait::async_trait]
        impl Handler for Waits {
            async fn handle_request(
                &self,
                cx: RequestContext,
                _req: Request,
            ) -> Result<Value, ErrorObject> {
                cx.notify(
                    "notifications/progress",
                    Some(json!({"progressToken": "t", "progress": 0})),
                )
                .await;
                cx.cancel.cancelled().await;
                let _ = self.0.send(()).await;
                Err(ErrorObject::internal("cancelled"))
            }
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        let Streamed::Sse(r) = serve(Arc::new(Waits(tx)), request(0), None, false).await else {
            panic!("a stream");
        };
        drop(r);
        rx.recv().await.expect("the handler saw the cancellation");
    }
}
