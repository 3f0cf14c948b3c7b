//! A fresh database per test, dropped at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_tasks_store_postgres::PgStore;
use mcp_tasks_testkit::conformance::Store;

/// The admin URL of the test server.
pub(crate) fn admin_url() -> String {
    std::env::var("MCP_TASKS_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// `url` naming database `db` instead (query options dropped).
fn with_db(url: &str, db: &str) -> String {
    let base = url.split_once('?').map_or(url, |(b, _)| b);
    let (scheme, rest) = base.split_once("://").expect("a URL");
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    format!("{scheme}://{authority}/{db}")
}

async fn admin() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&admin_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL at {}: {e}", admin_url()));
    tokio::spawn(conn);
    client
}

fn random_suffix() -> String {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).expect("random");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A database of one test; dropped (with whatever is still connected) when this is.
pub(crate) struct TestDb {
    name: String,
    next_schema: AtomicU64,
}

impl TestDb {
    /// Create a database with a random name.
    pub(crate) async fn new() -> Arc<Self> {
        let name = format!("mcp_tasks_test_{}_{}", std::process::id(), random_suffix());
        admin()
            .await
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        Arc::new(Self {
            name,
            next_schema: AtomicU64::new(0),
        })
    }

    /// The database's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The store URL of this database, with `params` (`a=b&c=d`) appended.
    /// Two stores (as two processes would be) on this database, connected with the URL
    /// options `params`.
    pub(crate) async fn two_stores(&self, params: &str) -> (Arc<PgStore>, Arc<PgStore>) {
        let url = self.url(params);
        let a = Arc::new(PgStore::connect(&url).await.expect("a"));
        let b = Arc::new(PgStore::connect(&url).await.expect("b"));
        (a, b)
    }

    pub(crate) fn url(&self, params: &str) -> String {
        let base = with_db(&admin_url(), &self.name);
        if params.is_empty() {
            base
        } else {
            format!("{base}?{params}")
        }
    }

    /// A schema name not used yet in this database.
    pub(crate) fn fresh_schema(&self) -> String {
        format!("s{}", self.next_schema.fetch_add(1, Ordering::Relaxed))
    }

    /// A client connected to this database.
    pub(crate) async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url(""), tokio_postgres::NoTls)
            .await
            .expect("connect to the test database");
        tokio::spawn(conn);
        client
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        // A thread of its own with its own runtime: Drop cannot await, and the test's
        // runtime may be shutting down.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async {
                admin()
                    .await
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("warning: could not drop the test database: {e}");
        }
    }
}

/// A store being opened.
pub(crate) type BoxedStore = std::pin::Pin<Box<dyn Future<Output = Store> + Send>>;

/// Stores on fresh schemas of one fresh database (the database of the test, dropped with
/// the factory).
pub(crate) fn factory(params: &'static str) -> impl Fn() -> BoxedStore {
    let cell: Arc<tokio::sync::OnceCell<Arc<TestDb>>> = Arc::new(tokio::sync::OnceCell::new());
    move || {
        let cell = Arc::clone(&cell);
        Box::pin(async move {
            let db = cell.get_or_init(TestDb::new).await;
            let url = db.url(&format!("schema={}&pool=4&{params}", db.fresh_schema()));
            let store = PgStore::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("open {url}: {e}"));
            Arc::new(store) as Store
        })
    }
}

/// The session directories of two stores on `url` (`a`, `b`) and what `b`'s listener
/// hears, once it listens: its first event, the resync it announces itself with, is read
/// here ("before anything is missed").
pub(crate) async fn two_listening_directories(
    url: &str,
) -> (
    mcp_tasks_store_postgres::PgSessions,
    mcp_tasks_store_postgres::PgSessions,
    tokio::sync::mpsc::UnboundedReceiver<mcp_tasks_store_postgres::SessionEnded>,
) {
    let a = PgStore::connect(url).await.expect("store a").sessions();
    let b = PgStore::connect(url).await.expect("store b").sessions();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    b.on_ended(move |e| {
        let _ = tx.send(e);
    });
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .expect("the listener connects")
        .unwrap();
    assert_eq!(first, mcp_tasks_store_postgres::SessionEnded::Resync);
    (a, b, rx)
}
