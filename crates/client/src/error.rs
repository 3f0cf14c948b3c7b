//! What can go wrong on the requestor side.

use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::{Task, TaskStatus};
use mcp_tasks_rpc::{PeerError, TransportError};

use crate::types::CallToolResult;

/// An error of the client.
///
/// The server's own JSON-RPC errors are kept exactly ([`ClientError::Rpc`]); the error a
/// task *ended with* is told apart from an error of the request that asked for it
/// ([`ClientError::Task`]), so an application never sees a bare "task failed".
#[non_exhaustive]
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
        /// What the transport reported (with the HTTP status when there was one).
        error: TransportError,
    },
    /// The connection is closed.
    #[error("the connection to the server is closed")]
    Closed,
    /// Starting or reaching the server failed.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// Refused by this client before anything was sent: by what the server declared (its
    /// capabilities, its tool list, a tool's `execution.taskSupport`) it does not offer
    /// `what`. Neither a JSON-RPC error nor a fault of the server.
    ///
    /// Spec: "If `execution.taskSupport` is not present or `"forbidden"`, clients MUST NOT
    /// attempt to invoke the tool as a task." and "If a server's capabilities do not
    /// include `tasks.requests.tools.call`, then clients MUST NOT attempt to use task
    /// augmentation on that server's tools".
    #[error("not sent: the server does not offer {what} ({why})")]
    Unsupported {
        /// What was refused: `tasks/list`, `tool `x``, `tool `x` as a task`, ...
        what: String,
        /// Why, from what the server declared.
        why: String,
    },
    /// The server sent something that is not what the protocol says.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
    /// A task-augmented `tools/call` was answered with a `CallToolResult` instead of a
    /// `CreateTaskResult`: the server created no task and this result is the call's
    /// outcome. Our server does so for arguments that fail the tool's input schema (an
    /// `isError` result naming the field and the bound), so that the model sees the
    /// mistake in the reply to its call. [`crate::Client::call_tool`] returns the result
    /// as its `Ok`.
    #[error("no task was created: the server answered the call with a result{}", if .0.is_error() { " (isError)" } else { "" })]
    NotStarted(Box<CallToolResult>),
    /// 2026-07-28: the client could not answer a question of the server (an entry of
    /// `inputRequests`): its handler refused (sampling declined) or it has none. The
    /// extension carries only results in `inputResponses`, so the call cannot go on: a
    /// plain call ends with this error, a task is cancelled.
    #[error("cannot answer the server's {method}: {error}")]
    Unanswered {
        /// The question's method (`sampling/createMessage`, ...).
        method: String,
        /// Why, as the handler said.
        error: ErrorObject,
    },
}

impl ClientError {
    /// The error of request `method` that got no result: the one place a [`PeerError`]
    /// becomes a [`ClientError`].
    pub(crate) fn of_request(method: &str, e: PeerError) -> Self {
        let method = method.to_owned();
        match e {
            PeerError::Remote(error) => Self::Rpc { method, error },
            PeerError::Transport(error) => Self::Transport { method, error },
            PeerError::Timeout(timeout) => Self::Timeout { method, timeout },
            _ => Self::Closed,
        }
    }

    /// A local refusal ([`Self::Unsupported`]).
    pub fn unsupported(what: impl Into<String>, why: impl Into<String>) -> Self {
        Self::Unsupported {
            what: what.into(),
            why: why.into(),
        }
    }

    /// The refusal of a 2025-11-25 tasks method that the 2026-07-28 tasks extension does
    /// not have (`tasks/list`, `tasks/result`) ([`Self::Unsupported`]).
    ///
    /// Spec (SEP-2663): the redesign "consolidates the polling lifecycle into `tasks/get`
    /// and a new `tasks/update` to remove the blocking `tasks/result` method"; of
    /// `tasks/list`: "it is unsafe for a server to support `tasks/list` at all".
    pub fn not_in_revision(method: &str) -> Self {
        Self::unsupported(
            method,
            format!(
                "it speaks 2026-07-28, whose tasks extension (io.modelcontextprotocol/tasks, SEP-2663) has no {method}; `tasks get ID` shows a task with its result inline"
            ),
        )
    }

    /// The refusal of a tasks method (`method`) by a 2026-07-28 server that does not
    /// declare the tasks extension ([`Self::Unsupported`]).
    ///
    /// Spec (SEP-2663, "Capability Negotiation"): "The client and server declare support
    /// for the tasks extension in their respective capabilities objects"; the tasks
    /// methods are the extension's, so a server that does not declare it has none.
    pub fn no_tasks_extension(method: &str) -> Self {
        Self::unsupported(
            method,
            format!(
                "it speaks 2026-07-28 and its server/discover does not declare the tasks extension ({})",
                mcp_tasks_proto::modern::TASKS_EXTENSION
            ),
        )
    }

    /// The refusal of a tool the server does not list ([`Self::Unsupported`]).
    pub fn unknown_tool(name: &str) -> Self {
        Self::unsupported(format!("tool `{name}`"), "its tools/list has no such tool")
    }

    /// Whether this client refused the operation itself, before sending anything
    /// ([`Self::Unsupported`]).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported { .. })
    }

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

    /// Whether the server answered that its task store is unavailable (-32603 "task store
    /// unavailable: ..."): a transient outage of its database, after which the same
    /// request may succeed.
    pub fn is_store_unavailable(&self) -> bool {
        matches!(self, Self::Rpc { error, .. } if is_store_unavailable(error))
    }

    /// Whether trying again may help: the transport lost the request or its answer, or it
    /// timed out.
    pub fn is_retriable(&self) -> bool {
        matches!(self, Self::Transport { .. } | Self::Timeout { .. })
    }
}

/// Whether `error` is a server's "task store unavailable" answer (-32603; the message of
/// the mcp-tasks server's store errors).
pub(crate) fn is_store_unavailable(error: &ErrorObject) -> bool {
    error.code == mcp_tasks_proto::codes::INTERNAL_ERROR
        && error.message.contains(STORE_UNAVAILABLE)
}

/// The words of a server's answer when its task store does not answer.
pub(crate) const STORE_UNAVAILABLE: &str = "task store unavailable";
