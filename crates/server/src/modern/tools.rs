//! `tools/list` and `tools/call` in 2026-07-28.

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::modern::{self, CacheScope, ListToolsResult, ResultType};
use serde_json::Value;

use super::ModernRequest;
use super::cache::CACHE_TTL_MS;
use super::tool_call::ToolCall;
use crate::extension::ToolSource;
use crate::logging::LogThreshold;
use crate::tool::Tool;

/// Serve `tools/list`: the tools of `source` (the session's, or those a gateway serves
/// modern requests from) on one page, with the cacheable-result fields,
/// without `execution` (in this era the server decides per request whether a call becomes
/// a task; there is no per-tool opt-in for the client to honour).
///
/// Spec (changelog): "List endpoints (`tools/list`, `resources/list`, `prompts/list`) no
/// longer vary per-connection." Schema (`ListToolsResult`): `ttlMs` and `cacheScope` are
/// required.
pub(super) fn list(source: &dyn ToolSource, params: Option<&Value>) -> Result<Value, ErrorObject> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => {}
        Some(Value::String(_)) => {
            // All tools fit on one page, so no cursor is ever issued.
            return Err(ErrorObject::invalid_params("Invalid cursor"));
        }
        Some(_) => return Err(ErrorObject::invalid_params("`cursor` must be a string")),
    }
    let result = ListToolsResult {
        result_type: ResultType::Complete,
        tools: source.listing(false),
        ttl_ms: CACHE_TTL_MS,
        cache_scope: CacheScope::Public,
        next_cursor: None,
        meta: None,
    };
    serde_json::to_value(result).map_err(ErrorObject::internal)
}

/// Serve `tools/call`, run directly: the handler's result is the reply.
///
/// * The server decides whether the call becomes a task (tasks on, for a client that
///   declared the tasks extension): a tool whose `taskSupport` is `required` always does
///   (for a client without the extension it is refused); an `optional` one when it
///   outlives `task_after` ([`super::deferred`]); any other never. Spec (SEP-2663): "The
///   server is the sole decider"; "If a server is unable to service a request to a client
///   that does not declare this extension capability without returning
///   `CreateTaskResult`, the server MUST return an error with the code `-32021`"; "A
///   server MUST NOT return `CreateTaskResult` to a client that did not include the
///   extension capability on its request".
/// * A `task` field is ignored. Spec (SEP-2663): "The `task` parameter on
///   `CallToolRequest` is removed; servers MUST ignore it".
/// * Bad arguments give the `isError` result, as in 2025-11-25.
/// * On HTTP, the `Mcp-Param-{Name}` headers must match the arguments the tool's
///   `inputSchema` marks `x-mcp-header` ([`super::param_headers`]): -32020 (HTTP 400)
///   otherwise, before anything runs.
/// * The params the handler sees ([`ToolContext::request_params`], which a gateway
///   forwards upstream) lose the per-request `io.modelcontextprotocol/*` fields of
///   `_meta`: they describe this hop (this client's version and capabilities), not the
///   next one.
/// * A direct call whose handler asks the client something is answered with an
///   `InputRequiredResult` and goes on when the client retries ([`super::mrtr`]); no
///   request is ever sent to the client. Spec (stdio): "The server MUST NOT write JSON-RPC
///   requests to `stdout`."
pub(super) async fn call(
    req: ModernRequest<'_>,
    source: &dyn ToolSource,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    let (session, cx, meta) = (req.session, req.cx, req.meta);
    let (params_value, _, args, tool) = crate::handlers::tools_call::parse(source, params)?;
    super::param_headers::check(&tool.input_schema, &args, meta.param_headers.as_deref())?;
    let extension = meta.client_capabilities.has_tasks_extension();
    let engine = session.state.engine.as_ref();
    let support = tool.effective_task_support();
    if engine.is_some() && support == TaskSupport::Required && !extension {
        return Err(modern::missing_tasks_extension(&format!(
            "tool `{}` always runs as a task",
            tool.name
        )));
    }
    if let Err(rejected) = tool.check_arguments(&args) {
        return Ok(rejected.to_value());
    }
    if let Some(engine) = engine.filter(|_| extension) {
        // During a task the tool may ask what the client declared: the questions become
        // the task's `inputRequests`.
        let caps = meta.client_capabilities.to_value();
        let params = without_hop_meta(params_value);
        let call = ToolCall {
            tool: &tool,
            args,
            params,
            caps,
            log: log_threshold(meta)?,
        };
        match support {
            // Input first, by multi round-trip rounds, then the task.
            TaskSupport::Required if tool.gathers_input_before_task() => {
                return super::mrtr::call(session, cx, call, Some(engine)).await;
            }
            TaskSupport::Required => return super::tasks::create(session, engine, call).await,
            TaskSupport::Optional => return super::deferred::call(session, engine, cx, call).await,
            TaskSupport::Forbidden => {}
        }
        let ToolCall { args, params, .. } = call;
        return run_direct(req, &tool, args, params).await;
    }
    run_direct(req, &tool, args, params_value).await
}

/// The error of a `tools/call` as this era's wire may carry it. Everything `tools/call`
/// itself refuses has its own code (-32602, -32021); a -32601 can only be a tool's (or an
/// upstream's, behind a gateway), and goes out as -32603 with the code in
/// `data.originalCode` ([`modern::rewritten`]): on HTTP a -32601 is status 404, which says
/// that the server does not implement `tools/call`. The reserved codes are checked for
/// every modern answer (`modern::valid_error`, in the session).
///
/// Spec (streamable HTTP): "If the server does not implement the requested RPC method, it
/// MUST respond with `404 Not Found` and a JSON-RPC error with code `-32601`".
pub(super) fn call_error(e: ErrorObject) -> ErrorObject {
    if e.code == mcp_tasks_proto::codes::METHOD_NOT_FOUND {
        modern::rewritten(e)
    } else {
        e
    }
}

/// Run `tool` as a direct call: its result is the reply, or, when it asks the client
/// something, an `InputRequiredResult` ([`super::mrtr`]).
async fn run_direct(
    req: ModernRequest<'_>,
    tool: &Tool,
    args: Value,
    params_value: Value,
) -> Result<Value, ErrorObject> {
    let (session, cx, meta) = (req.session, req.cx, req.meta);
    let call = ToolCall {
        tool,
        args,
        params: without_hop_meta(params_value),
        caps: meta.client_capabilities.to_value(),
        log: log_threshold(meta)?,
    };
    super::mrtr::call(session, cx, call, None).await
}

/// The log level a request's `_meta` asks for; off without one (2026-07-28 changelog:
/// "servers MUST NOT emit `notifications/message` for requests that did not include this
/// field").
///
/// # Errors
/// -32602 for a level that is not a `LoggingLevel`.
fn log_threshold(meta: &modern::RequestMeta) -> Result<LogThreshold, ErrorObject> {
    crate::logging::meta_level(meta.log_level.as_deref()).map(LogThreshold::at)
}

/// `params` without the per-request protocol fields of `_meta` (and without `_meta` if
/// nothing else was in it).
pub(super) fn without_hop_meta(mut params: Value) -> Value {
    let Some(obj) = params.as_object_mut() else {
        return params;
    };
    let emptied = obj
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .is_some_and(|meta| {
            for k in [
                modern::PROTOCOL_VERSION_META,
                modern::CLIENT_CAPABILITIES_META,
                modern::CLIENT_INFO_META,
                modern::LOG_LEVEL_META,
            ] {
                meta.remove(k);
            }
            meta.is_empty()
        });
    if emptied {
        obj.remove("_meta");
    }
    params
}
