//! Interop: our client as a task *receiver*, driven by a server built on the official
//! TypeScript SDK 1.32.2 (`interop/receiver/server.mjs`, an `McpServer` on stdio, or on
//! Streamable HTTP with `--http`). Its
//! tools task-augment `elicitation/create` and `sampling/createMessage` with the SDK's
//! experimental task API (`elicitInputStream` / `createMessageStream` with `{task}`, and
//! `server.request(..., {task})`), poll our client's tasks with `tasks/get`, fetch them
//! with `tasks/result`, list and cancel them, and report what they saw.
//!
//! Skipped (with a message) only when `interop/node_modules` is absent; CI installs it
//! with `npm ci --prefix interop` before the tests.
#![allow(missing_docs)]

use crate::client_support as support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::{
    Client, ClientConfig, ElicitationHandler, SamplingHandler, ServerRequest, TaskReceiver, elicit,
    sampling,
};
use mcp_tasks_proto::ErrorObject;
use serde_json::{Value, json};
use support::{LIMIT, cli, connect_http, run, stderr, stdout};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn script() -> Option<PathBuf> {
    let interop = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop");
    if !interop.join("node_modules").is_dir() {
        eprintln!(
            "SKIPPED: {} is absent; run `npm ci --prefix interop` to test against the TypeScript SDK",
            interop.join("node_modules").display()
        );
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        return None;
    }
    assert!(
        interop
            .join("node_modules/@modelcontextprotocol/sdk/package.json")
            .is_file(),
        "interop/node_modules has no @modelcontextprotocol/sdk"
    );
    Some(interop.join("receiver/server.mjs"))
}

fn node(script: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script);
    cmd
}

/// The script on Streamable HTTP (a free port), killed on drop.
struct HttpScript {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpScript {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_script(script: &std::path::Path) -> HttpScript {
    use std::io::BufRead;
    let mut child = std::process::Command::new("node")
        .arg(script)
        .arg("--http")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("node must be installed to run the interop tests");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the script did not listen: {line}"))
        .to_owned();
    HttpScript { child, url }
}

/// Answers after a pause (so that the server's first `tasks/get` sees `working`), and
/// remembers the tasks it ran as.
#[derive(Clone, Default)]
struct Slow {
    tasks: Arc<Mutex<Vec<Option<String>>>>,
}

#[async_trait]
impl ElicitationHandler for Slow {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        self.tasks.lock().unwrap().push(request.task_id.clone());
        tokio::time::sleep(Duration::from_millis(700)).await;
        Ok(elicit::accept(json!({"name": "from the handler"})))
    }
}

#[async_trait]
impl SamplingHandler for Slow {
    async fn create_message(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        self.tasks.lock().unwrap().push(request.task_id.clone());
        tokio::time::sleep(Duration::from_millis(700)).await;
        Ok(sampling::text("handler-model", "a sampled reply"))
    }
}

/// Never answers; records whether it was stopped by the server's `tasks/cancel`.
#[derive(Clone, Default)]
struct Forever {
    stopped: Arc<Mutex<Vec<bool>>>,
}

struct Stopped(ServerRequest, Arc<Mutex<Vec<bool>>>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0.cancel.is_cancelled());
    }
}

#[async_trait]
impl ElicitationHandler for Forever {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        let _stopped = Stopped(request, Arc::clone(&self.stopped));
        std::future::pending().await
    }
}

async fn report(client: &Client, tool: &str, args: Value) -> Value {
    let r = tokio::time::timeout(LIMIT, client.call_tool(tool, args))
        .await
        .expect("the tool did not answer in time")
        .expect("the tool call");
    assert!(!r.is_error(), "{tool}: {}", r.text());
    serde_json::from_str(&r.text())
        .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}): {}", r.text()))
}

fn check_flow(report: &Value, expected: &Value, handler_tasks: &[Option<String>]) {
    assert!(report["error"].is_null(), "{report}");
    let created = &report["created"];
    let id = created["taskId"].as_str().expect("a task id");
    // CreateTaskResult first, status working; the task ran the handler.
    assert_eq!(created["status"], "working", "{report}");
    assert_eq!(created["ttl"], 60000, "{report}");
    assert_eq!(handler_tasks, [Some(id.to_owned())]);
    // Polled with tasks/get: working, then completed.
    let statuses: Vec<&str> = report["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(statuses.first(), Some(&"working"), "{report}");
    assert_eq!(statuses.last(), Some(&"completed"), "{report}");
    // tasks/result: the handler's exact answer, with related-task _meta.
    for (k, v) in expected.as_object().unwrap() {
        assert_eq!(&report["result"][k], v, "{report}");
        assert_eq!(&report["rawResult"][k], v, "{report}");
    }
    assert_eq!(
        report["rawResult"]["_meta"][RELATED]["taskId"], id,
        "{report}"
    );
    // tasks/list shows it.
    assert!(
        report["listed"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == id && t["status"] == "completed"),
        "{report}"
    );
}

#[tokio::test]
async fn the_ts_sdk_server_polls_and_fetches_a_task_augmented_elicitation() {
    let Some(script) = script() else { return };
    let handler = Slow::default();
    let config = ClientConfig::default()
        .with_elicitation(handler.clone())
        .with_sampling(handler.clone())
        .with_task_receiver(TaskReceiver::new());
    let client = Client::connect_stdio(node(&script), config)
        .await
        .expect("connect to the TypeScript server");
    let r = report(&client, "elicit_as_task", json!({"message": "Your name?"})).await;
    assert_eq!(
        r["clientTasksCapability"],
        json!({"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}, "sampling": {"createMessage": {}}}})
    );
    let tasks = handler.tasks.lock().unwrap().clone();
    check_flow(
        &r,
        &json!({"action": "accept", "content": {"name": "from the handler"}}),
        &tasks,
    );
    let mine = client.received_tasks().await.unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!(json!(mine[0].task_id), r["created"]["taskId"]);
    client.close().await;
}

#[tokio::test]
async fn the_ts_sdk_server_polls_and_fetches_a_task_augmented_sampling() {
    let Some(script) = script() else { return };
    let handler = Slow::default();
    let config = ClientConfig::default()
        .with_sampling(handler.clone())
        .with_task_receiver(TaskReceiver::new());
    let client = Client::connect_stdio(node(&script), config)
        .await
        .expect("connect to the TypeScript server");
    let r = report(
        &client,
        "sample_as_task",
        json!({"prompt": "Say something"}),
    )
    .await;
    let tasks = handler.tasks.lock().unwrap().clone();
    check_flow(
        &r,
        &json!({"role": "assistant", "model": "handler-model", "content": {"type": "text", "text": "a sampled reply"}}),
        &tasks,
    );
    client.close().await;
}

#[tokio::test]
async fn the_ts_sdk_server_cancels_a_task_and_the_handler_stops() {
    let Some(script) = script() else { return };
    let handler = Forever::default();
    let config = ClientConfig::default()
        .with_elicitation(handler.clone())
        .with_task_receiver(TaskReceiver::new());
    let client = Client::connect_stdio(node(&script), config)
        .await
        .expect("connect to the TypeScript server");
    let r = report(
        &client,
        "cancel_elicitation",
        json!({"message": "Never answered"}),
    )
    .await;
    let id = r["created"]["taskId"].as_str().unwrap();
    assert_eq!(r["created"]["status"], "working", "{r}");
    assert_eq!(r["before"]["status"], "working", "{r}");
    assert_eq!(r["cancel"]["status"], "cancelled", "{r}");
    assert_eq!(r["cancel"]["taskId"], id, "{r}");
    assert_eq!(r["after"]["status"], "cancelled", "{r}");
    assert_eq!(r["resultError"]["code"], -32001, "{r}");
    assert_eq!(r["secondCancelError"]["code"], -32602, "{r}");
    assert_eq!(*handler.stopped.lock().unwrap(), [true], "{r}");
    client.close().await;
}

#[test]
fn the_cli_answers_a_task_augmented_elicitation_as_a_task() {
    let Some(script) = script() else { return };
    let o = run(&mut cli(&[
        "call",
        "elicit_as_task",
        "--arg",
        "message=Your name?",
        "--elicit-reply",
        r#"{"name": "from the cli"}"#,
        "--",
        "node",
        script.to_str().unwrap(),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_str(stdout(&o).trim()).expect("the report");
    assert!(r["error"].is_null(), "{r}");
    let id = r["created"]["taskId"].as_str().unwrap();
    assert_eq!(r["created"]["status"], "working", "{r}");
    assert_eq!(
        r["rawResult"],
        json!({"action": "accept", "content": {"name": "from the cli"}, "_meta": {RELATED: {"taskId": id}}})
    );
    assert_eq!(
        r["statuses"].as_array().unwrap().last(),
        Some(&json!("completed"))
    );
    // The CLI says it answered as a task of its own.
    assert!(stderr(&o).contains(id), "{}", stderr(&o));
}

#[tokio::test]
async fn the_same_over_streamable_http() {
    let Some(script) = script() else { return };
    let server = http_script(&script);
    let handler = Slow::default();
    let config = ClientConfig::default()
        .with_elicitation(handler.clone())
        .with_task_receiver(TaskReceiver::new());
    let client = connect_http(&server.url, None, config).await;
    let r = report(&client, "elicit_as_task", json!({"message": "Your name?"})).await;
    let tasks = handler.tasks.lock().unwrap().clone();
    check_flow(
        &r,
        &json!({"action": "accept", "content": {"name": "from the handler"}}),
        &tasks,
    );
    client.close().await;
}
