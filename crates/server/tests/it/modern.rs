//! The 2026-07-28 era beside 2025-11-25 on one stdio connection: era detection per
//! request, `server/discover`, the modern errors, `tools/list` and direct `tools/call`.
//! Every response to a modern request is validated against the 2026-07-28 schema
//! (`Wire::*_modern`).

use std::sync::Arc;

use mcp_tasks_proto::CallToolResult;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::modern::{PROTOCOL_VERSION_META, SERVER_INFO_META, TASKS_EXTENSION};
use mcp_tasks_server::{Server, ServerConfig, Tool};
use mcp_tasks_testkit::schema::MODERN;
use mcp_tasks_testkit::wire::{Wire, modern_meta};
use serde_json::{Value, json};

use crate::support::text_of;

/// `echo {text}`, `batch` (`taskSupport: required`) and `ask` (elicits a name; says what
/// happened when it cannot).
fn tools() -> Vec<Tool> {
    let echo = Tool::new(
        "echo",
        "Returns its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args: Value, _cx| async move {
            Ok(CallToolResult::text(
                args["text"].as_str().unwrap_or_default(),
            ))
        },
    );
    let batch = Tool::new(
        "batch",
        "Always a task.",
        json!({"type": "object"}),
        |_args: Value, _cx| async move { Ok(CallToolResult::text("batch done")) },
    )
    .task_support(TaskSupport::Required);
    let ask = Tool::new(
        "ask",
        "Asks for a name.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            let asked = cx
                .elicit_raw(json!({"mode": "form", "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .await;
            Ok(match asked {
                Ok(r) => CallToolResult::text(format!("got {r}")),
                Err(e) => CallToolResult::error(format!("could not ask: {}", e.message)),
            })
        },
    )
    .task_support(TaskSupport::Optional);
    let params = Tool::new(
        "params",
        "Returns the request params it sees.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            Ok(CallToolResult::text(
                cx.request_params().cloned().unwrap_or_default().to_string(),
            ))
        },
    );
    vec![echo, batch, ask, params]
}

/// A server with these tools, tasks on or off, on the other end of the returned pipe.
async fn serve(tasks: bool) -> Wire {
    let config = ServerConfig::default()
        .with_info("modern-test", "1.2.3")
        .with_instructions("Use echo.");
    let mut builder = Server::builder().config(config).tools(tools());
    if !tasks {
        builder = builder.no_tasks();
    }
    let server = builder.build().await.expect("a server");
    crate::support::wire_to(server)
}

fn with_tasks() -> Value {
    json!({"extensions": {TASKS_EXTENSION: {}}})
}

fn assert_modern_result(r: &Value) {
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(
        r["_meta"][SERVER_INFO_META],
        json!({"name": "modern-test", "version": "1.2.3"}),
        "{r}"
    );
}

#[tokio::test]
async fn server_discover_lists_both_eras_the_tasks_extension_and_server_info() {
    let mut s = serve(true).await;
    let r = s.ok_modern("server/discover", json!({}), json!({})).await;
    assert_modern_result(&r);
    let versions: Vec<&str> = r["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(versions[0], "2026-07-28");
    assert!(versions.contains(&"2025-11-25"), "{r}");
    assert_eq!(
        r["capabilities"]["extensions"],
        json!({TASKS_EXTENSION: {}})
    );
    assert!(r["capabilities"]["tools"].is_object(), "{r}");
    assert!(
        r["capabilities"].get("tasks").is_none(),
        "no legacy tasks capability"
    );
    assert_eq!(r["instructions"], "Use echo.");
    assert_eq!(r["cacheScope"], "public");
    assert!(r["ttlMs"].is_u64(), "{r}");
}

#[tokio::test]
async fn without_tasks_discover_declares_no_extension() {
    let mut s = serve(false).await;
    let r = s.ok_modern("server/discover", json!({}), json!({})).await;
    assert!(r["capabilities"].get("extensions").is_none(), "{r}");
    // And a required tool simply runs: no task engine, no task to insist on.
    let r = s
        .ok_modern("tools/call", json!({"name": "batch"}), json!({}))
        .await;
    assert_eq!(text_of(&r), "batch done");
}

#[tokio::test]
async fn modern_requests_need_no_initialize_and_leave_the_legacy_session_alone() {
    let mut s = serve(true).await;
    let r = s.ok_modern("tools/list", json!({}), json!({})).await;
    assert_modern_result(&r);
    // The legacy session is still uninitialized.
    assert_eq!(s.err("tools/list", json!({})).await["code"], -32602);
    let init = s.initialize().await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(init["capabilities"]["tasks"].is_object(), "{init}");
    let legacy = s.ok("tools/list", json!({})).await;
    assert!(legacy.get("resultType").is_none(), "{legacy}");
    assert!(
        legacy["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["execution"]["taskSupport"] == "required"),
        "{legacy}"
    );
    // Both eras on the same connection, concurrently.
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
            json!({}),
        )
        .await;
    assert_eq!(text_of(&r), "hi");
    assert_modern_result(&r);
}

#[tokio::test]
async fn modern_tools_list_carries_the_cacheable_fields_and_no_execution() {
    let mut s = serve(true).await;
    let r = s.ok_modern("tools/list", json!({}), with_tasks()).await;
    let tools = r["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 4);
    assert!(tools.iter().all(|t| t.get("execution").is_none()), "{r}");
    assert_eq!(r["cacheScope"], "public");
    assert!(r["ttlMs"].is_u64());
    let e = s
        .err_modern("tools/list", json!({"cursor": "x"}), json!({}))
        .await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn modern_tools_call_runs_directly_and_ignores_a_task_field() {
    let mut s = serve(true).await;
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "plain"}, "task": {"ttl": 1000}}),
            with_tasks(),
        )
        .await;
    assert_modern_result(&r);
    assert_eq!(text_of(&r), "plain");
    assert!(r.get("taskId").is_none() && r.get("task").is_none(), "{r}");
    // Bad arguments: the isError result, with resultType.
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "echo", "arguments": {}}),
            json!({}),
        )
        .await;
    assert_eq!(r["isError"], true, "{r}");
    assert_modern_result(&r);
    let e = s
        .err_modern("tools/call", json!({"name": "nope"}), json!({}))
        .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("nope"), "{e}");
}

#[tokio::test]
async fn a_required_tool_is_refused_with_32021_to_a_client_without_the_extension() {
    let mut s = serve(true).await;
    let r = s
        .call_modern("tools/call", json!({"name": "batch"}), json!({}))
        .await;
    MODERN
        .validate_def("MissingRequiredClientCapabilityError", &r)
        .unwrap();
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})
    );
    // Capabilities are per request: the same call with the extension becomes a task,
    // and without it is refused again.
    let ok = s
        .ok_modern("tools/call", json!({"name": "batch"}), with_tasks())
        .await;
    assert_eq!(ok["resultType"], "task", "{ok}");
    let e = s
        .err_modern("tools/call", json!({"name": "batch"}), json!({}))
        .await;
    assert_eq!(e["code"], -32021);
}

#[tokio::test]
async fn a_direct_call_that_asks_is_answered_by_mrtr_and_resumed_by_the_retry() {
    let mut s = serve(true).await;
    let caps = json!({"elicitation": {"form": {}}});
    let r = s
        .ok_modern("tools/call", json!({"name": "ask"}), caps.clone())
        .await;
    assert_eq!(r["resultType"], "input_required", "{r}");
    let requests = r["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{r}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Name?");
    let state = r["requestState"].as_str().unwrap().to_owned();
    // No server-to-client request was written.
    let extra = s.drain_for(std::time::Duration::from_millis(50)).await;
    assert!(extra.is_empty(), "{extra:?}");
    // A malformed answer is refused and the call waits on under the same state.
    let e = s
        .err_modern(
            "tools/call",
            json!({"name": "ask", "requestState": state, "inputResponses": {key.clone(): {"content": {}}}}),
            caps.clone(),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    let done = s
        .ok_modern(
            "tools/call",
            json!({"name": "ask", "requestState": state,
                   "inputResponses": {key.clone(): {"action": "accept", "content": {"name": "Ada"}}}}),
            caps.clone(),
        )
        .await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert!(text_of(&done).contains("Ada"), "{done}");
    // The state was used up: presenting it again starts the call afresh.
    let again = s
        .ok_modern(
            "tools/call",
            json!({"name": "ask", "requestState": state, "inputResponses": {}}),
            caps.clone(),
        )
        .await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_ne!(again["requestState"], json!(state));
    // State presented for another call (other arguments) is not honoured either.
    let other = s
        .ok_modern(
            "tools/call",
            json!({"name": "ask", "arguments": {"x": 1}, "requestState": again["requestState"].clone(),
                   "inputResponses": {}}),
            caps.clone(),
        )
        .await;
    assert_eq!(other["resultType"], "input_required", "{other}");
    assert_ne!(other["requestState"], again["requestState"]);
    // Without the elicitation capability the tool cannot ask: its own error path.
    let r = s
        .ok_modern("tools/call", json!({"name": "ask"}), json!({}))
        .await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(text_of(&r).contains("elicitation"), "{r}");
}

#[tokio::test]
async fn an_unsupported_version_is_32022_listing_the_supported_ones() {
    let mut s = serve(true).await;
    for version in ["1900-01-01", "2025-11-25"] {
        let r = s
            .call_modern(
                "tools/list",
                json!({"_meta": {PROTOCOL_VERSION_META: version}}),
                json!({}),
            )
            .await;
        MODERN
            .validate_def("UnsupportedProtocolVersionError", &r)
            .unwrap_or_else(|e| panic!("{version}: {e}"));
        let data = &r["error"]["data"];
        assert_eq!(data["requested"], version);
        let supported = data["supported"].as_array().unwrap();
        assert!(supported.contains(&json!("2026-07-28")), "{r}");
        assert!(supported.contains(&json!("2025-11-25")), "{r}");
    }
    // The server keeps serving.
    s.ok_modern("server/discover", json!({}), json!({})).await;
    s.initialize().await;
}

#[tokio::test]
async fn malformed_modern_meta_is_32602_naming_the_key() {
    let mut s = serve(true).await;
    let mut meta = modern_meta(json!({}));
    meta.as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let id = json!("no-caps");
    s.send_as(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta}}),
        &MODERN,
    )
    .await;
    let r = s.response_to(&id).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities"),
        "{r}"
    );
    let id = json!("bad-version");
    s.send_as(
        &json!({"jsonrpc": "2.0", "id": id, "method": "server/discover",
                "params": {"_meta": {PROTOCOL_VERSION_META: 20260728}}}),
        &MODERN,
    )
    .await;
    let r = s.response_to(&id).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    s.ok_modern("tools/list", json!({}), json!({})).await;
}

#[tokio::test]
async fn tasks_methods_follow_the_extension_rules() {
    let mut s = serve(true).await;
    for m in ["tasks/result", "tasks/list"] {
        let e = s.err_modern(m, json!({"taskId": "t"}), with_tasks()).await;
        assert_eq!(e["code"], -32601, "{m}: {e}");
    }
    for m in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let r = s
            .call_modern(m, json!({"taskId": "t", "inputResponses": {}}), json!({}))
            .await;
        MODERN
            .validate_def("MissingRequiredClientCapabilityError", &r)
            .unwrap_or_else(|e| panic!("{m}: {e}"));
        let e = s
            .err_modern(
                m,
                json!({"taskId": "t", "inputResponses": {}}),
                with_tasks(),
            )
            .await;
        assert_eq!(e["code"], -32602, "{m}: {e}");
    }
}

#[tokio::test]
async fn initialize_is_not_a_modern_method_and_legacy_discover_stays_32601() {
    let mut s = serve(true).await;
    let e = s
        .err_modern(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}}),
            json!({}),
        )
        .await;
    assert_eq!(e["code"], -32601);
    let e = s.err("server/discover", json!({})).await;
    assert_eq!(e["code"], -32601);
    assert!(
        e["message"].as_str().unwrap().contains("protocolVersion"),
        "{e}"
    );
    // Neither opened nor spoiled the legacy session.
    s.initialize().await;
}

#[tokio::test]
async fn the_handler_sees_the_params_without_the_per_request_protocol_fields() {
    let mut s = serve(true).await;
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "params", "arguments": {"a": 1}, "_meta": {"progressToken": "p", "com.example/k": 2}}),
            with_tasks(),
        )
        .await;
    let seen: Value = serde_json::from_str(text_of(&r)).unwrap();
    // A direct call may wait parked for the client's answers: its non-empty arguments are
    // the handler's `args`, not kept a second time in the params.
    assert_eq!(
        seen,
        json!({"name": "params", "_meta": {"progressToken": "p", "com.example/k": 2}})
    );
    let r = s
        .ok_modern("tools/call", json!({"name": "params"}), json!({}))
        .await;
    let seen: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(seen, json!({"name": "params"}));
}

/// A server composed with an extension (as a gateway is): no tools of its own, -32601 for
/// anything else.
struct Plain;

impl mcp_tasks_server::ToolSource for Plain {
    fn listing(&self, _with_execution: bool) -> Vec<Value> {
        Vec::new()
    }
    fn tool(&self, _name: &str) -> Option<Arc<Tool>> {
        None
    }
}

impl mcp_tasks_server::ExtensionFactory for Plain {
    fn make(&self, _requester: &mcp_tasks_core::Requester) -> mcp_tasks_server::SessionParts {
        mcp_tasks_server::SessionParts {
            tools: Arc::new(Plain),
            fallback: Arc::new(mcp_tasks_server::MethodNotFound),
        }
    }
}

#[tokio::test]
async fn a_server_with_an_extension_refuses_the_modern_era_with_32022() {
    let server = Server::builder()
        .no_tasks()
        .extension(Arc::new(Plain))
        .build()
        .await
        .expect("a server with an extension");
    let mut s = crate::support::wire_to(server);
    let r = s.call_modern("server/discover", json!({}), json!({})).await;
    MODERN
        .validate_def("UnsupportedProtocolVersionError", &r)
        .unwrap_or_else(|e| panic!("{r}: {e}"));
    let supported = r["error"]["data"]["supported"].as_array().unwrap();
    assert!(!supported.contains(&json!("2026-07-28")), "{r}");
    assert!(supported.contains(&json!("2025-11-25")), "{r}");
    // The legacy era is unchanged.
    s.initialize().await;
}
