//! Gateway: a tool the upstream runs as a task is called upstream with a task and
//! followed to its end; its outcome becomes ours; cancel reaches the upstream task.

use crate::gateway_common;

use gateway_common::{Fake, RELATED, failed_task_message, task_result, until_terminal};
use serde_json::json;

#[test]
fn an_upstream_task_tool_keeps_its_task_support_and_runs_as_an_upstream_task() {
    let fake = Fake::new("up-task", true);
    let mut s = fake.gateway(&[]);
    let tools = s.ok("tools/list", json!({}))["tools"].clone();
    let support = |name: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["execution"]["taskSupport"].clone())
            .unwrap()
    };
    // The upstream declares tasks.requests.tools.call: each tool keeps its own support.
    assert_eq!(support("job"), "required");
    assert_eq!(support("echo"), "forbidden");

    let r = s.ok(
        "tools/call",
        json!({"name": "job", "arguments": {"ms": 200}, "task": {"ttl": 60000}, "_meta": {"progressToken": "p"}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let up = fake.wait_received("the task call", |m| m["params"]["name"] == "job");
    assert_eq!(up["params"]["task"], json!({"ttl": 60000}));
    assert_eq!(up["params"]["_meta"], json!({"progressToken": "p"}));
    let result = task_result(&mut s, &id)["result"].clone();
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "job done after 200"}], "structuredContent": {"ms": 200}, "_meta": {RELATED: {"taskId": id}}})
    );
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
    // The gateway's task id is its own, not the upstream's.
    let upstream_id = fake
        .received()
        .into_iter()
        .find(|m| m["method"] == "tasks/result")
        .unwrap()["params"]["taskId"]
        .clone();
    assert_ne!(upstream_id, json!(id));
    // A plain call of a task-required tool is -32601, as the receiver says.
    assert_eq!(
        s.err("tools/call", json!({"name": "job", "arguments": {"ms": 1}}))["code"],
        -32601
    );
}

#[test]
fn cancelling_our_task_cancels_the_upstream_task() {
    let fake = Fake::new("up-task-cancel", true);
    let mut s = fake.gateway(&[]);
    let task = s.create_task("job", json!({"ms": 60000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let result = fake.wait_received("tasks/result", |m| m["method"] == "tasks/result");
    let upstream_id = result["params"]["taskId"].clone();
    assert_eq!(
        s.ok("tasks/cancel", json!({"taskId": id}))["status"],
        "cancelled"
    );
    let c = fake.wait_received("tasks/cancel", |m| m["method"] == "tasks/cancel");
    assert_eq!(c["params"], json!({"taskId": upstream_id}));
    assert_eq!(s.get_task(&id)["status"], "cancelled");
}

#[test]
fn an_override_makes_a_plain_tool_of_a_task_upstream_a_task_tool() {
    let fake = Fake::new("up-task-override", true);
    let mut s = fake.gateway(&["--tool-task-support", "echo=optional"]);
    let task = s.create_task("echo", json!({"text": "x"}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = task_result(&mut s, &id)["result"].clone();
    assert_eq!(r["content"][0]["text"], "x");
    // Bridged: the upstream got a plain call.
    let up = fake.wait_received("echo", |m| m["params"]["name"] == "echo");
    assert!(up["params"].get("task").is_none(), "{up}");
}

/// Issue 15, item 17: FastMCP 3.4.11 answers `tasks/result` of a running task at once with
/// -32602 "Task not completed yet" (here the task completes right after that answer).
/// The gateway polls `tasks/get` until the task is terminal, then fetches the result
/// again: our task is `completed` with the upstream's exact result, not `failed` with the
/// stale error.
#[test]
fn an_early_tasks_result_error_is_followed_until_the_upstream_task_ends() {
    let fake = Fake::new("up-task-early", true);
    let mut s = fake.gateway(&["--upstream-env", "FAKE_EARLY=1"]);
    let task = s.create_task("job", json!({"ms": 60000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let result = task_result(&mut s, &id);
    assert_eq!(
        result["result"],
        json!({"content": [{"type": "text", "text": "job done after 60000"}], "structuredContent": {"ms": 60000}, "_meta": {RELATED: {"taskId": id}}}),
        "{result}"
    );
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
    // It was answered early, then polled with tasks/get, then asked again.
    let methods: Vec<String> = fake
        .received()
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .filter(|m| m.starts_with("tasks/"))
        .collect();
    assert_eq!(methods.first().map(String::as_str), Some("tasks/result"));
    assert!(methods.contains(&"tasks/get".to_owned()), "{methods:?}");
    assert_eq!(
        methods.iter().filter(|m| *m == "tasks/result").count(),
        2,
        "{methods:?}"
    );
}

/// Issue 15, item 18: Python `mcp` 1.30 answers `tasks/result` of a failed task with
/// `{_meta}` only, and its `tasks/get` says `failed`. Our task ends `failed` (the
/// upstream's status), and its `tasks/result` is a JSON-RPC error saying what the upstream
/// sent.
#[test]
fn a_failed_upstream_task_without_a_call_tool_result_fails_with_what_it_sent() {
    let fake = Fake::new("up-task-py", true);
    let mut s = fake.gateway(&["--upstream-env", "FAKE_PY=1"]);
    let msg = failed_task_message(&mut s, "failjob", json!({"ms": 50}));
    assert!(msg.contains("ended `failed`"), "{msg}");
    assert!(
        msg.contains("not a valid CallToolResult (missing field `content`)"),
        "{msg}"
    );
    assert!(
        msg.contains(
            r#"the upstream sent {"_meta":{"io.modelcontextprotocol/related-task":{"taskId":""#
        ),
        "{msg}"
    );

    // A failed upstream task whose result is a CallToolResult without isError: failed too,
    // with the upstream's content.
    let task = s.create_task("failjob", json!({"ms": 50, "valid": true}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = task_result(&mut s, &id)["result"].clone();
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": "failed quietly"}]),
        "{r}"
    );
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(until_terminal(&mut s, &id)["status"], "failed");
}
