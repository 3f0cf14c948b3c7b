//! Gateway: everything it does not interpret crosses in both directions unchanged
//! (golden round trips through a fake upstream that logs what it receives).

use crate::common;
use crate::gateway_common;

use std::time::Duration;

use common::Stdio;
use gateway_common::Fake;
use serde_json::{Value, json};

/// Send a request without the harness's schema check of its result (the fake upstream
/// echoes, which no schema describes); return the whole response.
fn raw_call(s: &mut Stdio, method: &str, params: Value) -> Value {
    let id = raw_start(s, method, params);
    s.response_to(&id)
}

fn raw_start(s: &mut Stdio, method: &str, params: Value) -> Value {
    let id = s.next_id();
    s.send_raw(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
    );
    id
}

fn raw_ok(s: &mut Stdio, method: &str, params: Value) -> Value {
    let r = raw_call(s, method, params);
    r.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{method} failed: {r}"))
}

#[test]
fn initialize_keeps_the_upstream_result_but_for_version_and_tasks() {
    let fake = Fake::new("init", false);
    let mut s = common::Stdio::spawn(&fake.args().iter().map(String::as_str).collect::<Vec<_>>());
    let r = s.initialize_with(
        "2025-11-25",
        json!({"elicitation": {"form": {}}, "roots": {"listChanged": true}, "tasks": {"list": {}}, "x-client": 1}),
    );
    assert_eq!(
        r,
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "tools": {"listChanged": true},
                "resources": {"subscribe": true},
                "logging": {},
                "x-fake": {"deep": [1, {"two": 2}]},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            },
            "serverInfo": {"name": "fake-upstream", "version": "1.0.0", "title": "Fake"},
            "instructions": "fake instructions",
            "x-extra": true
        })
    );
    // The upstream saw the client's own initialize, without its `tasks` capability.
    let init = fake.wait_received("initialize", |m| m["method"] == "initialize");
    assert_eq!(
        init["params"],
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}, "roots": {"listChanged": true}, "x-client": 1}, "clientInfo": {"name": "e2e", "version": "0"}})
    );
    fake.wait_received("notifications/initialized", |m| {
        m["method"] == "notifications/initialized"
    });
}

#[test]
fn requests_and_their_answers_cross_unchanged() {
    let fake = Fake::new("requests", false);
    let mut s = fake.gateway(&[]);
    let cases = [
        (
            "resources/list",
            json!({"cursor": "c1", "_meta": {"progressToken": 7, "x": [1]}}),
        ),
        (
            "resources/read",
            json!({"uri": "test://a", "future": {"a": null}}),
        ),
        ("resources/subscribe", json!({"uri": "test://a"})),
        ("prompts/list", json!({})),
        (
            "prompts/get",
            json!({"name": "p", "arguments": {"k": "v"}, "_meta": {"m": true}}),
        ),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "k", "value": "v"}}),
        ),
        ("logging/setLevel", json!({"level": "debug"})),
        (
            "x/unknown-method",
            json!({"deep": {"nested": [1, 2, {"three": 3.5}]}, "_meta": {"io.example/k": "v"}}),
        ),
    ];
    for (method, params) in cases {
        let r = raw_ok(&mut s, method, params.clone());
        // The fake answers {method, params, _meta}: the gateway passed both ways unchanged.
        assert_eq!(r["method"], method);
        assert_eq!(r["params"], params, "{method}");
        assert_eq!(
            r["_meta"],
            params.get("_meta").cloned().unwrap_or(Value::Null)
        );
        let got = fake.wait_received(method, |m| m["method"] == method);
        assert_eq!(got["params"], params, "{method} upstream");
    }
    // ping goes upstream too.
    assert_eq!(raw_ok(&mut s, "ping", json!({}))["method"], "ping");
}

#[test]
fn upstream_errors_cross_unchanged() {
    let fake = Fake::new("errors", false);
    let mut s = fake.gateway(&[]);
    let e = s.err("tools/call", json!({"name": "boom", "arguments": {}}));
    assert_eq!(
        e,
        json!({"code": -32042, "message": "boom", "data": {"why": "asked to fail"}})
    );
    let e = s.err("tools/call", json!({"name": "no-such-tool"}));
    assert_eq!(e["code"], -32602);
}

#[test]
fn notifications_cross_unchanged_both_ways() {
    let fake = Fake::new("notifications", false);
    let mut s = fake.gateway(&[]);
    let emitted = [
        (
            "notifications/resources/updated",
            json!({"uri": "test://a", "_meta": {"k": 1}, "future": "x"}),
        ),
        ("notifications/resources/list_changed", json!({})),
        (
            "notifications/prompts/list_changed",
            json!({"_meta": {"why": "test"}}),
        ),
        (
            "notifications/message",
            json!({"level": "info", "logger": "fake", "data": {"a": [1]}}),
        ),
        ("x/custom", json!({"anything": [true, null]})),
    ];
    for (method, params) in &emitted {
        raw_ok(
            &mut s,
            "x/emit",
            json!({"method": method, "params": params}),
        );
        let m = s.wait_for(method, |m| m["method"] == *method);
        assert_eq!(
            m,
            json!({"jsonrpc": "2.0", "method": method, "params": params})
        );
    }
    // Downstream -> upstream.
    for (method, params) in [
        ("notifications/roots/list_changed", json!({})),
        (
            "x/client-note",
            json!({"z": {"y": [1, "2"]}, "_meta": {"m": 0}}),
        ),
    ] {
        s.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
        let got = fake.wait_received(method, |m| m["method"] == method);
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "method": method, "params": params})
        );
    }
}

#[test]
fn upstream_requests_reach_the_client_and_its_answers_go_back() {
    let fake = Fake::new("server-requests", false);
    let mut s = fake.gateway(&[]);
    let params = json!({"_meta": {"k": "v"}, "future": 1});
    let id = raw_start(
        &mut s,
        "x/ask-client",
        json!({"method": "roots/list", "params": params}),
    );
    let req = s.wait_for("roots/list", |m| m["method"] == "roots/list");
    assert_eq!(req["params"], params);
    let answer = json!({"roots": [{"uri": "file:///w", "name": "w"}], "_meta": {"a": 1}});
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": answer}));
    let r = s.response_to(&id);
    assert_eq!(r["result"]["result"], answer);
    // An error answer crosses too.
    let id = raw_start(
        &mut s,
        "x/ask-client",
        json!({"method": "x/q", "params": {}}),
    );
    let req = s.wait_for("x/q", |m| m["method"] == "x/q");
    let err = json!({"code": -32601, "message": "nope", "data": [1]});
    s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "error": err}));
    assert_eq!(s.response_to(&id)["result"]["error"], err);
}

#[test]
fn a_cancelled_forwarded_request_is_cancelled_upstream() {
    let fake = Fake::new("cancel-forwarded", false);
    let mut s = fake.gateway(&[]);
    let id = s.start(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 60000}}),
    );
    let up = fake.wait_received("the slow call", |m| m["params"]["name"] == "slow");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "no"}}));
    let c = fake.wait_received("notifications/cancelled", |m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(c["params"]["requestId"], up["id"]);
    // No response to a cancelled request.
    let late = s.drain_for(Duration::from_millis(300));
    assert!(late.iter().all(|m| m.get("id") != Some(&id)), "{late:?}");
}
