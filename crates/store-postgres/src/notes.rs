//! Notes kept beside tasks ([`TaskNotes`]): a small blob per task that an extension writes
//! while the task runs (a gateway: which upstream task backs it, and in which upstream
//! session), so that another replica on the same database reads it once this one has
//! died. One row per task in `task_notes`, deleted with the task (the foreign key
//! cascades: a TTL sweep takes the note too). Each call is one statement, one round trip.

use async_trait::async_trait;
use mcp_tasks_core::{StoreError, TaskNotes};
use tokio_postgres::error::SqlState;

use crate::db::Db;

const PUT: &str = "INSERT INTO task_notes (task_id, note) VALUES ($1, $2) \
     ON CONFLICT (task_id) DO UPDATE SET note = excluded.note";
const GET: &str = "SELECT note FROM task_notes WHERE task_id = $1";
const REMOVE: &str = "DELETE FROM task_notes WHERE task_id = $1";

/// The notes of a [`crate::PgStore`], on its pool.
pub(crate) struct PgNotes {
    pub(crate) db: Db,
}

#[async_trait]
impl TaskNotes for PgNotes {
    async fn put_note(&self, task_id: &str, note: &[u8]) -> Result<(), StoreError> {
        let (c, st) = self.db.prepared(PUT).await?;
        match c.execute(&st, &[&task_id, &note]).await {
            Ok(_) => Ok(()),
            // The task is gone (its TTL ran out): nothing to note.
            Err(e) if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => Ok(()),
            Err(e) => Err(self.db.err(&e)),
        }
    }

    async fn note(&self, task_id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .db
            .query(GET, &[&task_id])
            .await?
            .first()
            .map(|r| r.get::<_, Vec<u8>>(0)))
    }

    async fn remove_note(&self, task_id: &str) -> Result<(), StoreError> {
        self.db.query(REMOVE, &[&task_id]).await.map(|_| ())
    }
}
