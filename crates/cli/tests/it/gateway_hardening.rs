//! Gateway hardening (issue 15): the upstream command gets a clean environment without our
//! secrets; upstream processes are bounded by `--max-upstreams` and reaped with their
//! session; notifications sent before the client is ready are kept in a bounded buffer;
//! an upstream answer too large to read fails its call; `--upstream-timeout` bounds a
//! call.

use crate::common;
use crate::gateway_common;
use crate::http_common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::TIMEOUT;
use gateway_common::{Fake, failed_task_message, task_result, until_terminal};
use http_common::{Client, Server};
use serde_json::{Value, json};

const TOKENS: &str = "tok-alice-0123456789 alice;tok-bob-9876543210 bob";

/// The environment the fake upstream saw, written at its start.
fn env_dump(path: &std::path::Path) -> HashMap<String, String> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(env) = serde_json::from_str(&text)
        {
            return env;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream wrote no environment"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 15, item 1: with `MCP_TASKS_AUTH_TOKENS` (and `MCP_TASKS_TOKEN`) in the
/// gateway's environment, its upstream command sees neither, nor any token text; it gets
/// the pass-through list (PATH) and `--upstream-env`, and the rest of our environment only
/// with `--upstream-inherit-env` (still without `MCP_TASKS_*`).
#[tokio::test]
async fn the_upstream_command_never_sees_our_secrets() {
    for inherit in [false, true] {
        let fake = Fake::new(&format!("env-{inherit}"), false);
        let dump = fake.dir.join("env.json");
        let mut args = fake.args();
        args.extend([
            "--upstream-env".to_owned(),
            format!("FAKE_ENV_DUMP={}", dump.display()),
            "--upstream-env".to_owned(),
            "EXPLICIT=given".to_owned(),
        ]);
        if inherit {
            args.push("--upstream-inherit-env".to_owned());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = Server::start_env(
            &args,
            &[
                ("MCP_TASKS_AUTH_TOKENS", TOKENS),
                ("MCP_TASKS_TOKEN", "tok-client-secret"),
                ("GATEWAY_OTHER", "other"),
            ],
        );
        let mut c = Client::new(&server).with_token("tok-alice-0123456789");
        c.initialize().await;
        let env = env_dump(&dump);
        let ours: Vec<&String> = env.keys().filter(|k| k.starts_with("MCP_TASKS_")).collect();
        assert!(ours.is_empty(), "inherit={inherit}: {ours:?}");
        assert!(
            !env.values().any(|v| v.contains("tok-")),
            "inherit={inherit}: a token reached the upstream: {env:?}"
        );
        assert!(env.contains_key("PATH"), "{env:?}");
        assert_eq!(env.get("EXPLICIT").map(String::as_str), Some("given"));
        assert_eq!(
            env.get("GATEWAY_OTHER").map(String::as_str),
            inherit.then_some("other"),
            "inherit={inherit}: {env:?}"
        );
        // The tokens still work: they were read before they left the environment.
        assert_eq!(
            c.rpc("tools/list", json!({})).await["result"]["tools"][0]["name"],
            "echo"
        );
    }
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

fn rss_kib_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn wait_children(pid: u32, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let now = children(pid);
        if now.len() == n {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "expected {n} upstream processes, there are {}",
            now.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 15, item 5: with `--max-upstreams 2` a third session is refused with a JSON-RPC
/// error and starts no process; ending a session (DELETE) kills its upstream process at
/// once and lets a new session in.
#[tokio::test]
async fn upstream_processes_are_bounded_and_reaped_with_their_session() {
    let fake = Fake::new("max-upstreams", false);
    let mut args = fake.args();
    args.extend(["--max-upstreams".to_owned(), "2".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&args);
    let pid = server.pid();
    let mut a = Client::new(&server);
    let mut b = Client::new(&server);
    a.initialize().await;
    b.initialize().await;
    let two = wait_children(pid, 2);
    let rss: Vec<u64> = two.iter().map(|p| rss_kib_of(*p)).collect();
    eprintln!("RSS of one upstream (node fake): {rss:?} KiB");

    let third = Client::new(&server);
    let refused = third
        .post(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        }))
        .await;
    assert!(refused.header("mcp-session-id").is_none(), "{refused:?}");
    let msg = refused.json().await;
    assert_eq!(msg["error"]["code"], -32603, "{msg}");
    let text = msg["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("maximum of 2 upstream connections (--max-upstreams)"),
        "{text}"
    );
    // Still exactly two processes: the refused session started none.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(children(pid).len(), 2);

    // DELETE ends a session and its upstream process with it.
    assert_eq!(a.delete().await.status, 204);
    let left = wait_children(pid, 1);
    assert!(two.contains(&left[0]));
    let mut c = Client::new(&server);
    c.initialize().await;
    wait_children(pid, 2);
    assert_eq!(b.delete().await.status, 204);
    assert_eq!(c.delete().await.status, 204);
    wait_children(pid, 0);
    // Gone, not zombies.
    for p in two {
        assert!(
            !std::path::Path::new(&format!("/proc/{p}")).exists(),
            "{p} remains"
        );
    }

    // A session that expires (idle) takes its upstream process with it too.
    let fake = Fake::new("max-upstreams-idle", false);
    let mut args = fake.args();
    args.extend(["--session-idle".to_owned(), "1s".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::start(&args);
    let mut d = Client::new(&server);
    d.initialize().await;
    wait_children(server.pid(), 1);
    wait_children(server.pid(), 0);
}

/// Issue 15, item 6: an upstream that floods notifications (and requests) before the
/// client has sent `notifications/initialized` does not grow the gateway: at most 64
/// notifications are kept (the newest), and reach the client once it is ready; at most 64
/// requests wait, the others are answered with an error at once.
#[test]
fn notifications_before_the_client_is_ready_are_bounded() {
    const FLOOD: usize = 30_000; // 1 KiB each: ~30 MiB through the gateway
    const REQUESTS: usize = 5_000;
    let fake = Fake::new("flood", false);
    let marker = fake.dir.join("flooded");
    let mut args = fake.args();
    args.extend([
        "--upstream-env".to_owned(),
        format!("FAKE_FLOOD={FLOOD}"),
        "--upstream-env".to_owned(),
        format!("FAKE_FLOOD_REQUESTS={REQUESTS}"),
        "--upstream-env".to_owned(),
        format!("FAKE_FLOODED={}", marker.display()),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = common::Stdio::spawn(&args);
    // initialize, but not notifications/initialized yet.
    s.ok(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the upstream never finished its flood"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The gateway has read all but what the pipe holds; let it read that too.
    std::thread::sleep(Duration::from_millis(300));
    let rss = rss_kib_of(s.child.id());
    // Measured: ~13 MiB with the bounded buffer; 92 MiB for 30,000 notifications alone
    // when each waited in a task of its own.
    eprintln!("gateway RSS after {FLOOD} early notifications and {REQUESTS} requests: {rss} KiB");
    assert!(
        rss < 40 * 1024,
        "the gateway grew to {rss} KiB holding {FLOOD} early notifications and {REQUESTS} requests"
    );
    let refused = || {
        fake.received()
            .iter()
            .filter(|m| {
                m["id"].as_str().is_some_and(|i| i.starts_with("flood-"))
                    && m["error"]["message"]
                        .as_str()
                        .is_some_and(|e| e.contains("not ready for requests yet"))
            })
            .count()
    };
    let deadline = Instant::now() + TIMEOUT;
    while refused() < REQUESTS - 64 {
        assert!(Instant::now() < deadline, "{} refused", refused());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(refused(), REQUESTS - 64);
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let all = s.drain_for(Duration::from_millis(800));
    let got: Vec<&Value> = all
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    // The 64 requests that waited reach the client.
    let asked = all.iter().filter(|m| m["method"] == "roots/list").count();
    assert_eq!(asked, 64);
    assert!(!got.is_empty() && got.len() <= 64, "{} kept", got.len());
    assert_eq!(
        got.last().unwrap()["params"]["data"],
        format!("{FLOOD} last")
    );
    // The session works.
    assert_eq!(s.ok("tools/list", json!({}))["tools"][0]["name"], "echo");
}

fn error_message(answer: &Value) -> String {
    answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
        .to_owned()
}

/// `upstream reply too large: N bytes ...` with N a little over the 200,000 bytes sent, or
/// `upstream reply too large: exceeds 65536 bytes` when the answer's id came before the
/// bound was passed (the call fails then, before the line ends).
fn assert_too_large(msg: &str) {
    if msg.starts_with("upstream reply too large: exceeds 65536 bytes") {
        return;
    }
    let n: u64 = msg
        .strip_prefix("upstream reply too large: ")
        .and_then(|rest| rest.split_once(" bytes"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{msg}"));
    assert!((200_000..201_000).contains(&n), "{msg}");
}

/// Issue 15, item 11: an upstream answer over `--max-message-bytes` fails its call with
/// `upstream reply too large: N bytes`, plain, as a bridged task, and as an upstream task;
/// the gateway goes on serving.
#[test]
fn an_upstream_reply_too_large_fails_its_call() {
    let plain = Fake::new("too-large", false);
    let mut s = plain.gateway(&["--max-message-bytes", "65536"]);
    let answer = s.call(
        "tools/call",
        json!({"name": "big", "arguments": {"bytes": 200_000}}),
    );
    let msg = error_message(&answer);
    assert_too_large(&msg);
    assert_eq!(answer["error"]["code"], -32603);
    // A task of the same call fails with the same error.
    assert_too_large(&failed_task_message(
        &mut s,
        "big",
        json!({"bytes": 200_000}),
    ));
    // Smaller answers still pass.
    let r = s.ok(
        "tools/call",
        json!({"name": "big", "arguments": {"bytes": 1000}}),
    );
    assert_eq!(r["content"][0]["text"].as_str().unwrap().len(), 1000);

    // The result of an upstream task.
    let tasks = Fake::new("too-large-task", true);
    let mut s = tasks.gateway(&["--max-message-bytes", "65536"]);
    let msg = failed_task_message(&mut s, "job", json!({"ms": 10, "pad": 200_000}));
    assert_too_large(&msg);
    assert!(msg.contains("`tasks/result`"), "{msg}");
}

/// An upstream answer over `--max-message-bytes` whose line never ends (the upstream writes
/// past the bound, then nothing, no newline) fails its call as soon as the bound is passed,
/// without `--upstream-timeout`.
#[test]
fn an_endless_upstream_reply_fails_its_call_at_the_bound() {
    let fake = Fake::new("endless", false);
    let mut s = fake.gateway(&["--max-message-bytes", "65536"]);
    let answer = s.call(
        "tools/call",
        json!({"name": "big", "arguments": {"bytes": 200_000, "endless": true}}),
    );
    let msg = error_message(&answer);
    assert!(
        msg.starts_with("upstream reply too large: exceeds 65536 bytes"),
        "{msg}"
    );
    assert_eq!(answer["error"]["code"], -32603);
}

/// Issue 15, item 11: `--upstream-timeout` fails a call the upstream does not answer in
/// time, with an error saying so, and cancels it upstream; an upstream task that outlasts
/// it is followed with `tasks/get` and completes.
#[test]
fn upstream_calls_time_out_and_are_cancelled_upstream() {
    let fake = Fake::new("timeout", false);
    let mut s = fake.gateway(&["--upstream-timeout", "700ms"]);
    let answer = s.call(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 60_000}}),
    );
    let msg = error_message(&answer);
    assert!(
        msg.contains("did not answer `tools/call` within 700ms (--upstream-timeout)"),
        "{msg}"
    );
    let call = fake.wait_received("the slow call", |m| m["params"]["name"] == "slow");
    let cancel = fake.wait_received("its cancellation", |m| {
        m["method"] == "notifications/cancelled" && m["params"]["requestId"] == call["id"]
    });
    assert!(cancel["params"]["reason"].is_string());
    // As a task: the task fails with the same error.
    let msg = failed_task_message(&mut s, "slow", json!({"ms": 60_000}));
    assert!(msg.contains("within 700ms"), "{msg}");
    // Answers in time pass.
    assert_eq!(
        s.ok(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 10}})
        )["content"][0]["text"],
        "slept 10"
    );

    // An upstream task longer than the timeout: tasks/result times out, tasks/get answers.
    let tasks = Fake::new("timeout-task", true);
    let mut s = tasks.gateway(&["--upstream-timeout", "500ms"]);
    let task = s.create_task("job", json!({"ms": 1500}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = task_result(&mut s, &id);
    assert_eq!(
        r["result"]["content"][0]["text"], "job done after 1500",
        "{r}"
    );
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
}

/// Issue 15, item 11 over Streamable HTTP: a gateway in front of an HTTP upstream (here
/// another gateway, in front of the fake) fails a call whose answer is over its
/// `--max-message-bytes` instead of asking again for ever.
#[test]
fn an_http_upstream_reply_too_large_fails_its_call() {
    let fake = Fake::new("too-large-http", true);
    let args = fake.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let upstream = gateway_common::HttpUpstream::start(&args);
    let mut s = common::Stdio::spawn(&[
        "--upstream-url",
        &upstream.url,
        "--max-message-bytes",
        "65536",
    ]);
    s.initialize();
    let answer = s.call(
        "tools/call",
        json!({"name": "big", "arguments": {"bytes": 200_000}}),
    );
    let msg = error_message(&answer);
    assert!(
        msg.starts_with("upstream reply too large: exceeds 65536 bytes"),
        "{msg}"
    );
    let msg = failed_task_message(&mut s, "job", json!({"ms": 10, "pad": 200_000}));
    assert!(msg.starts_with("upstream reply too large"), "{msg}");
}
