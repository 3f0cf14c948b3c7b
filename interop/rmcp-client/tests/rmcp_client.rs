//! rmcp 3.11 (the official Rust SDK) as a 2026-07-28 client of `mcp-tasks serve`, over
//! stdio (a child process) and Streamable HTTP, with the tasks extension (SEP-2663):
//! rmcp starts with `server/discover` (`ClientLifecycleMode::Discover`, no `initialize`),
//! and its typed `call_tool_once`, `get_task`, `update_task` and `cancel_task` parse what
//! our server answers. Each transport drives one task to `completed`, one through
//! `input_required` (`ask`, answered with `tasks/update`), one to `cancelled`, one to
//! `failed` (`error` after `--task-after`), and checks that `isError` ends `completed`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, DetailedTask, GetTaskParams, Implementation, InputResponses, ProtocolVersion,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

const DEADLINE: Duration = Duration::from_secs(20);

/// The `mcp-tasks` binary: `$MCP_TASKS_BIN`, else `target/<profile>/mcp-tasks` beside
/// this test's executable (`target/<profile>/deps/`).
fn bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MCP_TASKS_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let p = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .join("mcp-tasks");
    assert!(
        p.exists(),
        "{} is missing: build it first (`cargo build -p mcp-tasks`, or `cargo build --workspace`), or set MCP_TASKS_BIN",
        p.display()
    );
    p
}

/// What rmcp sends in every request's `_meta`: client info, and capabilities declaring
/// the tasks extension and form elicitation.
fn config() -> ClientConfig {
    let caps: ClientCapabilities = serde_json::from_value(json!({
        "extensions": {"io.modelcontextprotocol/tasks": {}},
        "elicitation": {"form": {}},
    }))
    .expect("capabilities");
    ClientConfig::new(caps, Implementation::new("rmcp-interop", "3.11.0"))
}

fn discover_only() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// What both servers run with: `sleep`/`fail`/`error` of 300-400 ms become tasks.
const SERVE: [&str; 4] = ["--store", "memory", "--task-after", "100ms"];

async fn stdio_client() -> Client {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args(["serve", "--stdio"])
        .args(SERVE)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::inherit());
    let transport = TokioChildProcess::new(cmd).expect("spawn mcp-tasks serve --stdio");
    config()
        .serve_with_lifecycle(transport, discover_only())
        .await
        .expect("rmcp starts with server/discover")
}

/// `mcp-tasks serve --listen 127.0.0.1:0`, and the URL it prints.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server() -> HttpServer {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(SERVE)
        .env("RUST_LOG", "info")
        .env_remove("MCP_TASKS_AUTH_TOKENS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tasks serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            eprintln!("[server] {line}");
            if let Some(i) = line.find("listening on http://")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(line[i + "listening on ".len()..].trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(DEADLINE)
        .expect("the server prints `listening on http://...`");
    HttpServer { child, url }
}

async fn http_client(url: &str) -> Client {
    // rmcp's reqwest has no crypto provider of its own in this workspace (rustls with
    // `ring` only); a second install (another test) is refused and harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    config()
        .serve_with_lifecycle(transport, discover_only())
        .await
        .expect("rmcp starts with server/discover over HTTP")
}

fn args(v: Value) -> CallToolRequestParams {
    let Value::Object(map) = v["arguments"].clone() else {
        panic!("arguments")
    };
    CallToolRequestParams::new(v["name"].as_str().unwrap().to_owned()).with_arguments(map)
}

/// Call a tool that must become a task; its id.
async fn call_as_task(c: &Client, call: Value) -> String {
    match c
        .call_tool_once(args(call.clone()))
        .await
        .expect("tools/call")
    {
        CallToolResponse::Task(created) => {
            assert!(created.result_type.is_task());
            assert!(created.task.ttl_ms.is_some(), "{created:?}");
            created.task.task_id
        }
        other => panic!("{call}: expected a CreateTaskResult, got {other:?}"),
    }
}

async fn get(c: &Client, id: &str) -> DetailedTask {
    c.get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get")
        .task
}

/// `tasks/get` until `done` holds.
async fn poll(c: &Client, id: &str, done: impl Fn(&DetailedTask) -> bool) -> DetailedTask {
    let until = Instant::now() + DEADLINE;
    loop {
        let t = get(c, id).await;
        if done(&t) {
            return t;
        }
        assert!(Instant::now() < until, "task {id} stuck at {t:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn terminal(t: &DetailedTask) -> bool {
    matches!(
        t.status(),
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
    )
}

fn completed_text(t: &DetailedTask) -> (String, bool) {
    let TaskPayload::Completed { result } = &t.payload else {
        panic!("not completed: {t:?}")
    };
    let r: CallToolResult =
        serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult");
    let text = r.content[0]
        .as_text()
        .map(|t| t.text.clone())
        .expect("text content");
    (text, r.is_error == Some(true))
}

/// The four outcomes and `isError`, through one rmcp client.
async fn drive(c: &Client) {
    // Direct: a quick call of an `optional` tool is a plain result.
    match c
        .call_tool_once(args(json!({"name": "sleep", "arguments": {"ms": 1}})))
        .await
        .expect("tools/call")
    {
        CallToolResponse::Complete(r) => {
            assert_eq!(r.content[0].as_text().unwrap().text, "slept 1");
        }
        other => panic!("a 1 ms sleep is answered directly: {other:?}"),
    }

    // completed
    let id = call_as_task(c, json!({"name": "sleep", "arguments": {"ms": 400}})).await;
    let t = poll(c, &id, terminal).await;
    assert_eq!(t.status(), TaskStatus::Completed, "{t:?}");
    assert_eq!(completed_text(&t), ("slept 400".to_owned(), false));

    // input_required, answered with tasks/update
    let id = call_as_task(
        c,
        json!({"name": "ask", "arguments": {"question": "Your name?"}}),
    )
    .await;
    let t = poll(c, &id, |t| t.status() == TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &t.payload else {
        panic!("{t:?}")
    };
    assert_eq!(input_requests.len(), 1, "{input_requests:?}");
    let (key, request) = input_requests.iter().next().unwrap();
    let request = serde_json::to_value(request).unwrap();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "Your name?");
    // Stable across polls.
    let again = get(c, &id).await;
    let TaskPayload::InputRequired {
        input_requests: again,
    } = &again.payload
    else {
        panic!("{again:?}")
    };
    assert!(again.contains_key(key));
    let mut answers = InputResponses::new();
    answers.insert(
        key.clone(),
        json!({"action": "accept", "content": {"answer": "Ada"}}),
    );
    c.update_task(UpdateTaskParams::new(id.clone(), answers))
        .await
        .expect("tasks/update acks");
    let t = poll(c, &id, terminal).await;
    assert_eq!(completed_text(&t), ("Ada".to_owned(), false));

    // cancelled
    let id = call_as_task(c, json!({"name": "sleep", "arguments": {"ms": 60000}})).await;
    c.cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel acks");
    let t = poll(c, &id, terminal).await;
    assert_eq!(t.status(), TaskStatus::Cancelled, "{t:?}");

    // failed: a JSON-RPC error, inline
    let id = call_as_task(
        c,
        json!({"name": "error", "arguments": {"message": "boom", "code": -32050, "ms": 300}}),
    )
    .await;
    let t = poll(c, &id, terminal).await;
    let TaskPayload::Failed { error } = &t.payload else {
        panic!("{t:?}")
    };
    // 2026-07-28 (basic, "Error Codes"): "Implementations MUST NOT emit any code from this
    // sub-range [-32020 to -32099] that is not defined by this specification": the tool's
    // -32050 goes out as -32603, its code kept in `data.originalCode`.
    assert_eq!(
        Value::Object(error.clone()),
        json!({"code": -32603, "message": "boom", "data": {"originalCode": -32050}})
    );
    // SEP-2663: "The `tasks/get` response SHOULD include a `statusMessage` field with
    // diagnostic information about the failure".
    let message = t.task.status_message.as_deref().unwrap_or_default();
    assert!(
        message.contains("boom") && message.contains("-32050"),
        "{t:?}"
    );

    // isError ends completed
    let id = call_as_task(
        c,
        json!({"name": "fail", "arguments": {"message": "nope", "ms": 300}}),
    )
    .await;
    let t = poll(c, &id, terminal).await;
    assert_eq!(completed_text(&t), ("nope".to_owned(), true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_drives_tasks_over_stdio() {
    let c = stdio_client().await;
    let info = c.peer_info().expect("discovered");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    drive(&c).await;
    c.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_drives_tasks_over_http() {
    let server = http_server();
    let c = http_client(&server.url).await;
    drive(&c).await;
    c.cancel().await.expect("close");
}
