//! A task seen from the requestor: status, changes, waiting, the result, cancellation.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use mcp_tasks_proto::mcp::{Task, TaskStatus};
use mcp_tasks_proto::{ErrorObject, Revision};
use mcp_tasks_proto::{codes, methods};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::ClientError;
use crate::client::Client;
use crate::types::{CallToolResult, parse_task};

/// Poll interval when the task names none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest poll interval honoured.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The longest poll interval honoured.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// How many times in a row a lost `tasks/result` (or `tasks/get`) is tried again.
const MAX_RETRIES: u32 = 8;

/// How long `tasks/result` is tried again while the server answers that its task store is
/// unavailable (a database outage): from the first such answer. The task goes on on the
/// server meanwhile; past this the error stands.
pub(crate) const STORE_OUTAGE_RETRY: Duration = Duration::from_secs(120);
/// First delay before asking again after a "task store unavailable" answer; it doubles up
/// to [`STORE_RETRY_MAX`].
const STORE_RETRY_FIRST: Duration = Duration::from_millis(250);
/// Longest delay between two tries while the server's task store is unavailable.
const STORE_RETRY_MAX: Duration = Duration::from_secs(4);

/// The interval to poll `task` at: its `pollInterval` (1 s when absent), clamped to
/// 50 ms..30 s.
///
/// Spec: "Requestors SHOULD respect the `pollInterval` provided in responses when
/// determining polling frequency."
pub fn poll_interval(task: &Task) -> Duration {
    task.poll_interval
        .map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
        .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
}

/// The outcome `tasks/result` delivered: the result, or the task's JSON-RPC error.
type Outcome = Result<Value, ErrorObject>;

/// Where the background `tasks/result` stands.
#[derive(Debug, Clone)]
enum ResultCall {
    Idle,
    InFlight,
    Done(Outcome),
    /// Failed; `retriable` when the transport lost it.
    Failed(ClientError),
}

/// State shared by every handle of one task on one connection.
pub(crate) struct TaskShared {
    pub(crate) task_id: String,
    state: watch::Sender<Task>,
    result: watch::Sender<ResultCall>,
    call: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Why the client is retrying (the server's task store is unavailable), while it is.
    notice: watch::Sender<Option<String>>,
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

    fn current(&self) -> Task {
        self.state.borrow().clone()
    }
}

/// A task created by (or resumed on) a [`Client`]. Cheap to clone; every clone sees the
/// same state.
///
/// Status comes from three sources: `tasks/get` polls (driven by [`Self::wait`] and
/// [`Self::result`]), `notifications/tasks/status` when the server sends them ("Requestors
/// MUST NOT rely on receiving this notifications, as it is optional"), and the answers of
/// `tasks/cancel`.
#[derive(Clone)]
pub struct TaskHandle {
    client: Client,
    shared: Arc<TaskShared>,
    tool: Option<String>,
    immediate_response: Option<String>,
}

mcp_tasks_proto::debug_non_exhaustive!(TaskHandle, |s| { task: s.task(), tool: s.tool });

impl TaskHandle {
    pub(crate) fn new(
        client: Client,
        shared: Arc<TaskShared>,
        tool: Option<String>,
        immediate_response: Option<String>,
    ) -> Self {
        Self {
            client,
            shared,
            tool,
            immediate_response,
        }
    }

    /// The revision of the client this task is followed on.
    pub fn revision(&self) -> Revision {
        self.client.revision()
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.shared.task_id
    }

    /// The tool this task runs, when it was created here.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The `io.modelcontextprotocol/model-immediate-response` the server gave with the
    /// `CreateTaskResult`, if any.
    pub fn immediate_response(&self) -> Option<&str> {
        self.immediate_response.as_deref()
    }

    /// The task as last seen.
    pub fn task(&self) -> Task {
        self.shared.current()
    }

    /// The status as last seen.
    pub fn status(&self) -> TaskStatus {
        self.shared.state.borrow().status
    }

    /// The changes of the task from now on, as they are seen (by polls that
    /// [`Self::wait`] or [`Self::result`] drive, and by status notifications). Changes
    /// between two observations are not seen; the stream ends after a terminal status
    /// or when the handle's client goes away.
    pub fn updates(&self) -> impl Stream<Item = Task> + Send + 'static {
        let mut rx = self.shared.state.subscribe();
        rx.mark_unchanged();
        futures::stream::unfold((rx, false), |(mut rx, done)| async move {
            if done {
                return None;
            }
            rx.changed().await.ok()?;
            let t = rx.borrow_and_update().clone();
            let terminal = t.status.is_terminal();
            Some((t, (rx, terminal)))
        })
        .fuse()
    }

    /// What the client is doing about a transient failure while it waits for the result,
    /// each time it changes: `Some(why)` when it starts retrying (the server answered that
    /// its task store is unavailable), `None` once an answer comes. For a caller to tell
    /// its user; the retries themselves need nothing from it.
    pub fn notices(&self) -> impl Stream<Item = Option<String>> + Send + 'static {
        let mut rx = self.shared.notice.subscribe();
        rx.mark_unchanged();
        futures::stream::unfold(rx, |mut rx| async move {
            rx.changed().await.ok()?;
            let n = rx.borrow_and_update().clone();
            Some((n, rx))
        })
    }

    /// `tasks/get`: fetch the task now.
    ///
    /// # Errors
    /// The server's error (an unknown or expired task is -32602), or a transport error.
    pub async fn refresh(&self) -> Result<Task, ClientError> {
        let v = self
            .client
            .request(methods::TASKS_GET, Some(json!({ "taskId": self.id() })))
            .await?;
        let task = parse_task(&v)?;
        if task.task_id != self.shared.task_id {
            return Err(ClientError::Protocol(format!(
                "tasks/get for {} answered task {}",
                self.shared.task_id, task.task_id
            )));
        }
        self.shared.observe(task);
        Ok(self.task())
    }

    /// `tasks/cancel`.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] when the server does not declare `tasks.cancel`; the
    /// server's error (cancelling a terminal task is -32602).
    pub async fn cancel(&self) -> Result<Task, ClientError> {
        let v = self.client.cancel_task_raw(self.id()).await?;
        if self.client.revision().tasks_are_extension() {
            // An empty acknowledgement: "Cancellation processing is eventually consistent".
            return self.refresh().await;
        }
        let task = parse_task(&v)?;
        self.shared.observe(task);
        Ok(self.task())
    }

    /// Wait until the task is terminal and return it.
    ///
    /// Polls `tasks/get` at the task's `pollInterval` (1 s when absent, clamped to
    /// 50 ms..30 s), sooner when a status notification comes. On `input_required` it
    /// calls `tasks/result`, on whose stream the server's questions arrive, answered by
    /// the client's [`crate::ElicitationHandler`] / [`crate::SamplingHandler`].
    ///
    /// Spec: "Requestors SHOULD continue polling until the task reaches a terminal status
    /// (`completed`, `failed`, or `cancelled`), or until encountering the `input_required`
    /// status." and "When the requestor encounters the `input_required` status, it SHOULD
    /// preemptively call `tasks/result`."
    ///
    /// # Errors
    /// The server's error for `tasks/get` (the task is gone), or a transport that keeps
    /// failing.
    pub async fn wait(&self) -> Result<Task, ClientError> {
        let mut state = self.shared.state.subscribe();
        let mut result = self.shared.result.subscribe();
        let mut failures = 0;
        loop {
            let task = state.borrow_and_update().clone();
            if task.status.is_terminal() {
                return Ok(task);
            }
            if task.status == TaskStatus::InputRequired {
                // A tasks/result the transport lost is sent again: the questions travel on it.
                let lost = matches!(&*self.shared.result.borrow(), ResultCall::Failed(e) if e.is_retriable());
                if lost {
                    self.reset_result_call();
                }
                self.ensure_result_call();
            }
            tokio::select! {
                () = tokio::time::sleep(poll_interval(&task)) => {
                    match self.refresh().await {
                        Ok(_) => failures = 0,
                        Err(e) if e.is_retriable() && failures < MAX_RETRIES => failures += 1,
                        Err(e) => return Err(e),
                    }
                }
                r = state.changed() => { if r.is_err() { return Err(ClientError::Closed); } }
                r = result.changed() => {
                    if r.is_err() { return Err(ClientError::Closed); }
                    let done = matches!(*result.borrow_and_update(), ResultCall::Done(_));
                    if done {
                        // The task is terminal: learn its final status.
                        self.settle_after_outcome().await;
                    }
                }
            }
        }
    }

    /// The task's result: the exact `CallToolResult` it ended with (with `isError: true`
    /// when the tool failed that way), or its JSON-RPC error as [`ClientError::Task`].
    ///
    /// Calls `tasks/result`, which blocks until the task is terminal and carries the
    /// server's questions meanwhile (answered by the client's handlers), and polls
    /// `tasks/get` alongside so that [`Self::updates`] shows progress. A `tasks/result`
    /// whose answer the transport lost is sent again; one a receiver answered early with an
    /// error while the task still ran (FastMCP 3: -32602 "Task not completed yet") is sent
    /// again once `tasks/get` shows the task terminal, polled at its `pollInterval`.
    ///
    /// Spec: "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
    /// return that same JSON-RPC error."
    ///
    /// # Errors
    /// [`ClientError::Task`] with the task's own error; the server's error for
    /// `tasks/result` itself (an unknown task); transport errors that persist.
    pub async fn result(&self) -> Result<CallToolResult, ClientError> {
        let mut result = self.shared.result.subscribe();
        let mut failures = 0;
        self.ensure_result_call();
        loop {
            let call = result.borrow_and_update().clone();
            match call {
                ResultCall::Done(outcome) => {
                    self.settle_after_outcome().await;
                    return match outcome {
                        Ok(v) => Ok(CallToolResult(v)),
                        Err(error) => Err(ClientError::Task {
                            task: Box::new(self.task()),
                            error,
                        }),
                    };
                }
                ResultCall::Failed(e) if e.is_retriable() && failures < MAX_RETRIES => {
                    failures += 1;
                    tracing::debug!(task_id = %self.id(), error = %e, "tasks/result lost; asking again");
                    tokio::time::sleep(poll_interval(&self.task()).min(Duration::from_secs(2)))
                        .await;
                    self.reset_result_call();
                    self.ensure_result_call();
                    continue;
                }
                ResultCall::Failed(e) => return Err(e),
                ResultCall::Idle | ResultCall::InFlight => {}
            }
            let task = self.task();
            tokio::select! {
                r = result.changed() => { if r.is_err() { return Err(ClientError::Closed); } }
                // 2026-07-28: the background driver polls already.
                () = tokio::time::sleep(poll_interval(&task)), if !task.status.is_terminal() && !self.client.revision().tasks_are_extension() => {
                    // Keep the status fresh for watchers; tasks/result decides the outcome.
                    if let Err(e) = self.refresh().await {
                        tracing::debug!(error = %e, "tasks/get failed while waiting for the result");
                    }
                }
            }
        }
    }

    fn reset_result_call(&self) {
        self.shared.result.send_modify(|c| {
            if matches!(c, ResultCall::Failed(_)) {
                *c = ResultCall::Idle;
            }
        });
    }

    /// Start `tasks/result` in the background unless it runs or ran.
    fn ensure_result_call(&self) {
        let mut call = self.shared.call.lock();
        let start = self.shared.result.send_if_modified(|c| {
            if matches!(c, ResultCall::Idle) {
                *c = ResultCall::InFlight;
                true
            } else {
                false
            }
        });
        if !start {
            return;
        }
        let client = self.client.clone();
        let weak = Arc::downgrade(&self.shared);
        let h = tokio::spawn(async move {
            let outcome = if client.revision().tasks_are_extension() {
                drive_modern(&client, &weak).await
            } else {
                fetch_result(&client, &weak).await
            };
            if let Some(s) = weak.upgrade() {
                s.result.send_replace(outcome);
            }
        });
        if let Some(old) = call.replace(h) {
            old.abort();
        }
    }

    /// After `tasks/result` answered: fetch the terminal task; when the server no longer
    /// knows it, infer the status from the outcome.
    async fn settle_after_outcome(&self) {
        if self.status().is_terminal() {
            return;
        }
        if let Ok(t) = self.refresh().await
            && t.status.is_terminal()
        {
            return;
        }
        let outcome = match &*self.shared.result.borrow() {
            ResultCall::Done(o) => o.clone(),
            _ => return,
        };
        let (status, message) = match &outcome {
            Ok(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => {
                (TaskStatus::Failed, None)
            }
            Ok(_) => (TaskStatus::Completed, None),
            Err(e) if e.code == codes::TASK_CANCELLED => {
                (TaskStatus::Cancelled, Some(e.message.clone()))
            }
            Err(e) => (TaskStatus::Failed, Some(e.message.clone())),
        };
        let mut t = self.task();
        t.status = status;
        t.status_message = message.or(t.status_message);
        // Not a server observation: written directly.
        self.shared.state.send_replace(t);
    }
}

/// 2026-07-28: follow the task of `shared` to its end with `tasks/get` at its
/// `pollIntervalMs` (clamped, see [`poll_interval`]); answer each new `inputRequests`
/// entry with the client's handlers and send the answers with `tasks/update`; the outcome
/// is the inline `result` or `error`. A question the client cannot answer cancels the
/// task (the extension has no way to send a refusal) and is the outcome's error.
///
/// Spec (SEP-2663): "Clients SHOULD respect the `pollIntervalMs` provided in responses";
/// "the client SHOULD fulfill the outstanding requests in `inputRequests` by sending one
/// or more `tasks/update` requests with corresponding `inputResponses`. After sending a
/// `tasks/update`, the client SHOULD continue observing the task's status via polling";
/// "Clients SHOULD deduplicate `inputRequests` keys across consecutive polls"; "Clients
/// SHOULD track `inputRequests` keys to avoid responding to requests more than once."
async fn drive_modern(client: &Client, shared: &std::sync::Weak<TaskShared>) -> ResultCall {
    let Some(task_id) = shared.upgrade().map(|s| s.task_id.clone()) else {
        return ResultCall::Failed(ClientError::Closed);
    };
    let mut answered = std::collections::HashSet::new();
    let mut failures = 0;
    loop {
        let detail = match client.get_task_detail(&task_id).await {
            Ok(d) => {
                failures = 0;
                d
            }
            Err(e) if e.is_retriable() && failures < MAX_RETRIES => {
                failures += 1;
                let wait = shared
                    .upgrade()
                    .map_or(DEFAULT_POLL_INTERVAL, |s| poll_interval(&s.current()));
                tokio::time::sleep(wait).await;
                continue;
            }
            Err(e) => return ResultCall::Failed(e),
        };
        match detail.outcome() {
            Some(Ok(outcome)) => return ResultCall::Done(outcome),
            Some(Err(e)) => return ResultCall::Failed(e),
            None => {}
        }
        let fresh: serde_json::Map<String, Value> = detail
            .input_requests
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| !answered.contains(k))
            .collect();
        if !fresh.is_empty() {
            let keys: Vec<String> = fresh.keys().cloned().collect();
            match client.answer_inputs(fresh, Some(&task_id)).await {
                Ok(responses) => {
                    if let Err(e) = client.update_task(&task_id, responses).await {
                        return ResultCall::Failed(e);
                    }
                    answered.extend(keys);
                    continue;
                }
                Err(e) => {
                    if let Err(c) = client.cancel_task_raw(&task_id).await {
                        tracing::debug!(task_id = %task_id, error = %c, "cancelling the unanswerable task failed");
                    }
                    return ResultCall::Failed(e);
                }
            }
        }
        tokio::time::sleep(poll_interval(&detail.task)).await;
    }
}

/// What [`await_status`] found.
enum Settled {
    /// The task is terminal: a `tasks/result` now gets its outcome.
    Terminal,
    /// The task waits for input: a `tasks/result` carries the questions.
    InputRequired,
    /// `tasks/get` failed with this error (the server no longer knows the task).
    Gone,
    /// The server's task store is unavailable: ask `tasks/result` again (it waits).
    Unavailable,
    /// The transport kept failing.
    Lost(ClientError),
}

/// `tasks/result` for the task of `shared`, robust against a receiver that answers it early.
///
/// Spec: "When a receiver receives a `tasks/result` request for a task in a non-terminal
/// status, it MUST block the response until the task reaches a terminal status." Some
/// do not: FastMCP 3 answers a running task at once with -32602 "Task not completed yet".
/// So an error is the task's outcome only when the task is terminal, and only when the
/// `tasks/result` was sent once the task was known to be terminal (an early error may
/// reach us after the task ended): otherwise `tasks/get` is polled at the task's
/// `pollInterval` (clamped, see [`poll_interval`]) until the task is terminal (or
/// `input_required`, whose questions travel on `tasks/result`), and `tasks/result` is sent
/// again. An error for a task `tasks/get` does not know (unknown, expired) stands.
async fn fetch_result(client: &Client, shared: &std::sync::Weak<TaskShared>) -> ResultCall {
    let Some(task_id) = shared.upgrade().map(|s| s.task_id.clone()) else {
        return ResultCall::Failed(ClientError::Closed);
    };
    let mut known_terminal = false;
    let mut outage = StoreOutage::default();
    loop {
        // Whether this tasks/result is sent once the task is known to be terminal.
        known_terminal = known_terminal
            || shared
                .upgrade()
                .is_some_and(|s| s.current().status.is_terminal());
        let r = client
            .request_unbounded(methods::TASKS_RESULT, Some(json!({ "taskId": task_id })))
            .await;
        let (method, error) = match r {
            Ok(v) => {
                outage.over(shared);
                return ResultCall::Done(Ok(v));
            }
            Err(e) if e.is_store_unavailable() => {
                if outage.wait(shared, &task_id, &e).await {
                    continue;
                }
                return ResultCall::Failed(e);
            }
            Err(ClientError::Rpc { method, error }) => (method, error),
            Err(e) => return ResultCall::Failed(e),
        };
        outage.over(shared);
        if known_terminal {
            return ResultCall::Done(Err(error));
        }
        match await_status(client, shared, &task_id).await {
            Settled::Terminal => {
                tracing::debug!(task_id = %task_id, error = %error, "tasks/result answered before the task ended; asking again");
                known_terminal = true;
            }
            Settled::InputRequired => {
                tracing::debug!(task_id = %task_id, error = %error, "tasks/result answered early; the task waits for input: asking again");
            }
            Settled::Unavailable => {}
            Settled::Gone => return ResultCall::Failed(ClientError::Rpc { method, error }),
            Settled::Lost(e) => return ResultCall::Failed(e),
        }
    }
}

/// A run of "task store unavailable" answers to `tasks/result`.
#[derive(Default)]
struct StoreOutage {
    /// When the first came, and the delay before the next try.
    since: Option<(tokio::time::Instant, backon::ExponentialBackoff)>,
}

impl StoreOutage {
    /// The server answered `error` (its task store is unavailable): tell the task's
    /// watchers, wait, and say whether to ask again (within [`STORE_OUTAGE_RETRY`]).
    ///
    /// Spec (basic, JSON-RPC): -32603 is an internal error, which says nothing of the
    /// task: the task itself goes on, and its outcome is kept.
    async fn wait(
        &mut self,
        shared: &std::sync::Weak<TaskShared>,
        task_id: &str,
        error: &ClientError,
    ) -> bool {
        use backon::BackoffBuilder;
        let (since, delays) = self.since.get_or_insert_with(|| {
            let why = format!("the server's task store is unavailable ({error}); retrying");
            tracing::warn!(task_id = %task_id, "{why}");
            if let Some(s) = shared.upgrade() {
                s.notice.send_replace(Some(why));
            }
            let delays = backon::ExponentialBuilder::new()
                .with_min_delay(STORE_RETRY_FIRST)
                .with_max_delay(STORE_RETRY_MAX)
                .without_max_times()
                .build();
            (tokio::time::Instant::now(), delays)
        });
        if since.elapsed() >= STORE_OUTAGE_RETRY {
            return false;
        }
        tokio::time::sleep(delays.next().unwrap_or(STORE_RETRY_MAX)).await;
        true
    }

    /// An answer other than "unavailable" came: the outage is over.
    fn over(&mut self, shared: &std::sync::Weak<TaskShared>) {
        if self.since.take().is_some()
            && let Some(s) = shared.upgrade()
        {
            s.notice.send_replace(None);
        }
    }
}

/// Poll `tasks/get` (at once, then at the task's `pollInterval`) until the task is
/// terminal, or `input_required` after at least one interval (so that a receiver that
/// answers `tasks/result` early is not asked in a tight loop).
async fn await_status(
    client: &Client,
    shared: &std::sync::Weak<TaskShared>,
    task_id: &str,
) -> Settled {
    let mut failures = 0;
    let mut wait = None;
    loop {
        if let Some(d) = wait {
            tokio::time::sleep(d).await;
        }
        let got = client
            .request(methods::TASKS_GET, Some(json!({ "taskId": task_id })))
            .await
            .and_then(|v| parse_task(&v));
        match got {
            Ok(t) => {
                failures = 0;
                let status = t.status;
                let interval = poll_interval(&t);
                match shared.upgrade() {
                    Some(s) => s.observe(t),
                    None => return Settled::Lost(ClientError::Closed),
                }
                if status.is_terminal() {
                    return Settled::Terminal;
                }
                if status == TaskStatus::InputRequired && wait.is_some() {
                    return Settled::InputRequired;
                }
                wait = Some(interval);
            }
            Err(e) if e.is_retriable() && failures < MAX_RETRIES => {
                failures += 1;
                wait = Some(wait.unwrap_or(DEFAULT_POLL_INTERVAL));
            }
            // The server's store is down for a while: tasks/result rides it out.
            Err(e) if e.is_store_unavailable() => return Settled::Unavailable,
            Err(ClientError::Rpc { .. }) => return Settled::Gone,
            Err(e) => return Settled::Lost(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
