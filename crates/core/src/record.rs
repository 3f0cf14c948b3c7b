//! What a store keeps of a task.

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::Task;
use serde_json::Value;

use crate::clock::rfc3339;
use crate::status::TaskStatus;

/// Whether an outcome is a JSON-RPC result or a JSON-RPC error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutcomeKind {
    /// The `result` member of a successful response.
    Result,
    /// The `error` member of an error response.
    Error,
}

impl OutcomeKind {
    /// Stable name used by stores.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Result => "result",
            Self::Error => "error",
        }
    }
    /// Parse [`Self::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "result" => Some(Self::Result),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// The exact outcome of the request a task wraps, as the bytes of its JSON.
///
/// Spec: "For tasks in a terminal status, receivers MUST return exactly what the
/// underlying request would have returned, whether that is a successful result or a
/// JSON-RPC error." The bytes are written once and never change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Result or error.
    pub kind: OutcomeKind,
    /// The JSON text of the result object or of the error object.
    pub json: String,
}

impl Outcome {
    /// A result outcome.
    pub fn result(v: &Value) -> Self {
        Self {
            kind: OutcomeKind::Result,
            // The same text as `v.to_string()`, written without `Display`'s formatter
            // (a `Value` always serializes).
            json: serde_json::to_string(v).unwrap_or_default(),
        }
    }
    /// An error outcome.
    pub fn error(e: &ErrorObject) -> Self {
        Self {
            kind: OutcomeKind::Error,
            json: serde_json::to_string(e).unwrap_or_default(),
        }
    }
    /// Decode into what `tasks/result` answers.
    ///
    /// # Errors
    /// The stored error object, or an internal error if the bytes do not parse.
    pub fn decode(&self) -> Result<Value, ErrorObject> {
        match self.kind {
            OutcomeKind::Result => serde_json::from_str(&self.json)
                .map_err(|e| ErrorObject::internal(format!("stored result unreadable: {e}"))),
            OutcomeKind::Error => Err(serde_json::from_str(&self.json).unwrap_or_else(|e| {
                ErrorObject::internal(format!("stored error unreadable: {e}"))
            })),
        }
    }
}

/// A task as stored: what it was created with, and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// Its id, owner, quota key, creation time, TTL, poll interval and wrapped request,
    /// which never change (but the request of a summary is empty), and its current
    /// status message and executor.
    pub task: NewTask,
    /// Insertion order, used by `tasks/list` keyset pagination.
    pub seq: i64,
    /// Current status.
    pub status: TaskStatus,
    /// Time of the last transition, ms since the epoch.
    pub last_updated_at_ms: i64,
    /// The outcome, once terminal.
    pub outcome: Option<Outcome>,
}

impl TaskRecord {
    /// When the task may be deleted, ms since the epoch; `None` never.
    pub fn expires_at_ms(&self) -> Option<i64> {
        self.task.ttl_ms.map(|t| {
            self.task
                .created_at_ms
                .saturating_add(i64::try_from(t).unwrap_or(i64::MAX))
        })
    }
    /// The bytes this task keeps in its store: its request and its outcome (what the
    /// stored-bytes limits count).
    pub fn stored_bytes(&self) -> u64 {
        self.task.stored_bytes() + self.outcome.as_ref().map_or(0, |o| len_u64(&o.json))
    }

    /// The record without its request (what [`crate::TaskStore::get_without_request`]
    /// returns): the request may be megabytes, and a `tasks/get` never needs it.
    pub fn without_request(mut self) -> TaskRecord {
        self.task.request = String::new();
        self
    }

    /// This task without its request and outcome (an empty `request`, no `outcome`): what
    /// `tasks/get` and `tasks/cancel` need, without copying what may be megabytes.
    pub fn summary(&self) -> TaskRecord {
        let t = &self.task;
        TaskRecord {
            task: NewTask {
                task_id: t.task_id.clone(),
                owner: t.owner.clone(),
                quota_key: t.quota_key.clone(),
                created_at_ms: t.created_at_ms,
                ttl_ms: t.ttl_ms,
                poll_interval_ms: t.poll_interval_ms,
                method: t.method.clone(),
                request: String::new(),
                executor: t.executor.clone(),
                status_message: t.status_message.clone(),
            },
            seq: self.seq,
            status: self.status,
            last_updated_at_ms: self.last_updated_at_ms,
            outcome: None,
        }
    }
    /// Whether the TTL has passed at `now_ms`.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms().is_some_and(|e| now_ms >= e)
    }
    /// The wire `Task`.
    pub fn to_wire(&self) -> Task {
        Task {
            task_id: self.task.task_id.clone(),
            status: self.status,
            status_message: self.task.status_message.clone(),
            created_at: rfc3339(self.task.created_at_ms),
            last_updated_at: rfc3339(self.last_updated_at_ms),
            ttl: self.task.ttl_ms,
            poll_interval: self.task.poll_interval_ms,
        }
    }
}

/// What a store needs to create a task; in a [`TaskRecord`], what it was created with.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// The task id (a UUID v4).
    pub task_id: String,
    /// The principal the task is bound to; `None` when bound to no one.
    pub owner: Option<String>,
    /// What the task counts against for the per-requester limits (see
    /// [`crate::engine::Requester::quota_key`]): the principal, else the session. Never
    /// empty: the empty key is reserved for a store's total.
    pub quota_key: String,
    /// Creation time, ms since the epoch; never changes.
    pub created_at_ms: i64,
    /// Retention from creation in ms; `None` is unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested poll interval in ms.
    pub poll_interval_ms: Option<u64>,
    /// The method of the wrapped request (`tools/call`, ...).
    pub method: String,
    /// The params of the wrapped request, as JSON text.
    pub request: String,
    /// The process (executor instance) running the task, while it runs.
    pub executor: Option<String>,
    /// The status message: the initial one, and in a [`TaskRecord`] the current one.
    pub status_message: Option<String>,
}

impl NewTask {
    /// The bytes the task's request takes in its store.
    pub fn stored_bytes(&self) -> u64 {
        len_u64(&self.request)
    }

    /// The record a store holds once it has inserted this task as insertion number `seq`:
    /// `working`, last updated at creation, no outcome yet.
    pub fn into_record(self, seq: i64) -> TaskRecord {
        TaskRecord {
            last_updated_at_ms: self.created_at_ms,
            task: self,
            seq,
            status: TaskStatus::Working,
            outcome: None,
        }
    }
}

/// A length as `u64` (lossless on every supported platform).
pub(crate) fn len_u64(s: &str) -> u64 {
    u64::try_from(s.len()).unwrap_or(u64::MAX)
}
