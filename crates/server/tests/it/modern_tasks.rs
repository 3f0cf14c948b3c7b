//! The tasks extension (SEP-2663) on the engine and store of 2025-11-25: server-directed
//! creation for `required` tools, `tasks/get` with the inline payload, `tasks/update`,
//! `tasks/cancel`, and a task of one era read from the other. Every modern response is
//! validated against the 2026-07-28 schema, and every `tasks/get` result against the
//! extension's `DetailedTask` rules (`DetailedTask::check`).

use std::time::Duration;

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::modern::TASKS_EXTENSION;
use mcp_tasks_proto::modern::tasks::{CreateTaskResult, GetTaskResult, TaskStatus};
use mcp_tasks_proto::{CallToolResult, ErrorObject};
use mcp_tasks_server::{Server, ServerConfig, Tool};
use mcp_tasks_testkit::wire::{TIMEOUT, Wire};
use serde_json::{Value, json};

use crate::support::text_of;

/// The tools, all with task support `support`: `work {ms}` (a result after `ms`), `oops`
/// (an `isError` result), `boom` (a JSON-RPC error), `ask` and `ask_two` (elicit).
fn tools(support: TaskSupport) -> Vec<Tool> {
    let work = Tool::new(
        "work",
        "Works for `ms`.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
        |args: Value, _cx| async move {
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(CallToolResult::text(format!("worked {ms}")))
        },
    );
    let oops = Tool::new(
        "oops",
        "A tool error.",
        json!({"type": "object"}),
        |_args: Value, _cx| async move { Ok(CallToolResult::error("invalid input")) },
    );
    let boom = Tool::new(
        "boom",
        "A JSON-RPC error.",
        json!({"type": "object"}),
        |_args: Value, _cx| async move { Err(ErrorObject::internal("API rate limit exceeded").into()) },
    );
    let ask = Tool::new(
        "ask",
        "Asks for a name.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            let r = cx.elicit_raw(name_form("Name?")).await?;
            Ok(CallToolResult::text(format!(
                "got {} ({})",
                r["content"]["name"].as_str().unwrap_or("-"),
                r["action"].as_str().unwrap_or("-")
            )))
        },
    );
    let ask_two = Tool::new(
        "ask_two",
        "Asks two questions at once.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            let (a, b) = tokio::join!(
                cx.elicit_raw(name_form("First?")),
                cx.elicit_raw(name_form("Second?"))
            );
            Ok(CallToolResult::text(format!(
                "{} {}",
                a?["content"]["name"].as_str().unwrap_or("-"),
                b?["content"]["name"].as_str().unwrap_or("-")
            )))
        },
    );
    [work, oops, boom, ask, ask_two]
        .into_iter()
        .map(|t| t.task_support(support))
        .collect()
}

fn name_form(message: &str) -> Value {
    json!({"mode": "form", "message": message,
           "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}})
}

/// A server whose tools always run as tasks.
async fn serve() -> Wire {
    serve_with(TaskSupport::Required, Duration::from_secs(1)).await
}

/// A server whose tools have task support `support`, with `task_after`.
async fn serve_with(support: TaskSupport, task_after: Duration) -> Wire {
    let server = Server::builder()
        .config(ServerConfig::default().with_task_after(task_after))
        .tools(tools(support))
        .with_policy(|p| p.poll_interval_ms = 20)
        .build()
        .await
        .expect("a server with tasks in memory");
    crate::support::wire_to(server)
}

fn ext() -> Value {
    json!({"extensions": {TASKS_EXTENSION: {}}, "elicitation": {"form": {}}})
}

/// Poll `tasks/get` until the task is `input_required` with `n` requests.
async fn until_asking(s: &mut Wire, id: &str, n: usize) -> GetTaskResult {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let t = get(s, id).await;
        if t.task.task.status == TaskStatus::InputRequired
            && t.task.input_requests.as_ref().map_or(0, |r| r.len()) == n
        {
            return t;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never asked {n}: {t:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

/// Start `tool` as a task; returns its id after checking the `CreateTaskResult`.
async fn start(s: &mut Wire, tool: &str, args: Value) -> String {
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": tool, "arguments": args}),
            ext(),
        )
        .await;
    let created: CreateTaskResult =
        serde_json::from_value(r.clone()).unwrap_or_else(|e| panic!("{r}: {e}"));
    assert_eq!(r["resultType"], "task");
    assert!(r.get("ttlMs").is_some(), "ttlMs is always present: {r}");
    assert_eq!(created.task.poll_interval_ms, Some(20));
    created.task.task_id
}

/// `tasks/get` of `id`, checked against the `DetailedTask` rules.
async fn get(s: &mut Wire, id: &str) -> GetTaskResult {
    let r = s.ok_modern("tasks/get", json!({"taskId": id}), ext()).await;
    assert_eq!(r["resultType"], "complete", "{r}");
    let t: GetTaskResult = serde_json::from_value(r.clone()).unwrap_or_else(|e| panic!("{r}: {e}"));
    t.task.check().unwrap_or_else(|e| panic!("{r}: {e}"));
    t
}

/// Poll `tasks/get` until the task is terminal.
async fn until_terminal(s: &mut Wire, id: &str) -> GetTaskResult {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let t = get(s, id).await;
        if t.task.task.status.is_terminal() {
            return t;
        }
        assert!(tokio::time::Instant::now() < deadline, "never terminal");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_required_tool_becomes_a_task_whose_result_tasks_get_carries_inline() {
    let mut s = serve().await;
    let id = start(&mut s, "work", json!({"ms": 50})).await;
    // Durably created before the answer: tasks/get resolves at once.
    let first = get(&mut s, &id).await;
    assert_eq!(first.task.task.status, TaskStatus::Working);
    let done = until_terminal(&mut s, &id).await;
    assert_eq!(done.task.task.status, TaskStatus::Completed);
    let result = done.task.result.unwrap();
    assert_eq!(text_of(&result), "worked 50");
    assert!(
        result.get("_meta").is_none(),
        "no related-task key: {result}"
    );
    // Polls repeat the same terminal state.
    assert_eq!(
        get(&mut s, &id).await.task.task.status,
        TaskStatus::Completed
    );
}

#[tokio::test]
async fn an_is_error_result_ends_completed_and_a_json_rpc_error_ends_failed() {
    let mut s = serve().await;
    let oops = start(&mut s, "oops", json!({})).await;
    let t = until_terminal(&mut s, &oops).await;
    assert_eq!(t.task.task.status, TaskStatus::Completed);
    assert_eq!(t.task.result.unwrap()["isError"], true);
    let boom = start(&mut s, "boom", json!({})).await;
    let t = until_terminal(&mut s, &boom).await;
    assert_eq!(t.task.task.status, TaskStatus::Failed);
    let e = t.task.error.unwrap();
    assert_eq!(e.code, -32603);
    assert!(e.message.contains("API rate limit exceeded"), "{e}");
}

#[tokio::test]
async fn tasks_cancel_acks_and_stops_the_task() {
    let mut s = serve().await;
    let id = start(&mut s, "work", json!({"ms": 60_000})).await;
    let ack = s
        .ok_modern("tasks/cancel", json!({"taskId": id}), ext())
        .await;
    assert_eq!(ack["resultType"], "complete");
    assert_eq!(
        ack.as_object().unwrap().len(),
        2,
        "only resultType and _meta: {ack}"
    );
    let t = until_terminal(&mut s, &id).await;
    assert_eq!(t.task.task.status, TaskStatus::Cancelled);
    // A second cancel of the (now terminal) task is acknowledged too.
    s.ok_modern("tasks/cancel", json!({"taskId": id}), ext())
        .await;
    let e = s
        .err_modern("tasks/cancel", json!({"taskId": "no-such-task"}), ext())
        .await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn tasks_update_acks_known_tasks_and_refuses_bad_input() {
    let mut s = serve().await;
    let id = start(&mut s, "work", json!({"ms": 60_000})).await;
    let ack = s
        .ok_modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"never-issued": {"action": "accept"}}}),
            ext(),
        )
        .await;
    assert_eq!(ack["resultType"], "complete");
    // An unknown key changes nothing.
    assert_eq!(get(&mut s, &id).await.task.task.status, TaskStatus::Working);
    let e = s
        .err_modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"k": "yes"}}),
            ext(),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("\"k\""), "{e}");
    let e = s
        .err_modern("tasks/update", json!({"taskId": id}), ext())
        .await;
    assert_eq!(e["code"], -32602, "inputResponses is required: {e}");
    let e = s
        .err_modern(
            "tasks/update",
            json!({"taskId": "no-such-task", "inputResponses": {}}),
            ext(),
        )
        .await;
    assert_eq!(e["code"], -32602);
    s.ok_modern("tasks/cancel", json!({"taskId": id}), ext())
        .await;
}

#[tokio::test]
async fn a_task_of_one_era_is_read_from_the_other() {
    let mut s = serve().await;
    s.initialize().await;
    // Modern task, legacy read.
    let id = start(&mut s, "work", json!({"ms": 1})).await;
    until_terminal(&mut s, &id).await;
    let legacy = s.ok("tasks/get", json!({"taskId": id})).await;
    assert_eq!(legacy["status"], "completed");
    // A modern task whose tool reported an error: each era reads it by its own rules,
    // `completed` with the result here, `failed` to 2025-11-25 ("For tool calls
    // specifically, this includes cases where the tool call result has `isError` set to
    // `true`").
    let oops = start(&mut s, "oops", json!({})).await;
    let t = until_terminal(&mut s, &oops).await;
    assert_eq!(t.task.task.status, TaskStatus::Completed);
    assert_eq!(t.task.result.unwrap()["isError"], true);
    let legacy = s.ok("tasks/get", json!({"taskId": oops})).await;
    assert_eq!(legacy["status"], "failed", "{legacy}");
    // Legacy task (isError ends `failed` there), modern read: the extension's reading,
    // `completed` with the result.
    let r = s
        .ok(
            "tools/call",
            json!({"name": "oops", "arguments": {}, "task": {}}),
        )
        .await;
    let legacy_id = r["task"]["taskId"].as_str().unwrap().to_owned();
    s.poll_until(&legacy_id, "failed", |t| t["status"] == "failed")
        .await;
    let t = get(&mut s, &legacy_id).await;
    assert_eq!(t.task.task.status, TaskStatus::Completed);
    assert_eq!(t.task.result.unwrap()["isError"], true);
}

#[tokio::test]
async fn an_elicitation_during_a_task_is_an_input_request_answered_by_tasks_update() {
    let mut s = serve().await;
    let id = start(&mut s, "ask", json!({})).await;
    let asked = until_asking(&mut s, &id, 1).await;
    let requests = asked.task.input_requests.unwrap();
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Name?");
    assert!(
        request["params"].get("_meta").is_none(),
        "no related-task key: {request}"
    );
    // The key is stable across polls.
    let again = until_asking(&mut s, &id, 1).await;
    assert!(again.task.input_requests.unwrap().contains_key(key));
    // An answer of the wrong shape is refused and changes nothing.
    let e = s
        .err_modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {key.clone(): {"content": {"name": "x"}}}}),
            ext(),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("action"), "{e}");
    // Unknown keys are ignored.
    s.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"nope": accept("x")}}),
        ext(),
    )
    .await;
    until_asking(&mut s, &id, 1).await;
    let ack = s
        .ok_modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {key.clone(): accept("Luca")}}),
            ext(),
        )
        .await;
    assert_eq!(ack["resultType"], "complete");
    let done = until_terminal(&mut s, &id).await;
    assert_eq!(text_of(&done.task.result.unwrap()), "got Luca (accept)");
    // The answered key is no longer outstanding: a late answer is ignored.
    s.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key.clone(): accept("late")}}),
        ext(),
    )
    .await;
}

#[tokio::test]
async fn a_partial_answer_keeps_the_task_input_required() {
    let mut s = serve().await;
    let id = start(&mut s, "ask_two", json!({})).await;
    let asked = until_asking(&mut s, &id, 2).await;
    let requests = asked.task.input_requests.unwrap();
    let first = requests
        .iter()
        .find(|(_, r)| r["params"]["message"] == "First?")
        .map(|(k, _)| k.clone())
        .unwrap();
    let second = requests.keys().find(|k| **k != first).unwrap().clone();
    s.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {first.clone(): accept("Ada")}}),
        ext(),
    )
    .await;
    let left = until_asking(&mut s, &id, 1).await;
    assert!(left.task.input_requests.unwrap().contains_key(&second));
    s.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {second: accept("Lovelace")}}),
        ext(),
    )
    .await;
    let done = until_terminal(&mut s, &id).await;
    assert_eq!(text_of(&done.task.result.unwrap()), "Ada Lovelace");
}

#[tokio::test]
async fn a_task_of_a_client_without_elicitation_never_asks() {
    let mut s = serve().await;
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "ask"}),
            json!({"extensions": {TASKS_EXTENSION: {}}}),
        )
        .await;
    let id = r["taskId"].as_str().unwrap().to_owned();
    let t = until_terminal(&mut s, &id).await;
    // The tool's elicit failed (no capability) and it passed the error on: `failed`,
    // with -32021 naming what is missing.
    assert_eq!(t.task.task.status, TaskStatus::Failed);
    let e = t.task.error.unwrap();
    assert!(e.message.contains("elicitation"), "{e:?}");
    assert_eq!(e.code, -32021, "{e:?}");
    assert_eq!(
        e.data.unwrap()["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

/// 2025-11-25 alike: a session whose `initialize` declared URL-mode elicitation only is
/// never sent a form; the tool's question fails at once (-32601, naming the mode).
#[tokio::test]
async fn a_url_mode_only_session_is_never_sent_a_form() {
    let mut s = serve_with(TaskSupport::Optional, Duration::from_secs(5)).await;
    s.initialize_with("2025-11-25", json!({"elicitation": {"url": {}}}))
        .await;
    let e = s.err("tools/call", json!({"name": "ask"})).await;
    assert_eq!(e["code"], -32601, "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("`form` mode"),
        "{e}"
    );
    let sent = s.drain_for(Duration::from_millis(50)).await;
    assert!(
        sent.iter().all(|m| m["method"] != "elicitation/create"),
        "{sent:?}"
    );
}

/// A client that declared URL-mode elicitation only is never sent a form: the tool's
/// form question fails at once with -32021 naming `elicitation.form`, and the task never
/// reads `input_required`. Spec (elicitation): "Servers MUST NOT send elicitation
/// requests with modes that are not supported by the client."
#[tokio::test]
async fn a_url_mode_only_client_is_never_sent_a_form() {
    let mut s = serve().await;
    let caps = json!({"extensions": {TASKS_EXTENSION: {}}, "elicitation": {"url": {}}});
    let r = s
        .ok_modern("tools/call", json!({"name": "ask"}), caps)
        .await;
    let id = r["taskId"].as_str().unwrap().to_owned();
    let t = until_terminal(&mut s, &id).await;
    assert_eq!(t.task.task.status, TaskStatus::Failed);
    let e = t.task.error.unwrap();
    assert_eq!(e.code, -32021, "{e:?}");
    assert_eq!(
        e.data.unwrap()["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

#[tokio::test]
async fn an_optional_tool_answers_directly_when_it_finishes_within_task_after() {
    let mut s = serve_with(TaskSupport::Optional, Duration::from_secs(5)).await;
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "work", "arguments": {"ms": 1}}),
            ext(),
        )
        .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(text_of(&r), "worked 1");
}

#[tokio::test]
async fn an_optional_tool_that_outlives_task_after_becomes_a_task_and_finishes() {
    let mut s = serve_with(TaskSupport::Optional, Duration::from_millis(50)).await;
    let started = tokio::time::Instant::now();
    let id = start(&mut s, "work", json!({"ms": 400})).await;
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "the task is announced before the tool finishes"
    );
    let done = until_terminal(&mut s, &id).await;
    assert_eq!(done.task.task.status, TaskStatus::Completed);
    assert_eq!(text_of(&done.task.result.unwrap()), "worked 400");
}

#[tokio::test]
async fn without_the_extension_an_optional_tool_always_answers_directly() {
    let mut s = serve_with(TaskSupport::Optional, Duration::from_millis(20)).await;
    let r = s
        .ok_modern(
            "tools/call",
            json!({"name": "work", "arguments": {"ms": 200}}),
            json!({}),
        )
        .await;
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(text_of(&r), "worked 200");
}

#[tokio::test]
async fn an_optional_tool_that_asks_before_task_after_becomes_a_task_at_once() {
    let mut s = serve_with(TaskSupport::Optional, Duration::from_secs(30)).await;
    let started = tokio::time::Instant::now();
    let id = start(&mut s, "ask", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "promoted by the question"
    );
    let asked = until_asking(&mut s, &id, 1).await;
    let key = asked
        .task
        .input_requests
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    s.ok_modern(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {key: accept("Grace")}}),
        ext(),
    )
    .await;
    let done = until_terminal(&mut s, &id).await;
    assert_eq!(text_of(&done.task.result.unwrap()), "got Grace (accept)");
}

#[tokio::test]
async fn cancelling_an_adopted_task_stops_it() {
    let mut s = serve_with(TaskSupport::Optional, Duration::from_millis(20)).await;
    let id = start(&mut s, "work", json!({"ms": 60_000})).await;
    s.ok_modern("tasks/cancel", json!({"taskId": id}), ext())
        .await;
    let t = until_terminal(&mut s, &id).await;
    assert_eq!(t.task.task.status, TaskStatus::Cancelled);
}

#[tokio::test]
async fn subscriptions_listen_delivers_the_detailed_task_until_it_ends() {
    let mut s = serve().await;
    let id = start(&mut s, "work", json!({"ms": 200})).await;
    let listen = s
        .start_modern(
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id, "no-such-task"]}}),
            ext(),
        )
        .await;
    let ack = s
        .wait_for("the acknowledgment", |m| {
            m["method"] == "notifications/subscriptions/acknowledged"
        })
        .await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen
    );
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}));
    mcp_tasks_testkit::schema::MODERN
        .validate_message(&ack)
        .unwrap_or_else(|e| panic!("{ack}: {e}"));
    let done = s
        .wait_for("the completed task", |m| {
            m["method"] == "notifications/tasks" && m["params"]["status"] == "completed"
        })
        .await;
    assert_eq!(
        done["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen
    );
    assert_eq!(done["params"]["taskId"], json!(id));
    assert_eq!(text_of(&done["params"]["result"]), "worked 200");
    // Every watched task ended: the subscription closes gracefully.
    let end = s.response_to(&listen).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        listen
    );
    // Task notifications need the extension.
    let e = s
        .err_modern(
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}}),
            json!({}),
        )
        .await;
    assert_eq!(e["code"], -32021);
}
