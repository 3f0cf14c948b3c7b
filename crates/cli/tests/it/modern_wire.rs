//! The 2026-07-28 wire over Streamable HTTP against `mcp-tasks serve`, raw: the codes and
//! statuses of refusals (a capability the client did not declare, an elicitation mode it
//! did not declare, errors a tool raises, rate limits), SSE answers (progress of a direct
//! call, `subscriptions/listen`), what a modern header on a GET, DELETE, notification or
//! response gets, and one task read and answered by both eras under each era's rules.

use serde_json::{Value, json};

use crate::http_common::{Auth, Client, Event, Resp, Server, Sse, start_as};

const EXT: &str = "io.modelcontextprotocol/tasks";

/// A client without a session.
fn client(server: &Server) -> Client {
    Client::new(server)
}

/// POST a 2026-07-28 request of `method` with `params`, the per-request `_meta` declaring
/// `caps` and the headers a conforming client sends.
async fn post(c: &Client, id: &str, method: &str, mut params: Value, caps: Value) -> Resp {
    let meta = params
        .as_object_mut()
        .unwrap()
        .entry("_meta")
        .or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "wire", "version": "0"});
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = name.as_deref() {
        headers.push(("Mcp-Name", n));
    }
    c.post_with(&headers, body.to_string().as_bytes()).await
}

/// The JSON body of `r` (not schema-checked: the 2025-11-25 schema does not know this era).
async fn body(r: Resp) -> Value {
    let b = r.bytes().await;
    serde_json::from_slice(&b).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&b)))
}

/// Every JSON message of an SSE answer, to its end.
async fn events(r: Resp) -> Vec<Value> {
    let mut sse = r.sse();
    sse.rest()
        .await
        .iter()
        .filter_map(|e: &Event| e.data.as_deref())
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

/// The next message of an SSE stream.
async fn next(sse: &mut Sse) -> Value {
    let e = sse.next().await.expect("an event");
    serde_json::from_str(e.data.as_deref().unwrap()).unwrap()
}

/// Modern `tasks/get` until `pred` holds.
async fn poll(c: &Client, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + crate::http_common::TIMEOUT;
    loop {
        let r = post(
            c,
            "get",
            "tasks/get",
            json!({"taskId": id}),
            json!({"extensions": {EXT: {}}}),
        )
        .await;
        let v = body(r).await;
        let t = v["result"].clone();
        if pred(&t) {
            return t;
        }
        assert!(std::time::Instant::now() < deadline, "never: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn terminal(t: &Value) -> bool {
    matches!(
        t["status"].as_str(),
        Some("completed" | "failed" | "cancelled")
    )
}

/// A direct call whose tool needs sampling the request did not declare: 400 with -32021
/// naming `sampling`; a task whose tool needs form elicitation the client did not
/// declare (none, or URL mode only) fails with -32021 naming `elicitation.form`, and is
/// never sent a form.
#[tokio::test]
async fn a_missing_capability_is_32021_with_400_and_fails_a_task_alike() {
    let server = Server::start(&[]);
    let c = client(&server);
    let r = post(
        &c,
        "s",
        "tools/call",
        json!({"name": "summarize", "arguments": {"text": "t"}}),
        json!({}),
    )
    .await;
    assert_eq!(r.status, 400, "{r:?}");
    let v = body(r).await;
    assert_eq!(v["id"], "s", "{v}");
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{v}"
    );
    for (n, caps) in [
        json!({"extensions": {EXT: {}}}),
        json!({"extensions": {EXT: {}}, "elicitation": {"url": {}}}),
    ]
    .into_iter()
    .enumerate()
    {
        let r = post(
            &c,
            &format!("a{n}"),
            "tools/call",
            json!({"name": "ask", "arguments": {"question": "Name?"}}),
            caps,
        )
        .await;
        let v = body(r).await;
        assert_eq!(v["result"]["resultType"], "task", "{v}");
        let id = v["result"]["taskId"].as_str().unwrap().to_owned();
        let t = poll(&c, &id, |t| terminal(t) || t["status"] == "input_required").await;
        assert_eq!(t["status"], "failed", "{t}");
        assert_eq!(t["error"]["code"], -32021, "{t}");
        assert_eq!(
            t["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {"form": {}}}),
            "{t}"
        );
    }
}

/// A tool's JSON-RPC error goes out so that the wire stays valid: -32601 is not a 404
/// (the server does implement `tools/call`), a reserved code or a defined one without
/// its data becomes -32603 with the original in `data.originalCode`; a standard code
/// passes.
#[tokio::test]
async fn errors_a_tool_raises_keep_the_2026_wire_valid() {
    let server = Server::start(&[]);
    let c = client(&server);
    for (code, sent) in [
        (-32601, -32603),
        (-32021, -32603),
        (-32042, -32603),
        (-32003, -32603),
        (-32602, -32602),
    ] {
        let r = post(
            &c,
            "e",
            "tools/call",
            json!({"name": "error", "arguments": {"message": "m", "code": code}}),
            json!({}),
        )
        .await;
        assert_eq!(r.status, 200, "{code}: {r:?}");
        let v = body(r).await;
        assert_eq!(v["error"]["code"], sent, "{v}");
        assert_eq!(v["error"]["message"], "m", "{v}");
        if sent != code {
            assert_eq!(v["error"]["data"]["originalCode"], code, "{v}");
        }
    }
}

/// Past `--rate-limit requests=...` a 2026-07-28 request of a principal is refused with
/// 429, `Retry-After` and -32603 (not -32029, a code this era reserves), `data` naming
/// the limit.
#[tokio::test]
async fn a_rate_limit_refusal_uses_a_code_the_2026_era_allows() {
    let (_server, c) = start_as(Auth::Bearer, &["--rate-limit", "requests=3/h"]);
    let mut refused = None;
    for n in 0..5 {
        let r = post(&c, &format!("r{n}"), "tools/list", json!({}), json!({})).await;
        if r.status != 200 {
            refused = Some(r);
            break;
        }
        body(r).await;
    }
    let r = refused.expect("a refusal past the limit");
    assert_eq!(r.status, 429, "{r:?}");
    assert!(r.header("retry-after").is_some(), "{r:?}");
    let v = body(r).await;
    assert_eq!(v["error"]["code"], -32603, "{v}");
    assert_eq!(v["error"]["data"]["originalCode"], -32029, "{v}");
    assert_eq!(v["error"]["data"]["limit"], "requests", "{v}");
    assert!(
        v["error"]["data"]["retryAfterMs"].as_u64().unwrap() >= 1,
        "{v}"
    );
}

/// A direct call with a `progressToken` whose tool reports progress is answered as an
/// SSE stream: its `notifications/progress`, then the response. Without a token it is
/// one JSON response.
#[tokio::test]
async fn a_direct_call_reporting_progress_is_an_sse_stream() {
    let server = Server::start(&[]);
    let c = client(&server);
    let params = json!({"name": "progress", "arguments": {"steps": 3, "ms": 0}, "_meta": {"progressToken": "p-1"}});
    let r = post(&c, "p", "tools/call", params, json!({})).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.is_sse(), "{r:?}");
    let msgs = events(r).await;
    let progress: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{msgs:?}");
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], "p-1", "{p}");
        assert_eq!(p["params"]["progress"], i + 1, "{p}");
    }
    let last = msgs.last().unwrap();
    assert_eq!(last["id"], "p", "the response ends the stream: {msgs:?}");
    assert_eq!(last["result"]["content"][0]["text"], "done 3", "{last}");
    let r = post(
        &c,
        "q",
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 2, "ms": 0}}),
        json!({}),
    )
    .await;
    assert!(r.is_json(), "{r:?}");
    assert_eq!(body(r).await["result"]["content"][0]["text"], "done 2");
}

/// `subscriptions/listen` over HTTP: an SSE stream whose first message acknowledges the
/// subscription, then `notifications/tasks` for the watched task until it ends, then the
/// completion result; every message carries the subscription id.
#[tokio::test]
async fn subscriptions_listen_is_served_over_http() {
    let server = Server::start(&[]);
    let c = client(&server);
    let ext = json!({"extensions": {EXT: {}}});
    let r = post(
        &c,
        "t",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Name?"}}),
        json!({"extensions": {EXT: {}}, "elicitation": {}}),
    )
    .await;
    let id = body(r).await["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = post(
        &c,
        "l",
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [id]}}),
        ext.clone(),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.is_sse(), "{r:?}");
    let mut sse = r.sse();
    let ack = next(&mut sse).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "l",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    // The task asks: its status comes as a notification, then it is cancelled.
    let n = next(&mut sse).await;
    assert_eq!(n["method"], "notifications/tasks", "{n}");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "l",
        "{n}"
    );
    assert_eq!(n["params"]["taskId"], id, "{n}");
    body(post(&c, "c", "tasks/cancel", json!({"taskId": id}), ext).await).await;
    let mut last = n;
    while last.get("id").is_none() {
        last = next(&mut sse).await;
    }
    assert_eq!(last["id"], "l", "{last}");
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "l",
        "{last}"
    );
}

/// A request without `_meta.protocolVersion` but with the 2026-07-28 header: -32602 and
/// 400. GET and DELETE naming 2026-07-28: 405 (that revision has neither). A POSTed
/// notification naming it: 202; a POSTed response: 400 with -32600.
#[tokio::test]
async fn the_2026_header_on_what_is_not_a_request_gets_its_own_answer() {
    let server = Server::start(&[]);
    let c = client(&server);
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    for params in [
        json!({}),
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
    ] {
        let msg = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": params});
        let r = c.post_with(&headers, msg.to_string().as_bytes()).await;
        assert_eq!(r.status, 400, "{r:?}");
        let v = body(r).await;
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["id"], 9, "{v}");
    }
    let mut modern = client(&server);
    modern.protocol = Some("2026-07-28".into());
    for r in [modern.get(None).await, modern.delete().await] {
        assert_eq!(r.status, 405, "{r:?}");
        assert_eq!(r.header("allow"), Some("POST"), "{r:?}");
        let v = body(r).await;
        assert!(
            !v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unsupported"),
            "{v}"
        );
    }
    let n =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let r = modern
        .post_with(
            &[("Mcp-Method", "notifications/cancelled")],
            n.to_string().as_bytes(),
        )
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let a = json!({"jsonrpc": "2.0", "id": 4, "result": {}});
    let r = modern.post_with(&[], a.to_string().as_bytes()).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(body(r).await["error"]["code"], -32600);
}

/// Without authentication, one task read and answered by both eras, each by its rules:
/// an `isError` task created in 2026-07-28 reads `failed` to a 2025-11-25 client and
/// `completed` to a 2026-07-28 one; a 2026-07-28 task's question reaches a 2025-11-25
/// `tasks/result`, which gets the answer; a 2025-11-25 task's question cannot be answered
/// by a 2026-07-28 `tasks/update` (the task keeps its session's binding).
#[tokio::test]
async fn one_task_reads_and_binds_by_the_rules_of_each_era() {
    let server = Server::start(&["--task-after", "100ms"]);
    let c = client(&server);
    let ext = json!({"extensions": {EXT: {}}, "elicitation": {}});
    let mut legacy = client(&server);
    legacy.initialize().await;

    // isError, created in 2026-07-28 (a failure after 400 ms outlives `--task-after`).
    let r = post(
        &c,
        "f",
        "tools/call",
        json!({"name": "fail", "arguments": {"message": "bad", "ms": 400}}),
        ext.clone(),
    )
    .await;
    let id = body(r).await["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let modern_view = poll(&c, &id, terminal).await;
    assert_eq!(modern_view["status"], "completed", "{modern_view}");
    assert_eq!(modern_view["result"]["isError"], true, "{modern_view}");
    let legacy_view = legacy.task(&id).await;
    assert_eq!(legacy_view["result"]["status"], "failed", "{legacy_view}");

    // A 2026-07-28 task's question, on a 2025-11-25 tasks/result.
    let r = post(
        &c,
        "a",
        "tools/call",
        json!({"name": "ask", "arguments": {"question": "Name?"}}),
        ext.clone(),
    )
    .await;
    let id = body(r).await["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    poll(&c, &id, |t| t["status"] == "input_required").await;
    let (_, resp) = legacy.request("tasks/result", json!({"taskId": id})).await;
    let mut sse = resp.sse();
    let mut seen = Vec::new();
    let ask = sse
        .next_non_notification(&mut seen)
        .await
        .expect("the task's question");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "Ada"}}});
    assert_eq!(legacy.post(&answer).await.status, 202);
    let result = sse
        .next_non_notification(&mut seen)
        .await
        .expect("the task's result");
    assert_eq!(result["result"]["content"][0]["text"], "Ada", "{result}");

    // A 2025-11-25 task's question: a 2026-07-28 tasks/update cannot answer it.
    let id = legacy.start_task("ask", json!({"question": "Mine?"})).await;
    let t = poll(&c, &id, |t| t["status"] == "input_required").await;
    let key = t["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let r = post(&c, "u", "tasks/update", json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"answer": "x"}}}}), ext).await;
    let v = body(r).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-11-25 session"),
        "{v}"
    );
    let t = poll(&c, &id, |_| true).await;
    assert_eq!(
        t["status"], "input_required",
        "still waiting for its own session: {t}"
    );
}
