//! Lifecycle: initialize, version negotiation, requests before initialization.

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

#[test]
fn accepts_older_revisions_without_tasks() {
    for v in ["2025-06-18", "2025-03-26"] {
        let mut s = Stdio::spawn(&[]);
        let r = s.initialize_with(v, json!({}));
        assert_eq!(r["protocolVersion"], v);
        assert!(r["capabilities"].get("tasks").is_none(), "{v}: {r}");
        // tools/list carries no execution, and a `task` field is ignored: the call runs plainly.
        let tools = s.ok("tools/list", json!({}));
        assert!(
            tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
        let r = s.ok(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 1}, "task": {}}),
        );
        assert_eq!(common::text_of(&r), "slept 1");
        assert_eq!(s.err("tasks/list", json!({}))["code"], -32601);
    }
}

#[test]
fn answers_a_newer_revision_with_2025_11_25() {
    let mut s = Stdio::spawn(&[]);
    let r = s.initialize_with("2026-07-28", json!({}));
    assert_eq!(r["protocolVersion"], "2025-11-25");
}

#[test]
fn server_discover_is_method_not_found_so_clients_fall_back() {
    let mut s = Stdio::spawn(&[]);
    assert_eq!(s.err("server/discover", json!({}))["code"], -32601);
    s.initialize();
}

#[test]
fn refuses_requests_before_initialize_with_a_clear_error() {
    let mut s = Stdio::spawn(&[]);
    let e = s.err("tools/list", json!({}));
    assert_eq!(e["code"], -32002);
    assert!(e["message"].as_str().unwrap().contains("initialize"), "{e}");
    // ping is allowed at any time
    assert_eq!(s.ok("ping", json!({})), json!({}));
    s.initialize();
    s.ok("tools/list", json!({}));
}

#[test]
fn a_second_initialize_is_refused() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let e = s.err("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}));
    assert_eq!(e["code"], -32600);
    s.ok("ping", json!({}));
}

#[test]
fn initialize_without_protocol_version_is_invalid_params_naming_the_field() {
    let mut s = Stdio::spawn(&[]);
    let e = s.err("initialize", json!({"capabilities": {}}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("protocolVersion"));
    s.initialize();
}

#[test]
fn requests_pipelined_after_initialize_see_it() {
    let mut s = Stdio::spawn(&[]);
    let init = json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"});
    s.send_raw(&format!("{init}\n{list}"));
    let r = s.response_to(&json!("l"));
    assert!(r.get("result").is_some(), "{r}");
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
