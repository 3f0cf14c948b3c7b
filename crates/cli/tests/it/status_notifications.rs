//! notifications/tasks/status.

use crate::common;
use std::time::Duration;

use common::Stdio;
use serde_json::json;

/// Spec: "The notification includes the full `Task` object" and "`notifications/tasks/status`
/// notifications SHOULD NOT include related-task metadata".
#[test]
fn every_transition_is_notified_with_the_full_task() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let t = s.create_task("sleep", json!({"ms": 20}));
    let id = t["taskId"].clone();
    let n = s.wait_for("status notification", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id
    });
    let p = &n["params"];
    assert_eq!(p["status"], "completed");
    assert_eq!(p["createdAt"], t["createdAt"]);
    assert_eq!(p["ttl"], t["ttl"]);
    assert_eq!(p["pollInterval"], t["pollInterval"]);
    assert!(p.get("lastUpdatedAt").is_some());
    assert!(p.get("_meta").is_none(), "{n}");

    let id = s.create_task("sleep", json!({"ms": 60000}))["taskId"].clone();
    s.ok("tasks/cancel", json!({"taskId": id}));
    let n = s.wait_for("cancelled notification", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id
    });
    assert_eq!(n["params"]["status"], "cancelled");
    assert_eq!(
        n["params"]["statusMessage"],
        "The task was cancelled by request."
    );
}

#[test]
fn a_failed_task_notifies_failed_with_the_reason() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.create_task("error", json!({"message": "quota", "code": -32010}))["taskId"].clone();
    let n = s.wait_for("failed notification", |m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id
    });
    assert_eq!(n["params"]["status"], "failed");
    assert!(
        n["params"]["statusMessage"]
            .as_str()
            .unwrap()
            .contains("quota")
    );
    // Exactly one notification per transition.
    let more = s.drain_for(Duration::from_millis(100));
    assert!(more.iter().all(|m| m["params"]["taskId"] != id), "{more:?}");
}
