//! A tool that gathers input before its task ([`Tool::task_after_input`]): in 2026-07-28
//! its first questions are `input_required` rounds of the call itself, and the round
//! after [`mcp_tasks_server::ToolContext::start_task`] is the `CreateTaskResult`; the
//! task's own questions are then its `inputRequests`. In 2025-11-25 the same tool is a
//! task from the start, and every question goes to the client through it.
//!
//! Spec (SEP-2663): "Server implementations that use multi round-trip requests in
//! conjunction with task creation (for example, a tool that requires elicitation over
//! `InputRequiredResult` before creating a task) **SHOULD** resolve all MRTR exchanges
//! _synchronously_ before responding with a `CreateTaskResult`."

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks_core::MemoryStore;
use mcp_tasks_proto::CallToolResult;
use mcp_tasks_proto::modern::TASKS_EXTENSION;
use mcp_tasks_server::{Server, ServerConfig, Tool};
use mcp_tasks_testkit::wire::{TIMEOUT, Wire};
use serde_json::{Value, json};

use crate::support::text_of;

fn form(message: &str) -> Value {
    json!({"mode": "form", "message": message, "requestedSchema":
        {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}})
}

fn accept(v: &str) -> Value {
    json!({"action": "accept", "content": {"v": v}})
}

/// `survey`: asks a name (before its task), starts its task (counting how often it got
/// there), then asks a colour (during the task). `quick`: asks a name and finishes
/// without `start_task`.
fn tools(started: Arc<AtomicUsize>) -> Vec<Tool> {
    let survey = Tool::new(
        "survey",
        "Name first, then a task that asks a colour.",
        json!({"type": "object"}),
        move |_args: Value, cx| {
            let started = Arc::clone(&started);
            async move {
                let name = cx
                    .ask("user_name", "elicitation/create", form("Name?"))
                    .await?;
                cx.start_task().await?;
                started.fetch_add(1, Ordering::SeqCst);
                let colour = cx.elicit_raw(form("Colour?")).await?;
                Ok(CallToolResult::text(format!(
                    "{} likes {}",
                    name["content"]["v"].as_str().unwrap_or("?"),
                    colour["content"]["v"].as_str().unwrap_or("?")
                )))
            }
        },
    )
    .task_after_input();
    let quick = Tool::new(
        "quick",
        "Asks a name, answers at once.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            let name = cx.elicit_raw(form("Name?")).await?;
            Ok(CallToolResult::text(format!(
                "Hello, {}",
                name["content"]["v"].as_str().unwrap_or("?")
            )))
        },
    )
    .task_after_input();
    vec![survey, quick]
}

/// A server over `store` (two on one store are two replicas of one database).
async fn serve_on(store: Arc<MemoryStore>, started: Arc<AtomicUsize>) -> Wire {
    let server = Server::builder()
        .tools(tools(started))
        .store(store)
        .with_policy(|p| p.poll_interval_ms = 20)
        .build()
        .await
        .expect("a server on the store");
    crate::support::wire_to(server)
}

async fn serve() -> (Wire, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    (
        serve_on(Arc::new(MemoryStore::new()), Arc::clone(&started)).await,
        started,
    )
}

fn ext() -> Value {
    json!({"extensions": {TASKS_EXTENSION: {}}, "elicitation": {"form": {}}})
}

/// Round 1: an `InputRequiredResult` asking `user_name`, without `taskId`; its
/// `requestState`.
fn round_one(r: &Value) -> String {
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert!(r.get("taskId").is_none(), "no task yet: {r}");
    let requests = r["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{r}");
    assert_eq!(requests["user_name"]["params"]["message"], "Name?", "{r}");
    r["requestState"].as_str().unwrap().to_owned()
}

/// The retry that ends the input rounds: a `CreateTaskResult` without `requestState` or
/// `inputRequests`; its task id.
fn created(r: &Value) -> String {
    assert_eq!(r["resultType"], "task", "{r}");
    assert!(r.get("requestState").is_none(), "{r}");
    assert!(r.get("inputRequests").is_none(), "{r}");
    assert!(r["status"].is_string(), "{r}");
    r["taskId"].as_str().unwrap().to_owned()
}

/// Poll `tasks/get` until `pred` holds.
async fn until(s: &mut Wire, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let t = s.ok_modern("tasks/get", json!({"taskId": id}), ext()).await;
        if pred(&t) {
            return t;
        }
        assert!(tokio::time::Instant::now() < deadline, "never: {t}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The whole composition on one server: round 1 asks the name, the retry with the answer
/// and the state is the `CreateTaskResult`, the task's own question (a fresh key) is
/// answered by `tasks/update`, and the task's result reflects both answers.
#[tokio::test]
async fn input_rounds_before_the_task_then_the_task_asks_on_its_own() {
    let (mut s, started) = serve().await;
    let r = s
        .ok_modern("tools/call", json!({"name": "survey"}), ext())
        .await;
    let state = round_one(&r);
    assert_eq!(
        started.load(Ordering::SeqCst),
        0,
        "no task before the answer"
    );
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "survey", "requestState": state,
                   "inputResponses": {"user_name": accept("Ada")}}),
            ext(),
        )
        .await;
    let id = created(&r);
    let t = until(&mut s, &id, |t| t["status"] == "input_required").await;
    let requests = t["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{t}");
    let (key, q) = requests.iter().next().unwrap();
    assert_eq!(q["params"]["message"], "Colour?", "{t}");
    s.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.clone(): accept("green")}}),
        ext(),
    )
    .await;
    let done = until(&mut s, &id, |t| t["status"] == "completed").await;
    assert_eq!(text_of(&done["result"]), "Ada likes green", "{done}");
    assert_eq!(started.load(Ordering::SeqCst), 1);
}

/// The retry reaches another replica (which never saw the call): it re-runs the handler
/// with the answer the signed `requestState` carries, and creates the task there.
#[tokio::test]
async fn a_retry_on_another_replica_re_runs_the_handler_into_the_task() {
    let store = Arc::new(MemoryStore::new());
    let started = Arc::new(AtomicUsize::new(0));
    let mut a = serve_on(Arc::clone(&store), Arc::clone(&started)).await;
    let mut b = serve_on(store, Arc::clone(&started)).await;
    let r = a
        .ok_modern("tools/call", json!({"name": "survey"}), ext())
        .await;
    let state = round_one(&r);
    let r = b
        .ok_modern(
            "tools/call",
            json!({"name": "survey", "requestState": state,
                   "inputResponses": {"user_name": accept("Bo")}}),
            ext(),
        )
        .await;
    let id = created(&r);
    let t = until(&mut b, &id, |t| t["status"] == "input_required").await;
    let key = t["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    b.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: accept("red")}}),
        ext(),
    )
    .await;
    let done = until(&mut b, &id, |t| t["status"] == "completed").await;
    assert_eq!(text_of(&done["result"]), "Bo likes red", "{done}");
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "only B's re-run started the task"
    );
}

/// A handler that finishes without `start_task` still answers with a task (the tool is
/// `required`), already completed; a client without the extension is refused (-32021)
/// before any question; one without elicitation gets the handler's -32021 directly, and
/// no task.
#[tokio::test]
async fn a_result_before_start_task_is_a_completed_task_and_errors_stay_direct() {
    let (mut s, _) = serve().await;
    let r = s
        .ok_modern("tools/call", json!({"name": "quick"}), ext())
        .await;
    let state = round_one(&{
        // `quick` asks by `elicit`: its key is `q1`; rename for `round_one`.
        let mut r = r.clone();
        let q = r["inputRequests"]["q1"].take();
        r["inputRequests"] = json!({"user_name": q});
        r
    });
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "quick", "requestState": state, "inputResponses": {"q1": accept("Cy")}}),
            ext(),
        )
        .await;
    let id = created(&r);
    let done = until(&mut s, &id, |t| t["status"] == "completed").await;
    assert_eq!(text_of(&done["result"]), "Hello, Cy", "{done}");

    let e = s
        .err_modern(
            "tools/call",
            json!({"name": "survey"}),
            json!({"elicitation": {"form": {}}}),
        )
        .await;
    assert_eq!(e["code"], -32021, "{e}");
    let e = s
        .err_modern(
            "tools/call",
            json!({"name": "survey"}),
            json!({"extensions": {TASKS_EXTENSION: {}}}),
        )
        .await;
    assert_eq!(e["code"], -32021, "{e}");
    assert_eq!(
        e["data"]["requiredCapabilities"]["elicitation"],
        json!({"form": {}}),
        "{e}"
    );
}

/// 2025-11-25: the same tool is a task from its `tools/call`; both questions are
/// `elicitation/create` requests to the client on the task's `tasks/result` stream
/// (`input_required` meanwhile), and `start_task` changes nothing.
#[tokio::test]
async fn in_2025_11_25_the_task_asks_every_question_itself() {
    let (mut s, started) = serve().await;
    s.initialize().await;
    let r = s
        .ok(
            "tools/call",
            json!({"name": "survey", "arguments": {}, "task": {}}),
        )
        .await;
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    s.poll_until(&id, "input_required", |t| t["status"] == "input_required")
        .await;
    let result = s.start("tasks/result", json!({"taskId": id})).await;
    for (message, value) in [("Name?", "Di"), ("Colour?", "blue")] {
        let q = s
            .wait_for("the question", |m| m["method"] == "elicitation/create")
            .await;
        assert_eq!(q["params"]["message"], message, "{q}");
        s.send(&json!({"jsonrpc": "2.0", "id": q["id"], "result": accept(value)}))
            .await;
    }
    let r = s.response_to(&result).await;
    assert_eq!(text_of(&r["result"]), "Di likes blue", "{r}");
    assert_eq!(started.load(Ordering::SeqCst), 1);
}

/// `start_task` in an `optional` tool under `task_after`: the call becomes a task at once,
/// long before `task_after` (here an hour), and finishes as one.
#[tokio::test]
async fn an_optional_tool_that_starts_its_task_is_promoted_at_once() {
    let later = Tool::new(
        "later",
        "Becomes a task, then answers.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            cx.start_task().await?;
            Ok(CallToolResult::text("done as a task"))
        },
    )
    .task_support(mcp_tasks_proto::mcp::TaskSupport::Optional);
    let config = ServerConfig::default().with_task_after(Duration::from_secs(3600));
    let server = Server::builder()
        .config(config)
        .tool(later)
        .build()
        .await
        .expect("a server with tasks in memory");
    let mut s = crate::support::wire_to(server);
    let started = tokio::time::Instant::now();
    let r = s
        .ok_modern("tools/call", json!({"name": "later"}), ext())
        .await;
    let id = created(&r);
    assert!(started.elapsed() < Duration::from_secs(60));
    let done = until(&mut s, &id, |t| t["status"] == "completed").await;
    assert_eq!(text_of(&done["result"]), "done as a task", "{done}");
}
