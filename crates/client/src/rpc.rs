//! The client's side of the JSON-RPC peer: its requests (sent through
//! [`Peer::request_with`], which owns their ids, timeouts and cancellation), and the
//! [`Handler`] that serves what the server sends.
//!
//! Besides the client's own requests, only the client's own task engine sends requests
//! on the client's peer, with ids it chooses (`mcp-tasks:...` strings that never collide
//! with the peer's); their answers reach [`Handler::handle_unmatched_response`].

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::RequestorChannel;
use mcp_tasks_proto::{ErrorObject, Notification, Request, RequestId, methods};
use mcp_tasks_rpc::{Handler, Peer, RequestContext, RequestOptions, Route};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::ClientError;
use crate::input::{ElicitationHandler, SamplingHandler, ServerRequest, tag_related};
use crate::receiver::{Answerer, Receiving};
use crate::task_state::TaskShared;
use crate::types::parse_task;

/// What the handler and the client share.
pub(crate) struct Shared {
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
            tasks: Mutex::new(HashMap::new()),
            notifications: broadcast::channel(1024).0,
            elicitation,
            sampling,
            receiving,
        })
    }

    fn task(&self, id: &str) -> Option<Arc<TaskShared>> {
        self.tasks.lock().get(id).and_then(Weak::upgrade)
    }

    /// Answer one question of the server with the client's handlers: a 2026-07-28
    /// `inputRequests` entry, answered as the request it stands for (`related_task` names
    /// the task it came from, if any).
    ///
    /// Spec (SEP-2663): "Clients MUST treat each entry in `inputRequests` as they would the
    /// equivalent standalone server-to-client request".
    pub(crate) async fn answer(
        &self,
        method: &str,
        params: Value,
        related_task: Option<&str>,
    ) -> Result<Value, ErrorObject> {
        let answerer = match method {
            methods::ELICITATION_CREATE => self.elicitation.clone().map(Answerer::Elicit),
            methods::SAMPLING_CREATE_MESSAGE => self.sampling.clone().map(Answerer::Sample),
            _ => None,
        }
        .ok_or_else(|| {
            ErrorObject::method_not_found(format!("this client does not answer `{method}`"))
        })?;
        let mut request = ServerRequest::new(params, tokio_util::sync::CancellationToken::new());
        if let Some(t) = related_task {
            request.related_task = Some(t.to_owned());
        }
        answerer.answer(request).await
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
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        let Request { method, params, .. } = req;
        let params = params.unwrap_or_else(|| json!({}));
        match method.as_str() {
            methods::PING => Ok(json!({})),
            methods::ELICITATION_CREATE | methods::SAMPLING_CREATE_MESSAGE => {
                let answerer = self.answerer(&method)?;
                if let (Some(receiving), Some(task)) = (&self.0.receiving, params.get("task")) {
                    let rpc = Rpc::new(cx.peer.clone(), Arc::clone(&self.0));
                    let origin: Arc<dyn RequestorChannel> = Arc::new(ConnectionChannel(rpc));
                    let task = task.clone();
                    return receiving
                        .create(origin, &method, params, task, answerer)
                        .await;
                }
                let request = ServerRequest::new(params, cx.cancel.clone());
                answerer
                    .answer(request.clone())
                    .await
                    .map(|r| tag_related(r, &request))
            }
            m if mcp_tasks_core::serve::is_tasks_method(m) => match &self.0.receiving {
                Some(receiving) => receiving.serve(&cx, &method, Some(&params)).await,
                None => Err(ErrorObject::method_not_found(format!(
                    "`{method}`: this client runs no tasks of its own"
                ))),
            },
            other => Err(ErrorObject::method_not_found(format!("`{other}`"))),
        }
    }

    async fn handle_notification(&self, _peer: &Peer, n: Notification) {
        if n.method == methods::TASK_STATUS
            && let Some(p) = &n.params
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
        let _ = self.0.notifications.send(n);
    }

    fn handle_unmatched_response(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
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

/// Sends the client's requests.
#[derive(Clone)]
pub(crate) struct Rpc {
    pub(crate) peer: Peer,
    pub(crate) shared: Arc<Shared>,
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
        let options = RequestOptions::new(Route::Standalone).timeout(timeout);
        self.peer
            .request_with(method, params, options)
            .await
            .map_err(|e| ClientError::of_request(method, e))
    }

    /// Send a notification.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        self.peer.notify(method, params, Route::Standalone).await;
    }
}

/// The server as the requestor of the client's tasks: status notifications go to it on
/// the connection (requests, if a task ever sent one, through the client's own ids).
struct ConnectionChannel(Rpc);

#[async_trait::async_trait]
impl RequestorChannel for ConnectionChannel {
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.0
            .request(method, Some(params), None)
            .await
            .map_err(|e| match e.rpc_error() {
                Some(err) => err.clone(),
                None => ErrorObject::internal(e.to_string()),
            })
    }

    async fn notify(&self, method: &str, params: Value) {
        self.0.notify(method, Some(params)).await;
    }
}
