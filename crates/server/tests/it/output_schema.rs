//! Results checked against a tool's `outputSchema`, as a plain call and as a task.
//!
//! Spec (tools page): "If an output schema is provided: Servers MUST provide structured
//! results that conform to this schema." A handler that breaks it fails the call with
//! -32603 naming the tool and the field; conforming results and `isError` results pass.

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_server::{CallToolResult, Server, Tool};
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};

/// `weather {give}`: returns `give` as its structured content (or an error result for
/// `{"error": true}`), whatever the output schema says.
fn weather() -> Tool {
    Tool::new(
        "weather",
        "Returns `give` as structured content.",
        json!({"type": "object", "properties": {"give": {}, "error": {"type": "boolean"}}}),
        |args: Value, _cx| async move {
            if args["error"] == json!(true) {
                return Ok(CallToolResult::error("no weather today"));
            }
            Ok(match args.get("give") {
                Some(Value::Object(m)) => CallToolResult::structured(m.clone()),
                _ => CallToolResult::text("nothing structured"),
            })
        },
    )
    .task_support(TaskSupport::Optional)
    .output_schema(json!({
        "type": "object",
        "properties": {"temp": {"type": "number"}, "sky": {"type": "string"}},
        "required": ["temp"]
    }))
}

async fn server() -> Wire {
    let server = Server::builder()
        .tool(weather())
        .with_policy(|p| p.poll_interval_ms = 20)
        .build()
        .await
        .expect("a server with tasks in memory");
    let mut wire = crate::support::wire_to(server);
    wire.initialize().await;
    wire
}

#[tokio::test]
async fn a_conforming_result_and_an_error_result_pass() {
    let mut w = server().await;
    let r = w
        .ok(
            "tools/call",
            json!({"name": "weather", "arguments": {"give": {"temp": 21.5, "sky": "clear"}}}),
        )
        .await;
    assert_eq!(r["structuredContent"]["temp"], 21.5, "{r}");
    let r = w
        .ok(
            "tools/call",
            json!({"name": "weather", "arguments": {"error": true}}),
        )
        .await;
    assert_eq!(r["isError"], true, "{r}");
}

#[tokio::test]
async fn a_plain_call_breaking_the_schema_is_an_internal_error_naming_the_field() {
    let mut w = server().await;
    let e = w
        .err(
            "tools/call",
            json!({"name": "weather", "arguments": {"give": {"temp": "warm"}}}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("`weather`") && msg.contains("outputSchema") && msg.contains("temp:"),
        "{msg}"
    );
    let e = w
        .err("tools/call", json!({"name": "weather", "arguments": {}}))
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("no structuredContent"),
        "{e}"
    );
    // The session goes on.
    w.ok(
        "tools/call",
        json!({"name": "weather", "arguments": {"give": {"temp": 3}}}),
    )
    .await;
}

#[tokio::test]
async fn a_task_breaking_the_schema_fails_with_that_error() {
    let mut w = server().await;
    let created = w
        .ok(
            "tools/call",
            json!({"name": "weather", "arguments": {"give": {"sky": "grey"}}, "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let t = w
        .poll_until(&id, "failed", |t| t["status"] == "failed")
        .await;
    assert_eq!(t["status"], "failed", "{t}");
    let e = w.err("tasks/result", json!({"taskId": id})).await;
    assert_eq!(e["code"], -32603, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("\"temp\" is a required property"),
        "{e}"
    );
    // A conforming task completes with its structured content.
    let created = w
        .ok(
            "tools/call",
            json!({"name": "weather", "arguments": {"give": {"temp": 7}}, "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let r = w.ok("tasks/result", json!({"taskId": id})).await;
    assert_eq!(r["structuredContent"]["temp"], 7, "{r}");
}
