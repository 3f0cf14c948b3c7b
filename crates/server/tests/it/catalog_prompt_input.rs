//! Prompts that ask the requestor: the answers come round by round in the
//! `InputRequiredResult`s of 2026-07-28, or as `elicitation/create` requests to the client
//! in 2025-11-25; every message is validated against the schema of its era.

use mcp_tasks_proto::ContentBlock;
use mcp_tasks_server::{GetPromptResult, Prompt, PromptMessage, Server};
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};

/// `topic`: asks for a topic (by key `topic`), then for a tone (`tone`).
fn asking_prompt() -> Prompt {
    Prompt::asking("topic", "Asks what about", |_, cx| async move {
        let form = |field: &str| {
            json!({"mode": "form", "message": field, "requestedSchema":
                {"type": "object", "properties": {field: {"type": "string"}}}})
        };
        let topic = cx.ask("topic", "elicitation/create", form("topic")).await?;
        let tone = cx.ask("tone", "elicitation/create", form("tone")).await?;
        let text = format!(
            "Write about {} in a {} tone",
            topic["content"]["topic"].as_str().unwrap_or("?"),
            tone["content"]["tone"].as_str().unwrap_or("?")
        );
        Ok(GetPromptResult::new(vec![PromptMessage::user(
            ContentBlock::text(text),
        )]))
    })
}

async fn asking_server() -> Wire {
    let server = Server::builder()
        .prompt(asking_prompt())
        .store_url("memory")
        .build()
        .await
        .unwrap();
    crate::support::wire_to(server)
}

fn accept(field: &str, v: &str) -> Value {
    json!({"action": "accept", "content": {field: v}})
}

/// Spec (MRTR): the server answers `InputRequiredResult` for any request, `prompts/get`
/// included; the retry carries `inputResponses` and the echoed `requestState`, and each
/// round's answers are kept in the state (a round may come to another replica).
#[tokio::test]
async fn a_prompt_that_asks_is_answered_input_required_round_by_round_in_2026_07_28() {
    let mut w = asking_server().await;
    let caps = json!({"elicitation": {"form": {}}});
    let r1 = w
        .ok_modern("prompts/get", json!({"name": "topic"}), caps.clone())
        .await;
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    assert_eq!(r1["inputRequests"]["topic"]["method"], "elicitation/create");
    let s1 = r1["requestState"].as_str().unwrap().to_owned();
    let r2 = w
        .ok_modern(
            "prompts/get",
            json!({"name": "topic", "requestState": s1,
                   "inputResponses": {"topic": accept("topic", "tides"), "other": {}}}),
            caps.clone(),
        )
        .await;
    let asked: Vec<&String> = r2["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(asked, ["tone"], "{r2}");
    let s2 = r2["requestState"].as_str().unwrap().to_owned();
    let done = w
        .ok_modern(
            "prompts/get",
            json!({"name": "topic", "requestState": s2.clone(),
                   "inputResponses": {"tone": accept("tone", "calm")}}),
            caps.clone(),
        )
        .await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(
        done["messages"][0]["content"]["text"],
        "Write about tides in a calm tone"
    );
    // A state that fails verification is refused.
    let e = w
        .err_modern(
            "prompts/get",
            json!({"name": "topic", "requestState": format!("{s2}x"),
                   "inputResponses": {"tone": accept("tone", "calm")}}),
            caps.clone(),
        )
        .await;
    assert_eq!(e["code"], -32602);
    // Without the capability the question cannot be asked: -32021 naming it.
    let e = w
        .err_modern("prompts/get", json!({"name": "topic"}), json!({}))
        .await;
    assert_eq!(e["code"], -32021, "{e}");
    assert_eq!(
        e["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}}),
        "{e}"
    );
}

/// 2025-11-25: the prompt's question is an `elicitation/create` request to the client on
/// the `prompts/get` request's stream.
#[tokio::test]
async fn a_prompt_that_asks_sends_the_client_requests_in_2025_11_25() {
    let mut w = asking_server().await;
    w.initialize().await;
    let id = w.start("prompts/get", json!({"name": "topic"})).await;
    for (field, value) in [("topic", "tides"), ("tone", "calm")] {
        let q = w
            .wait_for("the question", |m| m["method"] == "elicitation/create")
            .await;
        assert_eq!(q["params"]["message"], field);
        w.send(&json!({"jsonrpc": "2.0", "id": q["id"], "result": accept(field, value)}))
            .await;
    }
    let r = w.response_to(&id).await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"], "Write about tides in a calm tone",
        "{r}"
    );
}
