//! Per-requester limits.

use crate::common;
use common::Stdio;
use serde_json::json;

/// Spec (resource management): "Receivers SHOULD: Enforce limits on concurrent tasks per
/// requestor".
#[test]
fn over_the_active_task_limit_creation_fails_and_creates_nothing() {
    let mut s = Stdio::spawn(&["--max-active-tasks", "2"]);
    s.initialize();
    let a = s.create_task("sleep", json!({"ms": 60000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.create_task("sleep", json!({"ms": 60000}));
    let e = s.err(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
    );
    assert_eq!(e["code"], -32003, "{e}");
    assert!(e["message"].as_str().unwrap().contains("at most 2"), "{e}");
    assert_eq!(
        s.ok("tasks/list", json!({}))["tasks"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // A finished task frees its slot.
    s.ok("tasks/cancel", json!({"taskId": a}));
    s.create_task("sleep", json!({"ms": 1}));
    // Plain calls are not tasks and are not limited.
    s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    );
}
