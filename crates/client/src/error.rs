//! What can go wrong on the requestor side.

use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::{Task, TaskStatus};

/// An error of the client.
///
/// The server's own JSON-RPC errors are kept exactly ([`ClientError::Rpc`]); the error a
/// task *ended with* is told apart from an error of the request that asked for it
/// ([`ClientError::Task`]), so an application never sees a bare "task failed".
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    /// The server answered `method` with this JSON-RPC error.
    #[error("{method}: {error}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error, exactly as the server sent it.
        error: ErrorObject,
    },
    /// The task ended (`failed` or `cancelled`) and its outcome is this JSON-RPC error:
    /// the error the underlying request produced, as `tasks/result` returned it.
    ///
    /// Spec: "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
    /// return that same JSON-RPC error."
    #[error("task {} {}: {error}", task.task_id, task.status)]
    Task {
        /// The task as last seen (terminal).
        task: Box<Task>,
        /// Its JSON-RPC error, exactly as the server sent it.
        error: ErrorObject,
    },
    /// No answer to `method` within the request timeout (the request was cancelled with
    /// `notifications/cancelled`).
    #[error("{method}: no answer within {timeout:?}")]
    Timeout {
        /// The request's method.
        method: String,
        /// The timeout that ran out.
        timeout: Duration,
    },
    /// The transport could not get an answer (connection refused or broken, an HTTP error
    /// status, a lost stream). The request may or may not have reached the server.
    #[error("{method}: {error}")]
    Transport {
        /// The request's method.
        method: String,
        /// What the transport reported (HTTP status in `data` when there was one).
        error: ErrorObject,
    },
    /// The connection is closed.
    #[error("the connection to the server is closed")]
    Closed,
    /// Starting or reaching the server failed.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The server does not declare what this operation needs.
    #[error("not supported by the server: {0}")]
    NotSupported(String),
    /// The server lists no tool of this name.
    #[error("the server lists no tool `{0}`")]
    UnknownTool(String),
    /// The tool may not run as a task (`execution.taskSupport` absent or `forbidden`).
    ///
    /// Spec: "If `execution.taskSupport` is not present or `"forbidden"`, clients MUST NOT
    /// attempt to invoke the tool as a task."
    #[error("tool `{0}` does not support task-augmented execution (taskSupport is forbidden)")]
    TaskForbidden(String),
    /// The server sent something that is not what the protocol says.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
}

impl ClientError {
    /// The JSON-RPC error the server sent, if this is one (of a request or of a task).
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            Self::Rpc { error, .. } | Self::Task { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The terminal task, when this is a task's error outcome.
    pub fn task(&self) -> Option<&Task> {
        match self {
            Self::Task { task, .. } => Some(task),
            _ => None,
        }
    }

    /// Whether the task this error belongs to was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.task()
            .is_some_and(|t| t.status == TaskStatus::Cancelled)
    }

    /// Whether trying again may help: the transport lost the request or its answer, or it
    /// timed out.
    pub fn is_retriable(&self) -> bool {
        matches!(self, Self::Transport { .. } | Self::Timeout { .. })
    }
}
