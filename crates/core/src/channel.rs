//! How the engine talks to peers without knowing the transport.

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, RequestId};
use serde_json::Value;

/// A way to reach the requestor: send it requests and notifications.
///
/// The server implements it over a JSON-RPC connection; the engine implements it for a
/// running task (requests are queued and relayed through `tasks/result`).
#[async_trait]
pub trait RequestorChannel: Send + Sync {
    /// Send a request and wait for its answer.
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject>;
    /// Send a notification (best effort: a gone peer is not an error).
    async fn notify(&self, method: &str, params: Value);
}

/// A stream on which a `tasks/result` call can carry requests to the requestor.
///
/// The engine chooses the JSON-RPC ids (so a request can be sent again, with the same id,
/// on a later `tasks/result`); answers come back through
/// [`crate::engine::TaskEngine::deliver_answer`].
#[async_trait]
pub trait RequestSender: Send + Sync {
    /// Send `method` with `params` under `id`.
    async fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
    ) -> Result<(), ErrorObject>;

    /// Send a notification about the task (progress, `notifications/tasks/status`) on
    /// this stream. The default cannot: the engine then sends it on the task's origin.
    async fn send_notification(&self, method: &str, params: Value) -> Result<(), ErrorObject> {
        let _ = (method, params);
        Err(ErrorObject::internal(
            "this stream carries no notifications",
        ))
    }

    /// Whether this stream is one of its own, which the requestor can drop while the
    /// connection lives on (a Streamable HTTP SSE response), rather than the connection
    /// every request shares (stdio). What went out on another open stream is sent again
    /// on a new one of its own; on a shared connection it already arrived.
    fn is_own_stream(&self) -> bool {
        false
    }
}
