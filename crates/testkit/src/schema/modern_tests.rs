//! The 2026-07-28 schema, and the modern proto types checked against it.

use mcp_tasks_proto::modern::tasks::{
    AckResult, CreateTaskResult, DetailedTask, GetTaskResult, Task, TaskNotificationParams,
    TaskStatus, UpdateTaskParams,
};
use mcp_tasks_proto::modern::{
    self, CacheScope, ClientCapabilities, DiscoverResult, Implementation, InputRequiredResult,
    ListToolsResult, ResultType, ServerCapabilities, TASKS_EXTENSION,
};
use mcp_tasks_proto::{ErrorObject, Message, RequestId, Response};

use super::*;

fn err(r: Result<(), String>) -> String {
    r.expect_err("the value should have been rejected")
}

fn server() -> Implementation {
    Implementation::new("mcp-tasks", "0.1.0")
}

/// A modern request of `method` with the per-request `_meta`.
fn request(method: &str, mut params: Value) -> Value {
    let caps: ClientCapabilities =
        serde_json::from_value(json!({"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}))
            .unwrap();
    params["_meta"] = modern::request_meta_value(&Implementation::new("c", "1"), &caps);
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// The response message carrying `result`, as our envelope type writes it.
fn response(result: Value) -> Value {
    Message::Response(Response {
        id: RequestId::Number(1),
        result,
    })
    .to_value()
}

/// The error response carrying `e`.
fn error_response(e: ErrorObject) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "error": e})
}

fn task(status: TaskStatus) -> Task {
    Task {
        task_id: "786512e2-9e0d-44bd-8f29-789f320fe840".into(),
        status,
        status_message: None,
        created_at: "2026-07-28T10:30:00Z".into(),
        last_updated_at: "2026-07-28T10:30:00Z".into(),
        ttl_ms: Some(60_000),
        poll_interval_ms: Some(50),
    }
}

#[test]
fn the_modern_schema_names_its_methods_and_results() {
    for (method, def) in RESULT_DEFS_2026_07_28 {
        assert!(MODERN.has_def(def), "{method} -> {def}");
    }
    assert_eq!(
        MODERN.method_def("server/discover"),
        Some("DiscoverRequest")
    );
    assert_eq!(MODERN.method_def("tools/call"), Some("CallToolRequest"));
    assert_eq!(MODERN.method_def("initialize"), None, "no handshake");
    assert_eq!(MODERN.method_def("tasks/result"), None);
    assert_eq!(
        MODERN.result_def("tools/call", &json!({"resultType": "input_required"})),
        Some("InputRequiredResult")
    );
    assert_eq!(
        MODERN.result_def("tools/list", &json!({"resultType": "input_required"})),
        Some("ListToolsResult"),
        "input_required only on the MRTR requests"
    );
    assert_eq!(
        MODERN.result_def("tools/call", &json!({"resultType": "task"})),
        Some("Result")
    );
    // The legacy free functions still read the 2025-11-25 schema.
    assert_eq!(method_def("initialize"), Some("InitializeRequest"));
    assert!(!has_def("DiscoverResult"));
}

#[test]
fn modern_requests_built_from_the_proto_meta_are_valid() {
    MODERN
        .validate_message(&request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}}),
        ))
        .unwrap();
    MODERN
        .validate_message(&request("server/discover", json!({})))
        .unwrap();
    MODERN
        .validate_message(&request("tools/list", json!({})))
        .unwrap();
    let update = UpdateTaskParams {
        task_id: "t".into(),
        input_responses: serde_json::from_value(
            json!({"name": {"action": "accept", "content": {"name": "Luca"}}}),
        )
        .unwrap(),
        meta: None,
    };
    MODERN
        .validate_message(&request(
            "tasks/update",
            serde_json::to_value(&update).unwrap(),
        ))
        .unwrap();
}

#[test]
fn modern_results_from_the_proto_types_are_valid() {
    let mut caps = ServerCapabilities {
        tools: Some(json!({"listChanged": false})),
        ..ServerCapabilities::default()
    };
    caps.extensions = Some(serde_json::from_value(json!({TASKS_EXTENSION: {}})).unwrap());
    let mut discover = DiscoverResult {
        result_type: ResultType::Complete,
        supported_versions: vec!["2026-07-28".into(), "2025-11-25".into()],
        capabilities: caps,
        instructions: None,
        ttl_ms: Some(0),
        cache_scope: Some(CacheScope::Public),
        meta: None,
        extra: Map::new(),
    };
    let mut v = serde_json::to_value(&discover).unwrap();
    modern::stamp_result(&mut v, &ResultType::Complete, &server());
    MODERN
        .validate_response("server/discover", &response(json!(v)))
        .unwrap();
    discover = serde_json::from_value(v).unwrap();
    assert_eq!(discover.server_info(), Some(server()));

    let tools = ListToolsResult {
        result_type: ResultType::Complete,
        tools: vec![json!({"name": "sleep", "inputSchema": {"type": "object"}})],
        ttl_ms: 0,
        cache_scope: CacheScope::Public,
        next_cursor: None,
        meta: None,
    };
    MODERN
        .validate_response("tools/list", &response(json!(tools)))
        .unwrap();

    let ask = InputRequiredResult::new(
        serde_json::from_value(json!({"0": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}))
        .unwrap(),
        Some("state".into()),
    );
    ask.check().unwrap();
    MODERN
        .validate_response("tools/call", &response(json!(ask)))
        .unwrap();

    // The extension's results are `Result`s of the core schema.
    MODERN
        .validate_response(
            "tools/call",
            &response(json!(CreateTaskResult::new(task(TaskStatus::Working)))),
        )
        .unwrap();
    let mut done = DetailedTask::bare(task(TaskStatus::Completed));
    done.result = Some(json!({"content": [{"type": "text", "text": "x"}], "isError": true}));
    done.check().unwrap();
    MODERN
        .validate_response(
            "tasks/get",
            &response(json!(GetTaskResult::new(done.clone()))),
        )
        .unwrap();
    MODERN
        .validate_response("tasks/update", &response(json!(AckResult::default())))
        .unwrap();
    MODERN
        .validate_response("tasks/cancel", &response(json!(AckResult::default())))
        .unwrap();
    let note = TaskNotificationParams {
        task: done,
        meta: None,
    };
    MODERN
        .validate_message(
            &json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": note}),
        )
        .unwrap();
}

#[test]
fn the_modern_errors_match_their_schema_definitions() {
    let unsupported = modern::unsupported_version("1900-01-01", &["2026-07-28", "2025-11-25"]);
    let missing = modern::missing_tasks_extension("tool `x` always runs as a task");
    let mismatch = modern::header_mismatch("Mcp-Method `tools/list` != body `tools/call`");
    for (e, def) in [
        (unsupported, "UnsupportedProtocolVersionError"),
        (missing, "MissingRequiredClientCapabilityError"),
        (mismatch, "HeaderMismatchError"),
    ] {
        let msg = error_response(e);
        MODERN.validate_message(&msg).unwrap();
        MODERN
            .validate_def(def, &msg)
            .unwrap_or_else(|e| panic!("{def}: {e}"));
    }
}

#[test]
fn invalid_modern_messages_are_rejected() {
    // A request without the per-request `_meta`.
    let e = err(MODERN.validate_message(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}),
    ));
    assert!(e.contains("CallToolRequest") && e.contains("_meta"), "{e}");
    // `_meta` without the required clientCapabilities.
    let mut r = request("tools/list", json!({}));
    r["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(modern::CLIENT_CAPABILITIES_META);
    let e = err(MODERN.validate_message(&r));
    assert!(e.contains("clientCapabilities"), "{e}");
    // A result without resultType (a 2025-11-25 result sent to a modern request).
    let e = err(MODERN.validate_result("tools/call", &json!({"content": []})));
    assert!(e.contains("resultType"), "{e}");
    let e = err(MODERN.validate_result("tasks/get", &json!({"taskId": "t"})));
    assert!(e.contains("`Result`") && e.contains("resultType"), "{e}");
    // tools/list without the cacheable fields.
    let e = err(MODERN.validate_result(
        "tools/list",
        &json!({"resultType": "complete", "tools": []}),
    ));
    assert!(e.contains("ttlMs") || e.contains("cacheScope"), "{e}");
    // An input request that is not one of the three allowed.
    let e = err(MODERN.validate_result(
        "tools/call",
        &json!({"resultType": "input_required", "inputRequests": {"k": {"method": "tools/call", "params": {}}}}),
    ));
    assert!(
        e.contains("InputRequiredResult") && e.contains("/inputRequests/k"),
        "{e}"
    );
    // -32022 without `requested`.
    let e = err(MODERN.validate_def(
        "UnsupportedProtocolVersionError",
        &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "m", "data": {"supported": []}}}),
    ));
    assert!(e.contains("requested"), "{e}");
    // The 2025-11-25 schema knows nothing of server/discover results.
    let e = err(validate_result("server/discover", &json!({})));
    assert!(e.contains("2025-11-25"), "{e}");
}
