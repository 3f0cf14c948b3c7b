//! What each quota key stores (tasks and bytes) and how many of its tasks are active
//! (`working` or `input_required`), kept by the writer thread in memory and written to
//! `quota_usage` once per batch, in the batch's transaction.
//!
//! The limits of a creation are checked against these counts, so they must be exact: the
//! counts are what `quota_usage` holds (read on first use, per key) plus the changes of
//! the batch being written. An op's changes count once the op succeeded (its savepoint was
//! released); they reach the table just before the batch's `COMMIT`, as one upsert per key
//! the batch touched, and the cache takes them once the commit succeeded. When the batch
//! fails, the cache is dropped and read again.
//!
//! Several processes may write one file: `PRAGMA data_version` tells, once the batch holds
//! the write lock, whether another connection committed since this one last looked; then
//! the cache is dropped too, so a count is never stale while the lock is held. The key `''`
//! is the whole store.
//!
//! The same discipline keeps `status_counts`, the number of stored tasks in each terminal
//! status (the non-terminal ones are counted through the partial index of active tasks):
//! an op counts its terminal transitions and the terminal tasks it deleted, the counts
//! join the batch's once the op succeeded, and reach the table just before the `COMMIT`,
//! one `UPDATE` per status the batch changed. No check depends on them, so there is no
//! cache to keep.

use std::collections::HashMap;

use mcp_tasks_proto::mcp::TaskStatus;
use rusqlite::{Connection, OptionalExtension};

/// Tasks, bytes and active tasks, or a change of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) tasks: i64,
    pub(crate) bytes: i64,
    /// Of `tasks`, those not in a terminal status: what the active-task limit counts.
    pub(crate) active: i64,
}

impl Counts {
    fn add(&mut self, d: Counts) {
        self.tasks += d.tasks;
        self.bytes += d.bytes;
        self.active += d.active;
    }
}

/// The key of the whole store in `quota_usage`.
pub(crate) const TOTAL: &str = "";

/// Most quota keys whose counts the writer keeps in memory; past it the cache starts over
/// (a key not in it is read from `quota_usage`, one primary-key read).
const KNOWN_MAX: usize = 4096;

/// The writer's counts per quota key. See the [module documentation](self).
#[derive(Debug, Default)]
pub(crate) struct Usage {
    /// Committed counts of the keys read so far.
    known: HashMap<String, Counts>,
    /// Changes of the ops of this batch that succeeded.
    batch: HashMap<String, Counts>,
    /// Changes of the op running.
    op: Vec<(String, Counts)>,
    /// `PRAGMA data_version` when the cache was last known to match the file.
    data_version: Option<i64>,
    /// Changes of the terminal-status counts by the batch's ops that succeeded, in
    /// [`TERMINAL`] order.
    batch_terminal: [i64; 3],
    /// Those of the op running.
    op_terminal: [i64; 3],
}

/// The terminal statuses, in the order of the counts of [`Usage`].
const TERMINAL: [TaskStatus; 3] = [
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

impl Usage {
    /// At the start of a batch, with the write lock held: forget the cache if another
    /// connection committed since the last look.
    pub(crate) fn begin(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let v: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        if self.data_version != Some(v) {
            self.known.clear();
            self.data_version = Some(v);
        }
        self.batch.clear();
        self.op.clear();
        self.batch_terminal = [0; 3];
        self.op_terminal = [0; 3];
        Ok(())
    }

    /// The counts of `key` now: committed, plus the batch's and this op's changes.
    pub(crate) fn get(&mut self, conn: &Connection, key: &str) -> rusqlite::Result<Counts> {
        let mut c = match self.known.get(key) {
            Some(c) => *c,
            None => {
                let c = read(conn, key)?;
                if self.known.len() >= KNOWN_MAX {
                    self.known.clear();
                }
                self.known.insert(key.to_owned(), c);
                c
            }
        };
        if let Some(d) = self.batch.get(key) {
            c.add(*d);
        }
        for (k, d) in &self.op {
            if k == key {
                c.add(*d);
            }
        }
        Ok(c)
    }

    /// Count a change of the op running: `tasks` and `bytes` against `key` and the whole
    /// store, `active` (tasks that entered or left the active statuses) against `key` only
    /// (no limit counts the store's active tasks).
    pub(crate) fn change(&mut self, key: &str, tasks: i64, bytes: i64, active: i64) {
        self.op.push((
            key.to_owned(),
            Counts {
                tasks,
                bytes,
                active,
            },
        ));
        if tasks != 0 || bytes != 0 {
            self.op.push((
                TOTAL.to_owned(),
                Counts {
                    tasks,
                    bytes,
                    active: 0,
                },
            ));
        }
    }

    /// Count `n` tasks more (or fewer, when negative) in `status` by the op running; a
    /// non-terminal status is not counted here.
    pub(crate) fn count_status(&mut self, status: TaskStatus, n: i64) {
        if let Some(i) = TERMINAL.iter().position(|s| *s == status) {
            self.op_terminal[i] += n;
        }
    }

    /// The op running succeeded: its changes join the batch's.
    pub(crate) fn keep_op(&mut self) {
        for (k, d) in self.op.drain(..) {
            self.batch.entry(k).or_default().add(d);
        }
        for (b, o) in self.batch_terminal.iter_mut().zip(&mut self.op_terminal) {
            *b += std::mem::take(o);
        }
    }

    /// The op running failed (rolled back to its savepoint): its changes are dropped.
    pub(crate) fn drop_op(&mut self) {
        self.op.clear();
        self.op_terminal = [0; 3];
    }

    /// Before the `COMMIT`: the batch's changes into `quota_usage`, one upsert per key (and
    /// a key's row deleted when it stores nothing any more).
    pub(crate) fn flush(&self, conn: &Connection) -> rusqlite::Result<()> {
        for (k, d) in &self.batch {
            if *d == Counts::default() {
                continue;
            }
            conn.prepare_cached(
                "INSERT INTO quota_usage (quota_key, tasks, bytes, active) \
                 VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (quota_key) DO UPDATE SET tasks = tasks + excluded.tasks, \
                 bytes = bytes + excluded.bytes, active = active + excluded.active",
            )?
            .execute(rusqlite::params![k, d.tasks, d.bytes, d.active])?;
            if !k.is_empty() && d.tasks < 0 {
                conn.prepare_cached("DELETE FROM quota_usage WHERE quota_key = ?1 AND tasks <= 0")?
                    .execute([k])?;
            }
        }
        for (status, n) in TERMINAL.iter().zip(self.batch_terminal) {
            if n != 0 {
                conn.prepare_cached(
                    "UPDATE status_counts SET tasks = tasks + ?2 WHERE status = ?1",
                )?
                .execute(rusqlite::params![status.as_str(), n])?;
            }
        }
        Ok(())
    }

    /// After the `COMMIT` succeeded: the cache takes the batch's changes.
    pub(crate) fn committed(&mut self) {
        for (k, d) in self.batch.drain() {
            if let Some(c) = self.known.get_mut(&k) {
                c.add(d);
            }
        }
        self.batch_terminal = [0; 3];
    }

    /// The batch did not commit: nothing of it is in the file; read the counts again.
    pub(crate) fn failed(&mut self) {
        self.known.clear();
        self.batch.clear();
        self.op.clear();
        self.data_version = None;
        self.batch_terminal = [0; 3];
        self.op_terminal = [0; 3];
    }
}

fn read(conn: &Connection, key: &str) -> rusqlite::Result<Counts> {
    Ok(conn
        .prepare_cached("SELECT tasks, bytes, active FROM quota_usage WHERE quota_key = ?1")?
        .query_row([key], |r| {
            Ok(Counts {
                tasks: r.get(0)?,
                bytes: r.get(1)?,
                active: r.get(2)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}
