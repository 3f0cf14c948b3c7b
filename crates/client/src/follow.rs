//! Following a 2026-07-28 task to its end by polling `tasks/get` and answering its
//! `inputRequests` with `tasks/update`: the one loop that serves a [`crate::Client`]'s
//! task handles and a program that follows the tasks of a server it passes calls on to
//! (the gateway's upstream tasks). Each provides the requests and the answers to the
//! task's questions as a [`TaskPeer`], and says with a [`FollowPolicy`] where the two
//! differ in what they report.

use std::collections::HashSet;

use async_trait::async_trait;
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::TaskStatus;
use serde_json::{Map, Value};

use crate::ClientError;
use crate::modern::{Report, TaskDetail, TaskDetailExt};

pub mod result;
use crate::task_state::{DEFAULT_POLL_INTERVAL, MAX_RETRIES, MIN_POLL_INTERVAL, poll_interval};

/// What a task follower sends, and who answers the task's questions.
#[async_trait]
pub trait TaskPeer: Send + Sync {
    /// `tasks/get` of `task_id`, read as a `DetailedTask`.
    ///
    /// # Errors
    /// The request's error.
    async fn get(&self, task_id: &str) -> Result<TaskDetail, ClientError>;

    /// `tasks/update` of `task_id` with `responses` (its `inputResponses`).
    ///
    /// # Errors
    /// The request's error.
    async fn update(&self, task_id: &str, responses: Map<String, Value>)
    -> Result<(), ClientError>;

    /// `tasks/cancel` of `task_id`.
    ///
    /// # Errors
    /// The request's error.
    async fn cancel(&self, task_id: &str) -> Result<(), ClientError>;

    /// The answers to the task's questions `requests` (`inputRequests` entries, by key).
    ///
    /// # Errors
    /// [`ClientError::Unanswered`] for a question that got no answer.
    async fn answer(
        &self,
        task_id: &str,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>, ClientError>;
}

/// Where followers of a task differ in what they show; one loop serves all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FollowPolicy {
    /// How many times in a row a lost `tasks/get` (transport error, timeout) is asked
    /// again before its error stands.
    pub retries: u32,
    /// Whether a question that got no answer cancels the task (`tasks/cancel`) before
    /// its error is returned.
    pub cancel_unanswered: bool,
    /// How a terminal task's outcome is reported.
    pub report: Report,
}

impl FollowPolicy {
    /// The [`crate::Client`]'s: a lost `tasks/get` is asked again up to 8 times (a
    /// task goes on on the server while the network hiccups), an unanswerable question
    /// cancels the task (the extension has no way to send a refusal).
    pub const REQUESTOR: Self = Self {
        retries: MAX_RETRIES,
        cancel_unanswered: true,
        report: Report::Requestor,
    };

    /// A relay's (the gateway's upstream): a lost `tasks/get` fails at once (the relay
    /// reports the lost connection with its own reason, and follows the task again on
    /// the next connection when it resumes); an unanswered question is its caller's
    /// refusal, returned as is (the caller's own cancellation cancels the task).
    pub const RELAY: Self = Self {
        retries: 0,
        cancel_unanswered: false,
        report: Report::Relay,
    };
}

/// The most `inputRequests` keys [`follow_polled`] answers for one task: what it keeps to
/// answer each key once grows with every new key the receiver sends, so a receiver that
/// keeps asking new questions is stopped here (as a question that got no answer) rather
/// than growing the follower's memory without end.
pub const MAX_ANSWERED_KEYS: usize = 4096;

/// Follow the task `task_id` to its end: `seen` is the task as last seen (its
/// `CreateTaskResult`, or a `tasks/get` just read), acted on before the first
/// `tasks/get`; without it `tasks/get` is sent at once. Each new `inputRequests` entry
/// is answered once ([`TaskPeer::answer`]) and the answers sent with `tasks/update`,
/// after which the task is read again after [`MIN_POLL_INTERVAL`]; otherwise `tasks/get`
/// is sent at the task's `pollIntervalMs` (clamped, see [`poll_interval`]). The outcome
/// is the inline `result` or `error` ([`TaskDetailExt::outcome_as`] with the policy's
/// [`Report`]).
///
/// Spec (SEP-2663): "Clients SHOULD respect the `pollIntervalMs` provided in responses";
/// "the client SHOULD fulfill the outstanding requests in `inputRequests` by sending one
/// or more `tasks/update` requests with corresponding `inputResponses`. After sending a
/// `tasks/update`, the client SHOULD continue observing the task's status via polling";
/// "Clients SHOULD deduplicate `inputRequests` keys across consecutive polls"; "Clients
/// SHOULD track `inputRequests` keys to avoid responding to requests more than once."
///
/// # Errors
/// A request's error that stands ([`FollowPolicy::retries`]), the error of a question
/// that got no answer, or [`ClientError::Protocol`] once the task asked more than
/// [`MAX_ANSWERED_KEYS`] questions (cancelled, as for an unanswered question, by the
/// requestor's policy).
pub async fn follow_polled(
    peer: &dyn TaskPeer,
    task_id: &str,
    seen: Option<TaskDetail>,
    policy: FollowPolicy,
) -> Result<Result<Value, ErrorObject>, ClientError> {
    let mut answered = HashSet::new();
    let mut failures = 0;
    let mut last = seen;
    let mut wait = last
        .as_ref()
        .map_or(DEFAULT_POLL_INTERVAL, |d| poll_interval(&d.task));
    loop {
        if let Some(detail) = last.take() {
            if let Some(outcome) = detail.outcome_as(policy.report) {
                return outcome;
            }
            wait = poll_interval(&detail.task);
            let fresh: Map<String, Value> = detail
                .input_requests
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| !answered.contains(k))
                .collect();
            if !fresh.is_empty() {
                let keys: Vec<String> = fresh.keys().cloned().collect();
                let over = answered.len() + keys.len() > MAX_ANSWERED_KEYS;
                let answer = if over {
                    Err(ClientError::Protocol(format!(
                        "task {task_id} asked more than {MAX_ANSWERED_KEYS} questions; \
                         the rest are left unanswered"
                    )))
                } else {
                    peer.answer(task_id, fresh).await
                };
                let responses = match answer {
                    Ok(r) => r,
                    Err(e) => {
                        if policy.cancel_unanswered
                            && let Err(c) = peer.cancel(task_id).await
                        {
                            tracing::debug!(task_id = %task_id, error = %c, "cancelling the unanswerable task failed");
                        }
                        return Err(e);
                    }
                };
                peer.update(task_id, responses).await?;
                answered.extend(keys);
                // Read the task again soon: the answer may have finished it.
                wait = MIN_POLL_INTERVAL;
            }
            tokio::time::sleep(wait).await;
        }
        match peer.get(task_id).await {
            Ok(d) => {
                failures = 0;
                last = Some(d);
            }
            Err(e) if e.is_retriable() && failures < policy.retries => {
                failures += 1;
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// 2025-11-25: read `task_id` with `tasks/get` (at once, then at its `pollInterval`,
/// clamped, see [`poll_interval`]) until it is terminal, or waits for input: then after
/// one more interval, so that a receiver that answers `tasks/result` early is not asked
/// in a tight loop (the questions of an `input_required` task travel on `tasks/result`).
/// A lost `tasks/get` is asked again [`FollowPolicy::retries`] times.
///
/// Spec: "Requestors SHOULD respect the `pollInterval` provided in responses when
/// determining polling frequency."
///
/// # Errors
/// The `tasks/get` error that stands (the server's: it no longer knows the task).
pub async fn settle(
    peer: &dyn TaskPeer,
    task_id: &str,
    policy: FollowPolicy,
) -> Result<TaskDetail, ClientError> {
    let mut failures = 0;
    let mut wait = None;
    loop {
        if let Some(d) = wait {
            tokio::time::sleep(d).await;
        }
        match peer.get(task_id).await {
            Ok(d) => {
                failures = 0;
                if d.task.status.is_terminal() {
                    return Ok(d);
                }
                let interval = poll_interval(&d.task);
                if d.task.status == TaskStatus::InputRequired {
                    tokio::time::sleep(interval).await;
                    return Ok(d);
                }
                wait = Some(interval);
            }
            Err(e) if e.is_retriable() && failures < policy.retries => {
                failures += 1;
                wait = Some(wait.unwrap_or(DEFAULT_POLL_INTERVAL));
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use serde_json::json;
    use std::time::Duration;

    /// Answers `tasks/get` from a script, counts what else was sent.
    struct Scripted {
        gets: Mutex<Vec<Result<Value, ClientError>>>,
        updates: Mutex<Vec<Map<String, Value>>>,
        cancels: Mutex<u32>,
        refuse: bool,
    }

    impl Scripted {
        fn new(mut gets: Vec<Result<Value, ClientError>>, refuse: bool) -> Self {
            gets.reverse();
            Self {
                gets: Mutex::new(gets),
                updates: Mutex::new(Vec::new()),
                cancels: Mutex::new(0),
                refuse,
            }
        }
    }

    #[async_trait]
    impl TaskPeer for Scripted {
        async fn get(&self, _: &str) -> Result<TaskDetail, ClientError> {
            let next = self.gets.lock().pop().expect("a scripted tasks/get");
            TaskDetail::parse(&next?)
        }
        async fn update(&self, _: &str, r: Map<String, Value>) -> Result<(), ClientError> {
            self.updates.lock().push(r);
            Ok(())
        }
        async fn cancel(&self, _: &str) -> Result<(), ClientError> {
            *self.cancels.lock() += 1;
            Ok(())
        }
        async fn answer(
            &self,
            _: &str,
            requests: Map<String, Value>,
        ) -> Result<Map<String, Value>, ClientError> {
            if self.refuse {
                return Err(ClientError::Unanswered {
                    method: "sampling/createMessage".into(),
                    error: ErrorObject::new(-1, "no"),
                });
            }
            Ok(requests
                .keys()
                .map(|k| (k.clone(), json!({"ok": k})))
                .collect())
        }
    }

    fn task(status: &str, extra: Value) -> Value {
        let mut t = json!({"taskId": "t", "status": status, "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": null});
        if let (Some(t), Some(e)) = (t.as_object_mut(), extra.as_object()) {
            t.extend(e.clone());
        }
        t
    }

    fn lost() -> Result<Value, ClientError> {
        Err(ClientError::Timeout {
            method: "tasks/get".into(),
            timeout: Duration::from_secs(1),
        })
    }

    #[tokio::test(start_paused = true)]
    async fn the_requestor_asks_a_lost_tasks_get_again_and_the_relay_does_not() {
        let done = || Ok(task("completed", json!({"result": {"content": []}})));
        let peer = Scripted::new(vec![lost(), done()], false);
        let out = follow_polled(&peer, "t", None, FollowPolicy::REQUESTOR).await;
        assert_eq!(out.unwrap().unwrap(), json!({"content": []}));
        let peer = Scripted::new(vec![lost(), done()], false);
        let out = follow_polled(&peer, "t", None, FollowPolicy::RELAY).await;
        assert!(matches!(out, Err(ClientError::Timeout { .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn questions_are_answered_once_and_a_refusal_cancels_only_for_the_requestor() {
        let asking = || {
            task(
                "input_required",
                json!({"inputRequests": {"k": {"method": "roots/list"}}}),
            )
        };
        let peer = Scripted::new(vec![Ok(asking()), Ok(task("cancelled", json!({})))], false);
        let out = follow_polled(
            &peer,
            "t",
            Some(TaskDetail::parse(&asking()).unwrap()),
            FollowPolicy::RELAY,
        )
        .await;
        assert_eq!(peer.updates.lock().len(), 1, "the key `k` is answered once");
        let e = out.unwrap().unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                mcp_tasks_proto::codes::INTERNAL_ERROR,
                "upstream task t was cancelled"
            )
        );
        for (policy, cancels) in [(FollowPolicy::REQUESTOR, 1), (FollowPolicy::RELAY, 0)] {
            let peer = Scripted::new(vec![Ok(asking())], true);
            let out = follow_polled(&peer, "t", None, policy).await;
            assert!(matches!(out, Err(ClientError::Unanswered { .. })));
            assert_eq!(*peer.cancels.lock(), cancels);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_keeps_asking_new_questions_is_stopped_at_the_bound() {
        // Each read asks 1,000 new questions: four rounds are answered, the fifth would
        // pass MAX_ANSWERED_KEYS.
        let round = |r: usize| {
            let keys: Map<String, Value> = (0..1000)
                .map(|i| (format!("q{r}-{i}"), json!({"method": "roots/list"})))
                .collect();
            Ok(task("input_required", json!({"inputRequests": keys})))
        };
        for (policy, cancels) in [(FollowPolicy::REQUESTOR, 1), (FollowPolicy::RELAY, 0)] {
            let peer = Scripted::new((0..6).map(round).collect(), false);
            let out = follow_polled(&peer, "t", None, policy).await;
            let Err(ClientError::Protocol(why)) = out else {
                panic!("expected the bound's error, got {out:?}")
            };
            assert!(why.contains("asked more than 4096 questions"), "{why}");
            assert_eq!(peer.updates.lock().len(), 4, "four rounds answered");
            assert_eq!(*peer.cancels.lock(), cancels);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn settling_stops_at_terminal_or_input_required_and_retries_by_policy() {
        let working = || Ok(task("working", json!({"pollInterval": 200})));
        let asking = || Ok(task("input_required", json!({"pollInterval": 200})));
        let peer = Scripted::new(vec![working(), lost(), asking()], false);
        let started = tokio::time::Instant::now();
        let d = settle(&peer, "t", FollowPolicy::REQUESTOR).await.unwrap();
        assert_eq!(d.task.status, TaskStatus::InputRequired);
        assert!(peer.gets.lock().is_empty());
        // An interval after `working`, one after the lost read, one after `input_required`.
        assert_eq!(started.elapsed(), Duration::from_millis(600));
        let peer = Scripted::new(vec![working(), lost()], false);
        let e = settle(&peer, "t", FollowPolicy::RELAY).await.unwrap_err();
        assert!(matches!(e, ClientError::Timeout { .. }));
        let peer = Scripted::new(vec![Ok(task("failed", json!({})))], false);
        let d = settle(&peer, "t", FollowPolicy::RELAY).await.unwrap();
        assert_eq!(d.task.status, TaskStatus::Failed);
    }
}
