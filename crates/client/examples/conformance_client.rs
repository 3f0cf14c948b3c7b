//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`) plays
//! its client scenarios against, written with the public API of this crate only.
//!
//! The suite starts a server of its own for a scenario and runs this program with that
//! server's URL as the last argument, the scenario's name in `MCP_CONFORMANCE_SCENARIO`
//! and the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` (2025-11-25 unless given):
//!
//! ```sh
//! interop/conformance/run.sh                       # builds it and plays every client scenario
//! MCP_CONFORMANCE_SCENARIO=tools_call cargo run -p mcp-tasks-client --example conformance_client -- http://127.0.0.1:PORT/mcp
//! ```
//!
//! What it does, whatever the scenario: connect at that revision (2026-07-28: no
//! `initialize`; 2025-11-25: `initialize`), read the server's resources and prompts when it
//! has any (`resources/list`, `resources/read`, `prompts/list`, `prompts/get`), list its
//! tools and call each one, at once, with arguments made from its input schema (a
//! property's `default`, else a value of its type), answering elicitation with the
//! requested schema's defaults and sampling with a fixed text. Two scenarios ask for
//! something else: `json-schema-2020-12-preservation` (the focal tool's `inputSchema` is
//! sent back, verbatim, to the echo tool) and `tools_call` (`add_numbers` with 5 and 3).
//! When the suite gives the calls to make (`toolCalls` in the JSON of
//! `MCP_CONFORMANCE_CONTEXT`: `[{name, arguments}]`), those are made instead, in order.
//! Exit status 1 when the client cannot connect; a call that fails is reported on stderr
//! (some scenarios expect the client to refuse a tool).

use std::process::ExitCode;

use async_trait::async_trait;
use mcp_tasks_client::{
    Client, ClientConfig, ElicitationHandler, FixedSampling, HttpClientConfig, Revision,
    ServerRequest, Tool, elicit,
};
use mcp_tasks_proto::ErrorObject;
use serde_json::{Map, Value, json};

/// The focal tool of `json-schema-2020-12-preservation`, and the tool that echoes it.
const FOCAL: &str = "json_schema_2020_12_tool";
const ECHO: &str = "json_schema_echo";

/// Accepts every form with the requested schema's defaults (SEP-1034: "Clients SHOULD
/// pre-populate form fields with these default values"), and a value of its type for a
/// field without one.
struct Defaults;

#[async_trait]
impl ElicitationHandler for Defaults {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        let schema = request.params.get("requestedSchema").cloned();
        Ok(elicit::accept(arguments(
            schema.as_ref().unwrap_or(&json!({})),
        )))
    }
}

/// An object for `schema`: each property's `default`, else a value of its type.
fn arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            args.insert(name.clone(), value_of(prop));
        }
    }
    Value::Object(args)
}

/// A value `prop` accepts: its `default`, its first `enum` value, or one of its type.
fn value_of(prop: &Value) -> Value {
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("number" | "integer") => json!(1),
        Some("boolean") => json!(true),
        Some("object") => arguments(prop),
        Some("array") => json!([]),
        Some("null") => Value::Null,
        _ => json!("conformance"),
    }
}

/// The arguments to call `tool` with in `scenario`, given every listed tool.
fn call_arguments(scenario: &str, tool: &Tool, tools: &[Tool]) -> Option<Value> {
    match (scenario, tool.name.as_str()) {
        ("json-schema-2020-12-preservation", FOCAL) => None,
        ("json-schema-2020-12-preservation", ECHO) => {
            let focal = tools.iter().find(|t| t.name == FOCAL)?;
            Some(json!({"schema": focal.input_schema}))
        }
        ("tools_call", "add_numbers") => Some(json!({"a": 5, "b": 3})),
        _ => Some(arguments(&tool.input_schema)),
    }
}

/// Read every resource and get every prompt the server has (errors reported, not fatal).
async fn browse(client: &Client) {
    let caps = client.server_capabilities().clone();
    if caps.get("resources").is_some() {
        match client.request("resources/list", Some(json!({}))).await {
            Ok(list) => {
                for r in list["resources"].as_array().into_iter().flatten() {
                    let params = json!({"uri": r["uri"]});
                    if let Err(e) = client.request("resources/read", Some(params)).await {
                        eprintln!("resources/read {}: {e}", r["uri"]);
                    }
                }
            }
            Err(e) => eprintln!("resources/list: {e}"),
        }
    }
    if caps.get("prompts").is_some() {
        match client.request("prompts/list", Some(json!({}))).await {
            Ok(list) => {
                for p in list["prompts"].as_array().into_iter().flatten() {
                    let mut args = Map::new();
                    for a in p["arguments"].as_array().into_iter().flatten() {
                        if let Some(name) = a["name"].as_str() {
                            args.insert(name.to_owned(), json!("conformance"));
                        }
                    }
                    let params = json!({"name": p["name"], "arguments": args});
                    if let Err(e) = client.request("prompts/get", Some(params)).await {
                        eprintln!("prompts/get {}: {e}", p["name"]);
                    }
                }
            }
            Err(e) => eprintln!("prompts/list: {e}"),
        }
    }
}

/// The calls the suite asks for (`toolCalls` of its context), if any.
fn given_calls(context: Option<&str>) -> Option<Vec<(String, Value)>> {
    let context: Value = serde_json::from_str(context?).ok()?;
    let calls = context.get("toolCalls")?.as_array()?;
    Some(
        calls
            .iter()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?.to_owned();
                Some((
                    name,
                    c.get("arguments").cloned().unwrap_or_else(|| json!({})),
                ))
            })
            .collect(),
    )
}

/// Play `scenario` against the server at `url`.
async fn play(scenario: &str, version: &str, url: &str) -> Result<(), String> {
    // Dated revisions compare as text: 2025-11-25 and before are spoken through `initialize`.
    let protocol = if version <= Revision::V2025_11_25.as_str() {
        Revision::V2025_11_25
    } else {
        Revision::V2026_07_28
    };
    let mut config = ClientConfig::default();
    config.name = "mcp-tasks-conformance-client".into();
    let config = config
        .with_protocol(protocol)
        .with_elicitation(Defaults)
        .with_sampling(FixedSampling {
            model: "conformance".into(),
            text: "Hello from the conformance client".into(),
        });
    let client = Client::connect_http(HttpClientConfig::new(url), config)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    if scenario != "initialize" {
        browse(&client).await;
    }
    let tools = match client.list_tools().await {
        Ok(tools) => tools,
        Err(e) => {
            client.close().await;
            return Err(format!("tools/list: {e}"));
        }
    };
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").ok();
    if let Some(calls) = given_calls(context.as_deref()) {
        for (name, args) in calls {
            // A tool the client refused from the listing is not called.
            if !tools.iter().any(|t| t.name == name) {
                eprintln!("{name}: not listed (refused), not called");
                continue;
            }
            match client.call_tool(&name, args).await {
                Ok(r) => eprintln!("{name}: {}", r.text()),
                Err(e) => eprintln!("{name}: {e}"),
            }
        }
    } else if !matches!(scenario, "initialize" | "json-schema-ref-no-deref") {
        // Every tool at once: a scenario may watch the calls overlap.
        let calls = tools.iter().filter_map(|tool| {
            let args = call_arguments(scenario, tool, &tools)?;
            let client = &client;
            Some(async move {
                match client.call_tool(&tool.name, args).await {
                    Ok(r) => eprintln!("{}: {}", tool.name, r.text()),
                    Err(e) => eprintln!("{}: {e}", tool.name),
                }
            })
        });
        futures::future::join_all(calls).await;
    }
    client.close().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=NAME conformance_client URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    match play(&scenario, &version, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_answered_with_their_defaults_then_typed_values() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "status": {"type": "string", "enum": ["active", "inactive"]},
            "ok": {"type": "boolean"},
            "n": {"type": "number"}
        }});
        assert_eq!(
            arguments(&schema),
            json!({"name": "John Doe", "age": 30, "status": "active", "ok": true, "n": 1})
        );
    }
}
