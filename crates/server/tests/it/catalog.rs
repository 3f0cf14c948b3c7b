//! Resources, resource templates, prompts, completions and logging, in both generations,
//! on one stdio connection; every message is validated against the schema of its era.

use std::time::Duration;

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{CallToolResult, ContentBlock, ResourceContents};
use mcp_tasks_server::{
    GetPromptResult, LogLevel, MAX_SUBSCRIBED_URI_BYTES, MAX_SUBSCRIPTIONS_PER_SESSION, Prompt,
    PromptMessage, Resource, ResourceTemplate, Server, Tool,
};
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};

/// `chatty` logs at debug, info and error, then answers.
fn chatty() -> Tool {
    Tool::new(
        "chatty",
        "Logs.",
        json!({"type": "object"}),
        |_: Value, cx| async move {
            cx.log(LogLevel::Debug, Some("t"), "detail").await;
            cx.log(LogLevel::Info, Some("t"), "step").await;
            cx.log(LogLevel::Error, None, json!({"oops": 1})).await;
            Ok(CallToolResult::text("done"))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// A server with a text resource, a template, two prompts (one completing), logging.
async fn served(logging: bool) -> (Server, Wire) {
    let template = ResourceTemplate::new("test://item/{id}", "item", |req| async move {
        let id = req.variables["id"].clone();
        if id == "none" {
            return Ok(vec![]);
        }
        Ok(vec![ResourceContents::text(
            req.uri,
            Some("text/plain"),
            format!("item {id}"),
        )])
    })
    .description("Items by id")
    .complete("id", |prefix, _| async move {
        ["10", "11", "20"]
            .into_iter()
            .filter(|v| v.starts_with(&prefix))
            .map(str::to_owned)
            .collect()
    });
    let greet = Prompt::new("greet", "Greets someone", |args| async move {
        Ok(GetPromptResult::new(vec![
            PromptMessage::user(ContentBlock::text(format!("Greet {}", args["name"]))),
            PromptMessage::user(ContentBlock::embedded(ResourceContents::text(
                "test://a",
                Some("text/plain"),
                "A",
            ))),
        ]))
    })
    .argument("name", "Who", true)
    .complete("name", |prefix, _| async move {
        ["ada", "alan", "grace"]
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .map(str::to_owned)
            .collect()
    });
    let mut b = Server::builder()
        .tool(chatty())
        .resource(Resource::text("test://a", "a", "text/plain", "A").title("The A"))
        .resource(Resource::blob("test://b", "b", "image/png", "AAAA"))
        .resource_template(template)
        .prompt(greet)
        .store_url("memory");
    if logging {
        b = b.logging();
    }
    let server = b.build().await.expect("builds");
    let (wire, (reader, writer)) = Wire::pair();
    let s = server.clone();
    tokio::spawn(async move {
        s.serve(
            mcp_tasks_server::Transport::io(reader, writer),
            std::future::pending(),
        )
        .await
    });
    (server, wire)
}

#[tokio::test]
async fn initialize_declares_what_the_catalog_has() {
    let (_s, mut w) = served(true).await;
    let caps = w.initialize().await["capabilities"].clone();
    assert_eq!(
        caps["resources"],
        json!({"listChanged": false, "subscribe": true})
    );
    assert_eq!(caps["prompts"], json!({"listChanged": false}));
    assert_eq!(caps["completions"], json!({}));
    assert_eq!(caps["logging"], json!({}));

    let (_s, mut w) = served(false).await;
    let caps = w.initialize().await["capabilities"].clone();
    assert!(caps.get("logging").is_none(), "{caps}");
    assert_eq!(
        w.err("logging/setLevel", json!({"level": "info"})).await["code"],
        -32601
    );
}

#[tokio::test]
async fn resources_list_read_and_templates_in_2025_11_25() {
    let (_s, mut w) = served(false).await;
    w.initialize().await;
    let list = w.ok("resources/list", json!({})).await;
    assert_eq!(
        list["resources"],
        json!([
            {"uri": "test://a", "name": "a", "mimeType": "text/plain", "title": "The A"},
            {"uri": "test://b", "name": "b", "mimeType": "image/png"}
        ])
    );
    let templates = w.ok("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["resourceTemplates"],
        json!([{"uriTemplate": "test://item/{id}", "name": "item", "description": "Items by id"}])
    );
    let a = w.ok("resources/read", json!({"uri": "test://a"})).await;
    assert_eq!(
        a,
        json!({"contents": [{"uri": "test://a", "mimeType": "text/plain", "text": "A"}]})
    );
    let b = w.ok("resources/read", json!({"uri": "test://b"})).await;
    assert_eq!(b["contents"][0]["blob"], "AAAA");
    let item = w
        .ok("resources/read", json!({"uri": "test://item/7"}))
        .await;
    assert_eq!(item["contents"][0]["text"], "item 7");

    // Spec (resources, error handling): "Resource not found: -32002".
    let e = w.err("resources/read", json!({"uri": "test://nope"})).await;
    assert_eq!(
        (e["code"].clone(), e["data"]["uri"].clone()),
        (json!(-32002), json!("test://nope"))
    );
    let e = w
        .err("resources/read", json!({"uri": "test://item/none"}))
        .await;
    assert_eq!(e["code"], -32002, "no contents is not found: {e}");
    assert_eq!(w.err("resources/read", json!({})).await["code"], -32602);
    assert_eq!(
        w.err("resources/list", json!({"cursor": "x"})).await["code"],
        -32602
    );
}

#[tokio::test]
async fn resources_and_prompts_in_2026_07_28_carry_cache_hints_and_sep_2164_errors() {
    let (_s, mut w) = served(true).await;
    let caps = json!({});
    let d = w
        .ok_modern("server/discover", json!({}), caps.clone())
        .await;
    assert_eq!(
        d["capabilities"]["resources"],
        json!({"listChanged": false})
    );
    assert!(d["capabilities"].get("logging").is_none(), "{d}");
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let r = w.ok_modern(method, json!({}), caps.clone()).await;
        assert_eq!(
            (r["cacheScope"].as_str(), r["resultType"].as_str()),
            (Some("public"), Some("complete")),
            "{method}: {r}"
        );
        assert!(r["ttlMs"].is_u64(), "{method}: {r}");
    }
    let r = w
        .ok_modern("resources/read", json!({"uri": "test://a"}), caps.clone())
        .await;
    assert_eq!(
        (r["contents"][0]["text"].as_str(), r["ttlMs"].as_u64()),
        (Some("A"), Some(0))
    );
    // SEP-2164: -32602 with the URI in `data.uri`, never an empty `contents`.
    let e = w
        .err_modern(
            "resources/read",
            json!({"uri": "test://nope"}),
            caps.clone(),
        )
        .await;
    assert_eq!(
        (e["code"].clone(), e["data"]["uri"].clone()),
        (json!(-32602), json!("test://nope"))
    );
    // Gone from 2026-07-28: subscriptions and setLevel.
    for (method, params) in [
        ("resources/subscribe", json!({"uri": "test://a"})),
        ("logging/setLevel", json!({"level": "info"})),
    ] {
        assert_eq!(
            w.err_modern(method, params, caps.clone()).await["code"],
            -32601,
            "{method}"
        );
    }
    let p = w
        .ok_modern(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
            caps.clone(),
        )
        .await;
    assert_eq!(p["messages"][0]["content"]["text"], "Greet Ada");
}

#[tokio::test]
async fn prompts_list_get_and_errors() {
    let (_s, mut w) = served(false).await;
    w.initialize().await;
    let list = w.ok("prompts/list", json!({})).await;
    assert_eq!(
        list["prompts"],
        json!([{"name": "greet", "description": "Greets someone",
                "arguments": [{"name": "name", "description": "Who", "required": true}]}])
    );
    let p = w
        .ok(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(
        p["messages"][0],
        json!({"role": "user", "content": {"type": "text", "text": "Greet Ada"}})
    );
    assert_eq!(p["messages"][1]["content"]["type"], "resource");
    // Spec (prompts): "Missing required arguments: -32602".
    assert_eq!(
        w.err("prompts/get", json!({"name": "greet"})).await["code"],
        -32602
    );
    assert_eq!(
        w.err("prompts/get", json!({"name": "nope"})).await["code"],
        -32602
    );
}

#[tokio::test]
async fn completion_answers_from_the_argument_s_completer() {
    let (_s, mut w) = served(false).await;
    w.initialize().await;
    let c = w
        .ok(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "a"}}),
        )
        .await;
    assert_eq!(
        c,
        json!({"completion": {"values": ["ada", "alan"], "total": 2, "hasMore": false}})
    );
    let c = w
        .ok(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "test://item/{id}"}, "argument": {"name": "id", "value": "1"}}),
        )
        .await;
    assert_eq!(c["completion"]["values"], json!(["10", "11"]));
    let e = w
        .err(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}),
        )
        .await;
    assert_eq!(e["code"], -32602);
}

/// The `notifications/message` params among `msgs`.
fn logs(msgs: &[Value]) -> Vec<Value> {
    msgs.iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"].clone())
        .collect()
}

#[tokio::test]
async fn log_messages_follow_set_level_in_2025_11_25() {
    let (_s, mut w) = served(true).await;
    w.initialize().await;
    // Before any setLevel: every message.
    let id = w.start("tools/call", json!({"name": "chatty"})).await;
    w.response_to(&id).await;
    let all = logs(&w.drain_for(Duration::from_millis(50)).await);
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(
        all[1],
        json!({"level": "info", "logger": "t", "data": "step"})
    );

    assert_eq!(
        w.ok("logging/setLevel", json!({"level": "error"})).await,
        json!({})
    );
    let id = w.start("tools/call", json!({"name": "chatty"})).await;
    w.response_to(&id).await;
    let some = logs(&w.drain_for(Duration::from_millis(50)).await);
    assert_eq!(some, vec![json!({"level": "error", "data": {"oops": 1}})]);
    assert_eq!(
        w.err("logging/setLevel", json!({"level": "loud"})).await["code"],
        -32602
    );
}

/// A tool running as a task logs with the task's related-task `_meta`, so that the
/// requestor ties each message to its task.
///
/// Spec (2025-11-25, tasks): "All requests, notifications, and responses related to a task
/// MUST include the `io.modelcontextprotocol/related-task` key in their `_meta` field".
#[tokio::test]
async fn log_messages_of_a_task_carry_its_related_task_meta() {
    let (_s, mut w) = served(true).await;
    w.initialize().await;
    let id = w
        .start(
            "tools/call",
            json!({"name": "chatty", "task": {"ttl": 60_000}}),
        )
        .await;
    let created = w.response_to(&id).await;
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_owned();
    let id = w.start("tasks/result", json!({"taskId": task_id})).await;
    let result = w.response_to(&id).await;
    assert_eq!(result["result"]["content"][0]["text"], "done", "{result}");
    let msgs = w.drain_for(Duration::from_millis(50)).await;
    let logged: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logged.len(), 3, "{msgs:?}");
    for m in logged {
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            json!(task_id),
            "{m}"
        );
    }
}

#[tokio::test]
async fn log_messages_in_2026_07_28_only_at_the_requested_level() {
    let (_s, mut w) = served(false).await;
    let caps = json!({});
    // Spec (2026-07-28 changelog): "servers MUST NOT emit notifications/message for
    // requests that did not include this field".
    let id = w
        .start_modern("tools/call", json!({"name": "chatty"}), caps.clone())
        .await;
    w.response_to(&id).await;
    assert!(logs(&w.drain_for(Duration::from_millis(50)).await).is_empty());

    let params = json!({"name": "chatty", "_meta": {"io.modelcontextprotocol/logLevel": "info"}});
    let id = w.start_modern("tools/call", params, caps.clone()).await;
    w.response_to(&id).await;
    let got = logs(&w.drain_for(Duration::from_millis(50)).await);
    let levels: Vec<&str> = got.iter().filter_map(|p| p["level"].as_str()).collect();
    assert_eq!(levels, ["info", "error"]);

    let params = json!({"name": "chatty", "_meta": {"io.modelcontextprotocol/logLevel": "loud"}});
    assert_eq!(
        w.err_modern("tools/call", params, caps).await["code"],
        -32602
    );
}

#[tokio::test]
async fn subscribers_hear_of_updates_until_they_unsubscribe() {
    let (server, mut w) = served(false).await;
    w.initialize().await;
    assert_eq!(
        w.ok("resources/subscribe", json!({"uri": "test://a"}))
            .await,
        json!({})
    );
    assert_eq!(
        w.err("resources/subscribe", json!({"uri": "test://nope"}))
            .await["code"],
        -32002
    );
    server.resource_updated("test://b");
    server.resource_updated("test://a");
    let n = w
        .wait_for("the update", |m| {
            m["method"] == "notifications/resources/updated"
        })
        .await;
    assert_eq!(
        n["params"],
        json!({"uri": "test://a"}),
        "only the watched URI"
    );

    assert_eq!(
        w.ok("resources/unsubscribe", json!({"uri": "test://a"}))
            .await,
        json!({})
    );
    server.resource_updated("test://a");
    let after = w.drain_for(Duration::from_millis(50)).await;
    assert!(
        after
            .iter()
            .all(|m| m["method"] != "notifications/resources/updated"),
        "{after:?}"
    );
}

#[tokio::test]
async fn a_session_watches_a_bounded_number_of_resources() {
    let (_s, mut w) = served(false).await;
    w.initialize().await;
    // Bounded in size too: a URI past the bound is not kept.
    let long = format!("test://item/{}", "x".repeat(MAX_SUBSCRIBED_URI_BYTES));
    let e = w.err("resources/subscribe", json!({"uri": long})).await;
    assert_eq!(e["code"], -32602, "{e}");
    for i in 0..MAX_SUBSCRIPTIONS_PER_SESSION {
        w.ok(
            "resources/subscribe",
            json!({"uri": format!("test://item/{i}")}),
        )
        .await;
    }
    let e = w
        .err("resources/subscribe", json!({"uri": "test://item/past"}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    // The session still serves.
    w.ok("resources/list", json!({})).await;
}

#[tokio::test]
async fn a_server_without_a_catalog_answers_method_not_found() {
    let server = Server::builder()
        .tool(chatty())
        .store_url("memory")
        .build()
        .await
        .unwrap();
    let mut w = crate::support::wire_to(server);
    let caps = w.initialize().await["capabilities"].clone();
    assert!(
        caps.get("resources").is_none() && caps.get("prompts").is_none(),
        "{caps}"
    );
    for m in [
        "resources/list",
        "prompts/list",
        "completion/complete",
        "logging/setLevel",
    ] {
        assert_eq!(w.err(m, json!({})).await["code"], -32601, "{m}");
    }
}
