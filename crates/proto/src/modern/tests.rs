//! Round trips of the modern types through the examples of the 2026-07-28 texts.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::tasks::*;
use super::*;

/// `v` parses as `T` and serializes back to exactly `v`.
fn round_trip<T: Serialize + DeserializeOwned>(v: &Value) -> T {
    let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"));
    assert_eq!(&serde_json::to_value(&t).unwrap(), v);
    t
}

fn task(status: &str) -> Value {
    json!({
        "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
        "status": status,
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:50:00Z",
        "ttlMs": 3600000,
        "pollIntervalMs": 5000
    })
}

fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[test]
fn create_task_result_is_flat_with_result_type_task() {
    let v = with(
        task("working"),
        json!({"resultType": "task", "statusMessage": "The operation is now in progress."}),
    );
    let r: CreateTaskResult = round_trip(&v);
    assert_eq!(r.result_type, ResultType::Task);
    assert_eq!(r.task.ttl_ms, Some(3_600_000));
    let built = CreateTaskResult::new(r.task.clone());
    assert_eq!(serde_json::to_value(&built).unwrap(), v);
}

#[test]
fn ttl_ms_null_is_written_and_means_unlimited() {
    let mut v = with(task("working"), json!({"resultType": "task"}));
    v["ttlMs"] = Value::Null;
    let r: CreateTaskResult = round_trip(&v);
    assert_eq!(r.task.ttl_ms, None);
}

#[test]
fn detailed_tasks_carry_the_payload_of_their_status() {
    let completed = with(
        task("completed"),
        json!({"resultType": "complete", "result": {"content": [{"type": "text", "text": "Failed to process request: invalid input"}], "isError": true}}),
    );
    let r: GetTaskResult = round_trip(&completed);
    r.task.check().unwrap();
    assert_eq!(r.task.task.status, TaskStatus::Completed);

    let failed = with(
        task("failed"),
        json!({"resultType": "complete", "statusMessage": "Tool execution failed: API rate limit exceeded",
               "error": {"code": -32603, "message": "API rate limit exceeded"}}),
    );
    let r: GetTaskResult = round_trip(&failed);
    r.task.check().unwrap();
    assert_eq!(r.task.error.as_ref().unwrap().code, -32603);

    let input = with(
        task("input_required"),
        json!({"resultType": "complete", "inputRequests": {"name": {"method": "elicitation/create",
            "params": {"mode": "form", "message": "Please enter your name.",
                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}}),
    );
    let r: GetTaskResult = round_trip(&input);
    r.task.check().unwrap();

    for s in ["working", "cancelled"] {
        let r: GetTaskResult = round_trip(&with(task(s), json!({"resultType": "complete"})));
        r.task.check().unwrap();
    }
}

#[test]
fn detailed_task_check_refuses_a_payload_that_does_not_match_the_status() {
    let mut t: DetailedTask = serde_json::from_value(task("completed")).unwrap();
    assert!(t.check().unwrap_err().contains("must carry `result`"));
    t.result = Some(json!({"content": []}));
    t.check().unwrap();
    t.task.status = TaskStatus::Working;
    assert!(t.check().unwrap_err().contains("carries `result`"));
    let mut f: DetailedTask = serde_json::from_value(task("failed")).unwrap();
    assert!(f.check().unwrap_err().contains("`error`"));
    f.error = Some(ErrorObject::internal("x"));
    f.check().unwrap();
    let i: DetailedTask = serde_json::from_value(task("input_required")).unwrap();
    assert!(i.check().unwrap_err().contains("inputRequests"));
}

#[test]
fn task_converts_from_the_legacy_shape() {
    let legacy = crate::mcp::Task {
        task_id: "t".into(),
        status: TaskStatus::Working,
        status_message: None,
        created_at: "2025-11-25T10:30:00Z".into(),
        last_updated_at: "2025-11-25T10:30:00Z".into(),
        ttl: None,
        poll_interval: Some(50),
    };
    let v = serde_json::to_value(Task::from(&legacy)).unwrap();
    assert_eq!(
        v,
        json!({"taskId": "t", "status": "working", "createdAt": "2025-11-25T10:30:00Z",
               "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttlMs": null, "pollIntervalMs": 50})
    );
}

#[test]
fn task_params_and_acks_round_trip() {
    let p: TaskIdParams = round_trip(&json!({"taskId": "786512e2"}));
    assert_eq!(p.task_id, "786512e2");
    let u: UpdateTaskParams = round_trip(&json!({
        "taskId": "786512e2",
        "inputResponses": {"name": {"action": "accept", "content": {"input": "Luca"}}},
        "_meta": {PROTOCOL_VERSION_META: PROTOCOL_VERSION, CLIENT_CAPABILITIES_META: {}}
    }));
    u.check().unwrap();
    let bad: UpdateTaskParams =
        serde_json::from_value(json!({"taskId": "t", "inputResponses": {"k": "yes"}})).unwrap();
    assert!(bad.check().unwrap_err().contains("\"k\""));
    assert!(
        serde_json::from_value::<UpdateTaskParams>(json!({"taskId": "t"})).is_err(),
        "inputResponses is required"
    );
    let ack: AckResult = round_trip(&json!({"resultType": "complete"}));
    assert_eq!(ack, AckResult::default());
    let n: TaskNotificationParams = round_trip(&with(
        task("completed"),
        json!({"result": {"content": [{"type": "text", "text": "Operation completed successfully."}], "isError": false}}),
    ));
    n.task.check().unwrap();
}

#[test]
fn input_required_result_round_trips_and_is_checked() {
    let v = json!({
        "resultType": "input_required",
        "inputRequests": {
            "github_login": {"method": "elicitation/create", "params": {"mode": "form",
                "message": "Please provide your GitHub username",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}},
            "capital_of_france": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
                "maxTokens": 100}}
        },
        "requestState": "AEAD-protected blob"
    });
    let r: InputRequiredResult = round_trip(&v);
    r.check().unwrap();
    let empty = InputRequiredResult {
        input_requests: None,
        request_state: None,
        ..r.clone()
    };
    assert!(empty.check().unwrap_err().contains("requestState"));
    let mut wrong = r.clone();
    wrong
        .input_requests
        .as_mut()
        .unwrap()
        .insert("x".into(), json!({"method": "tools/call"}));
    assert!(wrong.check().unwrap_err().contains("tools/call"));
    let typed: InputRequest =
        serde_json::from_value(v["inputRequests"]["github_login"].clone()).unwrap();
    assert_eq!(typed.method, "elicitation/create");
    let retry: RetryFields = round_trip(&json!({
        "inputResponses": {"github_login": {"action": "accept", "content": {"name": "octocat"}}},
        "requestState": "AEAD-protected blob"
    }));
    assert_eq!(retry.request_state.as_deref(), Some("AEAD-protected blob"));
}

#[test]
fn discover_result_round_trips_the_spec_example() {
    let v = json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}, "resources": {}},
        "_meta": {SERVER_INFO_META: {"name": "ExampleServer", "version": "1.0.0"}},
        "instructions": "This server provides weather and resource utilities.",
        "ttlMs": 3600000,
        "cacheScope": "public"
    });
    let d: DiscoverResult = round_trip(&v);
    assert_eq!(
        d.server_info(),
        Some(Implementation::new("ExampleServer", "1.0.0"))
    );
    assert!(!d.capabilities.has_extension(TASKS_EXTENSION));
    let with_tasks: ServerCapabilities =
        round_trip(&json!({"tools": {}, "extensions": {TASKS_EXTENSION: {}}}));
    assert!(with_tasks.has_extension(TASKS_EXTENSION));
    let tools: ListToolsResult = round_trip(&json!({
        "resultType": "complete", "tools": [{"name": "a", "inputSchema": {"type": "object"}}],
        "ttlMs": 0, "cacheScope": "public"
    }));
    assert_eq!(tools.cache_scope, CacheScope::Public);
}

#[test]
fn result_type_reads_absent_as_complete_and_keeps_unknown_values() {
    assert_eq!(ResultType::of(&json!({})), ResultType::Complete);
    assert_eq!(
        ResultType::of(&json!({"resultType": "task"})),
        ResultType::Task
    );
    let other: ResultType = serde_json::from_value(json!("stream")).unwrap();
    assert_eq!(other, ResultType::Other("stream".into()));
    assert_eq!(serde_json::to_value(&other).unwrap(), json!("stream"));
    assert_eq!(
        serde_json::to_value(ResultType::InputRequired).unwrap(),
        json!("input_required")
    );
}

fn meta_params(meta: Value) -> Value {
    json!({"name": "x", "_meta": meta})
}

#[test]
fn the_era_of_a_request_is_read_from_its_meta() {
    let supported = &["2026-07-28", "2025-11-25"];
    assert_eq!(request_revision(None, supported), Ok(None));
    assert_eq!(
        request_revision(Some(&json!({"_meta": {"progressToken": 1}})), supported),
        Ok(None)
    );
    let modern = meta_params(json!({
        PROTOCOL_VERSION_META: "2026-07-28",
        CLIENT_CAPABILITIES_META: {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}},
        CLIENT_INFO_META: {"name": "c", "version": "1"},
        LOG_LEVEL_META: "info"
    }));
    let Ok(Some(meta)) = request_revision(Some(&modern), supported) else {
        panic!("modern expected")
    };
    assert_eq!(meta.revision, crate::revision::Revision::V2026_07_28);
    assert!(meta.client_capabilities.has_tasks_extension());
    assert!(meta.client_capabilities.elicitation_form());
    assert!(!meta.client_capabilities.sampling());
    assert_eq!(meta.client_info, Some(Implementation::new("c", "1")));
    assert_eq!(meta.log_level.as_deref(), Some("info"));
}

#[test]
fn malformed_or_unsupported_meta_is_refused_precisely() {
    let supported = &["2026-07-28", "2025-11-25"];
    let refused = |meta: Value| match request_revision(Some(&meta_params(meta)), supported) {
        Err(e) => e,
        other => panic!("refusal expected, got {other:?}"),
    };
    let e = refused(json!({PROTOCOL_VERSION_META: "1900-01-01", CLIENT_CAPABILITIES_META: {}}));
    assert_eq!(e.code, codes::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        e.data,
        Some(json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}))
    );
    // A legacy revision is negotiated by initialize, never per request.
    let e = refused(json!({PROTOCOL_VERSION_META: "2025-11-25", CLIENT_CAPABILITIES_META: {}}));
    assert_eq!(e.code, codes::UNSUPPORTED_PROTOCOL_VERSION);
    let e = refused(json!({PROTOCOL_VERSION_META: 20260728}));
    assert_eq!(e.code, crate::codes::INVALID_PARAMS);
    assert!(e.message.contains("must be a string"), "{e}");
    let e = refused(json!({PROTOCOL_VERSION_META: "2026-07-28"}));
    assert_eq!(e.code, crate::codes::INVALID_PARAMS);
    assert!(e.message.contains(CLIENT_CAPABILITIES_META), "{e}");
    let e = refused(json!({PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: []}));
    assert!(e.message.contains("must be an object"), "{e}");
}

/// An implementation read by hand is the one deserialization gives, or none when that
/// fails.
#[test]
fn an_implementation_from_a_value_is_what_deserializing_it_gives() {
    for v in [
        json!({"name": "c", "version": "1"}),
        json!({"name": "c", "version": "1", "title": "C", "icons": [{"src": "x"}]}),
        json!({"name": "c"}),
        json!({"name": 3, "version": "1"}),
        json!({"name": "c", "version": null}),
        json!(["c", "1"]),
        json!("c"),
    ] {
        let derived = Implementation::deserialize(&v).ok();
        assert_eq!(Implementation::from_value(v.clone()), derived, "{v}");
    }
}

/// Taking the era from owned params finds what reading it does (the same meta, the same
/// refusal), and leaves the params modern-form without the fields it moved out.
#[test]
fn taking_the_era_finds_what_reading_it_does() {
    let supported = &["2026-07-28", "2025-11-25"];
    let cases = [
        json!({"name": "x"}),
        json!({"_meta": {"progressToken": 1}}),
        meta_params(json!({
            PROTOCOL_VERSION_META: "2026-07-28",
            CLIENT_CAPABILITIES_META: {"extensions": {TASKS_EXTENSION: {}}},
            CLIENT_INFO_META: {"name": "c", "version": "1"},
            LOG_LEVEL_META: "info",
            "progressToken": 7
        })),
        meta_params(
            json!({PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: {},
            CLIENT_INFO_META: {"name": 3}, LOG_LEVEL_META: false}),
        ),
        meta_params(json!({PROTOCOL_VERSION_META: "1900-01-01", CLIENT_CAPABILITIES_META: {}})),
        meta_params(json!({PROTOCOL_VERSION_META: 20260728})),
        meta_params(json!({PROTOCOL_VERSION_META: "2026-07-28"})),
        meta_params(json!({PROTOCOL_VERSION_META: "2026-07-28", CLIENT_CAPABILITIES_META: []})),
    ];
    for params in cases {
        let read = request_revision(Some(&params), supported);
        let mut owned = params.clone();
        let taken = take_request_revision(Some(&mut owned), supported);
        assert_eq!(taken, read, "{params}");
        if matches!(taken, Ok(Some(_))) {
            let meta = &owned["_meta"];
            assert_eq!(meta[PROTOCOL_VERSION_META], "2026-07-28");
            for k in [CLIENT_CAPABILITIES_META, CLIENT_INFO_META, LOG_LEVEL_META] {
                assert!(meta.get(k).is_none(), "{k} left in {owned}");
            }
            assert!(names_revision_in_meta(Some(&owned)));
            assert_eq!(owned["name"], params["name"]);
        } else {
            assert_eq!(
                owned, params,
                "a refused or legacy request is left as it came"
            );
        }
    }
    assert_eq!(take_request_revision(None, supported), Ok(None));
}

/// The answer of a modern peer to `initialize` names a modern version; a refusal naming
/// only versions we do not speak, or another error, does not.
#[test]
fn an_initialize_refused_by_a_modern_peer_is_told() {
    let e = unsupported_version("2025-11-25", &[PROTOCOL_VERSION]);
    assert!(names_a_stateless_revision(&e));
    let e = unsupported_version("2025-11-25", &["2099-01-01"]);
    assert!(!names_a_stateless_revision(&e));
    assert!(!names_a_stateless_revision(&crate::ErrorObject::new(
        -32602,
        "bad version"
    )));
}

/// A version the server lists (one `initialize` negotiates) is not called unsupported
/// in the -32022 message; an unknown one is.
#[test]
fn the_32022_message_does_not_call_a_listed_version_unsupported() {
    let listed = unsupported_version("2025-11-25", &[PROTOCOL_VERSION, "2025-11-25"]);
    assert_eq!(listed.code, -32022);
    assert!(
        !listed.message.contains("Unsupported"),
        "{}",
        listed.message
    );
    assert!(listed.message.contains("initialize"), "{}", listed.message);
    assert!(
        listed.message.contains(PROTOCOL_VERSION),
        "{}",
        listed.message
    );
    let unknown = unsupported_version("1900-01-01", &[PROTOCOL_VERSION, "2025-11-25"]);
    assert!(
        unknown.message.contains("Unsupported"),
        "{}",
        unknown.message
    );
}

#[test]
fn modern_errors_carry_their_data() {
    let e = missing_tasks_extension("tool `x` always runs as a task");
    assert_eq!(e.code, -32021);
    assert_eq!(
        e.data,
        Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
    );
    let d: MissingCapabilityData = serde_json::from_value(e.data.unwrap()).unwrap();
    assert!(d.required_capabilities.has_tasks_extension());
    assert_eq!(header_mismatch("Mcp-Method").code, -32020);
    let u = unsupported_version("x", MODERN_VERSIONS);
    let d: UnsupportedVersionData = serde_json::from_value(u.data.unwrap()).unwrap();
    assert_eq!(d.supported, vec!["2026-07-28"]);
}

#[test]
fn stamp_result_adds_result_type_and_server_info_keeping_other_meta() {
    let server = Implementation::new("mcp-tasks", "0.1.0");
    let mut r = json!({"content": [], "_meta": {"k": 1}});
    stamp_result(&mut r, &ResultType::Complete, &server);
    assert_eq!(
        r,
        json!({"content": [], "resultType": "complete",
               "_meta": {"k": 1, SERVER_INFO_META: {"name": "mcp-tasks", "version": "0.1.0"}}})
    );
    let mut t = json!({"resultType": "task"});
    stamp_result(&mut t, &ResultType::Complete, &server);
    assert_eq!(t["resultType"], "task", "an existing resultType is kept");
    let v = request_meta_value(&server, &ClientCapabilities::default());
    assert_eq!(v[PROTOCOL_VERSION_META], PROTOCOL_VERSION);
    assert_eq!(v[CLIENT_CAPABILITIES_META], json!({}));
}
