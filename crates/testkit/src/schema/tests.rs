//! The validator against both vendored schemas.

use super::*;

fn task() -> Value {
    json!({
        "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
        "status": "working",
        "statusMessage": "The operation is now in progress.",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:40:00Z",
        "ttl": 60000,
        "pollInterval": 5000
    })
}

fn err(r: Result<(), String>) -> String {
    r.expect_err("the value should have been rejected")
}

#[test]
fn every_named_def_exists() {
    for (method, def) in RESULT_DEFS {
        assert!(has_def(def), "{method} -> {def}");
    }
    assert!(has_def("CreateTaskResult"));
    for def in [
        "JSONRPCMessage",
        "JSONRPCRequest",
        "JSONRPCNotification",
        "JSONRPCResultResponse",
        "JSONRPCErrorResponse",
    ] {
        assert!(has_def(def), "{def}");
    }
}

#[test]
fn every_def_compiles() {
    for rev in [&LEGACY, &MODERN] {
        for name in rev.schema().defs.keys() {
            rev.schema().validator(rev.version, name).unwrap();
        }
    }
}

#[test]
fn method_map_is_read_from_the_schema() {
    let expected = [
        ("tools/call", "CallToolRequest"),
        ("tools/list", "ListToolsRequest"),
        ("tasks/get", "GetTaskRequest"),
        ("tasks/result", "GetTaskPayloadRequest"),
        ("tasks/list", "ListTasksRequest"),
        ("tasks/cancel", "CancelTaskRequest"),
        ("initialize", "InitializeRequest"),
        ("ping", "PingRequest"),
        ("elicitation/create", "ElicitRequest"),
        ("sampling/createMessage", "CreateMessageRequest"),
        ("notifications/tasks/status", "TaskStatusNotification"),
        ("notifications/progress", "ProgressNotification"),
        ("notifications/cancelled", "CancelledNotification"),
        ("notifications/initialized", "InitializedNotification"),
    ];
    for (method, def) in expected {
        assert_eq!(method_def(method), Some(def), "{method}");
    }
    assert_eq!(method_def("server/discover"), None);
    // Every request method of the schema has a result definition.
    for (method, def) in &LEGACY.schema().methods {
        let is_request = LEGACY.schema().defs[def]
            .pointer("/required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|k| k == "id"));
        if is_request {
            assert!(
                result_def(method, &json!({})).is_some(),
                "no result def for {method}"
            );
        }
    }
}

#[test]
fn accepts_the_spec_examples() {
    validate_def("Task", &task()).unwrap();
    validate_message(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"city": "New York"}, "task": {"ttl": 60000}}
    }))
    .unwrap();
    validate_response(
        "tools/call",
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"task": task()}}),
    )
    .unwrap();
    validate_response(
        "tasks/get",
        &json!({"jsonrpc": "2.0", "id": 3, "result": task()}),
    )
    .unwrap();
    validate_result(
        "tasks/result",
        &json!({
            "content": [{"type": "text", "text": "Current weather in New York"}],
            "isError": false,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840"}}
        }),
    )
    .unwrap();
    let mut done = task();
    done["status"] = json!("completed");
    validate_message(
        &json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": done}),
    )
    .unwrap();
    validate_result(
        "tasks/list",
        &json!({"tasks": [task()], "nextCursor": "next-page-cursor"}),
    )
    .unwrap();
    validate_message(&json!({
        "jsonrpc": "2.0", "id": 70,
        "error": {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    }))
    .unwrap();
    validate_result("ping", &json!({})).unwrap();
    // ttl null means unlimited.
    let mut unlimited = task();
    unlimited["ttl"] = Value::Null;
    validate_def("Task", &unlimited).unwrap();
}

#[test]
fn rejects_a_task_without_ttl() {
    let mut t = task();
    t.as_object_mut().unwrap().remove("ttl");
    let e = err(validate_def("Task", &t));
    assert!(
        e.contains("`Task`") && e.contains("\"ttl\" is a required property"),
        "{e}"
    );
    let e = err(validate_result("tasks/get", &t));
    assert!(e.contains("GetTaskResult") && e.contains("ttl"), "{e}");
}

#[test]
fn rejects_a_create_task_result_with_an_unknown_status() {
    let mut t = task();
    t["status"] = json!("done");
    let e = err(validate_result("tools/call", &json!({"task": t})));
    assert!(e.contains("CreateTaskResult"), "{e}");
    assert!(e.contains("at /task/status"), "{e}");
    assert!(e.contains("\"done\""), "{e}");
}

#[test]
fn rejects_a_status_notification_missing_created_at() {
    let mut t = task();
    t.as_object_mut().unwrap().remove("createdAt");
    let e = err(validate_message(
        &json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": t}),
    ));
    assert!(e.contains("TaskStatusNotification"), "{e}");
    assert!(e.contains("at /params"), "{e}");
    assert!(e.contains("createdAt"), "{e}");
}

#[test]
fn rejects_bad_envelopes() {
    let e = err(validate_message(
        &json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
    ));
    assert!(
        e.contains("JSONRPCRequest") && e.contains("at /jsonrpc"),
        "{e}"
    );
    let e = err(validate_message(
        &json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}),
    ));
    assert!(e.contains("exactly one"), "{e}");
    let e = err(validate_message(&json!({"jsonrpc": "2.0", "id": 1})));
    assert!(e.contains("JSONRPCMessage"), "{e}");
    let e = err(validate_message(
        &json!([{"jsonrpc": "2.0", "method": "ping"}]),
    ));
    assert!(e.contains("JSON object"), "{e}");
    let e = err(validate_message(
        &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
    ));
    assert!(e.contains("at /error/code"), "{e}");
    // The schema's RequestId is string | integer: an explicit `"id": null` is refused.
    let e = err(validate_message(
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}),
    ));
    assert!(e.contains("at /id"), "{e}");
}

#[test]
fn rejects_a_request_with_bad_params_for_its_method() {
    let e = err(validate_message(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {}}),
    ));
    assert!(e.contains("GetTaskRequest") && e.contains("taskId"), "{e}");
    let e = err(validate_message(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "x", "task": {"ttl": "soon"}}
    })));
    assert!(e.contains("at /params/task/ttl"), "{e}");
    // Notifications are checked against their own definition too.
    let e = err(validate_message(&json!({
        "jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}
    })));
    assert!(
        e.contains("ProgressNotification") && e.contains("progressToken"),
        "{e}"
    );
}

#[test]
fn explains_each_branch_of_a_failed_any_of() {
    let e = err(validate_message(&json!({
        "jsonrpc": "2.0", "id": 9, "method": "elicitation/create",
        "params": {"message": "Name?", "requestedSchema": {"type": "object"}}
    })));
    assert!(e.contains("ElicitRequest") && e.contains("anyOf"), "{e}");
    assert!(e.contains("branch 0") && e.contains("branch 1"), "{e}");
    assert!(e.contains("\"properties\" is a required property"), "{e}");
}

#[test]
fn results_need_a_known_method() {
    let e = err(validate_result("no/such", &json!({})));
    assert!(e.contains("no/such"), "{e}");
    let e = err(validate_def("NoSuchDef", &json!({})));
    assert!(e.contains("NoSuchDef"), "{e}");
    let e = err(validate_result("tools/call", &json!({"content": "text"})));
    assert!(
        e.contains("CallToolResult") && e.contains("at /content"),
        "{e}"
    );
    let e = err(validate_response(
        "tasks/cancel",
        &json!({"jsonrpc": "2.0", "id": 6, "result": {"taskId": "t"}}),
    ));
    assert!(e.contains("CancelTaskResult"), "{e}");
}
