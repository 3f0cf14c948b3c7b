//! CreateTaskResult, TTL policy, ids.

use crate::common;
use std::collections::HashSet;

use common::{Stdio, is_rfc3339_utc};
use serde_json::json;

/// Spec: "Receivers that accept a task-augmented request MUST return a `CreateTaskResult`
/// as the response." and "Tasks MUST begin in the `working` status when created."
#[test]
fn create_task_result_is_immediate_and_complete() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let started = std::time::Instant::now();
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 5000}, "task": {"ttl": 60000}}),
    );
    assert!(
        started.elapsed().as_millis() < 2000,
        "returned before the work finished"
    );
    let t = &r["task"];
    assert_eq!(t["status"], "working");
    assert!(is_rfc3339_utc(t["createdAt"].as_str().unwrap()), "{t}");
    assert_eq!(t["createdAt"], t["lastUpdatedAt"]);
    assert_eq!(t["ttl"], 60000);
    assert_eq!(t["pollInterval"], 1000);
    let immediate = r["_meta"]["io.modelcontextprotocol/model-immediate-response"]
        .as_str()
        .unwrap();
    assert!(immediate.contains(t["taskId"].as_str().unwrap()));
}

/// Spec: "Receivers MAY override the requested `ttl` duration." / "Receivers SHOULD
/// enforce maximum `ttl` durations"; the actual ttl is always present.
#[test]
fn ttl_defaults_and_clamps() {
    let mut s = Stdio::spawn(&[
        "--max-ttl",
        "10m",
        "--default-ttl",
        "2m",
        "--poll-interval",
        "250",
    ]);
    s.initialize();
    let t = s.create_task("sleep", json!({"ms": 1}));
    assert_eq!(t["ttl"], 120_000);
    assert_eq!(t["pollInterval"], 250);
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": null}}),
    );
    assert_eq!(r["task"]["ttl"], 120_000);
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 99_999_999}}),
    );
    assert_eq!(r["task"]["ttl"], 600_000);
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 5000}}),
    );
    assert_eq!(r["task"]["ttl"], 5000);
}

#[test]
fn ttl_is_null_only_when_unlimited() {
    let mut s = Stdio::spawn(&["--max-ttl", "unlimited", "--default-ttl", "unlimited"]);
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
    );
    assert!(
        r["task"].get("ttl").is_some_and(serde_json::Value::is_null),
        "{r}"
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let t = s.get_task(&id);
    assert!(t.get("ttl").is_some_and(serde_json::Value::is_null), "{t}");
    let mut s = Stdio::spawn(&["--max-ttl", "unlimited"]);
    s.initialize();
    assert_eq!(s.create_task("sleep", json!({"ms": 1}))["ttl"], 3_600_000);
}

#[test]
fn a_bad_ttl_is_32602_and_creates_no_task() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    for bad in [
        json!({"ttl": -1}),
        json!({"ttl": 1.5}),
        json!({"ttl": "60000"}),
        json!(5),
        json!("x"),
    ] {
        let e = s.err(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": bad}),
        );
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
    }
    assert_eq!(s.ok("tasks/list", json!({}))["tasks"], json!([]));
}

/// Spec: "Task IDs MUST be a string value." / "MUST be unique across all tasks controlled
/// by the receiver." / "receivers MUST generate cryptographically secure task IDs".
#[test]
fn ids_are_unique_uuid_v4_strings() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let mut seen = HashSet::new();
    for _ in 0..50 {
        let id = s.create_task("sleep", json!({"ms": 1}))["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let u = uuid_parts(&id);
        assert!(u, "not a UUID v4: {id}");
        assert!(seen.insert(id));
    }
}

fn uuid_parts(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.len() == 5
        && [8, 4, 4, 4, 12]
            .iter()
            .zip(&parts)
            .all(|(n, p)| p.len() == *n && p.chars().all(|c| c.is_ascii_hexdigit()))
        && parts[2].starts_with('4')
        && matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b'))
}
