//! The MCP Inspector 2.12.0 (npm `@modelcontextprotocol/inspector`, pinned in
//! `interop/inspector/`) in its 2026-07-28 mode against `mcp-tasks serve`: the CLI with
//! `--protocol-era modern` over Streamable HTTP and over stdio, and `mcpdo` (the
//! Inspector's connection CLI, same package) for a task that asks. The server runs with
//! `--task-after 100ms`, so `sleep`, `fail` and `error` of 300-400 ms become tasks the
//! Inspector polls with `tasks/get` (the server's audit lines prove they were tasks):
//! `sleep` ends `completed`, `error` `failed` (the CLI reports the JSON-RPC error),
//! `fail` `completed` with `isError`, and `ask` goes through `input_required`, answered
//! with `mcpdo elicitation/respond` (sent as `tasks/update`). The one-shot CLI declares
//! no elicitation capability, so its `ask` fails with the server's precise message.

use crate::http_common::{Server, bin};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn package() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/inspector/node_modules/@modelcontextprotocol/inspector");
    if p.join("package.json").exists() {
        return Some(p);
    }
    eprintln!(
        "SKIPPED: interop/inspector/node_modules missing (run `npm ci --prefix interop/inspector`)"
    );
    assert!(
        std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
        "the Inspector is required (MCP_TASKS_REQUIRE_INTEROP is set): run `npm ci --prefix interop/inspector`"
    );
    None
}

/// `node <script> args...` with HOME in a scratch directory; its output.
fn node(script: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new("node")
        .arg(script)
        .args(args)
        .env("HOME", home)
        .env("MCP_INSPECTOR_SECRET_STORE", "memory")
        .env_remove("MCP_INSPECTOR_DAEMON_DIR")
        .env_remove("MCP_INSPECTOR_DAEMON_TOKEN")
        .output()
        .expect("run node")
}

/// The first JSON object line the command printed: on stdout, else (an error envelope)
/// on stderr.
fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Ok(v) = serde_json::from_str(stdout.trim()) {
        return v;
    }
    stdout
        .lines()
        .chain(stderr.lines())
        .find_map(|l| {
            l.starts_with('{')
                .then(|| serde_json::from_str(l).ok())
                .flatten()
        })
        .unwrap_or_else(|| panic!("no JSON line: {stdout}\n{stderr}"))
}

/// The one-shot CLI calls of the four cases against a server named by `before` (a URL,
/// right after `--cli`) or `after` (the server command, last); the CLI's stderr of all
/// of them (a stdio server's log is inherited there).
fn one_shot_cases(pkg: &Path, before: &[&str], after: &[&str]) -> String {
    let stderr = std::cell::RefCell::new(String::new());
    let cli = pkg.join("clients/launcher/build/index.js");
    let home = tempfile::tempdir().unwrap();
    let call = |tool: &str, args: &[&str]| {
        let mut a = vec!["--cli"];
        a.extend_from_slice(before);
        a.extend([
            "--protocol-era",
            "modern",
            "--method",
            "tools/call",
            "--tool-name",
            tool,
            "--format",
            "json",
        ]);
        for kv in args {
            a.extend(["--tool-arg", kv]);
        }
        a.extend_from_slice(after);
        let out = node(&cli, home.path(), &a);
        stderr
            .borrow_mut()
            .push_str(&String::from_utf8_lossy(&out.stderr));
        out
    };
    // completed
    let out = call("sleep", &["ms=400"]);
    assert!(out.status.success(), "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["result"]["content"][0]["text"], "slept 400", "{v}");
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    // failed: the task's JSON-RPC error is what the CLI reports.
    let out = call("error", &["message=boom", "code=-32050", "ms=300"]);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(json_of(&out)["error"]["message"], "boom", "{out:?}");
    // isError ends completed: the CLI shows the result, then exits 5.
    let out = call("fail", &["message=nope", "ms=300"]);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let v = json_of(&out);
    assert_eq!(
        (
            v["result"]["isError"].as_bool(),
            v["result"]["content"][0]["text"].as_str()
        ),
        (Some(true), Some("nope")),
        "{v}"
    );
    // No elicitation capability: `ask` cannot ask, and says why.
    let out = call("ask", &["question=Name?"]);
    assert!(!out.status.success(), "{out:?}");
    let msg = json_of(&out)["error"]["message"].to_string();
    assert!(msg.contains("elicitation"), "{msg}");
    stderr.into_inner()
}

/// Each of the one-shot calls ran as a task of the tasks extension.
fn assert_tasks_ran(log: &str) {
    for (tool, event) in [
        ("sleep", "task_completed"),
        ("error", "task_failed"),
        ("fail", "task_completed"),
    ] {
        assert!(
            log.contains(&format!("tool=\"{tool}\"")),
            "no task of {tool}:\n{log}"
        );
        assert!(log.contains(event), "no {event}:\n{log}");
    }
}

#[test]
fn inspector_cli_modern_era_over_http() {
    let Some(pkg) = package() else { return };
    let server = Server::start_env(&["--task-after", "100ms"], &[("RUST_LOG", "info")]);
    let url = server.url();
    one_shot_cases(&pkg, &[&url], &[]);
    assert_tasks_ran(&server.stderr());
}

#[test]
fn inspector_cli_modern_era_over_stdio() {
    let Some(pkg) = package() else { return };
    // The CLI spawns the server; the server's stderr is the CLI's.
    let target = [
        "-e",
        "RUST_LOG=info",
        bin(),
        "serve",
        "--stdio",
        "--store",
        "memory",
        "--task-after",
        "100ms",
    ];
    let log = one_shot_cases(&pkg, &[], &target);
    assert_tasks_ran(&log);
}

#[test]
fn inspector_mcpdo_answers_a_task_that_asks() {
    let Some(pkg) = package() else { return };
    let mcpdo = pkg.join("clients/mcpdo/build/mcp-bin.js");
    let server = Server::start_env(&["--task-after", "100ms"], &[("RUST_LOG", "info")]);
    let url = server.url();
    let home = tempfile::tempdir().unwrap();
    // A private daemon for this test alone.
    let private = node(&mcpdo, home.path(), &["private"]);
    let exports = String::from_utf8_lossy(&private.stdout).into_owned();
    let env: Vec<(String, String)> = exports
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
        .collect();
    assert_eq!(env.len(), 2, "{exports}");
    let run = |args: &[&str]| {
        Command::new("node")
            .arg(&mcpdo)
            .args(args)
            .env("HOME", home.path())
            .env("MCP_INSPECTOR_SECRET_STORE", "memory")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("run mcpdo")
    };
    // `mcpdo daemon stop` however the test ends.
    struct Stop<'a>(&'a dyn Fn(&[&str]) -> Output);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ = (self.0)(&["daemon", "stop"]);
        }
    }
    let _stop = Stop(&run);
    let out = run(&[
        "connect", "--era", "modern", "--elicit", "form", "--format", "json", &url,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(json_of(&out)["protocolEra"], "modern", "{out:?}");
    let out = run(&[
        "--connection",
        &url,
        "--format",
        "json",
        "tools/call",
        "ask",
        "question:=Your name?",
    ]);
    let pending = json_of(&out);
    let p = &pending["elicitationPending"];
    assert_eq!(p["message"], "Your name?", "{pending}");
    assert_eq!(p["origin"], "task-input-required", "{pending}");
    let id = p["elicitationId"].as_str().unwrap().to_owned();
    let out = run(&[
        "--format",
        "json",
        "elicitation/respond",
        &id,
        "answer:=Ada",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v = json_of(&out);
    assert_eq!(v["content"][0]["text"], "Ada", "{v}");
    let log = server.stderr();
    assert!(
        log.contains("tool=\"ask\"") && log.contains("task_completed"),
        "{log}"
    );
}
