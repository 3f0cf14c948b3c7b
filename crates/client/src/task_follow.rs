//! Following a task to its end in the background: in 2026-07-28 by polling `tasks/get`
//! and answering its `inputRequests` ([`crate::follow`]); in 2025-11-25 by `tasks/result`, robust against a
//! receiver that answers it early and against the server's task store being unavailable.

use std::time::Duration;

use mcp_tasks_proto::methods;
use serde_json::{Value, json};

use crate::ClientError;
use crate::client::Client;
use crate::follow::{FollowPolicy, TaskPeer, follow_polled, settle};
use crate::modern::TaskDetail;
use crate::task_state::{ResultCall, TaskShared};

/// How long `tasks/result` is tried again while the server answers that its task store is
/// unavailable (a database outage): from the first such answer. The task goes on on the
/// server meanwhile; past this the error stands.
pub(crate) const STORE_OUTAGE_RETRY: Duration = Duration::from_secs(120);
/// First delay before asking again after a "task store unavailable" answer; it doubles up
/// to [`STORE_RETRY_MAX`].
const STORE_RETRY_FIRST: Duration = Duration::from_millis(250);
/// Longest delay between two tries while the server's task store is unavailable.
const STORE_RETRY_MAX: Duration = Duration::from_secs(4);

/// 2026-07-28: follow the task of `shared` to its end ([`follow_polled`] with
/// [`FollowPolicy::REQUESTOR`]): `tasks/get` at once, then at its `pollIntervalMs`; its
/// questions answered with the client's handlers.
pub(crate) async fn drive_modern(
    client: &Client,
    shared: &std::sync::Weak<TaskShared>,
) -> ResultCall {
    let Some(task_id) = shared.upgrade().map(|s| s.task_id.clone()) else {
        return ResultCall::Failed(ClientError::Closed);
    };
    match follow_polled(client, &task_id, None, FollowPolicy::REQUESTOR).await {
        Ok(outcome) => ResultCall::Done(outcome),
        Err(e) => ResultCall::Failed(e),
    }
}

/// A client's task requests: `tasks/get` tells the task's handles what it read; the
/// questions are answered by the client's handlers.
#[async_trait::async_trait]
impl TaskPeer for Client {
    async fn get(&self, task_id: &str) -> Result<TaskDetail, ClientError> {
        self.get_task_detail(task_id).await
    }

    async fn update(
        &self,
        task_id: &str,
        responses: serde_json::Map<String, Value>,
    ) -> Result<(), ClientError> {
        self.update_task(task_id, responses).await
    }

    async fn cancel(&self, task_id: &str) -> Result<(), ClientError> {
        self.cancel_task_raw(task_id).await.map(drop)
    }

    async fn answer(
        &self,
        task_id: &str,
        requests: serde_json::Map<String, Value>,
    ) -> Result<serde_json::Map<String, Value>, ClientError> {
        self.answer_inputs(requests, Some(task_id)).await
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
pub(crate) async fn fetch_result(
    client: &Client,
    shared: &std::sync::Weak<TaskShared>,
) -> ResultCall {
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

/// Where the task stands once [`settle`]d (with [`FollowPolicy::REQUESTOR`]).
async fn await_status(
    client: &Client,
    shared: &std::sync::Weak<TaskShared>,
    task_id: &str,
) -> Settled {
    let got = settle(client, task_id, FollowPolicy::REQUESTOR).await;
    if shared.upgrade().is_none() {
        return Settled::Lost(ClientError::Closed);
    }
    match got {
        Ok(d) if d.task.status.is_terminal() => Settled::Terminal,
        Ok(_) => Settled::InputRequired,
        // The server's store is down for a while: tasks/result rides it out.
        Err(e) if e.is_store_unavailable() => Settled::Unavailable,
        Err(ClientError::Rpc { .. }) => Settled::Gone,
        Err(e) => Settled::Lost(e),
    }
}
