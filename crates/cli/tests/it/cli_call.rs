//! `mcp-tasks call`: every exit code (0, 1, 2, 3, 4, 130), the `--json` shape, argument
//! typing, answers to elicitation and sampling, the token from the environment.
#![allow(missing_docs)]

use crate::client_support as support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    HttpServer, bin, cli, early_result_server, interrupt, json_out, run, stderr, stdout, tokens,
    wait_output, watch_stderr,
};

/// `-- mcp-tasks serve --stdio --store memory`.
fn stdio_server() -> Vec<&'static str> {
    vec!["--", bin(), "serve", "--stdio", "--store", "memory"]
}

fn call(args: &[&str]) -> std::process::Output {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    all.extend(stdio_server());
    run(&mut cli(&all))
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<_> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[test]
fn exit_0_plain_and_task_results() {
    let o = call(&["echo", "--arg", "text=hello world"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hello world\n");

    let o = call(&["sleep", "--arg", "ms=100", "--task"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "slept 100\n");
    let err = stderr(&o);
    assert!(err.contains(": working"), "{err}");
    assert!(err.contains(": completed"), "{err}");

    // --json: {task, result}.
    let o = call(&["sleep", "--arg", "ms=50", "--ttl", "60000", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(keys(&v), ["result", "task"]);
    assert_eq!(v["task"]["status"], "completed");
    assert_eq!(v["task"]["ttl"], 60000);
    assert_eq!(v["result"]["content"][0]["text"], "slept 50");
    assert_eq!(
        v["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        v["task"]["taskId"]
    );

    // Plain --json: {result} only.
    let o = call(&["echo", "--args", r#"{"text": "a"}"#, "--json"]);
    assert_eq!(
        json_out(&o),
        json!({"result": {"content": [{"type": "text", "text": "a"}]}})
    );
}

#[test]
fn arguments_follow_the_schema() {
    // `text` is a string in the schema: 42 stays a string; --arg overrides --args.
    let o = call(&["echo", "--args", r#"{"text": "a"}"#, "--arg", "text=42"]);
    assert_eq!(stdout(&o), "42\n");
    // `ms` is an integer: a word is a usage error.
    let o = call(&["sleep", "--arg", "ms=soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--arg ms"), "{}", stderr(&o));
}

#[test]
fn exit_1_when_the_tool_fails() {
    // isError, plain: the result on stdout, exit 1.
    let o = call(&["fail", "--arg", "message=it broke"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "it broke\n");

    // Bad arguments as a task: no task, the isError result at once, exit 1.
    let o = call(&["sleep", "--arg", "ms=86400001", "--task", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(keys(&v), ["result"]);
    assert_eq!(v["result"]["isError"], true);
    assert_eq!(
        v["result"]["content"][0]["text"],
        "Invalid arguments for tool `sleep`: ms: 86400001 is greater than the maximum of 86400000"
    );

    // isError in a task: --json carries the failed task and the exact result.
    let o = call(&["fail", "--arg", "message=it broke", "--task", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json_out(&o);
    assert_eq!(keys(&v), ["result", "task"]);
    assert_eq!(v["task"]["status"], "failed");
    assert_eq!(v["result"]["isError"], true);

    // A task that failed with a JSON-RPC error: that error, exactly.
    let o = call(&[
        "error",
        "--arg",
        "message=quota exceeded",
        "--arg",
        "code=-32077",
        "--task",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json_out(&o);
    assert_eq!(keys(&v), ["error", "task"]);
    assert_eq!(
        v["error"],
        json!({"code": -32077, "message": "quota exceeded"})
    );
    assert_eq!(v["task"]["status"], "failed");

    let o = call(&["error", "--arg", "message=quota exceeded", "--task"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("quota exceeded"), "{}", stderr(&o));
}

#[test]
fn exit_2_for_json_rpc_and_usage_errors() {
    // A JSON-RPC error of a plain call.
    let o = call(&["error", "--arg", "message=bad", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        json_out(&o),
        json!({"error": {"code": -32603, "message": "bad"}})
    );

    // No server; both servers; bad flags; a bad --elicit-reply.
    let o = run(&mut cli(&["call", "echo"]));
    assert_eq!(o.status.code(), Some(2));
    let o = run(&mut cli(&[
        "call",
        "echo",
        "--url",
        "http://127.0.0.1:1/mcp",
        "--",
        "true",
    ]));
    assert_eq!(o.status.code(), Some(2));
    let o = run(&mut cli(&["call", "echo", "--no-such-flag"]));
    assert_eq!(o.status.code(), Some(2));
    let o = call(&["ask", "--arg", "question=q", "--elicit-reply", "maybe"]);
    assert_eq!(o.status.code(), Some(2));

    // A server that cannot be started.
    let o = run(&mut cli(&["call", "echo", "--", "/nonexistent/server"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot start"), "{}", stderr(&o));
}

/// Issue 15 #19: what the client refuses itself, before sending anything (a tool the
/// server does not list, a task of a tool whose taskSupport forbids it, a task on a server
/// without the tasks capability) is not reported as a JSON-RPC error (it used to be -32603,
/// which reads as a server fault): exit 4, its own wording, and in `--json` no `code` but
/// `unsupported: {what, why}`.
#[test]
fn exit_4_when_the_client_refuses_before_sending() {
    let o = call(&["nope"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not sent: the server does not offer tool `nope`"),
        "{}",
        stderr(&o)
    );
    let o = call(&["echo", "--arg", "text=x", "--task"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("forbidden"), "{}", stderr(&o));
    let o = call(&["echo", "--arg", "text=x", "--task", "--json"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(keys(&v), ["error"]);
    assert!(v["error"].get("code").is_none(), "{v}");
    assert_eq!(
        v["error"]["unsupported"]["what"], "tool `echo` as a task",
        "{v}"
    );

    // A server without the tasks capability.
    let o = run(&mut cli(&[
        "call",
        "sleep",
        "--arg",
        "ms=1",
        "--task",
        "--json",
        "--",
        bin(),
        "serve",
        "--stdio",
        "--no-tasks",
    ]));
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json_out(&o);
    assert!(v["error"].get("code").is_none(), "{v}");
    assert!(
        v["error"]["unsupported"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("tasks.requests.tools.call")),
        "{v}"
    );
}

#[test]
fn answers_to_the_server() {
    // Not on a terminal and no reply given: declined, and said so.
    let o = call(&["ask", "--arg", "question=Proceed?"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "(decline)\n");
    let err = stderr(&o);
    assert!(
        err.contains("Proceed?") && err.contains("declined"),
        "{err}"
    );
    assert!(err.contains("not on a terminal"), "{err}");

    let o = call(&[
        "ask",
        "--arg",
        "question=q",
        "--elicit-reply",
        r#"{"answer": "yes"}"#,
    ]);
    assert_eq!(stdout(&o), "yes\n");
    let o = call(&["ask", "--arg", "question=q", "--elicit-reply", "decline"]);
    assert_eq!(stdout(&o), "(decline)\n");

    let o = call(&[
        "summarize",
        "--arg",
        "text=t",
        "--task",
        "--sample-reply",
        "brief",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "brief\n");
    // Sampling refused: the tool's error is the task's outcome.
    let o = call(&["summarize", "--arg", "text=t", "--task", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_out(&o)["error"]["code"], -1);
    assert!(stderr(&o).contains("--sample-reply"), "{}", stderr(&o));
}

#[test]
fn exit_3_when_the_task_is_cancelled() {
    let t = tokens();
    let srv = HttpServer::start(&["--auth-tokens", t.path()]);
    let child = cli(&[
        "call", "sleep", "--arg", "ms=60000", "--task", "--json", "--url", &srv.url,
    ])
    .env("MCP_TASKS_TOKEN", "tok-alice")
    .spawn()
    .unwrap();
    // Find the task and cancel it from another process.
    let start = Instant::now();
    let id = loop {
        let o = run(&mut cli(&[
            "tasks",
            "list",
            "--json",
            "--url",
            &srv.url,
            "--auth-token",
            "tok-alice",
        ]));
        let v = json_out(&o);
        if let Some(t) = v["tasks"].as_array().and_then(|a| a.first()) {
            break t["taskId"].as_str().unwrap().to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no task appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let o =
        run(cli(&["tasks", "cancel", &id, "--url", &srv.url]).env("MCP_TASKS_TOKEN", "tok-alice"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = wait_output(child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(keys(&v), ["error", "task"]);
    assert_eq!(v["task"]["status"], "cancelled");
    assert_eq!(v["task"]["taskId"], id.as_str());
}

#[test]
fn exit_130_when_interrupted() {
    let mut args = vec!["call", "sleep", "--arg", "ms=60000", "--task"];
    args.extend(stdio_server());
    let mut child = cli(&args).spawn().unwrap();
    // Interrupt once the task runs (its first status line is on stderr).
    let (rx, reader) = watch_stderr(&mut child, ": working");
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the task did not start");
    interrupt(&child);
    let o = wait_output(child, Duration::from_secs(20));
    let err = reader.join().unwrap();
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
fn bearer_token_from_flag_or_environment() {
    let t = tokens();
    let srv = HttpServer::start(&["--auth-tokens", t.path()]);
    let o = run(
        cli(&["call", "echo", "--arg", "text=in", "--url", &srv.url])
            .env("MCP_TASKS_TOKEN", "tok-bob"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "in\n");
    let o = run(&mut cli(&[
        "call",
        "echo",
        "--arg",
        "text=in",
        "--url",
        &srv.url,
        "--auth-token",
        "tok-alice",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Without a token: the HTTP status, exit 2.
    let o = run(&mut cli(&[
        "call", "echo", "--arg", "text=in", "--url", &srv.url, "--json",
    ]));
    assert_eq!(o.status.code(), Some(2));
    let v = json_out(&o);
    assert_eq!(v["error"]["data"]["mcp-tasks/transport"]["httpStatus"], 401);
}

/// Issue 15 #17: `call --task` against a server that answers `tasks/result` early (FastMCP
/// 3.4.11: -32602 "Task not completed yet" while the task runs) prints the result once the
/// task has completed, instead of the early error; it asks `tasks/result` once more, not in
/// a loop, and polls `tasks/get` at the task's pollInterval (100 ms here).
#[test]
fn a_task_whose_result_is_answered_early_still_gives_its_result() {
    let server = early_result_server();
    let mut args = vec!["call", "work", "--arg", "ms=600", "--task", "--json", "--"];
    args.extend(server.iter().map(String::as_str));
    let o = run(&mut cli(&args));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "worked 600", "{v}");
    // What the server answered, as it reports it when its input ends.
    let err = stderr(&o);
    let counts: Value = err
        .lines()
        .find_map(|l| l.strip_prefix("early-result: answered "))
        .map(|c| serde_json::from_str(c).unwrap())
        .unwrap_or_else(|| panic!("no counts from the server in {err}"));
    assert_eq!(counts["tasks/result"], 2, "{counts}");
    let gets = counts["tasks/get"].as_u64().unwrap();
    assert!((3..=40).contains(&gets), "{counts}");

    // Without --json, a failed task: its isError result, exit 1.
    let mut args = vec![
        "call",
        "work",
        "--arg",
        "ms=200",
        "--arg",
        "fail=true",
        "--task",
        "--",
    ];
    args.extend(server.iter().map(String::as_str));
    let o = run(&mut cli(&args));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "failed after 200\n");
}
