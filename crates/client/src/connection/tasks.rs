//! The tasks of a server followed on a [`Connection`] ([`ConnectionTasks`]): the
//! requests of the client's task following ([`crate::follow`]) sent on the connection, and
//! the task's questions answered by whoever the program passes them to ([`Answers`]).

use async_trait::async_trait;
use mcp_tasks_proto::{methods, modern};
use serde_json::{Map, Value, json};

use super::Connection;
use crate::ClientError;
use crate::follow::TaskPeer;
use crate::modern::{TaskDetail, TaskDetailExt};

/// Who answers the questions of a server's task (its `inputRequests`).
#[async_trait]
pub trait Answers: Send + Sync {
    /// The answers to `requests` (`inputRequests` entries, by key).
    ///
    /// # Errors
    /// [`ClientError::Unanswered`] for a question that got no answer.
    async fn answer(&self, requests: Map<String, Value>)
    -> Result<Map<String, Value>, ClientError>;
}

/// The tasks of the server on `conn`, followed with [`crate::follow`]: `tasks/get`,
/// `tasks/update` and `tasks/cancel` are the connection's requests
/// ([`Connection::request`]), the questions answered by `answers`.
pub struct ConnectionTasks<'a> {
    /// The connection the requests go on.
    pub conn: &'a Connection,
    /// Who answers the task's questions.
    pub answers: &'a dyn Answers,
}

impl std::fmt::Debug for ConnectionTasks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionTasks")
            .field("conn", self.conn)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TaskPeer for ConnectionTasks<'_> {
    async fn get(&self, task_id: &str) -> Result<TaskDetail, ClientError> {
        let v = self
            .conn
            .request(methods::TASKS_GET, Some(json!({ "taskId": task_id })))
            .await?;
        TaskDetail::parse(&v)
    }

    async fn update(
        &self,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> Result<(), ClientError> {
        let update = crate::modern::update_params(task_id, responses);
        self.conn
            .request(modern::methods::TASKS_UPDATE, Some(update))
            .await
            .map(drop)
    }

    async fn cancel(&self, task_id: &str) -> Result<(), ClientError> {
        self.conn
            .request(methods::TASKS_CANCEL, Some(json!({ "taskId": task_id })))
            .await
            .map(drop)
    }

    async fn answer(
        &self,
        _task_id: &str,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError> {
        self.answers.answer(requests).await
    }
}
