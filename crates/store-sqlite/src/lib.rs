//! A durable [`TaskStore`] on embedded SQLite (bundled: nothing to install).
//!
//! * **Durability.** The database is in WAL mode with `synchronous=FULL` by default: no
//!   call returns before its change is on stable storage ("Receivers that accept a
//!   task-augmented request MUST return a `CreateTaskResult`": the task it names exists
//!   even after a power loss). [`Synchronous::Normal`] trades the last commits on a power
//!   loss (never corruption) for speed.
//! * **One writer thread per store, group commit.** Writes queue to one thread that commits
//!   everything queued in one transaction and replies only after the commit; see
//!   [`writer`](crate#group-commit).
//! * **Transitions are compare-and-swaps**: one `UPDATE ... WHERE task_id = ? AND status IN
//!   (allowed predecessors)`, so "cancel wins and a late completion is dropped" holds under
//!   any race, between threads and between processes.
//! * **Reads** run on a small pool of read-only connections on tokio's blocking threads, in
//!   parallel with the writer (WAL readers never wait for it). A task's summary (what
//!   `tasks/get` reads) read once is answered from memory while no connection of any
//!   process has committed since, which the WAL-index header tells without a
//!   transaction (at most 4,096 summaries and 4 MiB of their text; see `summaries.rs`).
//! * **Wake-ups.** Waiters of a task wake after every committed change made through this
//!   store. Several processes may share one file: while anyone waits, the writer thread
//!   looks at `PRAGMA data_version` every [`SqliteOptions::remote_poll`] and wakes every
//!   waiter when another connection committed (waiters re-read their task; a spurious
//!   wake-up costs one read, a lost one would block a `tasks/result` forever).
//! * **Leases.** `heartbeat` keeps a row per executor in `executors`; `fail_orphans` fails,
//!   in one statement, every non-terminal task whose executor has no live lease.
//! * **Schema** versioned with `PRAGMA user_version`, migrated at open; a file written by a
//!   newer version, or that is not an mcp-tasks database, is refused with a message
//!   naming it.
//! * **Faults** (disk full, read-only file, a lock held elsewhere beyond
//!   [`SqliteOptions::busy_timeout`]) make the affected call fail with
//!   [`StoreError::Unavailable`]; nothing stored is lost, and calls succeed again once the
//!   fault is gone (the writer reopens its connection when needed).
//!
//! # Group commit
//!
//! Callers send write ops over a channel, each with a oneshot reply. The writer takes what
//! is queued (up to [`SqliteOptions::max_batch`]), runs it in one `BEGIN IMMEDIATE ...
//! COMMIT`, each op under its own `SAVEPOINT` (a failing op fails only itself), and answers
//! every op after the `COMMIT`. One WAL `fsync` thus covers many ops.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use async_trait::async_trait;
use mcp_tasks_core::status::TaskStatus;
use mcp_tasks_core::wake::WakeMap;
use mcp_tasks_core::{
    AdoptQuery, HistoryEntry, Limits, ListQuery, Metrics, NewTask, OrphanSweep, StoreError,
    TaskRecord, TaskStore, Transition, TransitionResult,
};
use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::{oneshot, watch};

mod migrations;
mod ops;
mod options;
mod schema;
mod shared;
mod summaries;
mod usage;
mod wal_header;
mod writer;

pub use options::{SqliteOptions, Synchronous, default_path, parse_spec};
pub use schema::SCHEMA_VERSION;

use ops::OpResult;
use shared::Shared;
use summaries::{Lookup, Summaries};
use usage::Usage;
use writer::{Msg, OpJob, Undo, Writer};

/// Counters of the writer thread, for observability (and to see group commit at work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriterStats {
    /// Transactions committed.
    pub batches: u64,
    /// Write ops answered after those commits (successful or failed alone).
    pub ops: u64,
}

/// A task store in one SQLite file. See the [crate documentation](crate).
///
/// Dropping the store finishes the writes already queued, then closes the file.
pub struct SqliteStore {
    shared: Arc<Shared>,
    tx: Option<mpsc::Sender<Msg>>,
    writer: Option<JoinHandle<()>>,
    key: [u8; 32],
}

mcp_tasks_proto::debug_non_exhaustive!(SqliteStore, |s| {
    path: s.shared.path,
    opts: s.shared.opts,
});

impl SqliteStore {
    /// Open (or create, with its parent directories) the store at `path`, migrate its
    /// schema, and start its writer thread. Blocks while it does so.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the file is not a readable SQLite database or not an
    /// mcp-tasks one; [`StoreError::Unavailable`] when it was written by a newer version,
    /// cannot be created or opened, or cannot be migrated. Every message names the file.
    pub fn open(path: &Path, opts: SqliteOptions) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Unavailable(format!(
                    "{}: cannot create the directory {}: {e}",
                    path.display(),
                    dir.display()
                ))
            })?;
        }
        let conn = schema::open_writer(path, &opts)?;
        let key = schema::prepare(&conn, path)?;
        let shared = Arc::new(Shared {
            path: path.to_owned(),
            opts,
            wake: WakeMap::default(),
            watching: AtomicBool::new(false),
            batches: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            readers: Mutex::new(Vec::new()),
            metrics: std::sync::OnceLock::new(),
            summaries: Summaries::default(),
        });
        let (tx, rx) = mpsc::channel();
        let w = Writer::new(conn, Arc::clone(&shared), rx);
        let writer = std::thread::Builder::new()
            .name("mcp-tasks-sqlite-writer".into())
            .spawn(move || w.run())
            .map_err(|e| {
                StoreError::Unavailable(format!("cannot start the SQLite writer thread: {e}"))
            })?;
        tracing::debug!(path = %path.display(), "SQLite task store open");
        Ok(Self {
            shared,
            tx: Some(tx),
            writer: Some(writer),
            key,
        })
    }

    /// Open the store a spec names: `sqlite:PATH[?synchronous=full|normal]
    /// [&busy_timeout_ms=N]` (see [`parse_spec`]).
    ///
    /// # Errors
    /// A bad spec, or whatever [`Self::open`] fails with.
    pub fn from_spec(spec: &str) -> Result<Self, StoreError> {
        let (path, opts) = parse_spec(spec)?;
        Self::open(&path, opts)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// How many task summaries (`tasks/get`) were answered from memory, the file unchanged
    /// since they were read (see the crate documentation, *Reads*).
    pub fn kept_reads(&self) -> u64 {
        self.shared.summaries.hits.load(Ordering::Relaxed)
    }

    /// How many transactions the writer committed, carrying how many write ops.
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            batches: self.shared.batches.load(Ordering::Relaxed),
            ops: self.shared.ops.load(Ordering::Relaxed),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &SqliteOptions {
        &self.shared.opts
    }

    /// Cap the database at `pages` pages (`PRAGMA max_page_count`; `None`: no cap beyond
    /// SQLite's own). Writes that would grow the file beyond it fail with
    /// [`StoreError::Unavailable`] as on a full disk, while reads go on.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the writer is gone or SQLite refuses.
    pub async fn set_max_pages(&self, pages: Option<u64>) -> Result<(), StoreError> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::SetMaxPages(pages, reply))?;
        rx.await.map_err(|_| self.writer_gone())?
    }

    /// Insert many tasks in `working` in one transaction, without the per-owner limit: the
    /// bulk path for imports (and benchmarks). Wakes no one.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] (and nothing is inserted) when an id exists already;
    /// [`StoreError::Unavailable`] when the write fails.
    pub async fn import(&self, tasks: Vec<NewTask>) -> Result<usize, StoreError> {
        self.write(move |c, u| ops::import(c, u, &tasks)).await
    }

    fn writer_gone(&self) -> StoreError {
        StoreError::Unavailable(format!(
            "{}: the SQLite writer thread stopped",
            self.shared.path.display()
        ))
    }

    fn send(&self, m: Msg) -> Result<(), StoreError> {
        self.tx
            .as_ref()
            .ok_or_else(|| self.writer_gone())?
            .send(m)
            .map_err(|_| self.writer_gone())
    }

    /// Queue a write op and wait for its committed answer.
    ///
    /// If the caller stops waiting, the op still runs (or has run): like any write to a
    /// database, a dropped call may have taken effect.
    async fn write<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Usage) -> OpResult<T> + Send + 'static,
    {
        self.queue(op, Undo::Savepoint).await
    }

    /// [`Self::write`] for an op that writes with one statement, as its last (see
    /// [`Undo::OneStatement`]): run without a savepoint of its own.
    async fn write_one<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Usage) -> OpResult<T> + Send + 'static,
    {
        self.queue(op, Undo::OneStatement).await
    }

    async fn queue<T, F>(&self, op: F, undo: Undo) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Usage) -> OpResult<T> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Job(Box::new(OpJob {
            op: Some(op),
            undo,
            out: None,
            reply,
        })))?;
        rx.await.map_err(|_| self.writer_gone())?
    }

    /// Run a read on a pooled read connection, on a blocking thread.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        tokio::task::spawn_blocking(move || shared.read(f))
            .await
            .map_err(|e| StoreError::Unavailable(format!("a read of the task store failed: {e}")))?
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish what is queued and stop.
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn create(&self, task: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
        let limits = *limits;
        self.write_one(move |c, u| ops::create(c, u, task, &limits))
            .await
    }

    async fn get(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        // The most frequent call (polling requestors): one indexed row, read in place when
        // it can be, saving the hop to a blocking thread and back.
        if let Some(r) = self.shared.try_read_now(&|c| ops::get(c, task_id)) {
            return r;
        }
        let id = task_id.to_owned();
        self.read(move |c| ops::get(c, &id)).await
    }

    async fn get_without_request(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        if let Some(r) = self
            .shared
            .try_read_now(&|c| ops::get_without_request(c, task_id))
        {
            return r;
        }
        let id = task_id.to_owned();
        self.read(move |c| ops::get_without_request(c, &id)).await
    }

    async fn get_summary(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let sh = &self.shared;
        let read_at = match sh.summaries.lookup(&sh.path, &sh.opts, task_id) {
            Lookup::Kept(r) => return Ok(Some(r)),
            Lookup::Read(v) => v,
        };
        let r = match sh.try_read_now(&|c| ops::get_summary(c, task_id)) {
            Some(r) => r,
            None => {
                let id = task_id.to_owned();
                self.read(move |c| ops::get_summary(c, &id)).await
            }
        };
        if let (Some(v), Ok(Some(rec))) = (read_at, &r) {
            sh.summaries.keep(&sh.path, &sh.opts, v, rec);
        }
        r
    }

    /// An empty write through the writer thread: it proves the thread is alive and that
    /// the write lock can be taken (`BEGIN IMMEDIATE` within the busy timeout), which a
    /// read would not (in WAL mode readers go on while another process holds the lock).
    /// An empty transaction commits without writing to the WAL.
    async fn ready(&self) -> Result<(), StoreError> {
        self.write(|_, _| Ok(((), Vec::new()))).await
    }

    async fn transition(&self, t: Transition) -> Result<TransitionResult, StoreError> {
        self.write_one(move |c, u| ops::transition(c, u, &t)).await
    }

    async fn transition_within(
        &self,
        t: Transition,
        limits: &Limits,
    ) -> Result<TransitionResult, StoreError> {
        let limits = *limits;
        self.write_one(move |c, u| ops::transition_within(c, u, t, &limits))
            .await
    }

    async fn history(&self, task_id: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        let id = task_id.to_owned();
        self.read(move |c| ops::history(c, &id)).await
    }

    async fn list(&self, q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
        self.read(move |c| ops::list(c, &q)).await
    }

    /// The writer thread reports each commit's batch size
    /// (`mcp_tasks_store_commit_batch_size`) and each failed batch
    /// (`mcp_tasks_store_errors_total{op="commit"}`).
    fn attach_metrics(&self, metrics: &Metrics) {
        let _ = self.shared.metrics.set(metrics.clone());
    }

    async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, StoreError> {
        self.read(ops::count_by_status).await
    }

    async fn delete_expired(&self, now_ms: i64, limit: usize) -> Result<Vec<String>, StoreError> {
        let ids = self
            .write(move |c, u| ops::delete_expired(c, u, now_ms, limit))
            .await?;
        self.shared.wake.prune();
        Ok(ids)
    }

    async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
        Ok(self.key)
    }

    async fn heartbeat(&self, executor: &str, lease_until_ms: i64) -> Result<(), StoreError> {
        let executor = executor.to_owned();
        self.write(move |c, _| ops::heartbeat(c, &executor, lease_until_ms))
            .await
    }

    async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
        self.write(move |c, u| ops::fail_orphans(c, u, &s)).await
    }

    async fn orphans(&self, now_ms: i64, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.read(move |c| ops::orphans(c, now_ms, limit)).await
    }

    async fn adopt(&self, q: AdoptQuery) -> Result<Option<TaskRecord>, StoreError> {
        self.write(move |c, _| ops::adopt(c, &q)).await
    }

    fn subscribe(&self, task_id: &str) -> watch::Receiver<u64> {
        let rx = self.shared.wake.subscribe(task_id);
        if !self.shared.watching.swap(true, Ordering::SeqCst) {
            // Ignored when the writer is gone: there is nothing left to watch.
            let _ = self.send(Msg::Watch);
        }
        rx
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn pooled_busy_timeout(shared: &Shared) -> Vec<i64> {
        shared
            .readers
            .lock()
            .iter()
            .map(|c| {
                c.query_row("PRAGMA busy_timeout", [], |r| r.get(0))
                    .unwrap()
            })
            .collect()
    }

    #[tokio::test]
    async fn reads_in_place_only_with_an_idle_connection_and_never_wait_there() {
        let dir = tempfile::tempdir().unwrap();
        let opts = SqliteOptions {
            busy_timeout: Duration::from_millis(1234),
            ..SqliteOptions::default()
        };
        let store = SqliteStore::open(&dir.path().join("t.db"), opts).unwrap();
        let shared = &store.shared;
        // No idle connection yet: not in place (the caller goes to a blocking thread).
        shared.drop_idle_readers();
        assert!(shared.try_read_now(&|_| Ok(())).is_none());
        // A blocking read leaves its connection in the pool; then reads happen in place,
        // with no busy wait while they run, and the connection goes back with its timeout.
        store.get("nope").await.unwrap();
        assert_eq!(pooled_busy_timeout(shared), [1234]);
        let in_place = shared
            .try_read_now(&|c| c.query_row("PRAGMA busy_timeout", [], |r| r.get::<_, i64>(0)));
        assert_eq!(in_place.unwrap().unwrap(), 0);
        assert_eq!(pooled_busy_timeout(shared), [1234]);
        // SQLITE_BUSY in place: `None` (the caller retries where it may wait), and the
        // connection is kept, timeout restored.
        let busy = shared.try_read_now(&|_| -> rusqlite::Result<()> {
            Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                None,
            ))
        });
        assert!(busy.is_none());
        assert_eq!(pooled_busy_timeout(shared), [1234]);
        // Any other error is the answer.
        let other = shared.try_read_now(&|c| c.query_row("SELECT * FROM nothing", [], |_| Ok(())));
        assert!(
            matches!(other, Some(Err(StoreError::Unavailable(_)))),
            "{other:?}"
        );
    }

    /// A meta row written by an op, and whether it is there.
    fn put(c: &Connection, key: &str) -> rusqlite::Result<usize> {
        c.execute("INSERT INTO meta (key, value) VALUES (?1, x'00')", [key])
    }

    async fn stored(store: &SqliteStore, key: &'static str) -> bool {
        store
            .read(move |c| {
                c.query_row("SELECT count(*) FROM meta WHERE key = ?1", [key], |r| {
                    r.get::<_, i64>(0)
                })
            })
            .await
            .unwrap()
            == 1
    }

    /// Ops queued behind one that holds the writer land in one batch: a one-statement op
    /// that fails before writing fails alone (no savepoint needed: nothing of it is
    /// there), the others of its batch commit; one that fails after its statement took
    /// effect fails its whole batch, and nothing of that batch is committed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_one_statement_op_fails_alone_unless_it_failed_after_writing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("t.db"), SqliteOptions::default()).unwrap(),
        );
        let batch = |ops: Vec<(&'static str, bool, bool)>| {
            let store = Arc::clone(&store);
            async move {
                // Hold the writer so that what follows is queued, then taken as one batch.
                let held = {
                    let s = Arc::clone(&store);
                    tokio::spawn(async move {
                        s.write(|_, _| {
                            std::thread::sleep(Duration::from_millis(200));
                            Ok(((), Vec::new()))
                        })
                        .await
                    })
                };
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut calls = Vec::new();
                for (key, write_first, fail) in ops {
                    let s = Arc::clone(&store);
                    calls.push(tokio::spawn(async move {
                        s.write_one(move |c, _| {
                            if write_first {
                                put(c, key)?;
                            }
                            if fail {
                                return Err(ops::OpError::Domain(StoreError::Duplicate(format!(
                                    "{key} refused"
                                ))));
                            }
                            if !write_first {
                                put(c, key)?;
                            }
                            Ok(((), Vec::new()))
                        })
                        .await
                    }));
                }
                held.await.unwrap().unwrap();
                let mut out = Vec::new();
                for c in calls {
                    out.push(c.await.unwrap());
                }
                out
            }
        };
        // Fails before writing: alone.
        let r = batch(vec![
            ("a", false, false),
            ("b", false, true),
            ("c", false, false),
        ])
        .await;
        assert!(r[0].is_ok() && r[2].is_ok(), "{r:?}");
        assert!(
            matches!(&r[1], Err(StoreError::Duplicate(m)) if m == "b refused"),
            "{r:?}"
        );
        assert!(stored(&store, "a").await && stored(&store, "c").await);
        assert!(!stored(&store, "b").await);
        // Fails after its statement took effect: the whole batch, nothing committed.
        let r = batch(vec![
            ("d", false, false),
            ("e", true, true),
            ("f", false, false),
        ])
        .await;
        assert!(
            matches!(&r[1], Err(StoreError::Duplicate(m)) if m == "e refused"),
            "{r:?}"
        );
        for other in [&r[0], &r[2]] {
            assert!(
                matches!(other, Err(StoreError::Unavailable(m)) if m.contains("whole batch")),
                "{r:?}"
            );
        }
        for key in ["d", "e", "f"] {
            assert!(!stored(&store, key).await, "{key} was committed");
        }
        // The writer goes on.
        store
            .write_one(|c, _| Ok((put(c, "g")?, Vec::new())))
            .await
            .unwrap();
        assert!(stored(&store, "g").await);
    }
}
