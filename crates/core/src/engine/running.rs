//! The entries of the engine's running-task table: a running task, the requests it
//! relays to its requestor (queued, and the open `tasks/result` streams they go out on),
//! and the relayed requests waiting for their answers.

use std::sync::{Arc, Weak};

use mcp_tasks_proto::{ErrorObject, RequestId};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::channel::{RequestSender, RequestorChannel};
use crate::requester::Requester;

pub(super) struct PendingInput {
    pub(super) id: RequestId,
    pub(super) method: String,
    pub(super) params: Value,
    /// The open `tasks/result` deliverers (generations) it was sent on.
    pub(super) sent_on: Vec<u64>,
}

/// One open `tasks/result` that carries the task's requests and notifications.
pub(super) struct OpenDeliverer {
    pub(super) generation: u64,
    pub(super) sender: Arc<dyn RequestSender>,
}

#[derive(Default)]
pub(super) struct InputState {
    pub(super) queue: Vec<PendingInput>,
    pub(super) next_request: u64,
    pub(super) next_gen: u64,
    /// Open `tasks/result` deliverers, oldest first.
    pub(super) deliverers: Vec<OpenDeliverer>,
}

impl InputState {
    pub(super) fn is_live_shared(&self, generation: u64) -> bool {
        self.deliverers
            .iter()
            .any(|d| d.generation == generation && !d.sender.is_own_stream())
    }
}

pub(super) struct RunningTask {
    pub(super) task_id: String,
    pub(super) cancel: CancellationToken,
    pub(super) origin: Arc<dyn RequestorChannel>,
    /// Who the task's relayed requests belong to: the requester that created it (a resumed
    /// task: its owner, or the first session that asks for its result).
    pub(super) answerer: Mutex<Requester>,
    pub(super) input: Mutex<InputState>,
    pub(super) input_changed: Notify,
    /// Serialises the working <-> input_required transitions with queue changes.
    pub(super) status_lock: tokio::sync::Mutex<()>,
}

impl RunningTask {
    /// Whether `who` may receive and answer the requests this task relays: the requester
    /// the task belongs to, that is its principal when there is one, else the session
    /// that created it; the local stdio peer owns everything. A task resumed without
    /// either is claimed by the first session that asks (`claim`).
    ///
    /// Spec (the same rule for the messages of a task): "If context-binding is available,
    /// receivers MUST reject `tasks/get`, `tasks/result`, and `tasks/cancel` requests for
    /// tasks that do not belong to the same authorization context as the requestor."
    pub(super) fn may_answer(&self, who: &Requester, claim: bool) -> bool {
        if who.sees_all {
            return true;
        }
        let mut owner = self.answerer.lock();
        match (&owner.principal, &owner.session) {
            (Some(p), _) => who.principal.as_ref() == Some(p),
            (None, Some(s)) => who.principal.is_none() && who.session.as_ref() == Some(s),
            (None, None) if claim && who.principal.is_none() && who.session.is_some() => {
                owner.session.clone_from(&who.session);
                true
            }
            (None, None) => false,
        }
    }

    /// Whether `who`, a 2026-07-28 requester (no connection of its own), may answer the
    /// requests this task relays: with a principal, the task's; without one, only a task
    /// bound to no session (created in 2026-07-28, where the task id is the capability).
    /// A task a 2025-11-25 session created keeps that session's binding.
    pub(super) fn may_answer_statelessly(&self, who: &Requester) -> bool {
        if who.sees_all {
            return true;
        }
        let owner = self.answerer.lock();
        match (&owner.principal, &owner.session) {
            (Some(p), _) => who.principal.as_ref() == Some(p),
            (None, Some(_)) => false,
            (None, None) => who.principal.is_none(),
        }
    }

    /// The newest open `tasks/result` stream, if any.
    pub(super) fn newest_sender(&self) -> Option<Arc<dyn RequestSender>> {
        self.input
            .lock()
            .deliverers
            .last()
            .map(|d| Arc::clone(&d.sender))
    }

    /// Send a notification about the task to its requestor: on its newest open
    /// `tasks/result` stream, else on the connection that created it. Each goes out once.
    ///
    /// Spec: "Task-augmented requests support progress notifications as defined in the
    /// progress specification. The `progressToken` provided in the initial request remains
    /// valid throughout the task lifetime." and "clients SHOULD expect messages to be
    /// delivered on any SSE stream, including the HTTP GET stream. One possible approach is
    /// maintaining an SSE stream on `tasks/result`": a client that waits on `tasks/result`
    /// and never opens the GET stream still sees the task's progress and status.
    pub(super) async fn notify_requestor(&self, method: &str, params: Value) {
        if let Some(sender) = self.newest_sender() {
            match sender.send_notification(method, params.clone()).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(task_id = %self.task_id, error = %e, "notification not sent on tasks/result; it goes to the task's origin");
                }
            }
        }
        self.origin.notify(method, params).await;
    }
}

/// A relayed request waiting for its answer.
pub(super) struct PendingAnswer {
    pub(super) task: Weak<RunningTask>,
    pub(super) tx: oneshot::Sender<Result<Value, ErrorObject>>,
}
