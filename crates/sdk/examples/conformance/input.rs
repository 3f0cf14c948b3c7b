//! Tools that ask the client for input while they run: in a 2026-07-28 direct call each
//! question is an entry of an `input_required` result and the call goes on when the client
//! retries with the answers (scenarios `input-required-result-*`, `server-stateless`).

use mcp_tasks_sdk::prelude::*;
use mcp_tasks_sdk::serde_json::{Value, json};
use mcp_tasks_sdk::tokio;

use crate::content::NoArgs;

const ELICIT: &str = "elicitation/create";
const SAMPLE: &str = "sampling/createMessage";
const ROOTS: &str = "roots/list";

/// An `elicitation/create` form asking for one string (or boolean) field.
fn form(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {field: {"type": kind}},
            "required": [field]
        }
    })
}

/// A `sampling/createMessage` asking `text`.
fn sample(text: &str, max_tokens: u32) -> Value {
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens
    })
}

/// The string field `field` of an `ElicitResult`'s content.
fn field<'a>(answer: &'a Value, field: &str) -> &'a str {
    answer
        .pointer(&format!("/content/{field}"))
        .and_then(Value::as_str)
        .unwrap_or("unknown")
}

/// How many roots a `ListRootsResult` names.
fn roots(answer: &Value) -> usize {
    answer["roots"].as_array().map_or(0, Vec::len)
}

pub(crate) fn tools() -> Vec<Tool> {
    vec![
        Tool::typed(
            "test_input_required_result_elicitation",
            "MRTR: returns InputRequiredResult with elicitation request",
            |_: NoArgs, cx: ToolContext| async move {
                let a = cx
                    .ask(
                        "user_name",
                        ELICIT,
                        form("What is your name?", "name", "string"),
                    )
                    .await?;
                Ok(format!("Hello, {}!", field(&a, "name")))
            },
        ),
        Tool::typed(
            "test_input_required_result_sampling",
            "MRTR: returns InputRequiredResult with sampling request",
            |_: NoArgs, cx: ToolContext| async move {
                let a = cx
                    .ask(
                        "sample_request",
                        SAMPLE,
                        sample("What is the capital of France?", 100),
                    )
                    .await?;
                let text = a.pointer("/content/text").and_then(Value::as_str);
                Ok(format!(
                    "Sampling result: {}",
                    text.unwrap_or("no response")
                ))
            },
        ),
        Tool::typed(
            "test_input_required_result_list_roots",
            "MRTR: returns InputRequiredResult with roots/list request",
            |_: NoArgs, cx: ToolContext| async move {
                let a = cx.ask("roots_request", ROOTS, json!({})).await?;
                Ok(format!("Found {} root(s)", roots(&a)))
            },
        ),
        Tool::typed(
            "test_input_required_result_request_state",
            "MRTR: returns InputRequiredResult with requestState",
            |_: NoArgs, cx: ToolContext| async move {
                let a = cx
                    .ask("confirm", ELICIT, form("Please confirm", "ok", "boolean"))
                    .await?;
                Ok(if a.pointer("/content/ok") == Some(&Value::Bool(true)) {
                    CallToolResult::text("state-ok: requestState validated")
                } else {
                    CallToolResult::error("not confirmed")
                })
            },
        ),
        Tool::typed(
            "test_input_required_result_multiple_inputs",
            "MRTR: returns InputRequiredResult with multiple input requests",
            |_: NoArgs, cx: ToolContext| async move {
                let (name, greeting, client_roots) = tokio::try_join!(
                    cx.ask(
                        "user_name",
                        ELICIT,
                        form("What is your name?", "name", "string")
                    ),
                    cx.ask("greeting", SAMPLE, sample("Generate a greeting", 50)),
                    cx.ask("client_roots", ROOTS, json!({})),
                )?;
                let greeting = greeting.pointer("/content/text").and_then(Value::as_str);
                Ok(format!(
                    "Name: {}; Greeting: {}; Roots: {}",
                    field(&name, "name"),
                    greeting.unwrap_or("Hello there!"),
                    roots(&client_roots)
                ))
            },
        ),
        Tool::typed(
            "test_input_required_result_multi_round",
            "MRTR: multi-round InputRequiredResult workflow",
            |_: NoArgs, cx: ToolContext| async move {
                let step1 = cx
                    .ask(
                        "step1",
                        ELICIT,
                        form("Step 1: What is your name?", "name", "string"),
                    )
                    .await?;
                let step2 = cx
                    .ask(
                        "step2",
                        ELICIT,
                        form("Step 2: What is your favorite color?", "color", "string"),
                    )
                    .await?;
                Ok(format!(
                    "Multi-round complete for {} who likes {}",
                    field(&step1, "name"),
                    field(&step2, "color")
                ))
            },
        ),
        Tool::typed(
            "test_input_required_result_tampered_state",
            "MRTR: HMAC-signed requestState integrity test",
            |_: NoArgs, cx: ToolContext| async move {
                cx.ask("confirm", ELICIT, form("Please confirm", "ok", "boolean"))
                    .await?;
                Ok("integrity-ok: state verified")
            },
        ),
        Tool::typed(
            "test_input_required_result_capabilities",
            "MRTR: respects client capabilities in inputRequests",
            |_: NoArgs, cx: ToolContext| async move {
                // Only what the client can answer is asked.
                let caps = cx.client_capabilities().clone();
                let can = |c: &str| caps.get(c).is_some_and(|v| !v.is_null());
                let mut asked = Vec::new();
                let elicit = async {
                    if can("elicitation") {
                        cx.ask(
                            "elicit_input",
                            ELICIT,
                            form("Elicit request", "value", "string"),
                        )
                        .await
                        .map(|_| Some("elicit_input"))
                    } else {
                        Ok(None)
                    }
                };
                let sampled = async {
                    if can("sampling") {
                        cx.ask("sample_input", SAMPLE, sample("Sample request", 10))
                            .await
                            .map(|_| Some("sample_input"))
                    } else {
                        Ok(None)
                    }
                };
                let (e, s) = tokio::try_join!(elicit, sampled)?;
                asked.extend(e);
                asked.extend(s);
                Ok(if asked.is_empty() {
                    "No supported capabilities declared".to_owned()
                } else {
                    format!("capabilities-ok: received {}", asked.join(","))
                })
            },
        ),
        Tool::typed(
            "test_missing_capability",
            "Test tool requiring sampling",
            |_: NoArgs, cx: ToolContext| async move {
                let a = cx.sample_raw(sample("Say hello", 10)).await?;
                let text = a.pointer("/content/text").and_then(Value::as_str);
                Ok(format!("Success: {}", text.unwrap_or("no response")))
            },
        ),
        Tool::typed(
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
            |_: NoArgs, cx: ToolContext| async move {
                cx.progress(50.0, Some(100.0), None).await;
                Ok("Streaming complete")
            },
        ),
        Tool::typed(
            "test_logging_tool",
            "Diagnostic logging validator tool",
            |_: NoArgs, cx: ToolContext| async move {
                cx.log(LogLevel::Info, None, "Diagnostic trace logging activated")
                    .await;
                Ok("Logging evaluated")
            },
        ),
    ]
}
