//! The PostgreSQL store passes the store conformance suite (one test per check), and
//! survives a reopen.

use std::sync::Arc;

use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::{self, Store};

use crate::common::{TestDb, factory};

/// Each store on a schema of its own in the test's database.
mod postgres {
    use super::*;

    mcp_tasks_testkit::conformance_tests! {
        make: factory(""),
        leases: Tracked,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store_survives_reopen() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    conformance::durable_reopen(|| {
        let url = url.clone();
        async move {
            let store = PgStore::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("open {url}: {e}"));
            Arc::new(store) as Store
        }
    })
    .await;
}
