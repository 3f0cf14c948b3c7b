//! Gateway in front of a Streamable HTTP upstream (`--upstream-url`): here our own
//! `mcp-tasks serve` over HTTP, whose tools run as upstream tasks; elicitation and
//! progress of the upstream tasks cross.

use crate::common;
use crate::gateway_common;

use common::Stdio;
use gateway_common::{HttpUpstream, RELATED, task_result, text_of, until_terminal};
use serde_json::json;

fn gateway(up: &HttpUpstream) -> Stdio {
    let mut s = Stdio::spawn(&["--upstream-url", up.url.as_str()]);
    s.initialize();
    s
}

#[test]
fn tools_of_an_http_upstream_with_tasks_run_as_upstream_tasks() {
    let up = HttpUpstream::start(&[]);
    let mut s = gateway(&up);
    let tools = s.ok("tools/list", json!({}))["tools"].clone();
    let support = |n: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()["execution"]["taskSupport"]
            .clone()
    };
    assert_eq!(support("sleep"), "optional");
    assert_eq!(support("ask"), "required");
    assert_eq!(support("echo"), "forbidden");

    let task = s.create_task("sleep", json!({"ms": 100}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = task_result(&mut s, &id)["result"].clone();
    assert_eq!(text_of(&r), "slept 100");
    assert_eq!(r["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");

    let plain = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hey"}}),
    );
    assert_eq!(text_of(&plain), "hey");
    let e = s.err(
        "tools/call",
        json!({"name": "error", "arguments": {"message": "bad", "code": -32042}}),
    );
    assert_eq!(e["code"], -32042);
}

#[test]
fn elicitation_of_an_http_upstream_task_is_relayed_through_tasks_result() {
    let up = HttpUpstream::start(&[]);
    let mut s = gateway(&up);
    let task = s.create_task("ask", json!({"question": "name?"}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    s.poll_until(&id, "input_required", |t| t["status"] == "input_required");
    let rid = s.start("tasks/result", json!({"taskId": id}));
    let req = s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(req["params"]["message"], "name?");
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"answer": "Grace"}}}));
    let r = s.response_to(&rid);
    assert_eq!(text_of(&r["result"]), "Grace", "{r}");
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
}

#[test]
fn progress_of_an_http_upstream_task_keeps_the_original_token() {
    let up = HttpUpstream::start(&[]);
    let mut s = gateway(&up);
    let r = s.ok(
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 3, "ms": 100}, "task": {}, "_meta": {"progressToken": "h-1"}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    for i in 1..=3 {
        let p = s.wait_for("progress", move |m| {
            m["method"] == "notifications/progress" && m["params"]["progress"] == i
        });
        assert_eq!(p["params"]["progressToken"], "h-1");
        assert_eq!(p["params"]["_meta"][RELATED]["taskId"], id.as_str());
    }
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
}

fn upstream_tasks(up: &HttpUpstream) -> serde_json::Value {
    gateway_common::cli_json(&[
        "tasks",
        "list",
        "--url",
        up.url.as_str(),
        "--auth-token",
        "tok-gw",
        "--json",
    ])
}

#[test]
fn cancelling_our_task_cancels_the_http_upstream_task_and_auth_headers_go_upstream() {
    let up = HttpUpstream::start_with_tokens(&[], "tok-gw gateway");
    let mut s = Stdio::spawn(&[
        "--upstream-url",
        up.url.as_str(),
        "--upstream-header",
        "Authorization: Bearer tok-gw",
    ]);
    s.initialize();
    let task = s.create_task("sleep", json!({"ms": 60000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    // The upstream task exists, bound to the gateway's principal.
    let deadline = std::time::Instant::now() + common::TIMEOUT;
    while upstream_tasks(&up).to_string().matches("working").count() == 0 {
        assert!(std::time::Instant::now() < deadline, "no upstream task");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        s.ok("tasks/cancel", json!({"taskId": id}))["status"],
        "cancelled"
    );
    loop {
        let listed = upstream_tasks(&up).to_string();
        if listed.contains("cancelled") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream task was not cancelled: {listed}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
