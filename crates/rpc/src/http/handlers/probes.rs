//! The probes beside the endpoint (`/healthz`, `/readyz`) and the OAuth protected
//! resource metadata, all served without authentication.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::checks::authenticate;
use super::response::{json_response, not_found, text_response};
use crate::http::state::Shared;

pub(super) const HEALTHZ: &str = "/healthz";

pub(super) const READYZ: &str = "/readyz";

/// Liveness: the process answers.
pub(super) async fn healthz() -> Response {
    text_response(StatusCode::OK, "ok\n".into())
}

/// Readiness: not shutting down, and [`crate::http::HttpConfig::readiness`] holds within
/// [`crate::http::HttpConfig::readiness_timeout`]; 503 with the reason otherwise.
///
/// The probe needs no token, so its body names no host, user or database: the cause of a
/// failed check ([`crate::http::NotReady::cause`]) is logged, and shown only to a request
/// that carries a valid bearer token.
pub(super) async fn readyz(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
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
pub(super) async fn resource_metadata(State(shared): State<Arc<Shared>>) -> Response {
    match &shared.config.oauth {
        Some(o) => json_response(StatusCode::OK, o.metadata().to_string()),
        None => not_found(State(shared)).await,
    }
}
