//! A [`TaskStore`] on PostgreSQL: several `mcp-tasks` processes (replicas) share one
//! database, and the database is the only state they share.
//!
//! * **Transitions are compare-and-swaps**: one `UPDATE ... WHERE task_id = $1 AND status =
//!   ANY(allowed predecessors) RETURNING ...` (see [`ops`](crate#statements)), so "cancel
//!   wins and a late completion is dropped" holds under any race, between connections and
//!   between replicas. Spec: "Tasks in `completed`, `failed`, or `cancelled` status are in
//!   a terminal state and MUST NOT transition to any other state."
//! * **Limits** (active, stored tasks and bytes per requester, bytes of the store) are
//!   checked in the transaction of the insert, under an advisory lock of the requester's
//!   quota key, so concurrent creations on any replicas never go over them; stored tasks
//!   and bytes are counters that triggers keep in the transaction of every change, as
//!   insert-only deltas (the `usage` module): a write no limit applies to takes no lock.
//! * **Sweeps** (TTL deletion, failing the tasks of dead executors) select their rows
//!   `FOR UPDATE SKIP LOCKED`: replicas sweeping at once share the work and never wait for
//!   each other.
//! * **`tasks/list`** is keyset-paged by the `seq` column (a `bigserial`); a page waits for
//!   the inserts in flight that drew a smaller `seq` (the list fence), so it never skips one
//!   that commits late.
//! * **Wake-ups** across processes with `LISTEN`/`NOTIFY`: every committed change of a task
//!   notifies its id (sent in batches right after the commit, outside the transaction of
//!   the change: the `announce` module says why); one listener connection
//!   per store wakes the waiters, reconnecting by itself; a short poll only as a safety
//!   net (see [`listen`](crate#wake-ups)).
//! * **Schema** in its own PostgreSQL schema (`mcp_tasks`), versioned in
//!   `schema_migrations`, migrated at open in one transaction under an advisory lock
//!   (replicas starting at once migrate it once); a schema written by a newer version is
//!   refused with a message naming the database.
//! * **Durability**: a call returns after its transaction committed, with the server's
//!   `synchronous_commit` (on by default: flushed to its write-ahead log, and to the
//!   synchronous standbys where configured).
//! * **Faults**: a database that cannot be reached at start is retried with backoff for
//!   [`PgOptions::connect_for`], then refused naming host and database (never the
//!   password). Later, a call during an outage, or whose statement runs past
//!   [`PgOptions::statement_timeout`], fails alone with [`StoreError::Unavailable`]; the
//!   pool reconnects by itself.
//!
//! # Statements
//!
//! Round trips per operation, once its statements are prepared on a pooled connection:
//! `get`, `get_summary`, `list` (one function call), `heartbeat`, `orphans`, `adopt`, `delete_expired`,
//! and each call of the task notes (`notes` module) and of the mailbox of task requests
//! (`inputs` module): one statement each. `transition` and `transition_within`: one (the compare-and-swap; with
//! byte limits, a PL/pgSQL call that locks, reads the counters and swaps), plus one read
//! when it is rejected. `create`: one (with limits, a call of a PL/pgSQL function that locks, counts and
//! inserts). `fail_orphans`: three (the
//! skipping sweep, the waiting one for the rows it skipped, the expired leases).
//!
//! Creations and terminal transitions go through **group commit** (the `group` module):
//! queued (at most [`PgOptions::write_queue`], default 1,024; past it a caller waits) and
//! written by two writers in batches of up to 64, one statement and one commit per batch,
//! each caller still getting its own answer once the batch committed.
//!
//! # Wake-ups
//!
//! See the `listen` module: a waiter of this store wakes at once after a change made
//! through it, and within a notification's delivery after one made through another store
//! on the same database and schema.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use backon::BackoffBuilder;
use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};
use mcp_tasks_core::status::allowed_predecessors;
use mcp_tasks_core::wake::WakeMap;
use mcp_tasks_core::{
    AdoptQuery, HistoryEntry, Limits, ListOrder, ListQuery, NewTask, OrphanSweep, Outcome,
    StoreError, TaskRecord, TaskStore, Transition, TransitionResult,
};
use mcp_tasks_proto::{ErrorObject, codes};
use tokio::sync::watch;
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

mod announce;
mod answers;
mod buckets;
mod db;
mod finish;
mod group;
mod inputs;
mod listen;
mod migrations;
mod notes;
mod ops;
mod options;
mod relay;
mod schema;
mod sessions;
mod setbased;
mod usage;
mod write;

pub use answers::{MAX_PENDING_REQUESTS_PER_SESSION, PENDING_REQUEST_TTL};
pub use options::{PgConfig, PgOptions, WRITE_QUEUE, is_postgres_url, redact};
pub use relay::{
    MAX_RELAYED_MESSAGE_BYTES, MAX_RELAYED_OWNER_BYTES, MAX_RELAYED_TOTAL_BYTES, RELAYED_TTL,
    RelayError, RelayLimits,
};
pub use schema::SCHEMA_VERSION;
pub use sessions::{MAX_RELAYED_BYTES, PgSessions, SessionEnded, SessionRow};

use db::{Db, map_err, map_pool_err};
use listen::Listener;

/// A task store on PostgreSQL. See the [crate documentation](crate).
///
/// Dropping the store closes its connections and stops its listener.
pub struct PgStore {
    pool: Pool,
    cfg: PgConfig,
    target: String,
    key: [u8; 32],
    listener: Arc<Listener>,
    writer: Arc<write::Writer>,
    queue: group::Queue,
    task: tokio::task::JoinHandle<()>,
}

mcp_tasks_proto::debug_non_exhaustive!(PgStore, |s| { store: s.cfg.description() });

impl Drop for PgStore {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PgStore {
    /// Open the store a URL names (see [`PgConfig::parse`]).
    ///
    /// # Errors
    /// A bad URL, or whatever [`Self::open`] fails with.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::open(PgConfig::parse(url)?).await
    }

    /// Connect (retrying an unreachable database with backoff for
    /// [`PgOptions::connect_for`]), migrate the schema, start the listener.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the database cannot be reached in time, refuses the
    /// user, or holds a schema written by a newer version; [`StoreError::Corrupt`] when the
    /// schema holds tables that are not ours. Every message names host and database, never
    /// the password.
    pub async fn open(cfg: PgConfig) -> Result<Self, StoreError> {
        let target = cfg.target();
        let mgr = Manager::from_config(
            cfg.pool_config(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let wait = (!cfg.options.statement_timeout.is_zero())
            .then(|| cfg.options.statement_timeout.max(Duration::from_secs(5)));
        let pool = Pool::builder(mgr)
            .max_size(cfg.options.pool)
            .runtime(Runtime::Tokio1)
            .wait_timeout(wait)
            .build()
            .map_err(|e| StoreError::Unavailable(format!("{target}: {e}")))?;
        let mut conn = first_connection(&pool, &cfg).await?;
        let key = schema::prepare(&mut conn, &cfg).await?;
        drop(conn);
        let listener = Arc::new(Listener {
            wake: Arc::new(WakeMap::default()),
            listening: std::sync::atomic::AtomicBool::new(false),
        });
        let task = tokio::spawn(listen::run(cfg.clone(), Arc::clone(&listener)));
        let announcer =
            announce::Announcer::start(pool.clone(), cfg.options.schema.clone(), target.clone());
        let writer = Arc::new(write::Writer {
            db: Db::new(&pool, &target),
            listener: Arc::clone(&listener),
            announcer,
        });
        let queue = group::Queue::start(
            Arc::clone(&writer),
            cfg.options.write_queue,
            cfg.options.writers,
        );
        tracing::debug!(store = %cfg.description(), "PostgreSQL task store open");
        Ok(Self {
            pool,
            cfg,
            target,
            key,
            listener,
            writer,
            queue,
            task,
        })
    }

    /// The store as a URL without its password.
    pub fn description(&self) -> String {
        self.cfg.description()
    }

    /// What group commit has done so far: `(batches, jobs, fallbacks)`, where a batch is
    /// what one writer took at once (one job alone, or several written in one statement),
    /// and a fallback a batch of several that failed as a whole and was written again
    /// one job at a time. For tests and figures.
    #[doc(hidden)]
    pub fn group_counts(&self) -> (u64, u64, u64) {
        let c = &self.queue.counts;
        (
            c.batches.load(Ordering::Relaxed),
            c.jobs.load(Ordering::Relaxed),
            c.fallbacks.load(Ordering::Relaxed),
        )
    }

    /// Whether the listener connection is up and listening for changes of other processes.
    pub fn is_listening(&self) -> bool {
        self.listener.listening.load(Ordering::SeqCst)
    }

    /// Wait until the listener listens (or `timeout` passes); whether it does.
    pub async fn wait_listening(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while !self.is_listening() {
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    fn err(&self, e: &tokio_postgres::Error) -> StoreError {
        map_err(&self.target, e)
    }

    async fn conn(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| map_pool_err(&self.target, &e))
    }

    /// Run one prepared statement; its rows.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let c = self.conn().await?;
        let st = c.prepare_cached(sql).await.map_err(|e| self.err(&e))?;
        c.query(&st, params).await.map_err(|e| self.err(&e))
    }

    /// [`Self::query`] for the sweeps' statements, run again (at most 3 times in all) when
    /// PostgreSQL broke a deadlock by aborting it. A sweep's set-based statement locks the
    /// usage counters of its keys in key order; a group-commit batch of terminal
    /// transitions (`finish_tasks`, set-based since `finish`) locks the tasks' rows in
    /// shard order before its one update, and a sweep may meet the same rows in another
    /// order, so the two can still deadlock (a batch of creations no longer can:
    /// `setbased` takes the counters up front in the sweeps' order); the sweep is
    /// idempotent and its aborted
    /// transaction changed nothing, so running it again is safe (the batch falls back to
    /// one row at a time on its side).
    async fn query_retrying(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let mut attempt = 1;
        loop {
            let c = self.conn().await?;
            let st = c.prepare_cached(sql).await.map_err(|e| self.err(&e))?;
            match c.query(&st, params).await {
                Ok(rows) => return Ok(rows),
                Err(e) if attempt < 3 && is_deadlock(&e) => attempt += 1,
                Err(e) => return Err(self.err(&e)),
            }
        }
    }

    async fn records(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<TaskRecord>, StoreError> {
        ops::read_records(&self.query(sql, params).await?)
    }

    async fn record(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.records(sql, params).await?.into_iter().next())
    }

    /// After a committed change of `ids`: wake their waiters here, and announce the change
    /// to the other replicas (`announce`).
    fn woke(&self, ids: impl IntoIterator<Item = impl AsRef<str>>) {
        self.writer.woke(ids);
    }

    /// The compare-and-swap of `t` on `c` (a pooled connection or a transaction).
    async fn cas(
        &self,
        c: &tokio_postgres::Client,
        cache: &deadpool_postgres::StatementCache,
        t: &Transition,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let from: Vec<&str> = allowed_predecessors(t.to)
            .iter()
            .map(|s| s.as_str())
            .collect();
        let err = |e: tokio_postgres::Error| self.err(&e);
        let to = t.to.as_str();
        let kind = t.outcome.as_ref().map(|o| o.kind.as_str());
        let json = t.outcome.as_ref().map(|o| o.json.as_bytes());
        let mut params: Vec<&(dyn ToSql + Sync)> =
            vec![&t.task_id, &to, &t.status_message, &t.at_ms, &from];
        let sql = if t.to.is_terminal() {
            params.extend([&kind as &(dyn ToSql + Sync), &json]);
            ops::cas_terminal()
        } else {
            ops::cas()
        };
        let st = cache.prepare(c, &sql).await.map_err(err)?;
        let rows = c.query(&st, &params).await.map_err(err)?;
        rows.first().map(ops::read_record).transpose()
    }

    /// What a transition answers: the record it wrote (its waiters woken already), or,
    /// when it was not applied, the task as it is now, or missing.
    async fn settled(
        &self,
        applied: Option<TaskRecord>,
        task_id: &str,
    ) -> Result<TransitionResult, StoreError> {
        if let Some(rec) = applied {
            return Ok(TransitionResult::Applied(rec));
        }
        Ok(match self.get(task_id).await? {
            Some(rec) => TransitionResult::Rejected(rec),
            None => TransitionResult::Missing,
        })
    }

    /// The shared sessions kept in this store's database.
    pub fn sessions(&self) -> PgSessions {
        PgSessions::new(Db::new(&self.pool, &self.target), self.cfg.clone())
    }
}

/// The pool's first connection, retried with backoff while the database cannot be reached
/// and [`PgOptions::connect_for`] has not passed.
async fn first_connection(
    pool: &Pool,
    cfg: &PgConfig,
) -> Result<deadpool_postgres::Object, StoreError> {
    let target = cfg.target();
    let started = Instant::now();
    let mut delays = backon::ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(2))
        .without_max_times()
        .build();
    loop {
        let e = match pool.get().await {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        let retry = match &e {
            PoolError::Backend(b) => db::retryable(b),
            _ => true,
        };
        let left = cfg.options.connect_for.saturating_sub(started.elapsed());
        let why = db::pool_reason(&e);
        if !retry || left.is_zero() {
            let tried = humantime::format_duration(Duration::from_millis(
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ));
            return Err(StoreError::Unavailable(format!(
                "cannot connect to PostgreSQL at {target} (tried for {tried}): {why}"
            )));
        }
        let delay = delays.next().unwrap_or(Duration::from_secs(2)).min(left);
        tracing::warn!(store = %target, %why, retry_in = ?delay, "PostgreSQL not reachable yet");
        tokio::time::sleep(delay).await;
    }
}

#[async_trait]
impl TaskStore for PgStore {
    async fn create(&self, t: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        self.queue.create(t, *limits).await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.record(&ops::get(), &[&task_id]).await
    }

    async fn get_summary(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.record(ops::GET_SUMMARY, &[&task_id]).await
    }

    async fn get_without_request(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.record(ops::GET_WITHOUT_REQUEST, &[&task_id]).await
    }

    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.transition_within(t, &Limits::NONE).await
    }

    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
        let applied = if t.to.is_terminal() {
            self.queue.finish(&t, limits).await?
        } else {
            let c = self.conn().await?;
            let rec = self.cas(&c, &c.statement_cache, &t).await?;
            if let Some(r) = &rec {
                self.woke([&r.task.task_id]);
            }
            rec
        };
        self.settled(applied, &t.task_id).await
    }

    async fn history(&self, task_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        self.query(ops::HISTORY, &[&task_id])
            .await?
            .iter()
            .map(ops::read_history)
            .collect()
    }

    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        let (limit, owner) = (q.limit_i64(), q.scope.owner());
        match (q.order, owner) {
            (ListOrder::OldestFirst, owner) => {
                let after = q.after_or_min();
                self.records(&ops::list(), &[&after, &limit, &owner]).await
            }
            (ListOrder::NewestFirst, None) => {
                let before = q.before_or_max();
                self.records(&ops::list_newest(false), &[&before, &limit])
                    .await
            }
            (ListOrder::NewestFirst, Some(owner)) => {
                let before = q.before_or_max();
                self.records(&ops::list_newest(true), &[&before, &limit, &owner])
                    .await
            }
        }
    }

    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let ids: Vec<String> = self
            .query_retrying(ops::DELETE_EXPIRED, &[&now_ms, &limit])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        self.woke(&ids);
        self.listener.wake.prune();
        // The deletions committed: a fold that fails leaves its deltas for the next sweep
        // (the counts stay exact either way).
        if let Err(e) = self.query_retrying(usage::FOLD, &[&usage::FOLD_MAX]).await {
            tracing::warn!(store = %self.target, error = %e, "usage fold failed");
        }
        Ok(ids)
    }

    async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
        Ok(self.key)
    }

    async fn heartbeat(&self, executor: &str, lease_until_ms: i64) -> Result<(), StoreError> {
        self.query(ops::HEARTBEAT, &[&executor, &lease_until_ms])
            .await
            .map(|_| ())
    }

    async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
        let (now_ms, message) = (s.now_ms, s.message.as_str());
        let outcome = Outcome::error(&ErrorObject::new(codes::INTERNAL_ERROR, message));
        let json = outcome.json.as_bytes();
        // First the rows nobody holds; then, waiting for them, the rows another transaction
        // held (a transition under way, or another replica's sweep): those still orphaned
        // once it committed are failed too, so a sweep misses no orphan.
        let mut recs = Vec::new();
        for skip_locked in [true, false] {
            let rows = self
                .query_retrying(&ops::fail_orphans(skip_locked), &[&now_ms, &message, &json])
                .await?;
            recs.extend(ops::read_records(&rows)?);
        }
        self.query(ops::FORGET_LEASES, &[&now_ms]).await?;
        self.woke(recs.iter().map(|r| &r.task.task_id));
        Ok(recs)
    }

    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64> {
        self.listener.wake.subscribe(task_id)
    }

    fn is_shared(&self) -> bool {
        true
    }

    async fn orphans(&self, now_ms: i64, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.records(&ops::orphans(), &[&now_ms, &limit]).await
    }

    async fn adopt(&self, q: AdoptQuery) -> Result<Option<TaskRecord>, StoreError> {
        let rec = self
            .record(&ops::adopt(), &[&q.now_ms, &q.executor, &q.task_id])
            .await?;
        if let Some(r) = &rec {
            self.woke([&r.task.task_id]);
        }
        Ok(rec)
    }

    fn notes(&self) -> Option<Arc<dyn mcp_tasks_core::TaskNotes>> {
        Some(Arc::new(notes::PgNotes {
            db: Db::new(&self.pool, &self.target),
        }))
    }

    fn inputs(&self) -> Option<Arc<dyn mcp_tasks_core::TaskInputs>> {
        Some(Arc::new(inputs::PgInputs {
            db: Db::new(&self.pool, &self.target),
        }))
    }

    fn buckets(&self) -> Option<Arc<dyn mcp_tasks_core::buckets::SharedBuckets>> {
        Some(Arc::new(buckets::PgBuckets {
            db: Db::new(&self.pool, &self.target),
        }))
    }
}

/// Whether PostgreSQL aborted the statement to break a deadlock (SQLSTATE 40P01).
fn is_deadlock(e: &tokio_postgres::Error) -> bool {
    e.code() == Some(&tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED)
}
