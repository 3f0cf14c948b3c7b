//! The tool author's API end to end: `?` on an ordinary error gives an `isError` result, a
//! JSON-RPC error raised on purpose reaches the client with its code, and the typed
//! questions (`elicit::<T>`, `sample`) send the derived schema and parse the answers, in
//! both generations.

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_server::{Elicitation, Sampling, Server, Tool, ToolError, Transport};
use mcp_tasks_testkit::wire::Wire;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// The file to read.
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// What `contact` asks the user for.
#[derive(Deserialize, JsonSchema)]
struct Contact {
    /// The name.
    name: String,
    /// The age.
    age: u8,
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::typed("read", "Reads a file", |a: ReadArgs, _cx| async move {
            Ok(std::fs::read_to_string(&a.path)?)
        }),
        Tool::typed(
            "refuse",
            "A JSON-RPC error on purpose",
            |_: NoArgs, _cx| async move {
                Err::<String, _>(ToolError::rpc(ErrorObject::new(-32050, "not today")))
            },
        ),
        Tool::typed(
            "picky",
            "Invalid params on purpose",
            |_: NoArgs, _cx| async move { Err::<String, _>(ToolError::invalid_params("no, thanks")) },
        ),
        Tool::typed(
            "contact",
            "Asks for a contact",
            |_: NoArgs, cx| async move {
                Ok(match cx.elicit::<Contact>("Who?").await? {
                    Elicitation::Accepted(c) => format!("{} is {}", c.name, c.age),
                    Elicitation::Declined => "declined".to_owned(),
                    Elicitation::Cancelled => "cancelled".to_owned(),
                })
            },
        ),
        Tool::typed(
            "haiku",
            "Asks the client's model",
            |_: NoArgs, cx| async move {
                let request = Sampling::prompt("A haiku", 50).system_prompt("Be brief");
                let sampled = cx.sample(request).await?;
                Ok(format!("{}: {}", sampled.model, sampled.text()))
            },
        ),
    ]
}

async fn serve() -> Wire {
    let server = Server::builder()
        .tools(tools())
        .build()
        .await
        .expect("a server with tasks in memory");
    let (wire, (reader, writer)) = Wire::pair();
    tokio::spawn(async move {
        server
            .serve(Transport::io(reader, writer), std::future::pending())
            .await
    });
    wire
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

#[tokio::test]
async fn question_mark_on_an_io_error_is_an_is_error_result_with_its_text() {
    let mut w = serve().await;
    w.initialize().await;
    let missing = "/no/such/dir/report.txt";
    let r = w
        .ok("tools/call", call("read", json!({"path": missing})))
        .await;
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    let expected = std::fs::read_to_string(missing).unwrap_err().to_string();
    assert_eq!(text, expected);
    // The same in 2026-07-28.
    let r = w
        .ok_modern(
            "tools/call",
            call("read", json!({"path": missing})),
            json!({}),
        )
        .await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["content"][0]["text"], expected.as_str());
}

#[tokio::test]
async fn a_json_rpc_error_raised_by_a_tool_reaches_the_client_with_its_code() {
    let mut w = serve().await;
    w.initialize().await;
    let e = w.err("tools/call", call("refuse", json!({}))).await;
    assert_eq!(e["code"], -32050, "{e}");
    assert_eq!(e["message"], "not today");
    let e = w.err("tools/call", call("picky", json!({}))).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("no, thanks"), "{e}");
    // 2026-07-28 carries -32602 as it is; a code of the server-error range goes out as
    // -32603 with the tool's code in `data.originalCode` (as every modern answer does).
    let e = w
        .err_modern("tools/call", call("picky", json!({})), json!({}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    let e = w
        .err_modern("tools/call", call("refuse", json!({})), json!({}))
        .await;
    assert_eq!(e["data"]["originalCode"], -32050, "{e}");
}

#[tokio::test]
async fn a_typed_elicitation_sends_the_schema_of_its_type_and_parses_the_answer() {
    let mut w = serve().await;
    w.initialize().await;
    let id = w.start("tools/call", call("contact", json!({}))).await;
    let ask = w
        .wait_for("elicitation/create", |m| {
            m["method"] == "elicitation/create"
        })
        .await;
    let schema = &ask["params"]["requestedSchema"];
    assert_eq!(ask["params"]["message"], "Who?");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["name", "age"]));
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["age"]["type"], "integer");
    assert_eq!(schema["properties"]["age"]["description"], "The age.");
    w.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                   "result": {"action": "accept", "content": {"name": "Ann", "age": 30}}}))
        .await;
    let r = w.response_to(&id).await;
    assert_eq!(r["result"]["content"][0]["text"], "Ann is 30", "{r}");
}

#[tokio::test]
async fn a_typed_elicitation_declined_or_cancelled_is_a_typed_outcome() {
    let mut w = serve().await;
    let caps = json!({"elicitation": {"form": {}}});
    for (action, text) in [("decline", "declined"), ("cancel", "cancelled")] {
        let r = w
            .ok_modern("tools/call", call("contact", json!({})), caps.clone())
            .await;
        assert_eq!(r["resultType"], "input_required", "{r}");
        let (key, q) = r["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        assert_eq!(q["method"], "elicitation/create");
        assert_eq!(
            q["params"]["requestedSchema"]["required"],
            json!(["name", "age"])
        );
        let retry = json!({"name": "contact", "arguments": {},
                           "requestState": r["requestState"],
                           "inputResponses": {key.as_str(): {"action": action}}});
        let done = w.ok_modern("tools/call", retry, caps.clone()).await;
        assert_eq!(done["content"][0]["text"], text, "{done}");
    }
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_type_is_an_internal_error() {
    let mut w = serve().await;
    w.initialize().await;
    let id = w.start("tools/call", call("contact", json!({}))).await;
    let ask = w
        .wait_for("elicitation/create", |m| {
            m["method"] == "elicitation/create"
        })
        .await;
    w.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                   "result": {"action": "accept", "content": {"name": "Ann"}}}))
        .await;
    let r = w.response_to(&id).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
}

#[tokio::test]
async fn a_typed_sampling_request_and_its_answer() {
    let mut w = serve().await;
    w.initialize().await;
    let id = w.start("tools/call", call("haiku", json!({}))).await;
    let ask = w
        .wait_for("sampling/createMessage", |m| {
            m["method"] == "sampling/createMessage"
        })
        .await;
    assert_eq!(ask["params"]["maxTokens"], 50);
    assert_eq!(ask["params"]["systemPrompt"], "Be brief");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "A haiku");
    w.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                   "result": {"model": "m1", "role": "assistant",
                              "content": {"type": "text", "text": "Old pond"}}}))
        .await;
    let r = w.response_to(&id).await;
    assert_eq!(r["result"]["content"][0]["text"], "m1: Old pond", "{r}");
}
