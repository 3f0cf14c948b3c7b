//! `tasks/result`.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::{RequestSender, serve};
use mcp_tasks_proto::{ErrorObject, Message, RequestId, methods};
use mcp_tasks_rpc::{RequestContext, RouteDelivery};
use serde_json::Value;

use crate::handlers::tasks_off;
use crate::session::Session;

/// Carries a task's queued requests on the stream of this `tasks/result`.
struct ResultStream(RequestContext);

#[async_trait]
impl RequestSender for ResultStream {
    async fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
    ) -> Result<(), ErrorObject> {
        self.0
            .peer
            .send(Message::request(id, method, Some(params)), self.0.route())
            .await
    }

    async fn send_notification(&self, method: &str, params: Value) -> Result<(), ErrorObject> {
        self.0
            .peer
            .send(Message::notification(method, Some(params)), self.0.route())
            .await
    }

    fn is_own_stream(&self) -> bool {
        self.0.delivery == RouteDelivery::OwnStream
    }
}

/// Serve `tasks/result`: block until the task is terminal, then return exactly what the
/// wrapped request would have returned (its result with related-task `_meta`, or its
/// JSON-RPC error). While it waits, the task's requests for input travel on this stream.
///
/// Spec: "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
/// return that same JSON-RPC error." (see [`serve::result`]). Cancelling this request (`notifications/cancelled`)
/// ends only the wait; the task goes on.
///
/// A `tasks/result` answered as JSON only (the client does not accept
/// `text/event-stream`) carries no requests: they would be diverted to the GET stream,
/// which such a client may never read. They stay queued (and the task `input_required`)
/// for the next `tasks/result` with a stream; the transport requires clients to accept
/// both content types.
pub async fn handle(
    session: &Session,
    cx: &RequestContext,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_RESULT))?;
    let sender = (cx.delivery != RouteDelivery::Diverted)
        .then(|| Arc::new(ResultStream(cx.clone())) as Arc<dyn RequestSender>);
    serve::result(engine, &session.requester, params, sender).await
}
