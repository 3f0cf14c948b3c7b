//! The client against our own server, in process over a pipe: every task path.
#![allow(missing_docs)]

use std::time::Duration;

use futures::StreamExt;
use mcp_tasks_client::{
    CallOptions, Client, ClientConfig, ClientError, FixedElicitation, FixedSampling, TaskStatus,
    elicit,
};
use mcp_tasks_proto::codes;
use mcp_tasks_server::Server;
use serde_json::json;

/// The demo tools of `mcp-tasks serve`, as the binary builds them (one copy of the code).
#[path = "../../../cli/src/demo.rs"]
mod demo;

const LIMIT: Duration = Duration::from_secs(20);

async fn connect(config: ClientConfig) -> Client {
    let server = Server::builder()
        .tools(demo::all())
        .with_policy(|p| p.poll_interval_ms = 100)
        .build()
        .await
        .expect("a server with tasks in memory");
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        server
            .serve(
                mcp_tasks_server::Transport::io(sr, sw),
                std::future::pending(),
            )
            .await
    });
    let (cr, cw) = tokio::io::split(client_io);
    // A 2025-11-25 test: `RevisionChoice::Auto` would find this dual-era server modern.
    let config = config.with_protocol(mcp_tasks_client::Revision::V2025_11_25);
    Client::connect_io(tokio::io::BufReader::new(cr), cw, config)
        .await
        .expect("connect")
}

fn interactive() -> ClientConfig {
    ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::accept(json!({"answer": "42"}))))
        .with_sampling(FixedSampling {
            model: "test".into(),
            text: "short".into(),
        })
}

#[tokio::test]
async fn initialize_remembers_both_sides() {
    let c = connect(interactive()).await;
    assert_eq!(c.protocol_version(), "2025-11-25");
    let t = c.server_tasks();
    assert!(t.declared && t.list && t.cancel && t.tools_call);
    assert_eq!(
        c.client_capabilities(),
        &json!({"elicitation": {"form": {}}, "sampling": {}})
    );
}

#[tokio::test]
async fn plain_call_and_required_tool_as_task() {
    let c = connect(interactive()).await;
    let r = c.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r.text(), "hi");
    // `ask` requires a task: call_tool runs it as one, answering the elicitation.
    let r = tokio::time::timeout(LIMIT, c.call_tool("ask", json!({"question": "?"})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.text(), "42");
}

#[tokio::test]
async fn task_wait_result_and_status_stream() {
    let c = connect(interactive()).await;
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 300}), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(task.status(), TaskStatus::Working);
    assert!(task.immediate_response().is_some());
    let updates = task.updates();
    let t = tokio::time::timeout(LIMIT, task.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    let seen: Vec<_> = updates.collect().await;
    assert_eq!(seen.last().unwrap().status, TaskStatus::Completed);
    let r = task.result().await.unwrap();
    assert_eq!(r.text(), "slept 300");
    assert_eq!(
        r.as_value()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(task.id())
    );
}

#[tokio::test]
async fn failed_tasks_keep_their_exact_error() {
    let c = connect(interactive()).await;
    let task = c
        .call_tool_as_task(
            "error",
            json!({"message": "boom", "code": -32042}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let err = tokio::time::timeout(LIMIT, task.result())
        .await
        .unwrap()
        .unwrap_err();
    let ClientError::Task { task: t, error } = &err else {
        panic!("expected the task's error, got {err:?}")
    };
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(error.code, -32042);
    assert_eq!(error.message, "boom");

    // isError results are results: returned exactly, task failed.
    let task = c
        .call_tool_as_task("fail", json!({"message": "bad"}), &CallOptions::default())
        .await
        .unwrap();
    let r = task.result().await.unwrap();
    assert!(r.is_error());
    assert_eq!(r.text(), "bad");
    assert_eq!(task.status(), TaskStatus::Failed);
}

#[tokio::test]
async fn cancel_and_resume_and_list() {
    let c = connect(interactive()).await;
    let task = c
        .call_tool_as_task(
            "sleep",
            json!({"ms": 60_000}),
            &CallOptions::default().with_ttl(120_000),
        )
        .await
        .unwrap();
    assert_eq!(task.task().ttl, Some(120_000));
    let other = c.task(task.id()).await.unwrap();
    assert_eq!(other.id(), task.id());
    let t = task.cancel().await.unwrap();
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert_eq!(other.status(), TaskStatus::Cancelled, "handles share state");
    let err = task.result().await.unwrap_err();
    assert!(err.is_cancelled(), "{err:?}");
    // A terminal task cannot be cancelled again: the server's exact error.
    let err = task.cancel().await.unwrap_err();
    assert_eq!(err.rpc_error().unwrap().code, codes::INVALID_PARAMS);
    let all = c.list_tasks().await.unwrap();
    assert!(all.iter().any(|t| t.task_id == task.id()));
    let err = c.task("no-such-task").await.unwrap_err();
    assert_eq!(err.rpc_error().unwrap().code, codes::INVALID_PARAMS);
}

#[tokio::test]
async fn forbidden_tools_are_refused_before_sending() {
    let c = connect(interactive()).await;
    let err = c
        .call_tool_as_task("echo", json!({"text": "x"}), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_unsupported(), "{err:?}");
    assert!(err.rpc_error().is_none(), "{err:?}");
    assert!(err.to_string().contains("taskSupport"), "{err}");
    let err = c
        .call_tool_as_task("nope", json!({}), &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ClientError::Unsupported { what, .. } if what == "tool `nope`"),
        "{err:?}"
    );
}

#[tokio::test]
async fn sampling_through_input_required() {
    let c = connect(interactive()).await;
    let task = c
        .call_tool_as_task(
            "summarize",
            json!({"text": "long"}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    // wait() must notice input_required and drive tasks/result so the question is answered.
    let t = tokio::time::timeout(LIMIT, task.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "short");
}

#[tokio::test]
async fn without_handlers_the_server_learns_no_capability() {
    let c = connect(ClientConfig::default()).await;
    assert_eq!(c.client_capabilities(), &json!({}));
    let err = c
        .call_tool("ask", json!({"question": "?"}))
        .await
        .unwrap_err();
    // The tool's own error (the client cannot elicit) is the task's outcome.
    assert_eq!(err.task().unwrap().status, TaskStatus::Failed);
    assert_eq!(err.rpc_error().unwrap().code, codes::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn progress_notifications_reach_the_application() {
    let c = connect(interactive()).await;
    let mut notes = c.notifications();
    let token = c.new_progress_token();
    let task = c
        .call_tool_as_task(
            "progress",
            json!({"steps": 3, "ms": 10}),
            &CallOptions::default().with_progress_token(token.clone()),
        )
        .await
        .unwrap();
    task.result().await.unwrap();
    let mut progress = 0;
    while let Ok(n) = notes.try_recv() {
        if n.method == "notifications/progress" {
            assert_eq!(n.params.as_ref().unwrap()["progressToken"], token);
            progress += 1;
        }
    }
    assert_eq!(progress, 3);
}

#[tokio::test]
async fn requests_time_out_and_closed_connections_fail() {
    let c = connect(interactive().with_request_timeout(Some(Duration::from_millis(1)))).await;
    // A 1 ms bound is too short for a round trip through the engine... usually; either
    // outcome is legal, but a timeout must be reported as one.
    if let Err(e) = c.list_tasks().await {
        assert!(matches!(e, ClientError::Timeout { .. }), "{e:?}");
    }
    c.close().await;
    assert!(c.is_closed());
    let err = c.list_tools().await.unwrap_err();
    assert!(matches!(err, ClientError::Closed), "{err:?}");
}

/// Bad arguments: the server answers the task call at once with an `isError` result and
/// creates no task; `call_tool_as_task` says so with that result, `call_tool` (a required
/// tool) returns it.
#[tokio::test]
async fn bad_arguments_create_no_task_and_come_back_as_the_result() {
    let c = connect(interactive()).await;
    let e = c
        .call_tool_as_task("sleep", json!({"ms": -5}), &CallOptions::default())
        .await
        .unwrap_err();
    let ClientError::NotStarted(r) = &e else {
        panic!("{e:?}");
    };
    assert!(r.is_error());
    assert_eq!(
        r.text(),
        "Invalid arguments for tool `sleep`: ms: -5 is less than the minimum of 0"
    );
    let r = c.call_tool("ask", json!({"question": 7})).await.unwrap();
    assert!(r.is_error());
    assert_eq!(
        r.text(),
        "Invalid arguments for tool `ask`: question: 7 is not of type \"string\""
    );
    assert!(c.list_tasks().await.unwrap().is_empty());
}

/// Answers no sampling request; reports each one's cancellation (its handler dropped).
struct NeverSamples(tokio::sync::mpsc::UnboundedSender<&'static str>);

#[async_trait::async_trait]
impl mcp_tasks_client::SamplingHandler for NeverSamples {
    async fn create_message(
        &self,
        request: mcp_tasks_client::ServerRequest,
    ) -> Result<serde_json::Value, mcp_tasks_proto::ErrorObject> {
        // A cancelled request's handler is dropped: the guard tells.
        struct OnDrop(tokio::sync::mpsc::UnboundedSender<&'static str>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                let _ = self.0.send("cancelled");
            }
        }
        let _guard = OnDrop(self.0.clone());
        let _ = self.0.send("asked");
        request.cancel.cancelled().await;
        Err(mcp_tasks_proto::ErrorObject::internal("cancelled"))
    }
}

/// Issue 16: the server's own request (sampling, as for elicitation) waited for by a
/// plain call's handler is cancelled with `notifications/cancelled` when that handler is
/// cancelled (here: the client stops waiting for its call).
#[tokio::test]
async fn a_cancelled_call_cancels_the_servers_request_it_waited_for() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let c = connect(ClientConfig::default().with_sampling(NeverSamples(tx))).await;
    let mut call = Box::pin(c.call_tool("summarize", json!({"text": "a long text"})));
    tokio::select! {
        r = &mut call => panic!("the call ended first: {r:?}"),
        seen = rx.recv() => assert_eq!(seen, Some("asked")),
    }
    // The client stops waiting: its tools/call is cancelled, and the server's handler
    // with it, which cancels the sampling request.
    drop(call);
    let seen = tokio::time::timeout(LIMIT, rx.recv()).await.unwrap();
    assert_eq!(seen, Some("cancelled"));
}
