//! The client as a receiver of tasks: a scripted server (raw JSON-RPC lines over a pipe)
//! sends task-augmented `elicitation/create` and `sampling/createMessage`, and polls,
//! fetches, lists and cancels the client's tasks.
#![allow(missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::{
    Client, ClientConfig, ElicitationHandler, FixedElicitation, FixedSampling, SamplingHandler,
    ServerRequest, TaskReceiver, elicit, sampling_refused,
};
use mcp_tasks_proto::ErrorObject;
use serde_json::{Value, json};
use tokio::io::DuplexStream;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};
use tokio::sync::{Notify, mpsc};

const LIMIT: Duration = Duration::from_secs(10);
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// The server side of the pipe, driven by the test.
struct Script {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    next_id: i64,
    /// Notifications that arrived while waiting for a response.
    notifications: Vec<Value>,
}

impl Script {
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(LIMIT, self.lines.next_line())
            .await
            .expect("the client said nothing in time")
            .expect("read")
            .expect("the client closed the pipe");
        serde_json::from_str(&line).expect("a JSON line")
    }

    async fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    /// Send a request; return its whole response (`result` or `error`).
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let m = self.recv().await;
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return m;
            }
            assert!(
                m.get("id").is_none(),
                "unexpected request from the client: {m}"
            );
            self.notifications.push(m);
        }
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let m = self.call(method, params).await;
        assert!(m.get("error").is_none(), "{method}: {m}");
        m["result"].clone()
    }

    async fn error(&mut self, method: &str, params: Value) -> Value {
        let m = self.call(method, params).await;
        assert!(m.get("result").is_none(), "{method} succeeded: {m}");
        m["error"].clone()
    }

    /// Wait for a status notification of `task_id` with `status`.
    async fn status_notification(&mut self, task_id: &str, status: &str) -> Value {
        let matches = |n: &Value| {
            n["method"] == "notifications/tasks/status"
                && n["params"]["taskId"] == task_id
                && n["params"]["status"] == status
        };
        if let Some(i) = self.notifications.iter().position(matches) {
            return self.notifications.remove(i);
        }
        loop {
            let m = self.recv().await;
            if matches(&m) {
                return m;
            }
            self.notifications.push(m);
        }
    }
}

/// Connect `config` to a scripted server; returns the client, the script and what the
/// client sent in `initialize`.
async fn connect(config: ClientConfig) -> (Client, Script, Value) {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    let mut script = Script {
        lines: BufReader::new(sr).lines(),
        writer: sw,
        next_id: 1000,
        notifications: Vec::new(),
    };
    let (cr, cw) = tokio::io::split(client_io);
    // The script plays a 2025-11-25 server from `initialize` on: no probe.
    let config = config.with_protocol(mcp_tasks_client::Revision::V2025_11_25);
    let client = tokio::spawn(async move {
        Client::connect_io(BufReader::new(cr), cw, config)
            .await
            .expect("connect")
    });
    let init = script.recv().await;
    assert_eq!(init["method"], "initialize");
    script
        .send(&json!({"jsonrpc": "2.0", "id": init["id"], "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "script", "version": "0"},
        }}))
        .await;
    let initialized = script.recv().await;
    assert_eq!(initialized["method"], "notifications/initialized");
    let client = tokio::time::timeout(LIMIT, client).await.unwrap().unwrap();
    (client, script, init["params"].clone())
}

/// Holds each answer until the test releases it; reports each request it got.
struct Gated {
    seen: mpsc::UnboundedSender<ServerRequest>,
    release: Arc<Notify>,
    answer: Value,
}

#[async_trait]
impl ElicitationHandler for Gated {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        let _ = self.seen.send(request);
        self.release.notified().await;
        Ok(self.answer.clone())
    }
}

/// Waits forever; says when its future is dropped and whether its token had fired.
struct UntilCancelled {
    cancelled: Arc<Mutex<Vec<(String, bool)>>>,
}

struct Stopped {
    request: ServerRequest,
    log: Arc<Mutex<Vec<(String, bool)>>>,
}

impl Drop for Stopped {
    fn drop(&mut self) {
        self.log.lock().unwrap().push((
            self.request.task_id.clone().unwrap_or_default(),
            self.request.cancel.is_cancelled(),
        ));
    }
}

#[async_trait]
impl ElicitationHandler for UntilCancelled {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        let _stopped = Stopped {
            request,
            log: Arc::clone(&self.cancelled),
        };
        std::future::pending().await
    }
}

struct Refuse;

#[async_trait]
impl SamplingHandler for Refuse {
    async fn create_message(&self, _request: ServerRequest) -> Result<Value, ErrorObject> {
        Err(sampling_refused("not today"))
    }
}

fn ask_params(ttl: Option<u64>) -> Value {
    let mut task = json!({});
    if let Some(ttl) = ttl {
        task["ttl"] = json!(ttl);
    }
    json!({
        "mode": "form",
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "task": task,
    })
}

#[tokio::test]
async fn declares_the_task_capability_for_what_it_can_answer() {
    let config = ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::decline()))
        .with_sampling(FixedSampling {
            model: "m".into(),
            text: "t".into(),
        })
        .with_task_receiver(TaskReceiver::new());
    let (client, _script, init) = connect(config).await;
    let expected = json!({"list": {}, "cancel": {}, "requests": {
        "elicitation": {"create": {}}, "sampling": {"createMessage": {}}}});
    assert_eq!(init["capabilities"]["tasks"], expected);
    assert_eq!(client.client_capabilities()["tasks"], expected);

    // Only the request types it has a handler for ("the set ... is exhaustive").
    let config = ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::decline()))
        .with_task_receiver(TaskReceiver::new());
    let (_client, _script, init) = connect(config).await;
    assert_eq!(
        init["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}}})
    );

    // No receiver: no tasks capability.
    let config = ClientConfig::default().with_elicitation(FixedElicitation(elicit::decline()));
    let (_client, _script, init) = connect(config).await;
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");
}

#[tokio::test]
async fn a_task_augmented_elicitation_is_a_task_of_the_client() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let answer = elicit::accept(json!({"name": "Ada"}));
    let config = ClientConfig::default()
        .with_elicitation(Gated {
            seen: seen_tx,
            release: Arc::clone(&release),
            answer: answer.clone(),
        })
        .with_task_receiver(TaskReceiver::new());
    let (client, mut s, _) = connect(config).await;

    // CreateTaskResult first, status working, the requested ttl.
    let mut params = ask_params(Some(60_000));
    params["_meta"] = json!({ RELATED: {"taskId": "server-task-1"} });
    let created = s.result("elicitation/create", params).await;
    let task = &created["task"];
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert_eq!(task["pollInterval"], 500);
    assert!(task["createdAt"].is_string() && task["lastUpdatedAt"].is_string());
    assert_eq!(id.len(), 36, "a UUID: {id}");

    // The handler runs after the reply and sees the task it runs as.
    let request = tokio::time::timeout(LIMIT, seen.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.task_id.as_deref(), Some(id.as_str()));
    assert_eq!(request.related_task.as_deref(), Some("server-task-1"));
    assert_eq!(request.message(), "Your name?");

    // tasks/get: working; tasks/list shows it; tasks/result blocks meanwhile.
    let got = s.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "working");
    assert_eq!(got["createdAt"], task["createdAt"]);
    let listed = s.result("tasks/list", json!({})).await;
    assert_eq!(listed["tasks"][0]["taskId"], id.as_str());
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 1);
    s.next_id += 1;
    let result_id = s.next_id;
    s.send(&json!({"jsonrpc": "2.0", "id": result_id, "method": "tasks/result", "params": {"taskId": id}}))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let got = s.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "working");
    assert!(
        !s.notifications.iter().any(|m| m["id"] == result_id),
        "tasks/result answered before the task ended"
    );

    // The handler answers: completed, announced without related-task metadata.
    release.notify_one();
    let note = s.status_notification(&id, "completed").await;
    assert!(note["params"].get("_meta").is_none(), "{note}");
    let response = loop {
        if let Some(i) = s.notifications.iter().position(|m| m["id"] == result_id) {
            break s.notifications.remove(i);
        }
        let m = s.recv().await;
        if m["id"] == result_id {
            break m;
        }
        s.notifications.push(m);
    };
    let mut expected = answer.clone();
    expected["_meta"] = json!({ RELATED: {"taskId": id} });
    assert_eq!(response["result"], expected);

    // Polled again: completed; the result again, unchanged.
    let got = s.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "completed");
    assert_eq!(
        s.result("tasks/result", json!({"taskId": id})).await,
        expected
    );
    // Cancelling a terminal task is -32602.
    let err = s.error("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(err["code"], -32602);

    let mine = client.received_tasks().await.unwrap();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].task_id, id);
}

#[tokio::test]
async fn tasks_cancel_stops_the_handler() {
    let cancelled = Arc::new(Mutex::new(Vec::new()));
    let config = ClientConfig::default()
        .with_elicitation(UntilCancelled {
            cancelled: Arc::clone(&cancelled),
        })
        .with_task_receiver(TaskReceiver::new());
    let (_client, mut s, _) = connect(config).await;
    let created = s.result("elicitation/create", ask_params(None)).await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // The default TTL of the client's policy.
    assert_eq!(created["task"]["ttl"], 3_600_000);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let task = s.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(task["status"], "cancelled");
    assert_eq!(task["taskId"], id.as_str());
    for _ in 0..100 {
        if !cancelled.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The handler was stopped (its future dropped), its token fired.
    assert_eq!(*cancelled.lock().unwrap(), vec![(id.clone(), true)]);
    // It stays cancelled; its result is the cancellation error.
    let got = s.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "cancelled");
    let err = s.error("tasks/result", json!({"taskId": id})).await;
    assert_eq!(err["code"], -32001);
    let err = s.error("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(err["code"], -32602);
}

#[tokio::test]
async fn a_refused_sampling_task_fails_with_the_handlers_exact_error() {
    let config = ClientConfig::default()
        .with_sampling(Refuse)
        .with_task_receiver(TaskReceiver::new());
    let (_client, mut s, _) = connect(config).await;
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
        "task": {"ttl": 5000},
    });
    let created = s.result("sampling/createMessage", params).await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    s.status_notification(&id, "failed").await;
    let got = s.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "failed");
    assert!(
        got["statusMessage"]
            .as_str()
            .unwrap()
            .contains("User rejected sampling request: not today"),
        "{got}"
    );
    let err = s.error("tasks/result", json!({"taskId": id})).await;
    assert_eq!(
        err,
        json!({"code": -1, "message": "User rejected sampling request: not today"})
    );
}

#[tokio::test]
async fn protocol_errors_of_the_clients_tasks() {
    let config = ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::decline()))
        .with_task_receiver(TaskReceiver::new());
    let (_client, mut s, _) = connect(config).await;
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let err = s.error(method, json!({"taskId": "nope"})).await;
        assert_eq!(err["code"], -32602, "{method}: {err}");
        let err = s.error(method, json!({})).await;
        assert_eq!(err["code"], -32602, "{method}: {err}");
    }
    let err = s.error("tasks/list", json!({"cursor": "forged"})).await;
    assert_eq!(err["code"], -32602);
    // A malformed task field.
    let mut params = ask_params(None);
    params["task"] = json!({"ttl": "soon"});
    let err = s.error("elicitation/create", params).await;
    assert_eq!(err["code"], -32602);
    // No sampling handler: not declared, -32601 with or without a task.
    let err = s
        .error(
            "sampling/createMessage",
            json!({"messages": [], "maxTokens": 1, "task": {}}),
        )
        .await;
    assert_eq!(err["code"], -32601);
    // The list is empty and has no cursor.
    assert_eq!(
        s.result("tasks/list", json!({})).await,
        json!({"tasks": []})
    );
}

#[tokio::test]
async fn without_a_receiver_task_augmentation_is_ignored() {
    // "Receivers that do not declare the task capability for a request type MUST process
    // requests of that type normally, ignoring any task-augmentation metadata if present."
    let config = ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::accept(json!({"name": "x"}))));
    let (client, mut s, _) = connect(config).await;
    let r = s.result("elicitation/create", ask_params(Some(1000))).await;
    assert_eq!(r, json!({"action": "accept", "content": {"name": "x"}}));
    let err = s.error("tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(err["code"], -32601);
    assert!(client.received_tasks().await.unwrap().is_empty());
}

#[tokio::test]
async fn connections_sharing_a_receiver_see_only_their_own_tasks() {
    let receiver = TaskReceiver::new();
    let config = || {
        ClientConfig::default()
            .with_elicitation(FixedElicitation(elicit::decline()))
            .with_task_receiver(receiver.clone())
    };
    let (_a, mut sa, _) = connect(config()).await;
    let (_b, mut sb, _) = connect(config()).await;
    let created = sa.result("elicitation/create", ask_params(None)).await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    sa.status_notification(&id, "completed").await;
    assert_eq!(
        sa.result("tasks/result", json!({"taskId": id})).await["action"],
        "decline"
    );
    // The other connection: a foreign task looks exactly like a missing one.
    let err = sb.error("tasks/get", json!({"taskId": id})).await;
    assert_eq!(err["code"], -32602);
    assert_eq!(
        sb.result("tasks/list", json!({})).await,
        json!({"tasks": []})
    );
}
