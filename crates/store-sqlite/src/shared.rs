//! What a [`SqliteStore`](crate::SqliteStore), its writer thread and its read jobs share:
//! the file's path and options, the waiters, the writer's counters and the pool of
//! read-only connections.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};

use mcp_tasks_core::wake::WakeMap;
use mcp_tasks_core::{Metrics, StoreError};
use parking_lot::Mutex;
use rusqlite::Connection;

use crate::options::SqliteOptions;
use crate::schema;
use crate::summaries::Summaries;

/// What the store, its writer thread and its read jobs share.
pub(crate) struct Shared {
    pub(crate) path: PathBuf,
    pub(crate) opts: SqliteOptions,
    pub(crate) wake: WakeMap,
    /// Whether the writer thread watches for remote changes (see `Writer::poll_remote`).
    pub(crate) watching: AtomicBool,
    /// Committed transactions of the writer, and the write ops they carried.
    pub(crate) batches: AtomicU64,
    pub(crate) ops: AtomicU64,
    pub(crate) readers: Mutex<Vec<Connection>>,
    /// Where the writer reports batch sizes and failed batches, once attached.
    pub(crate) metrics: std::sync::OnceLock<Metrics>,
    /// Task summaries kept while the file does not change (`tasks/get`).
    pub(crate) summaries: Summaries,
}

impl Shared {
    /// Close the idle read connections.
    pub(crate) fn drop_idle_readers(&self) {
        self.readers.lock().clear();
        self.summaries.reset();
    }

    /// Run `f` at once on the calling thread if an idle read connection is at hand and
    /// SQLite can answer without waiting for a lock; `None` when it cannot (no idle
    /// connection, or `SQLITE_BUSY`): then the caller reads on a blocking thread, where the
    /// busy timeout may be waited out. `f` must be a short point read: it runs on an async
    /// worker thread (in WAL mode a reader meets a lock only during recovery or when another
    /// process holds the file exclusively; pages not in the OS page cache are read from disk
    /// while the worker waits: see BENCHMARKS.md, cold cache).
    pub(crate) fn try_read_now<T>(
        &self,
        f: &impl Fn(&Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, StoreError>> {
        let conn = self.readers.lock().pop()?;
        if conn.busy_timeout(std::time::Duration::ZERO).is_err() {
            return None;
        }
        let result = f(&conn);
        let restored = conn.busy_timeout(self.opts.busy_timeout).is_ok();
        let busy = matches!(
            result
                .as_ref()
                .err()
                .and_then(rusqlite::Error::sqlite_error_code),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        );
        if restored {
            self.give_back(conn, &result);
        }
        if busy {
            return None;
        }
        Some(result.map_err(|e| schema::map_err(&self.path, &e)))
    }

    /// Run `f` on an idle read connection (or a new one).
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let idle = self.readers.lock().pop();
        let conn = match idle {
            Some(c) => c,
            None => schema::open_reader(&self.path, &self.opts)?,
        };
        let result = f(&conn);
        self.give_back(conn, &result);
        result.map_err(|e| schema::map_err(&self.path, &e))
    }

    /// Return a read connection to the pool after a read that gave `result`, unless that
    /// says the connection must be reopened or the pool is full.
    pub(crate) fn give_back<T>(&self, conn: Connection, result: &rusqlite::Result<T>) {
        if result.as_ref().is_err_and(schema::needs_reopen) {
            return;
        }
        let mut idle = self.readers.lock();
        if idle.len() < self.opts.read_pool {
            idle.push(conn);
        }
    }
}
