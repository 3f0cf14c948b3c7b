//! Gateway: 2026-07-28 clients in front of a 2025-11-25 upstream get SEP-2663 tasks from
//! our engine (docs/adr/0005-two-generations.md, "The gateway in 2026-07-28"), over stdio
//! (raw JSON, each modern response validated against the 2026-07-28 schema) and over
//! HTTP (our client in `Revision::V2026_07_28`), while 2025-11-25 clients of the same gateway
//! go on as before.

use std::time::{Duration, Instant};

use mcp_tasks_client::{
    CallOptions, Client, ClientConfig, HttpClientConfig, Revision, RevisionChoice, Started,
    TaskStatus,
};
use mcp_tasks_testkit::schema::MODERN;
use mcp_tasks_testkit::wire::modern_meta;
use serde_json::{Value, json};

use crate::client_support::{HttpServer, answering};
use crate::common::{Stdio, TIMEOUT, bin, text_of};
use crate::gateway_common::Fake;

/// The tasks extension and form elicitation.
pub(crate) fn ext() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}})
}

/// Send a modern request and return its response, validated against 2026-07-28.
pub(crate) fn modern(
    s: &mut Stdio,
    id: &str,
    method: &str,
    mut params: Value,
    caps: Value,
) -> Value {
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

/// A modern `tools/call` of `name` with the extension: its result.
pub(crate) fn call(s: &mut Stdio, id: &str, name: &str, args: Value) -> Value {
    let r = modern(
        s,
        id,
        "tools/call",
        json!({"name": name, "arguments": args}),
        ext(),
    );
    r.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: {r}"))
}

/// Modern `tasks/get` of `id` until `pred` holds.
pub(crate) fn poll(s: &mut Stdio, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    let mut n = 0;
    loop {
        n += 1;
        let r = modern(
            s,
            &format!("get-{id}-{n}"),
            "tasks/get",
            json!({"taskId": id}),
            ext(),
        );
        let t = r["result"].clone();
        if pred(&t) {
            return t;
        }
        assert!(Instant::now() < deadline, "task never {what}: {t}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn terminal(t: &Value) -> bool {
    matches!(
        t["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

/// A call that becomes a task: its id.
pub(crate) fn task_of(result: &Value) -> String {
    assert_eq!(result["resultType"], "task", "{result}");
    result["taskId"].as_str().unwrap().to_owned()
}

/// A gateway on stdio in front of the fake, not initialized.
pub(crate) fn modern_gateway(fake: &Fake, extra: &[&str]) -> Stdio {
    let mut args = fake.args();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    Stdio::spawn(&refs)
}

#[test]
fn a_modern_client_gets_tasks_in_front_of_a_task_less_upstream() {
    let fake = Fake::new("modern-stdio", false);
    let mut s = modern_gateway(
        &fake,
        &[
            "--task-after",
            "500ms",
            "--tool-task-support",
            "boom=required",
        ],
    );

    let d = modern(&mut s, "d", "server/discover", json!({}), json!({}));
    let d = &d["result"];
    assert!(
        d["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{d}"
    );
    assert_eq!(
        d["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );

    // The upstream's tools, without `execution` (the server decides per request).
    let list = modern(&mut s, "l", "tools/list", json!({}), ext());
    let tools = list["result"]["tools"].as_array().unwrap().clone();
    let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["echo", "slow", "die", "ask", "steps", "boom", "big"],
        "{list}"
    );
    assert_eq!(
        tools[0],
        json!({"name": "echo", "description": "echo", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}, "_meta": {"x/k": 1}})
    );
    assert_eq!(list["result"]["resultType"], "complete");

    // A quick call answers directly; the upstream got a plain 2025-11-25 call, without
    // the modern `_meta`, on a connection the gateway initialized itself.
    let r = call(&mut s, "e", "echo", json!({"text": "hi"}));
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(text_of(&r), "hi");
    let calls: Vec<_> = fake
        .received()
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(
        calls[0]["params"],
        json!({"name": "echo", "arguments": {"text": "hi"}})
    );
    let init = fake.wait_received("initialize", |m| m["method"] == "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "mcp-tasks-gateway");

    // Past --task-after a call becomes a task and completes with the upstream's result.
    let id = task_of(&call(&mut s, "s", "slow", json!({"ms": 1200})));
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(text_of(&t["result"]), "slept 1200");

    // A JSON-RPC error of the upstream: `failed`, with that error inline; its code
    // (-32042, which 2026-07-28 implementations "MUST NOT emit") goes out as -32603 with
    // the original code and data.
    let id = task_of(&call(&mut s, "b", "boom", json!({})));
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert_eq!(t["error"]["message"], "boom");
    assert_eq!(
        t["error"]["data"],
        json!({"why": "asked to fail", "originalCode": -32042})
    );

    // Cancelled: the upstream call is cancelled with notifications/cancelled.
    let id = task_of(&call(&mut s, "c", "slow", json!({"ms": 60000})));
    let ack = modern(
        &mut s,
        "cancel",
        "tasks/cancel",
        json!({"taskId": id}),
        ext(),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let t = poll(&mut s, &id, "cancelled", terminal);
    assert_eq!(t["status"], "cancelled", "{t}");
    let slow_call = fake.wait_received("the long slow call", |m| {
        m["method"] == "tools/call" && m["params"]["arguments"]["ms"] == 60000
    });
    fake.wait_received("notifications/cancelled", |m| {
        m["method"] == "notifications/cancelled" && m["params"]["requestId"] == slow_call["id"]
    });

    // The upstream elicits during a call: the question becomes the task's inputRequests,
    // answered with tasks/update.
    let id = task_of(&call(&mut s, "a", "ask", json!({"question": "Name?"})));
    let t = poll(&mut s, &id, "input_required", |t| {
        t["status"] == "input_required"
    });
    let requests = t["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{t}");
    let (key, req) = requests.iter().next().unwrap();
    assert_eq!(req["method"], "elicitation/create", "{t}");
    assert_eq!(req["params"]["message"], "Name?");
    let key = key.clone();
    let ack = modern(
        &mut s,
        "u",
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"answer": "Ada"}}}}),
        ext(),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "completed", "{t}");
    assert!(text_of(&t["result"]).contains("Ada"), "{t}");

    // Without the extension the same question comes as a multi round-trip result.
    let caps = json!({"elicitation": {"form": {}}});
    let r = modern(
        &mut s,
        "m1",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Again?"}}),
        caps.clone(),
    );
    let r = &r["result"];
    assert_eq!(r["resultType"], "input_required", "{r}");
    let (key, _) = r["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let r = modern(
        &mut s,
        "m2",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Again?"}, "requestState": r["requestState"],
               "inputResponses": {key.clone(): {"action": "accept", "content": {"answer": "Bo"}}}}),
        caps,
    );
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert!(text_of(&r["result"]).contains("Bo"), "{r}");

    // A 2025-11-25 client on the same process: its own session and lane, as before.
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "legacy"}}),
    );
    assert_eq!(text_of(&r), "legacy");
    let task = s.create_task("slow", json!({"ms": 10}));
    let id = task["taskId"].as_str().unwrap();
    assert_eq!(
        crate::gateway_common::until_terminal(&mut s, id)["status"],
        "completed"
    );
    let inits = fake
        .received()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!(
        inits, 2,
        "one lane for modern requests, one for the session"
    );
}

/// `mcp-tasks serve` (our own server, with tasks) as the 2025-11-25 upstream: `isError`
/// ends `completed` in this era, and a `required` tool runs as an upstream task whose
/// question becomes our task's inputRequests.
#[test]
fn is_error_completes_and_upstream_tasks_are_followed() {
    let upstream = format!("{} serve --stdio --store memory", bin());
    let mut s = Stdio::spawn(&["--upstream-cmd", &upstream, "--task-after", "500ms"]);

    let id = task_of(&call(
        &mut s,
        "f",
        "fail",
        json!({"message": "bad input", "ms": 1000}),
    ));
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(t["result"]["isError"], true, "{t}");
    assert_eq!(text_of(&t["result"]), "bad input");

    let id = task_of(&call(
        &mut s,
        "e",
        "error",
        json!({"message": "nope", "code": -31050, "ms": 1000}),
    ));
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["code"], -31050, "{t}");

    // `ask` is `required` upstream: an upstream task, its question relayed to us.
    let id = task_of(&call(&mut s, "a", "ask", json!({"question": "Colour?"})));
    let t = poll(&mut s, &id, "input_required", |t| {
        t["status"] == "input_required"
    });
    let key = t["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    modern(
        &mut s,
        "u",
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"answer": "red"}}}}),
        ext(),
    );
    let t = poll(&mut s, &id, "terminal", terminal);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(text_of(&t["result"]), "red");
}

/// The modern lane counts against `--max-upstreams`: past it a modern request gets a
/// precise error, and the gateway goes on serving.
#[test]
fn the_modern_lane_counts_against_max_upstreams() {
    let fake = Fake::new("modern-max", false);
    let mut s = fake.gateway(&["--max-upstreams", "1"]);
    let r = modern(&mut s, "l", "tools/list", json!({}), ext());
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("maximum of 1 upstream connections"), "{msg}");
    // The legacy session still works.
    let r = s.ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "ok"}}),
    );
    assert_eq!(text_of(&r), "ok");
}

#[tokio::test]
async fn our_client_in_2026_07_28_over_http_through_the_gateway() {
    let fake = Fake::new("modern-http", false);
    let mut args = fake.args();
    args.extend(
        [
            "--task-after",
            "500ms",
            "--tool-task-support",
            "boom=required",
        ]
        .map(str::to_owned),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = HttpServer::start(&refs);

    // Auto finds the gateway modern now.
    let config: ClientConfig = answering().with_protocol(RevisionChoice::Auto);
    let c = Client::connect_http(HttpClientConfig::new(&srv.url), config)
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!(c.http_session().unwrap().session_id, None);

    let r = c.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r.text(), "hi");
    // A task that completes, one answered through inputRequests.
    let r = c.call_tool("slow", json!({"ms": 1200})).await.unwrap();
    assert_eq!(r.text(), "slept 1200");
    let r = c
        .call_tool("ask", json!({"question": "Name?"}))
        .await
        .unwrap();
    assert!(r.text().contains("42"), "{}", r.text());
    // A JSON-RPC error of the upstream: a failed task, its error inline.
    let started = c
        .start_call("boom", json!({}), &CallOptions::default())
        .await
        .unwrap();
    let Started::Task(task) = started else {
        panic!("not a task: {started:?}")
    };
    assert_eq!(task.wait().await.unwrap().status, TaskStatus::Failed);
    let e = task.result().await.unwrap_err();
    // -32042 is reserved in 2026-07-28: -32603 with the original code in `data`.
    let rpc = e.rpc_error().unwrap();
    assert_eq!(rpc.code, -32603, "{e}");
    assert_eq!(rpc.data.as_ref().unwrap()["originalCode"], -32042, "{e}");

    // Cancelled: the upstream sees notifications/cancelled.
    let started = c
        .start_call("slow", json!({"ms": 60000}), &CallOptions::default())
        .await
        .unwrap();
    let Started::Task(task) = started else {
        panic!("not a task: {started:?}")
    };
    task.cancel().await.unwrap();
    let t = task.wait().await.unwrap();
    assert_eq!(t.status, TaskStatus::Cancelled);
    let slow_call = fake.wait_received("the long slow call", |m| {
        m["method"] == "tools/call" && m["params"]["arguments"]["ms"] == 60000
    });
    fake.wait_received("notifications/cancelled", |m| {
        m["method"] == "notifications/cancelled" && m["params"]["requestId"] == slow_call["id"]
    });
    // One upstream connection served every modern request.
    let inits = fake
        .received()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!(inits, 1);
    c.close().await;

    // A 2025-11-25 client of the same gateway.
    let c = Client::connect_http(
        HttpClientConfig::new(&srv.url),
        answering().with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25)),
    )
    .await
    .unwrap();
    assert_eq!(c.revision(), Revision::V2025_11_25);
    let r = c.call_tool("echo", json!({"text": "old"})).await.unwrap();
    assert_eq!(r.text(), "old");
    c.close().await;
}

/// Issue 31: resources, prompts and completion pass through for 2026-07-28 clients as for
/// 2025-11-25 ones: a modern client in front of the conformance example (over stdio) lists
/// and reads resources and templates, lists and gets prompts, and completes an argument;
/// each result valid 2026-07-28 (`complete`, and the cacheable ones with `ttlMs` 0 and
/// `cacheScope` `private`: the upstream gives no hint); the upstream's own errors come
/// back as they are.
#[test]
fn resources_prompts_and_completion_pass_through_for_2026_07_28_clients() {
    let example = crate::gateway_common::conformance_example();
    let mut s = Stdio::spawn(&["--upstream-cmd", &format!("{} --stdio", example.display())]);
    let caps = json!({});
    // `server/discover` declares what passes through (without `subscribe` and
    // `listChanged`, whose 2026-07-28 form the gateway does not relay).
    let d = modern(&mut s, "d", "server/discover", json!({}), caps.clone());
    let declared = &d["result"]["capabilities"];
    assert_eq!(declared["resources"], json!({}), "{d}");
    assert_eq!(declared["prompts"], json!({}), "{d}");
    assert_eq!(declared["completions"], json!({}), "{d}");
    let ok = |s: &mut Stdio, id: &str, method: &str, params: Value| {
        let r = modern(s, id, method, params, caps.clone());
        let result = r.get("result").cloned().unwrap_or_else(|| panic!("{r}"));
        assert_eq!(result["resultType"], "complete", "{r}");
        result
    };
    for (method, key) in [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ] {
        let r = ok(&mut s, method, method, json!({}));
        assert!(!r[key].as_array().unwrap().is_empty(), "{r}");
        assert_eq!(r["ttlMs"], 0, "{r}");
        assert_eq!(r["cacheScope"], "private", "{r}");
    }
    let r = ok(
        &mut s,
        "read",
        "resources/read",
        json!({"uri": "test://static-text"}),
    );
    assert_eq!(
        r["contents"][0]["text"], "This is the content of the static text resource.",
        "{r}"
    );
    let r = ok(
        &mut s,
        "get",
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
    );
    assert_eq!(
        r["messages"][0]["content"]["text"], "Prompt with arguments: arg1='a', arg2='b'",
        "{r}"
    );
    let r = ok(
        &mut s,
        "complete",
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg1", "value": "par"}}),
    );
    assert_eq!(
        r["completion"]["values"],
        json!(["paris", "park", "party"]),
        "{r}"
    );
    // The upstream's own error, unchanged.
    let r = modern(
        &mut s,
        "missing",
        "resources/read",
        json!({"uri": "test://no-such-resource"}),
        caps.clone(),
    );
    assert!(r.get("error").is_some(), "{r}");
}
