//! Without authentication: tasks belong to no one, the id is the capability (any session
//! reaches a task by id), `tasks.list` is not declared, and a non-loopback `--listen`
//! needs `--allow-unauthenticated`.

use crate::http_common;

use http_common::{Client, Server, TOKENS_ENV};
use serde_json::json;

#[tokio::test]
async fn no_tasks_list_without_authentication() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    let caps = c.initialize().await["capabilities"].clone();
    assert!(caps["tasks"]["cancel"].is_object(), "{caps}");
    assert!(caps["tasks"].get("list").is_none(), "{caps}");
    let m = c.rpc("tasks/list", json!({})).await;
    assert!(m.get("error").is_some(), "{m}");
}

#[tokio::test]
async fn the_task_id_is_the_capability() {
    let server = Server::start(&[]);
    let mut a = Client::new(&server);
    a.initialize().await;
    let slow = a.start_task("sleep", json!({"ms": 60_000})).await;
    let quick = a.start_task("sleep", json!({"ms": 50})).await;
    // The creating session goes away; another one reaches both tasks by id.
    assert_eq!(a.delete().await.status, 204);
    let mut b = Client::new(&server);
    b.initialize().await;
    assert_eq!(b.task(&slow).await["result"]["status"], "working");
    let r = b.rpc("tasks/result", json!({"taskId": quick})).await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 50");
    let c = b.rpc("tasks/cancel", json!({"taskId": slow})).await;
    assert_eq!(c["result"]["status"], "cancelled");
}

#[tokio::test]
async fn non_loopback_listen_needs_auth_or_an_explicit_opt_out() {
    let (status, stderr) = Server::try_start(&["--listen", "0.0.0.0:0"], &[])
        .err()
        .expect("refuses to start");
    assert!(status.is_some_and(|s| !s.success()));
    assert!(stderr.contains("--allow-unauthenticated"), "{stderr}");

    let open = Server::start(&["--listen", "0.0.0.0:0", "--allow-unauthenticated"]);
    let mut c = Client::new(&open);
    c.addr = format!("127.0.0.1:{}", open.addr.port()).parse().unwrap();
    c.initialize().await;

    let authed = Server::start_env(&["--listen", "0.0.0.0:0"], &[(TOKENS_ENV, "t p")]);
    let mut c = Client::new(&authed).with_token("t");
    c.addr = format!("127.0.0.1:{}", authed.addr.port()).parse().unwrap();
    c.initialize().await;
}
