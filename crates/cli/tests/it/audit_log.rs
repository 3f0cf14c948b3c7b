//! The audit trail (`--audit-log FILE`, issue 20): one JSON line per security-relevant
//! event, each present once for a scripted session, with the right principal and never a
//! token; reopened on SIGHUP after logrotate renamed it.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_common::{Client, Server};

fn tokens_file() -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new()
        .prefix("mcp-tasks-audit-")
        .suffix(".tokens")
        .tempfile()
        .unwrap();
    writeln!(f, "tok-alice-s3cr3t alice\ntok-bob-s3cr3t bob").unwrap();
    f
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The lines of `path` once there are at least `n` (and a moment more for any extra).
async fn wait_lines(path: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let l = lines(path);
        if l.len() >= n {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return lines(path);
        }
        assert!(
            Instant::now() < deadline,
            "{} audit lines, wanted {n}: {l:#?}",
            l.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The one line of `event` matching `pred`.
fn one<'a>(all: &'a [Value], event: &str, pred: impl Fn(&Value) -> bool) -> &'a Value {
    let found: Vec<&Value> = all
        .iter()
        .filter(|l| l["event"] == event && pred(l))
        .collect();
    assert_eq!(found.len(), 1, "`{event}`: {found:#?}\nall: {all:#?}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_session_is_audited_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let tokens = tokens_file();
    let server = Server::start_env(
        &[
            "--auth-tokens",
            tokens.path().to_str().unwrap(),
            "--audit-log",
            log.to_str().unwrap(),
            "--rate-limit",
            "create=2/h",
        ],
        &[("RUST_LOG", "info")],
    );
    // A refused credential.
    let intruder = Client::new(&server).with_token("tok-wrong-s3cr3t");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}});
    assert_eq!(intruder.post(&init).await.status, 401);

    let mut alice = Client::new(&server).with_token("tok-alice-s3cr3t");
    alice.initialize().await;
    let done = alice.start_task("sleep", json!({"ms": 0})).await;
    alice.wait_status(&done, "completed").await;
    let r = alice.rpc("tasks/result", json!({"taskId": done})).await;
    assert!(r.get("result").is_some(), "{r}");
    let stopped = alice.start_task("sleep", json!({"ms": 60_000})).await;
    alice.rpc("tasks/cancel", json!({"taskId": stopped})).await;
    alice.rpc("tasks/list", json!({})).await;
    let m = alice
        .rpc("tasks/get", json!({"taskId": "no-such-task"}))
        .await;
    assert_eq!(m["error"]["code"], -32602);
    let (_, refused) = alice
        .request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 0}, "task": {}}),
        )
        .await;
    assert_eq!(refused.status, 429);

    let all = wait_lines(&log, 10).await;
    assert_eq!(all.len(), 10, "{all:#?}");
    for l in &all {
        for key in [
            "time",
            "event",
            "principal",
            "session",
            "taskId",
            "method",
            "outcome",
        ] {
            assert!(l.get(key).is_some(), "no `{key}` in {l}");
        }
        assert!(l["time"].as_str().unwrap().ends_with('Z'), "{l}");
    }
    let auth = one(&all, "auth_failed", |_| true);
    assert_eq!(auth["principal"], Value::Null);
    assert_eq!(auth["reason"], "invalid_token");
    assert_eq!(auth["outcome"], "refused");

    let is = |id: &str| {
        let id = id.to_owned();
        move |l: &Value| l["taskId"] == id.as_str()
    };
    let created = one(&all, "task_created", is(&done));
    assert_eq!(created["principal"], "alice");
    assert_eq!(created["method"], "tools/call");
    assert_eq!(created["tool"], "sleep");
    assert!(created["session"].as_str().is_some_and(|s| s.len() == 16));
    let completed = one(&all, "task_completed", is(&done));
    assert_eq!(completed["principal"], "alice");
    assert_eq!(completed["by"], "work");
    let by_get = one(&all, "task_retrieved", |l| {
        l["taskId"] == done.as_str() && l["method"] == "tasks/get"
    });
    assert_eq!(by_get["principal"], "alice");
    let by_result = one(&all, "task_retrieved", |l| {
        l["taskId"] == done.as_str() && l["method"] == "tasks/result"
    });
    assert_eq!(by_result["principal"], "alice");
    assert_eq!(by_result["session"], created["session"]);
    one(&all, "task_created", is(&stopped));
    let cancelled = one(&all, "task_cancelled", is(&stopped));
    assert_eq!(cancelled["by"], "requester");
    assert_eq!(cancelled["principal"], "alice");
    let listed = one(&all, "tasks_listed", |_| true);
    assert_eq!(listed["principal"], "alice");
    assert_eq!(listed["count"], 2);
    let lookup = one(&all, "lookup_failed", is("no-such-task"));
    assert_eq!(lookup["principal"], "alice");
    assert_eq!(lookup["method"], "tasks/get");
    let limited = one(&all, "rate_limited", |_| true);
    assert_eq!(limited["principal"], "alice");
    assert_eq!(limited["limit"], "create");
    assert_eq!(limited["outcome"], "refused");

    let text = std::fs::read_to_string(&log).unwrap();
    let stderr = server.stderr();
    for secret in ["s3cr3t", "tok-"] {
        assert!(!text.contains(secret), "a token in the audit log");
        assert!(!stderr.contains(secret), "a token in the logs");
    }
    assert!(!text.contains("arguments"), "arguments in the audit log");
    // The tracing lines are kept beside the file.
    assert!(stderr.contains("mcp_tasks::audit"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reopens_the_audit_log_after_a_rename() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let server = Server::start(&["--audit-log", log.to_str().unwrap()]);
    let mut c = Client::new(&server);
    c.initialize().await;
    c.start_task("sleep", json!({"ms": 0})).await;
    let before = wait_lines(&log, 2).await;
    assert_eq!(before.len(), 2, "{before:#?}");

    let rotated = dir.path().join("audit.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !log.exists() {
        assert!(Instant::now() < deadline, "the audit log was not reopened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let id = c.start_task("sleep", json!({"ms": 0})).await;
    let after = wait_lines(&log, 2).await;
    assert_eq!(after.len(), 2, "{after:#?}");
    assert!(
        after.iter().all(|l| l["taskId"] == id.as_str()),
        "{after:#?}"
    );
    assert_eq!(lines(&rotated), before, "lines went to the rotated file");
    // The server lives on.
    c.rpc("tools/list", json!({})).await;
}
