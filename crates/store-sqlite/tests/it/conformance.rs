//! The SQLite store passes the store conformance suite, and survives a reopen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use mcp_tasks_testkit::conformance::{self, Leases, Store};

fn factory(
    dir: &tempfile::TempDir,
    sync: Synchronous,
) -> impl Fn() -> std::future::Ready<Store> + '_ {
    let n = AtomicU64::new(0);
    move || {
        let path = dir
            .path()
            .join(format!("store-{}.db", n.fetch_add(1, Ordering::Relaxed)));
        let opts = SqliteOptions {
            synchronous: sync,
            ..SqliteOptions::default()
        };
        let store = SqliteStore::open(&path, opts).expect("open the store");
        std::future::ready(Arc::new(store) as Store)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    conformance::run_all(factory(&dir, Synchronous::Full), Leases::Tracked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_conforms_with_synchronous_normal() {
    let dir = tempfile::tempdir().expect("tempdir");
    conformance::run_all(factory(&dir, Synchronous::Normal), Leases::Tracked).await;
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
