//! Rate-limit buckets shared by every process of one store (replicas on one PostgreSQL
//! database), so that N replicas behind a balancer give a requester its allowance once,
//! not N times.
//!
//! Two limits are shared: `create` (checked before a task is created: one more round
//! trip per creation, only when the limit is configured) and `lookup-failures` (spent
//! after a lookup failed, in the background: failures cost a store read already). The
//! limiters in memory stay in front of them (a replica alone never admits more than
//! before). `requests` and `poll` stay per process: they are checked on every request and
//! every `tasks/get`, where a round trip would cost every client; with N replicas a
//! requester gets at most N times those allowances.
//!
//! Spec (security): "receivers SHOULD implement rate limiting on task operations to
//! prevent denial-of-service and enumeration attacks."

use std::time::Duration;

use async_trait::async_trait;

use crate::StoreError;
use crate::rate::Rate;

/// Buckets a store keeps for every process that uses it (see the [module](self)
/// documentation). A generic cell rate algorithm per key: each admission pushes the
/// bucket's theoretical arrival time one emission interval (`period / count`) on; one is
/// refused while that time is more than `burst - 1` intervals ahead of now.
#[async_trait]
pub trait SharedBuckets: Send + Sync + 'static {
    /// Spend one from the bucket `key` of `rate` at `now_ms` (milliseconds since the
    /// epoch): `None` when admitted, else how long until one would be (nothing spent).
    async fn spend(
        &self,
        key: &str,
        rate: Rate,
        now_ms: i64,
    ) -> Result<Option<Duration>, StoreError>;
}

/// The emission interval and the tolerance of `rate`, in milliseconds.
pub fn cell_ms(rate: Rate) -> (f64, f64) {
    let emission = rate.period.as_secs_f64() * 1000.0 / f64::from(rate.count.get());
    (emission, emission * f64::from(rate.burst.get() - 1))
}
