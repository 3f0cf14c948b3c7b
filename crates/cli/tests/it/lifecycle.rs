//! Lifecycle of the binary: what it declares, and how it ends at the end of its input.
//! Version negotiation and the initialization rules are tested in process in
//! `crates/server/tests/it/lifecycle.rs`.

use crate::common;
use common::Stdio;
use serde_json::json;

#[test]
fn negotiates_2025_11_25_and_declares_tasks() {
    let mut s = Stdio::spawn(&[]);
    let r = s.initialize();
    assert_eq!(r["protocolVersion"], "2025-11-25");
    assert_eq!(
        r["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert_eq!(r["serverInfo"]["name"], "mcp-tasks");
}

/// Issue 15 #14: at the end of its input a stdio server stops reading but lets the requests
/// in flight answer (within `--shutdown-grace`) before it exits.
#[test]
fn a_request_in_flight_at_end_of_input_is_still_answered() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.start(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 300}}),
    );
    s.close_stdin();
    let r = s.response_to(&id);
    assert_eq!(r["result"]["content"][0]["text"], "slept 300", "{r}");
    let status = s
        .wait_exit(std::time::Duration::from_secs(10))
        .expect("the server exits once its requests are answered");
    assert!(status.success(), "{status}");
}

/// Issue 15 #14: the tasks this process runs at the end of its input are failed with the
/// usual shutdown message at once, not left `working` until another process's lease check;
/// a `tasks/result` waiting on one answers, and a task call still being created gets its
/// `CreateTaskResult`.
#[test]
fn tasks_running_at_end_of_input_are_failed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("tasks.db").display());
    let mut s = Stdio::spawn(&["--store", &store]);
    s.initialize();
    let first = s.create_task("sleep", json!({"ms": 60000}))["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let waiting = s.start("tasks/result", json!({"taskId": first}));
    let creating = s.start(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60000}, "task": {}}),
    );
    s.close_stdin();
    let r = s.response_to(&waiting);
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("The server shut down before the task finished")),
        "{r}"
    );
    let second = s.response_to(&creating)["result"]["task"]["taskId"]
        .as_str()
        .expect("the CreateTaskResult of the call in flight")
        .to_owned();
    assert!(
        s.wait_exit(std::time::Duration::from_secs(10)).is_some(),
        "the server exits"
    );
    // The default executor lease (15 s) has not run out: only this process could say.
    let mut again = Stdio::spawn(&["--store", &store]);
    again.initialize();
    for id in [&first, &second] {
        let t = again.get_task(id);
        assert_eq!(t["status"], "failed", "{t}");
        assert_eq!(
            t["statusMessage"], "The server shut down before the task finished",
            "{t}"
        );
    }
}

/// Issue 15 #14: `--shutdown-grace` bounds how long the requests in flight may take once
/// the input has ended; those left are cancelled and the process exits.
#[test]
fn the_shutdown_grace_bounds_the_exit_after_end_of_input() {
    let mut s = Stdio::spawn(&["--shutdown-grace", "500ms"]);
    s.initialize();
    let quick = s.start(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 100}}),
    );
    let slow = s.start(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60000}}),
    );
    let closed = std::time::Instant::now();
    s.close_stdin();
    assert_eq!(
        s.response_to(&quick)["result"]["content"][0]["text"],
        "slept 100"
    );
    let status = s
        .wait_exit(std::time::Duration::from_secs(5))
        .expect("the server exits after the grace");
    let took = closed.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        took >= std::time::Duration::from_millis(400),
        "exited after {took:?}, before the grace ran out with a request in flight"
    );
    let rest = s.drain_for(std::time::Duration::from_millis(100));
    assert!(
        rest.iter().all(|m| m.get("id") != Some(&slow)),
        "the cancelled call got an answer: {rest:?}"
    );
}

/// Issue 15 #14: once the input has ended no answer can come, so a request in flight that
/// waits on one from the client (here sampling) fails at once and is answered, instead of
/// holding the exit for the whole `--shutdown-grace` (10 s by default).
#[test]
fn a_request_waiting_on_the_client_at_end_of_input_is_answered_at_once() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let id = s.start(
        "tools/call",
        json!({"name": "summarize", "arguments": {"text": "a long text"}}),
    );
    s.wait_for("sampling/createMessage", |m| {
        m["method"] == "sampling/createMessage"
    });
    let closed = std::time::Instant::now();
    s.close_stdin();
    let r = s.response_to(&id);
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );
    assert!(
        s.wait_exit(std::time::Duration::from_secs(5)).is_some(),
        "the server exits well within the grace"
    );
    assert!(closed.elapsed() < std::time::Duration::from_secs(5));
}
