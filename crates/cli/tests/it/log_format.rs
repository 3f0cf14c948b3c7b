//! `--log-format json`: every line on stderr is one JSON object with the timestamp, the
//! level, the target and the event's fields (the audit events' task id, tool and
//! principal among them), and no token text.

use crate::http_common;

use http_common::{Client, Server};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line_with_the_event_fields() {
    let server = Server::start_env(
        &["--log-format", "json"],
        &[
            (http_common::TOKENS_ENV, "secret-token-7 auditor"),
            ("RUST_LOG", "info"),
        ],
    );
    let mut c = Client::new(&server).with_token("secret-token-7");
    c.initialize().await;
    let id = c.start_task("fail", json!({"message": "m"})).await;
    c.wait_status(&id, "failed").await;
    let deadline = std::time::Instant::now() + http_common::TIMEOUT;
    let (lines, created) = loop {
        let lines: Vec<Value> = server
            .stderr()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        let created = lines
            .iter()
            .find(|l| {
                l["fields"]["message"] == "task created" && l["fields"]["task_id"] == id.as_str()
            })
            .cloned();
        if let Some(created) = created {
            break (lines, created);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no `task created` event for {id}: {lines:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    for l in &lines {
        for key in ["timestamp", "level", "target", "fields"] {
            assert!(l.get(key).is_some(), "no `{key}` in {l}");
        }
    }
    assert_eq!(created["level"], "INFO", "{created}");
    assert_eq!(created["target"], "mcp_tasks::audit", "{created}");
    assert_eq!(created["fields"]["tool"], "fail", "{created}");
    assert_eq!(created["fields"]["principal"], "auditor", "{created}");
    assert!(
        !server.stderr().contains("secret-token-7"),
        "a token was logged"
    );
}

#[test]
fn an_unknown_log_format_is_refused_naming_the_choices() {
    let out = std::process::Command::new(http_common::bin())
        .args(["serve", "--stdio", "--log-format", "xml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("text") && err.contains("json"), "{err}");
}
