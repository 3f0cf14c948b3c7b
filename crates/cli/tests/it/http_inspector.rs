//! The MCP Inspector CLI 2.12.0 (npm `@modelcontextprotocol/inspector`, pinned in
//! `interop/inspector/`) calls `sleep` as a task over Streamable HTTP. The Inspector runs a
//! tool as a task when its `taskSupport` is `required`, so the server is started with
//! `--tool-task-support sleep=required`. It sends `task: {}` without a `ttl` and rejects a
//! `CreateTaskResult` without one: the server must grant and report the default TTL.

use crate::http_common;

use std::path::PathBuf;
use std::process::Command;

use http_common::{Client, Server};
use serde_json::{Value, json};

fn inspector() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    p.exists().then_some(p)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_cli_calls_sleep_as_a_task() {
    let Some(launcher) = inspector() else {
        eprintln!(
            "SKIPPED: interop/inspector/node_modules missing (run `npm ci --prefix interop/inspector`)"
        );
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        return;
    };
    let tokens =
        std::env::temp_dir().join(format!("mcp-tasks-inspector-{}.tokens", std::process::id()));
    std::fs::write(&tokens, "tok-insp inspector\n").unwrap();
    let server = Server::start(&[
        "--tool-task-support",
        "sleep=required",
        "--auth-tokens",
        tokens.to_str().unwrap(),
    ]);

    let home = tempfile::tempdir().unwrap();
    let url = server.url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(launcher)
            .args([
                "--cli",
                &url,
                "--method",
                "tools/call",
                "--tool-name",
                "sleep",
                "--tool-arg",
                "ms=150",
            ])
            .args([
                "--header",
                "Authorization: Bearer tok-insp",
                "--format",
                "json",
            ])
            .env("HOME", home.path())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inspector failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["result"]["content"][0]["text"], "slept 150", "{v}");

    // It really ran as a task, with the default TTL granted for `task: {}`.
    let mut me = Client::new(&server).with_token("tok-insp");
    me.initialize().await;
    let list = me.rpc("tasks/list", json!({})).await;
    let tasks = list["result"]["tasks"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 1, "{list}");
    assert_eq!(tasks[0]["status"], "completed");
    assert_eq!(tasks[0]["ttl"], 3_600_000);
    let _ = std::fs::remove_file(tokens);
}
