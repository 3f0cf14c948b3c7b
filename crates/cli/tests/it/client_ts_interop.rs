//! Interop: our client (library and CLI) against the official TypeScript SDK 1.32.2
//! example server `simpleTaskInteractive` (Streamable HTTP, stateful sessions). Its two
//! tools require tasks and go `input_required`: `write_haiku` needs a sampling answer,
//! `confirm_delete` an elicitation answer; it sends those requests on the standalone GET
//! stream while our `tasks/result` is open. It declares `tasks.requests.tools.call` only
//! (no `list`, no `cancel`), omits `ttl` handling of its own, and sends no status
//! notifications.
//!
//! Skipped (with a message) only when `interop/node_modules` is absent; CI installs it
//! with `npm ci --prefix interop` before the tests.
#![allow(missing_docs)]

use crate::client_support as support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use mcp_tasks_client::{
    CallOptions, ClientConfig, ClientError, FixedElicitation, FixedSampling, TaskStatus,
    TaskSupport, elicit, task_support,
};
use serde_json::json;
use support::{LIMIT, cli, connect_http, run, stderr, stdout};

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

const EXAMPLE: &str =
    "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleTaskInteractive.js";

/// The example server on a free port, killed on drop.
struct TsServer {
    child: Child,
    url: String,
}

impl Drop for TsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `None` (after saying why) when the SDK is not installed.
fn ts_server() -> Option<TsServer> {
    let dir = interop_dir();
    if !dir.join("node_modules").is_dir() {
        eprintln!(
            "SKIPPED: {} is absent; run `npm ci --prefix interop` to test against the TypeScript SDK",
            dir.join("node_modules").display()
        );
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        return None;
    }
    assert!(
        dir.join(EXAMPLE).is_file(),
        "interop/node_modules has no {EXAMPLE}: is @modelcontextprotocol/sdk 1.32.2 installed?"
    );
    for _attempt in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new("node")
            .arg(EXAMPLE)
            .current_dir(&dir)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node must be installed to run the interop tests");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if line.starts_with("Starting server on") {
                    let _ = tx.send(());
                }
                // Keep draining so that the server never blocks on a full pipe.
            }
        });
        if rx.recv_timeout(LIMIT).is_ok() {
            return Some(TsServer {
                child,
                url: format!("http://127.0.0.1:{port}/mcp"),
            });
        }
        // The port was taken meanwhile (or node failed): try another.
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("the TypeScript example server did not start");
}

fn answering(confirm: bool) -> ClientConfig {
    ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::accept(
            json!({"confirm": confirm}),
        )))
        .with_sampling(FixedSampling {
            model: "test-model".into(),
            text: "Ferris scuttles by".into(),
        })
}

#[tokio::test]
async fn capabilities_and_tools_are_read_as_declared() {
    let Some(ts) = ts_server() else { return };
    let c = connect_http(&ts.url, None, answering(true)).await;
    assert_eq!(c.protocol_version(), "2025-11-25");
    let caps = c.server_tasks();
    assert!(
        caps.declared && caps.tools_call && !caps.list && !caps.cancel,
        "{caps:?}"
    );
    let tools = c.list_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["confirm_delete", "write_haiku"]);
    assert!(
        tools
            .iter()
            .all(|t| task_support(t) == TaskSupport::Required)
    );
    // What it does not declare is refused before anything is sent.
    assert!(matches!(
        c.list_tasks().await.unwrap_err(),
        ClientError::Unsupported { .. }
    ));
    c.close().await;
}

#[tokio::test]
async fn write_haiku_is_answered_through_sampling() {
    let Some(ts) = ts_server() else { return };
    let c = connect_http(&ts.url, None, answering(true)).await;
    // A required tool: call_tool runs it as a task and waits for its result.
    let r = tokio::time::timeout(LIMIT, c.call_tool("write_haiku", json!({"topic": "crabs"})))
        .await
        .expect("no result in time")
        .unwrap();
    assert_eq!(r.text(), "Haiku:\nFerris scuttles by");
    assert!(
        r.as_value()["_meta"]["io.modelcontextprotocol/related-task"]["taskId"].is_string(),
        "{:?}",
        r.as_value()
    );
    c.close().await;
}

#[tokio::test]
async fn confirm_delete_is_answered_through_elicitation() {
    let Some(ts) = ts_server() else { return };
    let yes = connect_http(&ts.url, None, answering(true)).await;
    let task = yes
        .call_tool_as_task(
            "confirm_delete",
            json!({"filename": "notes.txt"}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    // wait() sees input_required and opens tasks/result, on which the question is answered.
    let t = tokio::time::timeout(LIMIT, task.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(t.status, TaskStatus::Completed);
    assert_eq!(task.result().await.unwrap().text(), "Deleted 'notes.txt'");

    let no = connect_http(
        &ts.url,
        None,
        ClientConfig::default().with_elicitation(FixedElicitation(elicit::decline())),
    )
    .await;
    let r = tokio::time::timeout(
        LIMIT,
        no.call_tool("confirm_delete", json!({"filename": "notes.txt"})),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(r.text(), "Deletion cancelled");
    // Cancel is not declared by this server: refused locally.
    assert!(matches!(
        task.cancel().await.unwrap_err(),
        ClientError::Unsupported { .. }
    ));
    yes.close().await;
    no.close().await;
}

#[tokio::test]
async fn a_task_is_resumed_from_a_second_connection() {
    let Some(ts) = ts_server() else { return };
    let a = connect_http(&ts.url, None, answering(true)).await;
    let task = a
        .call_tool_as_task(
            "write_haiku",
            json!({"topic": "tides"}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let id = task.id().to_owned();
    drop(task);
    a.close().await;

    let b = connect_http(&ts.url, None, answering(true)).await;
    let resumed = b.task(&id).await.unwrap();
    assert!(!resumed.status().is_terminal());
    let r = tokio::time::timeout(LIMIT, resumed.result())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.text(), "Haiku:\nFerris scuttles by");
    assert_eq!(resumed.status(), TaskStatus::Completed);
    b.close().await;
}

#[test]
fn the_cli_against_the_typescript_server() {
    let Some(ts) = ts_server() else { return };
    let o = run(&mut cli(&[
        "call",
        "write_haiku",
        "--arg",
        "topic=rust",
        "--sample-reply",
        "borrowed light returns",
        "--url",
        &ts.url,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Haiku:\nborrowed light returns\n");

    let o = run(&mut cli(&[
        "call",
        "confirm_delete",
        "--arg",
        "filename=a.txt",
        "--elicit-reply",
        r#"{"confirm": true}"#,
        "--json",
        "--url",
        &ts.url,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = support::json_out(&o);
    assert_eq!(v["result"]["content"][0]["text"], "Deleted 'a.txt'");
    assert_eq!(v["task"]["status"], "completed");

    // Not on a terminal, no reply: declined, and said so.
    let o = run(&mut cli(&[
        "call",
        "confirm_delete",
        "--arg",
        "filename=a.txt",
        "--url",
        &ts.url,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Deletion cancelled\n");
    assert!(stderr(&o).contains("declined"), "{}", stderr(&o));

    // Refused by the client before sending (exit 4): the server does not declare it.
    let o = run(&mut cli(&["tasks", "list", "--url", &ts.url]));
    assert_eq!(o.status.code(), Some(4));
    assert!(stderr(&o).contains("tasks.list"), "{}", stderr(&o));
}
