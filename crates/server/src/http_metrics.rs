//! Where `serve_http` serves the server's metrics ([`MetricsServing`]), and the glue
//! between the transport's hooks and [`Metrics`].

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::audit::{Event, EventKind};
use mcp_tasks_core::metrics::{CONTENT_TYPE, Rejection};
use mcp_tasks_core::{Guard, Metrics};
use mcp_tasks_rpc::http::{HttpGauges, HttpObserver, MetricsRender, Refusal};

use crate::Server;

/// How long a scrape waits for the store to count the tasks by status.
pub const SCRAPE_STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where `GET /metrics` is served.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricsServing {
    /// Not at all (`--no-metrics`): 404.
    Off,
    /// On the endpoint's port. Without authentication, like the endpoint (so loopback
    /// only unless unauthenticated access is allowed); with it, only to the bearer token of
    /// `principal` (any other token: 403; none: 401). `None` with authentication on: to
    /// nobody.
    Endpoint {
        /// The principal that may read the metrics (`--metrics-principal`).
        principal: Option<String>,
    },
    /// On an address of its own, without authentication (`--metrics-listen`); loopback
    /// only unless unauthenticated access is allowed. Not on the endpoint's port.
    Listen(SocketAddr),
}

impl Default for MetricsServing {
    fn default() -> Self {
        MetricsServing::Endpoint { principal: None }
    }
}

/// Counts the transport's refusals, and audits refused credentials.
struct Observer(Metrics, Guard);

impl HttpObserver for Observer {
    fn auth_failed(&self, reason: &'static str) {
        self.1.record(
            Event::new(EventKind::AuthFailed)
                .outcome("refused")
                .with("reason", reason),
        );
    }

    fn refused(&self, why: Refusal) {
        self.0.rejected(match why {
            Refusal::Auth => Rejection::Auth,
            Refusal::Origin => Rejection::Origin,
            Refusal::BodyTooLarge => Rejection::BodyTooLarge,
            Refusal::Limit => Rejection::Limit,
            _ => Rejection::Other,
        });
    }
}

/// The transport's observer for `server`'s metrics.
pub(crate) fn observer(server: &Server) -> Arc<dyn HttpObserver> {
    Arc::new(Observer(
        server.state().metrics.clone(),
        server.state().guard.clone(),
    ))
}

/// Renders `server`'s metrics: the stored tasks counted at scrape time, the transport's
/// gauges from `gauges` (or, when `None`, from the scrape's argument).
pub(crate) fn render(
    server: &Server,
    gauges: Option<Arc<dyn Fn() -> HttpGauges + Send + Sync>>,
) -> MetricsRender {
    let metrics = server.state().metrics.clone();
    let store = server.engine().map(|e| Arc::clone(e.store()));
    Arc::new(move |given: HttpGauges| {
        let metrics = metrics.clone();
        let store = store.clone();
        let g = gauges.as_ref().map_or(given, |f| f());
        Box::pin(async move {
            metrics.set_http(g.sessions, g.sse_streams);
            metrics.render(store.as_deref(), SCRAPE_STORE_TIMEOUT).await
        })
    })
}

/// The content type of the metrics text.
pub(crate) const METRICS_CONTENT_TYPE: &str = CONTENT_TYPE;

/// Refuse a non-loopback metrics address unless unauthenticated access is allowed.
pub(crate) fn check_metrics_exposure(addr: SocketAddr, allow: bool) -> io::Result<()> {
    if !addr.ip().is_loopback() && !allow {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing to serve the metrics on the non-loopback address {addr} without \
                 authentication (allow unauthenticated access, or use --metrics-principal)"
            ),
        ));
    }
    Ok(())
}
