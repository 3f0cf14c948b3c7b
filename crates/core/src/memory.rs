//! The in-memory store: fast, and gone with the process.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, VecDeque};

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::StoreError;
use crate::history::{HistoryEntry, push_bounded};
use crate::record::{NewTask, TaskRecord};
use crate::status::{TaskStatus, allowed_predecessors};
use crate::store::{
    Limits, ListOrder, ListQuery, ListScope, OrphanSweep, TaskStore, Transition, TransitionResult,
    within_limits,
};
use crate::wake::WakeMap;

/// What the tasks of one quota key hold.
#[derive(Default, Clone, Copy)]
struct Usage {
    active: u64,
    tasks: u64,
    bytes: u64,
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, TaskRecord>,
    by_seq: BTreeMap<i64, String>,
    usage: HashMap<String, Usage>,
    total_bytes: u64,
    next_seq: i64,
    /// Each task's status history (see [`TaskStore::history`]).
    history: HashMap<String, VecDeque<HistoryEntry>>,
}

impl Inner {
    fn usage(&self, key: &str) -> Usage {
        self.usage.get(key).copied().unwrap_or_default()
    }

    /// Record `rec`'s current status in its history (created, or its status changed).
    fn record_history(&mut self, rec: &TaskRecord) {
        let entries = self.history.entry(rec.task.task_id.clone()).or_default();
        push_bounded(entries, HistoryEntry::of(rec));
    }

    /// Count `rec` out of its key's usage, and drop its history (deleted).
    fn forget(&mut self, rec: &TaskRecord) {
        self.history.remove(&rec.task.task_id);
        let bytes = rec.stored_bytes();
        self.total_bytes = self.total_bytes.saturating_sub(bytes);
        if let Some(u) = self.usage.get_mut(&rec.task.quota_key) {
            u.tasks = u.tasks.saturating_sub(1);
            u.bytes = u.bytes.saturating_sub(bytes);
            if is_active(rec.status) {
                u.active = u.active.saturating_sub(1);
            }
            if u.tasks == 0 {
                self.usage.remove(&rec.task.quota_key);
            }
        }
    }
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

mcp_tasks_proto::default_is_new!(MemoryStore);

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
}

fn is_active(s: TaskStatus) -> bool {
    !s.is_terminal()
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, t: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        let rec = {
            let mut g = self.inner.lock();
            if g.tasks.contains_key(&t.task_id) {
                return Err(StoreError::Duplicate(t.task_id));
            }
            let u = g.usage(&t.quota_key);
            let adding = t.stored_bytes();
            limits.check_create(u.active, u.tasks, u.bytes, g.total_bytes, adding)?;
            g.next_seq += 1;
            let rec = t.into_record(g.next_seq);
            let u = g.usage.entry(rec.task.quota_key.clone()).or_default();
            u.active += 1;
            u.tasks += 1;
            u.bytes = u.bytes.saturating_add(adding);
            g.total_bytes = g.total_bytes.saturating_add(adding);
            g.by_seq.insert(rec.seq, rec.task.task_id.clone());
            g.tasks.insert(rec.task.task_id.clone(), rec.clone());
            g.record_history(&rec);
            rec
        };
        self.wake.notify(&rec.task.task_id);
        Ok(rec)
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.inner.lock().tasks.get(task_id).cloned())
    }

    async fn get_summary(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self
            .inner
            .lock()
            .tasks
            .get(task_id)
            .map(TaskRecord::summary))
    }

    async fn get_without_request(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let inner = self.inner.lock();
        Ok(inner.tasks.get(task_id).map(|r| TaskRecord {
            outcome: r.outcome.clone(),
            ..r.summary()
        }))
    }

    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
        let task_id = t.task_id.clone();
        let result = {
            let mut g = self.inner.lock();
            let g = &mut *g;
            let Some(rec) = g.tasks.get_mut(&task_id) else {
                return Ok(TransitionResult::Missing);
            };
            if !allowed_predecessors(t.to).contains(&rec.status) {
                return Ok(TransitionResult::Rejected(rec.clone()));
            }
            let usage = g.usage.entry(rec.task.quota_key.clone()).or_default();
            let t = if t.to.is_terminal() {
                within_limits(t, |adding| {
                    limits.check_bytes(usage.bytes, g.total_bytes, adding)
                })
            } else {
                t
            };
            let was_active = is_active(rec.status);
            let changed = rec.status != t.to || rec.task.status_message != t.status_message;
            rec.status = t.to;
            rec.task.status_message = t.status_message;
            rec.last_updated_at_ms = t.at_ms.max(rec.last_updated_at_ms);
            if t.to.is_terminal() {
                let before = rec.stored_bytes();
                rec.outcome = t.outcome;
                rec.task.executor = None;
                let added = rec.stored_bytes().saturating_sub(before);
                usage.bytes = usage.bytes.saturating_add(added);
                g.total_bytes = g.total_bytes.saturating_add(added);
            }
            if was_active && !is_active(rec.status) {
                usage.active = usage.active.saturating_sub(1);
            }
            let rec = rec.clone();
            if changed {
                g.record_history(&rec);
            }
            rec
        };
        self.wake.notify(&task_id);
        Ok(TransitionResult::Applied(result))
    }

    /// One pass over the map under its lock, copying nothing: the default pages through
    /// `list`, which clones every record (requests and results included) at each scrape of
    /// `/metrics` and held the lock long enough to cost creates 12% at one scrape a second.
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.transition_within(t, &Limits::NONE).await
    }

    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        let g = self.inner.lock();
        let mut counts: Vec<(TaskStatus, u64)> = Vec::new();
        for rec in g.tasks.values() {
            match counts.iter_mut().find(|(s, _)| *s == rec.status) {
                Some((_, n)) => *n += 1,
                None => counts.push((rec.status, 1)),
            }
        }
        Ok(counts)
    }

    async fn history(&self, task_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        Ok(self
            .inner
            .lock()
            .history
            .get(task_id)
            .map(|h| h.iter().cloned().collect())
            .unwrap_or_default())
    }

    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let g = self.inner.lock();
        let seqs: Box<dyn Iterator<Item = (&i64, &String)>> = match q.order {
            ListOrder::OldestFirst => {
                let start = q.after_seq.map_or(i64::MIN, |s| s.saturating_add(1));
                Box::new(g.by_seq.range(start..))
            }
            ListOrder::NewestFirst => Box::new(g.by_seq.range(..q.before_or_max()).rev()),
        };
        Ok(seqs
            .filter_map(|(_, id)| g.tasks.get(id))
            .filter(|r| match &q.scope {
                ListScope::All => true,
                ListScope::Owner(o) => r.task.owner.as_deref() == Some(o.as_str()),
            })
            .take(q.limit)
            .cloned()
            .collect())
    }

    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        let ids: Vec<String> = {
            let mut g = self.inner.lock();
            let ids: Vec<String> = g
                .tasks
                .values()
                .filter(|r| r.is_expired(now_ms))
                .take(limit)
                .map(|r| r.task.task_id.clone())
                .collect();
            for id in &ids {
                if let Some(rec) = g.tasks.remove(id) {
                    g.by_seq.remove(&rec.seq);
                    g.forget(&rec);
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

    async fn fail_orphans(&self, _s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }

    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64> {
        self.wake.subscribe(task_id)
    }
}
