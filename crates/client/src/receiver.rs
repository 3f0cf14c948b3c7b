//! The client as a *receiver* of tasks.
//!
//! A server may task-augment the requests it sends to the client: `elicitation/create` and
//! `sampling/createMessage` with a `task` field in their params. A client configured with
//! a [`TaskReceiver`] declares so in `initialize`:
//!
//! ```json
//! "tasks": { "list": {}, "cancel": {},
//!            "requests": { "elicitation": { "create": {} }, "sampling": { "createMessage": {} } } }
//! ```
//!
//! (each request type only when the client has a handler for it), and such a request
//! becomes a task in the client's own store, run by the same [`TaskEngine`] as the
//! server's tasks: the server gets a `CreateTaskResult` (status `working`) at once, the
//! application's [`crate::ElicitationHandler`] / [`crate::SamplingHandler`] runs after
//! that reply, and the client serves the server's `tasks/get`, `tasks/result` (the
//! handler's exact answer or error, with related-task `_meta`), `tasks/list` and
//! `tasks/cancel` (which stops the handler: its [`crate::ServerRequest::cancel`] fires
//! and its future is dropped) from [`mcp_tasks_core::serve`], as the server does.
//!
//! Spec: "If a client's capabilities include `tasks.requests.sampling.createMessage: {}`,
//! then the server can task-augment `sampling/createMessage` requests."

use std::sync::Arc;

use mcp_tasks_core::engine::{Classifier, TaskRun, TaskSpec};
use mcp_tasks_core::{
    MemoryStore, Policy, RequestSender, Requester, RequestorChannel, SendFn, SystemClock,
    TaskEngine, serve,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{ErrorObject, RequestId};
use mcp_tasks_rpc::RequestContext;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::input::{ElicitationHandler, SamplingHandler, ServerRequest};

/// Suggested `pollInterval` of the client's tasks: a person answering a prompt is slow,
/// but a server polling an automated handler should not wait a second for it.
pub const DEFAULT_RECEIVER_POLL_MS: u64 = 500;

/// The task store and engine of a client that receives task-augmented requests. Cheap to
/// clone; clones share the store.
///
/// Each connection is a requester of its own (a fresh principal): a receiver shared by
/// several clients never shows one server another connection's tasks.
#[derive(Clone)]
pub struct TaskReceiver {
    engine: TaskEngine,
    started: Arc<OnceCell<()>>,
}

mcp_tasks_proto::debug_non_exhaustive!(TaskReceiver, |s| { engine: s.engine });

mcp_tasks_proto::default_is_new!(TaskReceiver);

impl TaskReceiver {
    /// Tasks in memory, with the default policy (TTL 1 h by default, 24 h at most) and a
    /// `pollInterval` of [`DEFAULT_RECEIVER_POLL_MS`].
    pub fn new() -> Self {
        let mut policy = Policy::default();
        policy.poll_interval_ms = DEFAULT_RECEIVER_POLL_MS;
        Self::with_policy(policy)
    }

    /// Tasks in memory, with `policy`.
    pub fn with_policy(policy: Policy) -> Self {
        Self::with_engine(TaskEngine::new(
            Arc::new(MemoryStore::new()),
            policy,
            Arc::new(SystemClock),
        ))
    }

    /// Tasks in `engine` (any store).
    pub fn with_engine(engine: TaskEngine) -> Self {
        Self {
            engine,
            started: Arc::new(OnceCell::new()),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &TaskEngine {
        &self.engine
    }

    /// Take the executor lease and start the expiry sweeper, once.
    pub(crate) async fn ensure_started(&self) -> Result<(), crate::ClientError> {
        self.started
            .get_or_try_init(|| async {
                self.engine.start().await.map_err(|e| {
                    crate::ClientError::Connect(format!("the client's task store failed: {e}"))
                })?;
                // Ends by itself when the last clone of the engine is gone.
                drop(self.engine.start_background());
                Ok(())
            })
            .await
            .map(|_| ())
    }
}

/// What answers a task-augmented request: the application's handler for its method.
#[derive(Clone)]
pub(crate) enum Answerer {
    Elicit(Arc<dyn ElicitationHandler>),
    Sample(Arc<dyn SamplingHandler>),
}

impl Answerer {
    pub(crate) async fn answer(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        match self {
            Self::Elicit(h) => h.elicit(request).await,
            Self::Sample(h) => h.create_message(request).await,
        }
    }
}

/// An `ElicitResult` or `CreateMessageResult` always completes its task; only a JSON-RPC
/// error (a refusal, a failure of the handler) fails it.
fn classify(_: &Value) -> (TaskStatus, Option<String>) {
    (TaskStatus::Completed, None)
}

/// One connection's view of the receiver.
pub(crate) struct Receiving {
    receiver: TaskReceiver,
    requester: Requester,
}

impl Receiving {
    pub(crate) fn new(receiver: TaskReceiver) -> Self {
        Self {
            receiver,
            requester: Requester {
                principal: Some(format!(
                    "mcp-tasks-client-connection:{}",
                    mcp_tasks_core::engine::new_task_id()
                )),
                ..Requester::default()
            },
        }
    }

    pub(crate) fn receiver(&self) -> &TaskReceiver {
        &self.receiver
    }

    fn engine(&self) -> &TaskEngine {
        &self.receiver.engine
    }

    /// Turn a task-augmented request into a task: commit it, answer `CreateTaskResult`,
    /// and let `answerer` run once the reply is on its way; `origin` is the server, as the
    /// requestor of the task.
    ///
    /// Spec: "Receivers that accept a task-augmented request MUST return a
    /// `CreateTaskResult` as the response. This result SHOULD be returned as soon as
    /// possible after accepting the task."
    pub(crate) async fn create(
        &self,
        origin: Arc<dyn RequestorChannel>,
        method: &str,
        params: Value,
        task_field: Value,
        answerer: Answerer,
    ) -> Result<Value, ErrorObject> {
        let spec = TaskSpec {
            requester: self.requester.clone(),
            method: method.to_owned(),
            params: params.clone(),
            task_field,
            origin,
            classify: classify as Classifier,
        };
        // The handler starts after the CreateTaskResult is handed to the connection.
        let (go, ready) = tokio::sync::oneshot::channel::<()>();
        let runner = Box::new(move |run: TaskRun| {
            let request = ServerRequest::for_task(params, run.cancel, run.task_id);
            Box::pin(async move {
                let _ = ready.await;
                tokio::task::yield_now().await;
                answerer.answer(request).await
            }) as futures::future::BoxFuture<'static, _>
        });
        let rec = self
            .engine()
            .create(spec, runner)
            .await
            .map_err(|e| serve::create_error(&e))?;
        tracing::debug!(task_id = %rec.task.task_id, method, "a request from the server runs as a task of the client");
        let result = serve::create_task_result(&rec);
        let _ = go.send(());
        result
    }

    /// Serve `tasks/get`, `tasks/result`, `tasks/list` or `tasks/cancel` for the server.
    pub(crate) async fn serve(
        &self,
        cx: &RequestContext,
        method: &str,
        params: Option<&Value>,
    ) -> Result<Value, ErrorObject> {
        // Carries a task's queued requests on the stream of the server's `tasks/result`.
        let cx = cx.clone();
        let stream = SendFn::new(false, move |message| {
            let cx = cx.clone();
            async move { cx.peer.send(message, cx.route()).await }
        });
        serve::dispatch(self.engine(), &self.requester, method, params, || {
            Some(Arc::new(stream) as Arc<dyn RequestSender>)
        })
        .await
    }

    /// The answer to a request one of the client's tasks sent through `tasks/result`.
    pub(crate) fn deliver_answer(
        &self,
        id: &RequestId,
        outcome: Result<Value, ErrorObject>,
    ) -> bool {
        TaskEngine::is_engine_request(id)
            && self.engine().deliver_answer(id, &self.requester, outcome)
    }

    /// Every task of this connection, oldest first.
    pub(crate) async fn list_all(
        &self,
    ) -> Result<Vec<mcp_tasks_proto::mcp::Task>, mcp_tasks_core::EngineError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let (page, next) = self
                .engine()
                .list(cursor.as_deref(), &self.requester)
                .await?;
            all.extend(page);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
    }
}
