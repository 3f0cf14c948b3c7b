//! How the engine talks to peers without knowing the transport.

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, Message, RequestId};
use serde_json::Value;

/// A way to reach the requestor: send it requests and notifications.
///
/// The server implements it over a JSON-RPC connection; the engine implements it for a
/// running task (requests are queued and relayed through `tasks/result`).
#[async_trait]
pub trait RequestorChannel: Send + Sync {
    /// Send a request and wait for its answer.
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject>;
    /// As [`Self::request`], naming the request `key` where the requestor sees requests
    /// by key (the `inputRequests` of a 2026-07-28 `InputRequiredResult`). The default
    /// ignores the key: a channel that mints its own keys, or has none, sends it plainly.
    async fn request_keyed(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let _ = key;
        self.request(method, params).await
    }
    /// Send a notification (best effort: a gone peer is not an error).
    async fn notify(&self, method: &str, params: Value);
    /// The handler asks to go on as a task: a channel of a call that can still become one
    /// (a 2026-07-28 call gathering input before its task, an `optional` tool under
    /// `task_after`) creates the task, durably, and returns once the handler runs as its
    /// work. The default does nothing: the call already is a task, or cannot become one
    /// (it goes on as it is).
    ///
    /// # Errors
    /// The call ended before its task could be created.
    async fn start_task(&self) -> Result<(), ErrorObject> {
        Ok(())
    }
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

/// A [`RequestSender`] over a function that puts one message on the stream: the requests
/// and notifications are built here, once for every receiver (the server's and the
/// client's `tasks/result` streams differ only in how a message goes out).
pub struct SendFn<F> {
    send: F,
    own_stream: bool,
}

impl<F> std::fmt::Debug for SendFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendFn")
            .field("own_stream", &self.own_stream)
            .finish_non_exhaustive()
    }
}

impl<F, Fut> SendFn<F>
where
    F: Fn(Message) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), ErrorObject>> + Send,
{
    /// Messages go out through `send`; `own_stream` is what
    /// [`RequestSender::is_own_stream`] answers.
    pub fn new(own_stream: bool, send: F) -> Self {
        Self { send, own_stream }
    }
}

#[async_trait]
impl<F, Fut> RequestSender for SendFn<F>
where
    F: Fn(Message) -> Fut + Send + Sync,
    Fut: Future<Output = Result<(), ErrorObject>> + Send,
{
    async fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
    ) -> Result<(), ErrorObject> {
        (self.send)(Message::request(id, method, Some(params))).await
    }

    async fn send_notification(&self, method: &str, params: Value) -> Result<(), ErrorObject> {
        (self.send)(Message::notification(method, Some(params))).await
    }

    fn is_own_stream(&self) -> bool {
        self.own_stream
    }
}
