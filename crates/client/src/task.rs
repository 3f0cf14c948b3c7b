//! A task seen from the requestor: status, changes, waiting, the result, cancellation.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use mcp_tasks_proto::Revision;
use mcp_tasks_proto::mcp::{Task, TaskStatus};
use mcp_tasks_proto::{codes, methods};
use serde_json::{Value, json};

use crate::ClientError;
use crate::client::Client;
use crate::task_follow::follow_task;
use crate::task_state::{MAX_RETRIES, ResultCall, TaskShared, poll_interval};
use crate::types::{CallToolResult, parse_task};

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
            let outcome = follow_task(&client, &weak).await;
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
