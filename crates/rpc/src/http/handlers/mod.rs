//! The HTTP side: checks every request (origin, auth, protocol version, size), then POST,
//! GET and DELETE on the endpoint.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::{Extension, Router, routing};
use mcp_tasks_proto::codes;
use mcp_tasks_proto::logged::{capped, digest};

use super::auth::LastToken;
use super::metrics::METRICS_PATH;
use super::session::{Connect, resume};
use super::state::Shared;
use super::stream::{EventId, STANDALONE};
use super::ui::UI_PATH;

mod answer;
mod checks;
mod metrics;
mod modern;
mod post;
mod probes;
mod response;
mod ui;

use answer::sse_response;
use checks::{
    authenticate, authenticate_on, cors, find_session, foreign_host, legacy_version_check,
    origin_guard,
};
pub(crate) use post::ClientAddr;
use post::post;
use probes::{HEALTHZ, READYZ, healthz, readyz, resource_metadata};
use response::{
    EVENT_STREAM, LAST_EVENT_ID, accept, bad_request, empty, header_str, http_error,
    method_not_allowed, not_acceptable, not_found, unavailable,
};

/// The endpoint's routes and layers, outermost first:
///
/// 1. the `Origin` check (403 with a JSON-RPC error body for a foreign origin, on every
///    path and method, preflights included);
/// 2. CORS for the origins that passed it (`tower-http`: preflight answers, the
///    `Access-Control-*` headers on every response);
/// 3. axum routing: POST, GET and DELETE on the endpoint's path, behind the checks every
///    method shares (bearer token, `MCP-Protocol-Version`); 404 elsewhere and 405 for
///    other methods, both with JSON-RPC error bodies.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let path = shared.config.path.clone();
    let mut router = Router::new();
    if shared.config.probes && path != HEALTHZ && path != READYZ {
        router = router
            .route(HEALTHZ, routing::get(healthz))
            .route(READYZ, routing::get(readyz));
    }
    if shared.config.metrics.is_some() && path != METRICS_PATH {
        router = router.route(METRICS_PATH, routing::get(metrics::metrics));
    }
    if shared.config.ui.is_some() && !path.starts_with(UI_PATH) {
        router = router
            .route(UI_PATH, routing::get(ui::index))
            .route("/ui/", routing::get(ui::index))
            .route("/ui/{*rest}", routing::get(ui::under).post(ui::under));
    }
    if let Some(oauth) = &shared.config.oauth {
        for p in oauth.metadata_paths(&path) {
            if p != path {
                router = router.route(&p, routing::get(resource_metadata));
            }
        }
    }
    router
        .route(
            &path,
            routing::post(on_post)
                .get(get)
                .delete(delete)
                .route_layer(middleware::from_fn_with_state(Arc::clone(&shared), checked)),
        )
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
        .layer(cors())
        .layer(middleware::from_fn_with_state(
            Arc::clone(&shared),
            origin_guard,
        ))
        .with_state(shared)
}

/// Whether `req` is a POST on the endpoint without an `Origin` header: what every
/// non-browser client sends for every message. [`plain_post`] serves it as the router
/// would, without the router's layers (routing, two middleware services and the CORS
/// layer, each boxing the request's future: about a fifth of a `tasks/get`'s
/// instructions).
pub(crate) fn is_plain_post(shared: &Shared, req: &Request) -> bool {
    req.method() == Method::POST
        && req.uri().path() == shared.config.path
        && !req.headers().contains_key(header::ORIGIN)
}

/// A request [`is_plain_post`] accepted, answered as [`router`] answers it: the `Host`
/// check of [`origin_guard`] (it has no `Origin` to check), the bearer token of
/// [`checked`], [`post`], and the headers the CORS layer puts on every answer to a request
/// without `Origin` ([`PlainCors`]).
/// `last`: the static token last accepted on the request's connection (see
/// [`LastToken`]).
pub(crate) async fn plain_post(
    shared: Arc<Shared>,
    cors: Arc<PlainCors>,
    last: Arc<LastToken>,
    req: Request,
) -> Result<Response, std::convert::Infallible> {
    let mut r = plain_post_answer(&shared, &last, req).await;
    cors.apply(&mut r);
    Ok(r)
}

async fn plain_post_answer(shared: &Arc<Shared>, last: &LastToken, req: Request) -> Response {
    if let Some(r) = foreign_host(shared, req.headers()) {
        return r;
    }
    let principal = match authenticate_on(shared, req.headers(), Some(last)).await {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let (parts, body) = req.into_parts();
    post(shared, &parts, body, principal).await
}

/// The headers [`cors`] adds to the answer of a request that has no `Origin` (a `Vary`
/// appended, the others set), taken once from the layer itself so that the two paths
/// cannot drift apart.
pub(crate) struct PlainCors {
    vary: Vec<HeaderValue>,
    set: Vec<(HeaderName, HeaderValue)>,
}

impl PlainCors {
    /// What [`cors`] adds to an empty answer to a POST without `Origin`.
    pub(crate) fn new() -> Self {
        use futures::FutureExt;
        use tower::{Layer, ServiceExt};
        let inner = tower::service_fn(|_: Request| async {
            Ok::<_, std::convert::Infallible>(Response::new(Body::empty()))
        });
        let mut req = Request::new(Body::empty());
        *req.method_mut() = Method::POST;
        let answered = cors()
            .layer(inner)
            .oneshot(req)
            .now_or_never()
            .and_then(Result::ok);
        let mut vary = Vec::new();
        let mut set = Vec::new();
        if let Some(r) = answered {
            for (name, value) in r.headers() {
                if name == header::VARY {
                    vary.push(value.clone());
                } else {
                    set.push((name.clone(), value.clone()));
                }
            }
        }
        Self { vary, set }
    }

    fn apply(&self, r: &mut Response) {
        let h = r.headers_mut();
        for v in &self.vary {
            h.append(header::VARY, v.clone());
        }
        for (name, value) in &self.set {
            h.insert(name.clone(), value.clone());
        }
    }
}

/// Who sent the request (`None` without authentication); put in the request's extensions
/// by [`checked`].
#[derive(Debug, Clone)]
struct Principal(Option<String>);

/// The checks every method on the endpoint shares: the bearer token, then (for GET and
/// DELETE; a POST after its body is read) the protocol version header, see
/// [`legacy_version_check`].
async fn checked(State(shared): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    let principal = match authenticate(&shared, req.headers()).await {
        Ok(p) => p,
        Err(r) => return *r,
    };
    // A POST is checked once its body is read: a 2026-07-28 request names its version
    // in the body too, and gets the modern errors (handlers/modern.rs).
    if req.method() != Method::POST {
        if modern::header_revision(req.headers()).is_some() {
            return modern::no_get_or_delete(req.method());
        }
        if let Err(r) = legacy_version_check(&shared, req.headers()) {
            return *r;
        }
    }
    req.extensions_mut().insert(Principal(principal));
    next.run(req).await
}

async fn on_post(
    State(shared): State<Arc<Shared>>,
    Extension(Principal(principal)): Extension<Principal>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    post(&shared, &parts, body, principal).await
}

/// GET: the standalone stream, or with `Last-Event-ID` the resumption of the stream that
/// event belongs to.
///
/// Spec: "The server MAY use this header to replay messages that would have been sent
/// after the last event ID, on the stream that was disconnected, and to resume the stream
/// from that point." and "The server MUST NOT replay messages that would have been
/// delivered on a different stream."
async fn get(
    State(shared): State<Arc<Shared>>,
    Extension(Principal(principal)): Extension<Principal>,
    headers: HeaderMap,
) -> Response {
    let principal = principal.as_ref();
    if !accept(&headers).sse {
        return not_acceptable(EVENT_STREAM);
    }
    let session = match find_session(&shared, &headers, principal).await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if shared.shutdown.is_cancelled() {
        return unavailable(None, "the server is shutting down", "5");
    }
    let (stream, from, tag) = match header_str(&headers, LAST_EVENT_ID) {
        // The event after `seq`, saturating: for the largest sequence number it used to
        // wrap to 0 and replay the whole stream (or panic in a debug build). A cursor past
        // the newest event is answered as "nothing after it" (`HttpSession::connect`).
        Some(v) => match EventId::parse(v) {
            Some(e) => (
                session.stream_of_event(e.stream),
                Some(e.seq.saturating_add(1)),
                e.tag,
            ),
            None => return bad_request(format!("Bad Request: malformed Last-Event-ID `{v}`")),
        },
        None => (STANDALONE, None, None),
    };
    let connected = session.connect(stream, from, shared.shutdown.clone());
    // A tasks/result stream of another replica: asked again here, read from the start
    // (its response comes from the store).
    if matches!(connected, Connect::Unknown)
        && shared.config.sessions.is_some()
        && let Some(tag) = tag
        && let Some(req) = resume::request_of(&tag)
    {
        return match session
            .reissue(req, tag.into(), shared.shutdown.clone())
            .await
        {
            Some(Connect::Reader(reader)) => sse_response(reader),
            _ => bad_request(format!(
                "Bad Request: the stream of Last-Event-ID `{}` is unknown or expired, and its request is in flight here",
                header_str(&headers, LAST_EVENT_ID).unwrap_or("")
            )),
        };
    }
    match connected {
        Connect::Reader(reader) => {
            if stream == STANDALONE {
                session.announce_listener();
            }
            sse_response(reader)
        }
        // The stream ended (its response went out) and nothing follows the given event:
        // there is nothing to resume. (An empty SSE response here makes some clients
        // reconnect without `Last-Event-ID`, as if to the standalone stream.)
        Connect::Complete => empty(StatusCode::NO_CONTENT),
        // With sessions shared between replicas, the stream may live on another replica
        // (or have expired): resumability is optional ("The server MAY use this header to
        // replay messages ..."), so this replica answers with the session's standalone
        // stream, from what no connection took yet, and says so in an SSE comment: nothing
        // of the named stream is replayed (never a silent skip). Nothing of a task is lost:
        // its state is in the store, readable with tasks/get and tasks/result on any
        // replica, and the messages other replicas hold for the session's GET come here
        // (ADR 0006).
        Connect::Unknown if shared.config.sessions.is_some() => {
            let named = header_str(&headers, LAST_EVENT_ID).unwrap_or("");
            tracing::info!(session = %digest(&session.id), last_event_id = %capped(named), "resumption of a stream this replica does not hold: standalone stream, nothing replayed");
            match session.connect(STANDALONE, None, shared.shutdown.clone()) {
                Connect::Reader(reader) => {
                    session.announce_listener();
                    sse_response(reader.with_comment(&format!(
                        "{NOTHING_REPLAYED}: Last-Event-ID {named} names a stream this replica does not hold; this is the session's standalone stream"
                    )))
                }
                _ => bad_request(format!(
                    "Bad Request: the stream of Last-Event-ID `{named}` is unknown or expired"
                )),
            }
        }
        Connect::Unknown => bad_request(format!(
            "Bad Request: the stream of Last-Event-ID `{}` is unknown or expired",
            header_str(&headers, LAST_EVENT_ID).unwrap_or("")
        )),
    }
}

/// The words that open the SSE comment of a resumption that replays nothing.
const NOTHING_REPLAYED: &str = "nothing replayed";

/// DELETE: end the session. What it started (tasks) goes on. With shared sessions, it
/// ends on every replica (the directory tells the others).
async fn delete(
    State(shared): State<Arc<Shared>>,
    Extension(Principal(principal)): Extension<Principal>,
    headers: HeaderMap,
) -> Response {
    let session = match find_session(&shared, &headers, principal.as_ref()).await {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if let Some(dir) = &shared.config.sessions
        && let Err(e) = dir.remove(&session.id).await
    {
        tracing::warn!(session = %digest(&session.id), error = %e, "could not end a shared session");
        return http_error(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::INTERNAL_ERROR,
            "Service Unavailable: the session store does not answer; the session was not ended",
        );
    }
    shared.remove(&session.id);
    session.end();
    tracing::info!(session = %digest(&session.id), "session ended by the client");
    empty(StatusCode::NO_CONTENT)
}
