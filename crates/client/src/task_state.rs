//! The state every handle of one task shares on one connection: the task as last seen,
//! where its `tasks/result` stands, and the poll interval it asks for.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::Task;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::watch;

use crate::ClientError;

/// Poll interval when the task names none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest poll interval honoured.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The longest poll interval honoured.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// How many times in a row a lost `tasks/result` (or `tasks/get`) is tried again.
pub(crate) const MAX_RETRIES: u32 = 8;

/// The interval to poll a task at that asks for `ms` (its `pollInterval`, or the
/// extension's `pollIntervalMs`): 1 s when absent, clamped to 50 ms..30 s. The one rule
/// for every task this workspace follows, the client's and the gateway's upstream ones.
///
/// Spec: "Requestors SHOULD respect the `pollInterval` provided in responses when
/// determining polling frequency."
pub fn poll_interval_ms(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
        .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

/// The interval to poll `task` at ([`poll_interval_ms`] of its `pollInterval`).
pub fn poll_interval(task: &Task) -> Duration {
    poll_interval_ms(task.poll_interval)
}

/// The outcome `tasks/result` delivered: the result, or the task's JSON-RPC error.
pub(crate) type Outcome = Result<Value, ErrorObject>;

/// Where the background `tasks/result` stands.
#[derive(Debug, Clone)]
pub(crate) enum ResultCall {
    Idle,
    InFlight,
    Done(Outcome),
    /// Failed; `retriable` when the transport lost it.
    Failed(ClientError),
}

/// State shared by every handle of one task on one connection.
pub(crate) struct TaskShared {
    pub(crate) task_id: String,
    pub(crate) state: watch::Sender<Task>,
    pub(crate) result: watch::Sender<ResultCall>,
    pub(crate) call: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Why the client is retrying (the server's task store is unavailable), while it is.
    pub(crate) notice: watch::Sender<Option<String>>,
}

impl Drop for TaskShared {
    fn drop(&mut self) {
        if let Some(h) = self.call.lock().take() {
            h.abort();
        }
    }
}

/// Whether `new` may replace `old`: a terminal status is final ("Tasks with a
/// `completed`, `failed`, or `cancelled` status are in a terminal state and MUST NOT
/// transition to any other status"), and an answer older than what we have (by
/// `lastUpdatedAt`, when both are comparable) is stale.
fn supersedes(old: &Task, new: &Task) -> bool {
    if old.status.is_terminal() && !new.status.is_terminal() {
        return false;
    }
    if old.status.is_terminal() && new.status.is_terminal() && old.status != new.status {
        return false;
    }
    let comparable =
        !old.last_updated_at.is_empty() && old.last_updated_at.len() == new.last_updated_at.len();
    if comparable && new.last_updated_at < old.last_updated_at {
        return false;
    }
    old != new
}

impl TaskShared {
    pub(crate) fn new(task: Task) -> Arc<Self> {
        Arc::new(Self {
            task_id: task.task_id.clone(),
            state: watch::channel(task).0,
            result: watch::channel(ResultCall::Idle).0,
            call: Mutex::new(None),
            notice: watch::channel(None).0,
        })
    }

    /// A newer view of the task (a `tasks/get` answer or a status notification).
    pub(crate) fn observe(&self, task: Task) {
        self.state.send_if_modified(|cur| {
            if supersedes(cur, &task) {
                *cur = task;
                true
            } else {
                false
            }
        });
    }

    pub(crate) fn current(&self) -> Task {
        self.state.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_proto::mcp::TaskStatus;

    fn task(status: TaskStatus, updated: &str, poll: Option<u64>) -> Task {
        Task {
            task_id: "t".into(),
            status,
            status_message: None,
            created_at: "2025-11-25T10:00:00.000Z".into(),
            last_updated_at: updated.into(),
            ttl: None,
            poll_interval: poll,
        }
    }

    #[test]
    fn poll_interval_defaults_and_clamps() {
        let at = "2025-11-25T10:00:00.000Z";
        assert_eq!(
            poll_interval(&task(TaskStatus::Working, at, None)),
            Duration::from_secs(1)
        );
        assert_eq!(
            poll_interval(&task(TaskStatus::Working, at, Some(1))),
            Duration::from_millis(50)
        );
        assert_eq!(
            poll_interval(&task(TaskStatus::Working, at, Some(5000))),
            Duration::from_secs(5)
        );
        assert_eq!(
            poll_interval(&task(TaskStatus::Working, at, Some(u64::MAX))),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn terminal_states_are_final_and_stale_views_ignored() {
        let early = "2025-11-25T10:00:01.000Z";
        let late = "2025-11-25T10:00:02.000Z";
        let working = task(TaskStatus::Working, early, None);
        let done = task(TaskStatus::Completed, late, None);
        assert!(supersedes(&working, &done));
        assert!(!supersedes(&done, &task(TaskStatus::Working, late, None)));
        assert!(!supersedes(&done, &task(TaskStatus::Failed, late, None)));
        assert!(!supersedes(
            &task(TaskStatus::InputRequired, late, None),
            &working
        ));
        assert!(!supersedes(&working, &working.clone()));
        // Timestamps in another format are not compared.
        assert!(supersedes(
            &task(TaskStatus::InputRequired, "2025-11-25T10:00:09Z", None),
            &working
        ));
    }
}
