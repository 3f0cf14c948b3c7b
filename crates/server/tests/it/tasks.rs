//! A task-augmented call in process: created `working`, its result by `tasks/result`
//! (with the related-task `_meta`), listed, and cancelled.

use serde_json::json;

use crate::support::{server, text_of};

const RELATED: &str = "io.modelcontextprotocol/related-task";

#[tokio::test]
async fn a_task_is_created_working_and_its_result_comes_by_tasks_result() {
    let mut s = server().await;
    s.initialize().await;
    let r = s
        .ok(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 100}, "task": {"ttl": 60000}}),
        )
        .await;
    let task = &r["task"];
    assert_eq!(task["status"], "working", "{r}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    // tasks/result blocks until the task ends, then returns what the tool returned.
    let result = s.ok("tasks/result", json!({"taskId": id})).await;
    assert_eq!(text_of(&result), "slept 100", "{result}");
    assert_eq!(result["_meta"][RELATED]["taskId"], id.as_str(), "{result}");
    let t = s.ok("tasks/get", json!({"taskId": id})).await;
    assert_eq!(t["status"], "completed", "{t}");
    let listed = s.ok("tasks/list", json!({})).await;
    assert!(
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == id.as_str() && t["status"] == "completed"),
        "{listed}"
    );
}

#[tokio::test]
async fn a_cancelled_task_stays_cancelled() {
    let mut s = server().await;
    s.initialize().await;
    let r = s
        .ok(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 60000}, "task": {}}),
        )
        .await;
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let c = s.ok("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(c["status"], "cancelled", "{c}");
    let t = s
        .poll_until(&id, "cancelled", |t| t["status"] == "cancelled")
        .await;
    assert_eq!(t["taskId"], id.as_str());
    // A terminal task cannot be cancelled again.
    assert_eq!(
        s.err("tasks/cancel", json!({"taskId": id})).await["code"],
        -32602
    );
}

#[tokio::test]
async fn an_unknown_task_is_invalid_params() {
    let mut s = server().await;
    s.initialize().await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = s.err(method, json!({"taskId": "no-such-task"})).await;
        assert_eq!(e["code"], -32602, "{method}: {e}");
    }
}
