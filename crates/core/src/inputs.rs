//! The mailbox of a task's requests to its requestor, shared between the processes of one
//! store (several replicas on PostgreSQL): see `docs/adr/0006-replicas.md`, "input_required
//! across replicas".
//!
//! The process running a task writes each request the task waits on ([`InputRequest`]);
//! another process serving the task's requestor (a 2026-07-28 `tasks/get`, a 2025-11-25
//! `tasks/result`) reads the unanswered ones and shows or relays them, and writes the
//! answer it receives ([`TaskInputs::answer`]); the running process takes it
//! ([`TaskInputs::take_answer`]) when the store's change signal of the task
//! ([`crate::TaskStore::subscribe`]) wakes it. A store that only one process uses keeps
//! none ([`crate::TaskStore::inputs`] is `None`): the engine's relay in memory is all
//! there is.

use async_trait::async_trait;
use serde_json::Value;

use crate::error::StoreError;

/// One request a running task waits to have answered.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// Its JSON-RPC id (the relay's `mcp-tasks:<taskId>:<n>:<random>`), unique in the
    /// store; the `inputRequests` key in 2026-07-28.
    pub key: String,
    /// The request's method (`elicitation/create`, `sampling/createMessage`, ...).
    pub method: String,
    /// Its params, with the related-task `_meta`.
    pub params: Value,
    /// Who may receive and answer it over a 2025-11-25 `tasks/result`
    /// (`principal:P` or `session:S`); `None`: nobody but the local peer.
    pub answerer: Option<String>,
}

/// The mailbox of a store's running tasks (see the [module](self) documentation). Every
/// change of a task's rows wakes the task's [`crate::TaskStore::subscribe`] receivers in
/// every process sharing the store.
#[async_trait]
pub trait TaskInputs: Send + Sync + 'static {
    /// Write a request of `task_id` (a task that no longer exists takes none, and that
    /// is not an error).
    async fn put_request(&self, task_id: &str, request: &InputRequest) -> Result<(), StoreError>;

    /// The requests of `task_id` not answered yet, oldest first.
    async fn requests(&self, task_id: &str) -> Result<Vec<InputRequest>, StoreError>;

    /// Answer the request `key` with `response` (the engine's encoding of a result or an
    /// error), if it is still unanswered and, when `answerer` is given, belongs to it.
    /// Whether the answer was taken.
    async fn answer(
        &self,
        key: &str,
        answerer: Option<&str>,
        response: &Value,
    ) -> Result<bool, StoreError>;

    /// Take (and forget) the answer to the request `key`, if one was written.
    async fn take_answer(&self, key: &str) -> Result<Option<Value>, StoreError>;

    /// Forget the request `key` (answered in this process, or given up).
    async fn remove(&self, key: &str) -> Result<(), StoreError>;
}
