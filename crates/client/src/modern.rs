//! The 2026-07-28 ("modern") side of the client: detecting the server's era, the `_meta`
//! every modern request carries, and the extension's detailed task.
//!
//! Detection (versioning, "Backward Compatibility"): the client sends `server/discover`
//! with its preferred modern version in `_meta` ([`probe`]). A `DiscoverResult`, or a
//! recognized modern error, identifies a modern server; "Anything else identifies a legacy
//! server", and the client falls back to `initialize`. The one modern error that still
//! leads to `initialize` is an `UnsupportedProtocolVersionError` whose `supported` list
//! names only `initialize` revisions this client speaks (a gateway that does not bridge the
//! eras answers so): "The client SHOULD select a mutually supported version from the
//! `supported` list", and such a version is spoken through `initialize`. The era is found
//! once per connection and kept for its lifetime: a stdio connection is one server
//! process ("Clients SHOULD cache the result for the lifetime of the server process").

use mcp_tasks_proto::mcp::{SUPPORTED_PROTOCOL_VERSIONS, Task, TaskStatus};
use mcp_tasks_proto::modern::tasks::DetailedTask;
use mcp_tasks_proto::modern::{
    self, ClientCapabilities, Implementation, MODERN_VERSIONS, PROTOCOL_VERSION,
    UnsupportedVersionData,
};
use mcp_tasks_proto::{ErrorObject, RevisionChoice, codes, methods};
use serde_json::{Map, Value, json};

use crate::ClientError;
use crate::config::ClientConfig;
use crate::rpc::Rpc;
use crate::types::parse_task;

/// What the `server/discover` probe found.
#[derive(Debug)]
pub(crate) enum Probe {
    /// A modern server: its `DiscoverResult`.
    Modern(Value),
    /// A legacy server (why we think so, for the logs and for `--protocol modern`).
    Legacy(String),
}

/// Whether `code` is one of the errors only a modern server sends.
///
/// Spec (versioning): "a recognized modern JSON-RPC error (such as
/// `UnsupportedProtocolVersionError`) identifies a modern server".
pub(crate) fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        modern::codes::HEADER_MISMATCH
            | modern::codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | modern::codes::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The `_meta` of every modern request of a client so configured.
///
/// Spec (basic, `_meta`): "Client requests carry the following `io.modelcontextprotocol/*`
/// fields in `_meta`; fields marked as required MUST be included on every request"
/// (`protocolVersion`, `clientCapabilities`; `clientInfo` SHOULD).
pub(crate) fn request_meta(config: &ClientConfig) -> Value {
    let caps = match config.request_capabilities() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    modern::request_meta_value(
        &Implementation::new(config.name.clone(), config.version.clone()),
        &ClientCapabilities(caps),
    )
}

pub(crate) use mcp_tasks_proto::meta::stamp;

/// Whether `error`, the answer to `initialize` of a client that finds the server's
/// revision (`protocol` is [`RevisionChoice::Auto`]), says the server is a 2026-07-28 one
/// after all: its probe went unanswered in time (a server slow to start reads it late and
/// answers it after the bound), and it refuses `initialize` as a modern server does
/// (FastMCP 4 once it has answered `server/discover` on the connection). The one test of
/// a [`crate::Client`]'s start and a [`crate::connection::Connection::start`].
///
/// Spec (versioning): "a recognized modern JSON-RPC error (such as
/// `UnsupportedProtocolVersionError`) identifies a modern server".
pub(crate) fn initialize_refused_as_modern(protocol: RevisionChoice, error: &ErrorObject) -> bool {
    protocol == RevisionChoice::Auto && modern::names_a_stateless_revision(error)
}

/// The `serverInfo` of a `DiscoverResult` (in its `_meta`), if it has one.
pub(crate) fn server_info(discover: &Value) -> Option<Value> {
    discover
        .get("_meta")
        .and_then(|m| m.get(modern::SERVER_INFO_META))
        .cloned()
}

/// Send `server/discover` and tell the server's era from the answer.
///
/// Spec (stdio, "Backward Compatibility"): "The server returns a `DiscoverResult`: the
/// server is modern." / "The server returns a recognized modern JSON-RPC error such as
/// `UnsupportedProtocolVersionError`: the server is modern but does not support the
/// requested version. Use one of the versions in its advertised `supported` list. Do
/// **not** fall back to `initialize`." / "The server returns any other error, or does not
/// respond within a reasonable timeout: the server is legacy." / "The fallback MUST NOT be
/// keyed to one specific error code". Spec (streamable HTTP): "If the body is empty or is
/// not a recognized modern JSON-RPC error, fall back to `initialize`"; a 4xx without such
/// a body arrives here as a transport error with its status.
///
/// An `UnsupportedProtocolVersionError` whose `supported` list names a modern version this
/// client speaks is answered by probing again, once, with that version: "Use one of the
/// versions in its advertised `supported` list" (a second refusal is the error).
///
/// # Errors
/// A modern server refusing the probe (no mutually supported version, a header or
/// capability error), or a transport that cannot reach the server at all.
pub(crate) async fn probe(rpc: &Rpc, config: &ClientConfig) -> Result<Probe, ClientError> {
    let params = stamp(&request_meta(config), None);
    probe_with(|| {
        rpc.request(
            methods::SERVER_DISCOVER,
            Some(params.clone()),
            Some(config.probe_timeout),
        )
    })
    .await
}

/// [`probe`] with `discover` sending the stamped `server/discover` (and failing with
/// [`ClientError::Timeout`] when it goes unanswered): the detection of every connection,
/// a [`crate::Client`]'s and a [`crate::connection::Connection`]'s.
pub(crate) async fn probe_with<F, Fut>(discover: F) -> Result<Probe, ClientError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Value, ClientError>>,
{
    match read_probe(discover().await) {
        Err(ClientError::Rpc { error, .. })
            if error.code == modern::codes::UNSUPPORTED_PROTOCOL_VERSION
                && refused_versions(&error)
                    .iter()
                    .any(|v| is_modern_version(v)) =>
        {
            tracing::debug!("server/discover refused our version, which it lists: probing again");
            read_probe(discover().await)
        }
        other => other,
    }
}

/// The `supported` list of an `UnsupportedProtocolVersionError`.
fn refused_versions(error: &ErrorObject) -> Vec<String> {
    error
        .data
        .clone()
        .and_then(|d| serde_json::from_value::<UnsupportedVersionData>(d).ok())
        .map(|d| d.supported)
        .unwrap_or_default()
}

/// What the answer to one `server/discover` says.
fn read_probe(answer: Result<Value, ClientError>) -> Result<Probe, ClientError> {
    match answer {
        Ok(v) => {
            let versions = supported_versions(v.get("supportedVersions"));
            if versions.is_empty() || versions.iter().any(|v| is_modern_version(v)) {
                Ok(Probe::Modern(v))
            } else if versions.iter().any(|v| is_legacy_version(v)) {
                Ok(Probe::Legacy(format!(
                    "server/discover lists only {}",
                    versions.join(", ")
                )))
            } else {
                Err(no_common_version(&versions))
            }
        }
        Err(ClientError::Rpc { error, .. }) if is_modern_error(error.code) => refused_probe(error),
        Err(ClientError::Rpc { error, .. }) => Ok(Probe::Legacy(format!(
            "server/discover was answered with {} ({})",
            error.code, error.message
        ))),
        Err(ClientError::Timeout { timeout, .. }) => Ok(Probe::Legacy(format!(
            "server/discover got no answer within {timeout:?}"
        ))),
        Err(ClientError::Transport { error, method })
            if error.http_status.is_some_and(|s| (400..500).contains(&s)) =>
        {
            Ok(Probe::Legacy(format!("{method}: {error}")))
        }
        Err(e) => Err(e),
    }
}

/// A modern error to the probe: fall back only when the server names an `initialize`
/// revision we speak and no modern one.
fn refused_probe(error: ErrorObject) -> Result<Probe, ClientError> {
    if error.code == modern::codes::UNSUPPORTED_PROTOCOL_VERSION {
        let versions = refused_versions(&error);
        if !versions.iter().any(|v| is_modern_version(v))
            && versions.iter().any(|v| is_legacy_version(v))
        {
            return Ok(Probe::Legacy(format!(
                "the server supports only {} (spoken through initialize)",
                versions.join(", ")
            )));
        }
        if !versions.iter().any(|v| is_modern_version(v)) {
            return Err(no_common_version(&versions));
        }
    }
    Err(ClientError::Rpc {
        method: methods::SERVER_DISCOVER.to_owned(),
        error,
    })
}

/// Whether a `DiscoverResult` lists a 2025-11-25 revision this client speaks (through
/// `initialize`) beside the modern one: a server of both eras.
pub(crate) fn lists_legacy(discover: &Value) -> bool {
    supported_versions(discover.get("supportedVersions"))
        .iter()
        .any(|v| is_legacy_version(v))
}

fn supported_versions(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn is_modern_version(v: &str) -> bool {
    MODERN_VERSIONS.contains(&v)
}

fn is_legacy_version(v: &str) -> bool {
    SUPPORTED_PROTOCOL_VERSIONS.contains(&v)
}

fn no_common_version(versions: &[String]) -> ClientError {
    ClientError::Protocol(format!(
        "no protocol version in common: the server supports {}, this client {} and {}",
        if versions.is_empty() {
            "none it names".to_owned()
        } else {
            versions.join(", ")
        },
        PROTOCOL_VERSION,
        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
    ))
}

/// A task as the extension's `tasks/get` returns it, read into the 2025-11-25 [`Task`]
/// (`ttlMs`, `pollIntervalMs` read as `ttl`, `pollInterval`): the task and its
/// status-specific payload. [`TaskDetailExt`] reads one and tells its outcome.
pub type TaskDetail = DetailedTask<Task>;

/// What a client does with a [`TaskDetail`]: read it from a `tasks/get` result, and tell
/// the outcome of a terminal task.
pub trait TaskDetailExt: Sized {
    /// Read a `DetailedTask` (a `tasks/get` result).
    ///
    /// # Errors
    /// [`ClientError::Protocol`] without a usable `taskId` or `status`.
    fn parse(v: &Value) -> Result<Self, ClientError>;

    /// The outcome of a terminal task as its requestor sees it
    /// ([`Report::Requestor`]); `None` while it runs.
    ///
    /// # Errors
    /// (Inside the outcome) [`ClientError::Protocol`] for a terminal task without the
    /// payload its status requires.
    fn outcome(&self) -> Option<Result<Result<Value, ErrorObject>, ClientError>> {
        self.outcome_as(Report::Requestor)
    }

    /// The outcome of a terminal task: its result, or its error (for `cancelled`, an
    /// error saying so, as `report` says); `None` while it runs.
    ///
    /// Spec (SEP-2663): `completed` "This includes tool calls that returned results with
    /// `isError: true`"; `failed` "The task will include the `error` field with the
    /// JSON-RPC error details".
    ///
    /// # Errors
    /// (Inside the outcome, [`Report::Requestor`]) [`ClientError::Protocol`] for a
    /// completed task without its `result`.
    fn outcome_as(&self, report: Report)
    -> Option<Result<Result<Value, ErrorObject>, ClientError>>;
}

impl TaskDetailExt for TaskDetail {
    fn parse(v: &Value) -> Result<Self, ClientError> {
        let task = parse_task(v)?;
        let error = v
            .get("error")
            .and_then(|e| serde_json::from_value::<ErrorObject>(e.clone()).ok());
        Ok(Self {
            task,
            result: v.get("result").filter(|r| r.is_object()).cloned(),
            error,
            input_requests: v.get("inputRequests").and_then(Value::as_object).cloned(),
        })
    }

    fn outcome_as(
        &self,
        report: Report,
    ) -> Option<Result<Result<Value, ErrorObject>, ClientError>> {
        let message = || self.task.status_message.clone();
        let id = &self.task.task_id;
        let relay = report == Report::Relay;
        match self.task.status {
            TaskStatus::Completed => match (&self.result, relay) {
                (Some(r), _) => Some(Ok(Ok(r.clone()))),
                (None, true) => Some(Ok(Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("upstream task {id} completed without a result"),
                )))),
                (None, false) => Some(Err(ClientError::Protocol(format!(
                    "task {id} is completed but tasks/get carries no `result`"
                )))),
            },
            TaskStatus::Failed => Some(Ok(Err(self.error.clone().unwrap_or_else(|| {
                let what = if relay {
                    "the upstream task failed"
                } else {
                    "the task failed"
                };
                ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    message().unwrap_or_else(|| what.into()),
                )
            })))),
            TaskStatus::Cancelled if relay => Some(Ok(Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("upstream task {id} was cancelled"),
            )))),
            TaskStatus::Cancelled => Some(Ok(Err(ErrorObject::new(
                codes::TASK_CANCELLED,
                message().unwrap_or_else(|| "the task was cancelled".into()),
            )))),
            TaskStatus::Working | TaskStatus::InputRequired => None,
        }
    }
}

/// How a terminal task's outcome is reported ([`TaskDetailExt::outcome_as`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Report {
    /// As the task's requestor: a `cancelled` task is a `-32800` error with its
    /// `statusMessage`; a `completed` one without `result` a [`ClientError::Protocol`].
    Requestor,
    /// As a relay passing the outcome of an upstream task on to its own caller: a
    /// `cancelled` task is a `-32603` error "upstream task ID was cancelled" (its caller
    /// did not cancel it: the upstream did); a `completed` one without `result` a
    /// `-32603` error that says so; a `failed` one without `error` nor `statusMessage`
    /// "the upstream task failed".
    Relay,
}

/// The `inputResponses` params of `tasks/update`.
pub(crate) fn update_params(task_id: &str, responses: Map<String, Value>) -> Value {
    json!({ "taskId": task_id, "inputResponses": responses })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_is_merged_into_params() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let p = stamp(
            &meta,
            Some(json!({"name": "x", "_meta": {"progressToken": 1}})),
        );
        assert_eq!(p["_meta"]["progressToken"], 1);
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(p["name"], "x");
        assert_eq!(stamp(&meta, None)["_meta"], meta);
    }

    #[test]
    fn an_initialize_refused_as_by_a_modern_server_counts_only_when_detecting() {
        let e = modern::unsupported_version("2025-11-25", &[PROTOCOL_VERSION]);
        assert!(initialize_refused_as_modern(RevisionChoice::Auto, &e));
        let fixed = RevisionChoice::Fixed(mcp_tasks_proto::Revision::V2025_11_25);
        assert!(!initialize_refused_as_modern(fixed, &e));
        let other = ErrorObject::new(-32602, "bad version");
        assert!(!initialize_refused_as_modern(RevisionChoice::Auto, &other));
    }

    #[test]
    fn modern_errors_are_told_from_others() {
        for code in [-32020, -32021, -32022] {
            assert!(is_modern_error(code));
        }
        for code in [-32601, -32602, -32600, -32000, -32603] {
            assert!(!is_modern_error(code));
        }
    }

    #[test]
    fn an_unsupported_version_listing_only_initialize_revisions_falls_back() {
        let e = modern::unsupported_version("2026-07-28", SUPPORTED_PROTOCOL_VERSIONS);
        assert!(matches!(refused_probe(e), Ok(Probe::Legacy(_))));
        let e = modern::unsupported_version("2026-07-28", &["2099-01-01"]);
        assert!(matches!(refused_probe(e), Err(ClientError::Protocol(_))));
        let e = modern::header_mismatch("Mcp-Method");
        assert!(matches!(refused_probe(e), Err(ClientError::Rpc { .. })));
    }

    #[test]
    fn detailed_tasks_give_their_outcome() {
        let base = json!({"taskId": "t", "createdAt": "", "lastUpdatedAt": "", "ttlMs": null});
        let with = |extra: Value| {
            let mut v = base.clone();
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            TaskDetail::parse(&v).unwrap()
        };
        let done = with(json!({"status": "completed", "result": {"content": [], "isError": true}}));
        assert_eq!(
            done.outcome().unwrap().unwrap().unwrap()["isError"],
            json!(true)
        );
        let failed =
            with(json!({"status": "failed", "error": {"code": -32603, "message": "boom"}}));
        assert_eq!(
            failed.outcome().unwrap().unwrap().unwrap_err().message,
            "boom"
        );
        let cancelled = with(json!({"status": "cancelled"}));
        assert_eq!(
            cancelled.outcome().unwrap().unwrap().unwrap_err().code,
            codes::TASK_CANCELLED
        );
        let asking = with(json!({"status": "input_required", "inputRequests": {"k": {}}}));
        assert!(asking.outcome().is_none());
        assert_eq!(asking.input_requests.unwrap().len(), 1);
        assert!(
            with(json!({"status": "completed"}))
                .outcome()
                .unwrap()
                .is_err()
        );
    }
}
