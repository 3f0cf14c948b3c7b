//! TTL: expiry, deletion, and waiters on expiring tasks.

use crate::common;
use std::time::Duration;

use common::Stdio;
use serde_json::json;

/// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and its
/// results, regardless of the task status." We answer -32602 "Task has expired" (or, once
/// deleted, "Task not found").
#[test]
fn an_expired_task_is_gone() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 200}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(
        s.ok("tasks/result", json!({"taskId": id}))["content"][0]["text"],
        "slept 1"
    );
    std::thread::sleep(Duration::from_millis(300));
    for m in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = s.err(m, json!({"taskId": id}));
        assert_eq!(e["code"], -32602);
        let msg = e["message"].as_str().unwrap();
        assert!(
            msg.contains("Task has expired") || msg.contains("Task not found"),
            "{msg}"
        );
    }
    // The sweeper deletes it: it leaves tasks/list.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(s.ok("tasks/list", json!({}))["tasks"], json!([]));
    assert!(
        s.err("tasks/get", json!({"taskId": id}))["message"]
            .as_str()
            .unwrap()
            .contains("Task not found")
    );
}

#[test]
fn a_result_waiting_on_an_expiring_task_gets_task_has_expired() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60000}, "task": {"ttl": 300}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let e = s.err("tasks/result", json!({"taskId": id}));
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"].as_str().unwrap().contains("Task has expired"),
        "{e}"
    );
}

#[test]
fn expiry_stops_running_work() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 1000, "ms": 20}, "task": {"ttl": 200}, "_meta": {"progressToken": 9}}),
    );
    let id = r["task"]["taskId"].clone();
    s.wait_for("progress", |m| m["method"] == "notifications/progress");
    // Past the TTL and a sweep: flush what was sent until now, then expect silence.
    std::thread::sleep(Duration::from_millis(1500));
    s.drain_for(Duration::from_millis(50));
    let after = s.drain_for(Duration::from_millis(300));
    assert!(
        after
            .iter()
            .all(|m| m["method"] != "notifications/progress"),
        "work went on after expiry"
    );
    assert_eq!(s.err("tasks/get", json!({"taskId": id}))["code"], -32602);
}

/// Issue 15 #16: every non-negative integer `ttl` is clamped to `--max-ttl` alike, the ones
/// beyond u64 (`100000000000000000000`, a valid JSON integer) as much as 2^63; a negative
/// or fractional one stays -32602.
#[test]
fn a_ttl_beyond_u64_is_clamped_like_any_other() {
    let mut s = Stdio::spawn(&["--max-ttl", "90000"]);
    s.initialize();
    // Raw text: serde_json's json! cannot write an integer beyond u64.
    let mut create = |ttl: &str| {
        let id = s.next_id();
        s.send_raw(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":1}},"task":{{"ttl":{ttl}}}}}}}"#
        ));
        s.response_to(&id)
    };
    for ttl in ["9223372036854775808", "100000000000000000000", "1e30"] {
        let r = create(ttl);
        assert_eq!(r["result"]["task"]["ttl"], 90_000, "ttl {ttl}: {r}");
    }
    for ttl in ["-100000000000000000000", "1e-3", "2.5"] {
        let r = create(ttl);
        assert_eq!(r["error"]["code"], -32602, "ttl {ttl}: {r}");
    }
}
