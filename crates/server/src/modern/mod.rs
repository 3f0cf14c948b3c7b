//! The 2026-07-28 ("modern") generation, served statelessly beside the 2025-11-25 session
//! (see `docs/adr/0005-two-generations.md`).
//!
//! [`crate::Session`] hands a request here when its `_meta` carries
//! `io.modelcontextprotocol/protocolVersion` ([`era`]); nothing here reads what
//! `initialize` negotiated. Spec (basic, "Statelessness"): "Servers MUST NOT rely on prior
//! requests over the same connection to establish context (e.g., capabilities, protocol
//! version, client identity). Every request supplies this metadata in its `_meta` field."
//!
//! Served so far: `server/discover`, `tools/list`, `tools/call` run directly or, for a
//! client with the tasks extension, as a task (a `required` tool always; an `optional`
//! one when it outlives `task_after`: [`deferred`]), and `tasks/get`, `tasks/update`,
//! `tasks/cancel` of the extension with `inputRequests`. Not yet: MRTR for direct calls,
//! `subscriptions/listen`.

pub(crate) mod cache;
mod deferred;
mod get_text;
mod listen;
pub(crate) mod mrtr;
pub(crate) mod mrtr_state;
mod param_headers;
mod tasks;
mod tool_call;
mod tools;

use mcp_tasks_proto::mcp::SUPPORTED_PROTOCOL_VERSIONS;
use mcp_tasks_proto::modern::{
    self, CacheScope, DiscoverResult, Implementation, MODERN_VERSIONS, RequestMeta,
    RequestRevision, ResultType, ServerCapabilities, TASKS_EXTENSION,
};
use mcp_tasks_proto::{ErrorObject, Revision, methods};
use mcp_tasks_rpc::RequestContext;
use serde_json::{Map, Value, json};

use std::sync::Arc;

use self::cache::CACHE_TTL_MS;
use crate::catalog::{Gen, Side};
use crate::extension::ToolSource;
use crate::session::Session;

/// Every version this server speaks: the modern ones per request, then those `initialize`
/// negotiates.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(SUPPORTED_PROTOCOL_VERSIONS)
        .copied()
        .collect()
}

/// The revision of a request of `session` with these `params` (see
/// [`modern::request_revision`]).
///
/// A server composed with an extension that serves no stateless revision
/// ([`crate::ExtensionFactory::revisions`]) refuses modern requests: its tools and
/// everything else come from what only `initialize` opens. A modern request gets -32022
/// listing the `initialize` revisions, which tells a dual-era client to fall back
/// (versioning: "the client retries with a supported version rather than falling back"
/// is for versions it can use per request; here every supported one needs `initialize`).
/// A gateway serves them ([`tools_for`]).
///
/// The checked fields of a modern `_meta` are moved out of `params` into the
/// [`RequestMeta`] ([`modern::take_request_revision`]), as the HTTP transport does: no
/// handler reads them from the params.
pub(crate) fn request_revision(session: &Session, params: Option<&mut Value>) -> RequestRevision {
    if !serves_stateless(session) && modern::names_revision_in_meta(params.as_deref()) {
        let requested = params
            .as_deref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(modern::PROTOCOL_VERSION_META))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(modern::unsupported_version(
            requested,
            SUPPORTED_PROTOCOL_VERSIONS,
        ));
    }
    modern::take_request_revision(params, &supported_versions())
}

/// Whether `session` serves requests of `revision`: a plain server serves every one, one
/// composed with an extension those the extension does
/// ([`crate::ExtensionFactory::revisions`]).
pub(crate) fn serves(session: &Session, revision: Revision) -> bool {
    session
        .state
        .extension
        .as_ref()
        .is_none_or(|e| e.revisions().contains(&revision))
}

/// Whether `session` serves any stateless revision (see [`serves`]).
fn serves_stateless(session: &Session) -> bool {
    Revision::ALL
        .into_iter()
        .any(|r| r.is_stateless() && serves(session, r))
}

/// What every handler of a modern request is given besides its params.
#[derive(Clone, Copy)]
pub(crate) struct ModernRequest<'a> {
    /// The session (connection) it came on.
    pub(crate) session: &'a Session,
    /// The request on its connection.
    pub(crate) cx: &'a RequestContext,
    /// Its method.
    pub(crate) method: &'a str,
    /// Its checked `_meta`.
    pub(crate) meta: &'a RequestMeta,
    /// Whether its answer is wanted as JSON text ([`Reply::Text`] may come back): the
    /// transport writes it at once (`Handler::handle_request_text`).
    pub(crate) text: bool,
}

/// A modern result: a JSON value, or JSON text written without building one (only when
/// [`ModernRequest::text`] asked for it; `tasks/get`, the most frequent request).
pub(crate) enum Reply {
    /// A result as a value, stamped by [`handle`].
    Value(Value),
    /// The JSON text of a result, stamped by whoever wrote it.
    Text(String),
}

impl Reply {
    /// The result as a value.
    ///
    /// # Errors
    /// -32603 when the text is not JSON (it always is: it was serialized).
    pub(crate) fn into_value(self) -> Result<Value, ErrorObject> {
        match self {
            Self::Value(v) => Ok(v),
            Self::Text(t) => serde_json::from_str(&t).map_err(ErrorObject::internal),
        }
    }

    /// The result as JSON text.
    ///
    /// # Errors
    /// -32603 when the value cannot be serialized (a `Value` always can).
    pub(crate) fn into_text(self) -> Result<String, ErrorObject> {
        match self {
            Self::Value(v) => serde_json::to_string(&v).map_err(ErrorObject::internal),
            Self::Text(t) => Ok(t),
        }
    }
}

/// Serve one modern request with `params`. The result carries `resultType` and
/// `_meta["io.modelcontextprotocol/serverInfo"]`.
///
/// # Errors
/// The JSON-RPC error to answer with.
pub(crate) async fn handle(
    req: ModernRequest<'_>,
    params: Option<Value>,
) -> Result<Reply, ErrorObject> {
    let (session, method) = (req.session, req.method);
    let mut result = match method {
        methods::SERVER_DISCOVER => {
            let forwarded = forwarded_capabilities(session).await;
            discover(session, forwarded)
        }
        methods::TOOLS_LIST => {
            let owned = tools_for(session).await?;
            let source = owned.as_deref().unwrap_or_else(|| session.tool_source());
            tools::list(source, params.as_ref())?
        }
        methods::TOOLS_CALL => {
            let owned = tools_for(session).await?;
            let source = owned.as_deref().unwrap_or_else(|| session.tool_source());
            tools::call(req, source, params)
                .await
                .map_err(tools::call_error)?
        }
        methods::TASKS_RESULT | methods::TASKS_LIST => {
            return Err(ErrorObject::method_not_found(format!(
                "`{method}` does not exist in 2026-07-28 (the tasks extension polls with tasks/get)"
            )));
        }
        modern::methods::SUBSCRIPTIONS_LISTEN => listen::listen(req, params.as_ref()).await?,
        methods::TASKS_GET | methods::TASKS_CANCEL | modern::methods::TASKS_UPDATE => {
            match tasks::handle(req, params.as_ref()).await? {
                Reply::Value(v) => v,
                text @ Reply::Text(_) => return Ok(text),
            }
        }
        m if session.state.catalog.serves(m, Gen::Modern) => {
            let key = session.state.parked.key(session).await?;
            let side = Side::Modern {
                key,
                principal: session.requester.principal.as_deref(),
                capabilities: req.meta.client_capabilities.to_value(),
            };
            session
                .state
                .catalog
                .handle(m, params.as_ref(), side)
                .await?
        }
        m if session
            .state
            .extension
            .as_ref()
            .is_some_and(|e| e.forwards_stateless(m)) =>
        {
            let Some(ext) = session.state.extension.as_ref() else {
                return Err(ErrorObject::method_not_found(format!(
                    "`{m}` is not served in 2026-07-28"
                )));
            };
            // What describes this hop (this client's version, capabilities, identity)
            // is not the next one's.
            let params = params.map(tools::without_hop_meta);
            ext.stateless_request(&session.requester, m, params).await?
        }
        methods::INITIALIZE => {
            return Err(ErrorObject::method_not_found(
                "`initialize` is not a 2026-07-28 method: drop the `io.modelcontextprotocol/protocolVersion` `_meta` to open a 2025-11-25 session, or send requests without a handshake",
            ));
        }
        other => {
            return Err(ErrorObject::method_not_found(format!(
                "`{other}` is not served in 2026-07-28"
            )));
        }
    };
    stamp_complete(&mut result, &session.state.server_info);
    Ok(Reply::Value(result))
}

/// The tools of a modern request when they are not the session's own: a server composed
/// with an extension serves them from what the extension gives for the requester (a
/// gateway's lane shared by the requester's modern requests); `None` for a plain server.
///
/// # Errors
/// The extension's error (a gateway whose upstream cannot be reached).
async fn tools_for(session: &Session) -> Result<Option<Arc<dyn ToolSource>>, ErrorObject> {
    match &session.state.extension {
        Some(ext) => ext.stateless_tools(&session.requester).await.map(Some),
        None => Ok(None),
    }
}

/// The capabilities of what an extension serves for this requester's modern requests
/// besides tools ([`crate::ExtensionFactory::stateless_capabilities`]: a gateway's upstream
/// resources, prompts, completions); none when it has none or cannot say now.
async fn forwarded_capabilities(session: &Session) -> Map<String, Value> {
    match &session.state.extension {
        Some(ext) if ext.revisions().iter().any(|r| r.is_stateless()) => ext
            .stateless_capabilities(&session.requester)
            .await
            .unwrap_or_default(),
        _ => Map::new(),
    }
}

/// [`modern::stamp_result`] of a `complete` result, with the `serverInfo` JSON made once
/// ([`server_info_meta`]) rather than serialized again for every result.
///
/// Spec (basic): "The `result` MUST include a `resultType` field" and "Servers SHOULD
/// include the following `io.modelcontextprotocol/*` field in every result's `_meta`".
fn stamp_complete(result: &mut Value, server_info: &Value) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    obj.entry("resultType")
        .or_insert_with(|| Value::String(ResultType::Complete.as_str().to_owned()));
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(modern::SERVER_INFO_META)
            .or_insert_with(|| server_info.clone());
    }
}

/// `serverInfo`, from the configuration, as the JSON every result's `_meta` carries (made
/// once per server: [`crate::ServerState`] keeps it).
pub(crate) fn server_info_meta(cfg: &crate::ServerConfig) -> Value {
    json!(Implementation::new(cfg.name.clone(), cfg.version.clone()))
}

/// Whether this server declares the tasks extension: it has a task engine.
fn tasks_on(session: &Session) -> bool {
    session.state.engine.is_some()
}

/// `server/discover`.
///
/// Spec (server/discover): "The server replies with its supported protocol versions,
/// capabilities, and identity." Spec (SEP-2663): the server declares
/// `"extensions": {"io.modelcontextprotocol/tasks": {}}` in response to
/// `server/discover`.
fn discover(session: &Session, forwarded: Map<String, Value>) -> Value {
    let mut extensions = Map::new();
    if tasks_on(session) {
        extensions.insert(TASKS_EXTENSION.to_owned(), json!({}));
    }
    let capabilities = ServerCapabilities {
        tools: Some(json!({ "listChanged": false })),
        extensions: (!extensions.is_empty()).then_some(extensions),
        extra: {
            let mut extra = session.state.catalog.capabilities(Gen::Modern);
            for (k, v) in forwarded {
                extra.entry(k).or_insert(v);
            }
            extra
        },
    };
    let result = DiscoverResult {
        result_type: ResultType::Complete,
        supported_versions: supported_versions()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        capabilities,
        instructions: session.state.config.instructions.clone(),
        ttl_ms: Some(CACHE_TTL_MS),
        cache_scope: Some(CacheScope::Public),
        meta: None,
        extra: Map::new(),
    };
    serde_json::to_value(result).unwrap_or_else(|_| json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's stamp is the protocol crate's, with the identity serialized once.
    #[test]
    fn stamp_complete_stamps_as_stamp_result_does() {
        let server = Implementation::new("srv".to_owned(), "1.2.3".to_owned());
        let info = json!(server);
        for v in [
            json!({}),
            json!({"resultType": "task", "x": 1}),
            json!({"_meta": {"k": "v"}}),
            json!({"_meta": 3}),
            json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "other"}}}),
            json!([1, 2]),
        ] {
            let (mut a, mut b) = (v.clone(), v.clone());
            modern::stamp_result(&mut a, &ResultType::Complete, &server);
            stamp_complete(&mut b, &info);
            assert_eq!(a, b, "{v}");
        }
    }
}
