//! `--protocol auto` (the default) against our own server, which speaks both eras (its
//! `server/discover` lists 2025-11-25 beside 2026-07-28): each command is spoken in the
//! era that has what it needs. `tasks list`, `tasks watch` and `tasks result` work (only
//! 2025-11-25 has `tasks/list`, `tasks/result` and status notifications); a `call` is made
//! in 2025-11-25, so that `--task` and `--ttl` are honoured (no note says otherwise) and
//! progress is shown; `tasks get` reads in 2026-07-28 (the result inline).
#![allow(missing_docs)]

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use crate::cli_modern::NOT_SENT;
use crate::client_support::{
    HttpServer, cli_auto, interrupt, json_out, run, stderr, stdout, tokens, wait_output,
};

/// `mcp-tasks ARGS --url URL --auth-token tok-alice`, the era left to the CLI.
fn auto(url: &str, args: &[&str]) -> std::process::Command {
    let mut all = args.to_vec();
    all.extend(["--url", url, "--auth-token", "tok-alice"]);
    cli_auto(&all)
}

#[test]
fn tasks_list_watch_and_result_work_against_our_server_by_default() {
    let t = tokens();
    let srv = HttpServer::start(&["--auth-tokens", t.path()]);
    let o = run(&mut auto(
        &srv.url,
        &["call", "sleep", "--arg", "ms=50", "--task", "--json"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = json_out(&o)["task"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();

    let o = run(&mut auto(&srv.url, &["tasks", "list", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["tasks"][0]["taskId"], id.as_str(), "{v}");
    assert_eq!(v["tasks"][0]["status"], "completed", "{v}");

    let o = run(&mut auto(&srv.url, &["tasks", "result", &id]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "slept 50\n");

    // `tasks get` reads it in 2026-07-28: the result inline.
    let o = run(&mut auto(&srv.url, &["tasks", "get", &id, "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_out(&o)["result"]["content"][0]["text"], "slept 50");

    // `tasks watch` (a line per task off a terminal) until Ctrl-C: exit 0.
    let mut child = auto(&srv.url, &["tasks", "watch"]).spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.starts_with(&id) {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let shown = rx.recv_timeout(Duration::from_secs(20));
    interrupt(&child);
    let o = wait_output(child, Duration::from_secs(20));
    let lines = reader.join().unwrap();
    assert!(
        shown.is_ok(),
        "the task was not shown: {lines}{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(lines.contains("\tcompleted\t"), "{lines}");
}

#[test]
fn a_call_honours_task_and_ttl_without_a_note_and_shows_progress() {
    let t = tokens();
    let srv = HttpServer::start(&["--auth-tokens", t.path()]);
    let o = run(&mut auto(
        &srv.url,
        &[
            "call", "sleep", "--arg", "ms=50", "--ttl", "120000", "--json",
        ],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(v["task"]["ttl"], 120_000, "the requested ttl: {v}");
    assert!(!stderr(&o).contains(NOT_SENT), "{}", stderr(&o));

    // Progress of a plain call, a line per notification off a terminal.
    let o = run(&mut auto(
        &srv.url,
        &["call", "progress", "--arg", "steps=3", "--arg", "ms=20"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "done 3\n");
    let err = stderr(&o);
    assert!(
        err.contains("progress 1.0/3.0") && err.contains("progress 3.0/3.0"),
        "{err}"
    );
    assert!(!err.contains(NOT_SENT), "{err}");

    // Told to speak 2026-07-28, the server decides: the note says that --task is not sent.
    let o = run(&mut auto(
        &srv.url,
        &[
            "call",
            "sleep",
            "--arg",
            "ms=50",
            "--task",
            "--json",
            "--protocol",
            "modern",
        ],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains(NOT_SENT), "{}", stderr(&o));
}
