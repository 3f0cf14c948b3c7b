//! `GET /metrics` of a gateway (issue 19): its stdio upstream killed mid-call and started
//! again counts one restart, and every call to the upstream (its `initialize`, the
//! `tools/list` and `tools/call` it forwards) is timed by method.

use crate::gateway_common::Fake;
use crate::http_common::{Client, Server, TIMEOUT, responses};
use crate::metrics::{parse, scrape, value, wait_metric};

use std::time::{Duration, Instant};

use serde_json::json;

/// A `tools/call`'s answer, as JSON or at the end of an SSE stream (a slow upstream call
/// is answered on a stream).
async fn call(c: &mut Client, params: serde_json::Value) -> serde_json::Value {
    let (_, r) = c.request("tools/call", params).await;
    assert_eq!(r.status, 200, "{r:?}");
    if r.is_sse() {
        let events = r.sse().until_response().await;
        responses(&events).pop().expect("an answer on the stream")
    } else {
        r.json().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_restarts_and_call_latency_are_counted() {
    let fake = Fake::new("metrics-restart", false);
    let args = fake.args();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&refs);
    let mut c = Client::new(&server);
    c.initialize().await;
    let r = call(
        &mut c,
        json!({"name": "echo", "arguments": {"text": "one"}}),
    )
    .await;
    assert_eq!(r["result"]["content"][0]["text"], "one", "{r}");
    // The upstream exits mid-call: the call fails, the lane starts it again (after about
    // a second) and the next call is answered by the new process.
    let r = call(&mut c, json!({"name": "die", "arguments": {}})).await;
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );
    let s = wait_metric(
        server.addr,
        "mcp_tasks_gateway_upstream_restarts_total",
        &[],
        1.0,
    )
    .await;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let r = call(
            &mut c,
            json!({"name": "echo", "arguments": {"text": "two"}}),
        )
        .await;
        if r["result"]["content"][0]["text"] == "two" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream never came back: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let h = "mcp_tasks_gateway_upstream_call_duration_seconds";
    assert!(
        value(&s, h, &[("method", "initialize"), ("outcome", "ok")]) >= 1.0,
        "{s:?}"
    );
    let (_, _, text) = scrape(server.addr, None).await;
    let s = parse(&text);
    assert_eq!(
        value(&s, "mcp_tasks_gateway_upstream_restarts_total", &[]),
        1.0,
        "{text}"
    );
    // Two upstream processes, each initialized once.
    assert_eq!(
        value(&s, h, &[("method", "initialize"), ("outcome", "ok")]),
        2.0,
        "{text}"
    );
    assert!(
        value(&s, h, &[("method", "tools/call"), ("outcome", "ok")]) >= 2.0,
        "{text}"
    );
    assert!(
        value(&s, h, &[("method", "tools/list"), ("outcome", "ok")]) >= 2.0,
        "{text}"
    );
}
