//! The rate-limit buckets every replica of the database shares ([`SharedBuckets`],
//! `mcp_tasks_core::buckets`): one row per bucket key (a limit and a requester), its
//! theoretical arrival time, updated by one function call (one round trip) under the
//! row's lock. Rows past their time are equivalent to a full bucket: each call deletes up
//! to 16 of them, so the table holds about the requesters active within a refill period.

use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::StoreError;
use mcp_tasks_core::buckets::{SharedBuckets, cell_ms};
use mcp_tasks_core::rate::Rate;

const SPEND: &str = "SELECT rate_spend($1, $2, $3, $4)";

/// The shared buckets of a [`crate::PgStore`], on its pool.
pub(crate) struct PgBuckets {
    pub(crate) db: crate::db::Db,
}

#[async_trait]
impl SharedBuckets for PgBuckets {
    async fn spend(
        &self,
        key: &str,
        rate: Rate,
        now_ms: i64,
    ) -> Result<Option<Duration>, StoreError> {
        let (emission, tolerance) = cell_ms(rate);
        let rows = self
            .db
            .query(SPEND, &[&key, &emission, &tolerance, &now_ms])
            .await?;
        let wait: f64 = rows.first().map_or(0.0, |r| r.get(0));
        Ok((wait > 0.0).then(|| Duration::from_secs_f64(wait / 1000.0)))
    }
}
