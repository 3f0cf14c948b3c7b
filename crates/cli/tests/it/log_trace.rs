//! A W3C trace context sent with a request (`_meta.traceparent` / `tracestate`, the
//! 2026-07-28 convention, or over HTTP the `traceparent` header) is recorded in the
//! request's span: with `--log-format json` every log line of the request carries
//! `trace_id` and `parent_span_id`. A malformed one is ignored, never an error.

use crate::http_common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use http_common::{Client, Server};
use serde_json::{Value, json};

const TP_META: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
const TP_HEADER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-00";
const TP_BAD: &str = "00-00000000000000000000000000000000-b7ad6b7169203331-01";

/// A field of the request span a JSON log line was emitted in (`span` or `spans`).
fn span_field<'a>(line: &'a Value, key: &str) -> Option<&'a str> {
    line["span"][key].as_str().or_else(|| {
        line["spans"]
            .as_array()?
            .iter()
            .find_map(|s| s[key].as_str())
    })
}

/// The `task created` audit line of task `id` among `lines`.
fn created<'a>(lines: &'a [Value], id: &str) -> Option<&'a Value> {
    lines
        .iter()
        .find(|l| l["fields"]["message"] == "task created" && l["fields"]["task_id"] == id)
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_context_in_meta_or_header_lands_in_the_request_log_lines() {
    let server = Server::start_env(&["--log-format", "json"], &[("RUST_LOG", "info")]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let task = |m: &Value| m["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    let in_meta = c
        .rpc(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": {},
                "_meta": {"traceparent": TP_META, "tracestate": "congo=t61rcWkgMzE"}}),
        )
        .await;
    let in_meta = task(&in_meta);
    let body = json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 1}, "task": {}}});
    let r = c
        .post_with(&[("traceparent", TP_HEADER)], body.to_string().as_bytes())
        .await;
    assert_eq!(r.status, 200);
    let answer = if r.is_sse() {
        let events = r.sse().until_response().await;
        http_common::responses(&events).pop().unwrap()
    } else {
        r.json().await
    };
    let in_header = task(&answer);
    // A malformed trace context is ignored: the request is served as usual.
    let bad = c
        .rpc(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": {},
                "_meta": {"traceparent": TP_BAD}}),
        )
        .await;
    let bad = task(&bad);
    let deadline = std::time::Instant::now() + http_common::TIMEOUT;
    let lines = loop {
        let lines = json_lines(&server.stderr());
        if [&in_meta, &in_header, &bad]
            .iter()
            .all(|id| created(&lines, id).is_some())
        {
            break lines;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "missing `task created` lines: {lines:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let l = created(&lines, &in_meta).unwrap();
    assert_eq!(
        span_field(l, "trace_id"),
        Some("0af7651916cd43dd8448eb211c80319c"),
        "{l}"
    );
    assert_eq!(
        span_field(l, "parent_span_id"),
        Some("00f067aa0ba902b7"),
        "{l}"
    );
    assert_eq!(
        span_field(l, "tracestate"),
        Some("congo=t61rcWkgMzE"),
        "{l}"
    );
    assert_eq!(span_field(l, "method"), Some("tools/call"), "{l}");
    assert_eq!(span_field(l, "era"), Some("2025-11-25"), "{l}");
    let l = created(&lines, &in_header).unwrap();
    assert_eq!(
        span_field(l, "trace_id"),
        Some("4bf92f3577b34da6a3ce929d0e0e4736"),
        "{l}"
    );
    assert_eq!(
        span_field(l, "parent_span_id"),
        Some("b7ad6b7169203331"),
        "{l}"
    );
    let l = created(&lines, &bad).unwrap();
    assert_eq!(span_field(l, "trace_id"), None, "{l}");
    assert_eq!(span_field(l, "method"), Some("tools/call"), "{l}");
}

/// Over stdio, a 2026-07-28 request's `_meta.traceparent` is recorded the same way.
#[test]
fn a_modern_stdio_request_carries_its_trace_id_into_its_log_lines() {
    let mut child = Command::new(http_common::bin())
        .args([
            "serve",
            "--stdio",
            "--store",
            "memory",
            "--log-format",
            "json",
            "--task-after",
            "50ms",
        ])
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut meta = mcp_tasks_testkit::wire::modern_meta(
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    );
    meta["traceparent"] = json!(TP_META);
    let req = json!({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 60000}, "_meta": meta}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{req}").unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    let id = answer["result"]["taskId"].as_str().unwrap().to_owned();
    drop(stdin);
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let lines = json_lines(&String::from_utf8_lossy(&output.stderr));
    let l = created(&lines, &id).unwrap_or_else(|| panic!("no `task created`: {lines:#?}"));
    assert_eq!(
        span_field(l, "trace_id"),
        Some("0af7651916cd43dd8448eb211c80319c"),
        "{l}"
    );
    assert_eq!(span_field(l, "era"), Some("2026-07-28"), "{l}");
}
