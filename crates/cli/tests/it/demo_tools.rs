//! The demo tools, called plainly.

use crate::common;
use std::time::Duration;

use common::{Stdio, text_of};
use serde_json::json;

#[test]
fn tools_list_shows_each_tool_with_its_task_support() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let tools = s.ok("tools/list", json!({}))["tools"]
        .as_array()
        .unwrap()
        .clone();
    let support = |name: &str| {
        let t = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        t.get("execution")
            .map(|e| e["taskSupport"].as_str().unwrap().to_owned())
    };
    assert_eq!(support("ask").as_deref(), Some("required"));
    for n in ["sleep", "fail", "error", "summarize", "progress"] {
        assert_eq!(support(n).as_deref(), Some("optional"), "{n}");
    }
    assert_eq!(support("echo"), None);
    assert_eq!(tools.len(), 7);
}

#[test]
fn sleep_echo_fail_and_error() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    assert_eq!(
        text_of(&s.ok(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 20}})
        )),
        "slept 20"
    );
    assert_eq!(
        text_of(&s.ok(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}})
        )),
        "hi"
    );
    let r = s.ok(
        "tools/call",
        json!({"name": "fail", "arguments": {"message": "nope"}}),
    );
    assert_eq!(r["isError"], true);
    assert_eq!(text_of(&r), "nope");
    let e = s.err(
        "tools/call",
        json!({"name": "error", "arguments": {"message": "boom", "code": -32050}}),
    );
    assert_eq!(e, json!({"code": -32050, "message": "boom"}));
    let e = s.err(
        "tools/call",
        json!({"name": "error", "arguments": {"message": "dflt"}}),
    );
    assert_eq!(e, json!({"code": -32603, "message": "dflt"}));
}

#[test]
fn summarize_asks_the_client_to_sample() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.start(
        "tools/call",
        json!({"name": "summarize", "arguments": {"text": "a long text"}}),
    );
    let req = s.wait_for("sampling request", |m| {
        m["method"] == "sampling/createMessage"
    });
    assert_eq!(req["params"]["maxTokens"], 200);
    assert_eq!(req["params"]["messages"][0]["role"], "user");
    assert!(
        req["params"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("a long text")
    );
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}}));
    let r = s.response_to(&id);
    assert_eq!(text_of(&r["result"]), "short");
}

#[test]
fn ask_runs_plainly_when_tasks_are_off() {
    let mut s = Stdio::spawn(&["--no-tasks"]);
    let init = s.initialize();
    assert!(init["capabilities"].get("tasks").is_none());
    let id = s.start(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "name?"}, "task": {}}),
    );
    let req = s.wait_for("elicitation", |m| m["method"] == "elicitation/create");
    assert_eq!(req["params"]["message"], "name?");
    assert_eq!(req["params"]["mode"], "form");
    assert_eq!(
        req["params"]["requestedSchema"],
        json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})
    );
    assert!(
        req["params"].get("_meta").is_none(),
        "no related-task outside tasks"
    );
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"answer": "Ada"}}}));
    assert_eq!(text_of(&s.response_to(&id)["result"]), "Ada");
    // decline
    let id = s.start(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "q"}}),
    );
    let req = s.wait_for("elicitation", |m| m["method"] == "elicitation/create");
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}}));
    assert_eq!(text_of(&s.response_to(&id)["result"]), "(decline)");
}

#[test]
fn elicitation_is_refused_when_the_client_lacks_the_capability() {
    let mut s = Stdio::spawn(&["--no-tasks"]);
    s.initialize_with("2025-11-25", json!({}));
    let e = s.err(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "q"}}),
    );
    assert_eq!(e["code"], -32601);
    assert!(e["message"].as_str().unwrap().contains("elicitation"));
}

#[test]
fn progress_uses_the_request_token() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.start("tools/call", json!({"name": "progress", "arguments": {"steps": 3, "ms": 5}, "_meta": {"progressToken": "p1"}}));
    let r = s.response_to(&id);
    assert_eq!(text_of(&r["result"]), "done 3");
    let notes: Vec<_> = s
        .drain_for(Duration::from_millis(50))
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    for (i, n) in notes.iter().enumerate() {
        assert_eq!(n["params"]["progressToken"], "p1");
        assert_eq!(n["params"]["progress"], json!(i + 1));
        assert_eq!(n["params"]["total"], json!(3));
    }
}

#[test]
fn progress_without_a_token_sends_nothing() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 2, "ms": 1}}),
    );
    assert_eq!(text_of(&r), "done 2");
    assert!(s.drain_for(Duration::from_millis(50)).is_empty());
}

#[test]
fn notifications_cancelled_aborts_a_plain_call_without_a_response() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.start(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60_000}}),
    );
    std::thread::sleep(Duration::from_millis(50));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}}));
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let late = s.drain_for(Duration::from_millis(200));
    assert!(
        late.iter().all(|m| m["id"] != id),
        "a cancelled request got a response: {late:?}"
    );
}

/// Arguments the input schema rejects: a tool execution error naming the field and the
/// bound, as a plain call and as a task call alike; the task call creates no task.
///
/// Spec (tools page): "Tool Execution Errors: Reported in tool results with
/// `isError: true`: ... Input validation errors (e.g., date in wrong format, value out of
/// range)".
#[test]
fn bad_arguments_are_an_is_error_result_and_create_no_task() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let too_long =
        "Invalid arguments for tool `sleep`: ms: 86400001 is greater than the maximum of 86400000";
    let plain = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 86_400_001u64}}),
    );
    assert_eq!(
        plain,
        json!({"content": [{"type": "text", "text": too_long}], "isError": true})
    );
    let as_task = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 86_400_001u64}, "task": {"ttl": 60000}}),
    );
    assert_eq!(
        as_task, plain,
        "answered directly, not with a CreateTaskResult"
    );
    let r = s.ok(
        "tools/call",
        json!({"name": "progress", "arguments": {"ms": 1}, "task": {}}),
    );
    assert_eq!(r["isError"], true);
    assert_eq!(
        text_of(&r),
        "Invalid arguments for tool `progress`: \"steps\" is a required property"
    );
    let r = s.ok(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": 7}, "task": {}}),
    );
    assert_eq!(
        text_of(&r),
        "Invalid arguments for tool `ask`: question: 7 is not of type \"string\""
    );
    assert_eq!(s.ok("tasks/list", json!({}))["tasks"], json!([]));
    // Good arguments still make a task, and a plain call still works.
    let created = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
    );
    assert!(created["task"]["taskId"].is_string(), "{created}");
    assert_eq!(
        s.ok("tasks/list", json!({}))["tasks"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        text_of(&s.ok(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 1, "ms": 1}})
        )),
        "done 1"
    );
}
