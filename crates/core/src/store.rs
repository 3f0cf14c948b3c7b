//! The contract every task store fulfils.

use async_trait::async_trait;
use tokio::sync::watch;

use mcp_tasks_proto::{ErrorObject, codes};

use crate::error::{Limit, StoreError};
use crate::history::HistoryEntry;
use crate::record::{NewTask, Outcome, TaskRecord};
use crate::status::TaskStatus;

/// Which tasks a `list` covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListScope {
    /// Every task (the local stdio peer sees its whole store).
    All,
    /// Tasks bound to this principal.
    Owner(String),
}

impl ListScope {
    /// The owner every listed task has, `None` for every task.
    pub fn owner(&self) -> Option<&str> {
        match self {
            Self::All => None,
            Self::Owner(o) => Some(o),
        }
    }
}

/// One page of [`TaskStore::list`]: up to `limit` tasks in `scope`, in the page's
/// [`ListOrder`]: ascending `seq` with `seq > after_seq`, or newest first with
/// `seq < after_seq` (all of them when `after_seq` is `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Which tasks.
    pub scope: ListScope,
    /// The `seq` of the last task of the previous page; `None` for the first page.
    pub after_seq: Option<i64>,
    /// Most tasks on the page.
    pub limit: usize,
    /// Which way the pages go.
    pub order: ListOrder,
}

/// The order of [`TaskStore::list`]'s pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// Ascending `seq`, oldest first: `tasks/list` (its cursors follow this order, and a
    /// task created during the pagination is still found on a later page).
    #[default]
    OldestFirst,
    /// Descending `seq`, newest first: the dashboard, which shows the newest tasks and
    /// reads no more than it shows (no consistency across pages is promised).
    NewestFirst,
}

impl ListQuery {
    /// The page of `scope` after `after_seq`, of at most `limit` tasks, oldest first.
    pub fn new(scope: ListScope, after_seq: Option<i64>, limit: usize) -> Self {
        Self {
            scope,
            after_seq,
            limit,
            order: ListOrder::OldestFirst,
        }
    }

    /// The page of `scope` before `before_seq` (from the newest task when `None`), of at
    /// most `limit` tasks, newest first.
    pub fn newest_first(scope: ListScope, before_seq: Option<i64>, limit: usize) -> Self {
        Self {
            scope,
            after_seq: before_seq,
            limit,
            order: ListOrder::NewestFirst,
        }
    }

    /// The highest `seq` a newest-first page may hold is below this one (`i64::MAX` for
    /// the first page), as a database compares it.
    pub fn before_or_max(&self) -> i64 {
        self.after_seq.unwrap_or(i64::MAX)
    }

    /// The lowest `seq` a page may hold is above this one (`i64::MIN` for the first page),
    /// as a database compares it.
    pub fn after_or_min(&self) -> i64 {
        self.after_seq.unwrap_or(i64::MIN)
    }

    /// [`Self::limit`] as a database counts (`i64`, saturating).
    pub fn limit_i64(&self) -> i64 {
        i64::try_from(self.limit).unwrap_or(i64::MAX)
    }
}

/// What [`TaskStore::adopt`] takes over: `task_id`, for `executor`, if the task is not
/// terminal and its executor has no live lease at `now_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptQuery {
    /// The task.
    pub task_id: String,
    /// The executor instance that takes it over.
    pub executor: String,
    /// The time leases are judged at, ms since the epoch.
    pub now_ms: i64,
}

/// What [`TaskStore::fail_orphans`] fails: every non-terminal task whose executor has no
/// live lease at `now_ms`, with `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanSweep {
    /// The time leases are judged at, ms since the epoch.
    pub now_ms: i64,
    /// The message of the failure (status message and error outcome).
    pub message: String,
}

impl OrphanSweep {
    /// The orphans at `now_ms`, failed with `message`.
    pub fn new(now_ms: i64, message: impl Into<String>) -> Self {
        Self {
            now_ms,
            message: message.into(),
        }
    }
}

/// The limits a task creation, or the outcome of a terminal transition, is checked
/// against, in the same atomic step as the change. Per-requester limits count the tasks of
/// the same [`crate::record::NewTask::quota_key`]. `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most non-terminal tasks per requester.
    pub max_active: Option<u32>,
    /// Most stored tasks (any status, until deleted) per requester.
    pub max_tasks: Option<u64>,
    /// Most stored bytes (requests and outcomes) per requester.
    pub max_bytes: Option<u64>,
    /// Most stored bytes (requests and outcomes) in the whole store.
    pub max_total_bytes: Option<u64>,
}

impl Limits {
    /// No limit at all.
    pub const NONE: Self = Self {
        max_active: None,
        max_tasks: None,
        max_bytes: None,
        max_total_bytes: None,
    };

    /// Only a limit of `n` active tasks per requester.
    pub fn active(n: u32) -> Self {
        Self {
            max_active: Some(n),
            ..Self::NONE
        }
    }

    /// The limit a creation goes over: a requester with `active` non-terminal and `tasks`
    /// stored tasks of `bytes` bytes, in a store of `total` bytes, adding a task of
    /// `adding` bytes.
    pub fn check_create(
        &self,
        active: u64,
        tasks: u64,
        bytes: u64,
        total: u64,
        adding: u64,
    ) -> Result<(), StoreError> {
        if let Some(max) = self.max_active
            && active >= u64::from(max)
        {
            return Err(StoreError::LimitExceeded {
                limit: Limit::ActiveTasks,
                max: u64::from(max),
            });
        }
        if let Some(max) = self.max_tasks
            && tasks >= max
        {
            return Err(StoreError::LimitExceeded {
                limit: Limit::StoredTasks,
                max,
            });
        }
        self.check_bytes(bytes, total, adding)
    }

    /// The byte limit that adding `adding` bytes goes over, for a requester holding
    /// `bytes` in a store of `total` bytes.
    pub fn check_bytes(&self, bytes: u64, total: u64, adding: u64) -> Result<(), StoreError> {
        if let Some(max) = self.max_bytes
            && bytes.saturating_add(adding) > max
        {
            return Err(StoreError::LimitExceeded {
                limit: Limit::StoredBytes,
                max,
            });
        }
        if let Some(max) = self.max_total_bytes
            && total.saturating_add(adding) > max
        {
            return Err(StoreError::LimitExceeded {
                limit: Limit::StoreBytes,
                max,
            });
        }
        Ok(())
    }
}

/// The outcome stored instead of one that would go over a byte limit: a JSON-RPC error
/// with code -32003 that names the limit. The task ends `failed` with the same message.
pub fn outcome_over_limit(outcome_bytes: u64, limit: Limit, max: u64) -> ErrorObject {
    ErrorObject::new(
        codes::TOO_MANY_TASKS,
        format!(
            "The task's result ({outcome_bytes} bytes) was not stored: {}",
            limit.allows(max)
        ),
    )
}

/// What a terminal transition within [`Limits`] stores: `t` itself, or, when its outcome
/// would go over a byte limit (per `check`), a `failed` transition with the error of
/// [`outcome_over_limit`].
pub fn within_limits(
    mut t: Transition,
    check: impl FnOnce(u64) -> Result<(), StoreError>,
) -> Transition {
    let Some(outcome) = &t.outcome else {
        return t;
    };
    let adding = crate::record::len_u64(&outcome.json);
    if let Err(StoreError::LimitExceeded { limit, max }) = check(adding) {
        let err = outcome_over_limit(adding, limit, max);
        t.to = TaskStatus::Failed;
        t.status_message = Some(err.message.clone());
        t.outcome = Some(Outcome::error(&err));
    }
    t
}

/// One compare-and-swap transition.
#[derive(Debug, Clone)]
pub struct Transition {
    /// The task.
    pub task_id: String,
    /// The new status; applied only if the current status is one of
    /// [`crate::status::allowed_predecessors`]`(to)`.
    pub to: TaskStatus,
    /// The new status message (replaces the old one; `None` clears it).
    pub status_message: Option<String>,
    /// The outcome, for terminal transitions.
    pub outcome: Option<Outcome>,
    /// The time of the change.
    pub at_ms: i64,
}

/// What a transition did.
#[derive(Debug, Clone, PartialEq)]
pub enum TransitionResult {
    /// Applied; the record after the change.
    Applied(TaskRecord),
    /// Not applied: the current status did not allow it. The record as it is.
    Rejected(TaskRecord),
    /// No such task.
    Missing,
}

/// A task store.
///
/// Invariants every implementation keeps (the conformance suite checks them):
/// * a transition is one atomic compare-and-swap on the status, never read-modify-write;
/// * a terminal task never changes again, and its outcome bytes never change;
/// * no call returns before its change is durable (for durable stores);
/// * after every committed change of a task, its [`TaskStore::subscribe`] receivers wake.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Insert a task in `working`. Fails with [`StoreError::LimitExceeded`], creating
    /// nothing, when the task's [`NewTask::quota_key`] already has `limits.max_active`
    /// non-terminal tasks or `limits.max_tasks` stored ones, or when its request would take
    /// the key's stored bytes over `limits.max_bytes` or the store's over
    /// `limits.max_total_bytes` (all counted in the same atomic step as the insert).
    async fn create(&self, task: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError>;

    /// The task, expired or not (the engine decides what expiry means to the caller).
    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// The task as [`TaskRecord::summary`]: without its request and outcome, which may be
    /// megabytes (`tasks/get`, the most frequent call, needs neither). The default reads
    /// the whole task.
    async fn get_summary(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.get(task_id).await?.map(|r| r.summary()))
    }

    /// The task as [`TaskRecord::without_request`]: its outcome read, its request not (a
    /// 2026-07-28 `tasks/get` carries a finished task's result inline, never the request
    /// it wrapped, which may be megabytes). The default reads the whole task.
    async fn get_without_request(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.get(task_id).await?.map(TaskRecord::without_request))
    }

    /// Apply a transition atomically.
    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError>;

    /// Whether the store answers a trivial query now (readiness probes). The default
    /// reads a task that cannot exist; a store with a cheaper or more telling check (a
    /// database round trip, the writer's lock) overrides it.
    async fn ready(&self) -> Result<(), StoreError> {
        self.get_summary("").await.map(|_| ())
    }

    /// Report store-level metrics (commit batch sizes, failed commits) into `metrics`.
    /// The default reports nothing.
    fn attach_metrics(&self, metrics: &crate::metrics::Metrics) {
        let _ = metrics;
    }

    /// Whether other processes change this store's tasks too (several replicas on one
    /// database), so that [`Self::subscribe`] also wakes on their changes and a running
    /// task may end elsewhere (`tasks/cancel` received by another replica). The default:
    /// no, this process is the only writer.
    fn is_shared(&self) -> bool {
        false
    }

    /// How many tasks are stored in each status (statuses with none may be left out), for
    /// the `mcp_tasks_tasks` gauge. The default pages through [`Self::list`]; a database
    /// overrides it with one `GROUP BY` query.
    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        let mut counts: Vec<(TaskStatus, u64)> = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .list(ListQuery::new(ListScope::All, after, 1000))
                .await?;
            for rec in &page {
                match counts.iter_mut().find(|(s, _)| *s == rec.status) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((rec.status, 1)),
                }
            }
            match page.last() {
                Some(last) if page.len() == 1000 => after = Some(last.seq),
                _ => return Ok(counts),
            }
        }
    }

    /// Apply a transition atomically; when it is terminal and its outcome would take the
    /// task's quota key over `limits.max_bytes` or the store over `limits.max_total_bytes`,
    /// store [`within_limits`]'s `failed` transition instead (decided in the same atomic
    /// step). The default ignores the limits.
    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
        let _ = limits;
        self.transition(t).await
    }

    /// The status history of `task_id`, oldest first: an entry for its creation and one
    /// for every status change (or change of status message), written in the same atomic
    /// step as the change, the latest [`crate::history::HISTORY_MAX`] kept, deleted with
    /// the task (none for an unknown task). The default keeps no history: the task's
    /// current status only.
    async fn history(&self, task_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        Ok(self
            .get_summary(task_id)
            .await?
            .map(|r| vec![HistoryEntry::of(&r)])
            .unwrap_or_default())
    }

    /// Up to `q.limit` tasks in `q.scope`, in `q.order`: with `seq > q.after_seq` in
    /// ascending `seq`, or with `seq < q.after_seq` in descending `seq` (newest first).
    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError>;

    /// Delete up to `limit` tasks whose TTL has passed at `now_ms`; returns their ids.
    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError>;

    /// The secret used to sign list cursors; created once and kept by the store, so that
    /// cursors survive a restart.
    async fn cursor_key(&self) -> Result<[u8; 32], StoreError>;

    /// Record that `executor` is alive until `lease_until_ms`.
    async fn heartbeat(&self, executor: &str, lease_until_ms: i64) -> Result<(), StoreError>;

    /// Mark `failed` (with `s.message`) every non-terminal task whose executor's lease has
    /// expired at `s.now_ms`, or that has no live executor; returns the tasks changed.
    /// Never touches tasks of a live executor.
    async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError>;

    /// A signal that changes whenever `task_id` changes (subscribe before reading).
    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64>;

    /// Up to `limit` non-terminal tasks whose executor has no live lease at `now_ms` (those
    /// [`Self::fail_orphans`] would fail), in ascending `seq`, so that work that can be
    /// picked up again (a gateway following an upstream task) is adopted first. A store
    /// without leases across processes returns none, and nothing is resumed.
    async fn orphans(&self, now_ms: i64, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let _ = (now_ms, limit);
        Ok(Vec::new())
    }

    /// Make `q.executor` the executor of `q.task_id` if the task is not terminal and its
    /// executor has no live lease at `q.now_ms`, in one compare-and-swap (of several
    /// processes at most one adopts a task). The record after the change, or `None`.
    async fn adopt(&self, q: AdoptQuery) -> Result<Option<TaskRecord>, StoreError> {
        let _ = q;
        Ok(None)
    }

    /// Where an extension may keep a note beside each task in this store, readable by
    /// every process sharing it (see [`TaskNotes`]); `None` (the default) when the store
    /// keeps none, and the extension keeps its notes its own way (a gateway: in files
    /// beside a SQLite database).
    fn notes(&self) -> Option<std::sync::Arc<dyn TaskNotes>> {
        None
    }

    /// The mailbox through which a task running in one process asks its requestor
    /// through another (see [`crate::inputs`]); `None` (the default) for a store that one
    /// process uses: the relay in memory serves every request.
    fn inputs(&self) -> Option<std::sync::Arc<dyn crate::inputs::TaskInputs>> {
        None
    }

    /// The rate-limit buckets every process of the store shares (see [`crate::buckets`]);
    /// `None` (the default) for a store that one process uses: its limiters in memory
    /// are the whole truth.
    fn buckets(&self) -> Option<std::sync::Arc<dyn crate::buckets::SharedBuckets>> {
        None
    }
}

/// A small note per task, kept in the task store beside the task and deleted with it: what
/// an extension needs to take the task up again in another process after the one running
/// it died (a gateway: which upstream task backs it, and in which upstream session). The
/// note is opaque bytes to the store.
#[async_trait]
pub trait TaskNotes: Send + Sync + 'static {
    /// Write (or replace) the note of `task_id`. A task that no longer exists takes no
    /// note, and that is not an error.
    async fn put_note(&self, task_id: &str, note: &[u8]) -> Result<(), StoreError>;

    /// The note of `task_id`, if any.
    async fn note(&self, task_id: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Forget the note of `task_id` (none is fine).
    async fn remove_note(&self, task_id: &str) -> Result<(), StoreError>;
}
