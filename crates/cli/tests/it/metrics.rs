//! `GET /metrics` (issue 19): the numbers after a scripted workload, the whole text read
//! by a real Prometheus parser (`prometheus-parse`), who may read it (401/403/200 with
//! `--metrics-principal`, its own address with `--metrics-listen`, 404 with
//! `--no-metrics`), and no secret in it.
//!
//! Spec (security): receivers SHOULD "Implement monitoring and alerting for resource
//! usage" and "Monitor for suspicious patterns (e.g., many failed task lookups, excessive
//! polling)".

use crate::http_common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_common::{Client, Server, TIMEOUT, TOKENS_ENV, send};
use prometheus_parse::{LineInfo, Scrape, Value as PromValue};
use serde_json::json;

/// `GET /metrics` on `addr` with `token`: status, content type, body.
pub(crate) async fn scrape(addr: SocketAddr, token: Option<&str>) -> (u16, String, String) {
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {t}")));
    }
    let r = send(addr, "GET", "/metrics", &headers, b"").await;
    let status = r.status;
    let ct = r.content_type().to_owned();
    let body = String::from_utf8(r.bytes().await).unwrap();
    (status, ct, body)
}

/// The whole text through the parser: every line is a HELP, TYPE or sample line (or one
/// of the OpenMetrics `# UNIT` / `# EOF` lines), and the samples as parsed.
pub(crate) fn parse(text: &str) -> Scrape {
    assert!(
        text.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF:\n{text}"
    );
    for line in text.lines() {
        let ok = !matches!(LineInfo::parse(line), LineInfo::Ignored)
            || line.starts_with("# UNIT ")
            || line == "# EOF";
        assert!(ok, "a line the Prometheus parser does not read: {line:?}");
    }
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parses")
}

/// The value of sample `metric` whose labels include `labels` (counters and gauges), or
/// the observation count of such a histogram; 0 when absent.
pub(crate) fn value(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<_> = s
        .samples
        .iter()
        .filter(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(*v)))
        .collect();
    assert!(
        found.len() <= 1,
        "{metric} {labels:?} is ambiguous: {found:?}"
    );
    found.first().map_or(0.0, |x| match &x.value {
        PromValue::Counter(v) | PromValue::Gauge(v) | PromValue::Untyped(v) => *v,
        PromValue::Histogram(b) => b.iter().map(|c| c.count).fold(0.0, f64::max),
        PromValue::Summary(_) => panic!("no summaries here"),
    })
}

pub(crate) async fn wait_metric(
    addr: SocketAddr,
    metric: &str,
    labels: &[(&str, &str)],
    want: f64,
) -> Scrape {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let (status, _, body) = scrape(addr, None).await;
        assert_eq!(status, 200, "{body}");
        let s = parse(&body);
        if value(&s, metric, labels) == want {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{metric} {labels:?} never reached {want}:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_scripted_workload_shows_in_the_numbers() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    // Two that complete, one failed tool result (isError), one JSON-RPC error, one
    // cancelled, one that expires.
    for _ in 0..2 {
        let id = c.start_task("sleep", json!({"ms": 1})).await;
        c.wait_status(&id, "completed").await;
    }
    let id = c.start_task("fail", json!({"message": "no"})).await;
    c.wait_status(&id, "failed").await;
    let id = c.start_task("error", json!({"message": "broken"})).await;
    c.wait_status(&id, "failed").await;
    let id = c.start_task("sleep", json!({"ms": 60_000})).await;
    // A tasks/result waiting on it is an open wait until the task ends.
    let (_, waiting) = c.request("tasks/result", json!({"taskId": id})).await;
    assert!(waiting.is_sse(), "{waiting:?}");
    wait_metric(server.addr, "mcp_tasks_result_waits", &[], 1.0).await;
    c.rpc("tasks/cancel", json!({"taskId": id})).await;
    drop(waiting);
    let m = c
        .rpc(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 200}}),
        )
        .await;
    let short = m["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    c.wait_status(&short, "completed").await;
    // A lookup of a task id that does not exist: the enumeration signal.
    let (_, resp) = c
        .request(
            "tasks/get",
            json!({"taskId": "00000000-0000-4000-8000-000000000000"}),
        )
        .await;
    let e = resp.json().await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    // A request from a foreign origin is refused before any handler.
    let mut evil = c.clone();
    evil.origin = Some("http://evil.example".into());
    assert_eq!(
        evil.post(&json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
            .await
            .status,
        403
    );

    // The sweeper (every second) deletes the expired task.
    let s = wait_metric(server.addr, "mcp_tasks_task_expirations_total", &[], 1.0).await;
    let (status, ct, _) = scrape(server.addr, None).await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");

    let t = "mcp_tasks_task_transitions_total";
    // Every task created counts once as working.
    assert_eq!(
        value(&s, t, &[("status", "working"), ("tool", "sleep")]),
        4.0
    );
    assert_eq!(
        value(&s, t, &[("status", "working"), ("tool", "fail")]),
        1.0
    );
    assert_eq!(
        value(&s, t, &[("status", "working"), ("tool", "error")]),
        1.0
    );
    assert_eq!(
        value(&s, t, &[("status", "completed"), ("tool", "sleep")]),
        3.0
    );
    assert_eq!(value(&s, t, &[("status", "failed"), ("tool", "fail")]), 1.0);
    assert_eq!(
        value(&s, t, &[("status", "failed"), ("tool", "error")]),
        1.0
    );
    assert_eq!(
        value(&s, t, &[("status", "cancelled"), ("tool", "sleep")]),
        1.0
    );
    // Stored tasks by status, from the store at scrape time (the expired one is gone).
    let g = "mcp_tasks_tasks";
    assert_eq!(value(&s, g, &[("status", "completed")]), 2.0);
    assert_eq!(value(&s, g, &[("status", "failed")]), 2.0);
    assert_eq!(value(&s, g, &[("status", "cancelled")]), 1.0);
    assert_eq!(value(&s, g, &[("status", "working")]), 0.0);
    assert_eq!(value(&s, g, &[("status", "input_required")]), 0.0);
    // Durations: one observation per finished task, by tool and status.
    let d = "mcp_tasks_task_duration_seconds";
    assert_eq!(
        value(&s, d, &[("status", "completed"), ("tool", "sleep")]),
        3.0
    );
    assert_eq!(value(&s, d, &[("status", "failed"), ("tool", "fail")]), 1.0);
    assert_eq!(
        value(&s, d, &[("status", "cancelled"), ("tool", "sleep")]),
        1.0
    );
    assert_eq!(value(&s, "mcp_tasks_failed_lookups_total", &[]), 1.0);
    assert_eq!(
        value(
            &s,
            "mcp_tasks_rejected_requests_total",
            &[("reason", "origin")]
        ),
        1.0
    );
    // Requests by method and outcome: six task-augmented tools/call.
    let q = "mcp_tasks_requests_total";
    assert_eq!(
        value(&s, q, &[("method", "tools/call"), ("outcome", "ok")]),
        6.0
    );
    assert_eq!(
        value(&s, q, &[("method", "tasks/result"), ("outcome", "error")]),
        1.0
    );
    assert_eq!(
        value(&s, q, &[("method", "tasks/get"), ("outcome", "error")]),
        1.0
    );
    assert_eq!(
        value(&s, q, &[("method", "tasks/cancel"), ("outcome", "ok")]),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "mcp_tasks_request_duration_seconds",
            &[("method", "tools/call")]
        ),
        6.0
    );
    assert_eq!(value(&s, "mcp_tasks_http_sessions", &[]), 1.0);
    assert_eq!(value(&s, "mcp_tasks_result_waits", &[]), 0.0);
    // Every store operation is timed: six creations.
    assert_eq!(
        value(
            &s,
            "mcp_tasks_store_operation_duration_seconds",
            &[("op", "create")]
        ),
        6.0
    );
    // Label values are bounded: no task id anywhere.
    let (_, _, body) = scrape(server.addr, None).await;
    assert!(!body.contains(&short), "a task id in the metrics:\n{body}");
}

#[tokio::test]
async fn with_auth_only_the_metrics_principal_reads_them_and_no_secret_shows() {
    let tokens = "tok-main-secret main;tok-ops-secret ops";
    let server = Server::start_env(&["--metrics-principal", "ops"], &[(TOKENS_ENV, tokens)]);
    let (status, _, _) = scrape(server.addr, None).await;
    assert_eq!(status, 401);
    let (status, _, _) = scrape(server.addr, Some("wrong")).await;
    assert_eq!(status, 401);
    let (status, _, _) = scrape(server.addr, Some("tok-main-secret")).await;
    assert_eq!(status, 403);
    // Some traffic of `main` first, so that the text has something to leak.
    let mut c = Client::new(&server).with_token("tok-main-secret");
    c.initialize().await;
    let id = c.start_task("sleep", json!({"ms": 1})).await;
    c.wait_status(&id, "completed").await;
    let (status, ct, body) = scrape(server.addr, Some("tok-ops-secret")).await;
    assert_eq!(status, 200, "{body}");
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let s = parse(&body);
    assert_eq!(
        value(
            &s,
            "mcp_tasks_rejected_requests_total",
            &[("reason", "auth")]
        ),
        2.0
    );
    assert_eq!(
        value(&s, "mcp_tasks_tasks", &[("status", "completed")]),
        1.0
    );
    for secret in ["tok-main-secret", "tok-ops-secret", "main", "ops", &id] {
        assert!(!body.contains(secret), "`{secret}` in the metrics:\n{body}");
    }
}

#[tokio::test]
async fn with_auth_and_no_metrics_principal_nobody_reads_them_on_the_endpoint_port() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-a a")]);
    assert_eq!(scrape(server.addr, Some("tok-a")).await.0, 403);
    assert_eq!(scrape(server.addr, None).await.0, 401);
}

#[tokio::test]
async fn no_metrics_turns_the_endpoint_off() {
    let server = Server::start(&["--no-metrics"]);
    assert_eq!(scrape(server.addr, None).await.0, 404);
    // The rest is served as usual.
    let mut c = Client::new(&server);
    c.initialize().await;
}

#[tokio::test]
async fn metrics_listen_serves_them_on_their_own_address_without_auth() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let at = format!("127.0.0.1:{port}");
    let server = Server::start_env(&["--metrics-listen", &at], &[(TOKENS_ENV, "tok-a a")]);
    // Not on the endpoint's port.
    let (status, _, _) = scrape(server.addr, Some("tok-a")).await;
    assert!(status == 404 || status == 401, "{status}");
    let mut c = Client::new(&server).with_token("tok-a");
    c.initialize().await;
    let addr: SocketAddr = at.parse().unwrap();
    let deadline = Instant::now() + TIMEOUT;
    let body = loop {
        if std::net::TcpStream::connect(addr).is_ok() {
            let (status, _, body) = scrape(addr, None).await;
            assert_eq!(status, 200, "{body}");
            break body;
        }
        assert!(Instant::now() < deadline, "nothing listens on {at}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let s = parse(&body);
    assert_eq!(value(&s, "mcp_tasks_http_sessions", &[]), 1.0, "{body}");
    assert_eq!(
        value(
            &s,
            "mcp_tasks_requests_total",
            &[("method", "initialize"), ("outcome", "ok")]
        ),
        1.0
    );
}

#[test]
fn metrics_listen_refuses_a_public_address_without_consent() {
    let r = Server::try_start(&["--metrics-listen", "192.0.2.1:9"], &[]);
    let Err((_, stderr)) = r else {
        panic!("a public metrics address without --allow-unauthenticated must be refused")
    };
    assert!(stderr.contains("metrics"), "{stderr}");
}

/// Refusals by reason: a body over `--max-message-bytes` (413), a connection over
/// `--max-connections-per-ip` (503), a task over `--max-active-tasks` (-32003).
///
/// Each request of the test client is a connection of its own, and the server counts a
/// closed one until it has seen it close: a request may meet the connection limit while
/// the earlier ones are still counted (seen under load), so the limit leaves room for
/// them and a request refused by it is sent again.
#[tokio::test]
async fn refusals_are_counted_by_reason() {
    let server = Server::start(&[
        "--max-message-bytes",
        "1000",
        "--max-connections-per-ip",
        "3",
        "--max-active-tasks",
        "1",
    ]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "c".repeat(2000)}}});
    assert_eq!(c.post(&big).await.status, 413);
    // One active task allowed: the second is refused by the limit.
    c.start_task("sleep", json!({"ms": 60_000})).await;
    let deadline = Instant::now() + TIMEOUT;
    let e = loop {
        let (_, r) = c
            .request(
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
            )
            .await;
        let e = r.json().await;
        let by_connections = e["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("connections per client address"));
        if !by_connections || Instant::now() > deadline {
            break e;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(e["error"]["code"], -32003, "{e}");
    // Idle connections hold this address's slots until one is refused. Kept open until it
    // is: an earlier connection of the client may still hold a slot for a moment, so the
    // count of connections needed is not fixed (the limit, plus what earlier ones hold).
    let mut idle = Vec::new();
    let refused = loop {
        assert!(idle.len() < 6, "no connection was refused");
        let mut conn = std::net::TcpStream::connect(server.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut text = String::new();
        // A refused connection is answered and closed; an accepted one waits for a request
        // (the read times out).
        let _ = std::io::Read::read_to_string(&mut conn, &mut text);
        if !text.is_empty() {
            break text;
        }
        idle.push(conn);
    };
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    drop(idle);
    // Until the server has seen the idle connections close, a scrape may be refused too
    // (and counted): at least the two above.
    let deadline = Instant::now() + TIMEOUT;
    let s = loop {
        let (status, _, body) = scrape(server.addr, None).await;
        if status == 200 {
            break parse(&body);
        }
        assert_eq!(status, 503, "{body}");
        assert!(
            Instant::now() < deadline,
            "the idle connections were never released"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let limit = value(
        &s,
        "mcp_tasks_rejected_requests_total",
        &[("reason", "limit")],
    );
    assert!(limit >= 2.0, "{limit}");
    assert_eq!(
        value(
            &s,
            "mcp_tasks_rejected_requests_total",
            &[("reason", "body_too_large")]
        ),
        1.0
    );
    assert_eq!(value(&s, "mcp_tasks_tasks", &[("status", "working")]), 1.0);
}

/// `mcp_tasks_http_sessions` and `mcp_tasks_sse_streams` follow the live sessions and the
/// open SSE connections.
#[tokio::test]
async fn sessions_and_sse_streams_are_gauged() {
    let server = Server::start(&[]);
    let mut a = Client::new(&server);
    a.initialize().await;
    let mut b = Client::new(&server);
    b.initialize().await;
    let stream = a.get(None).await;
    assert!(stream.is_sse(), "{stream:?}");
    let s = wait_metric(server.addr, "mcp_tasks_sse_streams", &[], 1.0).await;
    assert_eq!(value(&s, "mcp_tasks_http_sessions", &[]), 2.0);
    drop(stream);
    assert_eq!(b.delete().await.status, 204);
    let s = wait_metric(server.addr, "mcp_tasks_sse_streams", &[], 0.0).await;
    assert_eq!(value(&s, "mcp_tasks_http_sessions", &[]), 1.0);
}

/// A task that waits for an answer: its stay in `input_required` is observed, with the
/// transitions into and out of it.
#[tokio::test]
async fn time_in_input_required_is_observed() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let task = c.start_task("ask", json!({"question": "Proceed?"})).await;
    let (_, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    assert!(sse.next().await.unwrap().is_priming());
    let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"answer": "yes"}}});
    assert_eq!(c.post(&answer).await.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "yes", "{done}");
    let s = wait_metric(
        server.addr,
        "mcp_tasks_task_transitions_total",
        &[("status", "completed"), ("tool", "ask")],
        1.0,
    )
    .await;
    let t = "mcp_tasks_task_transitions_total";
    assert_eq!(
        value(&s, t, &[("status", "input_required"), ("tool", "ask")]),
        1.0
    );
    assert_eq!(value(&s, t, &[("status", "working"), ("tool", "ask")]), 2.0);
    assert_eq!(value(&s, "mcp_tasks_input_required_seconds", &[]), 1.0);
    let (_, _, body) = scrape(server.addr, None).await;
    let sum: f64 = body
        .lines()
        .find_map(|l| l.strip_prefix("mcp_tasks_input_required_seconds_sum "))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!((0.3..60.0).contains(&sum), "{sum}");
}

/// Requests are counted and timed by method and era: a 2025-11-25 `tools/list` of an
/// initialized session and a 2026-07-28 one (per-request `_meta`, no session) land under
/// their own `era` label.
#[tokio::test]
async fn requests_are_counted_by_method_and_era() {
    let server = Server::start(&[]);
    let mut legacy = Client::new(&server);
    legacy.initialize().await;
    legacy.rpc("tools/list", json!({})).await;
    let modern = Client::new(&server);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": mcp_tasks_testkit::wire::modern_meta(json!({}))}});
    let r = modern
        .post_with(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/list"),
            ],
            body.to_string().as_bytes(),
        )
        .await;
    assert_eq!(r.status, 200);
    let answer = r.json().await;
    assert!(answer["result"]["tools"].is_array(), "{answer}");
    let (_, _, text) = scrape(server.addr, None).await;
    let s = parse(&text);
    let q = "mcp_tasks_requests_total";
    for era in ["2025-11-25", "2026-07-28"] {
        assert_eq!(
            value(
                &s,
                q,
                &[("method", "tools/list"), ("era", era), ("outcome", "ok")]
            ),
            1.0,
            "{era}:\n{text}"
        );
        assert_eq!(
            value(
                &s,
                "mcp_tasks_request_duration_seconds",
                &[("method", "tools/list"), ("era", era)]
            ),
            1.0,
            "{era}:\n{text}"
        );
    }
    assert_eq!(
        value(
            &s,
            q,
            &[
                ("method", "initialize"),
                ("era", "2025-11-25"),
                ("outcome", "ok")
            ]
        ),
        1.0
    );
    assert_eq!(
        value(&s, q, &[("method", "initialize"), ("era", "2026-07-28")]),
        0.0
    );
}
