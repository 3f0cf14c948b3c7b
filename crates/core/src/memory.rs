//! The in-memory store: fast, and gone with the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::StoreError;
use crate::record::{NewTask, TaskRecord};
use crate::status::{TaskStatus, allowed_predecessors};
use crate::store::{ListScope, TaskStore, Transition, TransitionResult};
use crate::wake::WakeMap;

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, TaskRecord>,
    by_seq: BTreeMap<i64, String>,
    active: HashMap<Option<String>, u32>,
    next_seq: i64,
}

/// Tasks in process memory. Transitions are compare-and-swaps under one lock.
pub struct MemoryStore {
    inner: Mutex<Inner>,
    wake: WakeMap,
    key: [u8; 32],
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryStore")
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store with a fresh random cursor key.
    pub fn new() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the OS CSPRNG is available");
        Self {
            inner: Mutex::new(Inner::default()),
            wake: WakeMap::default(),
            key,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn is_active(s: TaskStatus) -> bool {
    !s.is_terminal()
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, t: NewTask, max_active: Option<u32>) -> Result<TaskRecord, StoreError> {
        let rec = {
            let mut g = self.lock();
            if g.tasks.contains_key(&t.task_id) {
                return Err(StoreError::Duplicate(t.task_id));
            }
            let count = g.active.get(&t.owner).copied().unwrap_or(0);
            if let Some(limit) = max_active
                && count >= limit
            {
                return Err(StoreError::LimitExceeded { limit });
            }
            g.next_seq += 1;
            let rec = t.into_record(g.next_seq);
            *g.active.entry(rec.owner.clone()).or_insert(0) += 1;
            g.by_seq.insert(rec.seq, rec.task_id.clone());
            g.tasks.insert(rec.task_id.clone(), rec.clone());
            rec
        };
        self.wake.notify(&rec.task_id);
        Ok(rec)
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock().tasks.get(task_id).cloned())
    }

    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        let result = {
            let mut g = self.lock();
            let Some(rec) = g.tasks.get_mut(&t.task_id) else {
                return Ok(TransitionResult::Missing);
            };
            if !allowed_predecessors(t.to).contains(&rec.status) {
                return Ok(TransitionResult::Rejected(rec.clone()));
            }
            let was_active = is_active(rec.status);
            rec.status = t.to;
            rec.status_message = t.status_message;
            rec.last_updated_at_ms = t.at_ms.max(rec.last_updated_at_ms);
            if t.to.is_terminal() {
                rec.outcome = t.outcome;
                rec.executor = None;
            }
            let rec = rec.clone();
            if was_active
                && !is_active(rec.status)
                && let Some(c) = g.active.get_mut(&rec.owner)
            {
                *c = c.saturating_sub(1);
            }
            rec
        };
        self.wake.notify(&t.task_id);
        Ok(TransitionResult::Applied(result))
    }

    async fn list(
        &self,
        scope: &ListScope,
        after_seq: Option<i64>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let g = self.lock();
        let start = after_seq.map_or(i64::MIN, |s| s.saturating_add(1));
        Ok(g.by_seq
            .range(start..)
            .filter_map(|(_, id)| g.tasks.get(id))
            .filter(|r| match scope {
                ListScope::All => true,
                ListScope::Owner(o) => r.owner.as_deref() == Some(o.as_str()),
            })
            .take(limit)
            .cloned()
            .collect())
    }

    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> = {
            let mut g = self.lock();
            let ids: Vec<String> = g
                .tasks
                .values()
                .filter(|r| r.is_expired(now_ms))
                .take(limit)
                .map(|r| r.task_id.clone())
                .collect();
            for id in &ids {
                if let Some(rec) = g.tasks.remove(id) {
                    g.by_seq.remove(&rec.seq);
                    if is_active(rec.status)
                        && let Some(c) = g.active.get_mut(&rec.owner)
                    {
                        *c = c.saturating_sub(1);
                    }
                }
            }
            ids
        };
        for id in &ids {
            self.wake.notify(id);
        }
        self.wake.prune();
        Ok(ids)
    }

    async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
        Ok(self.key)
    }

    async fn heartbeat(&self, _executor: &str, _lease_until_ms: i64) -> Result<(), StoreError> {
        // One process owns the memory: its executor is alive as long as the store is.
        Ok(())
    }

    async fn fail_orphans(
        &self,
        _now_ms: i64,
        _message: &str,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64> {
        self.wake.subscribe(task_id)
    }
}
