//! The schema and its migration at open (the migrations themselves are in
//! [`migrations`](crate::migrations)).
//!
//! The store's tables live in one PostgreSQL schema (`mcp_tasks` by default). Its version
//! is the largest `version` in `schema_migrations`. Migrations run at open in one
//! transaction, under a transaction-scoped advisory lock, so that several replicas starting
//! at once migrate it once. A schema written by a newer version is refused, naming the
//! database.

use mcp_tasks_core::{StoreError, schema};

use crate::db::map_err;
use crate::migrations::MIGRATIONS;
use crate::options::PgConfig;

/// The schema version this build writes; a schema with a higher one is refused.
pub const SCHEMA_VERSION: i32 = 14;

/// The advisory lock (one `bigint` key) held while a schema is checked and migrated.
const MIGRATION_LOCK: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('mcp-tasks migrate ' || $1, 0))";

/// Check the schema, migrate it to [`SCHEMA_VERSION`] (creating it when missing), and
/// return the cursor key (created on first open), in one transaction under the migration
/// lock.
pub(crate) async fn prepare(
    client: &mut tokio_postgres::Client,
    cfg: &PgConfig,
) -> Result<[u8; 32], StoreError> {
    let target = cfg.target();
    let schema = &cfg.options.schema;
    let err = |e: tokio_postgres::Error| map_err(&target, &e);
    let tx = client.transaction().await.map_err(err)?;
    tx.execute(MIGRATION_LOCK, &[schema]).await.map_err(err)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema}; SET LOCAL search_path = {schema}"
    ))
    .await
    .map_err(err)?;
    let has_versions: bool = tx
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await
        .map_err(err)?
        .get(0);
    let mut version: i32 = if has_versions {
        tx.query_one(
            "SELECT coalesce(max(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map_err(err)?
        .get(0)
    } else {
        let others: i64 = tx
            .query_one(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'p', 'f')",
                &[schema],
            )
            .await
            .map_err(err)?
            .get(0);
        if others > 0 {
            return Err(StoreError::Corrupt(format!(
                "{target}: the schema {schema} is not an mcp-tasks store (it holds {others} \
                 other tables); name another one with ?schema=NAME"
            )));
        }
        tx.batch_execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, \
             applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .map_err(err)?;
        0
    };
    let what = format!("{target}: the schema {schema}");
    schema::refuse_newer(&what, version.into(), SCHEMA_VERSION.into())?;
    while version < SCHEMA_VERSION {
        let sql = schema::migration(MIGRATIONS, version.into(), &target)?;
        tx.batch_execute(sql).await.map_err(err)?;
        version += 1;
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&version],
        )
        .await
        .map_err(err)?;
        tracing::info!(store = %cfg.description(), version, "task store schema migrated");
    }
    let fresh = schema::new_cursor_key()?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('cursor_key', $1) ON CONFLICT (key) DO NOTHING",
        &[&&fresh[..]],
    )
    .await
    .map_err(err)?;
    let key: Vec<u8> = tx
        .query_one("SELECT value FROM meta WHERE key = 'cursor_key'", &[])
        .await
        .map_err(err)?
        .get(0);
    tx.commit().await.map_err(err)?;
    key.try_into().map_err(|k: Vec<u8>| {
        StoreError::Corrupt(format!(
            "{target}: the stored cursor key has {} bytes, not 32",
            k.len()
        ))
    })
}
