//! Gateway: a task backed by an upstream task survives a gateway restart. The restarted
//! gateway adopts it (the engine offers orphaned tasks to the gateway before failing
//! them), follows the upstream task again, and gets its outcome; if the upstream no longer
//! knows the task, the task fails with a message that says so.

use crate::common;
use crate::gateway_common;

use common::Stdio;
use gateway_common::{
    Fake, HttpUpstream, scratch, task_result, text_of, until_terminal, wait_file,
};
use serde_json::json;

#[test]
fn an_http_upstream_task_is_followed_again_after_the_gateway_is_killed() {
    let up = HttpUpstream::start_with_tokens(&[], "tok-gw gateway");
    let dir = scratch("restart-http");
    let store = format!("sqlite:{}", dir.join("gw.db").display());
    let args = [
        "--store",
        store.as_str(),
        "--executor-lease",
        "1s",
        "--upstream-url",
        up.url.as_str(),
        "--upstream-header",
        "Authorization: Bearer tok-gw",
    ];
    let mut a = Stdio::spawn(&args);
    a.initialize();
    let task = a.create_task("sleep", json!({"ms": 4000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let note = dir.join("gw.db.gateway").join(format!("{id}.json"));
    wait_file(&note, true);
    let noted: serde_json::Value = serde_json::from_slice(&std::fs::read(&note).unwrap()).unwrap();
    assert!(noted["upstreamTaskId"].is_string(), "{noted}");
    // The upstream session is noted with the task ...
    let session = noted["upstreamSession"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no upstream session in {noted}"))
        .to_owned();
    // The upstream's log shows session ids as digests.
    let session = mcp_tasks_proto::logged::digest(&session);
    assert_eq!(*up.sessions.lock().unwrap(), vec![session.clone()]);
    assert_eq!(noted["upstreamSession"]["protocolVersion"], "2025-11-25");
    a.child.kill().unwrap();
    let _ = a.child.wait();
    drop(a);

    let mut b = Stdio::spawn(&args);
    b.initialize();
    let t = until_terminal(&mut b, &id);
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(text_of(&task_result(&mut b, &id)["result"]), "slept 4000");
    wait_file(&note, false);
    // ... and taken up again: the restarted gateway opened one new upstream session, for
    // its own client, and followed the task in the session that created it.
    let sessions = up.sessions.lock().unwrap().clone();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(sessions[0], session);
}

#[test]
fn a_task_the_upstream_forgot_fails_with_a_clear_message_after_a_restart() {
    let fake = Fake::new("restart-stdio", true);
    let store = format!("sqlite:{}", fake.dir.join("gw.db").display());
    let mut args: Vec<String> = vec![
        "--store".into(),
        store,
        "--executor-lease".into(),
        "1s".into(),
    ];
    args.extend(fake.args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut a = Stdio::spawn(&args);
    a.initialize();
    let task = a.create_task("job", json!({"ms": 60000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    wait_file(
        &fake.dir.join("gw.db.gateway").join(format!("{id}.json")),
        true,
    );
    a.child.kill().unwrap();
    let _ = a.child.wait();
    drop(a);

    let mut b = Stdio::spawn(&args);
    b.initialize();
    let t = until_terminal(&mut b, &id);
    assert_eq!(t["status"], "failed", "{t}");
    let msg = t["statusMessage"].as_str().unwrap();
    assert!(msg.contains("upstream unavailable"), "{msg}");
    assert!(msg.contains("no longer knows its task"), "{msg}");
    let e = task_result(&mut b, &id)["error"].clone();
    assert_eq!(e["code"], -32603);
}
