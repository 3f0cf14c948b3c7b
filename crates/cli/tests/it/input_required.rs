//! A task that needs the requestor's input while it runs (`input_required`): elicitation
//! and sampling requests travel, with related-task `_meta`, on the requestor's open
//! `tasks/result`, over stdio. Every assertion is on the raw wire messages.

use crate::common;

use std::time::Duration;

use common::{Stdio, text_of};
use serde_json::{Value, json};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn server() -> Stdio {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    s
}

/// The related-task id of a message's `params._meta` (requests, notifications).
fn related_of_params(msg: &Value) -> Option<&str> {
    msg["params"]["_meta"][RELATED]["taskId"].as_str()
}

fn is_request(msg: &Value, method: &str) -> bool {
    msg.get("id").is_some() && msg["method"] == method
}

/// Wait for a server-to-client request of `method` tied to `task_id`.
fn wait_request(s: &mut Stdio, method: &str, task_id: &str) -> Value {
    let method = method.to_owned();
    let tid = task_id.to_owned();
    s.wait_for(
        &format!("a {method} request for task {task_id}"),
        move |m| is_request(m, &method) && related_of_params(m) == Some(tid.as_str()),
    )
}

/// Answer a server-to-client request with `result`.
fn answer(s: &mut Stdio, id: &Value, result: Value) {
    s.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

fn accept(answer: &str) -> Value {
    json!({"action": "accept", "content": {"answer": answer}})
}

/// Start `ask` as a task; return its id after `tasks/get` shows `input_required`.
fn ask_until_input_required(s: &mut Stdio, question: &str) -> String {
    let task = s.create_task("ask", json!({"question": question}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    s.poll_until(&id, "input_required", |t| t["status"] == "input_required");
    id
}

fn status_of(s: &mut Stdio, id: &str) -> String {
    s.get_task(id)["status"].as_str().unwrap().to_owned()
}

/// A `tasks/result` success payload: the text and the related-task `_meta`.
fn assert_result_text(resp: &Value, task_id: &str, text: &str) {
    let result = resp
        .get("result")
        .unwrap_or_else(|| panic!("tasks/result failed: {resp}"));
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": text}]),
        "tasks/result payload: {resp}"
    );
    assert_eq!(
        result["_meta"][RELATED],
        json!({"taskId": task_id}),
        "tasks/result carries related-task _meta: {resp}"
    );
}

fn no_message_answers(msgs: &[Value], id: &Value) -> bool {
    !msgs
        .iter()
        .any(|m| m.get("id") == Some(id) && m.get("method").is_none())
}

#[test]
fn ask_task_relays_elicitation_with_related_task_on_tasks_result_and_returns_the_answer() {
    let mut s = server();
    let id = ask_until_input_required(&mut s, "What is six times seven?");
    // Queued for the task: nothing goes out until a tasks/result is open.
    let mut seen = s.drain_for(Duration::from_millis(200));
    assert!(
        !seen.iter().any(|m| is_request(m, "elicitation/create")),
        "the elicitation went out before any tasks/result: {seen:?}"
    );

    let r = s.start("tasks/result", json!({"taskId": id}));
    let req = wait_request(&mut s, "elicitation/create", &id);
    assert_eq!(req["jsonrpc"], "2.0");
    assert_eq!(req["params"]["_meta"][RELATED], json!({"taskId": id}));
    assert_eq!(req["params"]["mode"], "form");
    assert_eq!(req["params"]["message"], "What is six times seven?");
    assert_eq!(
        req["params"]["requestedSchema"],
        json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        })
    );
    // Still waiting: no response to the tasks/result before the answer, and the
    // elicitation is not repeated.
    let early = s.drain_for(Duration::from_millis(200));
    assert!(
        no_message_answers(&early, &r),
        "tasks/result answered before the input: {early:?}"
    );
    assert!(
        !early.iter().any(|m| is_request(m, "elicitation/create")),
        "the elicitation went out twice: {early:?}"
    );
    seen.extend(early);

    answer(&mut s, &req["id"], accept("42"));
    let after = s.poll_until(&id, "working or completed", |t| {
        t["status"] != "input_required"
    });
    assert!(
        after["status"] == "working" || after["status"] == "completed",
        "after the answer: {after}"
    );

    let resp = s.response_to(&r);
    assert_result_text(&resp, &id, "42");
    assert_eq!(status_of(&mut s, &id), "completed");

    let again = s.call("tasks/result", json!({"taskId": id}));
    assert_eq!(
        again["result"], resp["result"],
        "a second tasks/result returns the same"
    );

    // Status notifications (optional) name the task in their params, not in _meta.
    seen.extend(s.drain_for(Duration::from_millis(100)));
    for m in seen
        .iter()
        .filter(|m| m["method"] == "notifications/tasks/status")
    {
        assert!(
            m["params"]["_meta"].get(RELATED).is_none(),
            "status notification with related-task _meta: {m}"
        );
    }
}

#[test]
fn ask_task_decline_and_cancel_actions_give_decline_and_cancel_text() {
    let mut s = server();
    for (action, text) in [("decline", "(decline)"), ("cancel", "(cancel)")] {
        let id = ask_until_input_required(&mut s, "Proceed?");
        let r = s.start("tasks/result", json!({"taskId": id}));
        let req = wait_request(&mut s, "elicitation/create", &id);
        answer(&mut s, &req["id"], json!({"action": action}));
        let resp = s.response_to(&r);
        assert_result_text(&resp, &id, text);
        assert_eq!(status_of(&mut s, &id), "completed");
    }
}

#[test]
fn dropped_tasks_result_resends_the_same_elicitation_with_the_same_id_on_the_next_one() {
    let mut s = server();
    let id = ask_until_input_required(&mut s, "Color?");

    let a = s.start("tasks/result", json!({"taskId": id}));
    let first = wait_request(&mut s, "elicitation/create", &id);
    let e = first["id"].clone();

    // Once per open tasks/result: nothing more while A stays open.
    let quiet = s.drain_for(Duration::from_millis(300));
    assert!(
        !quiet.iter().any(|m| is_request(m, "elicitation/create")),
        "the elicitation went out twice on one tasks/result: {quiet:?}"
    );
    assert!(
        no_message_answers(&quiet, &a),
        "tasks/result A answered early: {quiet:?}"
    );

    s.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": a, "reason": "the client gave up on this wait"},
    }));

    let b = s.start("tasks/result", json!({"taskId": id}));
    let again = wait_request(&mut s, "elicitation/create", &id);
    assert_eq!(again["id"], e, "re-sent with the same JSON-RPC id");
    assert_eq!(again["params"], first["params"], "re-sent unchanged");

    let quiet = s.drain_for(Duration::from_millis(300));
    assert!(
        !quiet.iter().any(|m| is_request(m, "elicitation/create")),
        "the elicitation went out twice on tasks/result B: {quiet:?}"
    );
    assert!(
        no_message_answers(&quiet, &a),
        "the cancelled tasks/result A was answered: {quiet:?}"
    );

    answer(&mut s, &e, accept("blue"));
    let resp = s.response_to(&b);
    assert_result_text(&resp, &id, "blue");

    // A was cancelled: no response to it, ever.
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let rest = s.drain_for(Duration::from_millis(300));
    assert!(
        no_message_answers(&rest, &a),
        "the cancelled tasks/result A was answered: {rest:?}"
    );
}

#[test]
fn answers_with_and_without_related_task_meta_are_both_accepted() {
    let mut s = server();

    let with = ask_until_input_required(&mut s, "With meta?");
    let r = s.start("tasks/result", json!({"taskId": with}));
    let req = wait_request(&mut s, "elicitation/create", &with);
    let mut result = accept("yes-meta");
    result["_meta"] = json!({ RELATED: {"taskId": with} });
    answer(&mut s, &req["id"], result);
    assert_result_text(&s.response_to(&r), &with, "yes-meta");

    let without = ask_until_input_required(&mut s, "Without meta?");
    let r = s.start("tasks/result", json!({"taskId": without}));
    let req = wait_request(&mut s, "elicitation/create", &without);
    answer(&mut s, &req["id"], accept("no-meta"));
    assert_result_text(&s.response_to(&r), &without, "no-meta");
}

#[test]
fn two_concurrent_ask_tasks_answered_in_opposite_order_each_get_their_own_answer() {
    let mut s = server();
    let one = ask_until_input_required(&mut s, "first?");
    let two = ask_until_input_required(&mut s, "second?");
    assert_ne!(one, two);

    let r1 = s.start("tasks/result", json!({"taskId": one}));
    let r2 = s.start("tasks/result", json!({"taskId": two}));
    let e1 = wait_request(&mut s, "elicitation/create", &one);
    let e2 = wait_request(&mut s, "elicitation/create", &two);
    assert_ne!(e1["id"], e2["id"]);
    assert_eq!(e1["params"]["message"], "first?");
    assert_eq!(e2["params"]["message"], "second?");

    answer(&mut s, &e2["id"], accept("answer-two"));
    let resp2 = s.response_to(&r2);
    assert_result_text(&resp2, &two, "answer-two");
    assert_eq!(
        status_of(&mut s, &one),
        "input_required",
        "the first task still waits"
    );

    answer(&mut s, &e1["id"], accept("answer-one"));
    let resp1 = s.response_to(&r1);
    assert_result_text(&resp1, &one, "answer-one");
}

#[test]
fn cancel_while_input_required_ends_the_wait_with_cancelled_and_ignores_a_late_answer() {
    let mut s = server();
    let id = ask_until_input_required(&mut s, "Never answered?");
    let r = s.start("tasks/result", json!({"taskId": id}));
    let req = wait_request(&mut s, "elicitation/create", &id);

    let cancelled = s.ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["status"], "cancelled");

    let resp = s.response_to(&r);
    let err = resp
        .get("error")
        .unwrap_or_else(|| panic!("tasks/result of a cancelled task succeeded: {resp}"));
    assert_eq!(err["code"], -32001, "{resp}");

    // The late answer is ignored without harm.
    answer(&mut s, &req["id"], accept("too late"));
    assert_eq!(s.ok("ping", json!({})), json!({}));
    assert_eq!(status_of(&mut s, &id), "cancelled");
    let again = s.call("tasks/result", json!({"taskId": id}));
    assert_eq!(
        again["error"], resp["error"],
        "the cancelled outcome is stable"
    );
    let rest = s.drain_for(Duration::from_millis(200));
    assert!(
        !rest.iter().any(|m| is_request(m, "elicitation/create")),
        "no request for a cancelled task: {rest:?}"
    );
    assert!(
        !rest.iter().any(|m| m.get("id") == Some(&req["id"])),
        "the late answer drew a reply: {rest:?}"
    );
}

#[test]
fn expiry_while_waiting_for_input_ends_tasks_result_with_expired_and_ignores_a_late_answer() {
    let mut s = server();
    let r = s.ok(
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Too slow?"}, "task": {"ttl": 300}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(r["task"]["ttl"], 300);

    let res = s.start("tasks/result", json!({"taskId": id}));
    let req = wait_request(&mut s, "elicitation/create", &id);

    let resp = s.response_to(&res);
    let err = resp
        .get("error")
        .unwrap_or_else(|| panic!("tasks/result of an expired task succeeded: {resp}"));
    assert_eq!(err["code"], -32602, "{resp}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .contains("expired"),
        "{resp}"
    );

    answer(&mut s, &req["id"], accept("late"));
    assert_eq!(s.ok("ping", json!({})), json!({}));
    let gone = s.call("tasks/get", json!({"taskId": id}));
    assert_eq!(
        gone["error"]["code"], -32602,
        "an expired task is gone: {gone}"
    );
    let rest = s.drain_for(Duration::from_millis(200));
    assert!(
        !rest.iter().any(|m| m.get("id") == Some(&req["id"])),
        "the late answer drew a reply: {rest:?}"
    );
    assert!(
        !rest.iter().any(|m| is_request(m, "elicitation/create")),
        "no request for an expired task: {rest:?}"
    );
}

#[test]
fn cancelled_notification_for_tasks_result_ends_only_that_wait_and_the_task_completes() {
    let mut s = server();
    let task = s.create_task("sleep", json!({"ms": 400}));
    let id = task["taskId"].as_str().unwrap().to_owned();

    let r = s.start("tasks/result", json!({"taskId": id}));
    std::thread::sleep(Duration::from_millis(50));
    s.send(&json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": r},
    }));

    let done = s.poll_until(&id, "completed", |t| t["status"] == "completed");
    assert_eq!(done["status"], "completed");
    let resp = s.call("tasks/result", json!({"taskId": id}));
    assert_result_text(&resp, &id, "slept 400");

    let rest = s.drain_for(Duration::from_millis(200));
    assert!(
        no_message_answers(&rest, &r),
        "the cancelled tasks/result was answered: {rest:?}"
    );
}

#[test]
fn summarize_task_relays_sampling_with_related_task_and_returns_the_sampled_text() {
    let mut s = server();
    let task = s.create_task("summarize", json!({"text": "a long text about tasks"}));
    let id = task["taskId"].as_str().unwrap().to_owned();

    let r = s.start("tasks/result", json!({"taskId": id}));
    let req = wait_request(&mut s, "sampling/createMessage", &id);
    assert_eq!(req["params"]["_meta"][RELATED], json!({"taskId": id}));
    assert_eq!(req["params"]["messages"][0]["role"], "user");
    assert!(
        req["params"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("a long text about tasks")
    );
    assert_eq!(status_of(&mut s, &id), "input_required");

    answer(
        &mut s,
        &req["id"],
        json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}),
    );
    let resp = s.response_to(&r);
    assert_result_text(&resp, &id, "short");
    assert_eq!(text_of(&resp["result"]), "short");
    assert_eq!(status_of(&mut s, &id), "completed");
}

#[test]
fn elicitation_answered_with_a_jsonrpc_error_fails_the_task_with_that_error() {
    let mut s = server();
    let id = ask_until_input_required(&mut s, "Will you answer?");
    let r = s.start("tasks/result", json!({"taskId": id}));
    let req = wait_request(&mut s, "elicitation/create", &id);

    s.send(&json!({
        "jsonrpc": "2.0",
        "id": req["id"],
        "error": {"code": -32000, "message": "the user closed the dialog"},
    }));

    let resp = s.response_to(&r);
    let err = resp
        .get("error")
        .unwrap_or_else(|| panic!("tasks/result should be the error: {resp}"));
    assert_eq!(err["code"], -32000, "{resp}");
    assert_eq!(err["message"], "the user closed the dialog", "{resp}");
    assert_eq!(status_of(&mut s, &id), "failed");
    let again = s.call("tasks/result", json!({"taskId": id}));
    assert_eq!(again["error"], resp["error"], "the same error every time");
}
