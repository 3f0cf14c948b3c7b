//! The `create` and `lookup-failures` limits on a store whose processes share their
//! buckets ([`crate::buckets`]).

use std::time::Duration;

use super::{Requester, TaskEngine};
use crate::rate::{Kind, Refused};

impl TaskEngine {
    /// A creation by `who`, past the limiter in memory: spent from the shared `create`
    /// bucket too (one round trip; only with the limit configured and a store that
    /// shares buckets). A store that fails admits it (the creation then meets the store
    /// itself).
    ///
    /// # Errors
    /// The refusal when the shared bucket is spent (nothing is created).
    pub(super) async fn admit_shared_create(
        &self,
        who: &Requester,
        method: &str,
    ) -> Result<(), Refused> {
        let (Some(buckets), Some(rate)) = (
            self.inner.store.buckets(),
            self.guard().limits().config().get(Kind::Create),
        ) else {
            return Ok(());
        };
        let key = format!("{}:{}", Kind::Create.name(), who.quota_key());
        match buckets.spend(&key, rate, self.now()).await {
            Ok(None) => Ok(()),
            Ok(Some(retry_after)) => Err(self.guard().refused(
                who,
                method,
                Refused {
                    kind: Kind::Create,
                    retry_after,
                },
            )),
            Err(e) => {
                tracing::warn!(error = %e, "the shared create limit could not be read; admitted");
                Ok(())
            }
        }
    }

    /// A lookup by `who` failed: spent from the shared `lookup-failures` bucket too, in
    /// the background; once it is spent, this process refuses `who`'s lookups until it
    /// refills (every other process does so at its next failure of `who`).
    pub(super) fn shared_lookup_failed(&self, who: &Requester) {
        let (Some(buckets), Some(rate)) = (
            self.inner.store.buckets(),
            self.guard().limits().config().get(Kind::LookupFailures),
        ) else {
            return;
        };
        let quota_key = who.quota_key();
        let key = format!("{}:{quota_key}", Kind::LookupFailures.name());
        let engine = self.clone();
        let now = self.now();
        tokio::spawn(async move {
            match buckets.spend(&key, rate, now).await {
                Ok(None) => {}
                Ok(Some(retry_after)) => engine
                    .guard()
                    .limits()
                    .block_lookups(&quota_key, retry_after.max(Duration::from_millis(1))),
                Err(e) => {
                    tracing::debug!(error = %e, "the shared lookup-failures limit could not be spent");
                }
            }
        });
    }
}
