//! The version of the file's committed state, read from SQLite's WAL index without a
//! transaction.
//!
//! In WAL mode every commit, by any connection of any process, ends by writing the
//! WAL-index header (<https://www.sqlite.org/walformat.html>, "The WAL-Index Header"):
//! "The WAL-index header contains ... mxFrame ... a change counter ... and the salt
//! values", written twice, the second copy first, and "a reader ... reads both copies of
//! the header and ... if they match, then the header is valid". A commit makes its
//! changes visible to readers precisely by that write, so two equal readings of the
//! header mean that nothing was committed in between. SQLite reads the header itself at
//! the start of every read transaction, but under a shared lock on a read mark: two
//! `fcntl` system calls per transaction, about a tenth of a `tasks/get`'s CPU. Reading
//! the header alone needs no lock; [`crate::summaries`] uses it to tell whether a task
//! read earlier is still what a read now would return.
//!
//! Written by hand: no crate exposes the WAL index. The header is reached through
//! SQLite's own VFS interface (`SQLITE_FCNTL_FILE_POINTER`, then the file's `xShmMap`
//! for region 0, the mapping SQLite itself uses), so its layout is the documented file
//! format, stable since SQLite 3.7.0.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering, fence};

use rusqlite::{Connection, ffi};

/// The 48-byte header (`WalIndexHdr`) as twelve native-endian words.
const WORDS: usize = 12;
/// The size of a region of the WAL index (`WALINDEX_PGSZ`).
const REGION: i32 = 32 * 1024;

/// A version of the committed state: a reading of the WAL-index header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version([u32; WORDS]);

/// The WAL-index header of one file, mapped by a connection of its own that is kept open
/// (the mapping lives as long as it).
pub(crate) struct WalHeader {
    /// Never used after [`WalHeader::open`]: it keeps the mapping alive.
    _conn: Connection,
    hdr: *const u32,
}

// SAFETY: `hdr` points into SQLite's shared mapping of the WAL index, which stays mapped
// while `_conn` is open (they move together); it is only read, with atomic loads. Not
// `Sync`: the header is kept under the summaries' mutex.
#[allow(unsafe_code)]
unsafe impl Send for WalHeader {}

impl WalHeader {
    /// Map the header through `conn` (a connection to the file in WAL mode); `None` when
    /// SQLite has no shared-memory WAL index for it (another VFS, `locking_mode =
    /// EXCLUSIVE`, a file system without shared memory): then nothing can be kept.
    pub(crate) fn open(conn: Connection) -> Option<Self> {
        // A read maps the WAL index (it reads the header itself).
        conn.query_row("PRAGMA schema_version", [], |_| Ok(()))
            .ok()?;
        let hdr = map_region0(&conn)?;
        let h = Self {
            _conn: conn,
            hdr: hdr.cast::<u32>(),
        };
        h.version().map(|_| h)
    }

    /// The current version, or `None` while a commit is writing the header (the two
    /// copies differ) or before the index is initialized.
    pub(crate) fn version(&self) -> Option<Version> {
        let mut first = [0u32; WORDS];
        let mut second = [0u32; WORDS];
        for (i, w) in first.iter_mut().enumerate() {
            *w = self.load(i);
        }
        // "walShmBarrier" between the two copies, as SQLite's reader does.
        fence(Ordering::SeqCst);
        for (i, w) in second.iter_mut().enumerate() {
            *w = self.load(WORDS + i);
        }
        // `isInit` is the byte at offset 12, the first of word 3.
        let initialized = first[3].to_ne_bytes()[0] != 0;
        (first == second && initialized).then_some(Version(first))
    }

    #[allow(unsafe_code)]
    fn load(&self, word: usize) -> u32 {
        // SAFETY: region 0 of the WAL index is 32 KiB, page-aligned, and mapped while
        // `_conn` is open; `word` < 24 stays within the two header copies. Other
        // connections write it concurrently, hence atomic loads.
        unsafe { AtomicU32::from_ptr(self.hdr.add(word).cast_mut()) }.load(Ordering::Acquire)
    }
}

/// Region 0 of the WAL index of `conn`'s main database, as SQLite maps it.
#[allow(unsafe_code)]
fn map_region0(conn: &Connection) -> Option<*mut c_void> {
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: `conn` is open; SQLITE_FCNTL_FILE_POINTER writes the `sqlite3_file*` of the
    // named database into the pointer it is given.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return None;
    }
    // SAFETY: `file` is the open file of `conn`; its methods table is SQLite's, and
    // `xShmMap` exists from version 2 of it on.
    let methods = unsafe { (*file).pMethods };
    if methods.is_null() || unsafe { (*methods).iVersion } < 2 {
        return None;
    }
    let shm_map = unsafe { (*methods).xShmMap }?;
    let mut region: *mut c_void = std::ptr::null_mut();
    // SAFETY: as SQLite's WAL code calls it: region 0 of `REGION` bytes, not extended
    // (it exists once the connection has read in WAL mode; otherwise `region` stays null).
    let rc = unsafe { shm_map(file, 0, REGION, 0, &raw mut region) };
    (rc == ffi::SQLITE_OK && !region.is_null()).then_some(region)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::SqliteOptions;
    use crate::schema;

    fn file() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let w = schema::open_writer(&path, &SqliteOptions::default()).unwrap();
        schema::prepare(&w, &path).unwrap();
        w.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        (dir, path, w)
    }

    /// Every commit of another connection changes the version; reads and a transaction
    /// rolled back do not.
    #[test]
    fn the_version_changes_with_each_commit_and_only_then() {
        let (_dir, path, w) = file();
        let h = WalHeader::open(schema::open_reader(&path, &SqliteOptions::default()).unwrap())
            .expect("a WAL index");
        let v0 = h.version().unwrap();
        let _: i64 = w
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(h.version(), Some(v0), "a read");
        w.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1); ROLLBACK")
            .unwrap();
        assert_eq!(h.version(), Some(v0), "a rollback");
        let mut seen = vec![v0];
        for i in 0..5 {
            w.execute("INSERT INTO t VALUES (?1)", [i]).unwrap();
            let v = h.version().unwrap();
            assert!(!seen.contains(&v), "commit {i} gave a version seen before");
            seen.push(v);
        }
        // A checkpoint that restarts the log changes nothing readers see, but it may
        // change the header: never to a version seen before.
        w.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        w.execute("INSERT INTO t VALUES (9)", []).unwrap();
        let v = h.version().unwrap();
        assert!(!seen.contains(&v), "a commit after a restart of the log");
    }
}
