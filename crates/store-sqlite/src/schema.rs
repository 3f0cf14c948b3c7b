//! Connections, the schema and its migrations, and the mapping of SQLite errors.
//!
//! The schema version is `PRAGMA user_version`; `PRAGMA application_id` marks the file as
//! ours. Migrations run at open, in one `BEGIN IMMEDIATE` transaction (so two processes
//! opening a fresh file at once migrate it once). A file written by a newer version is
//! refused, naming the file.

use std::path::Path;

use mcp_tasks_core::{StoreError, schema};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::migrations::MIGRATIONS;
use crate::options::SqliteOptions;

/// `PRAGMA application_id` of an mcp-tasks database: "MCPT".
pub(crate) const APPLICATION_ID: i64 = 0x4D43_5054;

/// The schema version this build writes (`PRAGMA user_version`); a file with a higher
/// one is refused.
pub const SCHEMA_VERSION: i64 = 7;

/// What went wrong, in words an operator can act on, naming the file.
pub(crate) fn map_err(path: &Path, e: &rusqlite::Error) -> StoreError {
    let p = path.display();
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            ErrorCode::DiskFull => StoreError::Unavailable(format!(
                "{p}: the disk is full or the database reached its size limit; nothing was \
                 written ({e})"
            )),
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => StoreError::Unavailable(
                format!("{p}: the database is locked by another connection or process ({e})"),
            ),
            ErrorCode::ReadOnly => StoreError::Unavailable(format!(
                "{p}: the database file (or its directory) is read-only ({e})"
            )),
            ErrorCode::CannotOpen | ErrorCode::PermissionDenied => {
                StoreError::Unavailable(format!("{p}: cannot open the database file ({e})"))
            }
            ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => StoreError::Corrupt(format!(
                "{p}: the file is not a readable SQLite database ({e})"
            )),
            _ => StoreError::Unavailable(format!("{p}: {e}")),
        },
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..) => {
            StoreError::Corrupt(format!("{p}: a stored value cannot be read back ({e})"))
        }
        _ => StoreError::Unavailable(format!("{p}: {e}")),
    }
}

/// Whether the error means the connection should be reopened before the next use (its
/// file became read-only, or an I/O error left it in an unknown state).
pub(crate) fn needs_reopen(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::SystemIoFailure | ErrorCode::CannotOpen)
    )
}

fn configure(conn: &Connection, opts: &SqliteOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(opts.busy_timeout)?;
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF;",
        opts.synchronous.pragma()
    ))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(())
}

/// A connection for the writer thread (read-write, or read-only when the file is
/// write-protected: its writes then fail, and it is reopened before the next batch).
pub(crate) fn open_writer(path: &Path, opts: &SqliteOptions) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| map_err(path, &e))?;
    configure(&conn, opts).map_err(|e| map_err(path, &e))?;
    let pages = opts.max_pages.unwrap_or(u64::from(u32::MAX - 1));
    conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
        .map_err(|e| map_err(path, &e))?;
    Ok(conn)
}

/// A connection for `get`/`list`.
pub(crate) fn open_reader(path: &Path, opts: &SqliteOptions) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| map_err(path, &e))?;
    conn.busy_timeout(opts.busy_timeout)
        .map_err(|e| map_err(path, &e))?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

fn pragma_i64(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
}

/// Check what the file is, switch it to WAL, migrate it to [`SCHEMA_VERSION`], and return
/// its cursor key (created on first open).
pub(crate) fn prepare(conn: &Connection, path: &Path) -> Result<[u8; 32], StoreError> {
    let p = path.display();
    let err = |e: rusqlite::Error| map_err(path, &e);
    // The first read of the file: refuses random bytes with SQLITE_NOTADB. One read
    // transaction, so that the three values come from one snapshot (another process may be
    // creating our schema in this fresh file right now), and before anything is written:
    // a file that is not ours is left untouched.
    let (app, version, objects) = read_header(conn).map_err(err)?;
    if app != 0 && app != APPLICATION_ID {
        return Err(StoreError::Corrupt(format!(
            "{p}: not an mcp-tasks database (application_id {app:#x})"
        )));
    }
    schema::refuse_newer(&format!("{p}: the database"), version, SCHEMA_VERSION)?;
    if app == 0 && version == 0 && objects > 0 {
        return Err(StoreError::Corrupt(format!(
            "{p}: not an mcp-tasks database (it holds {objects} other schema objects)"
        )));
    }
    let mode = switch_to_wal(conn).map_err(err)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Unavailable(format!(
            "{p}: cannot switch the database to WAL mode (it stays in {mode} mode)"
        )));
    }
    if version < SCHEMA_VERSION || !has_key(conn).map_err(err)? {
        migrate(conn, path)?;
    }
    let key: Vec<u8> = conn
        .query_row("SELECT value FROM meta WHERE key = 'cursor_key'", [], |r| {
            r.get(0)
        })
        .map_err(err)?;
    key.try_into().map_err(|k: Vec<u8>| {
        StoreError::Corrupt(format!(
            "{p}: the stored cursor key has {} bytes, not 32",
            k.len()
        ))
    })
}

/// `PRAGMA journal_mode = WAL`, retried while another connection switches the same fresh
/// file at the same moment.
///
/// Both hold a shared lock and want an exclusive one: SQLite sees the deadlock and answers
/// one of them `SQLITE_BUSY` at once, without calling the busy handler ("If SQLite
/// determines that invoking the busy handler could result in a deadlock, it will go ahead
/// and return SQLITE_BUSY"). The other finishes within milliseconds; 2 s bounds the wait.
fn switch_to_wal(conn: &Connection) -> rusqlite::Result<String> {
    let mut tries = 0;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

fn read_header(conn: &Connection) -> rusqlite::Result<(i64, i64, i64)> {
    conn.execute_batch("BEGIN DEFERRED")?;
    let read = || -> rusqlite::Result<(i64, i64, i64)> {
        let app = pragma_i64(conn, "application_id")?;
        let version = pragma_i64(conn, "user_version")?;
        let objects = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
        Ok((app, version, objects))
    };
    let r = read();
    let _ = conn.execute_batch(if r.is_ok() { "COMMIT" } else { "ROLLBACK" });
    r
}

fn has_key(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM meta WHERE key = 'cursor_key'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n == 1)
}

fn migrate(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e: rusqlite::Error| map_err(path, &e);
    conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
    let run = || -> Result<(), StoreError> {
        // Re-read inside the write transaction: another process may have migrated meanwhile.
        let mut version = pragma_i64(conn, "user_version").map_err(err)?;
        let p = path.display();
        schema::refuse_newer(&format!("{p}: the database"), version, SCHEMA_VERSION)?;
        if version == 0 {
            // Checked here, in the write transaction: another process may be creating our
            // schema on this fresh file right now.
            let tables: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
                .map_err(err)?;
            if tables > 0 {
                return Err(StoreError::Corrupt(format!(
                    "{}: not an mcp-tasks database (it holds {tables} other schema objects)",
                    path.display()
                )));
            }
        }
        while version < SCHEMA_VERSION {
            let sql = schema::migration(MIGRATIONS, version, &p.to_string())?;
            conn.execute_batch(sql).map_err(err)?;
            version += 1;
            conn.execute_batch(&format!(
                "PRAGMA user_version = {version}; PRAGMA application_id = {APPLICATION_ID};"
            ))
            .map_err(err)?;
            tracing::info!(path = %path.display(), version, "task store schema migrated");
        }
        let key = schema::new_cursor_key()?;
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('cursor_key', ?1)",
            [&key[..]],
        )
        .map_err(err)?;
        Ok(())
    };
    match run() {
        Ok(()) => conn.execute_batch("COMMIT").map_err(err),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_proto::mcp::TaskStatus;

    /// A file written at schema `version` (its migrations, a cursor key, then `rows`),
    /// opened again: migrated to [`SCHEMA_VERSION`]. The connection, and the directory
    /// that holds the file.
    fn migrated_from(version: usize, rows: &str) -> (Connection, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("v{version}.db"));
        let conn = open_writer(&path, &SqliteOptions::default()).unwrap();
        for m in &MIGRATIONS[..version] {
            conn.execute_batch(m).unwrap();
        }
        conn.execute_batch(&format!(
            "PRAGMA user_version = {version}; PRAGMA application_id = {APPLICATION_ID};
             INSERT INTO meta (key, value) VALUES ('cursor_key', zeroblob(32));
             {rows}"
        ))
        .unwrap();
        prepare(&conn, &path).unwrap();
        assert_eq!(pragma_i64(&conn, "user_version").unwrap(), SCHEMA_VERSION);
        (conn, dir)
    }

    /// A version-1 file (tasks counted by owner) migrates to quota keys: a task bound to a
    /// principal counts against that principal, one bound to no one against the local
    /// peer, and `quota_usage` holds what the tasks already store.
    #[test]
    fn version_1_tasks_get_quota_keys_and_their_usage() {
        let (conn, _dir) = migrated_from(
            1,
            "INSERT INTO tasks (task_id, owner, status, created_ms, last_updated_ms, method,
                 request, outcome_kind, outcome)
             VALUES ('a', 'alice', 'completed', 1, 1, 'tools/call', '{\"é\":1}', 'result',
                     CAST('{}' AS BLOB)),
                    ('b', NULL, 'working', 1, 1, 'tools/call', '12345', NULL, NULL),
                    ('c', 'alice', 'working', 1, 1, 'tools/call', '1', NULL, NULL);",
        );
        let rows = |sql: &str| -> Vec<(String, String, i64)> {
            conn.prepare(sql)
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            rows("SELECT task_id, quota_key, bytes FROM tasks ORDER BY task_id"),
            vec![
                ("a".into(), "principal:alice".into(), 8 + 2),
                ("b".into(), "local".into(), 5),
                ("c".into(), "principal:alice".into(), 1),
            ]
        );
        assert_eq!(
            rows(
                "SELECT quota_key, CAST(tasks AS TEXT), bytes FROM quota_usage ORDER BY quota_key"
            ),
            vec![
                (String::new(), "3".into(), 16),
                ("local".into(), "1".into(), 5),
                ("principal:alice".into(), "2".into(), 11),
            ]
        );
    }

    /// A version-2 file gets the status history: each stored task one entry, its current
    /// status at its last update; later changes are appended by the store's statements.
    #[test]
    fn version_2_tasks_get_their_current_status_as_history() {
        let (conn, _dir) = migrated_from(
            2,
            "INSERT INTO tasks (task_id, owner, status, status_message, created_ms,
                 last_updated_ms, method, request, quota_key)
             VALUES ('a', 'alice', 'input_required', 'asking', 1, 5, 'tools/call', '{}',
                     'principal:alice');",
        );
        let history = crate::ops::history(&conn, "a").unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].status_message.as_deref(), Some("asking"));
        assert_eq!(history[0].at_ms, 5);
        let t = mcp_tasks_core::Transition {
            task_id: "a".into(),
            to: TaskStatus::Working,
            status_message: None,
            outcome: None,
            at_ms: 9,
        };
        crate::ops::transition(&conn, &mut crate::usage::Usage::default(), &t).unwrap();
        let history = crate::ops::history(&conn, "a").unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(
            (history[1].status, history[1].at_ms),
            (TaskStatus::Working, 9)
        );
        conn.execute("DELETE FROM tasks WHERE task_id = 'a'", [])
            .unwrap();
        assert!(crate::ops::history(&conn, "a").unwrap().is_empty());
    }

    /// A version-4 file (history rows and quota counts written by triggers) moves each
    /// task's history rows into its own row, in order, and keeps its quota counts; no
    /// trigger and no history table is left.
    #[test]
    fn version_4_history_rows_move_into_their_task_and_the_triggers_go() {
        let (conn, _dir) = migrated_from(
            4,
            "INSERT INTO tasks (task_id, owner, status, status_message, created_ms,
                 last_updated_ms, method, request, quota_key, bytes)
             VALUES ('a', 'alice', 'working', 'start', 1, 1, 'tools/call', '{}',
                     'principal:alice', 2),
                    ('b', NULL, 'working', NULL, 1, 1, 'tools/call', '1', 'local', 1);
             UPDATE tasks SET status = 'input_required', last_updated_ms = 7,
                 status_message = 'say \"hi\"' || char(10) || 'twice' WHERE task_id = 'a';",
        );
        let a = crate::ops::history(&conn, "a").unwrap();
        assert_eq!(
            a.iter()
                .map(|e| (e.status, e.status_message.as_deref(), e.at_ms))
                .collect::<Vec<_>>(),
            vec![
                (TaskStatus::Working, Some("start"), 1),
                (TaskStatus::InputRequired, Some("say \"hi\"\ntwice"), 7),
            ]
        );
        assert_eq!(crate::ops::history(&conn, "b").unwrap().len(), 1);
        let n: i64 = conn
            .query_row("SELECT history_n FROM tasks WHERE task_id = 'a'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 2);
        let left: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' OR name = 'task_history'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0);
        let usage: Vec<(String, i64, i64)> = conn
            .prepare("SELECT quota_key, tasks, bytes FROM quota_usage ORDER BY quota_key")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            usage,
            vec![
                (String::new(), 2, 3),
                ("local".into(), 1, 1),
                ("principal:alice".into(), 1, 2),
            ]
        );
    }

    /// A version-5 file gets the `status` CHECK as comparisons: every row, index and the
    /// `seq` high-water mark survive the rebuild, the same statuses are accepted and others
    /// refused, and neither a task's `INSERT` nor its status `UPDATE` builds an ephemeral
    /// table any more.
    #[test]
    fn version_5_keeps_every_row_and_writes_without_an_ephemeral_table() {
        let (conn, _dir) = migrated_from(
            5,
            "INSERT INTO tasks (task_id, owner, status, status_message, created_ms,
                 last_updated_ms, method, request, quota_key, bytes, history, history_n,
                 outcome_kind, outcome)
             VALUES ('a', 'alice', 'completed', 'done', 1, 5, 'tools/call', '{}',
                     'principal:alice', 4, 'h1' || char(10), 1, 'result', CAST('{}' AS BLOB)),
                    ('b', NULL, 'working', NULL, 2, 2, 'tools/call', '1', 'local', 1, '', 0, NULL,
                     NULL),
                    ('c', NULL, 'working', NULL, 3, 3, 'tools/call', '1', 'local', 1, '', 0, NULL,
                     NULL);
             DELETE FROM tasks WHERE task_id = 'c';",
        );
        type Row = (i64, String, String, i64, String, Option<Vec<u8>>);
        let rows: Vec<Row> = conn
            .prepare("SELECT seq, task_id, status, bytes, history, outcome FROM tasks ORDER BY seq")
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (
                    1,
                    "a".into(),
                    "completed".into(),
                    4,
                    "h1\n".into(),
                    Some(b"{}".to_vec())
                ),
                (2, "b".into(), "working".into(), 1, String::new(), None),
            ]
        );
        let mut indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'tasks'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        indexes.sort();
        assert_eq!(
            indexes,
            [
                "sqlite_autoindex_tasks_1",
                "tasks_active_quota",
                "tasks_expires",
                "tasks_owner_seq",
            ]
        );
        // The deleted task's `seq` (3) is never drawn again.
        conn.execute(
            "INSERT INTO tasks (task_id, status, created_ms, last_updated_ms, method, request)
             VALUES ('d', 'input_required', 1, 1, 'tools/call', '{}')",
            [],
        )
        .unwrap();
        let seq: i64 = conn
            .query_row("SELECT seq FROM tasks WHERE task_id = 'd'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(seq, 4);
        for status in ["failed", "cancelled"] {
            conn.execute("UPDATE tasks SET status = ?1 WHERE task_id = 'd'", [status])
                .unwrap();
        }
        let refused = conn
            .execute("UPDATE tasks SET status = 'paused' WHERE task_id = 'd'", [])
            .unwrap_err();
        assert_eq!(
            refused.sqlite_error_code(),
            Some(ErrorCode::ConstraintViolation)
        );
        let ephemeral = |sql: &str| -> usize {
            conn.prepare(&format!("EXPLAIN {sql}"))
                .unwrap()
                .query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .filter(|op| op.as_deref() == Ok("OpenEphemeral"))
                .count()
        };
        assert_eq!(
            ephemeral(
                "INSERT INTO tasks (task_id, status, created_ms, last_updated_ms, method, request)
                 VALUES ('e', 'working', 1, 1, 'tools/call', '{}')"
            ),
            0
        );
        assert_eq!(
            ephemeral("UPDATE tasks SET status = 'completed' WHERE task_id = 'b'"),
            0
        );
    }

    /// A version-3 file (one with the status index) comes out with its terminal tasks
    /// counted in `status_counts`, its active tasks per quota key in `quota_usage`, and
    /// without the status index; the count by status reads the partial index of active
    /// tasks and that table, never every row.
    #[test]
    fn version_3_comes_out_with_its_terminal_tasks_counted_and_no_status_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.db");
        let conn = open_writer(&path, &SqliteOptions::default()).unwrap();
        for m in &MIGRATIONS[..3] {
            conn.execute_batch(m).unwrap();
        }
        conn.execute_batch(&format!(
            "PRAGMA user_version = 3; PRAGMA application_id = {APPLICATION_ID};
             INSERT INTO meta (key, value) VALUES ('cursor_key', zeroblob(32));
             INSERT INTO tasks (task_id, owner, status, created_ms, last_updated_ms, method,
                 request, quota_key)
             VALUES ('a', 'alice', 'completed', 1, 5, 'tools/call', '{{}}', 'principal:alice'),
                    ('b', 'alice', 'working', 1, 5, 'tools/call', '{{}}', 'principal:alice'),
                    ('c', 'alice', 'cancelled', 1, 5, 'tools/call', '{{}}', 'principal:alice'),
                    ('d', 'alice', 'completed', 1, 5, 'tools/call', '{{}}', 'principal:alice');"
        ))
        .unwrap();
        prepare(&conn, &path).unwrap();
        assert_eq!(pragma_i64(&conn, "user_version").unwrap(), SCHEMA_VERSION);
        // Two columns of every row of a query, as text and number.
        let pairs = |sql: &str| -> Vec<(String, i64)> {
            conn.prepare(sql)
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            pairs("SELECT status, tasks FROM status_counts ORDER BY status"),
            [
                ("cancelled".to_owned(), 1),
                ("completed".to_owned(), 2),
                ("failed".to_owned(), 0)
            ]
        );
        let status_index: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'tasks_status'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(status_index, 0);
        assert_eq!(
            pairs("SELECT quota_key, active FROM quota_usage ORDER BY quota_key"),
            [(String::new(), 0), ("principal:alice".to_owned(), 1)]
        );
        let mut counts = crate::ops::count_by_status(&conn).unwrap();
        counts.sort_by_key(|(s, _)| s.as_str());
        assert_eq!(
            counts,
            vec![
                (TaskStatus::Cancelled, 1),
                (TaskStatus::Completed, 2),
                (TaskStatus::Working, 1)
            ]
        );
    }
}
