//! How a client presents itself and answers the server.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::{Revision, RevisionChoice};
use serde_json::{Map, Value, json};

use crate::input::{ElicitationHandler, SamplingHandler};
use crate::receiver::TaskReceiver;

/// Default of [`ClientConfig::probe_timeout`].
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default of [`ClientConfig::max_input_rounds`], and the gateway's bound on the rounds of
/// one call to a 2026-07-28 upstream.
pub const DEFAULT_MAX_INPUT_ROUNDS: u32 = 32;

/// Configuration of a [`crate::Client`].
#[non_exhaustive]
#[derive(Clone)]
pub struct ClientConfig {
    /// `clientInfo.name`.
    pub name: String,
    /// `clientInfo.version`.
    pub version: String,
    /// Bound on every request but a plain `tools/call` and `tasks/result` (which wait
    /// on the work itself). `None` waits forever. Default 60 s.
    pub request_timeout: Option<Duration>,
    /// Bound on a plain (not task-augmented) `tools/call`. Default none.
    pub call_timeout: Option<Duration>,
    /// Answers `elicitation/create`; declares the `elicitation` capability (form mode).
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
    /// Answers `sampling/createMessage`; declares the `sampling` capability.
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    /// Runs task-augmented `elicitation/create` / `sampling/createMessage` as tasks of the
    /// client; declares the `tasks` capability (`list`, `cancel`, and the request types
    /// the client has a handler for).
    pub task_receiver: Option<TaskReceiver>,
    /// More client capabilities, merged over the ones above.
    pub extra_capabilities: Map<String, Value>,
    /// Which revision to speak (default [`RevisionChoice::Auto`]: detect it, probing with
    /// a 2026-07-28 `server/discover` and falling back to the 2025-11-25 `initialize` when
    /// the answer is not a recognized 2026-07-28 one; see [`crate::Client::connect_stdio`],
    /// [`crate::Client::connect_http`]). A fixed revision is the only one spoken: a server
    /// that does not speak it is an error (2025-11-25: `initialize`, no probe).
    pub protocol: RevisionChoice,
    /// With [`RevisionChoice::Auto`], the revision to speak with a server that speaks
    /// several: one whose `server/discover` lists a 2025-11-25 revision beside 2026-07-28
    /// (our own server, a gateway). Default [`Revision::LATEST`].
    /// [`Revision::V2025_11_25`] serves what only 2025-11-25 has: `tasks/list`,
    /// `tasks/result`, status notifications, progress of a task, a task the requestor asks
    /// for with its own `ttl`; should that server then refuse `initialize`, the client
    /// speaks 2026-07-28 after all.
    ///
    /// Spec (server/discover): "`supportedVersions`: Protocol versions the server
    /// supports. The client should choose one of these for subsequent requests."
    pub prefer_revision: Revision,
    /// How long the `server/discover` probe waits before the server is taken for a
    /// legacy one that does not answer unknown requests. Default 5 s.
    ///
    /// Spec (stdio): "The server returns any other error, or does not respond within a
    /// reasonable timeout: the server is legacy. Fall back to the `initialize` handshake."
    pub probe_timeout: Duration,
    /// 2026-07-28: declare the tasks extension `io.modelcontextprotocol/tasks` on every
    /// request (default on). Off, the server never answers with a task (a tool that
    /// always runs as one is refused with -32021) and questions of a plain call come as
    /// multi round-trip results.
    pub tasks_extension: bool,
    /// 2026-07-28: most `input_required` answers one plain `tools/call` goes through
    /// (each retried with the answers) before the client gives up. Default 16.
    pub max_input_rounds: u32,
}

mcp_tasks_proto::debug_non_exhaustive!(ClientConfig, |s| {
    name: s.name,
    version: s.version,
    request_timeout: s.request_timeout,
    call_timeout: s.call_timeout,
    elicitation: s.elicitation.is_some(),
    sampling: s.sampling.is_some(),
    task_receiver: s.task_receiver.is_some(),
    protocol: s.protocol,
    prefer_revision: s.prefer_revision,
});

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            name: "mcp-tasks-client".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            request_timeout: Some(Duration::from_secs(60)),
            call_timeout: None,
            elicitation: None,
            sampling: None,
            task_receiver: None,
            extra_capabilities: Map::new(),
            protocol: RevisionChoice::Auto,
            prefer_revision: Revision::LATEST,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            tasks_extension: true,
            max_input_rounds: DEFAULT_MAX_INPUT_ROUNDS,
        }
    }
}

impl ClientConfig {
    /// Answer elicitations with `handler`.
    #[must_use]
    pub fn with_elicitation(mut self, handler: impl ElicitationHandler) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answer sampling requests with `handler`.
    #[must_use]
    pub fn with_sampling(mut self, handler: impl SamplingHandler) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Run task-augmented requests of the server as tasks in `receiver` (see
    /// [`crate::receiver`]).
    #[must_use]
    pub fn with_task_receiver(mut self, receiver: TaskReceiver) -> Self {
        self.task_receiver = Some(receiver);
        self
    }

    mcp_tasks_proto::setters! {
        /// Set the request timeout.
        pub fn with_request_timeout(request_timeout: Option<Duration>);
        /// Speak `prefer_revision` with a server that speaks several (see
        /// [`Self::prefer_revision`]).
        pub fn with_prefer_revision(prefer_revision: Revision);
    }

    /// Speak `protocol`: [`RevisionChoice::Auto`], or one revision (a [`Revision`]
    /// converts into its [`RevisionChoice::Fixed`]); see [`Self::protocol`].
    #[must_use]
    pub fn with_protocol(mut self, protocol: impl Into<RevisionChoice>) -> Self {
        self.protocol = protocol.into();
        self
    }

    /// The `io.modelcontextprotocol/clientCapabilities` sent on every request of a
    /// stateless revision (2026-07-28):
    /// elicitation (form) and sampling when the client has handlers, the tasks extension
    /// ([`Self::tasks_extension`]), then [`Self::extra_capabilities`]. No `tasks`
    /// capability: the extension has no client-hosted tasks.
    ///
    /// Spec (SEP-2663): the client signals support "by including the extension in its
    /// per-request capabilities" as `"extensions": {"io.modelcontextprotocol/tasks": {}}`.
    pub fn request_capabilities(&self) -> Value {
        self.capabilities_with(|caps| {
            if self.tasks_extension {
                let mut extensions = Map::new();
                extensions.insert(mcp_tasks_proto::modern::TASKS_EXTENSION.into(), json!({}));
                caps.insert("extensions".into(), Value::Object(extensions));
            }
        })
    }

    /// The `capabilities` sent in `initialize`.
    pub fn capabilities(&self) -> Value {
        // Spec: "Servers and clients that support task-augmented requests MUST declare a
        // `tasks` capability during initialization." The request types are exhaustive:
        // only those the client can answer.
        self.capabilities_with(|caps| {
            if self.task_receiver.is_some() {
                let mut requests = Map::new();
                if self.elicitation.is_some() {
                    requests.insert("elicitation".into(), json!({ "create": {} }));
                }
                if self.sampling.is_some() {
                    requests.insert("sampling".into(), json!({ "createMessage": {} }));
                }
                caps.insert(
                    "tasks".into(),
                    json!({ "list": {}, "cancel": {}, "requests": requests }),
                );
            }
        })
    }

    /// The capabilities of any revision: elicitation (form) and sampling when the client
    /// has handlers, then what `revision` adds, then [`Self::extra_capabilities`].
    fn capabilities_with(&self, revision: impl FnOnce(&mut Map<String, Value>)) -> Value {
        let mut caps = Map::new();
        if self.elicitation.is_some() {
            caps.insert("elicitation".into(), json!({ "form": {} }));
        }
        if self.sampling.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        revision(&mut caps);
        for (k, v) in &self.extra_capabilities {
            caps.insert(k.clone(), v.clone());
        }
        Value::Object(caps)
    }
}
