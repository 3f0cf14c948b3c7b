//! The relay of a running task's requests to its requestor over `tasks/result`, and the
//! routing of the requestor's answers back to the task (the table's entries are in
//! [`running`](super::running)).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use mcp_tasks_proto::mcp::set_related_task;
use mcp_tasks_proto::{ErrorObject, RequestId, codes};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::mailbox::Posted;
use super::running::{OpenDeliverer, PendingAnswer, PendingInput, RunningTask};
use super::{Requester, TaskEngine};
use crate::channel::{RequestSender, RequestorChannel};
use crate::status::TaskStatus;
use crate::store::{Transition, TransitionResult};

impl TaskEngine {
    /// Route the answer `from` a requester to a request the engine sent (by JSON-RPC
    /// id). Returns `false` when the id is not one of ours (or its task is gone: a late
    /// answer is ignored), and when `from` is not the requester the task belongs to: such
    /// an answer is ignored (the request stays pending), logged at debug and counted in
    /// [`Self::failed_lookups`].
    ///
    /// Issue 15: an answer must come from the requester the task belongs to (its
    /// principal with authentication, its session without); the ids carry 122 random bits
    /// besides.
    pub fn deliver_answer(
        &self,
        id: &RequestId,
        from: &Requester,
        outcome: Result<Value, ErrorObject>,
    ) -> bool {
        let pending = {
            let mut answers = self.inner.answers.lock();
            let Some(p) = answers.get(id) else {
                return false;
            };
            let Some(task) = p.task.upgrade() else {
                answers.remove(id);
                return false;
            };
            if !task.may_answer(from, false) {
                self.inner.failed_lookups.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    task_id = %task.task_id,
                    principal = ?from.principal,
                    "an answer to a task's request from another requester was ignored"
                );
                return false;
            }
            answers.remove(id)
        };
        match pending {
            Some(p) => {
                let _ = p.tx.send(outcome);
                true
            }
            None => false,
        }
    }

    /// How many answers to relayed requests were refused because they came from another
    /// requester than the one the task belongs to (a metric of probing).
    pub fn failed_lookups(&self) -> u64 {
        self.inner.failed_lookups.load(Ordering::Relaxed)
    }

    /// The requests task `task_id` is waiting to have answered, oldest first, as
    /// `(id, method, params)`: what the tasks extension shows as a task's `inputRequests`
    /// (keyed by the id, which is unique for the task's lifetime and stable until
    /// answered) and answers through [`Self::deliver_answer`]. Empty when the task waits on
    /// nothing or runs in another process.
    pub fn pending_inputs(&self, task_id: &str) -> Vec<(RequestId, String, Value)> {
        let Some(task) = self.running(task_id) else {
            return Vec::new();
        };
        task.input
            .lock()
            .queue
            .iter()
            .map(|p| (p.id.clone(), p.method.clone(), p.params.clone()))
            .collect()
    }

    /// Whether `id` names a request the engine is waiting on.
    pub fn is_engine_request(id: &RequestId) -> bool {
        matches!(id, RequestId::String(s) if s.starts_with(REQUEST_ID_PREFIX))
    }
}

const REQUEST_ID_PREFIX: &str = "mcp-tasks:";

/// The JSON-RPC id of the `n`th request task `task_id` relays:
/// `mcp-tasks:<taskId>:<n>:<32 hex digits>`, the last part a UUID v4 (122 bits from the
/// OS CSPRNG), so that nobody can guess an id from another.
fn relayed_request_id(task_id: &str, n: u64) -> RequestId {
    RequestId::String(format!(
        "{REQUEST_ID_PREFIX}{task_id}:{n}:{}",
        uuid::Uuid::new_v4().simple()
    ))
}

/// One open `tasks/result` that carries a task's pending requests.
pub(super) struct Deliverer {
    pub(super) task: Arc<RunningTask>,
    pub(super) generation: u64,
    pub(super) sender: Arc<dyn RequestSender>,
    /// Whether it has had its first delivery (everything pending).
    pub(super) started: bool,
}

impl Deliverer {
    pub(super) fn register(task: Arc<RunningTask>, sender: Arc<dyn RequestSender>) -> Self {
        let generation = {
            let mut st = task.input.lock();
            st.next_gen += 1;
            let g = st.next_gen;
            st.deliverers.push(OpenDeliverer {
                generation: g,
                sender: Arc::clone(&sender),
            });
            g
        };
        Self {
            task,
            generation,
            sender,
            started: false,
        }
    }

    /// Send what this stream should carry and has not carried yet. The first time: every
    /// pending request (but not, on a shared connection, what is in flight on another
    /// open `tasks/result` of it). Later, while it is the newest: what no open stream
    /// carries.
    pub(super) async fn deliver(&mut self) {
        let first = !self.started;
        self.started = true;
        let own = self.sender.is_own_stream();
        let to_send: Vec<(RequestId, String, Value)> = {
            let mut st = self.task.input.lock();
            let newest = st.deliverers.last().map(|d| d.generation) == Some(self.generation);
            if !first && !newest {
                return;
            }
            let carried: Vec<Vec<bool>> = st
                .queue
                .iter()
                .map(|p| p.sent_on.iter().map(|g| st.is_live_shared(*g)).collect())
                .collect();
            let generation = self.generation;
            st.queue
                .iter_mut()
                .zip(carried)
                .filter(|(p, shared)| {
                    !p.sent_on.contains(&generation)
                        && if first {
                            own || !shared.iter().any(|s| *s)
                        } else {
                            p.sent_on.is_empty()
                        }
                })
                .map(|(p, _)| {
                    p.sent_on.push(generation);
                    (p.id.clone(), p.method.clone(), p.params.clone())
                })
                .collect()
        };
        for (id, method, params) in to_send {
            if let Err(e) = self.sender.send_request(id.clone(), &method, params).await {
                tracing::debug!(error = %e, "could not relay a task request; it stays queued");
                let mut st = self.task.input.lock();
                if let Some(p) = st.queue.iter_mut().find(|p| p.id == id) {
                    p.sent_on.retain(|g| *g != self.generation);
                }
            }
        }
    }
}

impl Drop for Deliverer {
    fn drop(&mut self) {
        let mut st = self.task.input.lock();
        st.deliverers.retain(|d| d.generation != self.generation);
        for p in &mut st.queue {
            // Unanswered: send again, with the same id, on the next tasks/result.
            p.sent_on.retain(|g| *g != self.generation);
        }
        drop(st);
        self.task.input_changed.notify_waiters();
    }
}

/// The requestor as seen from inside a running task: requests are queued, the task moves
/// to `input_required`, and the requests travel on the requestor's `tasks/result`.
pub(super) struct TaskChannel {
    pub(super) engine: TaskEngine,
    pub(super) task: Arc<RunningTask>,
}

/// Removes a pending request when its waiter goes away (answered, cancelled, dropped).
pub(super) struct PendingGuard<'a> {
    pub(super) engine: &'a TaskEngine,
    pub(super) task: &'a RunningTask,
    pub(super) id: RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.task.input.lock().queue.retain(|p| p.id != self.id);
        self.engine.inner.answers.lock().remove(&self.id);
    }
}

impl TaskChannel {
    async fn set_status(&self, to: TaskStatus, message: Option<String>) {
        let t = Transition {
            task_id: self.task.task_id.clone(),
            to,
            status_message: message,
            outcome: None,
            at_ms: self.engine.now(),
        };
        match self.engine.inner.store.transition(t).await {
            Ok(TransitionResult::Applied(rec)) => self.engine.announce(&rec).await,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(task_id = %self.task.task_id, error = %e, "status change not stored")
            }
        }
    }
}

#[async_trait]
impl RequestorChannel for TaskChannel {
    /// Spec: "When a task receiver has messages for the requestor that are necessary to
    /// complete the task, the receiver SHOULD move the task to the `input_required`
    /// status." and "The receiver MUST include the `io.modelcontextprotocol/related-task`
    /// metadata in the request to associate it with the task."
    async fn request(&self, method: &str, mut params: Value) -> Result<Value, ErrorObject> {
        if !params.is_object() {
            params = json!({});
        }
        set_related_task(&mut params, &self.task.task_id);
        let (tx, rx) = oneshot::channel();
        let max = self.engine.inner.policy.max_pending_inputs_per_task;
        let mailbox = self.engine.mailbox();
        let mut posted = None;
        let guard = {
            let _lock = self.task.status_lock.lock().await;
            let id = {
                let mut st = self.task.input.lock();
                // Bounded: a task cannot queue requests for its requestor without end.
                if st.queue.len() >= max {
                    return Err(ErrorObject::internal(format!(
                        "the task already waits on {max} requests for its requestor (the most a task may; `--max-pending-inputs`): {method} was not sent"
                    )));
                }
                st.next_request += 1;
                let id = relayed_request_id(&self.task.task_id, st.next_request);
                self.engine.inner.answers.lock().insert(
                    id.clone(),
                    PendingAnswer {
                        task: Arc::downgrade(&self.task),
                        tx,
                    },
                );
                let copy = mailbox.is_some().then(|| params.clone());
                st.queue.push(PendingInput {
                    id: id.clone(),
                    method: method.to_owned(),
                    params,
                    sent_on: Vec::new(),
                });
                (id, copy)
            };
            let (id, copy) = id;
            let guard = PendingGuard {
                engine: &self.engine,
                task: &self.task,
                id,
            };
            if let (Some(inputs), Some(params)) = (mailbox, copy) {
                let p = Posted::post(&self.engine, inputs, &self.task, &guard.id, method, params);
                posted = Some(p.await?);
            }
            self.set_status(
                TaskStatus::InputRequired,
                Some(format!("Waiting for the requestor to answer {method}")),
            )
            .await;
            self.task.input_changed.notify_waiters();
            guard
        };
        let answer = tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(ErrorObject::internal("the task ended before the request was answered"))),
            () = self.task.cancel.cancelled() => Err(ErrorObject::new(codes::TASK_CANCELLED, "the task was cancelled")),
            r = async { match posted.as_mut() { Some(p) => p.answer().await, None => std::future::pending().await } } => r,
        };
        drop(posted);
        {
            let _lock = self.task.status_lock.lock().await;
            drop(guard);
            let empty = self.task.input.lock().queue.is_empty();
            // Spec: "When the receiver receives all required input, the task SHOULD
            // transition out of input_required status (typically back to working)."
            if empty && !self.task.cancel.is_cancelled() {
                self.set_status(TaskStatus::Working, None).await;
            }
        }
        answer
    }

    async fn notify(&self, method: &str, mut params: Value) {
        if !params.is_object() {
            params = json!({});
        }
        set_related_task(&mut params, &self.task.task_id);
        self.task.notify_requestor(method, params).await;
    }
}
