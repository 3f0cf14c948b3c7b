//! The SQLite store passes the store conformance suite (one test per check, with each
//! `synchronous` setting), and survives a reopen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use mcp_tasks_testkit::conformance::{self, Store};

/// Stores on fresh files of one temporary directory, owned by the factory (a new
/// directory for each test).
fn factory(sync: Synchronous) -> impl Fn() -> std::future::Ready<Store> {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = AtomicU64::new(0);
    move || {
        let path = dir
            .path()
            .join(format!("store-{}.db", n.fetch_add(1, Ordering::Relaxed)));
        let mut opts = SqliteOptions::default();
        opts.synchronous = sync;
        let store = SqliteStore::open(&path, opts).expect("open the store");
        std::future::ready(Arc::new(store) as Store)
    }
}

/// With `synchronous = FULL` (the default).
mod synchronous_full {
    use super::*;

    mcp_tasks_testkit::conformance_tests! {
        make: factory(Synchronous::Full),
        leases: Tracked,
    }
}

/// With `synchronous = NORMAL`.
mod synchronous_normal {
    use super::*;

    mcp_tasks_testkit::conformance_tests! {
        make: factory(Synchronous::Normal),
        leases: Tracked,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nested").join("dir").join("tasks.db");
    conformance::durable_reopen(|| {
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open the store");
        std::future::ready(Arc::new(store) as Store)
    })
    .await;
}
