//! The `tasks/*` queries: `tasks/get`, `tasks/list`, `tasks/result` and `tasks/cancel`.

use std::sync::Arc;

use mcp_tasks_proto::mcp::{Task, set_related_task};
use mcp_tasks_proto::{ErrorObject, methods};
use serde_json::Value;

use super::relay::Deliverer;
use super::{CANCELLED_MESSAGE, EndedBy, Requester, TaskEngine, cancelled_outcome};
use crate::audit::{Event, EventKind};
use crate::channel::RequestSender;
use crate::error::EngineError;
use crate::record::{Outcome, TaskRecord};
use crate::status::TaskStatus;
use crate::store::{ListQuery, Transition, TransitionResult};

/// How much of a task's record a query reads.
#[derive(Debug, Clone, Copy)]
pub(super) enum Read {
    /// All of it.
    Full,
    /// All but the request and outcome (see [`TaskStore::get_summary`]).
    Summary,
    /// All but the request (see [`TaskStore::get_without_request`]).
    Outcome,
}

/// First delay before a waiter reads its task again after the store failed; it doubles up
/// to [`REREAD_MAX_MS`].
const REREAD_FIRST_MS: u64 = 50;
/// Longest delay between two reads of a waiter while the store fails: a waiter sees the
/// store back within about this long.
const REREAD_MAX_MS: u64 = 1_000;

impl TaskEngine {
    /// The full record of `task_id`, read again by a `tasks/result` that waits on it. A
    /// waiter rides out a transient store outage: while the store is unavailable the read
    /// is tried again with backoff (50 ms doubling to 1 s), for as long as the engine
    /// tries to store an outcome ([`Policy::outcome_retry_ms`], `--outcome-retry`, 60 s
    /// by default): the outcome that the task's executor stores once the store is back
    /// reaches the waiter. Past that, or at shutdown, the error.
    ///
    /// Spec: "When a receiver receives a `tasks/result` request for a task in any other
    /// non-terminal status (`working` or `input_required`), it MUST block the response
    /// until the task reaches a terminal status."
    ///
    /// [`Policy::outcome_retry_ms`]: crate::policy::Policy::outcome_retry_ms
    async fn reread(&self, task_id: &str) -> Result<Option<TaskRecord>, EngineError> {
        use backon::BackoffBuilder;
        let mut delays = backon::ExponentialBuilder::new()
            .with_min_delay(std::time::Duration::from_millis(REREAD_FIRST_MS))
            .with_max_delay(std::time::Duration::from_millis(REREAD_MAX_MS))
            .without_max_times()
            .build();
        let mut deadline = None;
        loop {
            match self.inner.store.get(task_id).await {
                Ok(r) => {
                    if deadline.is_some() {
                        tracing::info!(task_id = %task_id, "the task store answers again; the waiting tasks/result goes on");
                    }
                    return Ok(r);
                }
                Err(e @ crate::StoreError::Unavailable(_)) => {
                    let now = tokio::time::Instant::now();
                    let until = *deadline.get_or_insert_with(|| {
                        tracing::warn!(task_id = %task_id, error = %e, "the task store is unavailable; the waiting tasks/result retries");
                        now + std::time::Duration::from_millis(self.inner.policy.outcome_retry_ms)
                    });
                    if now >= until || self.inner.shutdown.is_cancelled() {
                        return Err(e.into());
                    }
                    let delay = delays
                        .next()
                        .unwrap_or(std::time::Duration::from_millis(REREAD_MAX_MS));
                    tokio::select! {
                        () = tokio::time::sleep(delay.min(until - now)) => {}
                        () = self.inner.shutdown.cancelled() => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The record of `task_id` (as much as `read` says) if `who` may see it and it has not
    /// expired; `method` is the request's, for the lookup-failure limit and the audit.
    pub(super) async fn visible(
        &self,
        task_id: &str,
        who: &Requester,
        read: Read,
        method: &str,
    ) -> Result<TaskRecord, EngineError> {
        self.guard()
            .admit_lookup(who, method)
            .map_err(EngineError::RateLimited)?;
        let store = &self.inner.store;
        let rec = match read {
            Read::Full => store.get(task_id).await?,
            Read::Summary => store.get_summary(task_id).await?,
            Read::Outcome => store.get_without_request(task_id).await?,
        };
        self.seen_by(rec, who, task_id, method)
    }

    /// `rec` (the record of `task_id`, if any) if `who` may see it and it has not expired.
    pub(super) fn seen_by(
        &self,
        rec: Option<TaskRecord>,
        who: &Requester,
        task_id: &str,
        method: &str,
    ) -> Result<TaskRecord, EngineError> {
        let Some(rec) = rec.filter(|r| who.can_see(r)) else {
            // An unknown or foreign task id: what an enumeration attempt looks like.
            self.metrics().failed_lookup();
            self.guard().lookup_failed(who, method, task_id);
            self.shared_lookup_failed(who);
            return Err(EngineError::NotFound);
        };
        if rec.is_expired(self.now()) {
            return Err(EngineError::Expired);
        }
        Ok(rec)
    }

    /// `tasks/get`.
    ///
    /// # Errors
    /// Not found (also for a foreign task), expired, or a store failure.
    pub async fn get(&self, task_id: &str, who: &Requester) -> Result<Task, EngineError> {
        Ok(self
            .visible(task_id, who, Read::Summary, methods::TASKS_GET)
            .await?
            .to_wire())
    }

    /// `tasks/get` as a requestor's poll: [`Self::get`], then the `poll` rate limit (a
    /// poll sooner than the task's `pollInterval` after the previous one is over-fast: it
    /// is watched, and refused once the requester's `poll` allowance is spent), and the
    /// audit line of a retrieval when the task is terminal.
    ///
    /// Spec (SEP-2663): "Servers MAY rate-limit clients polling more frequently than the
    /// recorded `pollIntervalMs`."
    ///
    /// # Errors
    /// As [`Self::get`], and [`EngineError::RateLimited`].
    pub async fn poll(&self, task_id: &str, who: &Requester) -> Result<Task, EngineError> {
        let rec = self
            .visible(task_id, who, Read::Summary, methods::TASKS_GET)
            .await?;
        self.polled(&rec, who)?;
        Ok(rec.to_wire())
    }

    /// A `tasks/get` of `rec` by `who`: the polling-rate check, and the audit line of a
    /// terminal task's retrieval.
    fn polled(&self, rec: &TaskRecord, who: &Requester) -> Result<(), EngineError> {
        let interval = std::time::Duration::from_millis(rec.task.poll_interval_ms.unwrap_or(0));
        self.guard()
            .poll(who, methods::TASKS_GET, &rec.task.task_id, interval)
            .map_err(EngineError::RateLimited)?;
        if rec.status.is_terminal() {
            self.audit_retrieved(rec, who, methods::TASKS_GET);
        }
        Ok(())
    }

    /// `tasks/get` of the 2026-07-28 tasks extension, whose answer carries a terminal
    /// task's outcome inline, in one store read: the task (as [`Self::poll`] when `poll`,
    /// else as [`Self::get`]) and, when it is terminal, its stored outcome as
    /// [`Self::terminal_outcome`] decodes it, without the related-task `_meta` (the
    /// extension's inline result has none).
    ///
    /// Spec (SEP-2663, `tasks/get`): "If the status is `completed`, the server MUST return
    /// a `Task` object with status `completed` and a `result` field".
    ///
    /// # Errors
    /// As [`Self::poll`] (or [`Self::get`]).
    pub async fn get_with_outcome(
        &self,
        task_id: &str,
        who: &Requester,
        poll: bool,
    ) -> Result<(Task, Option<Result<Value, ErrorObject>>), EngineError> {
        let (task, outcome) = self.get_with_stored_outcome(task_id, who, poll).await?;
        let outcome = outcome.map(|o| {
            o.decode().map(|mut v| {
                mcp_tasks_proto::meta::strip_related_task(&mut v);
                v
            })
        });
        Ok((task, outcome))
    }

    /// [`Self::get_with_outcome`] with the outcome as stored (its JSON text, not decoded):
    /// for an answer that writes the stored text as it is rather than through a `Value`.
    /// The stored text may carry a related-task `_meta` that the answer must not: the
    /// caller strips it.
    ///
    /// # Errors
    /// As [`Self::poll`] (or [`Self::get`]).
    pub async fn get_with_stored_outcome(
        &self,
        task_id: &str,
        who: &Requester,
        poll: bool,
    ) -> Result<(Task, Option<crate::Outcome>), EngineError> {
        let mut rec = self
            .visible(task_id, who, Read::Outcome, methods::TASKS_GET)
            .await?;
        if poll {
            self.polled(&rec, who)?;
        }
        let outcome = rec.outcome.take().filter(|_| rec.status.is_terminal());
        Ok((rec.to_wire(), outcome))
    }

    fn audit_retrieved(&self, rec: &TaskRecord, who: &Requester, method: &str) {
        self.guard().record_with(|| {
            Event::new(EventKind::Retrieved)
                .who(who)
                .task(&rec.task.task_id)
                .method(method)
                .with("status", rec.status.as_str())
        });
    }

    /// The stored outcome of the terminal task `task_id`, as `tasks/result` would return
    /// it, without waiting and without an audit line of its own (for a read that has
    /// audited itself).
    ///
    /// # Errors
    /// Not found, expired, not terminal (-32602), or a store failure.
    pub async fn terminal_outcome(
        &self,
        task_id: &str,
        who: &Requester,
    ) -> Result<Result<Value, ErrorObject>, EngineError> {
        let rec = self
            .visible(task_id, who, Read::Full, methods::TASKS_GET)
            .await?;
        let Some(outcome) = rec.outcome.as_ref().filter(|_| rec.status.is_terminal()) else {
            return Err(EngineError::InvalidParams(format!(
                "task {task_id} has not finished"
            )));
        };
        Ok(outcome.decode().map(|mut v| {
            set_related_task(&mut v, task_id);
            v
        }))
    }

    /// `tasks/cancel`.
    ///
    /// Spec: "Receivers MUST reject cancellation requests for tasks already in a terminal
    /// status with error code -32602"; "Upon receiving a valid cancellation request,
    /// receivers SHOULD attempt to stop the task's execution and MUST transition the task
    /// to cancelled status before sending the response."
    ///
    /// # Errors
    /// Not found, expired, already terminal, or a store failure.
    pub async fn cancel(&self, task_id: &str, who: &Requester) -> Result<Task, EngineError> {
        let rec = self
            .visible(task_id, who, Read::Summary, methods::TASKS_CANCEL)
            .await?;
        if rec.status.is_terminal() {
            return Err(EngineError::AlreadyTerminal(rec.status));
        }
        let t = Transition {
            task_id: task_id.to_owned(),
            to: TaskStatus::Cancelled,
            status_message: Some(CANCELLED_MESSAGE.to_owned()),
            outcome: Some(Outcome::error(&cancelled_outcome(task_id))),
            at_ms: self.now(),
        };
        match self.inner.store.transition(t).await? {
            TransitionResult::Applied(rec) => {
                self.guard().record(
                    Event::new(EventKind::Cancelled)
                        .who(who)
                        .task(task_id)
                        .method(&rec.task.method)
                        .outcome("cancelled")
                        .with("status", rec.status.as_str())
                        .with("by", EndedBy::Requester.name()),
                );
                self.announce(&rec).await;
                self.stop_local(task_id);
                Ok(rec.to_wire())
            }
            TransitionResult::Rejected(rec) => Err(EngineError::AlreadyTerminal(rec.status)),
            TransitionResult::Missing => Err(EngineError::NotFound),
        }
    }

    /// `tasks/list`: one page.
    ///
    /// Spec: "If a task is retrievable via `tasks/get` for a requestor, it MUST be
    /// retrievable via `tasks/list` for that requestor." and "Receivers MUST include a
    /// `nextCursor` in the response if more tasks are available."
    ///
    /// # Errors
    /// -32602 for a bad cursor; a store failure.
    pub async fn list(
        &self,
        cursor: Option<&str>,
        who: &Requester,
    ) -> Result<(Vec<Task>, Option<String>), EngineError> {
        let scope = who
            .list_scope()
            .ok_or_else(|| EngineError::InvalidParams("tasks/list is not available".into()))?;
        let codec = self.cursor().await?;
        let after = match cursor {
            None => None,
            Some(c) => Some(
                codec
                    .decode(c, &scope)
                    .ok_or_else(|| EngineError::InvalidParams("Invalid cursor".into()))?,
            ),
        };
        let size = self.inner.policy.page_size.max(1);
        let q = ListQuery::new(scope.clone(), after, size + 1);
        let mut page = self.inner.store.list(q).await?;
        let next = if page.len() > size {
            page.truncate(size);
            page.last().map(|r| codec.encode(r.seq, &scope))
        } else {
            None
        };
        let now = self.now();
        let tasks: Vec<Task> = page
            .iter()
            .filter(|r| !r.is_expired(now))
            .map(TaskRecord::to_wire)
            .collect();
        self.guard().record_with(|| {
            Event::new(EventKind::Listed)
                .who(who)
                .method(methods::TASKS_LIST)
                .with("count", tasks.len())
        });
        Ok((tasks, next))
    }

    /// `tasks/result`: block until the task is terminal, relaying its pending requests on
    /// `sender` meanwhile, then return the stored outcome.
    ///
    /// Spec: "When a receiver receives a `tasks/result` request for a task in any other
    /// non-terminal status (`working` or `input_required`), it MUST block the response
    /// until the task reaches a terminal status." The wait wakes on the store's change
    /// signal; nothing polls.
    ///
    /// Spec: "When the requestor encounters the `input_required` status, it SHOULD
    /// preemptively call `tasks/result`." and "In the Streamable HTTP (SSE) transport,
    /// clients MAY disconnect from an SSE stream opened by the server in response to a
    /// `tasks/result` request at any time." Every new `tasks/result` of the requester the
    /// task belongs to gets every pending request (same JSON-RPC id), also those already
    /// sent on an older stream of its own that the client may have dropped (not those on
    /// the connection a stdio peer shares: they arrived); requests that come up later go
    /// on the newest. Another requester's `tasks/result` (one that can see the task
    /// without owning it) only waits for the outcome: it gets no requests. Without
    /// `sender` (a `tasks/result` answered as JSON only) the requests stay queued for the
    /// next stream.
    ///
    /// # Errors
    /// The task's JSON-RPC error outcome (`Ok(Err(..))` never: the stored error is the
    /// `Err`), or not found / expired / store failures.
    pub async fn result(
        &self,
        task_id: &str,
        who: &Requester,
        sender: Option<Arc<dyn RequestSender>>,
    ) -> Result<Result<Value, ErrorObject>, EngineError> {
        let mut changes = self.inner.store.subscribe(task_id);
        let mut rec = self
            .visible(task_id, who, Read::Full, methods::TASKS_RESULT)
            .await?;
        let mut deliverer: Option<Deliverer> = None;
        // The requests relayed from another process's mailbox on this stream.
        let mut sent_elsewhere = std::collections::HashSet::new();
        let _wait = (!rec.status.is_terminal()).then(|| self.metrics().result_wait());
        loop {
            if rec.status.is_terminal() {
                self.audit_retrieved(&rec, who, methods::TASKS_RESULT);
                let Some(outcome) = &rec.outcome else {
                    return Err(EngineError::Store(crate::StoreError::Corrupt(format!(
                        "terminal task {task_id} has no outcome"
                    ))));
                };
                return Ok(outcome.decode().map(|mut v| {
                    // Spec: "The tasks/result operation MUST include this metadata in its
                    // response, as the result structure itself does not contain the task ID."
                    set_related_task(&mut v, task_id);
                    v
                }));
            }
            let running = self.running(task_id);
            let notified = running.as_ref().map(|t| {
                let n = t.input_changed.notified();
                (Arc::clone(t), n)
            });
            let mut notified = notified.map(|(t, n)| (t, Box::pin(n)));
            if let (Some((task, n)), Some(sender)) = (notified.as_mut(), sender.as_ref()) {
                n.as_mut().enable();
                if deliverer.is_none() && task.may_answer(who, true) {
                    deliverer = Some(Deliverer::register(Arc::clone(task), Arc::clone(sender)));
                }
                if let Some(d) = deliverer.as_mut() {
                    d.deliver().await;
                }
            }
            if let (None, Some(sender), TaskStatus::InputRequired) =
                (&running, sender.as_ref(), rec.status)
            {
                self.relay_elsewhere(task_id, who, sender, &mut sent_elsewhere)
                    .await;
            }
            let expires = rec.expires_at_ms();
            tokio::select! {
                r = changes.changed() => {
                    if r.is_err() {
                        return Err(EngineError::ShuttingDown);
                    }
                }
                () = async { match notified { Some((_, n)) => n.await, None => std::future::pending().await } } => {}
            }
            rec = match self.reread(task_id).await? {
                Some(r) => r,
                None if expires.is_some_and(|e| self.now() >= e) => {
                    return Err(EngineError::Expired);
                }
                None => return Err(EngineError::NotFound),
            };
            if rec.is_expired(self.now()) {
                return Err(EngineError::Expired);
            }
        }
    }
}
