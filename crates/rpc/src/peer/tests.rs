//! The peer: serving, matching answers, and the outgoing-request lifecycle.

use super::*;
use crate::RequestOptions;
use mcp_tasks_proto::Request;
use serde_json::json;
use std::time::Duration;

struct Echo;

#[async_trait]
impl Handler for Echo {
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        let Request { method, params, .. } = req;
        match method.as_str() {
            "echo" => Ok(params.unwrap_or(Value::Null)),
            "ask" => cx
                .request("question", None)
                .await
                .map_err(PeerError::into_error_object),
            "hang" => std::future::pending().await,
            _ => Err(ErrorObject::method_not_found(method)),
        }
    }
}

#[tokio::test]
async fn serves_requests_and_matches_responses() {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    peer.receive(Message::request(1.into(), "echo", Some(json!({"a":1}))))
        .await;
    let out = rx.recv().await.unwrap();
    assert_eq!(out.route, Route::Request(1.into()));
    assert_eq!(out.message, Message::reply(1.into(), Ok(json!({"a":1}))));

    peer.receive(Message::request(2.into(), "ask", None)).await;
    let q = rx.recv().await.unwrap();
    assert_eq!(q.route, Route::Request(2.into()));
    let req = request_of(q);
    peer.receive(Message::reply(req.id, Ok(json!("yes")))).await;
    let out = rx.recv().await.unwrap();
    assert_eq!(out.message, Message::reply(2.into(), Ok(json!("yes"))));
}

#[tokio::test]
async fn idle_waits_until_every_request_is_answered_or_cancelled() {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    peer.idle().await;
    peer.receive(Message::request(1.into(), "hang", None)).await;
    peer.receive(Message::request(2.into(), "echo", Some(json!(2))))
        .await;
    let out = rx.recv().await.unwrap();
    assert_eq!(out.message, Message::reply(2.into(), Ok(json!(2))));
    let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), peer.idle());
    assert!(waiting.await.is_err(), "idle while request 1 hangs");
    receive_cancel(&peer, 1).await;
    tokio::time::timeout(std::time::Duration::from_secs(5), peer.idle())
        .await
        .expect("idle once request 1 is cancelled");
}

#[tokio::test]
async fn requests_to_a_peer_whose_input_ended_fail_at_once() {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    peer.receive(Message::request(1.into(), "ask", None)).await;
    let q = rx.recv().await.unwrap();
    assert!(matches!(q.message, Message::Request(_)), "{q:?}");
    peer.end_input();
    let out = rx.recv().await.unwrap();
    let Message::Error(e) = out.message else {
        panic!("expected an error reply, got {out:?}")
    };
    assert!(e.error.message.contains("connection closed"), "{e:?}");
    let late = peer.request("question", None, Route::Standalone).await;
    assert_eq!(late, Err(PeerError::Closed));
    assert!(!peer.is_closed(), "what is sent is still delivered");
}

/// The next message sent, as a notification of `method`.
async fn next_notification(rx: &mut mpsc::Receiver<Outbound>, method: &str) -> Outbound {
    let out = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .expect("a message in time")
        .expect("the queue is open");
    assert!(
        matches!(&out.message, Message::Notification(n) if n.method == method),
        "expected {method}, got {out:?}"
    );
    out
}

/// `peer` receives `notifications/cancelled` for its request `id`.
async fn receive_cancel(peer: &Peer, id: i64) {
    let params = json!({"requestId": id});
    peer.receive(Message::notification(methods::CANCELLED, Some(params)))
        .await;
}

/// Nothing is queued to send: `why` says what should not have been.
fn assert_nothing_sent(rx: &mut mpsc::Receiver<Outbound>, why: &str) {
    if let Ok(out) = rx.try_recv() {
        panic!("{why}, but it sent {out:?}");
    }
}

fn params_of(out: &Outbound) -> Value {
    match &out.message {
        Message::Notification(n) => n.params.clone().unwrap_or(Value::Null),
        other => panic!("not a notification: {other:?}"),
    }
}

/// The request `out` carries.
fn request_of(out: Outbound) -> Request {
    match out.message {
        Message::Request(q) => q,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// A peer over [`Echo`] waiting for the answer to the standalone `question` it sent: the
/// peer, its outbound queue, the waiting task and the request as sent.
async fn asked_question() -> (
    Peer,
    mpsc::Receiver<Outbound>,
    tokio::task::JoinHandle<Result<Value, PeerError>>,
    Request,
) {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    let p = peer.clone();
    let waiting = tokio::spawn(async move { p.request("question", None, Route::Standalone).await });
    let q = request_of(rx.recv().await.unwrap());
    (peer, rx, waiting, q)
}

#[tokio::test]
async fn a_dropped_request_is_cancelled_with_its_id() {
    let (peer, mut rx, waiting, q) = asked_question().await;
    assert_eq!(peer.outstanding(), 1);
    waiting.abort();
    let cancel = next_notification(&mut rx, methods::CANCELLED).await;
    assert_eq!(cancel.route, Route::Standalone);
    assert_eq!(params_of(&cancel)["requestId"], q.id.to_value());
    assert_eq!(peer.outstanding(), 0);
}

#[tokio::test]
async fn initialize_is_never_cancelled() {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    let p = peer.clone();
    let waiting = tokio::spawn(async move {
        let options = RequestOptions::default().timeout(Some(Duration::from_millis(10)));
        p.request_with(methods::INITIALIZE, None, options).await
    });
    assert!(matches!(
        rx.recv().await.unwrap().message,
        Message::Request(_)
    ));
    assert_eq!(
        waiting.await.unwrap(),
        Err(PeerError::Timeout(Duration::from_millis(10)))
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_nothing_sent(&mut rx, "no notifications/cancelled for initialize");
}

/// Records the answers no request of the peer waited for.
#[derive(Default)]
struct Unmatched(Mutex<Vec<RequestId>>);

#[async_trait]
impl Handler for Unmatched {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        req: Request,
    ) -> Result<Value, ErrorObject> {
        Err(ErrorObject::method_not_found(req.method))
    }

    fn handle_unmatched_response(&self, id: RequestId, _outcome: Result<Value, ErrorObject>) {
        self.0.lock().push(id);
    }
}

#[tokio::test]
async fn a_timeout_fails_forgets_and_cancels_the_request_and_ignores_a_late_answer() {
    let handler = Arc::new(Unmatched::default());
    let (peer, mut rx) = Peer::new(Arc::clone(&handler) as Arc<dyn Handler>);
    let options =
        RequestOptions::new(Route::Request(9.into())).timeout(Some(Duration::from_millis(50)));
    let out = peer.request_with("slow", None, options).await;
    assert_eq!(out, Err(PeerError::Timeout(Duration::from_millis(50))));
    assert_eq!(peer.outstanding(), 0, "the pending entry is removed");
    let q = request_of(rx.recv().await.unwrap());
    let cancel = next_notification(&mut rx, methods::CANCELLED).await;
    assert_eq!(
        cancel.route,
        Route::Request(9.into()),
        "on the request's route"
    );
    assert_eq!(params_of(&cancel)["requestId"], q.id.to_value());
    // The answer comes after all: no request waits for it any more.
    peer.receive(Message::reply(q.id.clone(), Ok(json!("late"))))
        .await;
    assert_eq!(*handler.0.lock(), vec![q.id]);
    assert_eq!(peer.outstanding(), 0);
}

#[tokio::test]
async fn a_transport_failure_fails_the_request_it_names() {
    let (peer, mut rx, waiting, q) = asked_question().await;
    peer.fail(q.id, TransportError::too_large(Some(70), 64));
    let Err(PeerError::Transport(t)) = waiting.await.unwrap() else {
        panic!("expected a transport error")
    };
    assert!(t.is_too_large(), "{t:?}");
    assert_eq!((t.bytes, t.limit), (Some(70), Some(64)));
    // Not a cancellation: the transport failed it, nobody stopped waiting.
    tokio::task::yield_now().await;
    assert_nothing_sent(
        &mut rx,
        "no notifications/cancelled for a transport failure",
    );
}

/// The server side: a handler waiting for the answer to its own request (say an
/// elicitation) is cancelled by the client; the elicitation is cancelled in turn.
#[tokio::test]
async fn a_cancelled_handler_cancels_the_request_it_was_waiting_for() {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    peer.receive(Message::request(5.into(), "ask", None)).await;
    let asked = rx.recv().await.unwrap();
    assert_eq!(asked.route, Route::Request(5.into()));
    let q = request_of(asked);
    receive_cancel(&peer, 5).await;
    let cancel = next_notification(&mut rx, methods::CANCELLED).await;
    assert_eq!(cancel.route, Route::Request(5.into()));
    assert_eq!(params_of(&cancel)["requestId"], q.id.to_value());
    assert_eq!(peer.outstanding(), 0);
    tokio::task::yield_now().await;
    assert_nothing_sent(&mut rx, "no response to the cancelled request");
}

#[tokio::test]
async fn cancelled_requests_get_no_response() {
    let (peer, mut rx) = Peer::new(Arc::new(Echo));
    peer.receive(Message::request(7.into(), "hang", None)).await;
    tokio::task::yield_now().await;
    assert_eq!(peer.inflight(), 1);
    receive_cancel(&peer, 7).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(peer.inflight(), 0);
    peer.receive(Message::request(8.into(), "echo", Some(json!(1))))
        .await;
    let out = rx.recv().await.unwrap();
    assert_eq!(out.message, Message::reply(8.into(), Ok(json!(1))));
}

/// Answers with the id of the tokio task its handler ran in; `tasks/get` with `hang`
/// waits forever; `ping` panics.
struct WhereServed;

#[async_trait]
impl Handler for WhereServed {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        req: Request,
    ) -> Result<Value, ErrorObject> {
        if req.method == methods::PING {
            panic!("a bug in the handler");
        }
        if req.params.as_ref().is_some_and(|p| p.get("hang").is_some()) {
            std::future::pending::<()>().await;
        }
        Ok(json!(tokio::task::id().to_string()))
    }
}

/// Serve `req` with [`Peer::serve_read_here`] in a task of its own; that task's id, and
/// whether the response was queued by the time `serve_read_here` returned.
async fn served_here(
    peer: &Peer,
    rx: &mut mpsc::Receiver<Outbound>,
    req: Request,
) -> (String, Option<Outbound>) {
    let p = peer.clone();
    let task = tokio::spawn(async move {
        p.serve_read_here(req, RouteDelivery::Diverted).await;
        tokio::task::id().to_string()
    });
    let caller = task.await.unwrap();
    (caller, rx.try_recv().ok())
}

#[tokio::test]
async fn a_read_is_served_in_the_callers_task_and_answered_before_it_returns() {
    let (peer, mut rx) = Peer::new(Arc::new(WhereServed));
    let req = req(1.into(), methods::TASKS_GET, Some(json!({"taskId": "t"})));
    let (caller, out) = served_here(&peer, &mut rx, req).await;
    let out = out.expect("the response is queued when serve_read_here returns");
    assert_eq!(out.route, Route::Request(1.into()));
    assert_eq!(out.message, Message::reply(1.into(), Ok(json!(caller))));
}

#[tokio::test]
async fn anything_but_a_read_is_served_in_a_task_of_its_own() {
    let (peer, mut rx) = Peer::new(Arc::new(WhereServed));
    let req = req(1.into(), methods::TOOLS_CALL, Some(json!({"name": "x"})));
    let (caller, out) = served_here(&peer, &mut rx, req).await;
    let out = match out {
        Some(out) => out,
        None => rx.recv().await.unwrap(),
    };
    let Message::Response(r) = out.message else {
        panic!("expected a response, got {out:?}")
    };
    assert_ne!(r.result, json!(caller), "a write runs in a spawned task");
}

#[tokio::test]
async fn a_read_served_in_place_can_be_cancelled_and_the_peer_becomes_idle() {
    let (peer, mut rx) = Peer::new(Arc::new(WhereServed));
    let p = peer.clone();
    let req = req(7.into(), methods::TASKS_GET, Some(json!({"hang": true})));
    let serving =
        tokio::spawn(async move { p.serve_read_here(req, RouteDelivery::Diverted).await });
    tokio::task::yield_now().await; // the read starts and hangs
    let waiting = tokio::time::timeout(Duration::from_millis(50), peer.idle());
    assert!(waiting.await.is_err(), "not idle while the read hangs");
    receive_cancel(&peer, 7).await;
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("the cancelled read returns")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), peer.idle())
        .await
        .expect("idle once the read is cancelled");
    assert_nothing_sent(&mut rx, "a cancelled request gets no response");
}

#[tokio::test]
async fn a_handler_that_panics_is_answered_with_internal_error_and_the_peer_goes_on() {
    let (peer, mut rx) = Peer::new(Arc::new(WhereServed));
    // In place (a read) and in a task of its own (any other request).
    let ping = req(1.into(), methods::PING, None);
    let (_, out) = served_here(&peer, &mut rx, ping).await;
    let out = out.expect("answered in place");
    assert_eq!(code_of(out), mcp_tasks_proto::codes::INTERNAL_ERROR);
    peer.receive(Message::request(2.into(), methods::PING, None))
        .await;
    let out = rx.recv().await.unwrap();
    assert_eq!(code_of(out), mcp_tasks_proto::codes::INTERNAL_ERROR);
    let req = req(3.into(), methods::TASKS_GET, Some(json!({"taskId": "t"})));
    let (_, out) = served_here(&peer, &mut rx, req).await;
    assert!(matches!(out.map(|o| o.message), Some(Message::Response(_))));
}

#[tokio::test]
async fn a_read_whose_id_is_in_flight_is_refused() {
    let (peer, mut rx) = Peer::new(Arc::new(WhereServed));
    let p = peer.clone();
    let hang = req(5.into(), methods::TASKS_GET, Some(json!({"hang": true})));
    tokio::spawn(async move { p.serve_read_here(hang, RouteDelivery::Diverted).await });
    tokio::task::yield_now().await;
    let again = req(5.into(), methods::TASKS_GET, Some(json!({"taskId": "t"})));
    peer.serve_read_here(again, RouteDelivery::Diverted).await;
    let out = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code_of(out), mcp_tasks_proto::codes::INVALID_REQUEST);
}

/// A read served in place and dropped half-way (its POST went away) leaves its id free
/// and the peer idle, by either way of serving it in place.
#[tokio::test]
async fn a_read_dropped_half_way_frees_its_id() {
    let (peer, _rx) = Peer::new(Arc::new(WhereServed));
    let hang = || req(9.into(), methods::TASKS_GET, Some(json!({"hang": true})));
    let queued = peer.serve_read_here(hang(), RouteDelivery::Diverted);
    assert!(
        tokio::time::timeout(Duration::from_millis(20), queued)
            .await
            .is_err()
    );
    assert_eq!(peer.inflight(), 0, "serve_read_here dropped");
    let text = peer.serve_read_text(hang(), RouteDelivery::Diverted);
    assert!(
        tokio::time::timeout(Duration::from_millis(20), text)
            .await
            .is_err()
    );
    assert_eq!(peer.inflight(), 0, "serve_read_text dropped");
    tokio::time::timeout(Duration::from_secs(5), peer.idle())
        .await
        .expect("idle");
}

/// `serve_read_text` answers with the handler's text and queues nothing; an id in flight
/// is refused with -32600, a cancelled read gets no answer.
#[tokio::test]
async fn a_read_served_as_text_is_answered_not_queued() {
    let (peer, mut rx) = Peer::new(Arc::new(WhereServed));
    assert!(peer.reads_in_place(methods::TASKS_GET));
    assert!(!peer.reads_in_place(methods::TOOLS_CALL));
    let get = req(1.into(), methods::TASKS_GET, Some(json!({"taskId": "t"})));
    let p = peer.clone();
    // In a task: the handler answers with its task's id.
    let text = tokio::spawn(async move { p.serve_read_text(get, RouteDelivery::Diverted).await })
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&text.expect("answered").expect("a result")).unwrap();
    assert!(v.is_string(), "the handler's result: {v}");
    assert_nothing_sent(&mut rx, "answered as text, not queued");
    let p = peer.clone();
    let hang = req(2.into(), methods::TASKS_GET, Some(json!({"hang": true})));
    let hanging =
        tokio::spawn(async move { p.serve_read_text(hang, RouteDelivery::Diverted).await });
    tokio::task::yield_now().await;
    let again = req(2.into(), methods::TASKS_GET, Some(json!({"taskId": "t"})));
    let busy = peer.serve_read_text(again, RouteDelivery::Diverted).await;
    assert_eq!(
        busy.expect("answered").unwrap_err().code,
        mcp_tasks_proto::codes::INVALID_REQUEST
    );
    receive_cancel(&peer, 2).await;
    let cancelled = tokio::time::timeout(Duration::from_secs(5), hanging)
        .await
        .expect("the cancelled read returns")
        .unwrap();
    assert!(cancelled.is_none(), "a cancelled read has no answer");
    assert_eq!(peer.inflight(), 0);
}

fn req(id: RequestId, method: &str, params: Option<Value>) -> Request {
    Request {
        id,
        method: method.to_owned(),
        params,
    }
}

/// The code of the error response `out` carries.
fn code_of(out: Outbound) -> i64 {
    match out.message {
        Message::Error(e) => e.error.code,
        other => panic!("expected an error response, got {other:?}"),
    }
}

/// Records the ids of its `hang` requests whose handler was stopped (its future dropped,
/// as a cancelled request's is) after it saw the request cancelled.
#[derive(Default)]
struct SeesCancel(Arc<Mutex<Vec<RequestId>>>);

/// Pushes its id into the list when dropped, if its token was cancelled by then.
struct OnDrop(Arc<Mutex<Vec<RequestId>>>, RequestId, CancellationToken);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if self.2.is_cancelled() {
            self.0.lock().push(self.1.clone());
        }
    }
}

#[async_trait]
impl Handler for SeesCancel {
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        match req.method.as_str() {
            "hang" => {
                let _seen = OnDrop(Arc::clone(&self.0), cx.id.clone(), cx.cancel.clone());
                std::future::pending().await
            }
            "boom" => panic!("a bug in the handler"),
            _ => Ok(json!({"served": req.method})),
        }
    }
}

/// `serve_text` runs any request in a task of its own and returns its answer as text,
/// queueing nothing; the caller going away cancels it (its handler stopped as a cancelled
/// request's is, and the id free again); a panic is -32603, an id in flight -32600.
#[tokio::test]
async fn a_request_served_as_text_runs_apart_and_is_cancelled_with_its_caller() {
    let handler = Arc::new(SeesCancel::default());
    let (peer, mut rx) = Peer::new(handler.clone());
    let call = req(1.into(), methods::TOOLS_CALL, None);
    let text = peer.serve_text(call, RouteDelivery::Diverted).await;
    assert_eq!(text.unwrap().unwrap(), r#"{"served":"tools/call"}"#);
    assert_nothing_sent(&mut rx, "answered as text, not queued");
    let boom = peer
        .serve_text(req(2.into(), "boom", None), RouteDelivery::Diverted)
        .await;
    assert_eq!(
        boom.unwrap().unwrap_err().code,
        mcp_tasks_proto::codes::INTERNAL_ERROR
    );
    let p = peer.clone();
    let hanging = tokio::spawn(async move {
        p.serve_text(req(3.into(), "hang", None), RouteDelivery::Diverted)
            .await
    });
    tokio::task::yield_now().await;
    let busy = peer
        .serve_text(req(3.into(), "again", None), RouteDelivery::Diverted)
        .await;
    assert_eq!(
        busy.unwrap().unwrap_err().code,
        mcp_tasks_proto::codes::INVALID_REQUEST
    );
    hanging.abort(); // the POST goes away
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while handler.0.lock().is_empty() || peer.inflight() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the request was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(*handler.0.lock(), vec![RequestId::Number(3)]);
    tokio::time::timeout(Duration::from_secs(5), peer.idle())
        .await
        .expect("idle");
    assert_nothing_sent(&mut rx, "a cancelled request gets no response");
}
