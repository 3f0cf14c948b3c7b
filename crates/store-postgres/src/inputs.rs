//! The mailbox of running tasks' requests to their requestors ([`TaskInputs`]), shared by
//! the replicas on one database (`docs/adr/0006-replicas.md`, "input_required across
//! replicas").
//!
//! One row per request a task waits on, written by the replica running the task before
//! the task moves to `input_required`, answered (`response`) by whichever replica the
//! answer reaches, and deleted by the running replica when it takes the answer or gives
//! the request up; the foreign key deletes a task's rows with the task. A row trigger
//! notifies every insert and answer on the tasks' channel with the task id, so the
//! store's change signal of the task ([`mcp_tasks_core::TaskStore::subscribe`]) wakes the
//! waiters of every replica: the running one takes an answer, a `tasks/result` elsewhere
//! relays a new request. Rows per task are bounded by the engine's
//! `max_pending_inputs_per_task` (a request is written only once it is queued within it).
//! Each call is one statement, one round trip.

use async_trait::async_trait;
use mcp_tasks_core::{InputRequest, StoreError, TaskInputs};
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

const PUT: &str = "INSERT INTO task_inputs (key, task_id, method, params, answerer) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING";
const REQUESTS: &str = "SELECT key, method, params, answerer FROM task_inputs \
     WHERE task_id = $1 AND response IS NULL ORDER BY seq";
const ANSWER: &str = "UPDATE task_inputs SET response = $2 \
     WHERE key = $1 AND response IS NULL AND ($3::text IS NULL OR answerer = $3)";
const TAKE: &str =
    "DELETE FROM task_inputs WHERE key = $1 AND response IS NOT NULL RETURNING response";
const REMOVE: &str = "DELETE FROM task_inputs WHERE key = $1";

/// The mailbox of a [`crate::PgStore`], on its pool.
pub(crate) struct PgInputs {
    pub(crate) db: crate::db::Db,
}

fn json_of(bytes: &[u8]) -> Result<Value, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Corrupt(format!("a task_inputs row is not JSON: {e}")))
}

fn bytes_of(v: &Value, what: &str) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(v).map_err(|e| StoreError::Corrupt(format!("unserialisable {what}: {e}")))
}

#[async_trait]
impl TaskInputs for PgInputs {
    async fn put_request(&self, task_id: &str, request: &InputRequest) -> Result<(), StoreError> {
        let params = bytes_of(&request.params, "params")?;
        let (c, st) = self.db.prepared(PUT).await?;
        let args: [&(dyn ToSql + Sync); 5] = [
            &request.key,
            &task_id,
            &request.method,
            &params,
            &request.answerer,
        ];
        match c.execute(&st, &args).await {
            Ok(_) => Ok(()),
            // The task is gone (its TTL ran out): nobody will ask for the request.
            Err(e) if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => Ok(()),
            Err(e) => Err(self.db.err(&e)),
        }
    }

    async fn requests(&self, task_id: &str) -> Result<Vec<InputRequest>, StoreError> {
        self.db
            .query(REQUESTS, &[&task_id])
            .await?
            .iter()
            .map(|r| {
                Ok(InputRequest {
                    key: r.get(0),
                    method: r.get(1),
                    params: json_of(r.get::<_, &[u8]>(2))?,
                    answerer: r.get(3),
                })
            })
            .collect()
    }

    async fn answer(
        &self,
        key: &str,
        answerer: Option<&str>,
        response: &Value,
    ) -> Result<bool, StoreError> {
        let response = bytes_of(response, "answer")?;
        let (c, st) = self.db.prepared(ANSWER).await?;
        let n = c
            .execute(&st, &[&key, &response, &answerer])
            .await
            .map_err(|e| self.db.err(&e))?;
        Ok(n == 1)
    }

    async fn take_answer(&self, key: &str) -> Result<Option<Value>, StoreError> {
        self.db
            .query(TAKE, &[&key])
            .await?
            .first()
            .map(|r| json_of(r.get::<_, &[u8]>(0)))
            .transpose()
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.db.query(REMOVE, &[&key]).await.map(|_| ())
    }
}
