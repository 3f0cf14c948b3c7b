//! FastMCP 4.1.4 (`fastmcp[tasks]` from PyPI, in the venv that
//! `interop/python/setup.sh` makes at `target/venv-fastmcp4`) as a 2026-07-28 client of
//! `mcp-tasks serve`, over Streamable HTTP and stdio. The client script
//! (`interop/python/fastmcp_client.py`) negotiates the era with `server/discover`
//! (FastMCP's `mode="auto"`) and drives, with the tasks extension: `sleep` to
//! `completed` (also through FastMCP's transparent `call_tool`), `ask` through
//! `input_required` answered by its elicitation handler with `tasks/update`, a long
//! `sleep` to `cancelled`, `error` after `--task-after` to `failed` with the inline
//! JSON-RPC error, and `fail` (`isError`) to `completed`.

use crate::http_common::{Server, bin};

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's python, or `None` (with a message) when the venv is missing.
pub(crate) fn venv_python(venv: &str, setup: &str) -> Option<PathBuf> {
    let py = repo().join("target").join(venv).join("bin/python");
    if py.exists() {
        return Some(py);
    }
    eprintln!("SKIPPED: target/{venv} missing (run `{setup}`)");
    assert!(
        std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
        "target/{venv} is required (MCP_TASKS_REQUIRE_INTEROP is set): run `{setup}`"
    );
    None
}

fn fastmcp() -> Option<PathBuf> {
    venv_python("venv-fastmcp4", "interop/python/setup.sh")
}

/// Run the client script with `args`; its scenarios by name.
fn run(py: PathBuf, args: Vec<String>) -> HashMap<String, Value> {
    let script = repo().join("interop/python/fastmcp_client.py");
    let out = Command::new(py)
        .arg(script)
        .args(&args)
        .env("FASTMCP_SHOW_CLI_BANNER", "false")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "fastmcp client failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| (v["scenario"].as_str().unwrap_or_default().to_owned(), v))
        .collect()
}

fn check(s: &HashMap<String, Value>) {
    let get = |k: &str| s.get(k).unwrap_or_else(|| panic!("no {k} scenario: {s:?}"));
    assert_eq!(get("era")["version"], "2026-07-28", "{s:?}");
    let c = get("completed");
    assert_eq!(c["created_status"], "working", "{c}");
    assert_eq!(
        (c["status"].as_str(), c["text"].as_str()),
        (Some("completed"), Some("slept 400")),
        "{c}"
    );
    assert_eq!(get("transparent")["text"], "slept 300");
    let i = get("input_required");
    assert_eq!(i["parked"], "input_required", "{i}");
    assert_eq!(i["keys"], 1, "{i}");
    assert_eq!(i["status"], "completed", "{i}");
    assert_eq!(i["text"], "answered: Your name?", "{i}");
    assert_eq!(get("cancelled")["status"], "cancelled");
    let f = get("failed");
    assert_eq!(f["status"], "failed", "{f}");
    // 2026-07-28 (basic, "Error Codes"): "Implementations MUST NOT emit any code from this
    // sub-range [-32020 to -32099] that is not defined by this specification": the tool's
    // -32050 goes out as -32603, its code kept in `data.originalCode`.
    assert_eq!(
        f["error"],
        json!({"code": -32603, "message": "boom", "data": {"originalCode": -32050}}),
        "{f}"
    );
    let e = get("is_error");
    assert_eq!(
        (
            e["status"].as_str(),
            e["is_error"].as_bool(),
            e["text"].as_str()
        ),
        (Some("completed"), Some(true), Some("nope")),
        "{e}"
    );
}

#[test]
fn fastmcp4_drives_tasks_over_http() {
    let Some(py) = fastmcp() else { return };
    let server = Server::start(&["--task-after", "100ms"]);
    let s = run(py, vec!["--url".into(), server.url()]);
    check(&s);
}

#[test]
fn fastmcp4_drives_tasks_over_stdio() {
    let Some(py) = fastmcp() else { return };
    let s = run(
        py,
        vec![
            "--stdio".into(),
            bin().into(),
            "--task-after".into(),
            "100ms".into(),
        ],
    );
    check(&s);
}

/// The official Python SDK `mcp` 1.30 speaks only 2025-11-25: against the same dual-era
/// binary it initializes and drives the legacy tasks (completed, `ask` answered on
/// `tasks/result`, cancelled, failed with the exact error).
#[test]
fn python_sdk_1_30_drives_legacy_tasks_on_the_dual_era_server() {
    let Some(py) = venv_python("venv-mcp1", "interop/python/setup.sh") else {
        return;
    };
    let script = repo().join("interop/python/mcp1_legacy_client.py");
    let out = Command::new(py)
        .args(["-W", "ignore"])
        .arg(script)
        .arg(bin())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mcp 1.30 client failed:\n{stdout}\n{}",
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
    assert_eq!(get("initialize")["version"], "2025-11-25");
    assert_eq!(get("initialize")["tasks"], true);
    assert_eq!(get("completed")["text"], "slept 200");
    assert_eq!(get("input_required")["text"], "answered: Your name?");
    assert_eq!(get("cancelled")["status"], "cancelled");
    let f = get("failed");
    assert_eq!(f["status"], "failed", "{f}");
    assert_eq!(
        f["error"],
        json!({"code": -32050, "message": "boom"}),
        "{f}"
    );
}
