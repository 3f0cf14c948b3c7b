//! Golden wire shapes.
//!
//! Each file of `tests/golden/` is one whole JSON-RPC message of a shape mcp-tasks emits
//! (as a receiver, as a requestor, or relaying `input_required` requests), taken from the
//! examples of the 2025-11-25 tasks specification wherever it has one. Every golden must:
//!
//! * validate against the official wire schema (the envelope, the method's own request
//!   or notification definition, and a response's `result` by the method it answers);
//! * survive `Message::parse` -> `Message::to_value` unchanged (the envelope is lossless);
//! * round-trip exactly through the typed `Task`, `Tool` and `CallToolParams` where the
//!   golden holds one.

// The optional fields' wire, a module of this binary (one test binary for the crate).
mod optional_fields;

use std::collections::BTreeSet;
use std::path::PathBuf;

use mcp_tasks_proto::mcp::{
    self, CallToolParams, LATEST_PROTOCOL_VERSION, MODEL_IMMEDIATE_RESPONSE_META,
    RELATED_TASK_META, Task, TaskStatus, TaskSupport, Tool,
};
use mcp_tasks_proto::{Message, codes, methods};
use mcp_tasks_testkit::schema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Every golden file, with the method of the request a response answers (`None` for
/// requests, notifications and error responses).
const GOLDENS: &[(&str, Option<&str>)] = &[
    ("initialize-result.json", Some(methods::INITIALIZE)),
    ("tools-list-result.json", Some(methods::TOOLS_LIST)),
    ("tools-call-task-request.json", None),
    (
        "tools-call-create-task-result.json",
        Some(methods::TOOLS_CALL),
    ),
    ("tasks-get-request.json", None),
    ("tasks-get-result.json", Some(methods::TASKS_GET)),
    ("tasks-get-failed-result.json", Some(methods::TASKS_GET)),
    (
        "tasks-get-unlimited-ttl-result.json",
        Some(methods::TASKS_GET),
    ),
    ("tasks-result-request.json", None),
    ("tasks-result-result.json", Some(methods::TASKS_RESULT)),
    ("tasks-result-error.json", None),
    ("tasks-list-request.json", None),
    ("tasks-list-result.json", Some(methods::TASKS_LIST)),
    ("tasks-cancel-request.json", None),
    ("tasks-cancel-result.json", Some(methods::TASKS_CANCEL)),
    ("error-task-not-found.json", None),
    ("error-task-expired.json", None),
    ("error-cancel-terminal.json", None),
    ("error-task-augmentation-required.json", None),
    ("notification-tasks-status.json", None),
    ("notification-progress.json", None),
    ("notification-cancelled.json", None),
    ("request-elicitation-create.json", None),
    ("request-sampling-create-message.json", None),
];

const TASK_ID: &str = "786512e2-9e0d-44bd-8f29-789f320fe840";

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn bytes(name: &str) -> Vec<u8> {
    let path = golden_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn golden(name: &str) -> Value {
    serde_json::from_slice(&bytes(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Deserialize `value` as `T` and serialize it back: the JSON must be unchanged.
fn assert_typed_round_trip<T: Serialize + DeserializeOwned>(what: &str, value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{what}: does not parse as the typed struct: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(&back, value, "{what}: typed round trip changed the JSON");
    typed
}

#[test]
fn every_golden_file_is_listed() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    let listed: BTreeSet<String> = GOLDENS.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(on_disk, listed);
}

#[test]
fn every_golden_validates_against_the_schema() {
    let mut failures = Vec::new();
    for (name, answers) in GOLDENS {
        let msg = golden(name);
        let outcome = match answers {
            Some(method) => {
                assert!(msg.get("result").is_some(), "{name}: listed as a result");
                schema::validate_response(method, &msg)
            }
            None => {
                assert!(
                    msg.get("result").is_none(),
                    "{name}: a result needs its method"
                );
                if let Some(method) = msg.get("method").and_then(Value::as_str) {
                    assert!(
                        schema::method_def(method).is_some(),
                        "{name}: `{method}` is not a method of the schema"
                    );
                }
                schema::validate_message(&msg)
            }
        };
        if let Err(e) = outcome {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_golden_round_trips_through_the_envelope() {
    for (name, answers) in GOLDENS {
        let original = golden(name);
        let msg = Message::parse(&bytes(name))
            .unwrap_or_else(|f| panic!("{name}: does not parse: {:?}", f.error));
        let expected_kind = matches!(
            (&msg, answers),
            (Message::Response(_), Some(_))
                | (
                    Message::Request(_) | Message::Notification(_) | Message::Error(_),
                    None
                )
        );
        assert!(expected_kind, "{name}: parsed as {msg:?}");
        assert_eq!(
            msg.to_value(),
            original,
            "{name}: to_value is not the input"
        );
        let reparsed: Value = serde_json::from_str(&msg.to_json()).unwrap();
        assert_eq!(reparsed, original, "{name}: to_json is not the input");
    }
}

#[test]
fn tasks_round_trip_through_the_typed_task() {
    let singles = [
        ("tasks-get-result.json", "/result", TaskStatus::Working),
        (
            "tasks-get-failed-result.json",
            "/result",
            TaskStatus::Failed,
        ),
        (
            "tasks-get-unlimited-ttl-result.json",
            "/result",
            TaskStatus::InputRequired,
        ),
        ("tasks-cancel-result.json", "/result", TaskStatus::Cancelled),
        (
            "tools-call-create-task-result.json",
            "/result/task",
            TaskStatus::Working,
        ),
        (
            "notification-tasks-status.json",
            "/params",
            TaskStatus::Completed,
        ),
    ];
    for (name, pointer, status) in singles {
        let value = golden(name).pointer(pointer).cloned().unwrap();
        let task: Task = assert_typed_round_trip(&format!("{name}{pointer}"), &value);
        assert_eq!(task.status, status, "{name}");
        schema::validate_def("Task", &value).unwrap();
    }
    let unlimited: Task =
        serde_json::from_value(golden("tasks-get-unlimited-ttl-result.json")["result"].clone())
            .unwrap();
    assert_eq!(unlimited.ttl, None);

    let list = golden("tasks-list-result.json");
    let tasks = list["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    for (i, value) in tasks.iter().enumerate() {
        let _: Task = assert_typed_round_trip(&format!("tasks-list-result.json task {i}"), value);
    }
    assert_eq!(list["result"]["nextCursor"], "next-page-cursor");
}

#[test]
fn tools_round_trip_through_the_typed_tool() {
    let list = golden("tools-list-result.json");
    let tools = list["result"]["tools"].as_array().unwrap();
    let support: Vec<Option<TaskSupport>> = tools
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let tool: Tool = assert_typed_round_trip(&format!("tool {i}"), value);
            tool.execution
                .as_ref()
                .and_then(|e| e.get("taskSupport"))
                .and_then(Value::as_str)
                .map(|s| TaskSupport::parse(s).unwrap())
        })
        .collect();
    assert_eq!(
        support,
        [
            Some(TaskSupport::Required),
            Some(TaskSupport::Optional),
            None
        ]
    );
    // Fields we do not model (title, annotations) are kept in `extra`.
    let first: Tool = serde_json::from_value(tools[0].clone()).unwrap();
    assert_eq!(first.extra["title"], "Generate report");
}

#[test]
fn call_params_round_trip_through_the_typed_params() {
    let request = golden("tools-call-task-request.json");
    let params: CallToolParams = assert_typed_round_trip("tools/call params", &request["params"]);
    assert_eq!(params.name, "get_weather");
    assert_eq!(params.task.unwrap()["ttl"], 60000);
    assert_eq!(
        mcp::progress_token(Some(&request["params"])),
        Some(Value::from("weather-1"))
    );
}

#[test]
fn goldens_carry_the_keys_our_constants_name() {
    let init = golden("initialize-result.json");
    assert_eq!(init["result"]["protocolVersion"], LATEST_PROTOCOL_VERSION);
    assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());

    let created = golden("tools-call-create-task-result.json");
    assert!(created["result"]["_meta"][MODEL_IMMEDIATE_RESPONSE_META].is_string());

    let related = mcp::related_task_value(TASK_ID);
    let payload = golden("tasks-result-result.json");
    assert_eq!(payload["result"]["_meta"][RELATED_TASK_META], related);
    // The payload of a tools/call task is the tool's own result.
    schema::validate_def("CallToolResult", &payload["result"]).unwrap();
    // `set_related_task` produces exactly the golden's `_meta`.
    let mut rebuilt = payload["result"].clone();
    rebuilt.as_object_mut().unwrap().remove("_meta");
    mcp::set_related_task(&mut rebuilt, TASK_ID);
    assert_eq!(rebuilt, payload["result"]);

    for name in [
        "notification-progress.json",
        "request-elicitation-create.json",
        "request-sampling-create-message.json",
    ] {
        assert_eq!(
            golden(name)["params"]["_meta"][RELATED_TASK_META],
            related,
            "{name}"
        );
    }
    // Status notifications SHOULD NOT carry the related-task key: the id is in the params.
    assert!(golden("notification-tasks-status.json")["params"]["_meta"].is_null());

    let methods_of = [
        ("notification-tasks-status.json", methods::TASK_STATUS),
        ("notification-progress.json", methods::PROGRESS),
        ("notification-cancelled.json", methods::CANCELLED),
        (
            "request-elicitation-create.json",
            methods::ELICITATION_CREATE,
        ),
        (
            "request-sampling-create-message.json",
            methods::SAMPLING_CREATE_MESSAGE,
        ),
        ("tools-call-task-request.json", methods::TOOLS_CALL),
        ("tasks-get-request.json", methods::TASKS_GET),
        ("tasks-result-request.json", methods::TASKS_RESULT),
        ("tasks-list-request.json", methods::TASKS_LIST),
        ("tasks-cancel-request.json", methods::TASKS_CANCEL),
    ];
    for (name, method) in methods_of {
        assert_eq!(golden(name)["method"], method, "{name}");
    }

    for (name, code) in [
        ("error-task-not-found.json", codes::INVALID_PARAMS),
        ("error-task-expired.json", codes::INVALID_PARAMS),
        ("error-cancel-terminal.json", codes::INVALID_PARAMS),
        (
            "error-task-augmentation-required.json",
            codes::INVALID_REQUEST,
        ),
        ("tasks-result-error.json", codes::INTERNAL_ERROR),
    ] {
        assert_eq!(golden(name)["error"]["code"], code, "{name}");
    }
}
