//! Resources, a resource template and prompts (scenarios `resources-*`, `prompts-*`,
//! `completion-complete`, `sep-2164-resource-not-found`).

use mcp_tasks_sdk::prelude::*;
use mcp_tasks_sdk::serde_json::json;

use crate::content::PNG;

/// The resource that changes every three seconds.
pub(crate) const WATCHED: &str = "test://watched-resource";

pub(crate) fn resources() -> Vec<Resource> {
    vec![
        Resource::text(
            "test://static-text",
            "static-text",
            "text/plain",
            "This is the content of the static text resource.",
        )
        .title("Static Text Resource")
        .description("A static text resource for testing"),
        Resource::blob("test://static-binary", "static-binary", "image/png", PNG)
            .title("Static Binary Resource")
            .description("A static binary resource (image) for testing"),
        Resource::text(
            WATCHED,
            "watched-resource",
            "text/plain",
            "Watched resource content",
        )
        .title("Watched Resource")
        .description("A resource that auto-updates every 3 seconds"),
    ]
}

pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("test://template/{id}/data", "template", |req| async move {
            let id = req.variables.get("id").cloned().unwrap_or_default();
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![ResourceContents::text(
                req.uri,
                Some("application/json"),
                text.to_string(),
            )])
        })
        .title("Resource Template")
        .description("A resource template with parameter substitution")
        .mime_type("application/json")
        .complete("id", |prefix, _| async move {
            ["1", "2", "3", "123"]
                .into_iter()
                .filter(|id| id.starts_with(&prefix))
                .map(str::to_owned)
                .collect()
        }),
    ]
}

/// The arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct TwoArgs {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

/// The arguments of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
struct EmbedArgs {
    /// URI of the resource to embed
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

/// Words `arg1` completes to.
const WORDS: [&str; 6] = ["paris", "park", "party", "test", "testing", "tested"];

pub(crate) fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "test_simple_prompt",
            "A simple prompt without arguments",
            |_| async {
                Ok(GetPromptResult::new(vec![PromptMessage::user(
                    ContentBlock::text("This is a simple prompt for testing."),
                )]))
            },
        )
        .title("Simple Test Prompt"),
        Prompt::typed(
            "test_prompt_with_arguments",
            "A prompt with required arguments",
            |a: TwoArgs| async move {
                let text = format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    a.arg1, a.arg2
                );
                Ok(vec![PromptMessage::user(ContentBlock::text(text))])
            },
        )
        .title("Prompt With Arguments")
        .complete("arg1", |prefix, _| async move {
            WORDS
                .into_iter()
                .filter(|w| w.starts_with(&prefix))
                .map(str::to_owned)
                .collect()
        }),
        Prompt::typed(
            "test_prompt_with_embedded_resource",
            "A prompt that includes an embedded resource",
            |a: EmbedArgs| async move {
                let resource = ResourceContents::text(
                    a.resource_uri,
                    Some("text/plain"),
                    "Embedded resource content for testing.",
                );
                Ok(vec![
                    PromptMessage::user(ContentBlock::embedded(resource)),
                    PromptMessage::user(ContentBlock::text(
                        "Please process the embedded resource above.",
                    )),
                ])
            },
        )
        .title("Prompt With Embedded Resource"),
        Prompt::new(
            "test_prompt_with_image",
            "A prompt that includes image content",
            |_| async {
                Ok(GetPromptResult::new(vec![
                    PromptMessage::user(ContentBlock::image(PNG, "image/png")),
                    PromptMessage::user(ContentBlock::text("Please analyze the image above.")),
                ]))
            },
        )
        .title("Prompt With Image"),
        // 2026-07-28: answered `input_required` until the client gives the context.
        Prompt::asking(
            "test_input_required_result_prompt",
            "MRTR: prompt that requires elicitation input",
            |_, cx| async move {
                let answer = cx
                    .ask(
                        "user_context",
                        "elicitation/create",
                        json!({
                            "message": "What context should the prompt use?",
                            "requestedSchema": {"type": "object",
                                "properties": {"context": {"type": "string"}}, "required": ["context"]}
                        }),
                    )
                    .await?;
                let context = answer.pointer("/content/context").and_then(|c| c.as_str());
                Ok(GetPromptResult::new(vec![PromptMessage::user(
                    ContentBlock::text(format!(
                        "Prompt with context: {}",
                        context.unwrap_or("unknown")
                    )),
                )]))
            },
        ),
    ]
}
