//! Change wake-ups per task id.
//!
//! A waiter subscribes *before* reading the store, then awaits a change: no wake-up can be
//! lost between the read and the wait, and nothing polls. Stores call [`WakeMap::notify`]
//! after every committed change of a task (and cross-process stores on remote changes).

use parking_lot::Mutex;
use std::collections::HashMap;

use tokio::sync::watch;

/// Per-task change signals, created on first subscription.
#[derive(Debug, Default)]
pub struct WakeMap {
    senders: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl WakeMap {
    /// A receiver that sees every change of `task_id` made after this call.
    pub fn subscribe(&self, task_id: &str) -> watch::Receiver<u64> {
        let mut map = self.senders.lock();
        map.entry(task_id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Wake every subscriber of `task_id`.
    pub fn notify(&self, task_id: &str) {
        let mut map = self.senders.lock();
        if let Some(tx) = map.get(task_id) {
            if tx.receiver_count() == 0 {
                map.remove(task_id);
            } else {
                tx.send_modify(|v| *v = v.wrapping_add(1));
            }
        }
    }

    /// Wake every subscriber of every task (used when a remote change cannot be located).
    pub fn notify_all(&self) {
        let mut map = self.senders.lock();
        map.retain(|_, tx| tx.receiver_count() > 0);
        for tx in map.values() {
            tx.send_modify(|v| *v = v.wrapping_add(1));
        }
    }

    /// Drop signals nobody listens to any more.
    pub fn prune(&self) {
        let mut map = self.senders.lock();
        map.retain(|_, tx| tx.receiver_count() > 0);
    }

    /// Ids with at least one subscriber.
    pub fn watched(&self) -> Vec<String> {
        let map = self.senders.lock();
        map.iter()
            .filter(|(_, tx)| tx.receiver_count() > 0)
            .map(|(k, _)| k.clone())
            .collect()
    }
}
