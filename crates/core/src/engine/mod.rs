//! The receiver engine: creates tasks, runs them, answers `tasks/*`, relays input.
//!
//! It is generic over the request a task wraps (the caller passes a runner future and a
//! classifier that maps its result to a terminal status) and over the transport (it
//! reaches peers through [`RequestorChannel`] and
//! [`RequestSender`](crate::channel::RequestSender)).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use futures::future::BoxFuture;
use mcp_tasks_proto::{ErrorObject, RequestId, codes, methods};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::audit::{Event, EventKind};
use crate::channel::RequestorChannel;
use crate::clock::Clock;
use crate::cursor::CursorCodec;
use crate::error::EngineError;
use crate::guard::Guard;
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::record::{Outcome, TaskRecord};
use crate::status::TaskStatus;
use crate::store::{TaskStore, Transition};

pub mod dashboard;
mod launch;
mod lifecycle;
mod mailbox;
mod query;
mod relay;
mod running;
mod shared_rate;

use running::{PendingAnswer, RunningTask};

pub use crate::requester::{LOCAL_QUOTA_KEY, Requester};

/// The `tracing` target of the audit trail (see [`crate::audit`]).
pub use crate::audit::AUDIT_TARGET;

/// Decides the terminal status of a successful result (a `CallToolResult` with
/// `isError: true` is `failed`).
pub type Classifier = fn(&Value) -> (TaskStatus, Option<String>);

/// What a runner gets: the task id, its cancellation, and a channel to the requestor
/// through which requests become `input_required` and are relayed via `tasks/result`.
pub struct TaskRun {
    /// The task id.
    pub task_id: String,
    /// Fires when the task is cancelled or expires.
    pub cancel: CancellationToken,
    /// Task-mode channel to the requestor.
    pub channel: Arc<dyn RequestorChannel>,
}

/// The future that computes a task's outcome.
pub type Runner = Box<dyn FnOnce(TaskRun) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send>;

/// What to create.
pub struct TaskSpec {
    /// Who creates it.
    pub requester: Requester,
    /// The wrapped method.
    pub method: String,
    /// The wrapped params (kept as the original request).
    pub params: Value,
    /// The `task` field of the request.
    pub task_field: Value,
    /// Where status notifications go (the connection that created the task).
    pub origin: Arc<dyn RequestorChannel>,
    /// How a successful result maps to a terminal status.
    pub classify: Classifier,
}

/// Work resumed for a task whose executor stopped: where its notifications go, how its
/// result maps to a status, and the future that computes its outcome.
pub struct Resumed {
    /// Where status notifications go (the original connection is gone).
    pub origin: Arc<dyn RequestorChannel>,
    /// How a successful result maps to a terminal status.
    pub classify: Classifier,
    /// The work.
    pub runner: Runner,
}

/// Picks up the work of tasks whose executor stopped, when that work can go on without
/// being re-run (a gateway following a task that runs on its upstream). Every other
/// orphaned task is failed, as before.
#[async_trait::async_trait]
pub trait Resumer: Send + Sync + 'static {
    /// The work that resumes `rec`, or `None` to let it be failed as an orphan. Async: what
    /// it needs to decide may be in the store shared with other processes (a gateway's
    /// notes on PostgreSQL).
    async fn resume(&self, rec: &TaskRecord) -> Option<Resumed>;
}

struct Inner {
    resumer: std::sync::OnceLock<Arc<dyn Resumer>>,
    store: Arc<dyn TaskStore>,
    policy: Policy,
    clock: Arc<dyn Clock>,
    instance: String,
    running: Mutex<HashMap<String, Arc<RunningTask>>>,
    answers: Mutex<HashMap<RequestId, PendingAnswer>>,
    /// Answers refused because they came from another requester than the task's.
    failed_lookups: AtomicU64,
    cursor: tokio::sync::OnceCell<CursorCodec>,
    shutdown: CancellationToken,
    metrics: std::sync::OnceLock<Metrics>,
    guard: std::sync::OnceLock<Guard>,
}

/// The engine. Cheap to clone.
#[derive(Clone)]
pub struct TaskEngine {
    inner: Arc<Inner>,
}

mcp_tasks_proto::debug_non_exhaustive!(TaskEngine, |s| { instance: s.inner.instance });

/// Longest status message the engine stores for a finished task, in bytes: a tool's
/// error text is quoted in it and may be as large as its result (which is stored once, as
/// the outcome).
pub const MAX_STATUS_MESSAGE: usize = 1024;

/// `message`, cut to at most [`MAX_STATUS_MESSAGE`] bytes (at a character boundary, with
/// "…" when cut).
fn bounded_message(mut message: String) -> String {
    if message.len() > MAX_STATUS_MESSAGE {
        let mut end = MAX_STATUS_MESSAGE - '…'.len_utf8();
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// The transition that fails `task_id` with `err` (its message is the status message).
fn failed_transition(task_id: &str, err: &ErrorObject, at_ms: i64) -> Transition {
    Transition {
        task_id: task_id.to_owned(),
        to: TaskStatus::Failed,
        status_message: Some(err.message.clone()),
        outcome: Some(Outcome::error(err)),
        at_ms,
    }
}

/// Who ended a task, in its audit line (`by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndedBy {
    /// Its own work (its outcome).
    Work,
    /// The requester (`tasks/cancel`).
    Requester,
    /// The server shutting down.
    Shutdown,
    /// Its executor stopped (an orphan).
    Orphan,
}

impl EndedBy {
    fn name(self) -> &'static str {
        match self {
            EndedBy::Work => "work",
            EndedBy::Requester => "requester",
            EndedBy::Shutdown => "shutdown",
            EndedBy::Orphan => "orphan",
        }
    }
}

/// The status message of a task failed because its executor stopped.
pub const ORPHAN_MESSAGE: &str = "The server stopped before the task finished; it was not re-run.";
/// The status message of a cancelled task.
pub const CANCELLED_MESSAGE: &str = "The task was cancelled by request.";

/// The outcome `tasks/result` returns for a cancelled task: a JSON-RPC error with code
/// [`codes::TASK_CANCELLED`], the same every time.
pub fn cancelled_outcome(task_id: &str) -> ErrorObject {
    ErrorObject::new(
        codes::TASK_CANCELLED,
        "Task cancelled: the task was cancelled before it finished",
    )
    .with_data(json!({ "taskId": task_id, "status": "cancelled" }))
}

/// A new task id: a UUID v4 (122 random bits) from the OS CSPRNG.
///
/// Spec: "receivers MUST generate cryptographically secure task IDs with enough entropy to
/// prevent guessing".
pub fn new_task_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl TaskEngine {
    /// An engine over `store`.
    pub fn new(store: Arc<dyn TaskStore>, policy: Policy, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                resumer: std::sync::OnceLock::new(),
                store,
                policy,
                clock,
                instance: new_task_id(),
                running: Mutex::new(HashMap::new()),
                answers: Mutex::new(HashMap::new()),
                failed_lookups: AtomicU64::new(0),
                cursor: tokio::sync::OnceCell::new(),
                shutdown: CancellationToken::new(),
                metrics: std::sync::OnceLock::new(),
                guard: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Apply the rate limits and audit trail of `guard` (once; before the engine starts).
    /// Returns `false` if the engine has a guard already.
    pub fn set_guard(&self, guard: Guard) -> bool {
        guard.set_metrics(self.metrics().clone());
        self.inner.guard.set(guard).is_ok()
    }

    /// The guard in force (no limits and `tracing` audit lines only unless
    /// [`Self::set_guard`] came first).
    pub fn guard(&self) -> &Guard {
        self.inner.guard.get_or_init(|| {
            let guard = Guard::default();
            guard.set_metrics(self.metrics().clone());
            guard
        })
    }

    /// The audit line of a task that reached a terminal status.
    pub(crate) fn audit_finished(&self, rec: &TaskRecord, by: EndedBy) {
        let kind = match rec.status {
            TaskStatus::Completed => EventKind::Completed,
            TaskStatus::Cancelled => EventKind::Cancelled,
            _ => EventKind::Failed,
        };
        self.guard().record_with(|| {
            Event::new(kind)
                .principal(rec.task.owner.as_deref())
                .task(&rec.task.task_id)
                .method(&rec.task.method)
                .outcome(rec.status.as_str())
                .with("status", rec.status.as_str())
                .with("by", by.name())
        });
    }

    /// Install the [`Resumer`] consulted before orphaned tasks are failed (once; set it
    /// before [`Self::start`]). Returns `false` if one was installed already.
    pub fn set_resumer(&self, resumer: Arc<dyn Resumer>) -> bool {
        self.inner.resumer.set(resumer).is_ok()
    }

    /// Count into `metrics` (once; before the engine starts). Returns `false` if the
    /// engine counts into other metrics already.
    pub fn set_metrics(&self, metrics: Metrics) -> bool {
        self.inner.store.attach_metrics(&metrics);
        self.inner.metrics.set(metrics).is_ok()
    }

    /// The metrics this engine counts into (fresh ones unless [`Self::set_metrics`] came
    /// first).
    pub fn metrics(&self) -> &Metrics {
        self.inner.metrics.get_or_init(|| {
            let metrics = Metrics::new();
            self.inner.store.attach_metrics(&metrics);
            metrics
        })
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// This process's executor id (for leases).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    fn running(&self, task_id: &str) -> Option<Arc<RunningTask>> {
        self.inner.running.lock().get(task_id).cloned()
    }

    /// Whether this process is executing task `task_id` (it has not ended here).
    pub fn runs_here(&self, task_id: &str) -> bool {
        self.inner.running.lock().contains_key(task_id)
    }

    /// Number of tasks this process is executing.
    pub fn running_count(&self) -> usize {
        self.inner.running.lock().len()
    }

    /// Cancel all local work (used at shutdown after the grace period).
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    async fn cursor(&self) -> Result<&CursorCodec, EngineError> {
        self.inner
            .cursor
            .get_or_try_init(|| async { self.inner.store.cursor_key().await.map(CursorCodec::new) })
            .await
            .map_err(EngineError::from)
    }

    /// A transition of `rec` was applied: count it and tell the requestor.
    async fn announce(&self, rec: &TaskRecord) {
        self.metrics().task_changed(rec);
        let running = self.running(&rec.task.task_id);
        if let Some(task) = running {
            let params = serde_json::to_value(rec.to_wire()).unwrap_or(Value::Null);
            // Spec: "notifications/tasks/status notifications SHOULD NOT include related-task
            // metadata, as the task ID is already present in the notification parameters."
            task.notify_requestor(methods::TASK_STATUS, params).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-requester limits count a principal across sessions and addresses, an
    /// anonymous stateless requester by its address (not per request), an anonymous
    /// session by itself, and never mix those kinds.
    #[test]
    fn quota_keys_by_kind_of_requester() {
        let addr: std::net::IpAddr = [10, 0, 0, 7].into();
        let key = |principal: Option<&str>, session: Option<&str>, client: Option<_>| {
            Requester {
                principal: principal.map(str::to_owned),
                session: session.map(str::to_owned),
                client_address: client,
                ..Requester::default()
            }
            .quota_key()
        };
        assert_eq!(key(Some("p"), Some("s"), Some(addr)), "principal:p");
        assert_eq!(key(None, Some("s1"), Some(addr)), "address:10.0.0.7");
        assert_eq!(
            key(None, Some("s1"), Some(addr)),
            key(None, Some("s2"), Some(addr)),
            "fresh sessions of one address share a key"
        );
        assert_eq!(key(None, Some("s1"), None), "session:s1");
        assert_eq!(Requester::local().quota_key(), LOCAL_QUOTA_KEY);
    }
}
