//! Running statements on a store's connection pool ([`Db`]), and the mapping of
//! PostgreSQL errors to [`StoreError`]s an operator can act on.

use mcp_tasks_core::StoreError;
use tokio_postgres::error::SqlState;

/// What went wrong, in words an operator can act on, naming the database (never the
/// password).
pub(crate) fn map_err(target: &str, e: &tokio_postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error() else {
        if e.is_closed() {
            return StoreError::Unavailable(format!(
                "{target}: the connection to PostgreSQL is closed ({})",
                describe(e)
            ));
        }
        return StoreError::Unavailable(format!("{target}: {}", describe(e)));
    };
    let code = db.code();
    if *code == SqlState::QUERY_CANCELED {
        return StoreError::Unavailable(format!(
            "{target}: the statement timed out or was cancelled ({})",
            db.message()
        ));
    }
    if code.code().starts_with("22") || *code == SqlState::CHECK_VIOLATION {
        return StoreError::Corrupt(format!("{target}: {}", db.message()));
    }
    StoreError::Unavailable(format!(
        "{target}: {} ({}: {})",
        db.message(),
        db.severity(),
        code.code()
    ))
}

/// `e` and its causes ("error connecting to server: Connection refused (os error 111)").
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// Why the pool had no connection to give, without the "task store unavailable" prefix.
pub(crate) fn pool_reason(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => match e.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => describe(e),
        },
        other => other.to_string(),
    }
}

/// A failure of the pool (no connection could be had).
pub(crate) fn map_pool_err(target: &str, e: &deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => map_err(target, e),
        other => {
            StoreError::Unavailable(format!("{target}: no connection to PostgreSQL ({other})"))
        }
    }
}

/// A store's connection pool, and the name of its database that errors give (never the
/// password): what the notes and the shared sessions run their statements on.
#[derive(Clone)]
pub(crate) struct Db {
    pool: deadpool_postgres::Pool,
    target: std::sync::Arc<str>,
}

impl Db {
    pub(crate) fn new(pool: &deadpool_postgres::Pool, target: &str) -> Self {
        Self {
            pool: pool.clone(),
            target: target.into(),
        }
    }

    /// The name of the database that errors give.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// `e` as a [`StoreError`] naming the database.
    pub(crate) fn err(&self, e: &tokio_postgres::Error) -> StoreError {
        map_err(&self.target, e)
    }

    /// A pooled connection.
    pub(crate) async fn conn(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| map_pool_err(&self.target, &e))
    }

    /// A pooled connection with `sql` prepared on it (from its statement cache).
    pub(crate) async fn prepared(
        &self,
        sql: &str,
    ) -> Result<(deadpool_postgres::Object, tokio_postgres::Statement), StoreError> {
        let c = self.conn().await?;
        let st = c.prepare_cached(sql).await.map_err(|e| self.err(&e))?;
        Ok((c, st))
    }

    /// Run one prepared statement; its rows.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let (c, st) = self.prepared(sql).await?;
        c.query(&st, params).await.map_err(|e| self.err(&e))
    }
}

/// Whether a failure to connect at start is worth retrying: the server is unreachable,
/// starting, shutting down or out of connections; not a refused password, a missing
/// database or a missing privilege.
pub(crate) fn retryable(e: &tokio_postgres::Error) -> bool {
    match e.code() {
        None => true,
        Some(c) => {
            !(c.code().starts_with("28")
                || *c == SqlState::INVALID_CATALOG_NAME
                || *c == SqlState::INSUFFICIENT_PRIVILEGE
                || c.code().starts_with("42"))
        }
    }
}
