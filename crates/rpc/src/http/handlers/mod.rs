//! The HTTP side: checks every request (origin, auth, protocol version, size), then POST,
//! GET and DELETE on the endpoint.

use std::sync::Arc;

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::{Extension, Router, routing};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_tasks_proto::logged::{capped, digest};
use mcp_tasks_proto::{ErrorObject, RequestId, codes};
use serde_json::json;
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::auth::LastToken;
use super::session::{Connect, HttpSession, resume};
use super::stream::{EventId, STANDALONE};
use super::{AuthFailure, Shared};

mod metrics;
mod modern;
mod post;
mod ui;

use post::{post, sse_response};

const MCP_SESSION_ID: &str = "mcp-session-id";
const MCP_PROTOCOL_VERSION: &str = "mcp-protocol-version";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

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
    if shared.config.metrics.is_some() && path != super::METRICS_PATH {
        router = router.route(super::METRICS_PATH, routing::get(metrics::metrics));
    }
    if shared.config.ui.is_some() && !path.starts_with(super::UI_PATH) {
        router = router
            .route(super::UI_PATH, routing::get(ui::index))
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

/// 503 with `Retry-After: retry_after` (seconds): the JSON-RPC error
/// [`codes::INTERNAL_ERROR`] with `message`, answering `id` when known.
fn unavailable(
    id: Option<&RequestId>,
    message: impl Into<String>,
    retry_after: &'static str,
) -> Response {
    let err = ErrorObject::new(codes::INTERNAL_ERROR, message);
    let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, error_body(id, &err));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(retry_after));
    r
}

/// 503 when the shared session store does not answer: worth a retry in a second.
fn store_unavailable() -> Response {
    unavailable(
        None,
        "Service Unavailable: the session store does not answer; try again",
        "1",
    )
}

/// 404 for what this server does not serve (the metrics, the dashboard when off).
fn not_served() -> Response {
    http_error(StatusCode::NOT_FOUND, codes::INVALID_REQUEST, "Not found")
}

fn bad_request(message: impl Into<String>) -> Response {
    http_error(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
}

fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// Spec (transports, security warning): "Servers MUST validate the `Origin` header on all
/// incoming connections to prevent DNS rebinding attacks. If the `Origin` header is
/// present and invalid, servers MUST respond with HTTP 403 Forbidden."
///
/// A browser omits `Origin` on a same-origin GET, which is what a page served under a
/// rebinding name makes: its `Host` names it, and is checked too
/// ([`super::HostPolicy`]), on every path (`/mcp`, `/ui`, `/metrics`, the probes).
async fn origin_guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    if let Some(r) = foreign_host(&shared, req.headers()) {
        return r;
    }
    if let Some(o) = header_str(req.headers(), header::ORIGIN)
        && !shared.config.origins.allows(o)
    {
        let o = capped(o);
        tracing::debug!(origin = %o, "request from a foreign origin refused");
        shared.refused(super::Refusal::Origin);
        return http_error(
            StatusCode::FORBIDDEN,
            codes::INVALID_REQUEST,
            format!("Forbidden: origin `{o}` is not allowed"),
        );
    }
    next.run(req).await
}

/// The 403 of a request whose `Host` names a host that is not allowed (see
/// [`origin_guard`]); `None` when it is allowed (or absent).
fn foreign_host(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let h = header_str(headers, header::HOST)?;
    if shared.config.hosts.allows(h, shared.listen.get().copied()) {
        return None;
    }
    let h = capped(h);
    tracing::debug!(host = %h, "request for a foreign host name refused");
    shared.refused(super::Refusal::Origin);
    Some(http_error(
        StatusCode::FORBIDDEN,
        codes::INVALID_REQUEST,
        format!(
            "Forbidden: host `{h}` is not allowed (DNS rebinding protection): reach this \
             server by an IP address or localhost, or allow the name (--allowed-host)"
        ),
    ))
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

/// CORS for browser clients. Every origin that reaches this layer passed
/// [`origin_guard`], so the request's own origin is mirrored.
fn cors() -> CorsLayer {
    const SESSION: HeaderName = HeaderName::from_static(MCP_SESSION_ID);
    const VERSION: HeaderName = HeaderName::from_static(MCP_PROTOCOL_VERSION);
    CorsLayer::new()
        .allow_origin(AllowOrigin::mirror_request())
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers([
            header::CONTENT_TYPE,
            header::ACCEPT,
            header::AUTHORIZATION,
            SESSION,
            VERSION,
            HeaderName::from_static(LAST_EVENT_ID),
        ])
        .expose_headers([SESSION, VERSION, header::WWW_AUTHENTICATE])
        .max_age(Duration::from_secs(86_400))
}

const HEALTHZ: &str = "/healthz";
const READYZ: &str = "/readyz";

fn text_response(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Liveness: the process answers.
async fn healthz() -> Response {
    text_response(StatusCode::OK, "ok\n".into())
}

/// Readiness: not shutting down, and [`super::HttpConfig::readiness`] holds within
/// [`super::HttpConfig::readiness_timeout`]; 503 with the reason otherwise.
///
/// The probe needs no token, so its body names no host, user or database: the cause of a
/// failed check ([`super::NotReady::cause`]) is logged, and shown only to a request that
/// carries a valid bearer token.
async fn readyz(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let not_ready = |reason: String| {
        text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        )
    };
    if shared.shutdown.is_cancelled() || shared.draining.load(std::sync::atomic::Ordering::Relaxed)
    {
        return not_ready("the server is shutting down".into());
    }
    if let Some(check) = &shared.config.readiness {
        let limit = shared.config.readiness_timeout;
        match tokio::time::timeout(limit, check()).await {
            Ok(Ok(())) => {}
            Ok(Err(why)) => {
                tracing::warn!(cause = %why.cause, "not ready: {}", why.summary);
                let authenticated = headers.contains_key(header::AUTHORIZATION)
                    && matches!(authenticate(&shared, &headers).await, Ok(Some(_)));
                return not_ready(if authenticated {
                    format!("{}: {}", why.summary, why.cause)
                } else {
                    why.summary
                });
            }
            Err(_) => {
                return not_ready(format!(
                    "the readiness check did not answer within {} ms",
                    limit.as_millis()
                ));
            }
        }
    }
    text_response(StatusCode::OK, "ready\n".into())
}

/// RFC 9728 protected resource metadata, served without authentication.
///
/// MCP: "MCP servers **MUST** implement OAuth 2.0 Protected Resource Metadata
/// ([RFC9728])" at "the path of the server's MCP endpoint [...] or at the root".
async fn resource_metadata(State(shared): State<Arc<Shared>>) -> Response {
    match &shared.config.oauth {
        Some(o) => json_response(StatusCode::OK, o.metadata().to_string()),
        None => not_found(State(shared)).await,
    }
}

async fn not_found(State(shared): State<Arc<Shared>>) -> Response {
    http_error(
        StatusCode::NOT_FOUND,
        codes::INVALID_REQUEST,
        format!("Not found: the MCP endpoint is {}", shared.config.path),
    )
}

async fn method_not_allowed() -> Response {
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
        if modern::header_is_modern(req.headers()) {
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

/// The principal of the request: `Ok(None)` without authentication; a 401 with
/// `WWW-Authenticate: Bearer` when a token is missing or not valid (a static token, or an
/// OAuth access token: see [`super::OAuth::authenticate`]); 403 `insufficient_scope`.
/// A refusal is counted ([`super::Refusal::Auth`]).
///
/// MCP: "Invalid or expired tokens **MUST** receive a HTTP 401 response."
async fn authenticate(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<Option<String>, Box<Response>> {
    authenticate_on(shared, headers, None).await
}

/// [`authenticate`] on a connection whose last accepted static token is `last`: the same
/// token again is known without its digest; a static token accepted is remembered there.
async fn authenticate_on(
    shared: &Shared,
    headers: &HeaderMap,
    last: Option<&LastToken>,
) -> Result<Option<String>, Box<Response>> {
    let tokens = &shared.config.tokens;
    let oauth = shared.config.oauth.as_deref();
    if tokens.is_empty() && oauth.is_none() {
        return Ok(None);
    }
    let presented = header_str(headers, header::AUTHORIZATION).and_then(|v| {
        let (scheme, token) = v.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    let failure = match presented {
        None => AuthFailure::Missing,
        Some(t) if let Some(p) = last.and_then(|l| l.principal_of(t)) => return Ok(Some(p)),
        Some(t) => match (tokens.authenticate(t), oauth) {
            (Some(p), _) => {
                if let Some(l) = last {
                    l.remember(t, p);
                }
                return Ok(Some(p.to_owned()));
            }
            (None, Some(o)) => match o.authenticate(t).await {
                Ok(p) => return Ok(Some(p)),
                Err(f) => f,
            },
            (None, None) => AuthFailure::Invalid("the bearer token is not valid".into()),
        },
    };
    shared.refused(super::Refusal::Auth);
    shared.auth_failed(match &failure {
        AuthFailure::Missing => "missing_token",
        AuthFailure::Invalid(_) => "invalid_token",
        AuthFailure::Unavailable(_) => "keys_unavailable",
        AuthFailure::InsufficientScope => "insufficient_scope",
    });
    let (status, message) = match &failure {
        AuthFailure::Missing => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: send `Authorization: Bearer <token>`".to_owned(),
        ),
        AuthFailure::Invalid(why) => {
            tracing::debug!(reason = %why, "bearer token refused");
            (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}"))
        }
        AuthFailure::Unavailable(why) => {
            // The failed fetch itself is a warning, once per refetch interval.
            tracing::debug!(reason = %why, "a token could not be checked");
            (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}"))
        }
        AuthFailure::InsufficientScope => (
            StatusCode::FORBIDDEN,
            "Forbidden: the token lacks the scope this server requires".to_owned(),
        ),
    };
    let challenge = match (oauth, &failure) {
        (Some(o), _) => o.challenge(&failure),
        (None, AuthFailure::Missing) => "Bearer realm=\"mcp\"".to_owned(),
        (None, _) => "Bearer realm=\"mcp\", error=\"invalid_token\"".to_owned(),
    };
    let mut r = http_error(status, codes::INVALID_REQUEST, message);
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    Err(Box::new(r))
}

/// The `MCP-Protocol-Version` header of a 2025-11-25 (or older) message.
///
/// Spec: "If the server receives a request with an invalid or unsupported
/// MCP-Protocol-Version, it MUST respond with 400 Bad Request." Without the header the
/// session's negotiated version (or 2025-03-26) applies; the handler knows it.
fn legacy_version_check(shared: &Shared, headers: &HeaderMap) -> Result<(), Box<Response>> {
    if let Some(v) = headers.get(MCP_PROTOCOL_VERSION) {
        let ok = v.to_str().is_ok_and(|v| {
            shared
                .config
                .protocol_versions
                .iter()
                .any(|s| s == v.trim())
        });
        if !ok {
            return Err(Box::new(bad_request(format!(
                "Bad Request: unsupported MCP-Protocol-Version {v:?} (supported: {})",
                shared.config.protocol_versions.join(", ")
            ))));
        }
    }
    Ok(())
}

/// The session a request names, if it is live and belongs to the same principal.
///
/// Spec: "Servers that require a session ID SHOULD respond to requests without an
/// `MCP-Session-Id` header (other than initialization) with HTTP 400 Bad Request." and
/// after a session ends, "it MUST respond to requests containing that session ID with
/// HTTP 404 Not Found." Another principal's session looks exactly like an unknown one.
///
/// With shared sessions ([`super::HttpConfig::sessions`]) a session this process does not
/// hold is looked up in the directory (one round trip, once per session and process): a
/// session another replica started is served here alike. The directory failing is 503.
async fn find_session(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    principal: Option<&String>,
) -> Result<Arc<HttpSession>, Box<Response>> {
    let Some(id) = header_str(headers, MCP_SESSION_ID) else {
        return Err(Box::new(bad_request(
            "Bad Request: the Mcp-Session-Id header is required (send initialize first)",
        )));
    };
    let id = id.trim();
    let found = match shared.session(id) {
        Some(s) => Some(s),
        None => match shared.load_shared(id, principal).await {
            Ok(s) => s,
            Err(super::LoadError::Directory(e)) => {
                tracing::warn!(error = %e, "the shared sessions could not be read");
                return Err(Box::new(store_unavailable()));
            }
            Err(super::LoadError::Refused(why)) => {
                shared.refused(super::Refusal::Limit);
                return Err(Box::new(post::session_refused(None, &why)));
            }
        },
    };
    match found {
        Some(s) if s.principal.as_ref() == principal => {
            s.touch();
            // Any request naming the session shows the client has its id: initialization
            // completed (see `HttpConfig::session_init_idle`).
            s.set_initialized();
            shared.touch_shared(&s);
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
        shared.refused(super::Refusal::BodyTooLarge);
        return Err(Box::new(too_large()));
    }
    // A client that sends its body slower than this holds a connection and a task for
    // nothing (slowloris): 408, and the connection closes.
    let limit = shared.config.body_read_timeout;
    let Ok(read) = tokio::time::timeout(limit, Limited::new(body, max).collect()).await else {
        shared.refused(super::Refusal::Other);
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
        Ok(c) => {
            // Within the byte limit, a body of many small objects could still take a
            // hundred times its size to parse: refused before it is parsed.
            let bytes = c.to_bytes();
            if let Err(e) = mcp_tasks_proto::budget::check_parse_cost(
                &bytes,
                mcp_tasks_proto::budget::MAX_PARSE_COST,
            ) {
                shared.refused(super::Refusal::BodyTooLarge);
                return Err(Box::new(http_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    e.code,
                    format!("Payload too large: {}", e.message),
                )));
            }
            Ok(bytes)
        }
        Err(e) if e.is::<LengthLimitError>() => {
            shared.refused(super::Refusal::BodyTooLarge);
            Err(Box::new(too_large()))
        }
        Err(e) => Err(Box::new(bad_request(format!(
            "Bad Request: could not read the body: {e}"
        )))),
    }
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
