//! Prompts that ask the client for input while they are made ([`PromptContext::ask`]).
//!
//! 2025-11-25: the question is a request to the client on the `prompts/get` request's
//! stream. 2026-07-28 (MRTR): the question is an entry of an `InputRequiredResult`; the
//! client retries `prompts/get` with `inputResponses`, and the handler is run again from
//! the start, its questions answered from the retry and from the answers of earlier rounds
//! that the signed `requestState` carries (so any replica can serve the retry). Spec
//! (MRTR): "Notably, it allows servers to request additional information without
//! maintaining any server-side state."

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_tasks_core::RequestorChannel;
use mcp_tasks_proto::ErrorObject;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::modern::mrtr_state::Recorded;

/// What a prompt's handler can do besides making its messages: ask the client.
#[derive(Clone)]
pub struct PromptContext {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    /// 2025-11-25: the request's channel to the client.
    channel: Option<Arc<dyn RequestorChannel>>,
    /// The client's capabilities.
    capabilities: Value,
    /// 2026-07-28: the answers of this round and the earlier ones, by key.
    pub(super) answers: BTreeMap<String, Recorded>,
    /// 2026-07-28: the questions not answered yet, by key.
    pub(super) asked: Mutex<Map<String, Value>>,
    /// Told when a question is added to `asked`.
    pub(super) questioned: Notify,
}

mcp_tasks_proto::debug_non_exhaustive!(PromptContext, |s| {
    answers: s.inner.answers.len()
});

impl PromptContext {
    /// A context whose questions go to the client over `channel` (2025-11-25), or are
    /// answered from `answers` (2026-07-28: the others become `inputRequests`).
    pub(crate) fn new(
        channel: Option<Arc<dyn RequestorChannel>>,
        capabilities: Value,
        answers: BTreeMap<String, Recorded>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                channel,
                capabilities,
                answers,
                asked: Mutex::new(Map::new()),
                questioned: Notify::new(),
            }),
        }
    }

    /// The client's capabilities.
    pub fn client_capabilities(&self) -> &Value {
        &self.inner.capabilities
    }

    /// Ask the client `method` with `params` under the name `key` and wait for the
    /// answer (see [`crate::ToolContext::ask`]; in a 2026-07-28 `prompts/get` the handler
    /// is run again for each round, and a question answered in an earlier round is
    /// answered at once).
    ///
    /// # Errors
    /// The client's error; when it did not declare the capability the method needs
    /// (`elicitation` in its mode, `sampling`, `roots`), -32021 with
    /// `data.requiredCapabilities` in 2026-07-28, -32601 in 2025-11-25.
    pub async fn ask(&self, key: &str, method: &str, params: Value) -> Result<Value, ErrorObject> {
        // A 2026-07-28 `prompts/get` has no channel: its questions go out as `inputRequests`.
        let revision = if self.inner.channel.is_none() {
            mcp_tasks_proto::Revision::V2026_07_28
        } else {
            mcp_tasks_proto::Revision::V2025_11_25
        };
        crate::tool::check_declared(&self.inner.capabilities, method, &params, revision)?;
        if let Some(channel) = &self.inner.channel {
            return channel.request(method, params).await;
        }
        if let Some(r) = self.inner.answers.get(key).filter(|r| r.method == method) {
            return Ok(r.response.clone());
        }
        self.inner
            .asked
            .lock()
            .insert(key.to_owned(), json!({"method": method, "params": params}));
        self.inner.questioned.notify_one();
        // Answered in a later round, by a run of its own: this one waits for nothing.
        std::future::pending().await
    }
}
