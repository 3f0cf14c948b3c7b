//! The client library against `mcp-tasks serve` over Streamable HTTP: every task path,
//! SSE streams closed under it (resumed with `Last-Event-ID`), a session that ends (404,
//! new session), resume from a second connection, bearer auth.
#![allow(missing_docs)]

use crate::client_support as support;

use std::io::{Read, Write};
use std::time::Duration;

use futures::StreamExt;
use mcp_tasks_client::{
    CallOptions, Client, ClientConfig, ClientError, HttpClientConfig, TaskStatus,
};
use mcp_tasks_proto::codes;
use serde_json::json;
use support::{HttpServer, LIMIT, answering, connect_http, tokens};

/// Short SSE holds, so that long waits see their connections closed and resumed.
const SHORT_HOLD: [&str; 4] = ["--sse-hold", "200ms", "--sse-retry", "50ms"];

fn server(tokens: &support::TempFile) -> HttpServer {
    let mut args = vec!["--auth-tokens", tokens.path()];
    args.extend(SHORT_HOLD);
    HttpServer::start(&args)
}

/// DELETE the session with a raw HTTP/1.1 request; returns the status code.
fn delete_session(url: &str, session: &str, token: &str) -> u16 {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(
        s,
        "DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nMcp-Session-Id: {session}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    resp.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn every_task_path() {
    let t = tokens();
    let srv = server(&t);
    let c = connect_http(&srv.url, Some("tok-alice"), answering()).await;
    let info = c.http_session().unwrap();
    assert!(info.session_id.is_some());
    assert_eq!(info.protocol_version.as_deref(), Some("2025-11-25"));
    let caps = c.server_tasks();
    assert!(caps.tools_call && caps.list && caps.cancel, "{caps:?}");

    assert_eq!(
        c.call_tool("echo", json!({"text": "hi"}))
            .await
            .unwrap()
            .text(),
        "hi"
    );

    let task = c
        .call_tool_as_task("sleep", json!({"ms": 300}), &CallOptions::default())
        .await
        .unwrap();
    let updates = task.updates();
    assert_eq!(task.wait().await.unwrap().status, TaskStatus::Completed);
    let seen: Vec<_> = tokio::time::timeout(LIMIT, updates.collect::<Vec<_>>())
        .await
        .unwrap();
    assert_eq!(seen.last().unwrap().status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "slept 300");

    let task = c
        .call_tool_as_task(
            "error",
            json!({"message": "quota exceeded", "code": -32077}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let err = task.result().await.unwrap_err();
    let error = err.rpc_error().unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32077, "quota exceeded")
    );
    assert_eq!(err.task().unwrap().status, TaskStatus::Failed);

    let task = c
        .call_tool_as_task("fail", json!({"message": "nope"}), &CallOptions::default())
        .await
        .unwrap();
    assert!(task.result().await.unwrap().is_error());

    let task = c
        .call_tool_as_task("sleep", json!({"ms": 60_000}), &CallOptions::default())
        .await
        .unwrap();
    task.cancel().await.unwrap();
    assert!(task.result().await.unwrap_err().is_cancelled());

    assert_eq!(
        c.call_tool("ask", json!({"question": "q"}))
            .await
            .unwrap()
            .text(),
        "42"
    );
    let task = c
        .call_tool_as_task("summarize", json!({"text": "t"}), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(task.wait().await.unwrap().status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "short");

    assert!(c.list_tasks().await.unwrap().len() >= 6);
    c.close().await;
}

#[tokio::test]
async fn closed_sse_connections_are_resumed() {
    let t = tokens();
    let srv = server(&t);
    let c = connect_http(&srv.url, Some("tok-alice"), answering()).await;
    // A blocking tasks/result and a slow plain call outlive several 200 ms holds.
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 1200}), &CallOptions::default())
        .await
        .unwrap();
    let (r, plain) = tokio::join!(task.result(), c.call_tool("sleep", json!({"ms": 900})));
    assert_eq!(r.unwrap().text(), "slept 1200");
    assert_eq!(plain.unwrap().text(), "slept 900");
    let info = c.http_session().unwrap();
    assert!(info.resumptions >= 2, "{info:?}");
    // Progress sent while the connection was away is replayed, not lost.
    let mut notes = c.notifications();
    let token = c.new_progress_token();
    let r = c
        .call_tool_with(
            "progress",
            json!({"steps": 4, "ms": 150}),
            &CallOptions::default().with_progress_token(token),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "done 4");
    let mut n = 0;
    while let Ok(note) = notes.try_recv() {
        if note.method == "notifications/progress" {
            n += 1;
        }
    }
    assert_eq!(n, 4);
    c.close().await;
}

#[tokio::test]
async fn a_session_that_ends_is_replaced() {
    let t = tokens();
    let srv = server(&t);
    let c = connect_http(&srv.url, Some("tok-alice"), answering()).await;
    let task = c
        .call_tool_as_task("sleep", json!({"ms": 500}), &CallOptions::default())
        .await
        .unwrap();
    let old = c.http_session().unwrap().session_id.unwrap();
    let status = delete_session(&srv.url, &old, "tok-alice");
    assert!((200..300).contains(&status), "DELETE answered {status}");
    // The next request gets 404, the client starts a new session and retries it; the
    // task (bound to the principal, not the session) is still there.
    let t2 = c.task(task.id()).await.unwrap();
    assert_eq!(t2.id(), task.id());
    let info = c.http_session().unwrap();
    assert_eq!(info.reinitializations, 1);
    assert_ne!(info.session_id.as_deref(), Some(old.as_str()));
    assert_eq!(task.result().await.unwrap().text(), "slept 500");
    // And the new session serves input_required, over its own streams.
    assert_eq!(
        c.call_tool("ask", json!({"question": "q"}))
            .await
            .unwrap()
            .text(),
        "42"
    );
    c.close().await;
}

#[tokio::test]
async fn resume_from_a_second_connection_of_the_same_principal() {
    let t = tokens();
    let srv = server(&t);
    let a = connect_http(&srv.url, Some("tok-alice"), answering()).await;
    let task = a
        .call_tool_as_task("sleep", json!({"ms": 800}), &CallOptions::default())
        .await
        .unwrap();
    let id = task.id().to_owned();
    a.close().await;

    let b = connect_http(&srv.url, Some("tok-alice"), ClientConfig::default()).await;
    let resumed = b.task(&id).await.unwrap();
    assert_eq!(resumed.result().await.unwrap().text(), "slept 800");
    assert!(
        b.list_tasks()
            .await
            .unwrap()
            .iter()
            .any(|t| t.task_id == id)
    );

    // Another principal's task looks exactly like a missing one.
    let other = connect_http(&srv.url, Some("tok-bob"), ClientConfig::default()).await;
    let err = other.task(&id).await.unwrap_err();
    assert_eq!(err.rpc_error().unwrap().code, codes::INVALID_PARAMS);
    b.close().await;
    other.close().await;
}

#[tokio::test]
async fn a_bad_token_is_a_transport_error_with_its_status() {
    let t = tokens();
    let srv = server(&t);
    let mut http = HttpClientConfig::new(&srv.url);
    http.bearer_token = Some("wrong".into());
    let err = Client::connect_http(http, ClientConfig::default())
        .await
        .unwrap_err();
    let ClientError::Transport { error, .. } = &err else {
        panic!("expected a transport error, got {err:?}")
    };
    assert_eq!(error.http_status, Some(401));
}

#[tokio::test]
async fn an_unreachable_server_fails_fast() {
    // Bind and drop: nothing listens there any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = HttpClientConfig::new(format!("http://127.0.0.1:{port}/mcp"));
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        Client::connect_http(http, ClientConfig::default()),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, ClientError::Transport { .. }), "{err:?}");
    let err = Client::connect_http(HttpClientConfig::new("not a url"), ClientConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Connect(_)), "{err:?}");
}
