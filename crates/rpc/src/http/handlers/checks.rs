//! The checks a request passes before a method's handler: its `Origin` and `Host`, CORS,
//! its credentials, its protocol version header, its body's size, and the session it
//! names.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use mcp_tasks_proto::codes;
use mcp_tasks_proto::logged::capped;
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::response::{
    LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, bad_request, header_str, http_error,
    session_refused, store_unavailable,
};
use crate::http::auth::LastToken;
use crate::http::metrics::Refusal;
use crate::http::oauth::AuthFailure;
use crate::http::session::HttpSession;
use crate::http::session::shared::LoadError;
use crate::http::state::Shared;

/// Spec (transports, security warning): "Servers MUST validate the `Origin` header on all
/// incoming connections to prevent DNS rebinding attacks. If the `Origin` header is
/// present and invalid, servers MUST respond with HTTP 403 Forbidden."
///
/// A browser omits `Origin` on a same-origin GET, which is what a page served under a
/// rebinding name makes: its `Host` names it, and is checked too
/// ([`crate::http::HostPolicy`]), on every path (`/mcp`, `/ui`, `/metrics`, the probes).
pub(super) async fn origin_guard(
    State(shared): State<Arc<Shared>>,
    req: Request,
    next: Next,
) -> Response {
    if let Some(r) = foreign_host(&shared, req.headers()) {
        return r;
    }
    if let Some(o) = header_str(req.headers(), header::ORIGIN)
        && !shared.config.origins.allows(o)
    {
        let o = capped(o);
        tracing::debug!(origin = %o, "request from a foreign origin refused");
        shared.refused(Refusal::Origin);
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
pub(super) fn foreign_host(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let h = header_str(headers, header::HOST)?;
    if shared.config.hosts.allows(h, shared.listen.get().copied()) {
        return None;
    }
    let h = capped(h);
    tracing::debug!(host = %h, "request for a foreign host name refused");
    shared.refused(Refusal::Origin);
    Some(http_error(
        StatusCode::FORBIDDEN,
        codes::INVALID_REQUEST,
        format!(
            "Forbidden: host `{h}` is not allowed (DNS rebinding protection): reach this \
             server by an IP address or localhost, or allow the name (--allowed-host)"
        ),
    ))
}

/// CORS for browser clients. Every origin that reaches this layer passed
/// [`origin_guard`], so the request's own origin is mirrored.
pub(super) fn cors() -> CorsLayer {
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

/// The principal of the request: `Ok(None)` without authentication; a 401 with
/// `WWW-Authenticate: Bearer` when a token is missing or not valid (a static token, or an
/// OAuth access token: see [`crate::http::OAuth::authenticate`]); 403
/// `insufficient_scope`.
/// A refusal is counted ([`Refusal::Auth`]).
///
/// MCP: "Invalid or expired tokens **MUST** receive a HTTP 401 response."
pub(super) async fn authenticate(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<Option<String>, Box<Response>> {
    authenticate_on(shared, headers, None).await
}

/// [`authenticate`] on a connection whose last accepted static token is `last`: the same
/// token again is known without its digest; a static token accepted is remembered there.
pub(super) async fn authenticate_on(
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
            // Boxed: the OAuth check (a key fetch) is a large future, and every POST's
            // future kept room for it (see `post::post`).
            (None, Some(o)) => {
                let check = Box::pin(o.authenticate(t));
                match check.await {
                    Ok(p) => return Ok(Some(p)),
                    Err(f) => f,
                }
            }
            (None, None) => AuthFailure::Invalid("the bearer token is not valid".into()),
        },
    };
    shared.refused(Refusal::Auth);
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
pub(super) fn legacy_version_check(
    shared: &Shared,
    headers: &HeaderMap,
) -> Result<(), Box<Response>> {
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
/// With shared sessions ([`crate::http::HttpConfig::sessions`]) a session this process
/// does not hold is looked up in the directory (one round trip, once per session and
/// process): a session another replica started is served here alike. The directory
/// failing is 503.
pub(super) async fn find_session(
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
        None => {
            // Boxed: a session of another replica is rare, and its load is a large future
            // (see `post::post`).
            let load = Box::pin(shared.load_shared(id, principal));
            match load.await {
                Ok(s) => s,
                Err(LoadError::Directory(e)) => {
                    tracing::warn!(error = %e, "the shared sessions could not be read");
                    return Err(Box::new(store_unavailable()));
                }
                Err(LoadError::Refused(why)) => {
                    shared.refused(Refusal::Limit);
                    return Err(Box::new(session_refused(None, &why)));
                }
            }
        }
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

pub(super) async fn read_body(
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
        shared.refused(Refusal::BodyTooLarge);
        return Err(Box::new(too_large()));
    }
    // A client that sends its body slower than this holds a connection and a task for
    // nothing (slowloris): 408, and the connection closes.
    let limit = shared.config.body_read_timeout;
    let Ok(read) = tokio::time::timeout(limit, Limited::new(body, max).collect()).await else {
        shared.refused(Refusal::Other);
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
                shared.refused(Refusal::BodyTooLarge);
                return Err(Box::new(http_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    e.code,
                    format!("Payload too large: {}", e.message),
                )));
            }
            Ok(bytes)
        }
        Err(e) if e.is::<LengthLimitError>() => {
            shared.refused(Refusal::BodyTooLarge);
            Err(Box::new(too_large()))
        }
        Err(e) => Err(Box::new(bad_request(format!(
            "Bad Request: could not read the body: {e}"
        )))),
    }
}
