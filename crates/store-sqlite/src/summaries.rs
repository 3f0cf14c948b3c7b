//! Task summaries kept while the file does not change: a `tasks/get` of a task read
//! before, with no commit since by any connection of any process, is answered from
//! memory, without a read transaction (and its two `fcntl` calls) or a statement.
//!
//! Exact, not a cache with a lifetime: every summary is kept with the [`Version`] of the
//! file it was read at (the WAL-index header read before the read and found unchanged
//! after it), and is answered only while the header still reads that version; the first
//! lookup that reads another version forgets them all. A task changed or deleted by this
//! process, by another store on the file or by another process is therefore never
//! answered as it was. Expiry is the engine's (it checks each record's TTL against its
//! clock, kept or read).
//!
//! Bounded: at most [`MAX_ENTRIES`] summaries and [`MAX_BYTES`] of their text; past
//! either, no more are kept until the next change.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_tasks_core::TaskRecord;
use parking_lot::Mutex;

use crate::options::SqliteOptions;
use crate::schema;
use crate::wal_header::{Version, WalHeader};

/// The most summaries kept.
pub(crate) const MAX_ENTRIES: usize = 4_096;
/// The most bytes of summary text kept (ids, owners, keys, methods, status messages).
pub(crate) const MAX_BYTES: usize = 4 * 1024 * 1024;

/// What a lookup found.
// The record goes straight back to the caller, who returns it: boxing it would cost an
// allocation per lookup.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Lookup {
    /// The summary, as a read now would return it.
    Kept(TaskRecord),
    /// Not kept: read it, then offer it to [`Summaries::keep`] with this version (`None`:
    /// none can be kept now).
    Read(Option<Version>),
}

/// The kept summaries of one store.
#[derive(Default)]
pub(crate) struct Summaries {
    state: Mutex<State>,
    /// Lookups answered from memory (for tests and observability).
    pub(crate) hits: AtomicU64,
}

#[derive(Default)]
struct State {
    /// The mapped header; opened on the first lookup.
    header: Option<WalHeader>,
    /// Whether opening it was tried (it is not tried again until [`Summaries::reset`]).
    tried: bool,
    /// The version every kept summary was read at.
    version: Option<Version>,
    kept: HashMap<String, TaskRecord>,
    bytes: usize,
}

impl State {
    /// The current version, the kept summaries forgotten when it is not theirs.
    fn current(&mut self, path: &Path, opts: &SqliteOptions) -> Option<Version> {
        if !self.tried {
            self.tried = true;
            self.header = schema::open_reader(path, opts)
                .ok()
                .and_then(WalHeader::open);
        }
        let now = self.header.as_ref()?.version();
        if now != self.version {
            self.kept.clear();
            self.bytes = 0;
            self.version = now;
        }
        now
    }
}

impl Summaries {
    /// The summary of `task_id` if it is kept at the file's current version.
    pub(crate) fn lookup(&self, path: &Path, opts: &SqliteOptions, task_id: &str) -> Lookup {
        let mut s = self.state.lock();
        let now = s.current(path, opts);
        match s.kept.get(task_id) {
            Some(r) if now.is_some() => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Lookup::Kept(r.clone())
            }
            _ => Lookup::Read(now),
        }
    }

    /// Keep `rec`, read after the lookup that gave `read_at`, if the file is still at that
    /// version: nothing was committed between the two readings of the header, so `rec` is
    /// the task at that version.
    pub(crate) fn keep(
        &self,
        path: &Path,
        opts: &SqliteOptions,
        read_at: Version,
        rec: &TaskRecord,
    ) {
        let mut s = self.state.lock();
        if s.current(path, opts) != Some(read_at) || s.kept.len() >= MAX_ENTRIES {
            return;
        }
        let size = text_bytes(rec);
        if s.bytes + size > MAX_BYTES {
            return;
        }
        if s.kept
            .insert(rec.task.task_id.clone(), rec.clone())
            .is_none()
        {
            s.bytes += size;
        }
    }

    /// Forget everything and close the header's connection (it holds SQLite's handle on
    /// the WAL index, which a reopened writer must not inherit); it is opened again on
    /// the next lookup.
    pub(crate) fn reset(&self) {
        *self.state.lock() = State::default();
    }

    /// How many summaries are kept, and their bytes.
    #[cfg(test)]
    pub(crate) fn len(&self) -> (usize, usize) {
        let s = self.state.lock();
        (s.kept.len(), s.bytes)
    }
}

/// The text a kept summary holds (its key counted twice: the map's and the record's).
fn text_bytes(r: &TaskRecord) -> usize {
    let t = &r.task;
    2 * t.task_id.len()
        + t.owner.as_ref().map_or(0, String::len)
        + t.quota_key.len()
        + t.method.len()
        + t.request.len()
        + t.executor.as_ref().map_or(0, String::len)
        + t.status_message.as_ref().map_or(0, String::len)
        + r.outcome.as_ref().map_or(0, |o| o.json.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteStore;

    fn record(id: &str, message_bytes: usize) -> TaskRecord {
        let mut t = mcp_tasks_testkit::conformance::new_task(None, Some("k"));
        t.task_id = id.to_owned();
        t.request.clear();
        t.status_message = Some("m".repeat(message_bytes));
        t.into_record(1)
    }

    /// Past [`MAX_ENTRIES`] summaries or [`MAX_BYTES`] of their text, no more are kept; a
    /// commit forgets them all, and a reset closes the header.
    #[test]
    fn kept_summaries_stay_within_their_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.db");
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        let opts = SqliteOptions::default();
        let s = Summaries::default();
        let Lookup::Read(Some(v)) = s.lookup(&path, &opts, "x") else {
            panic!("no version of a fresh file");
        };
        for i in 0..MAX_ENTRIES + 10 {
            s.keep(&path, &opts, v, &record(&format!("t{i}"), 0));
        }
        assert_eq!(s.len().0, MAX_ENTRIES);
        assert!(matches!(s.lookup(&path, &opts, "t0"), Lookup::Kept(_)));
        assert!(matches!(
            s.lookup(&path, &opts, "t4100"),
            Lookup::Read(Some(_))
        ));

        s.reset();
        let Lookup::Read(Some(v)) = s.lookup(&path, &opts, "x") else {
            panic!("no version after a reset");
        };
        for i in 0..10 {
            s.keep(&path, &opts, v, &record(&format!("big{i}"), 1024 * 1024));
        }
        let (n, bytes) = s.len();
        assert_eq!(n, 3, "4 MiB hold three summaries of 1 MiB");
        assert!(bytes <= MAX_BYTES, "{bytes}");

        // A commit: everything is forgotten at the next lookup, and nothing read before it
        // is kept.
        let w = schema::open_writer(&path, &opts).unwrap();
        w.execute_batch("CREATE TABLE scratch (x)").unwrap();
        assert!(matches!(
            s.lookup(&path, &opts, "big0"),
            Lookup::Read(Some(_))
        ));
        assert_eq!(s.len(), (0, 0));
        s.keep(&path, &opts, v, &record("late", 0));
        assert_eq!(s.len().0, 0, "kept at a version that is not the file's");
        drop(store);
    }
}
