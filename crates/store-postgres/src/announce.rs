//! Telling the other replicas which tasks changed: after a change has committed, its task
//! ids go to one background task that sends them as `NOTIFY`s in batches, on a pooled
//! connection, outside the transaction of the change.
//!
//! Why not a trigger in the transaction of the change (schema versions 1 to 5 did that):
//! PostgreSQL serialises the commits of every transaction that notifies, flush to the
//! write-ahead log included, so at one `fsync` per commit a trigger capped task creation
//! at ~150/s on this machine (`docs/performance.md`, PostgreSQL). A transaction that only
//! notifies writes no data: its commit needs no flush, so the serialised part is short,
//! and one batch carries every change of the moment. The price is a lost wake-up when the
//! process dies between the commit and the batch; the listener's safety-net poll
//! ([`crate::PgOptions::fallback_poll`]) covers that, as it covers a listener that was
//! reconnecting.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use deadpool_postgres::Pool;
use mcp_tasks_core::StoreError;
use tokio::sync::mpsc;

use crate::db::{map_err, map_pool_err};

/// How many task ids wait to be announced at most; past it an id is dropped (its waiters
/// on other replicas then wake by the safety-net poll), with one warning per episode.
pub(crate) const QUEUE: usize = 8192;

/// The most ids one `NOTIFY` batch carries.
const BATCH: usize = 512;

const NOTIFY: &str = "SELECT pg_notify($1, id) FROM unnest($2::text[]) AS id";

/// The sending side, kept by the store.
pub(crate) struct Announcer {
    tx: mpsc::Sender<String>,
    /// Whether the queue has been full since the last warning: one warning per episode,
    /// not one per dropped id (a stalled database would otherwise flood the log).
    full: AtomicBool,
}

impl Announcer {
    /// Start the background task that announces on the channel `channel` (the store's
    /// schema) through `pool`; it ends when the announcer is dropped.
    pub(crate) fn start(pool: Pool, channel: String, target: String) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, channel, target, rx));
        Self {
            tx,
            full: AtomicBool::new(false),
        }
    }

    /// Announce that task `id` changed (its change has committed).
    pub(crate) fn changed(&self, id: &str) {
        match self.tx.try_send(id.to_owned()) {
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.full.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        queue = QUEUE,
                        "the change announcements are backed up; other replicas see the changes dropped meanwhile by their fallback poll"
                    );
                }
            }
            // A load first: the common case (never full) writes nothing shared.
            Ok(()) if self.full.load(Ordering::Relaxed) => {
                self.full.store(false, Ordering::Relaxed);
            }
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

async fn run(pool: Pool, channel: String, target: String, mut rx: mpsc::Receiver<String>) {
    while let Some(first) = rx.recv().await {
        let mut ids = BTreeSet::from([first]);
        while ids.len() < BATCH {
            match rx.try_recv() {
                Ok(id) => {
                    ids.insert(id);
                }
                Err(_) => break,
            }
        }
        let ids: Vec<String> = ids.into_iter().collect();
        if let Err(e) = send(&pool, &channel, &ids, &target).await {
            tracing::warn!(store = %target, error = %e, count = ids.len(),
                "could not announce task changes to other replicas; they see them by their fallback poll");
        }
    }
}

/// One batch; the error names host and database, never the password.
async fn send(pool: &Pool, channel: &str, ids: &[String], target: &str) -> Result<(), StoreError> {
    let c = pool.get().await.map_err(|e| map_pool_err(target, &e))?;
    let st = c
        .prepare_cached(NOTIFY)
        .await
        .map_err(|e| map_err(target, &e))?;
    c.execute(&st, &[&channel, &ids])
        .await
        .map(|_| ())
        .map_err(|e| map_err(target, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past [`QUEUE`] waiting ids, an announcement is dropped at once: a stalled database
    /// never blocks a write's caller nor grows the queue.
    #[test]
    fn a_full_queue_drops_announcements_without_blocking() {
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let announcer = Announcer {
            tx,
            full: AtomicBool::new(false),
        };
        for i in 0..QUEUE + 100 {
            announcer.changed(&format!("task-{i}"));
        }
        let mut n = 0;
        while let Ok(id) = rx.try_recv() {
            assert_eq!(id, format!("task-{n}"), "kept in order, the first ones");
            n += 1;
        }
        assert_eq!(n, QUEUE);
        assert!(announcer.full.load(Ordering::Relaxed));
        announcer.changed("after");
        assert!(!announcer.full.load(Ordering::Relaxed), "room again");
    }
}
