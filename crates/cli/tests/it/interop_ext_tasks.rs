//! `@modelcontextprotocol/ext-tasks` 0.2.2 (npm, pinned in `interop/package.json`), the
//! reference requester of the tasks extension, as a 2026-07-28 client of `mcp-tasks
//! serve` over Streamable HTTP (`interop/ext-tasks/client.mjs`): its `withTasks` session
//! drives `sleep` to `completed`, `ask` through `input_required` (answered by its input
//! handler with `tasks/update`), a long `sleep` to `cancelled`, `error` to `failed`, and
//! `fail` (`isError`) to `completed`. Every request is POSTed on its own, without a
//! session, as a 2026-07-28 host frames it.

use crate::http_common::Server;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

fn interop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

fn installed() -> bool {
    if interop()
        .join("node_modules/@modelcontextprotocol/ext-tasks/package.json")
        .exists()
    {
        return true;
    }
    eprintln!(
        "SKIPPED: interop/node_modules/@modelcontextprotocol/ext-tasks missing (run `npm ci --prefix interop`)"
    );
    assert!(
        std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
        "@modelcontextprotocol/ext-tasks is required (MCP_TASKS_REQUIRE_INTEROP is set): run `npm ci --prefix interop`"
    );
    false
}

#[test]
fn ext_tasks_drives_tasks_over_http() {
    if !installed() {
        return;
    }
    let server = Server::start(&["--task-after", "100ms"]);
    let out = Command::new("node")
        .current_dir(interop())
        .arg("ext-tasks/client.mjs")
        .arg(server.url())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ext-tasks client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let s: HashMap<String, Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| (v["scenario"].as_str().unwrap_or_default().to_owned(), v))
        .collect();
    let get = |k: &str| {
        s.get(k)
            .unwrap_or_else(|| panic!("no {k} scenario: {stdout}"))
    };
    let c = get("completed");
    assert_eq!(
        (c["kind"].as_str(), c["status"].as_str(), c["text"].as_str()),
        (Some("task"), Some("completed"), Some("slept 400")),
        "{c}"
    );
    let i = get("input_required");
    assert_eq!(i["kind"], "task", "{i}");
    assert_eq!(i["asked"], json!(["Your name?"]), "{i}");
    assert_eq!(i["status"], "completed", "{i}");
    assert_eq!(i["text"], "answered: Your name?", "{i}");
    assert_eq!(get("cancelled")["status"], "cancelled");
    let f = get("failed");
    assert_eq!(f["status"], "failed", "{f}");
    assert!(f["error"].to_string().contains("boom"), "{f}");
    let e = get("is_error");
    assert_eq!(
        (
            e["status"].as_str(),
            e["isError"].as_bool(),
            e["text"].as_str()
        ),
        (Some("completed"), Some(true), Some("nope")),
        "{e}"
    );
    let sent = get("methods")["sent"].clone();
    for m in [
        "server/discover",
        "tools/call",
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
    ] {
        assert!(
            sent.as_array().unwrap().contains(&json!(m)),
            "{m} not sent: {sent}"
        );
    }
}

/// The regression the reference requester found, without node: the inline `result` of a
/// completed task is a valid 2026-07-28 `CallToolResult` (it carries the required
/// `resultType: "complete"`), for a plain result and an `isError` one.
///
/// Spec (SEP-2663, `CompletedTask.result`): "The structure matches the result type of
/// the original request. For example, a CallToolRequest task would return the
/// CallToolResult structure."
#[test]
fn the_inline_result_of_a_task_is_a_2026_07_28_call_tool_result() {
    use crate::common::Stdio;
    use mcp_tasks_testkit::schema::MODERN;
    use mcp_tasks_testkit::wire::modern_meta;
    let mut s = Stdio::spawn(&["--task-after", "50ms"]);
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut n = 0;
    let mut modern = |s: &mut Stdio, method: &str, mut params: Value| {
        n += 1;
        params["_meta"] = modern_meta(caps.clone());
        let id = json!(format!("r{n}"));
        s.send_raw(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        s.response_to(&id)["result"].clone()
    };
    for (tool, args, is_error) in [
        ("sleep", json!({"ms": 300}), false),
        ("fail", json!({"message": "nope", "ms": 300}), true),
    ] {
        let created = modern(
            &mut s,
            "tools/call",
            json!({"name": tool, "arguments": args}),
        );
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].clone();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let done = loop {
            let t = modern(&mut s, "tasks/get", json!({"taskId": id}));
            if t["status"] == "completed" {
                break t;
            }
            assert!(std::time::Instant::now() < deadline, "{t}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let result = &done["result"];
        assert_eq!(result["resultType"], "complete", "{done}");
        assert_eq!(
            result["isError"].as_bool().unwrap_or(false),
            is_error,
            "{done}"
        );
        MODERN
            .validate_def("CallToolResult", result)
            .unwrap_or_else(|e| panic!("{e}: {result}"));
    }
}
