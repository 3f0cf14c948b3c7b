//! tasks/cancel.

use crate::common;
use std::time::Duration;

use common::Stdio;
use serde_json::{Value, json};

/// Spec: "MUST transition the task to `cancelled` status before sending the response" and
/// "Once a task is cancelled, it MUST remain in `cancelled` status".
#[test]
fn cancel_is_cancelled_before_the_reply_and_stays_cancelled() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let t = s.create_task("sleep", json!({"ms": 300}));
    let id = t["taskId"].as_str().unwrap();
    let c = s.ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(c["status"], "cancelled");
    assert_eq!(c["statusMessage"], "The task was cancelled by request.");
    assert_eq!(c["createdAt"], t["createdAt"]);
    assert_eq!(s.get_task(id)["status"], "cancelled");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        s.get_task(id)["status"],
        "cancelled",
        "the tool's late end does not flip it"
    );
}

/// A cancelled task's outcome is a documented JSON-RPC error, the same every time.
#[test]
fn result_of_a_cancelled_task_is_the_documented_error() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.create_task("sleep", json!({"ms": 60000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let waiting = s.start("tasks/result", json!({"taskId": id}));
    std::thread::sleep(Duration::from_millis(50));
    s.ok("tasks/cancel", json!({"taskId": id}));
    let e = s.response_to(&waiting)["error"].clone();
    assert_eq!(e["code"], -32001);
    assert!(e["message"].as_str().unwrap().contains("cancelled"), "{e}");
    assert_eq!(s.err("tasks/result", json!({"taskId": id})), e);
}

/// Spec: "Receivers MUST reject cancellation requests for tasks already in a terminal
/// status (`completed`, `failed`, or `cancelled`) with error code `-32602`".
#[test]
fn cancel_of_a_terminal_task_is_32602() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    for (tool, args, status) in [
        ("sleep", json!({"ms": 1}), "completed"),
        ("fail", json!({"message": "x"}), "failed"),
        ("error", json!({"message": "x"}), "failed"),
    ] {
        let id = s.create_task(tool, args)["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        s.poll_until(&id, status, |t| t["status"] == status);
        let e = s.err("tasks/cancel", json!({"taskId": id}));
        assert_eq!(e["code"], -32602);
        assert_eq!(
            e["message"],
            format!("Cannot cancel task: already in terminal status '{status}'")
        );
        assert_eq!(s.get_task(&id)["status"], status);
    }
    let id = s.create_task("sleep", json!({"ms": 60000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(s.err("tasks/cancel", json!({"taskId": id}))["code"], -32602);
}

/// Spec: "receivers SHOULD attempt to stop the task's execution": the tool's side effects
/// (here, its progress notifications) stop within 100 ms.
#[test]
fn cancel_stops_the_work() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let r = s.ok("tools/call", json!({"name": "progress", "arguments": {"steps": 1000, "ms": 10}, "task": {}, "_meta": {"progressToken": "c"}}));
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    s.wait_for("progress", |m| {
        m["method"] == "notifications/progress" && m["params"]["progress"] == 3
    });
    // stdout is one ordered stream: what follows the cancel response was sent after it.
    let req = s.start("tasks/cancel", json!({"taskId": id}));
    let mut before = Vec::new();
    loop {
        let m = s.recv();
        if m["id"] == req {
            assert_eq!(m["result"]["status"], "cancelled");
            break;
        }
        before.push(m);
    }
    let after: Vec<Value> = s
        .drain_for(Duration::from_millis(400))
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    // At most one notification already being written when the cancel landed; nothing later.
    assert!(
        after.len() <= 1,
        "progress went on after the cancel: {after:?}"
    );
    assert_eq!(s.get_task(&id)["status"], "cancelled");
}

#[test]
fn cancelling_many_running_tasks_keeps_every_one_cancelled() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let ids: Vec<String> = (0..30)
        .map(|i| {
            s.create_task("sleep", json!({"ms": i * 3}))["taskId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut cancelled = Vec::new();
    for id in &ids {
        let r = s.call("tasks/cancel", json!({"taskId": id}));
        if r.get("result").is_some() {
            cancelled.push(id.clone());
        } else {
            assert_eq!(r["error"]["code"], -32602, "{r}");
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    for id in &ids {
        let st = s.get_task(id)["status"].clone();
        if cancelled.contains(id) {
            assert_eq!(st, "cancelled");
        } else {
            assert_eq!(st, Value::from("completed"));
        }
    }
}
