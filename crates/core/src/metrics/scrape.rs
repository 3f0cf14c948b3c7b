//! Scraping [`Metrics`]: the stored tasks by status, read from the store when
//! `GET /metrics` asks, and the encoding of every metric.

use std::time::Duration;

use super::{Metrics, STATUSES, StatusLabel};
use crate::store::TaskStore;

impl Metrics {
    /// Read the stored tasks by status from `store` (within `timeout`; on failure the
    /// gauge keeps its last values and `mcp_tasks_store_errors_total{op="count"}` counts
    /// it), then encode every metric in the OpenMetrics text format
    /// ([`CONTENT_TYPE`](super::CONTENT_TYPE)).
    pub async fn render(&self, store: Option<&dyn TaskStore>, timeout: Duration) -> String {
        if let Some(store) = store {
            match tokio::time::timeout(timeout, store.count_by_status()).await {
                Ok(Ok(counts)) => {
                    for s in STATUSES {
                        let n = counts.iter().find(|(k, _)| *k == s).map_or(0, |(_, n)| *n);
                        self.inner
                            .tasks
                            .get_or_create(&StatusLabel { status: s.as_str() })
                            .set(i64::try_from(n).unwrap_or(i64::MAX));
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "metrics: could not count the stored tasks");
                    self.store_error("count");
                }
                Err(_) => {
                    tracing::warn!("metrics: counting the stored tasks timed out");
                    self.store_error("count");
                }
            }
        }
        let mut out = String::new();
        if let Err(e) =
            prometheus_client::encoding::text::encode(&mut out, &self.inner.registry.read())
        {
            tracing::warn!(error = %e, "metrics: encoding failed");
        }
        out
    }
}
