//! tasks/list: pagination and cursors.

use crate::common;
use std::collections::HashSet;

use common::Stdio;
use serde_json::{Value, json};

/// Spec: "Receivers MUST include a `nextCursor` in the response if more tasks are
/// available." and "If a task is retrievable via `tasks/get` for a requestor, it MUST be
/// retrievable via `tasks/list` for that requestor."
#[test]
fn pages_through_every_task_once() {
    let mut s = Stdio::spawn(&["--page-size", "3"]);
    s.initialize();
    let created: Vec<String> = (0..8)
        .map(|_| {
            s.create_task("sleep", json!({"ms": 1}))["taskId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let page = s.ok("tasks/list", params);
        pages += 1;
        let tasks = page["tasks"].as_array().unwrap();
        assert!(tasks.len() <= 3);
        assert!(page.get("_meta").is_none());
        seen.extend(
            tasks
                .iter()
                .map(|t| t["taskId"].as_str().unwrap().to_owned()),
        );
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, created, "every task exactly once, in creation order");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 8);
}

/// Spec: "Invalid or nonexistent cursor in tasks/list: -32602 (Invalid params)".
#[test]
fn bad_and_tampered_cursors_are_32602() {
    let mut s = Stdio::spawn(&["--page-size", "1"]);
    s.initialize();
    s.create_task("sleep", json!({"ms": 1}));
    s.create_task("sleep", json!({"ms": 1}));
    let c = s.ok("tasks/list", json!({}))["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut tampered = c.clone().into_bytes();
    tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
    for bad in [
        json!("garbage"),
        json!(String::from_utf8(tampered).unwrap()),
        json!(""),
        json!(7),
    ] {
        let e = s.err("tasks/list", json!({"cursor": bad}));
        assert_eq!(e["code"], -32602, "{bad}");
    }
    // A cursor from another server (another store key) is refused too.
    let mut other = Stdio::spawn(&["--page-size", "1"]);
    other.initialize();
    assert_eq!(
        other.err("tasks/list", json!({"cursor": c}))["code"],
        -32602
    );
    // The genuine one works.
    assert_eq!(
        s.ok("tasks/list", json!({"cursor": c}))["tasks"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
