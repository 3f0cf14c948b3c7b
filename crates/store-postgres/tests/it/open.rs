//! Opening: concurrent migrations, a newer schema refused, a foreign schema refused, an
//! unreachable database retried then refused without the password.

use std::time::{Duration, Instant};

use mcp_tasks_core::{StoreError, TaskStore};
use mcp_tasks_store_postgres::{PgStore, SCHEMA_VERSION};
use mcp_tasks_testkit::conformance::new_task;

use crate::common::TestDb;

/// Several replicas starting at once on a fresh database: each opens, the schema is
/// migrated once, and they share the cursor key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_starting_at_once_migrate_once() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let opens: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url).await })
        })
        .collect();
    let mut keys = Vec::new();
    let mut stores = Vec::new();
    for o in opens {
        let store = o.await.expect("open task").expect("every replica opens");
        keys.push(store.cursor_key().await.expect("key"));
        stores.push(store);
    }
    assert!(
        keys.windows(2).all(|w| w[0] == w[1]),
        "one cursor key for all"
    );
    let rows = db
        .client()
        .await
        .query(
            "SELECT version FROM mcp_tasks.schema_migrations ORDER BY version",
            &[],
        )
        .await
        .expect("versions");
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    // What one replica creates, the others read.
    let rec = stores[0]
        .create(new_task(Some("a"), None), &mcp_tasks_core::Limits::NONE)
        .await
        .expect("create");
    assert_eq!(
        stores[3].get(&rec.task.task_id).await.expect("get"),
        Some(rec)
    );
}

/// A schema written by a newer version is refused with a message naming the database and
/// both versions; nothing is changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_refused() {
    let db = TestDb::new().await;
    let url = db.url("schema=newer");
    drop(PgStore::connect(&url).await.expect("first open"));
    let newer = SCHEMA_VERSION + 1;
    db.client()
        .await
        .execute(
            "INSERT INTO newer.schema_migrations (version) VALUES ($1)",
            &[&newer],
        )
        .await
        .expect("pretend a newer version migrated it");
    let e = PgStore::connect(&url)
        .await
        .expect_err("a newer schema must be refused");
    let msg = e.to_string();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
    for part in [
        "newer version of mcp-tasks",
        &format!("schema version {newer}"),
        &format!("up to {SCHEMA_VERSION}"),
        db.name(),
        "127.0.0.1",
        "refusing to open it",
    ] {
        assert!(msg.contains(part), "{msg:?} should contain {part:?}");
    }
}

/// A schema holding tables of something else is not taken over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_schema_is_refused() {
    let db = TestDb::new().await;
    db.client()
        .await
        .batch_execute("CREATE SCHEMA theirs; CREATE TABLE theirs.orders (id int)")
        .await
        .expect("a foreign schema");
    let e = PgStore::connect(&db.url("schema=theirs"))
        .await
        .expect_err("refused");
    assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
    assert!(e.to_string().contains("not an mcp-tasks store"), "{e}");
}

/// A database that cannot be reached is retried for `connect_for`, then refused with a
/// message naming host and database, and never the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_refused_without_the_password() {
    let secret = "Pa55w0rd-never-shown";
    // Port 1: nothing listens there; the connection is refused at once, and retried.
    let url = format!("postgres://someone:{secret}@127.0.0.1:1/tasksdb?connect_for=600ms");
    let started = Instant::now();
    let e = PgStore::connect(&url).await.expect_err("unreachable");
    let waited = started.elapsed();
    let msg = e.to_string();
    assert!(!msg.contains(secret), "the password leaked: {msg}");
    assert!(
        !format!("{e:?}").contains(secret),
        "the password leaked: {e:?}"
    );
    for part in ["127.0.0.1:1", "tasksdb", "cannot connect to PostgreSQL"] {
        assert!(msg.contains(part), "{msg:?} should contain {part:?}");
    }
    assert!(
        waited >= Duration::from_millis(600) && waited < Duration::from_secs(10),
        "retried for about connect_for, not {waited:?}"
    );
    // A bad URL neither.
    let e = PgStore::connect(&format!("postgres://someone:{secret}@127.0.0.1/d?pool=x"))
        .await
        .expect_err("bad URL");
    assert!(!e.to_string().contains(secret), "{e}");
}

/// A database that does not exist is refused at once (retrying would not help), naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_database_is_refused_at_once() {
    let db = TestDb::new().await;
    let url = db
        .url("connect_for=30s")
        .replace(db.name(), "mcp_tasks_no_such_db");
    let started = Instant::now();
    let e = PgStore::connect(&url).await.expect_err("no such database");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not retried for 30 s"
    );
    assert!(e.to_string().contains("mcp_tasks_no_such_db"), "{e}");
}

/// A statement that runs past `statement_timeout` fails its call alone, naming the
/// timeout; the store serves the next calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_times_out_fails_its_call_alone() {
    let db = TestDb::new().await;
    let store = PgStore::connect(&db.url("statement_timeout=300ms&pool=2"))
        .await
        .expect("open");
    let t = store
        .create(new_task(Some("a"), None), &mcp_tasks_core::Limits::NONE)
        .await
        .expect("create");
    // Another session holds the task's row.
    let mut other = db.client().await;
    let tx = other.transaction().await.expect("begin");
    tx.execute(
        "SELECT 1 FROM mcp_tasks.tasks WHERE task_id = $1 FOR UPDATE",
        &[&t.task.task_id],
    )
    .await
    .expect("lock the row");
    let started = Instant::now();
    let e = store
        .transition(mcp_tasks_core::Transition {
            task_id: t.task.task_id.clone(),
            to: mcp_tasks_proto::mcp::TaskStatus::Cancelled,
            status_message: None,
            outcome: None,
            at_ms: 1,
        })
        .await
        .expect_err("the row stays locked past the timeout");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
    assert!(e.to_string().contains("timed out"), "{e}");
    // Other calls go on meanwhile, and this one once the row is free.
    assert_eq!(
        store
            .get(&t.task.task_id)
            .await
            .expect("get")
            .expect("there")
            .status,
        t.status
    );
    tx.rollback().await.expect("rollback");
    store
        .transition(mcp_tasks_core::Transition {
            task_id: t.task.task_id.clone(),
            to: mcp_tasks_proto::mcp::TaskStatus::Cancelled,
            status_message: None,
            outcome: Some(mcp_tasks_core::Outcome::result(&serde_json::json!({}))),
            at_ms: 1,
        })
        .await
        .expect("applied once the row is free");
}
