//! Rate limits per requester (`--rate-limit`, issue 20) on both transports: past a limit
//! a request is refused with -32029 and `data.retryAfterMs` (HTTP: 429 with
//! `Retry-After`) and changes nothing; one requester's traffic never spends another's
//! allowance; over-fast polling is throttled only when configured; a burst of failed
//! lookups is reported once, with the principal, and counted.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Stdio;
use crate::http_common::{Client, Server};

fn tokens_file(name: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new()
        .prefix(&format!("mcp-tasks-rate-{name}-"))
        .suffix(".tokens")
        .tempfile()
        .unwrap();
    writeln!(f, "tok-alice alice\ntok-bob bob").unwrap();
    f
}

fn assert_rate_limited(error: &Value, limit: &str) {
    assert_eq!(error["code"], -32029, "{error}");
    assert_eq!(error["data"]["limit"], limit, "{error}");
    assert!(
        error["data"]["retryAfterMs"].as_u64().unwrap() >= 1,
        "{error}"
    );
}

fn stdio_task_count(s: &mut Stdio) -> usize {
    s.ok("tasks/list", json!({}))["tasks"]
        .as_array()
        .unwrap()
        .len()
}

/// `create=20/h`: the same burst of 20 as `create=20/s`, refilled slowly enough that the
/// 21st is refused however slow the machine is.
#[test]
fn stdio_the_21st_create_is_refused_and_leaves_no_task() {
    let mut s = Stdio::spawn(&["--rate-limit", "create=20/h"]);
    s.initialize();
    for _ in 0..20 {
        s.create_task("sleep", json!({"ms": 0}));
    }
    let e = s.err(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 0}, "task": {}}),
    );
    assert_rate_limited(&e, "create");
    // One cell every 3 minutes.
    assert!(e["data"]["retryAfterMs"].as_u64().unwrap() > 60_000, "{e}");
    assert_eq!(stdio_task_count(&mut s), 20);
    // Other requests are not limited.
    s.ok("tools/list", json!({}));
}

/// `create=20/s` (burst 20) with 60 creations pipelined on one line each: some are
/// refused; exactly the accepted ones exist; no more were accepted than the burst plus
/// what the elapsed time refilled.
#[test]
fn stdio_create_20_per_second_refuses_a_pipelined_burst() {
    let mut s = Stdio::spawn(&["--rate-limit", "create=20/s"]);
    s.initialize();
    let mut text = String::new();
    let mut ids = Vec::new();
    for _ in 0..60 {
        let id = s.next_id();
        text.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"ms": 0}, "task": {}}})
            .to_string(),
        );
        text.push('\n');
        ids.push(id);
    }
    let started = Instant::now();
    s.send_raw(&text);
    let (mut ok, mut refused) = (0, 0);
    for id in &ids {
        let r = s.response_to(id);
        if r.get("result").is_some() {
            ok += 1;
        } else {
            assert_rate_limited(&r["error"], "create");
            refused += 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(ok + refused, 60);
    assert!(refused >= 1, "none of 60 refused in {elapsed:.2} s");
    assert!(ok >= 20, "the burst of 20 was not admitted: {ok}");
    // 20 at once, then one every 50 ms.
    let most = 20 + (elapsed * 20.0).ceil() as usize + 1;
    assert!(
        ok <= most,
        "{ok} accepted in {elapsed:.2} s (at most {most})"
    );
    assert_eq!(stdio_task_count(&mut s), ok);
}

#[test]
fn stdio_over_fast_polling_is_throttled_only_when_configured() {
    // Unconfigured: 30 polls at once of a task whose pollInterval is an hour all pass.
    let mut s = Stdio::spawn(&["--poll-interval", "1h"]);
    s.initialize();
    let id = s.create_task("sleep", json!({"ms": 60_000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..30 {
        s.get_task(&id);
    }
    // Configured: the first poll, then the two over-fast ones of the allowance; then -32029.
    let mut s = Stdio::spawn(&["--poll-interval", "1h", "--rate-limit", "poll=2/h"]);
    s.initialize();
    let id = s.create_task("sleep", json!({"ms": 60_000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..3 {
        s.get_task(&id);
    }
    let e = s.err("tasks/get", json!({"taskId": id}));
    assert_rate_limited(&e, "poll");
    // The refusal changed nothing: the task is there and can still be cancelled.
    assert_eq!(
        s.ok("tasks/cancel", json!({"taskId": id}))["status"],
        "cancelled"
    );
}

async fn http_client(server: &Server, token: &str) -> Client {
    let mut c = Client::new(server).with_token(token);
    c.initialize().await;
    c
}

async fn http_task_count(c: &mut Client) -> usize {
    c.rpc("tasks/list", json!({})).await["result"]["tasks"]
        .as_array()
        .unwrap()
        .len()
}

/// 429 with `Retry-After` and the JSON-RPC error; the limit is alice's only: bob (another
/// token) creates as before, and a new session of alice's does not get a fresh allowance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_the_21st_create_is_429_and_limits_do_not_leak_across_principals() {
    let tokens = tokens_file("create");
    let server = Server::start(&[
        "--auth-tokens",
        tokens.path().to_str().unwrap(),
        "--rate-limit",
        "create=20/h",
    ]);
    let mut alice = http_client(&server, "tok-alice").await;
    for _ in 0..20 {
        alice.start_task("sleep", json!({"ms": 0})).await;
    }
    let (id, resp) = alice
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 0}, "task": {}}),
        )
        .await;
    assert_eq!(resp.status, 429, "{resp:?}");
    let retry: u64 = resp.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 60, "Retry-After {retry}");
    let msg = resp.json().await;
    assert_eq!(msg["id"], json!(id));
    assert_rate_limited(&msg["error"], "create");
    assert!(
        msg["error"]["data"]["retryAfterMs"].as_u64().unwrap() <= retry * 1000,
        "{msg}"
    );
    assert_eq!(http_task_count(&mut alice).await, 20);

    let mut bob = http_client(&server, "tok-bob").await;
    for _ in 0..20 {
        bob.start_task("sleep", json!({"ms": 0})).await;
    }
    assert_eq!(http_task_count(&mut bob).await, 20);
    let mut alice_again = http_client(&server, "tok-alice").await;
    let (_, resp) = alice_again
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 0}, "task": {}}),
        )
        .await;
    assert_eq!(resp.status, 429, "{resp:?}");
    assert_eq!(http_task_count(&mut alice_again).await, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_over_fast_polls_and_requests_are_429_per_principal() {
    let tokens = tokens_file("poll");
    let server = Server::start(&[
        "--auth-tokens",
        tokens.path().to_str().unwrap(),
        "--poll-interval",
        "1h",
        "--rate-limit",
        "poll=2/h",
        "--rate-limit",
        "requests=40/h",
    ]);
    let mut alice = http_client(&server, "tok-alice").await;
    let task = alice.start_task("sleep", json!({"ms": 60_000})).await;
    for _ in 0..3 {
        alice.task(&task).await;
    }
    let (_, resp) = alice.request("tasks/get", json!({"taskId": task})).await;
    assert_eq!(resp.status, 429, "{resp:?}");
    assert!(resp.header("retry-after").is_some());
    assert_rate_limited(&resp.json().await["error"], "poll");
    // Bob's requests are his own; alice spends the rest of her 40 requests.
    let mut bob = http_client(&server, "tok-bob").await;
    bob.rpc("tools/list", json!({})).await;
    let mut refused = None;
    for n in 0..40 {
        let (_, resp) = alice.request("tools/list", json!({})).await;
        if resp.status == 429 {
            refused = Some((n, resp.json().await));
            break;
        }
        assert_eq!(resp.status, 200);
    }
    let (n, msg) = refused.expect("the requests limit never refused");
    assert!(n < 40);
    assert_rate_limited(&msg["error"], "requests");
    bob.rpc("tools/list", json!({})).await;
}

/// 25 lookups of unknown ids by alice: one warning naming alice with the figures, one
/// count in `mcp_tasks_suspicious_patterns_total`, no principal in the metrics; with the
/// default `lookup-failures` limit (burst 100) none is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_a_burst_of_failed_lookups_is_reported_once() {
    let tokens = tokens_file("lookups");
    let server = Server::start(&[
        "--auth-tokens",
        tokens.path().to_str().unwrap(),
        "--metrics-principal",
        "bob",
    ]);
    let mut alice = http_client(&server, "tok-alice").await;
    for n in 0..25 {
        let m = alice
            .rpc("tasks/get", json!({"taskId": format!("guess-{n}")}))
            .await;
        assert_eq!(m["error"]["code"], -32602, "{m}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let warnings = loop {
        let w: Vec<String> = server
            .stderr()
            .lines()
            .filter(|l| l.contains("suspicious"))
            .map(str::to_owned)
            .collect();
        if !w.is_empty() || Instant::now() > deadline {
            break w;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let w = &warnings[0];
    assert!(w.contains("WARN"), "{w}");
    assert!(w.contains("principal=\"alice\""), "{w}");
    assert!(w.contains("count=20"), "{w}");
    assert!(w.contains("failed_lookups"), "{w}");
    let bob = Client::new(&server).with_token("tok-bob");
    let metrics =
        crate::http_common::send(server.addr, "GET", "/metrics", &bob.headers(), b"").await;
    assert_eq!(metrics.status, 200);
    let text = String::from_utf8(metrics.bytes().await).unwrap();
    assert!(
        text.contains("mcp_tasks_suspicious_patterns_total{pattern=\"failed_lookups\"} 1"),
        "{text}"
    );
    assert!(text.contains("mcp_tasks_failed_lookups_total 25"), "{text}");
    assert!(!text.contains("alice"), "a principal in the metrics");
}
