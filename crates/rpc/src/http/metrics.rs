//! Hooks for the server's metrics: the `GET /metrics` endpoint ([`MetricsEndpoint`]) and
//! the events only the transport sees ([`HttpObserver`]: requests refused before any
//! handler). The transport does not know the metrics library; the server renders the
//! text and counts the events.

use std::sync::Arc;

use futures::future::BoxFuture;

/// Why a request was refused before it reached a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No or an unknown bearer token (401).
    Auth,
    /// A foreign `Origin` (403).
    Origin,
    /// A body over [`super::HttpConfig::max_body_bytes`] (413).
    BodyTooLarge,
    /// A session or connection bound (503).
    Limit,
    /// Anything else (a body sent too slowly, ...).
    Other,
}

/// Told of the events only the transport sees.
pub trait HttpObserver: Send + Sync + 'static {
    /// A request was refused before any handler.
    fn refused(&self, why: Refusal);

    /// A request was refused for its credentials (also counted by [`Self::refused`]):
    /// `reason` is `missing_token`, `invalid_token`, `keys_unavailable` or
    /// `insufficient_scope`; never the token.
    fn auth_failed(&self, reason: &'static str) {
        let _ = reason;
    }
}

/// The transport's gauges at scrape time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpGauges {
    /// Live sessions.
    pub sessions: usize,
    /// Open SSE connections (each reads one stream of a session).
    pub sse_streams: usize,
}

/// Renders the metrics text, given the transport's gauges.
pub type MetricsRender = Arc<dyn Fn(HttpGauges) -> BoxFuture<'static, String> + Send + Sync>;

/// `GET /metrics` beside the endpoint.
#[derive(Clone)]
pub struct MetricsEndpoint {
    /// Makes the body.
    pub render: MetricsRender,
    /// Its content type.
    pub content_type: &'static str,
    /// With authentication on: the principal whose bearer token may read it (any other
    /// gets 403; no or an unknown token 401). `None`: nobody may (serve the metrics on a
    /// listener of their own instead, see [`serve_metrics`]).
    pub principal: Option<String>,
}

mcp_tasks_proto::debug_non_exhaustive!(MetricsEndpoint, |s| {
    content_type: s.content_type,
    principal: s.principal
});

/// The path of the metrics endpoint.
pub const METRICS_PATH: &str = "/metrics";

/// Serve only `GET /metrics`, without authentication, on `listener` until `shutdown`
/// completes (`--metrics-listen`: an address only the monitoring system reaches). A
/// request whose `Host` `hosts` refuses (for this listener's address) gets 403.
///
/// # Errors
/// An I/O error of the listener.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    render: MetricsRender,
    content_type: &'static str,
    hosts: super::auth::HostPolicy,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    let listen = listener.local_addr()?;
    let app = axum::Router::new().route(
        METRICS_PATH,
        axum::routing::get(move |headers: HeaderMap| {
            let render = Arc::clone(&render);
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let refused = host.is_some_and(|h| !hosts.allows(&h, Some(listen)));
            async move {
                if refused {
                    return (
                        StatusCode::FORBIDDEN,
                        "Forbidden: this host name is not allowed (DNS rebinding protection)\n",
                    )
                        .into_response();
                }
                let body = render(HttpGauges::default()).await;
                let mut r = body.into_response();
                r.headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                r
            }
        }),
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
