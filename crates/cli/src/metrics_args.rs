//! The metrics flags of `serve` over HTTP: `--no-metrics`, `--metrics-principal`,
//! `--metrics-listen`.

use std::net::SocketAddr;

use clap::Args;
use mcp_tasks_server::http::MetricsServing;

/// Where `GET /metrics` (Prometheus text) is served.
#[derive(Args, Debug, Default)]
pub(crate) struct MetricsArgs {
    /// Do not serve `GET /metrics`.
    #[arg(long, conflicts_with_all = ["metrics_principal", "metrics_listen"])]
    no_metrics: bool,
    /// With authentication on, the principal whose bearer token may read `/metrics` on the
    /// endpoint's port (others get 403, no token 401).
    #[arg(long, value_name = "NAME", conflicts_with = "metrics_listen")]
    metrics_principal: Option<String>,
    /// Serve `/metrics` on this address of its own, without authentication, and not on
    /// the endpoint's port (a loopback address unless --allow-unauthenticated).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
}

impl MetricsArgs {
    /// The [`MetricsServing`] the flags ask for.
    ///
    /// # Errors
    /// A non-loopback `--metrics-listen` without `--allow-unauthenticated`.
    pub(crate) fn serving(&self, allow_unauthenticated: bool) -> anyhow::Result<MetricsServing> {
        Ok(if self.no_metrics {
            MetricsServing::Off
        } else if let Some(at) = self.metrics_listen {
            if !at.ip().is_loopback() && !allow_unauthenticated {
                anyhow::bail!(
                    "--metrics-listen {at}: refusing to serve the metrics on a non-loopback \
                     address without authentication; give --allow-unauthenticated, or serve \
                     them on the endpoint's port with --metrics-principal"
                );
            }
            MetricsServing::Listen(at)
        } else {
            MetricsServing::Endpoint {
                principal: self.metrics_principal.clone(),
            }
        })
    }
}
