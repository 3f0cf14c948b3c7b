//! Gateway: a task-augmented call of a tool the upstream cannot run as a task becomes a
//! plain upstream `tools/call`; its exact outcome lands in the task; cancel, progress and
//! elicitation cross.

use crate::gateway_common;

use gateway_common::{Fake, RELATED, task_result, until_terminal};
use serde_json::json;

#[test]
fn every_tool_of_an_upstream_without_tasks_is_optional() {
    let fake = Fake::new("policy-plain", false);
    let mut s = fake.gateway(&[]);
    let tools = s.ok("tools/list", json!({}))["tools"].clone();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 7);
    for t in tools {
        assert_eq!(t["execution"]["taskSupport"], "optional", "{t}");
    }
    // Everything else of the upstream's tool objects is unchanged.
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(
        echo,
        &json!({"name": "echo", "description": "echo", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}, "_meta": {"x/k": 1}, "execution": {"taskSupport": "optional"}})
    );
    let slow = tools.iter().find(|t| t["name"] == "slow").unwrap();
    assert!(slow.get("description").is_none(), "{slow}");
}

#[test]
fn a_task_gets_the_exact_result_of_the_upstream_call() {
    let fake = Fake::new("bridge-result", false);
    let mut s = fake.gateway(&[]);
    let plain = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let task = s.create_task("echo", json!({"text": "hi"}));
    let id = task["taskId"].as_str().unwrap();
    let r = task_result(&mut s, id)["result"].clone();
    let mut expected = plain.clone();
    expected["_meta"] = json!({RELATED: {"taskId": id}});
    assert_eq!(r, expected);
    assert_eq!(until_terminal(&mut s, id)["status"], "completed");
    // The upstream got a plain call: no `task`, and the params otherwise as sent.
    let calls: Vec<_> = fake
        .received()
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[1]["params"],
        json!({"name": "echo", "arguments": {"text": "hi"}})
    );
}

#[test]
fn a_task_gets_the_exact_json_rpc_error_of_the_upstream_call() {
    let fake = Fake::new("bridge-error", false);
    let mut s = fake.gateway(&[]);
    let task = s.create_task("boom", json!({}));
    let id = task["taskId"].as_str().unwrap();
    let r = task_result(&mut s, id);
    assert_eq!(
        r["error"],
        json!({"code": -32042, "message": "boom", "data": {"why": "asked to fail"}})
    );
    let t = until_terminal(&mut s, id);
    assert_eq!(t["status"], "failed");
    assert!(t["statusMessage"].as_str().unwrap().contains("boom"), "{t}");
}

#[test]
fn cancelling_the_task_cancels_the_upstream_call() {
    let fake = Fake::new("bridge-cancel", false);
    let mut s = fake.gateway(&[]);
    let task = s.create_task("slow", json!({"ms": 60000}));
    let id = task["taskId"].as_str().unwrap();
    let up = fake.wait_received("the slow call", |m| m["params"]["name"] == "slow");
    let c = s.ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(c["status"], "cancelled");
    let n = fake.wait_received("notifications/cancelled", |m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(n["params"]["requestId"], up["id"]);
    assert_eq!(s.get_task(id)["status"], "cancelled");
}

#[test]
fn upstream_progress_reaches_the_requestor_with_the_original_token() {
    let fake = Fake::new("bridge-progress", false);
    let mut s = fake.gateway(&[]);
    let r = s.ok(
        "tools/call",
        json!({"name": "steps", "arguments": {"n": 3}, "task": {}, "_meta": {"progressToken": "tok-1"}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    for i in 1..=3 {
        let p = s.wait_for("progress", move |m| {
            m["method"] == "notifications/progress" && m["params"]["progress"] == i
        });
        assert_eq!(p["params"]["progressToken"], "tok-1");
        assert_eq!(p["params"]["total"], 3);
        assert_eq!(p["params"]["message"], format!("step {i}"));
        assert_eq!(p["params"]["_meta"][RELATED]["taskId"], id.as_str());
    }
    // The upstream got the token unchanged.
    let up = fake.wait_received("steps", |m| m["params"]["name"] == "steps");
    assert_eq!(up["params"]["_meta"], json!({"progressToken": "tok-1"}));
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
}

#[test]
fn upstream_elicitation_is_relayed_through_tasks_result() {
    let fake = Fake::new("bridge-elicit", false);
    let mut s = fake.gateway(&[]);
    let task = s.create_task("ask", json!({"question": "colour?"}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    s.poll_until(&id, "input_required", |t| t["status"] == "input_required");
    let rid = s.start("tasks/result", json!({"taskId": id}));
    let req = s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["message"], "colour?");
    assert_eq!(req["params"]["_meta"][RELATED]["taskId"], id.as_str());
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"answer": "blue"}}}));
    let r = s.response_to(&rid);
    let text = gateway_common::text_of(&r["result"]);
    assert!(
        text.contains("\"action\":\"accept\"") && text.contains("blue"),
        "{r}"
    );
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
    // The answer went back upstream as the response to the upstream's own request.
    fake.wait_received("the answer", |m| {
        m.get("method").is_none() && m["result"]["content"]["answer"] == "blue"
    });
}

#[test]
fn a_plain_call_is_forwarded_with_progress_and_elicitation_on_its_own_stream() {
    let fake = Fake::new("bridge-plain", false);
    let mut s = fake.gateway(&[]);
    let id = s.start(
        "tools/call",
        json!({"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": 9}}),
    );
    let p = s.wait_for("progress", |m| m["method"] == "notifications/progress");
    assert_eq!(p["params"]["progressToken"], 9);
    assert!(p["params"].get("_meta").is_none(), "{p}");
    assert_eq!(
        gateway_common::text_of(&s.response_to(&id)["result"]),
        "done"
    );

    let id = s.start(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "q?"}}),
    );
    let req = s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert!(req["params"].get("_meta").is_none(), "{req}");
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "decline"}}));
    let r = s.response_to(&id);
    assert!(
        gateway_common::text_of(&r["result"]).contains("decline"),
        "{r}"
    );
}
