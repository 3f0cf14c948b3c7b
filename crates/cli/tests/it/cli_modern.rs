//! `mcp-tasks call` and `mcp-tasks tasks` against 2026-07-28: the era found on stdio and
//! HTTP (both for our server and for a gateway: a task call is made in 2025-11-25, see
//! `cli_auto.rs`), `--protocol` / `MCP_TASKS_PROTOCOL` forcing it both ways; spoken to in
//! 2026-07-28 (`--protocol modern`): a task to `completed`, one
//! through `input_required` answered with `--elicit-reply` (and sampling with
//! `--sample-reply`), one cancelled with Ctrl-C, one failed, `tasks get|cancel` in both
//! eras and `tasks list|result` refused in the modern one.
#![allow(missing_docs)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::client_support::{
    HttpServer, bin, cli, cli_auto, interrupt, json_out, run, stderr, stdout, wait_output,
    watch_stderr,
};

/// `-- mcp-tasks serve --stdio --store memory --task-after 100ms`.
fn stdio_server() -> Vec<&'static str> {
    vec![
        "--",
        bin(),
        "serve",
        "--stdio",
        "--store",
        "memory",
        "--task-after",
        "100ms",
    ]
}

/// `mcp-tasks call ARGS --protocol modern -- server`.
fn call(args: &[&str]) -> std::process::Output {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    all.extend(["--protocol", "modern"]);
    all.extend(stdio_server());
    run(&mut cli_auto(&all))
}

/// What `--task` gives: a task in 2025-11-25, a note and a direct result in 2026-07-28.
fn assert_modern(o: &std::process::Output) {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let v = json_out(o);
    assert!(v.get("task").is_none(), "no task in 2026-07-28: {v}");
    assert_eq!(v["result"]["content"][0]["text"], "slept 50");
    assert!(stderr(o).contains(NOT_SENT), "{}", stderr(o));
}

fn assert_legacy(o: &std::process::Output) {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let v = json_out(o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "slept 50");
    assert!(!stderr(o).contains(NOT_SENT), "{}", stderr(o));
}

/// The note of a `--task` the server decides on.
pub(crate) const NOT_SENT: &str = "(--task and --ttl are not sent)";

const SLEEP_TASK: [&str; 6] = ["call", "sleep", "--arg", "ms=50", "--task", "--json"];

#[test]
fn the_era_is_found_on_both_transports_and_forced_both_ways() {
    // stdio: found to speak both (a task call in 2025-11-25, no note), forced legacy by
    // flag, forced modern by the environment.
    let mut forced = SLEEP_TASK.to_vec();
    forced.extend(["--protocol", "legacy"]);
    forced.extend(stdio_server());
    assert_legacy(&run(&mut cli_auto(&forced)));
    let mut args = SLEEP_TASK.to_vec();
    args.extend(stdio_server());
    assert_legacy(&run(&mut cli_auto(&args)));
    assert_modern(&run(cli(&args).env("MCP_TASKS_PROTOCOL", "modern")));

    // HTTP: the same.
    let srv = HttpServer::start(&[]);
    let mut args = SLEEP_TASK.to_vec();
    args.extend(["--url", &srv.url]);
    assert_legacy(&run(&mut cli_auto(&args)));
    assert_legacy(&run(&mut cli(&args)));
    args.extend(["--protocol", "modern"]);
    assert_modern(&run(&mut cli(&args)));
}

/// A gateway (whose upstream speaks 2025-11-25) serves both eras (issue 18,
/// `crates/cli/tests/it/gateway_modern.rs`): the CLI finds both on both transports (a task
/// call in 2025-11-25), and speaks 2026-07-28 to it when told to.
#[test]
fn a_gateway_is_spoken_to_in_either_era() {
    let upstream = format!("{} serve --stdio --store memory", bin());
    let srv = HttpServer::start(&["--upstream-cmd", &upstream]);
    let mut args = SLEEP_TASK.to_vec();
    args.extend(["--url", &srv.url]);
    assert_legacy(&run(&mut cli_auto(&args)));
    let mut modern = args.clone();
    modern.extend(["--protocol", "modern"]);
    assert_modern(&run(&mut cli_auto(&modern)));

    let server = [
        "--",
        bin(),
        "serve",
        "--stdio",
        "--store",
        "memory",
        "--upstream-cmd",
        &upstream,
    ];
    let mut args = SLEEP_TASK.to_vec();
    args.extend(server);
    assert_legacy(&run(&mut cli_auto(&args)));
    assert_modern(&run(cli(&args).env("MCP_TASKS_PROTOCOL", "modern")));
}

#[test]
fn tasks_run_to_completed_failed_and_through_input_required() {
    // `sleep` outlives --task-after: a task, followed to completed.
    let o = call(&["sleep", "--arg", "ms=400"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "slept 400\n");
    let err = stderr(&o);
    assert!(
        err.contains(": working") && err.contains(": completed"),
        "{err}"
    );

    let o = call(&["sleep", "--arg", "ms=400", "--json"]);
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert!(
        v["task"]["ttl"].is_number() || v["task"]["ttl"].is_null(),
        "{v}"
    );
    assert_eq!(v["result"]["content"][0]["text"], "slept 400");

    // `ask` always runs as a task: its question answered from --elicit-reply.
    let o = call(&[
        "ask",
        "--arg",
        "question=Your name?",
        "--elicit-reply",
        r#"{"answer": "Ada"}"#,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "Ada");
    let err = stderr(&o);
    assert!(
        err.contains("Your name? -> answered from --elicit-reply"),
        "{err}"
    );
    assert!(err.contains(": input_required"), "{err}");

    // Sampling during a task, from --sample-reply.
    let o = call(&[
        "summarize",
        "--arg",
        "text=a long text",
        "--sample-reply",
        "short",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "short\n");

    // A JSON-RPC error ends the task failed (exit 1) with that error.
    let o = call(&[
        "error",
        "--arg",
        "message=boom",
        "--arg",
        "ms=300",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "failed", "{v}");
    assert_eq!(v["error"]["message"], "boom");

    // An isError result ends the task completed; the exit code says the tool failed.
    let o = call(&["fail", "--arg", "message=bad", "--arg", "ms=300", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(v["result"]["isError"], true);
}

#[test]
fn ctrl_c_cancels_a_modern_task() {
    let mut args = vec![
        "call",
        "sleep",
        "--arg",
        "ms=60000",
        "--json",
        "--protocol",
        "modern",
    ];
    args.extend(stdio_server());
    let mut child = cli_auto(&args).spawn().unwrap();
    let (rx, reader) = watch_stderr(&mut child, ": working");
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the task did not start");
    interrupt(&child);
    let o = wait_output(child, Duration::from_secs(20));
    let err = reader.join().unwrap();
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("cancelled"), "{err}");
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "cancelled", "{v}");
}

/// Ctrl-C while the call is still being made a task (the server decides after
/// `--task-after 2s`): the CLI waits for the task and cancels it once its id is known,
/// rather than leave it running unseen.
#[test]
fn ctrl_c_while_a_modern_call_starts_cancels_the_task_it_becomes() {
    let srv = HttpServer::start(&["--task-after", "2s"]);
    let args = [
        "call",
        "sleep",
        "--arg",
        "ms=60000",
        "--task",
        "--json",
        "--url",
        &srv.url,
        "--protocol",
        "modern",
    ];
    let mut child = cli_auto(&args).spawn().unwrap();
    // Printed just before the tools/call goes out.
    let (rx, reader) = watch_stderr(&mut child, NOT_SENT);
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the call did not start");
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&child);
    let o = wait_output(child, Duration::from_secs(20));
    let err = reader.join().unwrap();
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted while the call starts"), "{err}");
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "cancelled", "{v}\n{err}");
}

/// Start `sleep 60000` as a task over HTTP in `era`; its id.
fn running_task(url: &str, era: &str) -> String {
    // --task makes it one in 2025-11-25; in 2026-07-28 it outlives --task-after.
    let mut child = cli(&[
        "call",
        "sleep",
        "--arg",
        "ms=60000",
        "--task",
        "--url",
        url,
        "--protocol",
        era,
    ])
    .spawn()
    .unwrap();
    let err = child.stderr.take().unwrap();
    let mut id = None;
    for line in std::io::BufRead::lines(std::io::BufReader::new(err)) {
        let Ok(line) = line else { break };
        if let Some(rest) = line.strip_prefix("task ")
            && let Some((task, _)) = rest.split_once(": working")
        {
            id = Some(task.to_owned());
            break;
        }
    }
    // The task lives on in the server; the caller goes.
    let _ = child.kill();
    let _ = child.wait();
    id.expect("the call printed its task")
}

fn tasks(url: &str, era: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["tasks"];
    all.extend_from_slice(args);
    all.extend(["--url", url, "--json", "--protocol", era]);
    run(&mut cli(&all))
}

#[test]
fn tasks_get_and_cancel_work_in_both_eras_and_list_result_are_refused_in_modern() {
    let srv = HttpServer::start(&["--task-after", "100ms"]);
    for (made, read) in [
        ("legacy", "legacy"),
        ("modern", "modern"),
        ("legacy", "modern"),
        ("modern", "legacy"),
    ] {
        let id = running_task(&srv.url, made);
        let o = tasks(&srv.url, read, &["get", &id]);
        assert_eq!(o.status.code(), Some(0), "{made}/{read}: {}", stderr(&o));
        let v = json_out(&o);
        assert_eq!(v["task"]["taskId"], json!(id));
        assert_eq!(v["task"]["status"], "working", "{v}");
        let o = tasks(&srv.url, read, &["cancel", &id]);
        assert_eq!(o.status.code(), Some(0), "{made}/{read}: {}", stderr(&o));
        assert_eq!(json_out(&o)["task"]["status"], "cancelled");
    }

    // A completed modern task shows its result inline.
    let o = run(&mut cli_auto(&[
        "call",
        "sleep",
        "--arg",
        "ms=300",
        "--json",
        "--url",
        &srv.url,
        "--protocol",
        "modern",
    ]));
    let id = json_out(&o)["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let v: Value = json_out(&tasks(&srv.url, "modern", &["get", &id]));
    assert_eq!(v["result"]["content"][0]["text"], "slept 300", "{v}");

    for args in [vec!["list"], vec!["result", id.as_str()]] {
        let o = tasks(&srv.url, "modern", &args);
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", stderr(&o));
        let message = json_out(&o)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            message.contains("2026-07-28")
                && message.contains(&format!("has no tasks/{}", args[0])),
            "{message}"
        );
    }
}

/// The CLI's `call` over HTTP in 2026-07-28 sends the `Mcp-Param-{Name}` header of an
/// `x-mcp-header` argument (here one that needs the Base64 form), which the conformance
/// example checks (-32020 without it).
#[test]
fn call_sends_the_mcp_param_headers_of_x_mcp_header_arguments() {
    let up = crate::gateway_common::ConformanceHttp::start();
    let o = run(&mut cli_auto(&[
        "call",
        "test_custom_header",
        "--arg",
        "region=Région 北",
        "--json",
        "--protocol",
        "modern",
        "--url",
        &up.url,
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(
        v["result"]["content"][0]["text"], "Region: Région 北",
        "{v}"
    );
}
