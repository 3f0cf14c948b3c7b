//! The gateway in front of an upstream without tasks: its tools listed as task-optional,
//! plain calls passed through, and a task-augmented call run as a task of the gateway
//! whose outcome is the upstream call's exact outcome.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::support::{gateway, wait_count};

const RELATED: &str = "io.modelcontextprotocol/related-task";

#[tokio::test]
async fn the_upstream_tools_are_listed_task_optional_and_plain_calls_pass_through() {
    let (mut s, upstream) = gateway().await;
    let init = s.initialize().await;
    assert!(init["capabilities"]["tasks"].is_object(), "{init}");
    let tools = s.ok("tools/list", json!({})).await["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "slow", "fail"], "{tools}");
    for t in tools.as_array().unwrap() {
        assert_eq!(t["execution"]["taskSupport"], "optional", "{t}");
    }
    let r = s
        .ok(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(r, json!({"content": [{"type": "text", "text": "hi"}]}));
    // The upstream's JSON-RPC error comes back as it is.
    let e = s
        .err("tools/call", json!({"name": "fail", "arguments": {}}))
        .await;
    assert_eq!(e["code"], -32050, "{e}");
    assert_eq!(e["message"], "the upstream refuses", "{e}");
    // One session, one upstream connection.
    assert_eq!(upstream.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_task_gets_the_exact_outcome_of_the_upstream_call() {
    let (mut s, _upstream) = gateway().await;
    s.initialize().await;
    let task = s
        .ok(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "as a task"}, "task": {}}),
        )
        .await["task"]
        .clone();
    assert_eq!(task["status"], "working", "{task}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = s.ok("tasks/result", json!({"taskId": id})).await;
    assert_eq!(
        r,
        json!({"content": [{"type": "text", "text": "as a task"}],
               "_meta": {RELATED: {"taskId": id}}})
    );
    // A failed upstream call fails the task with the exact error.
    let task = s
        .ok(
            "tools/call",
            json!({"name": "fail", "arguments": {}, "task": {}}),
        )
        .await["task"]
        .clone();
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = s.call("tasks/result", json!({"taskId": id})).await;
    assert_eq!(r["error"]["code"], -32050, "{r}");
    let t = s
        .poll_until(&id, "failed", |t| t["status"] == "failed")
        .await;
    assert_eq!(t["taskId"], id.as_str());
}

#[tokio::test]
async fn cancelling_a_task_cancels_the_upstream_call() {
    let (mut s, upstream) = gateway().await;
    s.initialize().await;
    let task = s
        .ok(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60000}, "task": {}}),
        )
        .await["task"]
        .clone();
    let id = task["taskId"].as_str().unwrap().to_owned();
    wait_count(&upstream.slow.started, "the upstream call").await;
    let c = s.ok("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(c["status"], "cancelled", "{c}");
    let t = s
        .poll_until(&id, "cancelled", |t| t["status"] == "cancelled")
        .await;
    assert_eq!(t["status"], "cancelled");
    // The upstream heard of it (notifications/cancelled) and stopped the call.
    wait_count(&upstream.slow.cancelled, "the upstream call cancelled").await;
    // The session goes on.
    assert_eq!(s.ok("ping", json!({})).await, json!({}));
}
