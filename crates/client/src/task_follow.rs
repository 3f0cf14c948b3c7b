//! Following a task to its end in the background: in 2026-07-28 by polling `tasks/get`
//! and answering its `inputRequests` ([`crate::follow`]); in 2025-11-25 by `tasks/result`, robust against a
//! receiver that answers it early and against the server's task store being unavailable.

use std::time::Duration;

use mcp_tasks_proto::{ErrorObject, methods};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::ClientError;
use crate::client::Client;
use crate::follow::result::{Next, ResultAsker, follow_result};
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

/// Follow the task of `shared` to its end as its revision does: [`drive_modern`] in
/// 2026-07-28, [`fetch_result`] in 2025-11-25.
pub(crate) async fn follow_task(
    client: &Client,
    shared: &std::sync::Weak<TaskShared>,
) -> ResultCall {
    let Some(task_id) = shared.upgrade().map(|s| s.task_id.clone()) else {
        return ResultCall::Failed(ClientError::Closed);
    };
    if client.revision().tasks_are_extension() {
        drive_modern(client, &task_id).await
    } else {
        fetch_result(client, shared, &task_id).await
    }
}

/// 2026-07-28: follow the task `task_id` to its end ([`follow_polled`] with
/// [`FollowPolicy::REQUESTOR`]): `tasks/get` at once, then at its `pollIntervalMs`; its
/// questions answered with the client's handlers.
async fn drive_modern(client: &Client, task_id: &str) -> ResultCall {
    match follow_polled(client, task_id, None, FollowPolicy::REQUESTOR).await {
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

/// `tasks/result` for the task `task_id` of `shared` ([`follow_result`]), robust against a
/// receiver that answers it early: an error is the task's outcome only when the
/// `tasks/result` was sent once the task was known to be terminal (by its handles, or
/// by [`settle`], polling `tasks/get` at the task's `pollInterval`, clamped, see
/// [`crate::poll_interval`]). An error for a task `tasks/get` does not know (unknown,
/// expired) stands; a server whose task store is unavailable is asked again for a while
/// ([`STORE_OUTAGE_RETRY`]).
async fn fetch_result(
    client: &Client,
    shared: &std::sync::Weak<TaskShared>,
    task_id: &str,
) -> ResultCall {
    let asker = OwnResult {
        client,
        shared,
        outage: Mutex::new(StoreOutage::default()),
    };
    match follow_result(&asker, task_id).await {
        Ok(end) => ResultCall::Done(end.outcome),
        Err(failed) => failed,
    }
}

/// The `tasks/result` of a [`Client`]'s own task: store outages ridden out, its handles'
/// view of the task's status taken into account.
struct OwnResult<'a> {
    client: &'a Client,
    shared: &'a std::sync::Weak<TaskShared>,
    outage: Mutex<StoreOutage>,
}

#[async_trait::async_trait]
impl ResultAsker for OwnResult<'_> {
    type Error = ResultCall;
    type Lost = ClientError;

    async fn result(&self, task_id: &str) -> Result<Value, ClientError> {
        let r = self
            .client
            .request_unbounded(methods::TASKS_RESULT, Some(json!({ "taskId": task_id })))
            .await;
        if r.is_ok() {
            self.outage.lock().over(self.shared);
        }
        r
    }

    fn answer_of(&self, e: ClientError) -> Result<ErrorObject, ClientError> {
        match e {
            e if e.is_store_unavailable() => Err(e),
            ClientError::Rpc { error, .. } => {
                self.outage.lock().over(self.shared);
                Ok(error)
            }
            e => Err(e),
        }
    }

    fn known_terminal(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|s| s.current().status.is_terminal())
    }

    async fn settle(&self, task_id: &str) -> Result<TaskDetail, ClientError> {
        let got = settle(self.client, task_id, FollowPolicy::REQUESTOR).await;
        if self.shared.upgrade().is_none() {
            return Err(ClientError::Closed);
        }
        got
    }

    /// A store outage is ridden out: its watchers told, asked again after a delay.
    async fn lost(&self, task_id: &str, e: ClientError) -> Next<ResultCall> {
        if !e.is_store_unavailable() {
            return Next::Stop(ResultCall::Failed(e));
        }
        let wait = self.outage.lock().next_wait(self.shared, task_id, &e);
        match wait {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                Next::Again
            }
            None => Next::Stop(ResultCall::Failed(e)),
        }
    }

    async fn unsettled(
        &self,
        _task_id: &str,
        e: ClientError,
        answer: ErrorObject,
    ) -> Next<ResultCall> {
        match e {
            // The server's store is down for a while: tasks/result rides it out.
            e if e.is_store_unavailable() => Next::Again,
            // The server no longer knows the task: the answer stands.
            ClientError::Rpc { .. } => Next::Stop(ResultCall::Failed(ClientError::Rpc {
                method: methods::TASKS_RESULT.to_owned(),
                error: answer,
            })),
            e => Next::Stop(ResultCall::Failed(e)),
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
    /// watchers, and say how long to wait before asking again; `None` past
    /// [`STORE_OUTAGE_RETRY`].
    ///
    /// Spec (basic, JSON-RPC): -32603 is an internal error, which says nothing of the
    /// task: the task itself goes on, and its outcome is kept.
    fn next_wait(
        &mut self,
        shared: &std::sync::Weak<TaskShared>,
        task_id: &str,
        error: &ClientError,
    ) -> Option<Duration> {
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
            return None;
        }
        Some(delays.next().unwrap_or(STORE_RETRY_MAX))
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
