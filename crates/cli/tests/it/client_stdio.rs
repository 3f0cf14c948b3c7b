//! The client library against `mcp-tasks serve --stdio`: every task path, resume from a
//! second connection, the exact error of a failed task, process-group teardown.
#![allow(missing_docs)]

use crate::client_support as support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use mcp_tasks_client::{CallOptions, Client, ClientConfig, ClientError, TaskStatus};
use serde_json::json;
use support::{LIMIT, TempFile, alive, answering, bin, connect_stdio, early_result_server};

#[tokio::test]
async fn every_task_path() {
    let c = connect_stdio("memory", answering()).await;
    assert_eq!(c.protocol_version(), "2025-11-25");
    assert!(c.server_tasks().tools_call && c.server_tasks().list && c.server_tasks().cancel);

    // Plain.
    let r = c.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r.text(), "hi");

    // Completed, with the status stream ending on it.
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 200}), &CallOptions::default())
        .await
        .unwrap();
    let updates = task.updates();
    assert_eq!(task.wait().await.unwrap().status, TaskStatus::Completed);
    let seen: Vec<_> = tokio::time::timeout(LIMIT, updates.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(seen.last().unwrap().status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "slept 200");

    // Failed with a JSON-RPC error: exactly that error.
    let task = c
        .call_tool_as_task(
            "error",
            json!({"message": "disk on fire", "code": -32050}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    match task.result().await {
        Err(ClientError::Task { task, error }) => {
            assert_eq!(task.status, TaskStatus::Failed);
            assert_eq!(error.code, -32050);
            assert_eq!(error.message, "disk on fire");
        }
        other => panic!("expected the task's error, got {other:?}"),
    }

    // Failed with isError: the result itself.
    let task = c
        .call_tool_as_task("fail", json!({"message": "nope"}), &CallOptions::default())
        .await
        .unwrap();
    let r = task.result().await.unwrap();
    assert!(r.is_error());
    assert_eq!(task.status(), TaskStatus::Failed);

    // Cancelled.
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 60_000}), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(task.cancel().await.unwrap().status, TaskStatus::Cancelled);
    let err = task.result().await.unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");

    // input_required: elicitation (a required tool, through call_tool) and sampling.
    let r = c.call_tool("ask", json!({"question": "q"})).await.unwrap();
    assert_eq!(r.text(), "42");
    let task = c
        .call_tool_as_task("summarize", json!({"text": "t"}), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(task.wait().await.unwrap().status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "short");

    // Listed.
    let all = c.list_tasks().await.unwrap();
    assert!(all.len() >= 6, "{all:?}");
    c.close().await;
}

#[tokio::test]
async fn resume_from_a_second_connection() {
    let db = TempFile::new("tasks.db", "");
    let store = format!("sqlite:{}", db.path());
    let a = connect_stdio(&store, answering()).await;
    let task = a
        .call_tool_as_task("sleep", json!({"ms": 1500}), &CallOptions::default())
        .await
        .unwrap();
    let id = task.id().to_owned();

    // Another process on the same store, another connection: resume by id.
    let b = connect_stdio(&store, ClientConfig::default()).await;
    let resumed = b.task(&id).await.unwrap();
    assert_eq!(resumed.status(), TaskStatus::Working);
    let r = tokio::time::timeout(LIMIT, resumed.result())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.text(), "slept 1500");
    assert_eq!(resumed.status(), TaskStatus::Completed);
    // The first connection sees the same outcome.
    assert_eq!(task.result().await.unwrap().text(), "slept 1500");
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn status_notifications_end_a_wait_early_but_are_not_needed() {
    // The server asks for 30 s between polls; its status notifications end the wait
    // long before the first poll would.
    let cmd = support::stdio_command("memory", &["--poll-interval", "30000"]);
    let c = mcp_tasks_client::Client::connect_stdio(cmd, support::legacy())
        .await
        .unwrap();
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 100}), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(task.task().poll_interval, Some(30_000));
    let start = Instant::now();
    let t = tokio::time::timeout(Duration::from_secs(10), task.wait())
        .await
        .expect("a status notification should end the wait")
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    c.close().await;
    // Without notifications (the TypeScript server sends none, see client_ts_interop.rs)
    // the same wait ends by polling tasks/get.
}

#[tokio::test]
async fn dropping_the_client_kills_the_process_group() {
    let pidfile = TempFile::new("pid", "");
    // The server starts a child of its own (`sleep`) in its process group.
    let script = format!(
        "sleep 1000 & echo $! > {}; exec {} serve --stdio --store memory",
        pidfile.path(),
        bin()
    );
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", &script]).env("RUST_LOG", "warn");
    let c = mcp_tasks_client::Client::connect_stdio(cmd, support::legacy())
        .await
        .unwrap();
    let pid: u32 = std::fs::read_to_string(&pidfile.0)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    drop(c);
    let start = Instant::now();
    while alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the server's child survived the client"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_server_that_exits_fails_pending_requests() {
    let c = connect_stdio("memory", ClientConfig::default()).await;
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 60_000}), &CallOptions::default())
        .await
        .unwrap();
    let waiting = tokio::spawn({
        let task = task.clone();
        async move { task.result().await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    c.close().await;
    let err = tokio::time::timeout(LIMIT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err:?}");
}

/// Issue 15 #17: a receiver that answers `tasks/result` early (FastMCP 3.4.11: -32602 "Task
/// not completed yet" while the task runs) does not make the client give up: it polls
/// `tasks/get` at the task's pollInterval and asks again once the task is terminal. An
/// error for a task the receiver does not know stands.
#[tokio::test]
async fn a_tasks_result_answered_early_is_asked_again_once_the_task_ended() {
    let [program, script] = early_result_server().try_into().unwrap();
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg(script);
    let c = Client::connect_stdio(cmd, ClientConfig::default())
        .await
        .expect("connect to the fake server");
    let options = CallOptions::default();

    let task = c
        .call_tool_as_task("work", json!({"ms": 600}), &options)
        .await
        .unwrap();
    let r = tokio::time::timeout(LIMIT, task.result())
        .await
        .expect("a result in time")
        .expect("the task's result, not the early error");
    assert_eq!(r.text(), "worked 600");
    assert_eq!(task.status(), TaskStatus::Completed);

    // A failed task (FastMCP gives a CallToolResult with isError).
    let task = c
        .call_tool_as_task("work", json!({"ms": 200, "fail": true}), &options)
        .await
        .unwrap();
    let r = tokio::time::timeout(LIMIT, task.result())
        .await
        .unwrap()
        .unwrap();
    assert!(r.is_error(), "{:?}", r.as_value());
    assert_eq!(task.status(), TaskStatus::Failed);

    // wait(), then the result of a terminal task.
    let task = c
        .call_tool_as_task("work", json!({"ms": 300}), &options)
        .await
        .unwrap();
    let t = tokio::time::timeout(LIMIT, task.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "worked 300");

    // A task the receiver forgot: its -32602 is the answer.
    let task = c
        .call_tool_as_task("work", json!({"ms": 100, "forget": true}), &options)
        .await
        .unwrap();
    let e = tokio::time::timeout(LIMIT, task.result())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.rpc_error().map(|e| e.code), Some(-32602), "{e:?}");
    assert!(e.to_string().contains("not found"), "{e}");
    c.close().await;
}
