//! Gateway, 2026-07-28 clients: the questions an upstream asks while calls of the modern
//! lane wait, and which call each belongs to (over stdio, which cannot tell, and over
//! Streamable HTTP, whose response streams do).

use std::time::{Duration, Instant};

use mcp_tasks_testkit::wire::modern_meta;
use serde_json::{Value, json};

use crate::common::{Stdio, TIMEOUT, text_of};
use crate::gateway_common::Fake;
use crate::gateway_modern::{call, ext, modern, modern_gateway, poll, task_of, terminal};

/// A request the upstream sends while two plain calls of the modern lane are in flight
/// (over stdio, which cannot tell which call it came for) belongs to neither for sure: it
/// is refused at once (-32601), never sent to the wrong client, and both calls fail with
/// a message saying why, rather than pass off a result that may rest on the refused
/// question.
#[test]
fn an_upstream_request_that_belongs_to_no_single_call_fails_the_calls_waiting() {
    let fake = Fake::new("modern-unattributed", false);
    let mut s = modern_gateway(&fake, &[]);
    // Without the extension both run directly; `slow` stays in flight.
    let caps = json!({"elicitation": {"form": {}}});
    let mut params = json!({"name": "slow", "arguments": {"ms": 3000}});
    params["_meta"] = modern_meta(caps.clone());
    s.send_raw(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": params})
            .to_string(),
    );
    fake.wait_received("the slow call", |m| {
        m["method"] == "tools/call" && m["params"]["name"] == "slow"
    });
    let started = Instant::now();
    let r = modern(
        &mut s,
        "ask",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Whose?"}}),
        caps,
    );
    let why = |r: &Value| {
        let m = r["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            m.contains("`elicitation/create` naming no task")
                && m.contains("2 calls waited")
                && m.contains("cannot tell which one asked"),
            "{r}"
        );
    };
    why(&r);
    // The upstream got the refusal (its tool answers it as its text, which no one sees).
    let refusal = fake.wait_received("the refusal", |m| {
        m.get("error").is_some() && m["id"].as_str().is_some_and(|i| i.starts_with("fake-"))
    });
    assert_eq!(refusal["error"]["code"], -32601, "{refusal}");
    // Not kept waiting for a client (30 s) as on a session before its `initialized`.
    let slow = s.response_to(&json!("slow"));
    why(&slow);
    assert!(started.elapsed() < Duration::from_secs(2), "not at once");
    // The abandoned call was cancelled upstream.
    fake.wait_received("the slow call's cancellation", |m| {
        m["method"] == "notifications/cancelled"
    });
}

/// An upstream task's question sent without related-task `_meta` (FastMCP 3.4.11 does
/// so) reaches the one 2026-07-28 task waiting on that upstream, as `inputRequests`
/// answered by `tasks/update`; with two tasks waiting it belongs to no single one: it is
/// refused, and both tasks fail with a message saying why (their upstream tasks cancelled).
#[test]
fn an_upstream_question_without_related_task_meta_reaches_the_one_waiting_task() {
    let fake = Fake::new("modern-unrelated-question", true);
    let mut s = modern_gateway(&fake, &[]);
    let id = task_of(&call(&mut s, "a", "askjob", json!({"question": "Colour?"})));
    let t = poll(&mut s, &id, "input_required", |t| {
        t["status"] == "input_required" || terminal(t)
    });
    assert_eq!(t["status"], "input_required", "{t}");
    let (key, request) = t["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    assert_eq!(request["method"], "elicitation/create", "{t}");
    assert_eq!(request["params"]["message"], "Colour?", "{t}");
    modern(
        &mut s,
        "u",
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"answer": "red"}}}}),
        ext(),
    );
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(
        text_of(&t["result"]),
        r#"answer: {"action":"accept","content":{"answer":"red"}}"#
    );

    // Two tasks wait on the upstream: neither question can be attributed.
    let ids: Vec<String> = ["b1", "b2"]
        .iter()
        .map(|n| {
            task_of(&call(
                &mut s,
                n,
                "askjob",
                json!({"question": *n, "ms": 500}),
            ))
        })
        .collect();
    for id in &ids {
        let t = poll(&mut s, id, "terminal", terminal);
        assert_eq!(t["status"], "failed", "{t}");
        let m = t["error"]["message"].as_str().unwrap_or_default();
        assert!(
            m.contains("`elicitation/create` naming no task")
                && m.contains("2 calls waited")
                && m.contains("cannot tell which one asked"),
            "{t}"
        );
    }
    // Both upstream tasks are cancelled: no result built on the refused question stays.
    let deadline = Instant::now() + TIMEOUT;
    while fake
        .received()
        .iter()
        .filter(|m| m["method"] == "tasks/cancel")
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "{:#?}", fake.received());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Over Streamable HTTP the transport tells what stdio cannot: a question the upstream
/// sends on the response stream of one of the gateway's POSTs belongs to that call
/// (spec, streamable HTTP: "These messages SHOULD relate to the originating client
/// request"), even without related-task `_meta` and with several calls waiting. Two
/// 2026-07-28 calls of the conformance example's `test_elicitation` (a plain upstream
/// call that elicits, without related-task `_meta`) wait at once, each asked its own
/// question (as a multi round-trip `input_required`), each completed with its own answer.
#[test]
fn an_upstream_question_on_a_calls_response_stream_reaches_that_call() {
    let up = crate::gateway_common::ConformanceHttp::start();
    let mut s = Stdio::spawn(&["--upstream-url", up.url.as_str()]);
    let caps = json!({"elicitation": {"form": {}}});
    let mut asked = Vec::new();
    for q in ["Q1", "Q2"] {
        let r = modern(
            &mut s,
            q,
            "tools/call",
            json!({"name": "test_elicitation", "arguments": {"message": q}}),
            caps.clone(),
        );
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        let r = r["result"].clone();
        let (key, req) = r["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(req["method"], "elicitation/create", "{r}");
        assert_eq!(req["params"]["message"], q, "{r}");
        asked.push((q, key.clone(), r["requestState"].clone()));
    }
    for ((q, key, state), answer) in asked.into_iter().zip(["one", "two"]) {
        let r = modern(
            &mut s,
            &format!("{q}-again"),
            "tools/call",
            json!({"name": "test_elicitation", "arguments": {"message": q}, "requestState": state,
                   "inputResponses": {key: {"action": "accept", "content": {"response": answer}}}}),
            caps.clone(),
        );
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        assert_eq!(
            text_of(&r["result"]),
            format!("User response: action=accept, content={{\"response\":\"{answer}\"}}"),
            "{r}"
        );
    }
}
