//! The writer thread: the only connection of this store that writes, and group commit.
//!
//! Callers send write ops over a channel, each with a oneshot reply. The thread takes what
//! is queued (up to `max_batch` ops), runs it in one `BEGIN IMMEDIATE ... COMMIT`, each op
//! either under its own `SAVEPOINT` or, when it writes with one statement (a creation, a
//! transition: SQLite undoes a failed statement by itself), without one (see [`Undo`]),
//! so that a failing op fails only itself, and replies to every op only after the `COMMIT`
//! returned: no caller ever hears of a state that is not durable. With `synchronous=FULL`
//! that is one WAL `fsync` for the whole batch, so the throughput of concurrent writers is
//! not bound by the `fsync` rate.
//!
//! If the commit fails, every op of the batch gets the error. If an op fails with an error
//! after which SQLite rolled the whole transaction back by itself (disk full, I/O error,
//! out of memory), the batch is lost and every op in it gets that error too: nothing of it
//! was written.
//!
//! Between batches, while anyone waits on a task, the thread also looks for changes
//! committed by other processes sharing the file; see [`Writer::poll_remote`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

use mcp_tasks_core::StoreError;
use rusqlite::{Connection, MAIN_DB};
use tokio::sync::oneshot;

use crate::ops::{OpError, OpResult};
use crate::schema::{map_err, needs_reopen, open_writer};
use crate::shared::Shared;
use crate::usage::Usage;

/// A message to the writer thread.
pub(crate) enum Msg {
    /// A write op.
    Job(Box<dyn Job>),
    /// Someone subscribed to a task: start watching for remote changes.
    Watch,
    /// Change `PRAGMA max_page_count` (`None`: SQLite's maximum).
    SetMaxPages(Option<u64>, oneshot::Sender<Result<(), StoreError>>),
}

/// How the writer undoes an op that fails, leaving the rest of its batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undo {
    /// The op runs under its own `SAVEPOINT`, rolled back to if it fails: for an op that
    /// may write with several statements.
    Savepoint,
    /// The op writes with one statement at most (reads may come before and after it) and
    /// runs without a savepoint, which costs a creation ~4 % of its instructions
    /// (`SAVEPOINT` and `RELEASE`, and the copy of every page the batch already changed
    /// into the statement journal). A failed statement leaves nothing: SQLite undoes it
    /// itself ("If an error occurs within a statement ... the statement is rolled back"),
    /// or, where it cannot, rolls back the whole transaction (handled as before). An op
    /// that fails *after* its statement changed rows (a read-back that fails) cannot be
    /// undone alone: then the whole batch is rolled back and every op in it fails, so that
    /// nothing half-done is committed.
    OneStatement,
}

/// A write op with its reply.
pub(crate) trait Job: Send {
    /// How a failure of this op is undone.
    fn undo(&self) -> Undo;
    /// Run inside the batch transaction; the ids to wake after the commit.
    fn run(
        &mut self,
        conn: &Connection,
        usage: &mut Usage,
        shared: &Shared,
    ) -> Result<Vec<String>, StoreError>;
    /// Reply; `batch` is the error of the batch when it did not commit.
    fn finish(self: Box<Self>, batch: Option<&StoreError>);
}

/// The one implementation of [`Job`]: a closure and where its answer goes.
pub(crate) struct OpJob<T, F> {
    pub(crate) op: Option<F>,
    pub(crate) undo: Undo,
    pub(crate) out: Option<Result<T, StoreError>>,
    pub(crate) reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Job for OpJob<T, F>
where
    T: Send,
    F: FnOnce(&Connection, &mut Usage) -> OpResult<T> + Send,
{
    fn undo(&self) -> Undo {
        self.undo
    }

    fn run(
        &mut self,
        conn: &Connection,
        usage: &mut Usage,
        shared: &Shared,
    ) -> Result<Vec<String>, StoreError> {
        let Some(op) = self.op.take() else {
            return Ok(Vec::new());
        };
        match op(conn, usage) {
            Ok((value, wake)) => {
                self.out = Some(Ok(value));
                Ok(wake)
            }
            Err(e) => {
                let e = match e {
                    OpError::Sqlite(e) => map_err(&shared.path, &e),
                    OpError::Domain(e) => e,
                };
                self.out = Some(Err(e.clone()));
                Err(e)
            }
        }
    }

    fn finish(self: Box<Self>, batch: Option<&StoreError>) {
        let answer = match (self.out, batch) {
            (Some(Err(own)), _) => Err(own),
            (_, Some(e)) => Err(e.clone()),
            (Some(Ok(v)), None) => Ok(v),
            (None, None) => Err(StoreError::Unavailable("the write was not run".into())),
        };
        let _ = self.reply.send(answer);
    }
}

/// The state of the writer thread.
pub(crate) struct Writer {
    conn: Option<Connection>,
    shared: Arc<Shared>,
    rx: Receiver<Msg>,
    /// `PRAGMA data_version` of `conn` at the last look; `None` after a reopen.
    data_version: Option<i64>,
    last_poll: Instant,
    watching: bool,
    max_pages: Option<u64>,
    /// The stored tasks and bytes per quota key.
    usage: Usage,
}

impl Writer {
    pub(crate) fn new(conn: Connection, shared: Arc<Shared>, rx: Receiver<Msg>) -> Self {
        let data_version = data_version(&conn).ok();
        let max_pages = shared.opts.max_pages;
        Self {
            conn: Some(conn),
            shared,
            rx,
            data_version,
            last_poll: Instant::now(),
            watching: false,
            max_pages,
            usage: Usage::default(),
        }
    }

    /// Serve until every sender is gone.
    pub(crate) fn run(mut self) {
        let poll = self.shared.opts.remote_poll;
        let max_batch = self.shared.opts.max_batch.max(1);
        loop {
            let first = if self.watching {
                match self
                    .rx
                    .recv_timeout(poll.saturating_sub(self.last_poll.elapsed()))
                {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match self.rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                }
            };
            let mut jobs: Vec<Box<dyn Job>> = Vec::new();
            if let Some(m) = first {
                self.accept(m, &mut jobs);
                while jobs.len() < max_batch {
                    match self.rx.try_recv() {
                        Ok(m) => self.accept(m, &mut jobs),
                        Err(_) => break,
                    }
                }
            }
            if !jobs.is_empty() {
                self.commit(jobs);
            }
            if self.watching && self.last_poll.elapsed() >= poll {
                self.poll_remote();
            }
        }
    }

    fn accept(&mut self, m: Msg, jobs: &mut Vec<Box<dyn Job>>) {
        match m {
            Msg::Job(j) => jobs.push(j),
            Msg::Watch => self.watching = true,
            Msg::SetMaxPages(pages, reply) => {
                self.max_pages = pages;
                let r = match &self.conn {
                    Some(c) => set_max_pages(c, pages).map_err(|e| map_err(&self.shared.path, &e)),
                    // Applied when the connection is reopened.
                    None => Ok(()),
                };
                let _ = reply.send(r);
            }
        }
    }

    /// The writer's connection, reopened when it was lost or opened read-only.
    fn connection(&mut self) -> Result<&Connection, StoreError> {
        let stale = self
            .conn
            .as_ref()
            .is_none_or(|c| c.is_readonly(MAIN_DB).unwrap_or(true));
        if stale {
            // SQLite shares one handle on the WAL index (`-shm`) among the connections of a
            // process; while any of them is open, a new connection would inherit a
            // read-only one. Close the idle readers too (they reopen on demand).
            self.shared.drop_idle_readers();
            self.conn = None;
            let mut opts = self.shared.opts.clone();
            opts.max_pages = self.max_pages;
            match open_writer(&self.shared.path, &opts) {
                Ok(c) => {
                    self.conn = Some(c);
                    self.data_version = None;
                    // `PRAGMA data_version` values of two connections do not compare.
                    self.usage.failed();
                }
                Err(e) => return Err(e),
            }
        }
        self.conn
            .as_ref()
            .ok_or_else(|| StoreError::Unavailable("no database connection".into()))
    }

    fn commit(&mut self, mut jobs: Vec<Box<dyn Job>>) {
        let outcome = self.run_batch(&mut jobs);
        match outcome {
            Ok(wake) => {
                self.shared.batches.fetch_add(1, Ordering::Relaxed);
                self.shared.ops.fetch_add(
                    u64::try_from(jobs.len()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                if let Some(m) = self.shared.metrics.get() {
                    m.commit_batch(jobs.len());
                }
                for id in &wake {
                    self.shared.wake.notify(id);
                }
                for j in jobs {
                    j.finish(None);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, ops = jobs.len(), "a batch of task store writes failed");
                if let Some(m) = self.shared.metrics.get() {
                    m.store_error("commit");
                }
                for j in jobs {
                    j.finish(Some(&e));
                }
            }
        }
    }

    /// Run the batch in one transaction; the ids to wake, or the error of the whole batch.
    fn run_batch(&mut self, jobs: &mut [Box<dyn Job>]) -> Result<Vec<String>, StoreError> {
        let shared = Arc::clone(&self.shared);
        self.connection()?;
        let Some(conn) = self.conn.as_ref() else {
            return Err(StoreError::Unavailable("no database connection".into()));
        };
        let result = transact(conn, &mut self.usage, &shared, jobs);
        if result.is_ok() {
            self.usage.committed();
        } else {
            self.usage.failed();
        }
        match result {
            Ok(wake) => Ok(wake),
            Err(BatchError::Store(e)) => Err(e),
            Err(BatchError::Sqlite(e)) => {
                if needs_reopen(&e) {
                    self.conn = None;
                }
                Err(map_err(&shared.path, &e))
            }
        }
    }

    /// Look for commits made by other connections (other processes sharing the file, or
    /// other stores on it in this process) and wake every waiter when there are any.
    ///
    /// `PRAGMA data_version` on this connection changes exactly when another connection
    /// committed; it costs no I/O (it reads the shared WAL index). Which tasks changed is
    /// unknown, so every waiter wakes and re-reads its task: a spurious wake-up costs one
    /// read, a lost one would block a `tasks/result`. The baseline is kept from the start
    /// (and dropped only when the connection is reopened, which counts as a change), so a
    /// change made between a subscription and this look is never missed. Runs only while
    /// someone is subscribed, every [`crate::SqliteOptions::remote_poll`].
    fn poll_remote(&mut self) {
        self.last_poll = Instant::now();
        // Stop watching when nobody waits. `SqliteStore::subscribe` subscribes first and
        // then swaps the flag to true (nudging us if it was false), so one of the two sees
        // the other.
        self.shared.watching.store(false, Ordering::SeqCst);
        if self.shared.wake.watched().is_empty() {
            self.watching = false;
            return;
        }
        self.shared.watching.store(true, Ordering::SeqCst);
        let Some(conn) = &self.conn else { return };
        match data_version(conn) {
            Ok(v) => {
                if self.data_version != Some(v) {
                    if self.data_version.is_some() {
                        tracing::trace!("remote change seen: waking every waiter");
                    }
                    self.shared.wake.notify_all();
                }
                self.data_version = Some(v);
            }
            Err(e) => tracing::debug!(error = %e, "PRAGMA data_version failed"),
        }
    }
}

fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

pub(crate) fn set_max_pages(conn: &Connection, pages: Option<u64>) -> rusqlite::Result<()> {
    let pages = pages.unwrap_or(u64::from(u32::MAX - 1));
    conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
}

enum BatchError {
    Sqlite(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for BatchError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

/// A statement without parameters, prepared once per connection.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// `BEGIN IMMEDIATE`, every job (under its own savepoint where its [`Undo`] says), the
/// batch's quota counts, `COMMIT`.
fn transact(
    conn: &Connection,
    usage: &mut Usage,
    shared: &Shared,
    jobs: &mut [Box<dyn Job>],
) -> Result<Vec<String>, BatchError> {
    exec(conn, "BEGIN IMMEDIATE")?;
    let mut body = || -> Result<Vec<String>, BatchError> {
        usage.begin(conn)?;
        let mut wake = Vec::new();
        for job in jobs.iter_mut() {
            let savepoint = job.undo() == Undo::Savepoint;
            if savepoint {
                exec(conn, "SAVEPOINT op")?;
            }
            let changes = conn.total_changes();
            // A panicking op (a bug) fails itself, not the writer thread and every later call.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                job.run(conn, usage, shared)
            }))
            .unwrap_or_else(|_| {
                Err(StoreError::Unavailable(
                    "a task store write panicked".into(),
                ))
            });
            match ran {
                Ok(ids) => {
                    if savepoint {
                        exec(conn, "RELEASE op")?;
                    }
                    usage.keep_op();
                    wake.extend(ids);
                }
                Err(own) => {
                    usage.drop_op();
                    if conn.is_autocommit() {
                        // SQLite rolled the whole transaction back by itself (disk full,
                        // I/O error, out of memory): nothing of this batch was written.
                        return Err(BatchError::Store(StoreError::Unavailable(format!(
                            "the whole batch of writes was rolled back: {own}"
                        ))));
                    }
                    if savepoint {
                        exec(conn, "ROLLBACK TO op")?;
                        exec(conn, "RELEASE op")?;
                    } else if conn.total_changes() != changes {
                        // Its statement took effect, then the op failed: no savepoint to
                        // undo it alone, so nothing of the batch is committed.
                        return Err(BatchError::Store(StoreError::Unavailable(format!(
                            "the whole batch of writes was rolled back: {own}"
                        ))));
                    }
                }
            }
        }
        usage.flush(conn)?;
        exec(conn, "COMMIT")?;
        Ok(wake)
    };
    let result = body();
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}
