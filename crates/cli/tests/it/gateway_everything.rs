//! Gateway in front of the real `@modelcontextprotocol/server-everything@2026.8.31` over
//! stdio (installed by `npm ci --prefix interop`): its plain tools as tasks, its own task
//! tool through upstream tasks, elicitation answered through `tasks/result`, progress
//! with the original token, and a cancel that reaches the upstream.

use crate::common;
use crate::gateway_common;

use std::path::PathBuf;

use common::Stdio;
use gateway_common::{RELATED, read_log, scratch, tapped, task_result, text_of, until_terminal};
use serde_json::{Value, json};

struct Everything {
    s: Stdio,
    log: PathBuf,
}

/// A gateway in front of server-everything, its input logged; `None` when not installed.
fn everything(test: &str, extra: &[&str]) -> Option<Everything> {
    let cmd = gateway_common::everything()?;
    let log = scratch(test).join("upstream-in.log");
    let upstream = tapped(&log, &cmd);
    let mut args = vec!["--upstream-cmd", upstream.as_str()];
    for t in [
        "get-sum",
        "echo",
        "trigger-elicitation-request",
        "trigger-long-running-operation",
    ] {
        args.push("--tool-task-support");
        args.push(Box::leak(format!("{t}=optional").into_boxed_str()));
    }
    args.extend_from_slice(extra);
    let mut s = Stdio::spawn(&args);
    s.initialize();
    Some(Everything { s, log })
}

/// Every text item of a `CallToolResult`'s content, joined.
fn all_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

fn upstream_received(e: &Everything, pred: impl Fn(&Value) -> bool) -> Option<Value> {
    read_log(&e.log).into_iter().find(|m| pred(m))
}

fn wait_upstream(e: &Everything, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + common::TIMEOUT;
    loop {
        if let Some(m) = upstream_received(e, &pred) {
            return m;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything never received {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn plain_tools_run_as_tasks() {
    let Some(mut e) = everything("ev-plain", &[]) else {
        return;
    };
    let tools = e.s.ok("tools/list", json!({}))["tools"].clone();
    let support = |n: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()["execution"]["taskSupport"]
            .clone()
    };
    assert_eq!(support("get-sum"), "optional");
    assert_eq!(support("get-tiny-image"), "forbidden");
    assert_eq!(support("simulate-research-query"), "required");

    let plain = e.s.ok(
        "tools/call",
        json!({"name": "get-sum", "arguments": {"a": 2, "b": 40}}),
    );
    let task = e.s.create_task("get-sum", json!({"a": 2, "b": 40}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let mut r = task_result(&mut e.s, &id)["result"].clone();
    assert_eq!(r["_meta"][RELATED]["taskId"], id.as_str());
    r.as_object_mut().unwrap().remove("_meta");
    assert_eq!(r, plain);
    assert!(text_of(&r).contains("42"), "{r}");
    assert_eq!(until_terminal(&mut e.s, &id)["status"], "completed");
    // A forbidden tool is refused as a task.
    assert_eq!(
        e.s.err(
            "tools/call",
            json!({"name": "get-tiny-image", "arguments": {}, "task": {}})
        )["code"],
        -32601
    );
}

#[test]
fn simulate_research_query_runs_through_an_upstream_task() {
    let Some(mut e) = everything("ev-research", &[]) else {
        return;
    };
    let task =
        e.s.create_task("simulate-research-query", json!({"topic": "tides"}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let r = task_result(&mut e.s, &id)["result"].clone();
    assert!(text_of(&r).contains("Research Report: tides"), "{r}");
    assert_eq!(r["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(until_terminal(&mut e.s, &id)["status"], "completed");
    let call = wait_upstream(&e, "the task call", |m| {
        m["params"]["name"] == "simulate-research-query"
    });
    assert!(call["params"]["task"].is_object(), "{call}");
    wait_upstream(&e, "tasks/result", |m| m["method"] == "tasks/result");
}

#[test]
fn simulate_research_query_asks_for_clarification_through_tasks_result() {
    let Some(mut e) = everything("ev-research-ask", &[]) else {
        return;
    };
    let task = e.s.create_task(
        "simulate-research-query",
        json!({"topic": "python", "ambiguous": true}),
    );
    let id = task["taskId"].as_str().unwrap().to_owned();
    let rid = e.s.start("tasks/result", json!({"taskId": id}));
    let req = e.s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["_meta"][RELATED]["taskId"], id.as_str());
    assert_eq!(e.s.get_task(&id)["status"], "input_required");
    let choice =
        req["params"]["requestedSchema"]["properties"]["interpretation"]["oneOf"][0]["const"]
            .clone();
    e.s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"interpretation": choice}}}));
    let r = e.s.response_to(&rid);
    let text = text_of(&r["result"]);
    assert!(
        text.contains(&format!("Clarification**: {}", choice.as_str().unwrap())),
        "{text}"
    );
    assert_eq!(until_terminal(&mut e.s, &id)["status"], "completed");
}

#[test]
fn trigger_elicitation_request_is_answered_through_tasks_result() {
    let Some(mut e) = everything("ev-elicit", &[]) else {
        return;
    };
    let task = e.s.create_task("trigger-elicitation-request", json!({}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    e.s.poll_until(&id, "input_required", |t| t["status"] == "input_required");
    let rid = e.s.start("tasks/result", json!({"taskId": id}));
    let req = e.s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["_meta"][RELATED]["taskId"], id.as_str());
    assert!(req["params"]["requestedSchema"]["properties"]["name"].is_object());
    e.s.send(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"name": "Ada Lovelace", "check": true, "integer": 7}}}));
    let r = e.s.response_to(&rid);
    assert!(all_text(&r["result"]).contains("Ada Lovelace"), "{r}");
    assert_eq!(until_terminal(&mut e.s, &id)["status"], "completed");
}

#[test]
fn trigger_long_running_operation_reports_progress_with_the_original_token() {
    let Some(mut e) = everything("ev-progress", &[]) else {
        return;
    };
    let r = e.s.ok(
        "tools/call",
        json!({"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 3}, "task": {}, "_meta": {"progressToken": "lro-1"}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    for i in 1..=3 {
        let p = e.s.wait_for("progress", move |m| {
            m["method"] == "notifications/progress" && m["params"]["progress"] == i
        });
        assert_eq!(p["params"]["progressToken"], "lro-1");
        assert_eq!(p["params"]["total"], 3);
        assert_eq!(p["params"]["_meta"][RELATED]["taskId"], id.as_str());
    }
    let r = task_result(&mut e.s, &id)["result"].clone();
    assert!(
        text_of(&r).contains("Long running operation completed"),
        "{r}"
    );
}

#[test]
fn cancelling_trigger_long_running_operation_reaches_the_upstream() {
    let Some(mut e) = everything("ev-cancel", &[]) else {
        return;
    };
    let r = e.s.ok(
        "tools/call",
        json!({"name": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 30}, "task": {}, "_meta": {"progressToken": 5}}),
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    e.s.wait_for("first progress", |m| {
        m["method"] == "notifications/progress"
    });
    assert_eq!(
        e.s.ok("tasks/cancel", json!({"taskId": id}))["status"],
        "cancelled"
    );
    let call = wait_upstream(&e, "the call", |m| {
        m["params"]["name"] == "trigger-long-running-operation"
    });
    let cancel = wait_upstream(&e, "notifications/cancelled", |m| {
        m["method"] == "notifications/cancelled"
    });
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    // No more progress for the cancelled task, and it stays cancelled.
    let later = e.s.drain_for(std::time::Duration::from_millis(2500));
    assert!(
        later
            .iter()
            .all(|m| m["method"] != "notifications/progress"),
        "{later:?}"
    );
    assert_eq!(e.s.get_task(&id)["status"], "cancelled");
}

/// `mcp-tasks call` (our CLI, as a requestor) through the gateway in front of
/// server-everything, the gateway spawned by the CLI itself (`-- COMMAND`): `--json` output.
fn cli_through_gateway(test: &str, call: &[&str]) -> Value {
    let cmd = gateway_common::everything().expect("server-everything");
    let log = scratch(test).join("upstream-in.log");
    let upstream = tapped(&log, &cmd);
    let mut args = vec!["call"];
    args.extend_from_slice(call);
    args.extend_from_slice(&["--json", "--", common::bin(), "serve", "--stdio", "--store"]);
    args.extend_from_slice(&["memory", "--upstream-cmd", &upstream]);
    args.extend_from_slice(&["--tool-task-support", "get-sum=optional"]);
    args.extend_from_slice(&[
        "--tool-task-support",
        "trigger-elicitation-request=optional",
    ]);
    gateway_common::cli_json(&args)
}

#[test]
fn our_cli_calls_server_everything_tools_as_tasks_through_the_gateway() {
    if gateway_common::everything().is_none() {
        return;
    }
    // A plain upstream tool made a task by the gateway.
    let sum = cli_through_gateway(
        "ev-cli-sum",
        &["get-sum", "--task", "--arg", "a=2", "--arg", "b=40"],
    );
    assert_eq!(sum["task"]["status"], "completed", "{sum}");
    assert!(text_of(&sum["result"]).contains("42"), "{sum}");
    // The upstream's own task tool (taskSupport required: always a task).
    let research = cli_through_gateway(
        "ev-cli-research",
        &["simulate-research-query", "--arg", "topic=tides"],
    );
    assert_eq!(research["task"]["status"], "completed", "{research}");
    assert!(
        text_of(&research["result"]).contains("Research Report: tides"),
        "{research}"
    );
    // An upstream elicitation, relayed through tasks/result and answered by the CLI.
    let elicit = cli_through_gateway(
        "ev-cli-elicit",
        &[
            "trigger-elicitation-request",
            "--task",
            "--elicit-reply",
            r#"{"name":"Ada Lovelace","check":true,"integer":7}"#,
        ],
    );
    assert_eq!(elicit["task"]["status"], "completed", "{elicit}");
    assert!(
        all_text(&elicit["result"]).contains("Ada Lovelace"),
        "{elicit}"
    );
}
