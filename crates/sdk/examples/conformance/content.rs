//! Plain tools: content blocks, an error, logging, progress, sampling, elicitation and a
//! JSON Schema 2020-12 input schema (scenarios `tools-*`, `elicitation-*`,
//! `json-schema-2020-12`, `server-sse-*`), and an `x-mcp-header` parameter
//! (`http-custom-header-server-validation`).

use std::time::Duration;

use mcp_tasks_sdk::prelude::*;
use mcp_tasks_sdk::serde_json::{Value, json};
use mcp_tasks_sdk::tokio;

/// A 1x1 red PNG.
pub(crate) const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// A tool without arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
pub(crate) struct NoArgs {}

/// The arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

/// The arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

/// The arguments of `test_custom_header`: `region` is mirrored in the `Mcp-Param-Region`
/// HTTP header, which the server checks against it.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct RegionArgs {
    /// The region to run in.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// A tool without arguments whose result is always `result`.
fn fixed(name: &str, description: &str, result: CallToolResult) -> Tool {
    Tool::typed(name, description, move |_: NoArgs, _cx| {
        let r = result.clone();
        async move { Ok(r) }
    })
}

pub(crate) fn tools() -> Vec<Tool> {
    let embedded = ContentBlock::embedded(ResourceContents::text(
        "test://embedded-resource",
        Some("text/plain"),
        "This is an embedded resource content.",
    ));
    let mixed_resource = ContentBlock::embedded(ResourceContents::text(
        "test://mixed-content-resource",
        Some("application/json"),
        json!({"test": "data", "value": 123}).to_string(),
    ));
    vec![
        Tool::typed(
            "test_custom_header",
            "Echoes the region its Mcp-Param-Region header mirrors",
            |a: RegionArgs, _cx| async move { Ok(format!("Region: {}", a.region)) },
        ),
        fixed(
            "test_simple_text",
            "Tests simple text content response",
            CallToolResult::text("This is a simple text response for testing."),
        ),
        fixed(
            "test_image_content",
            "Tests image content response",
            CallToolResult::new(vec![ContentBlock::image(PNG, "image/png")]),
        ),
        fixed(
            "test_audio_content",
            "Tests audio content response",
            CallToolResult::new(vec![ContentBlock::audio(WAV, "audio/wav")]),
        ),
        fixed(
            "test_embedded_resource",
            "Tests embedded resource content response",
            CallToolResult::new(vec![embedded]),
        ),
        fixed(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            CallToolResult::new(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG, "image/png"),
                mixed_resource,
            ]),
        ),
        fixed(
            "test_resource_link",
            "Tests a resource link in a tool result",
            CallToolResult::new(vec![ContentBlock::resource_link(
                "test://static-text",
                "static-text",
            )]),
        ),
        fixed(
            "test_error_handling",
            "Tests error response handling",
            CallToolResult::error("This tool intentionally returns an error for testing"),
        ),
        fixed(
            "test_reconnection",
            "Tests SSE stream disconnection and client reconnection (SEP-1699)",
            CallToolResult::text(
                "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
            ),
        ),
        logging(),
        progress(),
        sampling(),
        elicitation(),
        elicitation_defaults(),
        elicitation_enums(),
        json_schema_2020_12(),
    ]
}

/// Three log messages at `info`, 50 ms apart.
fn logging() -> Tool {
    Tool::typed(
        "test_tool_with_logging",
        "Tests tool that emits log messages during execution",
        |_: NoArgs, cx: ToolContext| async move {
            for (i, step) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                cx.log(LogLevel::Info, Some("conformance-test-server"), step)
                    .await;
            }
            Ok("Tool with logging executed successfully")
        },
    )
}

/// Progress 0, 50 and 100 of 100; the result is the request's progress token.
fn progress() -> Tool {
    Tool::typed(
        "test_tool_with_progress",
        "Tests tool that reports progress notifications",
        |_: NoArgs, cx: ToolContext| async move {
            for step in [0.0, 50.0, 100.0] {
                if step > 0.0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                let message = format!("Completed step {step} of 100");
                cx.progress(step, Some(100.0), Some(&message)).await;
            }
            let token = cx
                .request_params()
                .and_then(|p| p.pointer("/_meta/progressToken"))
                .map_or_else(
                    || "0".to_owned(),
                    |t| match t {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                );
            Ok(token)
        },
    )
}

/// The text of a `CreateMessageResult`.
fn sampled_text(result: &Value) -> &str {
    result
        .pointer("/content/text")
        .or_else(|| result.pointer("/message/content/text"))
        .and_then(Value::as_str)
        .unwrap_or("No response")
}

fn sampling() -> Tool {
    Tool::typed(
        "test_sampling",
        "Tests server-initiated sampling (LLM completion request)",
        |a: SamplingArgs, cx: ToolContext| async move {
            let asked = cx
                .sample_raw(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": a.prompt}}],
                    "maxTokens": 100
                }))
                .await?;
            Ok(format!("LLM response: {}", sampled_text(&asked)))
        },
    )
}

/// `User response: action=..., content={...}` of an `ElicitResult`.
fn elicited(prefix: &str, result: &Value) -> String {
    let action = result["action"].as_str().unwrap_or("unknown");
    let content = result.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("{prefix}: action={action}, content={content}")
}

fn elicitation() -> Tool {
    Tool::typed(
        "test_elicitation",
        "Tests server-initiated elicitation (user input request)",
        |a: ElicitationArgs, cx: ToolContext| async move {
            let asked = cx
                .elicit_raw(json!({
                    "message": a.message,
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"response": {"type": "string", "description": "User's response"}},
                        "required": ["response"]
                    }
                }))
                .await?;
            Ok(elicited("User response", &asked))
        },
    )
}

/// SEP-1034: defaults for every primitive type.
fn elicitation_defaults() -> Tool {
    Tool::typed(
        "test_elicitation_sep1034_defaults",
        "Tests elicitation with default values per SEP-1034",
        |_: NoArgs, cx: ToolContext| async move {
            let asked = cx
                .elicit_raw(json!({
                    "message": "Please review and update the form fields with defaults",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "User name", "default": "John Doe"},
                            "age": {"type": "integer", "description": "User age", "default": 30},
                            "score": {"type": "number", "description": "User score", "default": 95.5},
                            "status": {"type": "string", "description": "User status",
                                "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "description": "Verification status", "default": true}
                        },
                        "required": []
                    }
                }))
                .await?;
            Ok(elicited("Elicitation completed", &asked))
        },
    )
}

/// SEP-1330: the five enum forms.
fn elicitation_enums() -> Tool {
    Tool::typed(
        "test_elicitation_sep1330_enums",
        "Tests elicitation with enum schema improvements per SEP-1330",
        |_: NoArgs, cx: ToolContext| async move {
            let titled = |a: &str, b: &str, c: &str| json!([{"const": "value1", "title": a}, {"const": "value2", "title": b}, {"const": "value3", "title": c}]);
            let asked = cx
                .elicit_raw(json!({
                    "message": "Please select options from the enum fields",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "untitledSingle": {"type": "string", "description": "Select one option",
                                "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "description": "Select one option with titles",
                                "oneOf": titled("First Option", "Second Option", "Third Option")},
                            "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                                "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "description": "Select multiple options",
                                "minItems": 1, "maxItems": 3,
                                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                                "minItems": 1, "maxItems": 3,
                                "items": {"anyOf": titled("First Choice", "Second Choice", "Third Choice")}}
                        },
                        "required": []
                    }
                }))
                .await?;
            Ok(elicited("Elicitation completed", &asked))
        },
    )
}

/// SEP-1613 / SEP-2106: an input schema using the 2020-12 vocabulary, listed unchanged.
fn json_schema_2020_12() -> Tool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    Tool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        schema,
        |args: Value, _cx| async move {
            Ok(CallToolResult::text(format!(
                "JSON Schema 2020-12 tool called with: {args}"
            )))
        },
    )
}
