//! `--task-after`: an `optional` tool called by a client with the tasks extension runs at
//! once, as a direct call, and becomes a task only if it has not finished within
//! [`crate::ServerConfig::task_after`] (or asks the client something before that).
//!
//! The handler is started before any task exists, under its own cancellation token and a
//! [`Deferred`] channel. If it finishes in time its result is the reply. Otherwise the
//! task record is created at that moment, durably, before the `CreateTaskResult` is sent,
//! and the running handler is adopted as the task's work: the engine's runner awaits it,
//! the task's cancellation stops it, and from then on its questions go through the task's
//! channel (the engine's relay: `inputRequests`).
//!
//! Spec (SEP-2663): "A server that has negotiated this extension MAY return
//! `CreateTaskResult` in lieu of a standard result ... at its own discretion and on a
//! per-request basis." and "A server MUST NOT return `CreateTaskResult` until the task is
//! durably created".

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::engine::TaskRun;
use mcp_tasks_core::{RequestorChannel, TaskEngine};
use mcp_tasks_proto::mcp::progress_token;
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::RequestContext;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::tasks::{created, tools_call_spec};
use super::tool_call::ToolCall;
use crate::session::Session;
use crate::tool::ToolContext;

/// The requestor of a handler that may become a task: before, its notifications go on the
/// request's stream and a question asks for the promotion; after, everything goes
/// through the task's channel.
struct Deferred {
    cx: RequestContext,
    task: watch::Sender<Option<Arc<dyn RequestorChannel>>>,
    promote: Arc<Notify>,
}

impl Deferred {
    /// The task's channel, once the handler has been adopted by a task.
    async fn task_channel(&self) -> Option<Arc<dyn RequestorChannel>> {
        let mut rx = self.task.subscribe();
        if rx.borrow().is_none() {
            // Ask for the promotion, then wait for the engine to hand over the channel.
            self.promote.notify_one();
        }
        rx.wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|c| c.clone())
    }
}

#[async_trait]
impl RequestorChannel for Deferred {
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        match self.task_channel().await {
            Some(channel) => channel.request(method, params).await,
            None => Err(ErrorObject::internal(format!(
                "`{method}`: the call ended before it became a task"
            ))),
        }
    }

    /// Become a task now (promoted as if `task_after` had passed).
    async fn start_task(&self) -> Result<(), ErrorObject> {
        self.task_channel()
            .await
            .map(|_| ())
            .ok_or_else(|| ErrorObject::internal("the call ended before it became a task"))
    }

    async fn notify(&self, method: &str, params: Value) {
        let task = self.task.borrow().clone();
        match task {
            Some(channel) => channel.notify(method, params).await,
            None if method == methods::PROGRESS || method == methods::LOG_MESSAGE => {
                self.cx.notify(method, Some(params)).await;
            }
            None => {}
        }
    }
}

/// Aborts the handler when dropped (the task ended another way, or the call went away).
pub(super) struct AbortOnDrop(pub(super) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Fires the handler's cancellation when dropped after its task was cancelled.
///
/// The engine stops a cancelled task by dropping its work future (it does not poll it
/// again), so the runner's own `select!` on the task's token never runs; without this the
/// handler would be aborted with its [`ToolContext::cancellation`] never fired, and a
/// handler that reacts to it on drop (a gateway cancelling its upstream task) would take
/// the cancellation for a shutdown. It fires the token, then aborts the handler.
struct CancelOnDrop {
    task: CancellationToken,
    handler: CancellationToken,
    work: Option<AbortOnDrop>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.task.is_cancelled() {
            self.handler.cancel();
        }
        drop(self.work.take());
    }
}

/// Run `tool`; answer with its result if it finishes within the server's `task_after`,
/// else with the `CreateTaskResult` of the task that adopts it.
///
/// # Errors
/// The handler's JSON-RPC error (direct), or what the engine refused when creating the
/// task.
pub(super) async fn call(
    session: &Session,
    engine: &TaskEngine,
    cx: &RequestContext,
    call: ToolCall<'_>,
) -> Result<Value, ErrorObject> {
    let (task_tx, _) = watch::channel(None);
    let promote = Arc::new(Notify::new());
    let deferred = Arc::new(Deferred {
        cx: cx.clone(),
        task: task_tx,
        promote: Arc::clone(&promote),
    });
    let cancel = CancellationToken::new();
    let tcx = ToolContext::new(
        Arc::clone(&deferred) as Arc<dyn RequestorChannel>,
        progress_token(Some(&call.params)),
        cancel.clone(),
        Arc::new(call.caps),
        None,
    )
    .with_request_params(call.params.clone())
    .with_log_threshold(call.log.clone())
    .in_revision(mcp_tasks_proto::Revision::V2026_07_28);
    let handler = Arc::clone(&call.tool.handler);
    let mut work = tokio::spawn(async move { handler.call(call.args, tcx).await.map(Value::from) });
    let abort = AbortOnDrop(work.abort_handle());
    let deadline = tokio::time::sleep(session.state.config.task_after);
    tokio::select! {
        r = &mut work => return joined(r),
        () = deadline => {}
        () = promote.notified() => {}
        () = cx.cancel.cancelled() => {
            cancel.cancel();
            return Err(ErrorObject::internal("the call was cancelled"));
        }
    }
    let hand_over = Box::new(move |channel: Arc<dyn RequestorChannel>| {
        deferred.task.send_replace(Some(channel));
        Box::new(deferred) as Box<dyn Send>
    });
    adopt(session, engine, call.params, work, abort, cancel, hand_over).await
}

/// What a running handler is handed when its task starts: the task's channel. It returns
/// what the task keeps alive while it runs.
pub(super) type HandOver = Box<dyn FnOnce(Arc<dyn RequestorChannel>) -> Box<dyn Send> + Send>;

/// Create, durably, the task that adopts the handler already running as `work` (aborted
/// by `abort` when the task ends another way; stopped by `cancel`, its
/// [`ToolContext::cancellation`], when the task is cancelled), and answer with its
/// `CreateTaskResult`. When the engine runs the task, `hand_over` gives the handler the
/// task's channel.
///
/// # Errors
/// What the engine refused (limits, shutting down, store failure).
pub(super) async fn adopt(
    session: &Session,
    engine: &TaskEngine,
    params: Value,
    work: tokio::task::JoinHandle<Result<Value, ErrorObject>>,
    abort: AbortOnDrop,
    cancel: CancellationToken,
    hand_over: HandOver,
) -> Result<Value, ErrorObject> {
    let spec = tools_call_spec(session, params);
    let runner = Box::new(move |run: TaskRun| {
        let TaskRun {
            channel,
            cancel: task_cancel,
            ..
        } = run;
        let kept = hand_over(channel);
        let stop = CancelOnDrop {
            task: task_cancel.clone(),
            handler: cancel.clone(),
            work: Some(abort),
        };
        Box::pin(async move {
            let _stop = stop;
            let _kept = kept;
            tokio::select! {
                r = work => joined(r),
                () = task_cancel.cancelled() => {
                    cancel.cancel();
                    Err(ErrorObject::internal("the task was cancelled"))
                }
            }
        }) as futures::future::BoxFuture<'static, _>
    });
    created(engine.create_stateless(spec, runner).await)
}

/// The handler's outcome; a panic is an internal error.
fn joined(
    r: Result<Result<Value, ErrorObject>, tokio::task::JoinError>,
) -> Result<Value, ErrorObject> {
    r.unwrap_or_else(|e| Err(ErrorObject::internal(format!("the tool failed: {e}"))))
}
