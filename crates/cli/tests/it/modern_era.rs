//! The binary serves 2026-07-28 requests beside 2025-11-25 on stdio, and `--task-after`
//! decides when a call of an `optional` demo tool becomes a task. Each modern response is
//! validated against the 2026-07-28 schema (the protocol itself is tested in process in
//! `crates/server/tests/it/modern*.rs`).

use mcp_tasks_testkit::schema::MODERN;
use mcp_tasks_testkit::wire::modern_meta;
use serde_json::{Value, json};

use crate::common::{Stdio, text_of};

/// Send a modern request and return its response, validated against 2026-07-28.
fn modern(s: &mut Stdio, id: &str, method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = modern_meta(caps);
    s.send_raw(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
    );
    let r = s.response_to(&json!(id));
    MODERN
        .validate_response(method, &r)
        .unwrap_or_else(|e| panic!("{r}: {e}"));
    r
}

fn ext() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

#[test]
fn task_after_decides_when_an_optional_tool_becomes_a_task() {
    let mut s = Stdio::spawn(&["--task-after", "100ms"]);
    let d = modern(&mut s, "d", "server/discover", json!({}), json!({}));
    assert_eq!(
        d["result"]["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    let quick = modern(
        &mut s,
        "q",
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
        ext(),
    );
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    assert_eq!(text_of(&quick["result"]), "slept 1");
    let slow = modern(
        &mut s,
        "s",
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60000}}),
        ext(),
    );
    assert_eq!(slow["result"]["resultType"], "task", "{slow}");
    let id = slow["result"]["taskId"].as_str().unwrap().to_owned();
    let ack = modern(&mut s, "c", "tasks/cancel", json!({"taskId": id}), ext());
    assert_eq!(ack["result"]["resultType"], "complete");
    // The legacy era on the same process sees the same task.
    s.initialize();
    let t = s.poll_until(&id, "cancelled", |t| t["status"] == "cancelled");
    assert_eq!(t["taskId"], json!(id));
}

/// `tasks/get` of `id` until it is terminal.
fn until_terminal(s: &mut Stdio, id: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut n = 0;
    loop {
        n += 1;
        let r = modern(
            s,
            &format!("g{n}"),
            "tasks/get",
            json!({"taskId": id}),
            ext(),
        );
        let t = r["result"].clone();
        if ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap()) {
            return t;
        }
        assert!(std::time::Instant::now() < deadline, "never terminal: {t}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn failing_demo_tools_outlive_task_after_and_end_as_the_extension_says() {
    let mut s = Stdio::spawn(&["--task-after", "50ms"]);
    let r = modern(
        &mut s,
        "f",
        "tools/call",
        json!({"name": "fail", "arguments": {"message": "nope", "ms": 300}}),
        ext(),
    );
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let t = until_terminal(&mut s, r["result"]["taskId"].as_str().unwrap());
    assert_eq!(t["status"], "completed", "isError ends completed: {t}");
    assert_eq!(t["result"]["isError"], true);
    assert_eq!(text_of(&t["result"]), "nope");
    let r = modern(
        &mut s,
        "e",
        "tools/call",
        json!({"name": "error", "arguments": {"message": "boom", "code": -31050, "ms": 300}}),
        ext(),
    );
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let t = until_terminal(&mut s, r["result"]["taskId"].as_str().unwrap());
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"], json!({"code": -31050, "message": "boom"}));
}
