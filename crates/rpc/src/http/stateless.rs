//! Serving one 2026-07-28 ("modern") request without a session: its handler is called
//! directly, on a [`Peer`] kept per authenticated principal.
//!
//! A modern request needs nothing from the requests before it. Spec (basic,
//! "Statelessness"): "Servers MUST NOT rely on prior requests over the same connection to
//! establish context (e.g., capabilities, protocol version, client identity). Every
//! request supplies this metadata in its `_meta` field." So no `HttpSession` (pending
//! map, streams, router) is made for it: the handler's [`Handler::handle_request`] runs in
//! a task of its own and its result is the answer.
//!
//! The handler (and the [`Peer`] a [`RequestContext`] names) of an authenticated
//! principal is made once by the [`SessionFactory`] and shared by that principal's modern
//! requests, for up to [`MAX_CACHED_PRINCIPALS`] principals (beyond that, and without
//! authentication, one is made per request, as before). Nothing a handler sends on that
//! peer is delivered: a modern request is answered with one JSON object, and the
//! peer's outgoing queue has no reader (sending fails as on a closed connection; the
//! modern handlers never send requests to the client, and their notifications were
//! never delivered to a stateless client either).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use futures::FutureExt;
use mcp_tasks_proto::jsonrpc::response_json;
use mcp_tasks_proto::modern::RequestMeta;
use mcp_tasks_proto::{ErrorObject, Message, Request};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::peer::{is_read, panicked};

use super::config::SessionFactory;
use crate::peer::{CancelOnDrop, Peer, RequestContext, RouteDelivery};

/// How many authenticated principals keep a modern handler between requests. Past it,
/// a principal's modern requests each get a handler of their own (slower, never wrong).
pub(crate) const MAX_CACHED_PRINCIPALS: usize = 1024;

/// The peers that serve modern requests, one per authenticated principal.
pub(crate) struct Peers {
    cap: usize,
    by_principal: Mutex<HashMap<String, Peer>>,
}

impl Peers {
    /// At most `cap` principals kept.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            by_principal: Mutex::new(HashMap::new()),
        }
    }

    /// The peer serving `principal`'s modern requests: the cached one of an authenticated
    /// principal (made on its first request while there is room), else a fresh one (for
    /// an anonymous request, made for its `client` address:
    /// [`SessionFactory::create_stateless`]).
    pub(crate) fn get(
        &self,
        factory: &dyn SessionFactory,
        principal: Option<&str>,
        client: Option<IpAddr>,
    ) -> Peer {
        let Some(p) = principal else {
            return fresh(factory, None, client);
        };
        if let Some(peer) = self.by_principal.lock().get(p) {
            return peer.clone();
        }
        let peer = fresh(factory, Some(p), None);
        let mut map = self.by_principal.lock();
        if let Some(cached) = map.get(p) {
            return cached.clone();
        }
        if map.len() < self.cap {
            map.insert(p.to_owned(), peer.clone());
        }
        peer
    }

    /// How many principals have a cached peer.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_principal.lock().len()
    }
}

/// A peer for `principal` from `client` with a handler from `factory`; its outgoing
/// queue has no reader.
fn fresh(factory: &dyn SessionFactory, principal: Option<&str>, client: Option<IpAddr>) -> Peer {
    let (peer, outbound) = Peer::new(factory.create_stateless(principal, client));
    drop(outbound);
    peer
}

/// Serve `req` with `peer`'s handler and answer it: `Ok` the response as JSON text (the
/// handler's serialized result, [`Handler::handle_request_text`]: no `Value` tree is
/// built for it here), `Err` the error response. `meta` is the request's `_meta` as the
/// transport checked it, handed to the handler in [`RequestContext::request_meta`] so that
/// it is not parsed again.
///
/// A request that may change something runs in a task of its own, so that a request
/// whose POST goes away (its client closed the connection) is cancelled through
/// [`RequestContext::cancel`] and its handler still runs its cancellation path (it is not
/// simply dropped). A read ([`is_read`]) has no cancellation path: it runs in the
/// request's own task, and is dropped with its POST. A handler that panics is answered
/// with -32603 (Internal error); the connection and the server go on. Spec (basic):
/// "-32603 Internal error: Internal JSON-RPC error."
pub(crate) async fn serve(
    peer: Peer,
    req: Request,
    meta: Option<Arc<RequestMeta>>,
) -> Result<String, Message> {
    let id = req.id.clone();
    let cancel = CancellationToken::new();
    let read = is_read(&req.method);
    let mut guard = CancelOnDrop((!read).then(|| cancel.clone()));
    let cx = RequestContext {
        peer: peer.clone(),
        id: id.clone(),
        cancel,
        delivery: RouteDelivery::Diverted,
        request_meta: meta,
        stream_of: None,
    };
    let handler = Arc::clone(peer.handler());
    let out = if read {
        let work = std::panic::AssertUnwindSafe(handler.handle_request_text(cx, req));
        match work.catch_unwind().await {
            Ok(out) => out,
            Err(panic) => Err(panicked(panic.as_ref())),
        }
    } else {
        let work = tokio::spawn(async move { handler.handle_request_text(cx, req).await });
        match work.await {
            Ok(out) => out,
            Err(e) if e.is_panic() => Err(panicked(e.into_panic().as_ref())),
            Err(e) => Err(ErrorObject::internal(format!(
                "the request's handler stopped: {e}"
            ))),
        }
    };
    guard.0 = None;
    match out {
        Ok(result) => Ok(response_json(&id, &result)),
        Err(e) => Err(Message::reply(id, Err(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::Handler;
    use mcp_tasks_proto::RequestId;
    use serde_json::{Value, json};
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Echo;

    #[async_trait::async_trait]
    impl Handler for Echo {
        async fn handle_request(
            &self,
            _cx: RequestContext,
            req: Request,
        ) -> Result<Value, ErrorObject> {
            if req.method == "panic" || req.params.is_some_and(|p| p.get("panic").is_some()) {
                panic!("boom");
            }
            Ok(json!({"method": req.method}))
        }
    }

    /// Counts the handlers it makes.
    #[derive(Clone, Default)]
    struct Counting(Arc<AtomicUsize>);

    impl SessionFactory for Counting {
        fn create(&self, _principal: Option<&str>) -> Arc<dyn Handler> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Arc::new(Echo)
        }
    }

    fn request(method: &str) -> Request {
        Request {
            id: RequestId::Number(7),
            method: method.to_owned(),
            params: None,
        }
    }

    /// One handler per authenticated principal, up to the bound; past it and without
    /// authentication, one per request.
    #[test]
    fn a_principal_keeps_its_handler_up_to_the_bound() {
        let made = Counting::default();
        let peers = Peers::new(2);
        for _ in 0..3 {
            peers.get(&made, Some("alice"), None);
            peers.get(&made, Some("bob"), None);
        }
        assert_eq!(made.0.load(Ordering::SeqCst), 2);
        assert_eq!(peers.len(), 2);
        // Past the bound: not cached, made each time.
        for _ in 0..3 {
            peers.get(&made, Some("carol"), None);
        }
        assert_eq!(made.0.load(Ordering::SeqCst), 5);
        assert_eq!(peers.len(), 2);
        // Without authentication: never cached.
        for _ in 0..2 {
            peers.get(&made, None, None);
        }
        assert_eq!(made.0.load(Ordering::SeqCst), 7);
        assert_eq!(peers.len(), 2);
    }

    #[tokio::test]
    async fn a_panicking_handler_is_answered_with_an_internal_error() {
        let made = Counting::default();
        let peers = Peers::new(4);
        let peer = peers.get(&made, Some("alice"), None);
        let Err(Message::Error(e)) = serve(peer.clone(), request("panic"), None).await else {
            panic!("a panic must answer with an error");
        };
        assert_eq!(e.error.code, -32603);
        assert_eq!(e.id, Some(RequestId::Number(7)));
        // The same peer goes on serving.
        let Ok(text) = serve(peer, request("ping"), None).await else {
            panic!("expected a response");
        };
        let Ok(Message::Response(r)) = Message::parse(text.as_bytes()) else {
            panic!("expected a response, not {text}");
        };
        assert_eq!(r.id, RequestId::Number(7));
        assert_eq!(r.result, json!({"method": "ping"}));
    }

    /// A read (served in the request's own task, not a spawned one) that panics is answered
    /// with -32603 as well, and the peer goes on serving.
    #[tokio::test]
    async fn a_panicking_read_is_answered_with_an_internal_error() {
        let made = Counting::default();
        let peer = Peers::new(4).get(&made, Some("alice"), None);
        assert!(is_read("tasks/get"));
        let panicking = Request {
            params: Some(json!({"panic": true})),
            ..request("tasks/get")
        };
        let Err(Message::Error(e)) = serve(peer.clone(), panicking, None).await else {
            panic!("a panic must answer with an error");
        };
        assert_eq!(e.error.code, -32603);
        let Ok(text) = serve(peer, request("tasks/get"), None).await else {
            panic!("expected a response");
        };
        assert!(
            text.contains(r#""result":{"method":"tasks/get"}"#),
            "{text}"
        );
    }

    /// A modern POST whose handler panics: 200 with -32603 for it, and the server answers
    /// the next request (with the same cached handler) as usual.
    #[tokio::test]
    async fn a_panic_in_a_modern_requests_handler_answers_32603_and_the_server_goes_on() {
        use axum::body::Body;
        use http_body_util::BodyExt;
        use tower::ServiceExt;

        let made = Counting::default();
        let mut config = super::super::HttpConfig::default();
        config.tokens.insert("t", "alice");
        let server = super::super::HttpServer::new(config, made.clone());
        let post = |method: &str| {
            let body = json!({
                "jsonrpc": "2.0", "id": 1, "method": method,
                "params": {"name": "x", "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                }},
            });
            axum::http::Request::post("/mcp")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("authorization", "Bearer t")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method)
                .header("mcp-name", "x")
                .body(Body::from(body.to_string()))
                .unwrap()
        };
        for (method, code) in [
            ("panic", Some(-32603)),
            ("tools/call", None),
            ("panic", Some(-32603)),
        ] {
            let r = server.router().oneshot(post(method)).await.unwrap();
            assert_eq!(r.status(), axum::http::StatusCode::OK, "{method}");
            let bytes = r.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            match code {
                Some(code) => assert_eq!(v["error"]["code"], code, "{v}"),
                None => assert_eq!(v["result"], json!({"method": "tools/call"}), "{v}"),
            }
        }
        // One handler for alice's three requests.
        assert_eq!(made.0.load(Ordering::SeqCst), 1);
    }
}
