//! Errors of the task domain. The one mapping to JSON-RPC codes is [`EngineError::to_rpc`].

use mcp_tasks_proto::{ErrorObject, codes};

/// Which limit a creation (or a task's outcome) would have gone over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Non-terminal tasks per requester (`--max-active-tasks`).
    ActiveTasks,
    /// Stored tasks of any status per requester, until their TTL deletes them
    /// (`--max-stored-tasks`).
    StoredTasks,
    /// Stored bytes (requests and outcomes) per requester (`--max-stored-bytes`).
    StoredBytes,
    /// Stored bytes (requests and outcomes) of the whole store (`--max-store-bytes`).
    StoreBytes,
}

impl Limit {
    /// What the limit allows, in words, with its value: "at most 2 active tasks per
    /// requester".
    pub fn allows(self, max: u64) -> String {
        match self {
            Self::ActiveTasks => format!("at most {max} active tasks per requester"),
            Self::StoredTasks => format!(
                "at most {max} tasks per requester are kept (finished ones included, until \
                 their TTL runs out)"
            ),
            Self::StoredBytes => format!(
                "at most {max} bytes of requests and results per requester are kept (until \
                 their TTL runs out)"
            ),
            Self::StoreBytes => format!(
                "at most {max} bytes of requests and results are kept in total (until their \
                 TTL runs out)"
            ),
        }
    }

    /// The refusal of a task creation: "Too many active tasks: at most 2 active tasks per
    /// requester".
    pub fn refusal(self, max: u64) -> String {
        let head = match self {
            Self::ActiveTasks => "Too many active tasks",
            Self::StoredTasks => "Too many stored tasks",
            Self::StoredBytes => "Too many stored bytes",
            Self::StoreBytes => "The task store is full",
        };
        format!("{head}: {}", self.allows(max))
    }
}

/// A storage backend failed.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Creating the task would go over `limit`.
    #[error("{}", limit.refusal(*max))]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its value.
        max: u64,
    },
    /// A task with this id exists already.
    #[error("a task with id {0} exists already")]
    Duplicate(String),
    /// The backend could not serve the call (I/O error, disk full, lock held, ...).
    #[error("task store unavailable: {0}")]
    Unavailable(String),
    /// Stored data could not be read back.
    #[error("task store data is corrupt: {0}")]
    Corrupt(String),
}

/// Why the engine refused or failed a request.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    /// No such task (or one the requester may not see: a foreign task looks exactly like
    /// a missing one).
    #[error("Task not found")]
    NotFound,
    /// The task's TTL has passed.
    #[error("Task has expired")]
    Expired,
    /// `tasks/cancel` of a task in a terminal status.
    #[error("Cannot cancel task: already in terminal status '{0}'")]
    AlreadyTerminal(mcp_tasks_proto::mcp::TaskStatus),
    /// A malformed parameter.
    #[error("{0}")]
    InvalidParams(String),
    /// A limit of the requester (or of the store) is reached.
    #[error("{}", limit.refusal(*max))]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its value.
        max: u64,
    },
    /// The store failed.
    #[error("{0}")]
    Store(StoreError),
    /// The engine is shutting down.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// A rate limit refused the request (see [`crate::rate`]); nothing was done.
    #[error("{}", .0.to_error().message)]
    RateLimited(crate::rate::Refused),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::LimitExceeded { limit, max } => Self::LimitExceeded { limit, max },
            other => Self::Store(other),
        }
    }
}

impl EngineError {
    /// The JSON-RPC error for this failure; `context` prefixes the message
    /// (e.g. "Failed to retrieve task").
    ///
    /// Spec: "Invalid or nonexistent taskId in tasks/get, tasks/result, or tasks/cancel:
    /// -32602 (Invalid params)"; "Attempting to cancel a task already in a terminal
    /// status: -32602"; "Internal errors: -32603".
    pub fn to_rpc(&self, context: &str) -> ErrorObject {
        if let Self::RateLimited(r) = self {
            // As it is: its data says when to retry.
            return r.to_error();
        }
        let code = match self {
            Self::NotFound | Self::Expired | Self::AlreadyTerminal(_) | Self::InvalidParams(_) => {
                codes::INVALID_PARAMS
            }
            Self::LimitExceeded { .. } => codes::TOO_MANY_TASKS,
            Self::Store(_) | Self::ShuttingDown => codes::INTERNAL_ERROR,
            Self::RateLimited(_) => codes::RATE_LIMITED,
        };
        let message = match self {
            Self::AlreadyTerminal(_) => self.to_string(),
            _ if context.is_empty() => self.to_string(),
            _ => format!("{context}: {self}"),
        };
        ErrorObject::new(code, message)
    }
}
