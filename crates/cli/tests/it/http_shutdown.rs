//! Graceful shutdown on SIGTERM: stop accepting, close streams with a `retry`, let running
//! tasks finish within `--shutdown-grace`, then fail what is left with a clear
//! `statusMessage` (checked after a restart on the same SQLite file).

use crate::http_common;

use std::time::{Duration, Instant};

use http_common::{Client, Server};
use serde_json::json;

#[tokio::test]
async fn sigterm_drains_then_fails_what_is_left() {
    let db =
        std::env::temp_dir().join(format!("mcp-tasks-http-shutdown-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&db);
    let store = format!("sqlite:{}", db.display());
    let mut server = Server::start(&["--store", &store, "--shutdown-grace", "1500ms"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let quick = c.start_task("sleep", json!({"ms": 700})).await;
    let slow = c.start_task("sleep", json!({"ms": 600_000})).await;
    let mut standalone = c.get(None).await.sse();
    assert!(standalone.next().await.unwrap().is_priming());
    let (_, resp) = c.request("tasks/result", json!({"taskId": slow})).await;
    let mut result = resp.sse();
    assert!(result.next().await.unwrap().is_priming());

    let t0 = Instant::now();
    server.terminate();
    // Both open streams are closed with a retry field.
    for sse in [&mut result, &mut standalone] {
        let rest = sse.rest().await;
        assert!(
            rest.last().and_then(|e| e.retry).is_some(),
            "closed with retry: {rest:?}"
        );
    }
    // No new connections while draining.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        tokio::net::TcpStream::connect(server.addr).await.is_err(),
        "the listener is closed"
    );
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("exits after the grace period");
    let elapsed = t0.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        elapsed >= Duration::from_millis(1300),
        "waited for the grace period: {elapsed:?}"
    );
    assert!(
        server.stderr().contains("failing 1 task(s)"),
        "{}",
        server.stderr()
    );

    // What the store says after a restart.
    let server = Server::start(&["--store", &store]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let q = c.task(&quick).await;
    assert_eq!(q["result"]["status"], "completed", "{q}");
    let s = c.task(&slow).await;
    assert_eq!(s["result"]["status"], "failed", "{s}");
    assert_eq!(
        s["result"]["statusMessage"],
        "The server shut down before the task finished"
    );
    let r = c.rpc("tasks/result", json!({"taskId": slow})).await;
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("The server shut down before the task finished"),
        "{r}"
    );
    drop(server);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}

#[tokio::test]
async fn sigterm_with_nothing_running_exits_at_once() {
    let mut server = Server::start(&["--shutdown-grace", "30s"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let t = c.start_task("sleep", json!({"ms": 10})).await;
    c.wait_status(&t, "completed").await;
    let t0 = Instant::now();
    server.terminate();
    let status = server.wait_exit(Duration::from_secs(10)).expect("exits");
    assert!(status.success());
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}
