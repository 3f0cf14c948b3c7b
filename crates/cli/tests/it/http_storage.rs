//! Storage over HTTP: each anonymous session has its own task quota, stored tasks and
//! stored bytes are limited per requester (creation refused with -32003 naming the limit,
//! a result over the limit stored as a -32003 failure), the memory a burst of large
//! requests leaves behind is bounded, a result the store cannot take does not leave its
//! task `working` for good, and the audit log says who created, finished, retrieved and
//! cancelled which task.

use crate::http_common;

use http_common::{Auth, Client, Server, start_as};
use serde_json::{Value, json};

/// `tools/call` of `tool` as a task; the whole response message.
async fn call_task(c: &mut Client, tool: &str, args: Value) -> Value {
    c.rpc(
        "tools/call",
        json!({ "name": tool, "arguments": args, "task": { "ttl": 600_000 } }),
    )
    .await
}

fn refused(msg: &Value, words: &str) {
    assert_eq!(msg["error"]["code"], -32003, "{msg}");
    let m = msg["error"]["message"].as_str().unwrap();
    assert!(m.contains(words), "{m:?} should say {words:?}");
}

/// Spec (resource management): "Receivers SHOULD: Enforce limits on concurrent tasks per
/// requestor". Without auth the requestor is the session: one client at its limit does
/// not lock task creation for the others. With auth it is the principal, across sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_anonymous_session_has_its_own_active_task_quota() {
    for auth in [Auth::Open, Auth::Bearer] {
        let (server, mut a) = start_as(auth, &["--max-active-tasks", "1"]);
        a.initialize().await;
        let mut b = a.fresh();
        b.initialize().await;
        a.start_task("sleep", json!({"ms": 60_000})).await;
        let again = call_task(&mut a, "sleep", json!({"ms": 1})).await;
        refused(&again, "at most 1 active tasks per requester");
        let other = call_task(&mut b, "sleep", json!({"ms": 60_000})).await;
        match auth {
            Auth::Open => assert!(
                other["result"]["task"]["taskId"].is_string(),
                "another anonymous session must not share the first one's quota: {other}"
            ),
            Auth::Bearer => refused(&other, "at most 1 active tasks per requester"),
        }
        drop(server);
    }
}

/// Finished tasks are kept until their TTL runs out: `--max-stored-tasks` counts them, and
/// a creation over it is refused with -32003 and creates nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_stored_task_limit_creation_is_refused() {
    let (_server, mut c) = start_as(Auth::Bearer, &["--max-stored-tasks", "2"]);
    c.initialize().await;
    for _ in 0..2 {
        let id = c.start_task("sleep", json!({"ms": 0})).await;
        c.wait_status(&id, "completed").await;
    }
    let third = call_task(&mut c, "sleep", json!({"ms": 0})).await;
    refused(&third, "at most 2 tasks per requester are kept");
    let list = c.rpc("tasks/list", json!({})).await;
    assert_eq!(list["result"]["tasks"].as_array().unwrap().len(), 2);
}

/// `--max-stored-bytes` counts requests and results: a request that would go over is
/// refused with -32003 naming the limit; a result that would go over is not stored, the
/// task fails with a -32003 error naming the limit instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_stored_bytes_limit_requests_are_refused_and_results_fail() {
    let (_server, mut c) = start_as(Auth::Open, &["--max-stored-bytes", "5000"]);
    c.initialize().await;
    let too_big = call_task(&mut c, "fail", json!({"message": "x".repeat(6000)})).await;
    refused(
        &too_big,
        "at most 5000 bytes of requests and results per requester",
    );
    // The request (about 3 KB) fits; its result (about 3 KB more) does not.
    let id = c
        .start_task("fail", json!({"message": "y".repeat(3000)}))
        .await;
    let task = c.wait_status(&id, "failed").await;
    let status = task["statusMessage"].as_str().unwrap();
    assert!(
        status.contains("was not stored: at most 5000 bytes"),
        "{status}"
    );
    let result = c.rpc("tasks/result", json!({"taskId": id})).await;
    assert_eq!(result["error"]["code"], -32003, "{result}");
    assert_eq!(result["error"]["message"], status);
    // Small tasks still fit in what is left.
    let small = c.start_task("sleep", json!({"ms": 0})).await;
    c.wait_status(&small, "completed").await;
}

const MIB: usize = 1 << 20;

/// Ten `tools/call` tasks of 4 MiB each (`fail` echoes its message: 4 MiB of request and
/// 4 MiB of result per task) in one session; the resident memory they leave behind.
async fn ten_large_tasks(server: &Server) -> (u64, usize, usize) {
    let mut c = Client::new(server);
    c.initialize().await;
    let before = server.rss_kib();
    let message = "m".repeat(4 * MIB);
    let mut ids = Vec::new();
    let mut refusals = 0;
    for _ in 0..10 {
        let msg = call_task(&mut c, "fail", json!({ "message": message })).await;
        match msg["result"]["task"]["taskId"].as_str() {
            Some(id) => ids.push(id.to_owned()),
            None => {
                refused(&msg, "Too many stored bytes");
                refusals += 1;
            }
        }
    }
    for id in &ids {
        c.wait_status(id, "failed").await;
    }
    let grown = server.rss_kib().saturating_sub(before) / 1024;
    eprintln!(
        "{} tasks kept, {refusals} refused: {grown} MiB resident more",
        ids.len()
    );
    (grown, ids.len(), refusals)
}

/// Issue 15 (8): 40 requests of 14 MiB left 1.75 GB resident on the memory store. A task
/// keeps one copy of its request and one of its result (its status message quotes at most
/// 1 KiB of the tool's error text; `tasks/get` copies neither), and `--max-stored-bytes`
/// bounds what one requester keeps. Measured on this load (debug build, glibc, polling
/// `tasks/get` every 20 ms): before, 213-225 MiB of growth on the memory store (three copies
/// kept per task, 8 MiB copied per poll) and 75 MiB on SQLite; after, 116-131 MiB on the
/// memory store (80 MiB of it stored), 53-56 MiB with a 24 MiB limit (three tasks kept,
/// seven refused), 45-58 MiB on SQLite (nothing kept in memory: what the allocator holds on
/// to of the transient copies of a request while it is parsed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_requests_leave_bounded_memory() {
    // What the allocator keeps of the transient copies of a request varies from run to
    // run on a shared machine (53-80 MiB seen with the 24 MiB limit), so besides loose
    // absolute caps the runs are compared with each other: the limited store and SQLite
    // must stay well below the unlimited memory store, which keeps 56 MiB more requests
    // and results than the limited one and holds every result in memory unlike SQLite.
    let memory = Server::start(&["--store", "memory"]);
    let (unlimited, kept, _) = ten_large_tasks(&memory).await;
    drop(memory);
    assert_eq!(kept, 10, "80 MiB fits the default 256 MiB per requester");
    assert!(
        unlimited < 200,
        "memory store: {unlimited} MiB resident after 10 tasks of 4+4 MiB (80 MiB stored)"
    );

    let limited = Server::start(&["--store", "memory", "--max-stored-bytes", "24MiB"]);
    let (grown, kept, refusals) = ten_large_tasks(&limited).await;
    drop(limited);
    assert_eq!(
        (kept, refusals),
        (3, 7),
        "24 MiB holds three tasks' requests"
    );
    assert!(
        grown < 120 && grown + 24 < unlimited,
        "memory store with --max-stored-bytes 24MiB: {grown} MiB resident, \
         unlimited {unlimited} MiB"
    );

    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("tasks.db").display());
    let sqlite = Server::start(&["--store", &store]);
    let (grown, kept, _) = ten_large_tasks(&sqlite).await;
    drop(sqlite);
    assert_eq!(kept, 10);
    // Below the memory store, which holds the 80 MiB in memory; no longer with a margin of
    // 24 MiB: since the memory store stopped copying each result to classify it
    // (`classify`, 2026-12-06) its growth fell to 95-101 MiB, and SQLite's transient copies
    // reached 78 MiB under CI's load.
    assert!(
        grown < 120 && grown < unlimited,
        "sqlite store: {grown} MiB resident after 10 tasks of 4+4 MiB, memory store \
         {unlimited} MiB"
    );
}

/// Audit: one `info` line on the `mcp_tasks::audit` target per creation, completion,
/// retrieval and cancellation, naming the task, the tool and the principal, never the
/// token, the arguments or the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_events_are_audited_at_info() {
    let server = Server::start_env(
        &[],
        &[
            (http_common::TOKENS_ENV, "secret-token-1 auditor"),
            ("RUST_LOG", "warn,mcp_tasks::audit=info"),
        ],
    );
    let mut c = Client::new(&server).with_token("secret-token-1");
    c.initialize().await;
    let done = c
        .start_task("fail", json!({"message": "confidential-argument"}))
        .await;
    c.wait_status(&done, "failed").await;
    c.rpc("tasks/result", json!({"taskId": done})).await;
    let stopped = c.start_task("sleep", json!({"ms": 60_000})).await;
    c.rpc("tasks/cancel", json!({"taskId": stopped})).await;
    let deadline = std::time::Instant::now() + http_common::TIMEOUT;
    let lines = loop {
        let log = server.stderr();
        let lines: Vec<String> = log
            .lines()
            .filter(|l| l.contains("mcp_tasks::audit"))
            .map(str::to_owned)
            .collect();
        // Wait for the lines asserted below, not for a count: other audit lines (the
        // cancelled task's own "task finished") may come first, in any order.
        let has = |event: &str, id: &str| lines.iter().any(|l| l.contains(event) && l.contains(id));
        let all = has("task created", &done)
            && has("task finished", &done)
            && has("task result retrieved", &done)
            && has("task cancelled", &stopped);
        if all || std::time::Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let find = |event: &str, id: &str| {
        lines
            .iter()
            .find(|l| l.contains(event) && l.contains(id))
            .unwrap_or_else(|| panic!("no audit line `{event}` for {id} in {lines:#?}"))
            .clone()
    };
    let created = find("task created", &done);
    assert!(created.contains(" INFO "), "{created}");
    assert!(created.contains("tool=\"fail\""), "{created}");
    assert!(created.contains("principal=\"auditor\""), "{created}");
    assert!(find("task finished", &done).contains("status=failed"));
    assert!(find("task result retrieved", &done).contains("principal=\"auditor\""));
    assert!(find("task cancelled", &stopped).contains("principal=\"auditor\""));
    let log = server.stderr();
    assert!(!log.contains("secret-token-1"), "a token was logged");
    assert!(
        !log.contains("confidential-argument"),
        "arguments were logged"
    );
}

/// Issue 15 (10): the store refuses writes (here a lock held by another process; a full
/// disk alike) when a task's result is ready. The task stays `working` while the result is
/// retried for `--outcome-retry`; then, as soon as the store takes writes again, it fails
/// with a message naming the cause, and the `tasks/result` waiting meanwhile returns it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_the_store_cannot_take_fails_the_task_once_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = format!("sqlite:{}?busy_timeout_ms=50", path.display());
    let (_server, mut c) = start_as(Auth::Open, &["--store", &store, "--outcome-retry", "300ms"]);
    c.initialize().await;
    let id = c.start_task("sleep", json!({"ms": 300})).await;
    let waiter = {
        let mut c = c.clone();
        // Ids of its own on the same session: the lead client goes on meanwhile.
        c.next_id = 1_000;
        let id = id.clone();
        tokio::spawn(async move {
            let (_, resp) = c.request("tasks/result", json!({"taskId": id})).await;
            assert!(resp.is_sse(), "a waiting tasks/result streams: {resp:?}");
            let events = resp.sse().rest().await;
            http_common::responses(&events).into_iter().next()
        })
    };
    let lock = rusqlite::Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // The task's work ends at 300 ms; its result is retried for 300 ms more.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let task = c.task(&id).await;
    assert_eq!(task["result"]["status"], "working", "{task}");
    assert!(
        !waiter.is_finished(),
        "tasks/result returned while nothing was stored"
    );
    lock.execute_batch("ROLLBACK").unwrap();
    let answer = tokio::time::timeout(http_common::TIMEOUT, waiter)
        .await
        .expect("tasks/result returned once the store took writes again")
        .unwrap()
        .expect("a response on the tasks/result stream");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(
        message.contains("The task's result could not be stored: ") && message.contains("locked"),
        "{message}"
    );
    let task = c.task(&id).await;
    assert_eq!(task["result"]["status"], "failed");
    assert_eq!(task["result"]["statusMessage"], message);
}

/// `/readyz` asks the store: 503 while another process holds the SQLite write lock (the
/// cause in the log, not in the body of a probe without a token), 200 again once it is
/// released; `/healthz` stays 200 throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_503_while_the_sqlite_file_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let store = format!("sqlite:{}?busy_timeout_ms=50", path.display());
    let server = Server::start(&["--store", &store]);
    let get = |p: &'static str| http_common::send(server.addr, "GET", p, &[], b"");
    let ready = get("/readyz").await;
    assert_eq!(ready.status, 200);
    let lock = rusqlite::Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let r = get("/readyz").await;
    assert_eq!(r.status, 503);
    let body = String::from_utf8_lossy(&r.bytes().await).into_owned();
    assert_eq!(body, "not ready: the task store does not answer\n");
    let logged = || {
        server
            .stderr()
            .lines()
            .any(|l| l.contains("not ready") && l.contains("locked"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !logged() {
        assert!(std::time::Instant::now() < deadline, "{}", server.stderr());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(get("/healthz").await.status, 200);
    lock.execute_batch("ROLLBACK").unwrap();
    assert_eq!(get("/readyz").await.status, 200);
}
