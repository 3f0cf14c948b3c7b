//! tasks/get.

use crate::common;
use common::Stdio;
use serde_json::json;

#[test]
fn get_returns_the_task_and_created_at_never_changes() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let t = s.create_task("sleep", json!({"ms": 100}));
    let id = t["taskId"].as_str().unwrap();
    let g = s.get_task(id);
    assert_eq!(g["taskId"], t["taskId"]);
    assert_eq!(g["createdAt"], t["createdAt"]);
    let done = s.poll_until(id, "completed", |t| t["status"] == "completed");
    assert_eq!(
        done["createdAt"], t["createdAt"],
        "createdAt is stored, not regenerated"
    );
    assert_eq!(done["ttl"], t["ttl"]);
    assert!(done["lastUpdatedAt"].as_str().unwrap() >= t["lastUpdatedAt"].as_str().unwrap());
    assert!(
        done.get("_meta").is_none(),
        "no related-task _meta on tasks/get results"
    );
}

/// Spec: "Invalid or nonexistent taskId in tasks/get, tasks/result, or tasks/cancel:
/// -32602 (Invalid params)".
#[test]
fn unknown_and_malformed_ids_are_32602() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    for m in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = s.err(m, json!({"taskId": "00000000-0000-4000-8000-000000000000"}));
        assert_eq!(e["code"], -32602, "{m}");
        assert!(
            e["message"].as_str().unwrap().contains("Task not found"),
            "{e}"
        );
        assert_eq!(s.err(m, json!({"taskId": 42}))["code"], -32602);
        assert_eq!(s.err(m, json!({}))["code"], -32602);
        assert_eq!(s.err(m, json!({"taskId": ""}))["code"], -32602);
    }
}

/// Spec: "the `taskId` parameter in the request MUST be used as the source of truth ...
/// receivers MUST ignore [related-task] metadata if present".
#[test]
fn related_task_meta_on_the_request_is_ignored() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let a = s.create_task("sleep", json!({"ms": 60000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = s.create_task("sleep", json!({"ms": 60000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let meta = json!({"io.modelcontextprotocol/related-task": {"taskId": b}});
    let g = s.ok("tasks/get", json!({"taskId": a, "_meta": meta}));
    assert_eq!(g["taskId"], a.as_str());
    let c = s.ok("tasks/cancel", json!({"taskId": a, "_meta": meta}));
    assert_eq!(c["taskId"], a.as_str());
    assert!(c.get("_meta").is_none());
    assert_eq!(
        s.get_task(&b)["status"],
        "working",
        "the task named in _meta is untouched"
    );
    let e = s.err(
        "tasks/get",
        json!({"taskId": "nope", "_meta": {"io.modelcontextprotocol/related-task": {"taskId": b}}}),
    );
    assert_eq!(e["code"], -32602);
}
