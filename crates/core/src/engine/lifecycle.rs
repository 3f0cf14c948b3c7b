//! Start-up and background work: the executor lease, orphaned tasks, the expiry sweep,
//! and stopping local work.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcp_tasks_proto::{ErrorObject, RequestId};

use super::{EndedBy, ORPHAN_MESSAGE, Requester, TaskEngine, failed_transition};
use crate::audit::{Event, EventKind};
use crate::error::EngineError;
use crate::store::{AdoptQuery, OrphanSweep, Transition, TransitionResult};

impl TaskEngine {
    /// Adopt and resume the orphaned tasks the [`Resumer`](super::Resumer) can go on with; the others are
    /// left to [`TaskStore::fail_orphans`](crate::store::TaskStore::fail_orphans).
    pub(super) async fn resume_orphans(&self, now: i64) {
        let Some(resumer) = self.inner.resumer.get() else {
            return;
        };
        let orphans = match self.inner.store.orphans(now, 1000).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "could not list orphaned tasks");
                return;
            }
        };
        for rec in orphans {
            let Some(resumed) = resumer.resume(&rec).await else {
                continue;
            };
            match self
                .inner
                .store
                .adopt(AdoptQuery {
                    task_id: rec.task.task_id.clone(),
                    executor: self.inner.instance.clone(),
                    now_ms: now,
                })
                .await
            {
                Ok(Some(rec)) => {
                    tracing::info!(task_id = %rec.task.task_id, "task resumed after its executor stopped");
                    let owner = Requester {
                        principal: rec.task.owner.clone(),
                        ..Requester::default()
                    };
                    self.launch(
                        rec.task.task_id,
                        owner,
                        resumed.origin,
                        resumed.classify,
                        resumed.runner,
                    );
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(task_id = %rec.task.task_id, error = %e, "could not adopt a task")
                }
            }
        }
    }

    /// Take the executor lease and fail the tasks of executors that died, before the first
    /// task is accepted (so that no other process mistakes this one's new tasks for
    /// orphans, and a restart reports its predecessor's unfinished tasks at once when their
    /// lease has run out).
    ///
    /// # Errors
    /// A store failure.
    pub async fn start(&self) -> Result<(), EngineError> {
        let now = self.now();
        let until =
            now.saturating_add(i64::try_from(self.inner.policy.lease_ms).unwrap_or(i64::MAX));
        self.inner
            .store
            .heartbeat(&self.inner.instance, until)
            .await?;
        self.resume_orphans(now).await;
        for r in self
            .inner
            .store
            .fail_orphans(OrphanSweep::new(now, ORPHAN_MESSAGE))
            .await?
        {
            self.metrics().task_changed(&r);
            self.audit_finished(&r, EndedBy::Orphan);
            tracing::warn!(task_id = %r.task.task_id, "task failed: its executor stopped before it finished");
        }
        Ok(())
    }

    /// Start the background work: one sweeper for expired tasks, lease renewal, and the
    /// failing of tasks whose executor died. Stops on [`Self::shutdown`].
    ///
    /// The lease is renewed every third of it, however long the expiry sweep's interval:
    /// the loop wakes at the shorter of the two (the private `wake_every`), so that a lease shorter
    /// than the sweep interval (`--executor-lease 1s` beside the 1 s sweep) never lapses
    /// between renewals, which would let another process fail this one's live tasks. Each
    /// renewal is followed by the orphan sweep: tasks of other processes (replicas on one
    /// database) whose lease has run out are resumed or failed, while this process runs.
    pub fn start_background(&self) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        let shutdown = self.inner.shutdown.clone();
        let sweep_ms = self.inner.policy.sweep_interval_ms.max(10);
        let lease = self.inner.policy.lease_ms;
        let tick = wake_every(sweep_ms, lease);
        tokio::spawn(async move {
            let mut last_beat = i64::MIN;
            let sweep_every = Duration::from_millis(sweep_ms);
            let mut last_sweep: Option<tokio::time::Instant> = None;
            loop {
                let Some(engine) = Weak::upgrade(&weak).map(|inner| TaskEngine { inner }) else {
                    return;
                };
                let now = engine.now();
                if now.saturating_sub(last_beat) >= i64::try_from(lease / 3).unwrap_or(i64::MAX) {
                    let until = now.saturating_add(i64::try_from(lease).unwrap_or(i64::MAX));
                    match engine
                        .inner
                        .store
                        .heartbeat(&engine.inner.instance, until)
                        .await
                    {
                        Ok(()) => last_beat = now,
                        Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
                    }
                    engine.resume_orphans(now).await;
                    match engine
                        .inner
                        .store
                        .fail_orphans(OrphanSweep::new(now, ORPHAN_MESSAGE))
                        .await
                    {
                        Ok(recs) => {
                            for r in recs {
                                engine.metrics().task_changed(&r);
                                engine.audit_finished(&r, EndedBy::Orphan);
                                tracing::warn!(task_id = %r.task.task_id, "task failed: its executor stopped before it finished");
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "orphan sweep failed"),
                    }
                }
                if last_sweep.is_none_or(|t| t.elapsed() >= sweep_every) {
                    last_sweep = Some(tokio::time::Instant::now());
                    engine.sweep_expired().await;
                }
                drop(engine);
                tokio::select! {
                    () = tokio::time::sleep(tick) => {}
                    () = shutdown.cancelled() => return,
                }
            }
        })
    }

    /// Delete expired tasks now; cancel the work of those still running.
    ///
    /// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and
    /// its results, regardless of the task status."
    pub async fn sweep_expired(&self) -> usize {
        let mut total = 0;
        loop {
            match self.inner.store.delete_expired(self.now(), 1000).await {
                Ok(ids) => {
                    total += ids.len();
                    for id in &ids {
                        self.guard().record(
                            Event::new(EventKind::Expired)
                                .task(id)
                                .outcome("deleted")
                                .with("by", "expiry"),
                        );
                        self.metrics().task_expired(id);
                        self.stop_local(id);
                    }
                    if ids.len() < 1000 {
                        return total;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "expiry sweep failed");
                    return total;
                }
            }
        }
    }

    /// Stop the local execution of a task (cancel its work, drop its pending requests).
    pub(super) fn stop_local(&self, task_id: &str) {
        let task = self.inner.running.lock().remove(task_id);
        if let Some(task) = task {
            task.cancel.cancel();
            let ids: Vec<RequestId> = task.input.lock().queue.drain(..).map(|p| p.id).collect();
            let mut answers = self.inner.answers.lock();
            for id in ids {
                answers.remove(&id);
            }
            task.input_changed.notify_waiters();
        }
    }

    /// Fail every task this process still runs with `message` (graceful shutdown after the
    /// grace period) and stop their work.
    pub async fn fail_running(&self, message: &str) {
        let ids: Vec<String> = self.inner.running.lock().keys().cloned().collect();
        for id in ids {
            let err = ErrorObject::internal(message.to_owned());
            // The status message is the plain sentence; the stored error carries the code.
            let t = Transition {
                status_message: Some(message.to_owned()),
                ..failed_transition(&id, &err, self.now())
            };
            if let Ok(TransitionResult::Applied(rec)) = self.inner.store.transition(t).await {
                self.audit_finished(&rec, EndedBy::Shutdown);
                self.announce(&rec).await;
            }
            self.stop_local(&id);
        }
    }
}

/// How often the background loop wakes: at the shorter of the sweep interval and a third
/// of the lease (the renewal period), at least every 10 ms.
fn wake_every(sweep_ms: u64, lease_ms: u64) -> Duration {
    Duration::from_millis(sweep_ms.min(lease_ms / 3).max(10))
}

#[cfg(test)]
mod tests {
    use super::wake_every;
    use std::time::Duration;

    #[test]
    fn the_loop_wakes_in_time_to_renew_a_lease_shorter_than_the_sweep_interval() {
        // The defaults: a 1 s sweep, a 15 s lease renewed every 5 s.
        assert_eq!(wake_every(1000, 15_000), Duration::from_secs(1));
        // A 1 s lease beside the 1 s sweep: renewed every third of a second.
        assert_eq!(wake_every(1000, 1000), Duration::from_millis(333));
        // The smallest lease the CLI takes (100 ms), and a floor for nonsense.
        assert_eq!(wake_every(1000, 100), Duration::from_millis(33));
        assert_eq!(wake_every(1000, 0), Duration::from_millis(10));
    }
}
