//! The wire types of MCP 2026-07-28 (the "modern" generation) that mcp-tasks interprets:
//! per-request `_meta`, `resultType`, `server/discover`, the three modern error codes,
//! multi round-trip results ([`InputRequiredResult`]) and, in [`tasks`], the tasks
//! extension `io.modelcontextprotocol/tasks` (SEP-2663).
//!
//! The 2025-11-25 types stay in [`crate::mcp`]; a server speaking both generations picks
//! the module by the era of each request (see `docs/adr/0005-two-generations.md`).
//!
//! Spec (basic, `_meta`): "Client requests carry the following `io.modelcontextprotocol/*`
//! fields in `_meta`; fields marked as required MUST be included on every request."

pub mod param_headers;
mod parse;
mod request;
pub mod tasks;
mod wire_error;

pub use parse::parse_request;
pub use request::{
    RequestMeta, RequestRevision, names_a_stateless_revision, names_revision_in_meta,
    request_meta_value, request_revision, stateless_revision, take_request_revision,
};
pub use wire_error::{ORIGINAL_CODE, is_rate_limited, rewritten, valid_error};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ErrorObject;
use crate::revision::Revision;

/// The stateless protocol revision we serve ([`Revision::V2026_07_28`]).
pub const PROTOCOL_VERSION: &str = Revision::V2026_07_28.as_str();
/// The revisions we serve per request (without `initialize`): the dated names of the
/// [`Revision::is_stateless`] ones.
pub const MODERN_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// `_meta` key: the protocol version of a request (required).
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for a request (required).
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (SHOULD).
pub const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the minimum log level for a request (optional).
pub const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a result: the server's name and version (SHOULD).
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a notification on a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";
/// The identifier of the tasks extension (SEP-2663).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Method names of the modern generation that the 2025-11-25 one does not have (or
/// serves differently).
pub mod methods {
    /// `server/discover`
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// `tasks/update` (SEP-2663)
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// `notifications/tasks` (SEP-2663): a full `DetailedTask`.
    pub const TASKS_NOTIFICATION: &str = "notifications/tasks";
    /// `subscriptions/listen`
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
}

/// The body field that the `Mcp-Name` HTTP header mirrors for `method`, if it needs one
/// (one table for the server's check and every client's headers).
///
/// Spec (streamable HTTP): `Mcp-Name` is required for `tools/call`, `resources/read`,
/// `prompts/get` (`params.name` or `params.uri`). Spec (SEP-2663): "When `tasks/get`,
/// `tasks/update`, or `tasks/cancel` is sent over the Streamable HTTP transport, the
/// client MUST set the `Mcp-Name` header ... to the value of `params.taskId`."
#[must_use]
pub fn mcp_name_field(method: &str) -> Option<&'static str> {
    match method {
        crate::methods::TOOLS_CALL | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        crate::methods::TASKS_GET | crate::methods::TASKS_CANCEL | methods::TASKS_UPDATE => {
            Some("taskId")
        }
        _ => None,
    }
}

/// The error codes the modern generation defines (basic, "Error Codes"), kept with every
/// other code in [`crate::codes`].
pub mod codes {
    pub use crate::codes::{
        HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
    };
}

/// `Implementation`: a name and a version (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Every other field (`title`, `description`, `icons`, `websiteUrl`), unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// `{name, version}`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            extra: Map::new(),
        }
    }

    /// The implementation `v` describes, its fields moved out of it; `None` unless `v` is
    /// an object with a string `name` and `version` (what deserializing it accepts).
    /// Written by hand: the derived deserializer of the flattened `extra` buffers every
    /// field first, a cost paid on every 2026-07-28 request (its `clientInfo`).
    pub fn from_value(v: Value) -> Option<Self> {
        let Value::Object(mut m) = v else {
            return None;
        };
        let (Some(Value::String(name)), Some(Value::String(version))) =
            (m.remove("name"), m.remove("version"))
        else {
            return None;
        };
        Some(Self {
            name,
            version,
            extra: m,
        })
    }
}

/// `ClientCapabilities`, kept whole (an open set): read with the accessors.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientCapabilities(pub Map<String, Value>);

impl ClientCapabilities {
    /// The settings of extension `id`, if the client declared it.
    pub fn extension(&self, id: &str) -> Option<&Value> {
        self.0.get("extensions")?.get(id)
    }

    /// Whether the client declared the tasks extension.
    ///
    /// Spec (SEP-2663): "A server MUST NOT return `CreateTaskResult` to a client that did
    /// not include the extension capability on its request".
    pub fn has_tasks_extension(&self) -> bool {
        self.extension(TASKS_EXTENSION).is_some()
    }

    /// Whether the client declared form elicitation (`elicitation: {}` counts as form).
    pub fn elicitation_form(&self) -> bool {
        match self.0.get("elicitation") {
            Some(Value::Object(e)) => e.is_empty() || e.contains_key("form"),
            _ => false,
        }
    }

    /// Whether the client declared sampling.
    pub fn sampling(&self) -> bool {
        self.0.get("sampling").is_some_and(Value::is_object)
    }

    /// The capabilities as a JSON value (as handed to tools, like the legacy session's).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

/// `-32022` with `data: {supported, requested}`.
///
/// A version that `supported` lists (one `initialize` negotiates, sent per request) is
/// not called unsupported: the message says that it is served after `initialize`.
pub fn unsupported_version(requested: &str, supported: &[&str]) -> ErrorObject {
    let data = UnsupportedVersionData {
        supported: supported.iter().map(|s| (*s).to_owned()).collect(),
        requested: requested.to_owned(),
    };
    let per_request: Vec<&str> = supported
        .iter()
        .copied()
        .filter(|v| MODERN_VERSIONS.contains(v))
        .collect();
    let message = if supported.contains(&requested) {
        format!(
            "Protocol version `{requested}` is served after `initialize`, not per request; per-request versions: {}",
            if per_request.is_empty() {
                "none".to_owned()
            } else {
                per_request.join(", ")
            }
        )
    } else {
        format!(
            "Unsupported protocol version `{requested}`; supported: {}",
            supported.join(", ")
        )
    };
    ErrorObject::new(codes::UNSUPPORTED_PROTOCOL_VERSION, message).with_data(json!(data))
}

/// `-32021` with `data.requiredCapabilities = required`.
pub fn missing_capability(required: ClientCapabilities, detail: &str) -> ErrorObject {
    let data = MissingCapabilityData {
        required_capabilities: required,
    };
    ErrorObject::new(
        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: {detail}"),
    )
    .with_data(json!(data))
}

/// `-32021` naming the tasks extension.
///
/// Spec (SEP-2663): "the server MUST return an error with the code `-32021` (Missing
/// Required Client Capability), indicating the required extension in the error response".
pub fn missing_tasks_extension(detail: &str) -> ErrorObject {
    let mut caps = Map::new();
    caps.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
    missing_capability(ClientCapabilities(caps), detail)
}

/// `-32020`.
pub fn header_mismatch(detail: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(codes::HEADER_MISMATCH, format!("Header mismatch: {detail}"))
}

/// The `data` key naming the header of a `-32020` a server raised after the transport,
/// once it knew which `Mcp-Param-{Name}` headers the called tool declares.
pub const MISMATCHED_HEADER: &str = "header";

/// `-32020` for the `Mcp-Param-{Name}` header `header` (with `data.header`; see
/// [`valid_error`]).
pub fn param_header_mismatch(header: &str, detail: impl std::fmt::Display) -> ErrorObject {
    header_mismatch(detail).with_data(json!({ MISMATCHED_HEADER: header }))
}

/// `data` of `UnsupportedProtocolVersionError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    /// The versions the server supports.
    pub supported: Vec<String>,
    /// The version the client asked for.
    pub requested: String,
}

/// `data` of `MissingRequiredClientCapabilityError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingCapabilityData {
    /// What the server needs the client to declare.
    pub required_capabilities: ClientCapabilities,
}

/// `resultType`: how to read a result.
///
/// Spec (basic): "A `resultType` of any value unrecognized by the client MUST be
/// considered invalid." and "clients MUST treat an absent `resultType` as `"complete"`".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ResultType {
    /// `complete`: the final content.
    Complete,
    /// `input_required`: an [`InputRequiredResult`].
    InputRequired,
    /// `task` (tasks extension): a `CreateTaskResult`.
    Task,
    /// Any other value (invalid for a client that does not know it).
    Other(String),
}

impl ResultType {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Task => "task",
            Self::Other(s) => s,
        }
    }

    /// The `resultType` of a result value; absent is `complete`.
    pub fn of(result: &Value) -> Self {
        match result.get("resultType").and_then(Value::as_str) {
            Some(s) => Self::from(s.to_owned()),
            None => Self::Complete,
        }
    }
}

impl From<String> for ResultType {
    fn from(s: String) -> Self {
        match s.as_str() {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            "task" => Self::Task,
            _ => Self::Other(s),
        }
    }
}

impl From<ResultType> for String {
    fn from(r: ResultType) -> Self {
        match r {
            ResultType::Other(s) => s,
            other => other.as_str().to_owned(),
        }
    }
}

/// Put `resultType` and `_meta["io.modelcontextprotocol/serverInfo"]` on a result object
/// (an existing `resultType` and other `_meta` keys are kept). Does nothing when `result`
/// is not an object.
///
/// Spec (basic): "The `result` MUST include a `resultType` field" and "Servers SHOULD
/// include the following `io.modelcontextprotocol/*` field in every result's `_meta`".
pub fn stamp_result(result: &mut Value, result_type: &ResultType, server: &Implementation) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    obj.entry("resultType")
        .or_insert_with(|| Value::String(result_type.as_str().to_owned()));
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(SERVER_INFO_META)
            .or_insert_with(|| json!(server));
    }
}

/// `cacheScope` of a cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheScope {
    /// No user-specific data: any cache may share it.
    Public,
    /// Cache only within the same authorization context.
    Private,
}

/// `ServerCapabilities` as `server/discover` reports them.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// `tools` (present when the server has tools).
    pub tools: Option<Value>,
    /// `extensions`: identifier -> settings (`{}` for none).
    pub extensions: Option<Map<String, Value>>,
    /// Every other capability, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ServerCapabilities {
    /// Whether extension `id` is declared.
    pub fn has_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }
}

/// The result of `server/discover`.
///
/// Spec (server/discover): the server "replies with its supported protocol versions,
/// capabilities, and identity"; `_meta['io.modelcontextprotocol/serverInfo']`: "Servers
/// SHOULD include this field."
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Always `complete`.
    pub result_type: ResultType,
    /// Every version the server speaks (legacy ones included for a dual-era server).
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// Guidance for the model.
    pub instructions: Option<String>,
    /// How long the result may be cached, in ms.
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy.
    pub cache_scope: Option<CacheScope>,
    /// `_meta` (carries `serverInfo`).
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Every other field, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// The `serverInfo` of `_meta`, if present and well-formed.
    pub fn server_info(&self) -> Option<Implementation> {
        let v = self.meta.as_ref()?.get(SERVER_INFO_META)?;
        Implementation::deserialize(v).ok()
    }
}

/// The modern `tools/list` result: the tools plus the cacheable-result fields.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// Always `complete`.
    pub result_type: ResultType,
    /// The tools, as listed.
    pub tools: Vec<Value>,
    /// How long the list may be cached, in ms.
    pub ttl_ms: u64,
    /// Who may share a cached copy.
    pub cache_scope: CacheScope,
    /// The next page, if any.
    pub next_cursor: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

/// One server-to-client request carried in `inputRequests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// `inputRequests`: key -> request. Keys are server-assigned.
pub type InputRequests = Map<String, Value>;
/// `inputResponses`: key -> the client's result for that request.
pub type InputResponses = Map<String, Value>;

/// The methods an [`InputRequest`] may carry.
///
/// Spec (MRTR): "`inputRequests` values are request objects that MUST be one of
/// `ElicitRequest`, `CreateMessageRequest`, or `ListRootsRequest`".
pub const INPUT_REQUEST_METHODS: &[&str] =
    &["elicitation/create", "sampling/createMessage", "roots/list"];

/// `InputRequiredResult`: more input is needed before the request can complete.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `input_required`.
    pub result_type: ResultType,
    /// The requests the client must fulfil.
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client echoes on its retry.
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

impl InputRequiredResult {
    /// A result asking for `requests`, with `state` to be echoed.
    pub fn new(requests: InputRequests, state: Option<String>) -> Self {
        Self {
            result_type: ResultType::InputRequired,
            input_requests: Some(requests),
            request_state: state,
            meta: None,
        }
    }

    /// Check the MUSTs a sender has to meet.
    ///
    /// Spec (MRTR): "Servers MUST include at least one of `inputRequests` or
    /// `requestState` in every `InputRequiredResult` response." and the values "MUST be
    /// one of `ElicitRequest`, `CreateMessageRequest`, or `ListRootsRequest`".
    ///
    /// # Errors
    /// What is wrong, in a sentence.
    pub fn check(&self) -> Result<(), String> {
        if self.result_type != ResultType::InputRequired {
            return Err(format!(
                "resultType must be `input_required`, not `{}`",
                self.result_type.as_str()
            ));
        }
        if self.input_requests.is_none() && self.request_state.is_none() {
            return Err("an InputRequiredResult needs `inputRequests` or `requestState`".into());
        }
        for (key, req) in self.input_requests.iter().flatten() {
            let method = req.get("method").and_then(Value::as_str).unwrap_or("");
            if !INPUT_REQUEST_METHODS.contains(&method) {
                return Err(format!(
                    "inputRequests[{key:?}] has method `{method}`, not one of {}",
                    INPUT_REQUEST_METHODS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// The MRTR fields of a retried request's params (`tools/call`, `prompts/get`,
/// `resources/read`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryFields {
    /// The answers, by the keys of the previous `inputRequests`.
    pub input_responses: Option<InputResponses>,
    /// The `requestState` echoed back.
    pub request_state: Option<String>,
}

#[cfg(test)]
mod tests;
