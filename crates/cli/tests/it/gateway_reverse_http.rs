//! Gateway, the reverse bridge over Streamable HTTP with `--upstream-protocol auto`: a
//! 2025-11-25 client in front of `mcp-tasks serve` over HTTP, which answers the modern
//! probe and is spoken to in 2026-07-28 (its tasks kept in a SQLite file the test reads);
//! a 2025-11-25-only HTTP upstream refuses the probe and gets `initialize` on a new,
//! legacy connection. A modern upstream task is followed again after a gateway restart. A
//! call cancelled before the modern upstream answered with its `CreateTaskResult` gets the
//! task created afterwards cancelled upstream.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client_support::HttpServer;
use crate::common::{Stdio, text_of};
use crate::gateway_common::{
    an_upstream_question_is_answered, listed_tool, task_id, task_result, until_terminal,
    upstream_db, upstream_tasks, wait_file, wait_upstream,
};

/// `mcp-tasks serve` over HTTP keeping its tasks in `dir/up.db` (a call not finished
/// within 100 ms becomes a task).
fn upstream(dir: &Path) -> HttpServer {
    let store = format!("sqlite:{}", upstream_db(dir).display());
    HttpServer::start(&["--task-after", "100ms", "--store", &store])
}

/// The arguments of a gateway keeping its tasks in `store` (a 1 s executor lease, so that
/// a restarted one adopts them soon) in front of `url`, spoken to in `protocol`.
fn gateway_args<'a>(store: &'a str, url: &'a str, protocol: &'a str) -> [&'a str; 8] {
    [
        "--store",
        store,
        "--executor-lease",
        "1s",
        "--upstream-url",
        url,
        "--upstream-protocol",
        protocol,
    ]
}

/// A gateway started with `args` (its store under `dir/gw.db`) and a task of `sleep` for
/// `ms` through it, once the gateway has noted its upstream task: the gateway, the task
/// id and the note's path.
fn noted_sleep(dir: &Path, args: &[&str], ms: u64) -> (Stdio, String, std::path::PathBuf) {
    let mut a = Stdio::spawn(args);
    a.initialize();
    let id = task_id(&a.create_task("sleep", json!({ "ms": ms })));
    let note = dir.join("gw.db.gateway").join(format!("{id}.json"));
    wait_file(&note, true);
    (a, id, note)
}

#[test]
fn auto_over_http_speaks_modern_to_our_server_through_a_task_and_a_question() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path());
    let mut s = Stdio::spawn(&["--upstream-url", &up.url, "--upstream-protocol", "auto"]);
    s.initialize();
    // Spoken to in 2026-07-28: every tool is listed `optional`, `ask` (its own
    // taskSupport `required`) included.
    let ask = listed_tool(&mut s, "ask");
    assert_eq!(ask["execution"]["taskSupport"], "optional", "{ask}");

    // A task to `completed`: an upstream task of the extension, followed.
    let id = task_id(&s.create_task("sleep", json!({"ms": 500})));
    let r = task_result(&mut s, &id);
    assert_eq!(text_of(&r["result"]), "slept 500", "{r}");
    assert!(r["result"].get("resultType").is_none(), "{r}");
    assert_eq!(until_terminal(&mut s, &id)["status"], "completed");
    wait_upstream(dir.path(), "500", "completed");

    // Through `input_required`: the upstream's `inputRequests` entry is asked on
    // tasks/result and answered upstream with tasks/update.
    an_upstream_question_is_answered(&mut s, dir.path(), "shape?", "round");
}

#[test]
fn auto_over_http_falls_back_to_initialize_for_a_legacy_upstream() {
    let fake = crate::client_era_cache::Fake::start(false);
    let mut s = Stdio::spawn(&["--upstream-url", &fake.url, "--upstream-protocol", "auto"]);
    s.initialize();
    let tools = s.ok("tools/list", json!({}));
    assert_eq!(tools["tools"], json!([]), "{tools}");
    // One modern probe (refused with a legacy 400), then `initialize` on a legacy
    // connection.
    assert_eq!(fake.probes(), 1);
    assert_eq!(fake.initializes(), 1);
}

#[test]
fn a_modern_upstream_task_is_followed_again_after_the_gateway_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path());
    let store = format!("sqlite:{}", dir.path().join("gw.db").display());
    let args = gateway_args(&store, &up.url, "modern");
    let (mut a, id, note) = noted_sleep(dir.path(), &args, 4000);
    let noted: Value = serde_json::from_slice(&std::fs::read(&note).unwrap()).unwrap();
    assert!(noted["upstreamTaskId"].is_string(), "{noted}");
    // No session: a modern upstream has none.
    assert!(noted.get("upstreamSession").is_none(), "{noted}");
    wait_upstream(dir.path(), "4000", "working");
    a.child.kill().unwrap();
    let _ = a.child.wait();
    drop(a);

    let mut b = Stdio::spawn(&args);
    b.initialize();
    let t = until_terminal(&mut b, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(text_of(&task_result(&mut b, &id)["result"]), "slept 4000");
    wait_file(&note, false);
    // The one upstream task, not a second call.
    let sleeps: Vec<_> = upstream_tasks(dir.path())
        .into_iter()
        .filter(|(r, _)| r.contains("4000"))
        .collect();
    assert_eq!(sleeps.len(), 1, "{sleeps:?}");
    assert_eq!(sleeps[0].1, "completed");
}

#[test]
fn a_modern_upstream_task_the_upstream_forgot_fails_clearly_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // The upstream keeps its tasks in memory: restarted, it has forgotten them.
    let up = HttpServer::start(&["--task-after", "100ms"]);
    let url = up.url.clone();
    let store = format!("sqlite:{}", dir.path().join("gw.db").display());
    let args = gateway_args(&store, &url, "auto");
    let (mut a, id, note) = noted_sleep(dir.path(), &args, 60_000);
    a.child.kill().unwrap();
    let _ = a.child.wait();
    drop(a);
    drop(up);
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .unwrap()
        .to_owned();
    let _up = HttpServer::start_at(&addr, &["--task-after", "100ms"]);

    let mut b = Stdio::spawn(&args);
    b.initialize();
    let t = until_terminal(&mut b, &id);
    assert_eq!(t["status"], "failed", "{t}");
    let msg = t["statusMessage"].as_str().unwrap_or_default();
    assert!(msg.contains("no longer knows its task"), "{msg}");
    wait_file(&note, false);
}

/// How long `slow_to_create` runs a call before it answers with a `CreateTaskResult`.
const CREATE_AFTER: Duration = Duration::from_secs(8);

/// `mcp-tasks serve` over HTTP keeping its tasks in `dir/up.db`, whose calls become tasks
/// only after [`CREATE_AFTER`]: its `CreateTaskResult` comes late.
fn slow_to_create(dir: &Path) -> HttpServer {
    let store = format!("sqlite:{}", upstream_db(dir).display());
    let after = format!("{}s", CREATE_AFTER.as_secs());
    HttpServer::start(&["--task-after", &after, "--store", &store])
}

/// A gateway in front of `up`, spoken to in 2026-07-28, its upstream connection up.
fn gateway_to(up: &HttpServer) -> Stdio {
    let mut s = Stdio::spawn(&["--upstream-url", &up.url, "--upstream-protocol", "modern"]);
    s.initialize();
    s.ok("tools/list", json!({}));
    s
}

/// A `sleep` that would run for a day, found in the upstream's store by its `ms`.
const LONG: &str = "86399999";

fn long_sleep() -> Value {
    json!({"name": "sleep", "arguments": {"ms": 86_399_999}})
}

/// Let the call reach the upstream (a modern upstream sends nothing before its
/// `CreateTaskResult`, so there is nothing to wait for: two seconds, for a loaded machine,
/// well within [`CREATE_AFTER`]), then check that the upstream has no task of it yet: its
/// `CreateTaskResult` has not been sent (the task is stored before it is).
fn running_upstream_without_a_task(dir: &Path) {
    let sent = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let tasks = upstream_tasks(dir);
    assert!(
        sent.elapsed() < CREATE_AFTER,
        "too slow to cancel before the upstream creates its task"
    );
    assert!(
        !tasks.iter().any(|(r, _)| r.contains(LONG)),
        "the upstream created its task already: {tasks:?}"
    );
}

/// The one upstream task of the long call ends `cancelled` (a bounded wait: it would
/// only complete after a day).
fn upstream_task_cancelled(dir: &Path) {
    wait_upstream(dir, LONG, "cancelled");
    let tasks = upstream_tasks(dir);
    let long: Vec<_> = tasks.iter().filter(|(r, _)| r.contains(LONG)).collect();
    assert_eq!(long.len(), 1, "{tasks:?}");
    assert_eq!(long[0].1, "cancelled", "{tasks:?}");
}

/// A plain call through the gateway cancelled (`notifications/cancelled`) while the
/// modern upstream runs it but has not yet answered with its `CreateTaskResult`: the
/// task the upstream creates afterwards is cancelled upstream by the gateway
/// (`tasks/cancel` once its id is known), not left running unseen; the upstream's store
/// has it `cancelled`.
#[test]
fn a_call_cancelled_before_the_upstream_created_its_task_gets_that_task_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let up = slow_to_create(dir.path());
    let mut s = gateway_to(&up);
    let id = s.start("tools/call", long_sleep());
    running_upstream_without_a_task(dir.path());
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}}));
    upstream_task_cancelled(dir.path());
}

/// The same for a task of the gateway (a task-augmented call) cancelled with
/// `tasks/cancel` before the upstream answered its `tools/call`: the gateway's task ends
/// `cancelled`, and so does the task the upstream creates afterwards.
#[test]
fn a_gateway_task_cancelled_before_the_upstream_created_its_task_gets_that_task_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let up = slow_to_create(dir.path());
    let mut s = gateway_to(&up);
    let mut params = long_sleep();
    params["task"] = json!({});
    let id = task_id(&s.ok("tools/call", params)["task"]);
    running_upstream_without_a_task(dir.path());
    let t = s.ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(t["status"], "cancelled", "{t}");
    upstream_task_cancelled(dir.path());
}
