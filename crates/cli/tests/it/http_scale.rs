//! Scale: exactly 1,000 `tasks/result` streams open at once on one server, with bounded
//! memory per idle stream, each ending with its response exactly once; and 10,000
//! retained tasks listed through `tasks/list`.

use crate::http_common;

use std::time::{Duration, Instant};

use http_common::{Client, Conn, Server, TOKENS_ENV, check, check_response};
use serde_json::{Value, json};

const STREAMS: usize = 1000;
const RETAINED: usize = 10_000;

async fn rpc(conn: &mut Conn, c: &Client, id: u64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let (status, headers, bytes) = conn
        .roundtrip("POST", &c.headers(), body.to_string().as_bytes())
        .await;
    assert_eq!(status, 200);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("application/json")),
        "{method} answered as JSON"
    );
    let msg: Value = serde_json::from_slice(&bytes).unwrap();
    check_response(method, &msg);
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_result_streams_and_ten_thousand_tasks() {
    // 1,000 streams on 1,000 connections from one address: above the default connection
    // bounds (512 in total, 256 per address), so raised here; 10,000 tasks of one
    // principal: above the default stored-task quota.
    let server = Server::start_env(
        &[
            "--max-active-tasks",
            "5000",
            "--max-stored-tasks",
            "20000",
            "--max-connections",
            "1100",
            "--max-connections-per-ip",
            "1100",
        ],
        &[(TOKENS_ENV, "tok p")],
    );
    let mut c = Client::new(&server).with_token("tok");
    c.initialize().await;
    let mut conn = Conn::open(server.addr).await;

    let mut tasks = Vec::with_capacity(STREAMS);
    for i in 0..STREAMS {
        let m = rpc(
            &mut conn,
            &c,
            i as u64 + 1000,
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 600_000}, "task": {"ttl": 3_600_000}}),
        )
        .await;
        tasks.push(m["result"]["task"]["taskId"].as_str().unwrap().to_owned());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_before = server.rss_kib();

    // Open exactly 1,000 tasks/result streams, each on its own connection.
    let t0 = Instant::now();
    let mut opened = Vec::with_capacity(STREAMS);
    let mut joins = tokio::task::JoinSet::new();
    for (i, task) in tasks.iter().enumerate() {
        let c = c.clone();
        let task = task.clone();
        joins.spawn(async move {
            let resp = c
                .post(&json!({"jsonrpc": "2.0", "id": format!("r{i}"), "method": "tasks/result", "params": {"taskId": task}}))
                .await;
            let mut sse = resp.sse();
            let first = sse.next().await.unwrap();
            assert!(first.is_priming());
            (i, sse)
        });
    }
    while let Some(r) = joins.join_next().await {
        opened.push(r.unwrap());
    }
    assert_eq!(opened.len(), STREAMS);
    eprintln!("{STREAMS} streams open in {:?}", t0.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_open = server.rss_kib();
    let per_stream = (rss_open.saturating_sub(rss_before)) * 1024 / STREAMS as u64;
    eprintln!("RSS {rss_before} KiB -> {rss_open} KiB: {per_stream} bytes per open stream");
    assert!(
        per_stream < 64 * 1024,
        "memory per idle stream: {per_stream} bytes"
    );

    // Cancel every task: each stream gets its response (the cancelled outcome) once
    // (after the task's status notification, which travels there too).
    for (i, task) in tasks.iter().enumerate() {
        let m = rpc(
            &mut conn,
            &c,
            i as u64 + 5000,
            "tasks/cancel",
            json!({"taskId": task}),
        )
        .await;
        assert_eq!(m["result"]["status"], "cancelled");
    }
    let mut joins = tokio::task::JoinSet::new();
    for (i, mut sse) in opened {
        joins.spawn(async move {
            let rest = sse.rest().await;
            let msgs = http_common::responses(&rest);
            assert_eq!(msgs.len(), 1, "stream {i}: {rest:?}");
            assert_eq!(msgs[0]["id"], format!("r{i}"));
            assert_eq!(msgs[0]["error"]["code"], -32001, "{}", msgs[0]);
        });
    }
    while let Some(r) = joins.join_next().await {
        r.unwrap();
    }

    // 10,000 more tasks, retained after they finish, over four connections.
    let t0 = Instant::now();
    let mut joins = tokio::task::JoinSet::new();
    for w in 0..4u64 {
        let c = c.clone();
        let addr = server.addr;
        joins.spawn(async move {
            let mut conn = Conn::open(addr).await;
            for i in 0..(RETAINED as u64 / 4) {
                let m = rpc(
                    &mut conn,
                    &c,
                    100_000 + w * 10_000 + i,
                    "tools/call",
                    json!({"name": "sleep", "arguments": {"ms": 0}, "task": {"ttl": 3_600_000}}),
                )
                .await;
                assert!(m["result"]["task"]["taskId"].is_string());
            }
        });
    }
    while let Some(r) = joins.join_next().await {
        r.unwrap();
    }
    eprintln!("{RETAINED} tasks created in {:?}", t0.elapsed());

    // All 11,000 are listed, page by page, on a new connection: on a loaded machine the
    // creation above may outlast the keep-alive idle timeout of the first one.
    let mut conn = Conn::open(server.addr).await;
    let mut cursor: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let m = rpc(&mut conn, &c, 900_000 + pages, "tasks/list", params).await;
        for t in m["result"]["tasks"].as_array().unwrap() {
            check(&json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": t}));
            assert!(seen.insert(t["taskId"].as_str().unwrap().to_owned()));
        }
        pages += 1;
        match m["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), STREAMS + RETAINED);
    assert!(tasks.iter().all(|t| seen.contains(t)));
}
