//! A short PostgreSQL outage while a `tasks/result` waits: the waiter keeps waiting (the
//! server reads again with backoff), and the client library and the CLI ride out a
//! "task store unavailable" answer, saying so. The outage is cut by the TCP proxy of
//! [`crate::pg_restart`].

use std::time::Duration;

use serde_json::json;

use crate::client_support::{cli, wait_output};
use crate::common::pg::PgDb;
use crate::http_common::{Client, Server, responses};
use crate::pg_restart::PgProxy;

/// The URL of `db` through `proxy`, failing fast while it is cut.
fn url(db: &PgDb, proxy: &PgProxy) -> String {
    db.url_at(
        Some(&proxy.addr.to_string()),
        "pool=4&statement_timeout=2s&connect_timeout=1",
    )
}

/// Spec (2025-11-25, tasks): "When a receiver receives a `tasks/result` request for a
/// task in any other non-terminal status (`working` or `input_required`), it MUST block
/// the response until the task reaches a terminal status." A database outage of 3 s (the
/// waiter reads again at least once meanwhile: the store's fallback poll is 2 s) while the
/// task runs: `tasks/result` answers the task's result, not -32603.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_result_rides_out_a_short_outage() {
    let db = PgDb::new("outage_wait");
    let proxy = PgProxy::start();
    let server = Server::start(&["--store", &url(&db, &proxy)]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let task = c.start_task("sleep", json!({ "ms": 4500 })).await;
    let mut waiter = c.clone();
    let waiting = tokio::spawn(async move {
        let (_, r) = waiter
            .request("tasks/result", json!({ "taskId": task }))
            .await;
        assert_eq!(r.status, 200, "{r:?}");
        if r.is_sse() {
            let events = r.sse().until_response().await;
            responses(&events).pop().expect("a response on the stream")
        } else {
            r.json().await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert!(
        !waiting.is_finished(),
        "the waiter was answered during the outage"
    );
    proxy.restore();
    let msg = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the waiter is answered once the store is back")
        .unwrap();
    assert_eq!(
        msg["result"]["content"][0]["text"], "slept 4500",
        "the result, not an error: {msg}"
    );
}

/// A server that waits through an outage for less time than it lasts
/// (`--outcome-retry 500ms`) answers the waiting `tasks/result` -32603 "task store
/// unavailable": `mcp-tasks call` says that the store is unavailable and that it is
/// retrying, retries, and prints the result once the store is back (exit 0).
#[test]
fn the_cli_says_the_store_is_unavailable_and_retries() {
    let db = PgDb::new("outage_cli");
    let proxy = PgProxy::start();
    let server = Server::start(&["--store", &url(&db, &proxy), "--outcome-retry", "500ms"]);
    let url = server.url();
    let child = cli(&["call", "sleep", "--arg", "ms=6000", "--task", "--url", &url])
        .spawn()
        .expect("spawn the CLI");
    std::thread::sleep(Duration::from_millis(1500));
    proxy.cut();
    std::thread::sleep(Duration::from_millis(4000));
    proxy.restore();
    let out = wait_output(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{stdout}");
    assert_eq!(stdout, "slept 6000\n", "{stderr}");
    assert!(
        stderr.contains("mcp-tasks: the server's task store is unavailable (")
            && stderr.contains("); retrying"),
        "the CLI says so: {stderr}"
    );
    assert!(
        stderr.contains("mcp-tasks: the server answers again"),
        "{stderr}"
    );
}
