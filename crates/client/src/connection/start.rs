//! How a [`Connection`] starts ([`Connection::start`]): the server's revision taken as
//! configured or found (a `server/discover` probe, with the fallback to `initialize`),
//! then `initialize` and `notifications/initialized` (2025-11-25) or `server/discover`
//! (2026-07-28, with the modern `_meta` stamped on every request from then on), within a
//! bound; and what the connection keeps of the server's answer
//! ([`Connection::init_result`]).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use mcp_tasks_proto::modern::{self, ClientCapabilities, Implementation, TASKS_EXTENSION};
use mcp_tasks_proto::{Revision, RevisionChoice, methods};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::{Adopted, Connection, Requests, ServerMessages};
use crate::ClientError;
use crate::connect::Connector;

/// How a connection starts ([`Connection::start`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StartAs {
    /// The revision to speak, or [`RevisionChoice::Auto`] to find it.
    pub protocol: RevisionChoice,
    /// The params of `initialize` (2025-11-25).
    pub initialize: Value,
    /// The modern `_meta` of every request (2026-07-28), made of [`Self::initialize`]
    /// ([`request_meta`]).
    pub meta: Value,
    /// How long the `server/discover` probe waits for its answer.
    pub probe_timeout: Duration,
    /// How long `initialize` (or `server/discover` of a 2026-07-28 server) waits.
    pub timeout: Duration,
}

impl StartAs {
    /// Start speaking `protocol`, initializing with `initialize` (whose `clientInfo` is
    /// `default_info` when it has none usable), each start request bounded by `timeout`;
    /// the probe by [`crate::DEFAULT_PROBE_TIMEOUT`].
    pub fn new(
        protocol: RevisionChoice,
        initialize: Value,
        default_info: Implementation,
        timeout: Duration,
    ) -> Self {
        let meta = request_meta(&initialize, default_info);
        Self {
            protocol,
            initialize,
            meta,
            probe_timeout: crate::DEFAULT_PROBE_TIMEOUT,
            timeout,
        }
    }
}

/// Why a connection did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// The connector could not open a connection ([`ClientError::Connect`]).
    Connect(ClientError),
    /// `method` got no answer within [`StartAs::timeout`].
    NoAnswer {
        /// `initialize` or `server/discover`.
        method: &'static str,
        /// The bound.
        timeout: Duration,
    },
    /// `method` failed with `error`.
    Failed {
        /// `initialize` or `server/discover`.
        method: &'static str,
        /// The server's error, or the transport's.
        error: ClientError,
        /// Resolves with why the connection ended, when it has (an error of a lost
        /// connection comes before its reason).
        ended: oneshot::Receiver<String>,
    },
}

/// A connection that started: what [`Connection::open`] gives, what the server answered
/// kept as [`Connection::init_result`], and [`Adopted::settled`] awaited.
#[derive(Debug)]
#[non_exhaustive]
pub struct Started {
    /// The connection.
    pub connection: Connection,
    /// Resolves (with a human-readable reason) when the connection has ended.
    pub ended: oneshot::Receiver<String>,
}

/// The modern `_meta` of every request of a connection that would `initialize` with
/// `init_params`: its client info (`default_info` when it has none) and capabilities,
/// without the legacy `tasks` and with the tasks extension added (tasks of a 2026-07-28
/// server are followed as the extension says).
///
/// Spec (basic, `_meta`): "Client requests carry the following `io.modelcontextprotocol/*`
/// fields in `_meta`; fields marked as required MUST be included on every request".
pub fn request_meta(init_params: &Value, default_info: Implementation) -> Value {
    let mut caps = match init_params.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    // The legacy `tasks` capability means nothing to a modern server.
    caps.remove("tasks");
    let ext = caps
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    if !ext.is_object() {
        *ext = Value::Object(Map::new());
    }
    if let Some(e) = ext.as_object_mut() {
        e.insert(TASKS_EXTENSION.to_owned(), json!({}));
    }
    let info = init_params
        .get("clientInfo")
        .and_then(|v| serde_json::from_value::<Implementation>(v.clone()).ok())
        .unwrap_or(default_info);
    modern::request_meta_value(&info, &ClientCapabilities(caps))
}

/// The `initialize`-like result a connection keeps for a 2026-07-28 server, made of its
/// `server/discover` result: its capabilities (without `extensions`, and without legacy
/// `tasks`: its tasks are the extension's), `serverInfo` from the result's `_meta`,
/// `instructions`.
pub(crate) fn init_of_discover(discover: &Value) -> Value {
    let mut caps = match discover.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    caps.remove("extensions");
    caps.remove("tasks");
    let server_info = crate::modern::server_info(discover)
        .unwrap_or_else(|| json!({"name": "upstream", "version": "unknown"}));
    let mut init = json!({
        "protocolVersion": modern::PROTOCOL_VERSION,
        "capabilities": caps,
        "serverInfo": server_info,
    });
    if let Some(i) = discover.get("instructions") {
        init["instructions"] = i.clone();
    }
    init
}

impl Connection {
    /// Open a connection with `connector` (as [`Self::open`]) and start it as `how` says:
    ///
    /// * a fixed revision is spoken as it is;
    /// * [`RevisionChoice::Auto`] probes with `server/discover` ([`Self::probe`]) on a
    ///   connection of the latest revision where the connector chooses the revision by
    ///   transport ([`Connector::revision_by_transport`]), else on the connector's; a
    ///   server found to speak 2025-11-25 is then started on a new 2025-11-25
    ///   connection where the transport chose the revision;
    /// * 2025-11-25: `initialize`, and `notifications/initialized` once answered; a
    ///   server that was not found modern but refuses `initialize` as a 2026-07-28 one
    ///   is sent `server/discover` after all;
    /// * 2026-07-28: `server/discover`, with [`StartAs::meta`] stamped on every request
    ///   of the connection from then on.
    ///
    /// What the server answered is kept as [`Self::init_result`]; then the connection's
    /// [`Adopted::settled`] is awaited.
    ///
    /// Spec (lifecycle): a modern client "sends `server/discover`" and no
    /// `notifications/initialized`; there is no session to open. Spec (stdio, "Backward
    /// Compatibility"): "The server returns a `DiscoverResult`: the server is modern." /
    /// "The server returns any other error, or does not respond within a reasonable
    /// timeout: the server is legacy." Spec (streamable HTTP, "Backward Compatibility"):
    /// the modern request refused without a recognized modern error falls back to
    /// `initialize`, on a transport that keeps the legacy session.
    ///
    /// # Errors
    /// [`StartError`]: the connector's, or that of the start request.
    pub async fn start(
        connector: &dyn Connector,
        to: Arc<dyn ServerMessages>,
        requests: Requests,
        generations: &AtomicU64,
        how: &StartAs,
    ) -> Result<Started, StartError> {
        let open = |revision| {
            Self::open(
                connector,
                Arc::clone(&to),
                requests.clone(),
                revision,
                generations,
            )
        };
        let by_transport =
            how.protocol == RevisionChoice::Auto && connector.revision_by_transport();
        // Detecting by transport starts with the latest revision's connection.
        let first = if by_transport {
            Revision::LATEST
        } else {
            Revision::V2025_11_25
        };
        let mut adopted = open(first).await.map_err(StartError::Connect)?;
        let mut modern = match how.protocol {
            RevisionChoice::Fixed(r) => r.is_stateless(),
            RevisionChoice::Auto => {
                let found = speaks_modern(&adopted.connection, how).await;
                tracing::info!(server = %connector.describe(), modern = found, "server protocol found");
                if by_transport && !found {
                    drop(adopted);
                    adopted = open(Revision::V2025_11_25)
                        .await
                        .map_err(StartError::Connect)?;
                }
                found
            }
        };
        let Adopted {
            connection,
            ended,
            settled,
        } = adopted;
        let (mut method, params) = if modern {
            connection.speak_stateless(how.meta.clone());
            (modern::methods::SERVER_DISCOVER, None)
        } else {
            (methods::INITIALIZE, Some(how.initialize.clone()))
        };
        let mut init = connection
            .bounded_start(method, params, how.timeout)
            .await?;
        if let Err(ClientError::Rpc { error, .. }) = &init
            && !modern
            // A 2026-07-28 server that does not take `initialize` (FastMCP 4 once it has
            // answered `server/discover` on the connection).
            && crate::modern::initialize_refused_as_modern(how.protocol, error)
        {
            // The probe went unanswered in time (a server slow to start reads it late and
            // answers it after our bound), and `initialize` is now refused as by a modern
            // server: it is one after all.
            tracing::info!(server = %connector.describe(), "initialize refused as by a 2026-07-28 server: server/discover again");
            connection.speak_stateless(how.meta.clone());
            modern = true;
            method = modern::methods::SERVER_DISCOVER;
            init = connection.bounded_start(method, None, how.timeout).await?;
        }
        let init = match init {
            Ok(v) => v,
            Err(error) => {
                return Err(StartError::Failed {
                    method,
                    error,
                    ended,
                });
            }
        };
        if modern {
            connection.set_init_result(init_of_discover(&init));
        } else {
            connection.set_init_result(init);
            connection.notify(methods::INITIALIZED, None).await;
        }
        if let Some(settled) = settled {
            settled.await;
        }
        Ok(Started { connection, ended })
    }

    /// `method` without [`Requests::timeout`], within `timeout`.
    async fn bounded_start(
        &self,
        method: &'static str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Result<Value, ClientError>, StartError> {
        tokio::time::timeout(timeout, self.request_unbounded(method, params))
            .await
            .map_err(|_| StartError::NoAnswer { method, timeout })
    }
}

/// Whether the server on `conn` speaks 2026-07-28 ([`RevisionChoice::Auto`]): its
/// `DiscoverResult` ([`Connection::probe`]) lists 2026-07-28 in `supportedVersions`. A
/// result without it (a server that echoes unknown requests, or lists only `initialize`
/// revisions) counts as legacy, and so does a modern error (no common version):
/// `initialize` then says what the server speaks.
async fn speaks_modern(conn: &Connection, how: &StartAs) -> bool {
    conn.probe(&how.meta, how.probe_timeout)
        .await
        .and_then(|v| {
            v.get("supportedVersions")
                .and_then(Value::as_array)
                .map(|versions| {
                    versions
                        .iter()
                        .any(|x| x.as_str() == Some(modern::PROTOCOL_VERSION))
                })
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_proto::meta::stamp;
    use mcp_tasks_proto::modern::{CLIENT_CAPABILITIES_META, SERVER_INFO_META};

    #[test]
    fn meta_carries_the_session_capabilities_and_the_tasks_extension() {
        let init = json!({"capabilities": {"elicitation": {"form": {}}, "tasks": {"list": {}}}, "clientInfo": {"name": "c", "version": "1"}});
        let m = request_meta(&init, Implementation::new("fallback", "0"));
        assert_eq!(m[modern::PROTOCOL_VERSION_META], modern::PROTOCOL_VERSION);
        assert_eq!(
            m[CLIENT_CAPABILITIES_META],
            json!({"elicitation": {"form": {}}, "extensions": {TASKS_EXTENSION: {}}})
        );
        assert_eq!(m[modern::CLIENT_INFO_META]["name"], "c");
        let p = stamp(
            &m,
            Some(json!({"name": "x", "_meta": {"progressToken": 3}})),
        );
        assert_eq!(p["_meta"]["progressToken"], 3);
        assert_eq!(
            p["_meta"][modern::PROTOCOL_VERSION_META],
            modern::PROTOCOL_VERSION
        );
        let bare = request_meta(&json!({}), Implementation::new("fallback", "0"));
        assert_eq!(bare[modern::CLIENT_INFO_META]["name"], "fallback");
    }

    #[test]
    fn discover_results_become_initialize_results() {
        let init = init_of_discover(
            &json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "extensions": {TASKS_EXTENSION: {}}}, "instructions": "hi", "_meta": {SERVER_INFO_META: {"name": "up", "version": "2"}}}),
        );
        assert_eq!(init["capabilities"], json!({"tools": {}}));
        assert_eq!(init["serverInfo"]["name"], "up");
        assert_eq!(init["instructions"], "hi");
    }
}
