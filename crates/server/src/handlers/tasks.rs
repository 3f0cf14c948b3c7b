//! `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`: served by
//! [`serve::dispatch`], the same dispatch the client uses as a receiver.

use std::sync::Arc;

use mcp_tasks_core::{RequestSender, SendFn, TaskEngine, serve};
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::{RequestContext, RouteDelivery};
use serde_json::Value;

use crate::session::Session;

/// Serve one `tasks/*` request of the session: -32601 when tasks are off for it, and for
/// `tasks/list` when the server cannot identify requesters.
///
/// * `tasks/get`: "Receivers MUST include the actual `ttl` duration (or `null` for
///   unlimited) in `tasks/get` responses."
/// * `tasks/cancel`: "Receivers MUST reject cancellation requests for tasks already in a
///   terminal status (`completed`, `failed`, or `cancelled`) with error code `-32602`".
/// * `tasks/list`: "Receivers SHOULD use cursor-based pagination to limit the number of
///   tasks returned in a single response."
/// * `tasks/result`: "If the underlying request resulted in a JSON-RPC error,
///   `tasks/result` MUST return that same JSON-RPC error." While it waits, the task's
///   requests for input travel on this request's stream. Cancelling it
///   (`notifications/cancelled`) ends only the wait; the task goes on. A `tasks/result`
///   answered as JSON only (the client does not accept `text/event-stream`) carries no
///   requests: they would be diverted to the GET stream, which such a client may never
///   read. They stay queued (and the task `input_required`) for the next `tasks/result`
///   with a stream; the transport requires clients to accept both content types.
pub(crate) async fn handle(
    session: &Session,
    cx: &RequestContext,
    method: &str,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    let engine = engine_for(session, method)?;
    serve::dispatch(engine, &session.requester, method, params, || {
        (cx.delivery != RouteDelivery::Diverted).then(|| result_stream(cx))
    })
    .await
}

/// [`handle`] of a `tasks/get` with the answer as JSON text ([`serve::get_text`]).
pub(crate) async fn get_text(
    session: &Session,
    params: Option<&Value>,
) -> Result<String, ErrorObject> {
    let engine = engine_for(session, methods::TASKS_GET)?;
    serve::get_text(engine, &session.requester, params).await
}

/// [`handle`] of a `tasks/list` with the answer as JSON text ([`serve::list_text`]).
pub(crate) async fn list_text(
    session: &Session,
    params: Option<&Value>,
) -> Result<String, ErrorObject> {
    let engine = engine_for(session, methods::TASKS_LIST)?;
    serve::list_text(engine, &session.requester, params).await
}

/// The session's engine for `method`: -32601 when tasks are off for it, and for
/// `tasks/list` when the server cannot identify requesters.
fn engine_for<'a>(session: &'a Session, method: &str) -> Result<&'a TaskEngine, ErrorObject> {
    let engine = session.tasks().ok_or_else(|| {
        ErrorObject::method_not_found(format!("`{method}`: tasks are not enabled on this session"))
    })?;
    if method == methods::TASKS_LIST && !session.can_list {
        return Err(ErrorObject::method_not_found(
            "`tasks/list`: this server cannot identify requesters, so it does not list tasks",
        ));
    }
    Ok(engine)
}

/// Carries a task's queued requests on the stream of this `tasks/result`.
fn result_stream(cx: &RequestContext) -> Arc<dyn RequestSender> {
    let own = cx.delivery == RouteDelivery::OwnStream;
    let cx = cx.clone();
    Arc::new(SendFn::new(own, move |message| {
        let cx = cx.clone();
        async move { cx.peer.send(message, cx.route()).await }
    }))
}
