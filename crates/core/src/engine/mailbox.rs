//! A running task's requests to its requestor across the processes of a shared store
//! (several replicas on PostgreSQL), through the store's mailbox ([`TaskInputs`]).
//!
//! The relay in memory ([`super::relay`]) stays the path for everything that happens in the
//! process running the task. On a store with a mailbox ([`crate::TaskStore::inputs`]),
//! each request is also written there before the task moves to `input_required`, so that
//! another process can show it (`inputRequests` of a 2026-07-28 `tasks/get`) or relay it
//! (on a 2025-11-25 `tasks/result` stream, same JSON-RPC id and related-task `_meta`); an
//! answer that reaches a process not running the task is written back, and the store's
//! change signal of the task wakes the running process, which takes it. Cost: one write
//! per request, one read per change of the waiting task, one write per answer.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_tasks_proto::{ErrorObject, RequestId};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::running::RunningTask;
use super::{Requester, TaskEngine};
use crate::channel::RequestSender;
use crate::error::EngineError;
use crate::inputs::{InputRequest, TaskInputs};

/// Who may answer a task's requests over `tasks/result`, as the mailbox keeps it: the
/// principal with authentication, else the session (the relay's
/// `RunningTask::may_answer`).
fn answerer_key(who: &Requester) -> Option<String> {
    match (&who.principal, &who.session) {
        (Some(p), _) => Some(format!("principal:{p}")),
        (None, Some(s)) => Some(format!("session:{s}")),
        (None, None) => None,
    }
}

/// An answer as the mailbox keeps it.
fn encode(outcome: &Result<Value, ErrorObject>) -> Value {
    match outcome {
        Ok(v) => json!({ "result": v }),
        Err(e) => json!({ "error": e }),
    }
}

/// The answer the mailbox kept.
fn decode(mut v: Value) -> Result<Value, ErrorObject> {
    if let Some(e) = v.get_mut("error") {
        return Err(serde_json::from_value(e.take()).unwrap_or_else(|e| {
            ErrorObject::internal(format!("the stored answer is not an error object: {e}"))
        }));
    }
    Ok(v.get_mut("result").map(Value::take).unwrap_or(Value::Null))
}

/// A request of a task running here, written to the mailbox. Dropped (answered here,
/// cancelled, the task ended), it is removed from the mailbox in the background.
pub(super) struct Posted {
    inputs: Arc<dyn TaskInputs>,
    task_id: String,
    key: String,
    changes: watch::Receiver<u64>,
    taken: bool,
}

impl Posted {
    /// Write the request `id` of `task` to `inputs`. The task's change signal is
    /// subscribed first, so that no answer written afterwards is missed.
    ///
    /// # Errors
    /// -32603 when the store fails: the request is not sent (the requestor could not
    /// see it on another replica).
    pub(super) async fn post(
        engine: &TaskEngine,
        inputs: Arc<dyn TaskInputs>,
        task: &RunningTask,
        id: &RequestId,
        method: &str,
        params: Value,
    ) -> Result<Self, ErrorObject> {
        let key = match id {
            RequestId::String(s) => s.clone(),
            RequestId::Number(n) => n.to_string(),
        };
        let changes = engine.inner.store.subscribe(&task.task_id);
        let answerer = {
            let owner = task.answerer.lock();
            if owner.sees_all {
                None
            } else {
                answerer_key(&owner)
            }
        };
        let request = InputRequest {
            key: key.clone(),
            method: method.to_owned(),
            params,
            answerer,
        };
        inputs
            .put_request(&task.task_id, &request)
            .await
            .map_err(|e| {
                ErrorObject::internal(format!(
                    "{method} was not sent: the request could not be stored for the other replicas: {e}"
                ))
            })?;
        Ok(Self {
            inputs,
            task_id: task.task_id.clone(),
            key,
            changes,
            taken: false,
        })
    }

    /// The answer another process wrote: read once per change of the task.
    pub(super) async fn answer(&mut self) -> Result<Value, ErrorObject> {
        loop {
            if self.changes.changed().await.is_err() {
                return std::future::pending().await;
            }
            match self.inputs.take_answer(&self.key).await {
                Ok(Some(v)) => {
                    self.taken = true;
                    return decode(v);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(task_id = %self.task_id, error = %e, "could not read the mailbox of a task");
                }
            }
        }
    }
}

impl Drop for Posted {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let inputs = Arc::clone(&self.inputs);
        let key = std::mem::take(&mut self.key);
        let task_id = std::mem::take(&mut self.task_id);
        rt.spawn(async move {
            if let Err(e) = inputs.remove(&key).await {
                tracing::debug!(task_id = %task_id, error = %e, "a task's request stays in the mailbox until the task is deleted");
            }
        });
    }
}

impl TaskEngine {
    /// The store's mailbox, when other processes may serve this one's requestors.
    pub(super) fn mailbox(&self) -> Option<Arc<dyn TaskInputs>> {
        self.inner.store.inputs()
    }

    /// The requests task `task_id` waits to have answered, oldest first, as
    /// `(id, method, params)`, wherever it runs: [`Self::pending_inputs`] when it runs
    /// here, else what the store's mailbox holds for it (none on a store without one).
    /// The caller has checked that the requester may see the task.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn inputs_anywhere(
        &self,
        task_id: &str,
    ) -> Result<Vec<(RequestId, String, Value)>, EngineError> {
        if self.running(task_id).is_some() {
            return Ok(self.pending_inputs(task_id));
        }
        let Some(inputs) = self.mailbox() else {
            return Ok(Vec::new());
        };
        Ok(inputs
            .requests(task_id)
            .await?
            .into_iter()
            .map(|r| (RequestId::String(r.key), r.method, r.params))
            .collect())
    }

    /// Route the answer `from` a requester to the request `id`, wherever its task runs:
    /// [`Self::deliver_answer`] when it waits here; else, on a store with a mailbox,
    /// written there for the process running the task (in the background), if it is
    /// still unanswered and belongs to `from` as on one server (the principal with
    /// authentication, else the session; `from.sees_all` answers any). Returns `false`
    /// when the id is not one of the engine's, or nothing can take it.
    pub fn route_answer(
        &self,
        id: &RequestId,
        from: &Requester,
        outcome: Result<Value, ErrorObject>,
    ) -> bool {
        if self.inner.answers.lock().contains_key(id) || !Self::is_engine_request(id) {
            return self.deliver_answer(id, from, outcome);
        }
        let (Some(inputs), RequestId::String(key)) = (self.mailbox(), id) else {
            return false;
        };
        let answerer = if from.sees_all {
            None
        } else {
            match answerer_key(from) {
                Some(k) => Some(k),
                None => return false,
            }
        };
        let key = key.clone();
        let response = encode(&outcome);
        let engine = self.clone();
        tokio::spawn(async move {
            match inputs.answer(&key, answerer.as_deref(), &response).await {
                Ok(true) => {}
                Ok(false) => {
                    engine
                        .inner
                        .failed_lookups
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::debug!(
                        "an answer to a request no replica waits on for this requester was ignored"
                    );
                }
                Err(e) => {
                    tracing::warn!(error = %e, "an answer to a task's request could not be stored");
                }
            }
        });
        true
    }

    /// Whether `who`, a 2026-07-28 requester (a `tasks/update`: no connection binds it),
    /// may answer the requests task `task_id` relays, wherever it runs: with a principal
    /// when they are the principal's; without one only when they are bound to no session
    /// (a task created in 2026-07-28, whose id is the capability). A 2025-11-25 session's
    /// task keeps its binding: its requests are answered on that session's `tasks/result`.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn may_answer_statelessly(
        &self,
        task_id: &str,
        who: &Requester,
    ) -> Result<bool, EngineError> {
        if who.sees_all {
            return Ok(true);
        }
        if let Some(task) = self.running(task_id) {
            return Ok(task.may_answer_statelessly(who));
        }
        let Some(inputs) = self.mailbox() else {
            return Ok(true);
        };
        let mine = who.principal.as_ref().and(answerer_key(who));
        Ok(inputs
            .requests(task_id)
            .await?
            .iter()
            .all(|r| r.answerer.is_none() || (mine.is_some() && r.answerer == mine)))
    }

    /// Answer the request `id` for a requester the caller has found may see its task (a
    /// 2026-07-28 `tasks/update`, where seeing the task is what binds the answer), wherever
    /// the task runs: [`Self::deliver_answer`] when it waits here, else written to the
    /// store's mailbox before this returns. Whether it was still waiting.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn answer_anywhere(
        &self,
        id: &RequestId,
        response: Value,
    ) -> Result<bool, EngineError> {
        let owner = Requester {
            sees_all: true,
            ..Requester::default()
        };
        if self.inner.answers.lock().contains_key(id) {
            return Ok(self.deliver_answer(id, &owner, Ok(response)));
        }
        let (Some(inputs), RequestId::String(key)) = (self.mailbox(), id) else {
            return Ok(false);
        };
        Ok(inputs.answer(key, None, &encode(&Ok(response))).await?)
    }

    /// Relay on `sender` the requests of `task_id`, which runs in another process and
    /// waits for input, that belong to `who` and were not sent on it yet (`sent`: the
    /// keys sent on this stream, kept to the ones still pending). A 2025-11-25
    /// `tasks/result` on a replica that does not run the task.
    pub(super) async fn relay_elsewhere(
        &self,
        task_id: &str,
        who: &Requester,
        sender: &Arc<dyn RequestSender>,
        sent: &mut HashSet<String>,
    ) {
        let Some(inputs) = self.mailbox() else {
            return;
        };
        let requests = match inputs.requests(task_id).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(task_id = %task_id, error = %e, "could not read the mailbox of a task");
                return;
            }
        };
        sent.retain(|k| requests.iter().any(|r| &r.key == k));
        let mine = answerer_key(who);
        for r in requests {
            if !(who.sees_all || (r.answerer.is_some() && r.answerer == mine))
                || sent.contains(&r.key)
            {
                continue;
            }
            let id = RequestId::String(r.key.clone());
            match sender.send_request(id, &r.method, r.params).await {
                Ok(()) => {
                    sent.insert(r.key);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "could not relay a task request; it stays in the mailbox");
                }
            }
        }
    }
}
