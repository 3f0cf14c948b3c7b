//! The wire of the optional fields of the structs that mark them all at once with
//! `#[serde_with::skip_serializing_none]`: a field that is `None` is left out (never
//! written as `null`), a field that is `Some` is written under its wire name, and a field
//! left out reads back as `None`.

use std::fmt::Debug;

use mcp_tasks_proto::mcp::{CallToolParams, Tool};
use mcp_tasks_proto::modern::tasks::DetailedTask;
use mcp_tasks_proto::modern::{
    CacheScope, DiscoverResult, InputRequiredResult, ListToolsResult, ResultType, RetryFields,
    ServerCapabilities,
};
use mcp_tasks_proto::tool_result::{Annotations, BlockCommon, ResourceLink};
use mcp_tasks_proto::{CallToolResult, ErrorObject};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// `value` is written as `wire` exactly, and `wire` reads back as `value`.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T, wire: &Value) {
    assert_eq!(&serde_json::to_value(value).unwrap(), wire, "{value:?}");
    assert_eq!(&serde_json::from_value::<T>(wire.clone()).unwrap(), value);
}

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn tool() {
    let mut tool = Tool {
        name: "t".into(),
        description: None,
        input_schema: json!({"type": "object"}),
        execution: None,
        extra: Map::new(),
    };
    round_trip(
        &tool,
        &json!({"name": "t", "inputSchema": {"type": "object"}}),
    );
    tool.description = Some("d".into());
    tool.execution = Some(json!({"taskSupport": "optional"}));
    round_trip(
        &tool,
        &json!({"name": "t", "description": "d", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"}}),
    );
}

#[test]
fn call_tool_params() {
    let mut params = CallToolParams {
        name: "t".into(),
        arguments: None,
        task: None,
        meta: None,
        extra: Map::new(),
    };
    round_trip(&params, &json!({"name": "t"}));
    params.arguments = Some(json!({"a": 1}));
    params.task = Some(json!({"ttl": 5}));
    params.meta = Some(map(json!({"progressToken": 1})));
    round_trip(
        &params,
        &json!({"name": "t", "arguments": {"a": 1}, "task": {"ttl": 5},
                "_meta": {"progressToken": 1}}),
    );
}

#[test]
fn annotations_block_common_and_resource_link() {
    round_trip(&Annotations::default(), &json!({}));
    let annotations = Annotations {
        audience: Some(vec!["user".into()]),
        priority: Some(1.into()),
        last_modified: Some("2025-01-01T00:00:00Z".into()),
        extra: Map::new(),
    };
    let annotations_wire =
        json!({"audience": ["user"], "priority": 1, "lastModified": "2025-01-01T00:00:00Z"});
    round_trip(&annotations, &annotations_wire);

    round_trip(&BlockCommon::default(), &json!({}));
    let common = BlockCommon {
        annotations: Some(annotations),
        meta: Some(map(json!({"k": "v"}))),
        extra: Map::new(),
    };
    round_trip(
        &common,
        &json!({"annotations": annotations_wire, "_meta": {"k": "v"}}),
    );

    let mut link = ResourceLink {
        uri: "file:///a".into(),
        name: "a".into(),
        ..ResourceLink::default()
    };
    round_trip(&link, &json!({"uri": "file:///a", "name": "a"}));
    link.title = Some("A".into());
    link.description = Some("the a".into());
    link.mime_type = Some("text/plain".into());
    link.size = Some(3);
    round_trip(
        &link,
        &json!({"uri": "file:///a", "name": "a", "title": "A", "description": "the a",
                "mimeType": "text/plain", "size": 3}),
    );
}

#[test]
fn call_tool_result() {
    let mut result = CallToolResult::default();
    round_trip(&result, &json!({"content": []}));
    result.structured_content = Some(map(json!({"x": 1})));
    result.meta = Some(map(json!({"k": "v"})));
    round_trip(
        &result,
        &json!({"content": [], "structuredContent": {"x": 1}, "_meta": {"k": "v"}}),
    );
}

#[test]
fn detailed_task() {
    let task = map(json!({"taskId": "t1", "status": "working"}));
    let mut detailed = DetailedTask {
        task,
        result: None,
        error: None,
        input_requests: None,
    };
    round_trip(&detailed, &json!({"taskId": "t1", "status": "working"}));
    detailed.result = Some(json!({"content": []}));
    detailed.error = Some(ErrorObject::new(-32603, "boom"));
    detailed.input_requests = Some(map(json!({"k": {"method": "roots/list"}})));
    round_trip(
        &detailed,
        &json!({"taskId": "t1", "status": "working", "result": {"content": []},
                "error": {"code": -32603, "message": "boom"},
                "inputRequests": {"k": {"method": "roots/list"}}}),
    );
}

#[test]
fn server_capabilities_and_discover_result() {
    round_trip(&ServerCapabilities::default(), &json!({}));
    let capabilities = ServerCapabilities {
        tools: Some(json!({})),
        extensions: Some(Map::new()),
        extra: Map::new(),
    };
    round_trip(&capabilities, &json!({"tools": {}, "extensions": {}}));

    let mut discover = DiscoverResult {
        result_type: ResultType::Complete,
        supported_versions: vec!["2026-07-28".into()],
        capabilities: ServerCapabilities::default(),
        instructions: None,
        ttl_ms: None,
        cache_scope: None,
        meta: None,
        extra: Map::new(),
    };
    round_trip(
        &discover,
        &json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {}}),
    );
    discover.instructions = Some("be brief".into());
    discover.ttl_ms = Some(60_000);
    discover.cache_scope = Some(CacheScope::Public);
    discover.meta = Some(map(json!({"k": "v"})));
    round_trip(
        &discover,
        &json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {}, "instructions": "be brief", "ttlMs": 60_000,
                "cacheScope": "public", "_meta": {"k": "v"}}),
    );
}

#[test]
fn list_tools_result() {
    let mut list = ListToolsResult {
        result_type: ResultType::Complete,
        tools: vec![],
        ttl_ms: 0,
        cache_scope: CacheScope::Private,
        next_cursor: None,
        meta: None,
    };
    round_trip(
        &list,
        &json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}),
    );
    list.next_cursor = Some("c".into());
    list.meta = Some(Map::new());
    round_trip(
        &list,
        &json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private",
                "nextCursor": "c", "_meta": {}}),
    );
}

#[test]
fn input_required_result_and_retry_fields() {
    let mut asking = InputRequiredResult {
        result_type: ResultType::InputRequired,
        input_requests: None,
        request_state: None,
        meta: None,
    };
    round_trip(&asking, &json!({"resultType": "input_required"}));
    asking.input_requests = Some(map(json!({"k": {"method": "roots/list"}})));
    asking.request_state = Some("s".into());
    asking.meta = Some(Map::new());
    round_trip(
        &asking,
        &json!({"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}},
                "requestState": "s", "_meta": {}}),
    );

    round_trip(&RetryFields::default(), &json!({}));
    let retry = RetryFields {
        input_responses: Some(map(json!({"k": {"roots": []}}))),
        request_state: Some("s".into()),
    };
    round_trip(
        &retry,
        &json!({"inputResponses": {"k": {"roots": []}}, "requestState": "s"}),
    );
}
