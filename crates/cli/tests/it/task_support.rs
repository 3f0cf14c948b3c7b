//! Capabilities and tool-level negotiation of task support.

use crate::common;
use common::{Stdio, text_of};
use serde_json::json;

/// Spec: "If `execution.taskSupport` is `"required"`, clients MUST invoke the tool as a
/// task. Servers MUST return a `-32601` (Method not found) error if a client does not
/// attempt to do so."
#[test]
fn a_plain_call_of_a_required_tool_is_32601() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let e = s.err(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "q"}}),
    );
    assert_eq!(e["code"], -32601, "{e}");
    assert!(e["message"].as_str().unwrap().contains("task"), "{e}");
}

/// Spec: "If `execution.taskSupport` is not present or `"forbidden"`, clients MUST NOT
/// attempt to invoke the tool as a task. Servers SHOULD return a `-32601` (Method not
/// found) error if a client attempts to do so."
#[test]
fn a_task_call_of_a_tool_without_task_support_is_32601_and_creates_no_task() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let e = s.err(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}, "task": {}}),
    );
    assert_eq!(e["code"], -32601, "{e}");
    assert_eq!(s.ok("tasks/list", json!({}))["tasks"], json!([]));
}

/// Spec: "The set of capabilities in `capabilities.tasks.requests` is exhaustive. If a
/// request type is not present, it does not support task-augmentation." and "Receivers
/// that do not declare the task capability for a request type MUST process requests of
/// that type normally, ignoring any task-augmentation metadata if present."
#[test]
fn a_task_field_on_other_request_types_is_ignored() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let tools = s.ok("tools/list", json!({"task": {"ttl": 1000}}));
    assert_eq!(tools["tools"].as_array().unwrap().len(), 7);
    assert_eq!(s.ok("ping", json!({"task": {}})), json!({}));
    assert_eq!(s.ok("tasks/list", json!({}))["tasks"], json!([]));
}

#[test]
fn optional_tools_run_either_way() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    assert_eq!(
        text_of(&s.ok(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}})
        )),
        "slept 1"
    );
    let t = s.create_task("sleep", json!({"ms": 1}));
    assert_eq!(t["status"], "working");
}

#[test]
fn no_tasks_turns_tasks_off_entirely() {
    let mut s = Stdio::spawn(&["--no-tasks"]);
    let init = s.initialize();
    assert!(init["capabilities"].get("tasks").is_none());
    let tools = s.ok("tools/list", json!({}));
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("execution").is_none()),
        "{tools}"
    );
    // `task` ignored: the call runs plainly and returns the tool's result.
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 5}}),
    );
    assert_eq!(text_of(&r), "slept 1");
    let r = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "e"}, "task": {}}),
    );
    assert_eq!(text_of(&r), "e");
    for m in ["tasks/get", "tasks/result", "tasks/cancel"] {
        assert_eq!(s.err(m, json!({"taskId": "x"}))["code"], -32601, "{m}");
    }
    assert_eq!(s.err("tasks/list", json!({}))["code"], -32601);
}

#[test]
fn tool_task_support_overrides_a_demo_tool() {
    let mut s = Stdio::spawn(&[
        "--tool-task-support",
        "sleep=required",
        "--tool-task-support",
        "echo=optional",
    ]);
    s.initialize();
    let tools = s.ok("tools/list", json!({}));
    let mode = |n: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()["execution"]["taskSupport"]
            .clone()
    };
    assert_eq!(mode("sleep"), "required");
    assert_eq!(mode("echo"), "optional");
    assert_eq!(
        s.err(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}})
        )["code"],
        -32601
    );
    assert_eq!(
        s.create_task("echo", json!({"text": "t"}))["status"],
        "working"
    );
}

#[test]
fn an_override_of_an_unknown_tool_refuses_to_start() {
    let out = std::process::Command::new(common::bin())
        .args([
            "serve",
            "--stdio",
            "--store",
            "memory",
            "--tool-task-support",
            "nope=required",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}
