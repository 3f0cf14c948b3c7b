//! The client's side of the JSON-RPC peer: its own request ids and pending map (so that a
//! request can be cancelled by id), and the [`Handler`] that serves what the server sends.
//!
//! The client allocates the ids of its requests itself and sends them with
//! [`Peer::send`]; their responses reach [`Handler::handle_unmatched_response`], which
//! completes them here. Nothing else may send requests on the client's peer, except the
//! client's own task engine, whose ids (`mcp-tasks:...` strings) never collide with ours.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, Message, Notification, RequestId, methods};
use mcp_tasks_rpc::http_client::is_transport_error;
use mcp_tasks_rpc::{Handler, Peer, RequestContext, Route};
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

use crate::ClientError;
use crate::input::{ElicitationHandler, SamplingHandler, ServerRequest, tag_related};
use crate::receiver::{Answerer, Receiving};
use crate::task::TaskShared;
use crate::types::parse_task;

type Reply = oneshot::Sender<Result<Value, ErrorObject>>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the handler and the client share.
pub(crate) struct Shared {
    pending: Mutex<HashMap<RequestId, Reply>>,
    next_id: AtomicI64,
    /// Live task handles by task id (status notifications update them).
    pub(crate) tasks: Mutex<HashMap<String, Weak<TaskShared>>>,
    pub(crate) notifications: broadcast::Sender<Notification>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    /// The client's own tasks, when it receives task-augmented requests.
    pub(crate) receiving: Option<Receiving>,
}

impl Shared {
    pub(crate) fn new(
        elicitation: Option<Arc<dyn ElicitationHandler>>,
        sampling: Option<Arc<dyn SamplingHandler>>,
        receiving: Option<Receiving>,
    ) -> Arc<Self> {
        Arc::new(Self {
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            tasks: Mutex::new(HashMap::new()),
            notifications: broadcast::channel(1024).0,
            elicitation,
            sampling,
            receiving,
        })
    }

    fn task(&self, id: &str) -> Option<Arc<TaskShared>> {
        lock(&self.tasks).get(id).and_then(Weak::upgrade)
    }
}

/// Serves the server's requests and notifications.
///
/// This is where the client acts as a *receiver*. Without a [`crate::TaskReceiver`] every
/// request is served at once. With one, the requests carrying `params.task` for which the
/// client declared task support become tasks of the client's own engine, and `tasks/*`
/// are served from it (see [`crate::receiver`]); the requestor side (pending map, task
/// handles) is untouched.
pub(crate) struct ClientHandler(pub(crate) Arc<Shared>);

impl ClientHandler {
    /// The handler for `method`, or -32601 when the client has none.
    fn answerer(&self, method: &str) -> Result<Answerer, ErrorObject> {
        match method {
            methods::ELICITATION_CREATE => match &self.0.elicitation {
                Some(h) => Ok(Answerer::Elicit(Arc::clone(h))),
                None => Err(ErrorObject::method_not_found(
                    "this client does not support elicitation",
                )),
            },
            _ => match &self.0.sampling {
                Some(h) => Ok(Answerer::Sample(Arc::clone(h))),
                None => Err(ErrorObject::method_not_found(
                    "this client does not support sampling",
                )),
            },
        }
    }
}

#[async_trait]
impl Handler for ClientHandler {
    /// Requests from the server. A task-augmented one (`params.task`) becomes a task of
    /// the client when the client declared task support for its type (it has a
    /// [`crate::TaskReceiver`] and a handler); otherwise it is served normally: "Receivers
    /// that do not declare the task capability for a request type MUST process requests
    /// of that type normally, ignoring any task-augmentation metadata if present."
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let params = params.unwrap_or_else(|| json!({}));
        match method.as_str() {
            methods::PING => Ok(json!({})),
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE => {
                let answerer = self.answerer(&method)?;
                if let (Some(receiving), Some(task)) = (&self.0.receiving, params.get("task")) {
                    let rpc = Rpc::new(cx.peer.clone(), Arc::clone(&self.0));
                    let task = task.clone();
                    return receiving.create(rpc, &method, params, task, answerer).await;
                }
                let request = ServerRequest::new(params, cx.cancel.clone());
                answerer
                    .answer(request.clone())
                    .await
                    .map(|r| tag_related(r, &request))
            }
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_LIST
            | methods::TASKS_CANCEL => match &self.0.receiving {
                Some(receiving) => receiving.serve(&cx, &method, Some(&params)).await,
                None => Err(ErrorObject::method_not_found(format!(
                    "`{method}`: this client runs no tasks of its own"
                ))),
            },
            other => Err(ErrorObject::method_not_found(format!("`{other}`"))),
        }
    }

    async fn handle_notification(&self, _peer: &Peer, method: String, params: Option<Value>) {
        if method == methods::TASK_STATUS
            && let Some(p) = &params
        {
            match parse_task(p) {
                Ok(task) => {
                    if let Some(t) = self.0.task(&task.task_id) {
                        t.observe(task);
                    }
                }
                Err(e) => tracing::debug!(error = %e, "malformed task status notification"),
            }
        }
        let _ = self.0.notifications.send(Notification { method, params });
    }

    fn handle_unmatched_response(
        &self,
        _peer: &Peer,
        id: RequestId,
        outcome: Result<Value, ErrorObject>,
    ) {
        let tx = lock(&self.0.pending).remove(&id);
        match tx {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => {
                // An answer to a request one of the client's own tasks relayed.
                let delivered = self
                    .0
                    .receiving
                    .as_ref()
                    .is_some_and(|r| r.deliver_answer(&id, outcome));
                if !delivered {
                    tracing::debug!(id = %id, "response to no pending request ignored");
                }
            }
        }
    }
}

/// Sends the client's requests.
#[derive(Clone)]
pub(crate) struct Rpc {
    pub(crate) peer: Peer,
    pub(crate) shared: Arc<Shared>,
}

/// Removes a pending request whose waiter went away, and tells the server.
struct Abandon<'a> {
    rpc: &'a Rpc,
    id: RequestId,
    method: &'a str,
    reason: &'static str,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if lock(&self.rpc.shared.pending).remove(&self.id).is_none() {
            return;
        }
        // Spec (lifecycle): "The `initialize` request MUST NOT be cancelled by clients".
        if self.method == methods::INITIALIZE || self.rpc.peer.is_closed() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let peer = self.rpc.peer.clone();
            let params = json!({ "requestId": self.id.to_value(), "reason": self.reason });
            rt.spawn(async move {
                peer.notify(methods::CANCELLED, Some(params), Route::Standalone)
                    .await;
            });
        }
    }
}

impl Rpc {
    pub(crate) fn new(peer: Peer, shared: Arc<Shared>) -> Self {
        Self { peer, shared }
    }

    /// Send `method` and wait for its answer, at most `timeout`. Dropping the future
    /// (or the timeout) cancels the request with `notifications/cancelled`.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        if self.peer.is_closed() {
            return Err(ClientError::Closed);
        }
        let id = RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id.clone(), tx);
        let mut abandon = Abandon {
            rpc: self,
            id: id.clone(),
            method,
            reason: "the requester stopped waiting",
        };
        self.peer
            .send(Message::request(id, method, params), Route::Standalone)
            .await
            .map_err(|_| ClientError::Closed)?;
        let closed = self.peer.closed();
        let wait = async {
            tokio::select! {
                r = rx => r.map_err(|_| ClientError::Closed),
                () = closed.cancelled() => Err(ClientError::Closed),
            }
        };
        let outcome = match timeout {
            Some(t) => match tokio::time::timeout(t, wait).await {
                Ok(r) => r,
                Err(_) => {
                    abandon.reason = "timed out";
                    drop(abandon);
                    return Err(ClientError::Timeout {
                        method: method.to_owned(),
                        timeout: t,
                    });
                }
            },
            None => wait.await,
        };
        drop(abandon);
        match outcome? {
            Ok(v) => Ok(v),
            Err(error) if is_transport_error(&error) => Err(ClientError::Transport {
                method: method.to_owned(),
                error,
            }),
            Err(error) => Err(ClientError::Rpc {
                method: method.to_owned(),
                error,
            }),
        }
    }

    /// Send a notification.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params, Route::Standalone).await;
    }
}
