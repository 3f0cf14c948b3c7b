//! tasks/result: blocking, exact outcomes.

use crate::common;
use std::time::{Duration, Instant};

use common::{Stdio, text_of};
use serde_json::json;

/// Spec: "it MUST block the response until the task reaches a terminal status".
#[test]
fn result_blocks_until_terminal_then_returns_the_exact_result() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let t = s.create_task("sleep", json!({"ms": 300}));
    let id = t["taskId"].as_str().unwrap();
    let started = Instant::now();
    let r = s.ok("tasks/result", json!({"taskId": id}));
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "returned before the work finished"
    );
    assert_eq!(text_of(&r), "slept 300");
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/related-task"],
        json!({"taskId": id})
    );
    assert_eq!(s.get_task(id)["status"], "completed");
    // Repeatable: the first read does not consume the result.
    let again = s.ok("tasks/result", json!({"taskId": id}));
    assert_eq!(again, r);
}

/// The wait wakes on the change, not on a poll: a finished result arrives promptly.
#[test]
fn a_waiting_result_arrives_promptly() {
    let mut s = Stdio::spawn(&["--poll-interval", "5000"]);
    s.initialize();
    let t = s.create_task("sleep", json!({"ms": 200}));
    let id = t["taskId"].as_str().unwrap();
    let started = Instant::now();
    s.ok("tasks/result", json!({"taskId": id}));
    let late = started.elapsed().saturating_sub(Duration::from_millis(200));
    assert!(
        late < Duration::from_millis(1000),
        "result arrived {late:?} late"
    );
}

/// Spec: "If the underlying request resulted in a JSON-RPC error, `tasks/result` MUST
/// return that same JSON-RPC error."
#[test]
fn a_failed_task_returns_the_tools_exact_json_rpc_error() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let t = s.create_task("error", json!({"message": "boom", "code": -32050}));
    let id = t["taskId"].as_str().unwrap();
    let e = s.err("tasks/result", json!({"taskId": id}));
    assert_eq!(e, json!({"code": -32050, "message": "boom"}));
    let g = s.get_task(id);
    assert_eq!(g["status"], "failed");
    assert!(g["statusMessage"].as_str().unwrap().contains("boom"), "{g}");
    assert_eq!(
        s.err("tasks/result", json!({"taskId": id})),
        e,
        "the same every time"
    );
}

/// Spec: "For tasks that wrap tool call requests, when the tool result has `isError` set
/// to `true`, the task should reach `failed` status." The result is still returned.
#[test]
fn is_error_ends_failed_and_the_result_is_returned_unchanged() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let t = s.create_task("fail", json!({"message": "bad input"}));
    let id = t["taskId"].as_str().unwrap();
    let r = s.ok("tasks/result", json!({"taskId": id}));
    assert_eq!(r["isError"], true);
    assert_eq!(text_of(&r), "bad input");
    let g = s.get_task(id);
    assert_eq!(g["status"], "failed");
    assert_eq!(g["statusMessage"], "Tool execution failed: bad input");
}

#[test]
fn results_of_several_tasks_are_independent() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let ids: Vec<String> = (0..5)
        .map(|i| {
            s.create_task("sleep", json!({"ms": 50 * (5 - i)}))["taskId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let reqs: Vec<_> = ids
        .iter()
        .map(|id| s.start("tasks/result", json!({"taskId": id})))
        .collect();
    for (i, req) in reqs.iter().enumerate() {
        let r = s.response_to(req);
        assert_eq!(text_of(&r["result"]), format!("slept {}", 50 * (5 - i)));
        assert_eq!(
            r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            ids[i].as_str()
        );
    }
}
