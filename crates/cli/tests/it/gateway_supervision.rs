//! Gateway: a stdio upstream that dies fails its in-flight tasks with a clear
//! statusMessage and is restarted with backoff; meanwhile new calls get -32603
//! "upstream unavailable" and stored tasks stay readable.

use crate::common;
use crate::gateway_common;

use std::time::{Duration, Instant};

use gateway_common::{Fake, task_result, until_terminal};
use serde_json::json;

fn wait_up_again(s: &mut common::Stdio) -> Duration {
    let start = Instant::now();
    loop {
        let r = s.call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "back"}}),
        );
        if r.get("result").is_some() {
            return start.elapsed();
        }
        assert_eq!(r["error"]["code"], -32603, "{r}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the upstream never came back"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_upstream_that_exits_mid_call_fails_the_task_and_is_restarted() {
    let fake = Fake::new("die", false);
    let mut s = fake.gateway(&[]);
    let done = s.create_task("echo", json!({"text": "before"}));
    let done_id = done["taskId"].as_str().unwrap().to_owned();
    until_terminal(&mut s, &done_id);

    let task = s.create_task("die", json!({}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let t = until_terminal(&mut s, &id);
    assert_eq!(t["status"], "failed");
    let msg = t["statusMessage"].as_str().unwrap();
    assert!(msg.contains("upstream unavailable"), "{msg}");
    assert!(msg.contains("exited with status 3"), "{msg}");
    let e = task_result(&mut s, &id)["error"].clone();
    assert_eq!(e["code"], -32603);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("upstream unavailable"),
        "{e}"
    );

    // While it is down (the first restart waits 1 s): calls are refused with -32603...
    let e = s.err(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    assert_eq!(e["code"], -32603);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("upstream unavailable"),
        "{e}"
    );
    let e = s.err("resources/list", json!({}));
    assert_eq!(e["code"], -32603);
    // ... stored tasks stay readable ...
    assert_eq!(s.get_task(&done_id)["status"], "completed");
    assert_eq!(
        task_result(&mut s, &done_id)["result"]["content"][0]["text"],
        "before"
    );
    let listed = s.ok("tasks/list", json!({}));
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 2);
    // ... and it comes back after about a second.
    let waited = wait_up_again(&mut s);
    assert!(
        waited >= Duration::from_millis(500),
        "restarted after {waited:?}"
    );
    let inits = fake
        .received()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!(inits, 2);
}

#[test]
#[cfg(unix)]
fn an_upstream_killed_mid_call_fails_plain_calls_and_tasks() {
    let fake = Fake::new("kill", false);
    let mut s = fake.gateway(&[]);
    let task = s.create_task("slow", json!({"ms": 60000}));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let plain = s.start(
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 60000}}),
    );
    fake.wait_received("both calls", |_| {
        fake.received()
            .iter()
            .filter(|m| m["params"]["name"] == "slow")
            .count()
            == 2
    });
    let pid = fake.pid();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let r = s.response_to(&plain);
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("signal 9"),
        "{r}"
    );
    let t = until_terminal(&mut s, &id);
    assert_eq!(t["status"], "failed");
    assert!(
        t["statusMessage"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{t}"
    );
    wait_up_again(&mut s);
}
