//! Creating a task, running its work, and storing its outcome (with retries).

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::relay::TaskChannel;
use super::running::{InputState, RunningTask};
use super::{
    Classifier, EndedBy, Requester, Runner, TaskEngine, TaskRun, TaskSpec, bounded_message,
    failed_transition, new_task_id,
};
use crate::audit::{Event, EventKind};
use crate::channel::RequestorChannel;
use crate::error::EngineError;
use crate::record::{NewTask, Outcome, TaskRecord};
use crate::status::TaskStatus;
use crate::store::{Transition, TransitionResult};

/// First delay before storing a task's outcome again after the store failed; it doubles
/// up to [`OUTCOME_RETRY_MAX_MS`].
const OUTCOME_RETRY_FIRST_MS: u64 = 50;
/// Longest delay between two attempts to store a task's outcome.
const OUTCOME_RETRY_MAX_MS: u64 = 5_000;

/// The delays between tries to store an outcome: from [`OUTCOME_RETRY_FIRST_MS`],
/// doubling, up to [`OUTCOME_RETRY_MAX_MS`] (the workspace's one backoff, [`backon`]'s).
fn outcome_retries() -> backon::ExponentialBackoff {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(OUTCOME_RETRY_FIRST_MS))
        .with_max_delay(Duration::from_millis(OUTCOME_RETRY_MAX_MS))
        .without_max_times()
        .build()
}

fn next_delay(delays: &mut backon::ExponentialBackoff) -> Duration {
    delays
        .next()
        .unwrap_or(Duration::from_millis(OUTCOME_RETRY_MAX_MS))
}

impl TaskEngine {
    /// Create a task and start it.
    ///
    /// Spec: "Receivers that accept a task-augmented request MUST return a
    /// `CreateTaskResult` as the response. This result SHOULD be returned as soon as
    /// possible after accepting the task." The record is committed before this returns
    /// (no reply before commit); the work runs in the background.
    ///
    /// # Errors
    /// -32602 for a malformed `task` field, the limit error when the requester has too many
    /// active tasks, [`EngineError::RateLimited`] past the `create` rate limit (nothing is
    /// stored), -32603 when the store fails.
    pub async fn create(&self, spec: TaskSpec, runner: Runner) -> Result<TaskRecord, EngineError> {
        self.create_answered_by(spec, runner, None).await
    }

    /// [`Self::create`] for a requester without a connection of its own (2026-07-28): the
    /// task's relayed requests are bound to its principal only (without one, to no
    /// session: the task id is the capability, and a 2025-11-25 session that asks for its
    /// result claims them, as for a resumed task).
    ///
    /// # Errors
    /// As [`Self::create`].
    pub async fn create_stateless(
        &self,
        spec: TaskSpec,
        runner: Runner,
    ) -> Result<TaskRecord, EngineError> {
        let answerer = Requester {
            session: None,
            ..spec.requester.clone()
        };
        self.create_answered_by(spec, runner, Some(answerer)).await
    }

    /// [`Self::create`], its relayed requests answered by `answerer` (by default the
    /// requester).
    async fn create_answered_by(
        &self,
        spec: TaskSpec,
        runner: Runner,
        answerer: Option<Requester>,
    ) -> Result<TaskRecord, EngineError> {
        if self.inner.shutdown.is_cancelled() {
            return Err(EngineError::ShuttingDown);
        }
        self.guard()
            .admit_create(&spec.requester, &spec.method)
            .map_err(EngineError::RateLimited)?;
        self.admit_shared_create(&spec.requester, &spec.method)
            .await
            .map_err(EngineError::RateLimited)?;
        let ttl = self.inner.policy.resolve_ttl(&spec.task_field)?;
        let task_id = new_task_id();
        let TaskSpec {
            requester,
            method,
            params,
            origin,
            classify,
            ..
        } = spec;
        let tool = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // The stored text is the only copy of the params the engine keeps: the value goes
        // now (the runner has what it needs).
        // `serde_json::to_string` writes what `to_string` (`Display`) would, without its
        // formatter; a `Value` always serializes.
        let request = serde_json::to_string(&params).unwrap_or_default();
        drop(params);
        let new = NewTask {
            task_id: task_id.clone(),
            owner: requester.principal.clone(),
            quota_key: requester.quota_key(),
            created_at_ms: self.now(),
            ttl_ms: ttl,
            poll_interval_ms: Some(self.inner.policy.poll_interval_ms),
            method,
            request,
            executor: Some(self.inner.instance.clone()),
            status_message: None,
        };
        let rec = match self
            .inner
            .store
            .create(new, &self.inner.policy.limits)
            .await
        {
            Ok(rec) => rec,
            Err(e) => {
                // Store failures are counted by the store's wrapper (`Instrumented`).
                if matches!(e, crate::StoreError::LimitExceeded { .. }) {
                    self.metrics().rejected(crate::metrics::Rejection::Limit);
                }
                return Err(e.into());
            }
        };
        self.metrics().task_created(&rec, tool.as_deref());
        self.guard().record_with(|| {
            let event = Event::new(EventKind::Created)
                .who(&requester)
                .task(&task_id)
                .method(&rec.task.method)
                .with("ttlMs", ttl);
            match &tool {
                Some(t) => event.with("tool", t.as_str()),
                None => event,
            }
        });
        self.launch(
            task_id,
            answerer.unwrap_or(requester),
            origin,
            classify,
            runner,
        );
        Ok(rec)
    }

    /// Run `runner` for the stored task `task_id` in the background, until it ends or the
    /// task is cancelled or expires.
    pub(super) fn launch(
        &self,
        task_id: String,
        answerer: Requester,
        origin: Arc<dyn RequestorChannel>,
        classify: Classifier,
        runner: Runner,
    ) {
        let task = Arc::new(RunningTask {
            task_id: task_id.clone(),
            cancel: CancellationToken::new(),
            origin,
            answerer: Mutex::new(answerer),
            input: Mutex::new(InputState::default()),
            input_changed: Notify::new(),
            status_lock: tokio::sync::Mutex::new(()),
        });
        self.inner
            .running
            .lock()
            .insert(task_id.clone(), Arc::clone(&task));
        let channel: Arc<dyn RequestorChannel> = Arc::new(TaskChannel {
            engine: self.clone(),
            task: Arc::clone(&task),
        });
        let run = TaskRun {
            task_id: task_id.clone(),
            cancel: task.cancel.clone(),
            channel,
        };
        let fut = runner(run);
        let engine = self.clone();
        let ended_elsewhere = self.ended_elsewhere(&task_id);
        // Boxed in a statement of its own: spawning a future copies it (into the task's
        // cell, and on the way there), and this one holds the tool's future.
        let task_future = Box::pin(async move {
            let outcome = tokio::select! {
                biased;
                () = task.cancel.cancelled() => None,
                rec = ended_elsewhere => {
                    // Tell the requestor on its connection here, as the replica that
                    // cancelled it could not.
                    if let Some(rec) = rec {
                        let params = serde_json::to_value(rec.to_wire()).unwrap_or(Value::Null);
                        task.notify_requestor(mcp_tasks_proto::methods::TASK_STATUS, params).await;
                    }
                    None
                }
                r = fut => Some(r),
            };
            if let Some(outcome) = outcome {
                engine.finish(&task.task_id, outcome, classify).await;
            }
            engine.stop_local(&task.task_id);
        });
        tokio::spawn(task_future);
    }

    /// Resolves when task `task_id`, running here, ends through another process sharing
    /// the store (cancelled by a `tasks/cancel` another replica received, failed by its
    /// orphan sweep, deleted by its TTL sweep): with the record when there is one. Never
    /// for a store no other process writes ([`TaskStore::is_shared`]).
    ///
    /// Spec: "Upon receiving a valid cancellation request, receivers SHOULD attempt to stop
    /// the task's execution". The store's change signal wakes it (LISTEN/NOTIFY across
    /// processes); each wake-up costs one summary read.
    ///
    /// [`TaskStore::is_shared`]: crate::TaskStore::is_shared
    fn ended_elsewhere(
        &self,
        task_id: &str,
    ) -> impl std::future::Future<Output = Option<TaskRecord>> + Send + 'static {
        let store = Arc::clone(&self.inner.store);
        // Subscribed now, before the task can change.
        let changes = store.is_shared().then(|| store.subscribe(task_id));
        let task_id = task_id.to_owned();
        async move {
            let Some(mut changes) = changes else {
                return std::future::pending().await;
            };
            loop {
                if changes.changed().await.is_err() {
                    return std::future::pending().await;
                }
                match store.get_summary(&task_id).await {
                    Ok(Some(rec)) if !rec.status.is_terminal() => {}
                    Ok(rec) => return rec,
                    Err(e) => {
                        tracing::debug!(task_id = %task_id, error = %e, "could not read a running task's status");
                    }
                }
            }
        }
    }

    pub(super) async fn finish(
        &self,
        task_id: &str,
        outcome: Result<Value, ErrorObject>,
        classify: Classifier,
    ) {
        let (to, message, stored) = match &outcome {
            Ok(v) => {
                let (status, message) = classify(v);
                (status, message.map(bounded_message), Outcome::result(v))
            }
            Err(e) => (
                TaskStatus::Failed,
                Some(bounded_message(format!(
                    "Request failed: {} ({})",
                    e.message, e.code
                ))),
                Outcome::error(e),
            ),
        };
        drop(outcome);
        let t = Transition {
            task_id: task_id.to_owned(),
            to,
            status_message: message,
            outcome: Some(stored),
            at_ms: self.now(),
        };
        let stored = match self.store_outcome(t).await {
            Ok(r) => Some(r),
            Err(e) => {
                // A task that cannot be finished would stay `working` (its lease is ours,
                // so no sweep fails it) and its waiters would block until its TTL: record
                // the failure itself, once the store takes it.
                let err =
                    ErrorObject::internal(format!("The task's result could not be stored: {e}"));
                tracing::error!(task_id = %task_id, error = %e, "could not store the outcome of a task; storing its failure instead");
                self.store_failure(task_id, &err).await
            }
        };
        match stored {
            Some(TransitionResult::Applied(rec)) => {
                self.audit_finished(&rec, EndedBy::Work);
                self.announce(&rec).await;
            }
            Some(TransitionResult::Rejected(rec)) => {
                // Spec: "Once a task is cancelled, it MUST remain in cancelled status even if
                // execution continues to completion or fails." A late outcome is dropped.
                tracing::debug!(task_id = %task_id, status = %rec.status, "late outcome dropped");
            }
            Some(TransitionResult::Missing) => {
                tracing::debug!(task_id = %task_id, "outcome of a deleted task dropped")
            }
            None => {}
        }
    }

    /// Store a terminal transition within the policy's byte limits, retrying with backoff
    /// while the store fails, for up to
    /// [`Policy::outcome_retry_ms`](crate::policy::Policy::outcome_retry_ms). The last error when
    /// it never succeeded.
    pub(super) async fn store_outcome(
        &self,
        t: Transition,
    ) -> Result<TransitionResult, crate::StoreError> {
        let limits = self.inner.policy.limits;
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(self.inner.policy.outcome_retry_ms);
        let mut delays = outcome_retries();
        loop {
            match self.inner.store.transition_within(t.clone(), &limits).await {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let now = tokio::time::Instant::now();
                    if now >= deadline || self.inner.shutdown.is_cancelled() {
                        return Err(e);
                    }
                    let delay = next_delay(&mut delays);
                    tracing::warn!(task_id = %t.task_id, error = %e, retry_in = ?delay, "could not store the outcome of a task; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(delay.min(deadline - now)) => {}
                        () = self.inner.shutdown.cancelled() => return Err(e),
                    }
                }
            }
        }
    }

    /// Fail `task_id` with `err`, retrying every few seconds until the store takes it (the
    /// lease stays ours meanwhile, so no sweep fails the task in our place) or the engine
    /// shuts down (then the next start's lease check fails it).
    pub(super) async fn store_failure(
        &self,
        task_id: &str,
        err: &ErrorObject,
    ) -> Option<TransitionResult> {
        let mut delays = outcome_retries();
        loop {
            let t = failed_transition(task_id, err, self.now());
            match self.inner.store.transition(t).await {
                Ok(r) => return Some(r),
                Err(e) => {
                    let delay = next_delay(&mut delays);
                    tracing::warn!(task_id = %task_id, error = %e, retry_in = ?delay, "could not store the failure of a task; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = self.inner.shutdown.cancelled() => return None,
                    }
                }
            }
        }
    }
}
