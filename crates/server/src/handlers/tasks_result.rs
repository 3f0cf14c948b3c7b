//! `tasks/result`.

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::{RequestSender, serve};
use mcp_tasks_proto::{ErrorObject, Message, RequestId, methods};
use mcp_tasks_rpc::RequestContext;
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
}

/// Serve `tasks/result`: block until the task is terminal, then return exactly what the
/// wrapped request would have returned (its result with related-task `_meta`, or its
/// JSON-RPC error). While it waits, the task's requests for input travel on this stream.
///
/// Spec: "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
/// return that same JSON-RPC error." (see [`serve::result`]). Cancelling this request (`notifications/cancelled`)
/// ends only the wait; the task goes on.
pub async fn handle(
    session: &Session,
    cx: &RequestContext,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    let engine = session
        .tasks()
        .ok_or_else(|| tasks_off(methods::TASKS_RESULT))?;
    let sender: Arc<dyn RequestSender> = Arc::new(ResultStream(cx.clone()));
    serve::result(engine, &session.requester, params, Some(sender)).await
}
