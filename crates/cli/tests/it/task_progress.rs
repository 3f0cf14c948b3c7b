//! Progress for a whole task: the `progressToken` of the task-augmented request stays
//! valid for the task's lifetime, whether or not a `tasks/result` is open, and stops when
//! the task is cancelled. Assertions are on the raw wire messages over stdio.

use crate::common;

use std::time::{Duration, Instant};

use common::Stdio;
use serde_json::{Value, json};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn server() -> Stdio {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    s
}

fn is_progress(m: &Value) -> bool {
    m["method"] == "notifications/progress"
}

/// Start `progress {steps, ms}` as a task with `token`; return the task id.
fn start_progress(s: &mut Stdio, steps: u64, ms: u64, token: &Value) -> String {
    let r = s.ok(
        "tools/call",
        json!({
            "name": "progress",
            "arguments": {"steps": steps, "ms": ms},
            "task": {},
            "_meta": {"progressToken": token},
        }),
    );
    r["task"]["taskId"].as_str().unwrap().to_owned()
}

/// Check the notifications are exactly progress 1..=steps of `steps` with `token`, each
/// tied to `task_id` by related-task `_meta`.
fn assert_progress_sequence(notes: &[Value], token: &Value, task_id: &str, steps: u64) {
    assert_eq!(
        notes.len() as u64,
        steps,
        "progress notifications: {notes:?}"
    );
    for (i, n) in notes.iter().enumerate() {
        let p = &n["params"];
        assert!(n.get("id").is_none(), "a notification: {n}");
        assert_eq!(&p["progressToken"], token, "{n}");
        assert_eq!(p["progress"].as_f64(), Some((i + 1) as f64), "{n}");
        assert_eq!(p["total"].as_f64(), Some(steps as f64), "{n}");
        assert_eq!(p["_meta"][RELATED], json!({"taskId": task_id}), "{n}");
    }
}

fn assert_done(s: &mut Stdio, task_id: &str, steps: u64) {
    let r = s.ok("tasks/result", json!({"taskId": task_id}));
    assert_eq!(
        r["content"],
        json!([{"type": "text", "text": format!("done {steps}")}])
    );
    assert_eq!(r["_meta"][RELATED], json!({"taskId": task_id}));
}

/// Poll with tasks/get only (no tasks/result open) until completed; progress still comes.
fn progress_without_tasks_result(token: Value) {
    let mut s = server();
    let id = start_progress(&mut s, 5, 20, &token);
    s.poll_until(&id, "completed", |t| t["status"] == "completed");
    let msgs = s.drain_for(Duration::from_millis(100));
    let notes: Vec<Value> = msgs.into_iter().filter(is_progress).collect();
    assert_progress_sequence(&notes, &token, &id, 5);
    assert_done(&mut s, &id, 5);
}

/// With a tasks/result open: every notification arrives before its response.
fn progress_with_tasks_result(token: Value) {
    let mut s = server();
    let id = start_progress(&mut s, 5, 20, &token);
    let r = s.start("tasks/result", json!({"taskId": id}));
    let mut notes = Vec::new();
    let resp = loop {
        let m = s.recv();
        if m.get("id") == Some(&r) && m.get("method").is_none() {
            break m;
        }
        if is_progress(&m) {
            notes.push(m);
        }
    };
    assert_progress_sequence(&notes, &token, &id, 5);
    assert_eq!(
        resp["result"]["content"],
        json!([{"type": "text", "text": "done 5"}])
    );
    assert_eq!(resp["result"]["_meta"][RELATED], json!({"taskId": id}));
    let late = s.drain_for(Duration::from_millis(100));
    assert!(
        !late.iter().any(is_progress),
        "progress after the result: {late:?}"
    );
    assert_done(&mut s, &id, 5);
}

#[test]
fn string_progress_token_reports_every_step_of_a_task_polled_with_tasks_get_only() {
    progress_without_tasks_result(json!("tok-1"));
}

#[test]
fn string_progress_token_reports_every_step_of_a_task_while_tasks_result_is_open() {
    progress_with_tasks_result(json!("tok-1"));
}

#[test]
fn numeric_progress_token_reports_every_step_of_a_task_polled_with_tasks_get_only() {
    progress_without_tasks_result(json!(7));
}

#[test]
fn numeric_progress_token_reports_every_step_of_a_task_while_tasks_result_is_open() {
    progress_with_tasks_result(json!(7));
}

#[test]
fn no_progress_arrives_later_than_100ms_after_tasks_cancel_responds() {
    let mut s = server();
    let token = json!("tok-cancel");
    let id = start_progress(&mut s, 10_000, 20, &token);
    // It is running and reporting.
    for _ in 0..2 {
        s.wait_for("a progress notification", is_progress);
    }
    let cancelled = s.ok("tasks/cancel", json!({"taskId": id}));
    let cancelled_at = Instant::now();
    assert_eq!(cancelled["status"], "cancelled");

    let deadline = cancelled_at + Duration::from_millis(600);
    while let Some(m) = s.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if is_progress(&m) {
            let after = cancelled_at.elapsed();
            assert!(
                after <= Duration::from_millis(100),
                "progress {after:?} after the cancel response: {m}"
            );
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    assert_eq!(s.get_task(&id)["status"], "cancelled");
    let r = s.call("tasks/result", json!({"taskId": id}));
    assert_eq!(r["error"]["code"], -32001, "{r}");
}
