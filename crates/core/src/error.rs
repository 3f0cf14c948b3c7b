//! Errors of the task domain. The one mapping to JSON-RPC codes is [`EngineError::to_rpc`].

use mcp_tasks_proto::{ErrorObject, codes};

/// A storage backend failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Creating the task would exceed the owner's limit of active tasks.
    #[error("too many active tasks: the limit per requester is {limit}")]
    LimitExceeded {
        /// The limit in force.
        limit: u32,
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
    /// The requester's limit of active tasks is reached.
    #[error("Too many active tasks: at most {0} active tasks per requester")]
    TooManyTasks(u32),
    /// The store failed.
    #[error("{0}")]
    Store(StoreError),
    /// The engine is shutting down.
    #[error("the server is shutting down")]
    ShuttingDown,
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::LimitExceeded { limit } => Self::TooManyTasks(limit),
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
        let code = match self {
            Self::NotFound | Self::Expired | Self::AlreadyTerminal(_) | Self::InvalidParams(_) => {
                codes::INVALID_PARAMS
            }
            Self::TooManyTasks(_) => codes::TOO_MANY_TASKS,
            Self::Store(_) | Self::ShuttingDown => codes::INTERNAL_ERROR,
        };
        let message = match self {
            Self::AlreadyTerminal(_) => self.to_string(),
            _ if context.is_empty() => self.to_string(),
            _ => format!("{context}: {self}"),
        };
        ErrorObject::new(code, message)
    }
}
