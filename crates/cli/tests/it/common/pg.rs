//! A PostgreSQL database of its own per test, on the test server (`MCP_TASKS_TEST_PG`,
//! default the local cluster), dropped at the end.

pub fn admin_url() -> String {
    std::env::var("MCP_TASKS_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Run `sql` on the admin database (on a thread of its own: callable from async tests).
pub fn admin(sql: &str) {
    let sql = sql.to_owned();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&admin_url(), tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("cannot reach the test PostgreSQL: {e}"));
            tokio::spawn(conn);
            client
                .batch_execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        });
    })
    .join()
    .unwrap();
}

/// A database of its own (a unique name), dropped at the end.
pub struct PgDb(pub String);

impl PgDb {
    pub fn new(what: &str) -> Self {
        let name = format!(
            "mcp_tasks_{what}_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        admin(&format!("CREATE DATABASE {name}"));
        Self(name)
    }

    /// The store URL of this database through `host:port` (the test server's by
    /// default), with the options `params`.
    pub fn url_at(&self, authority: Option<&str>, params: &str) -> String {
        let base = admin_url();
        let base = base.split_once('?').map_or(base.as_str(), |(b, _)| b);
        let (scheme, rest) = base.split_once("://").unwrap();
        let (userinfo, hostport) = rest
            .split_once('/')
            .map_or(rest, |(a, _)| a)
            .rsplit_once('@')
            .unwrap_or(("postgres", "127.0.0.1:5432"));
        let hostport = authority.unwrap_or(hostport);
        let url = format!("{scheme}://{userinfo}@{hostport}/{}", self.0);
        if params.is_empty() {
            url
        } else {
            format!("{url}?{params}")
        }
    }

    pub fn url(&self, params: &str) -> String {
        self.url_at(None, params)
    }
}

impl Drop for PgDb {
    fn drop(&mut self) {
        admin(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.0));
    }
}
