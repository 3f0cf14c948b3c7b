//! What `SqliteStore::open` refuses, and how it says so: every message names the file.

use crate::common;

use mcp_tasks_core::{Limits, StoreError, TaskStore};
use mcp_tasks_store_sqlite::{SCHEMA_VERSION, SqliteOptions, SqliteStore, Synchronous};

fn open(path: &std::path::Path) -> Result<SqliteStore, StoreError> {
    SqliteStore::open(path, SqliteOptions::default())
}

#[test]
fn random_bytes_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    let mut bytes = vec![0u8; 8192];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::try_from((i * 7919 + 13) % 251).unwrap();
    }
    std::fs::write(&path, &bytes).unwrap();
    match open(&path) {
        Err(StoreError::Corrupt(m)) => {
            assert!(m.contains(&path.display().to_string()), "{m}");
            assert!(m.contains("not a readable SQLite database"), "{m}");
        }
        other => panic!("random bytes must be refused as corrupt, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the file is left untouched"
    );
}

#[test]
fn a_database_of_a_newer_version_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    drop(open(&path).unwrap());
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
            .unwrap();
    }
    match open(&path) {
        Err(StoreError::Unavailable(m)) => {
            assert!(m.contains(&path.display().to_string()), "{m}");
            assert!(m.contains("newer version"), "{m}");
        }
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
}

#[test]
fn a_foreign_sqlite_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foreign.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE tasks (x); INSERT INTO tasks VALUES (1);")
            .unwrap();
    }
    match open(&path) {
        Err(StoreError::Corrupt(m)) => {
            assert!(m.contains(&path.display().to_string()), "{m}");
            assert!(m.contains("not an mcp-tasks database"), "{m}");
        }
        other => panic!("a foreign database must be refused, got {other:?}"),
    }
    let path = dir.path().join("other-app.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA application_id = 42").unwrap();
    }
    assert!(
        matches!(open(&path), Err(StoreError::Corrupt(m)) if m.contains("not an mcp-tasks database"))
    );
}

#[test]
fn a_path_that_cannot_be_created_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let path = file.join("sub").join("tasks.db");
    match open(&path) {
        Err(StoreError::Unavailable(m)) => assert!(m.contains(&path.display().to_string()), "{m}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn open_creates_parent_dirs_sets_wal_and_from_spec_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b").join("tasks.db");
    let spec = format!(
        "sqlite:{}?synchronous=normal&busy_timeout_ms=1234",
        path.display()
    );
    let store = SqliteStore::from_spec(&spec).unwrap();
    assert_eq!(store.path(), path);
    assert_eq!(store.options().synchronous, Synchronous::Normal);
    assert_eq!(store.options().busy_timeout.as_millis(), 1234);
    store
        .create(common::task(None), &Limits::NONE)
        .await
        .unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert!(matches!(
        SqliteStore::from_spec("sqlite:x.db?synchronous=off"),
        Err(StoreError::Unavailable(_))
    ));
}

#[tokio::test]
async fn two_stores_opening_one_fresh_file_agree_on_the_cursor_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| open(&path).unwrap());
        let b = s.spawn(|| open(&path).unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(a.cursor_key().await.unwrap(), b.cursor_key().await.unwrap());
}

#[test]
fn a_refused_foreign_database_is_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foreign.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE notes (x); INSERT INTO notes VALUES (1);")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    assert!(open(&path).is_err());
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the foreign file was modified"
    );
    assert!(!dir.path().join("foreign.db-wal").exists());
}
