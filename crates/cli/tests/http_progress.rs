//! Progress keeps flowing after the `CreateTaskResult` (the official TypeScript SDK loses
//! it here): on the GET stream, or queued until one opens.

mod http_common;

use http_common::{Auth, BOTH, Client, start_as};
use serde_json::{Value, json};

async fn start_progress(c: &mut Client, steps: u64, token: &str) -> String {
    let created = c
        .rpc(
            "tools/call",
            json!({
                "name": "progress", "arguments": {"steps": steps, "ms": 20},
                "task": {"ttl": 60_000}, "_meta": {"progressToken": token},
            }),
        )
        .await;
    assert_eq!(created["result"]["task"]["status"], "working");
    created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Progress notifications (and the final status) read from the standalone stream.
async fn collect(sse: &mut http_common::Sse, task: &str) -> Vec<Value> {
    let mut progress = Vec::new();
    loop {
        let e = sse.next().await.expect("stream open");
        let Some(m) = e.message() else { continue };
        match m["method"].as_str().unwrap() {
            "notifications/progress" => progress.push(m),
            "notifications/tasks/status" => {
                assert_eq!(m["params"]["taskId"], task);
                if m["params"]["status"] == "completed" {
                    return progress;
                }
            }
            other => panic!("unexpected {other}: {m}"),
        }
    }
}

#[tokio::test]
async fn progress_after_creation_reaches_the_get_stream() {
    for auth in BOTH {
        progress_after_creation_reaches_the_get_stream_as(auth).await;
    }
}

async fn progress_after_creation_reaches_the_get_stream_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let mut sse = c.get(None).await.sse();
    let task = start_progress(&mut c, 5, "prog-1").await;
    let progress = collect(&mut sse, &task).await;
    assert_eq!(progress.len(), 5, "{progress:?}");
    for (i, m) in progress.iter().enumerate() {
        assert_eq!(m["params"]["progressToken"], "prog-1");
        assert_eq!(m["params"]["progress"], i + 1);
        assert_eq!(m["params"]["total"], 5);
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            task.as_str()
        );
    }
}

#[tokio::test]
async fn progress_waits_for_a_get_stream_to_open() {
    for auth in BOTH {
        progress_waits_for_a_get_stream_to_open_as(auth).await;
    }
}

async fn progress_waits_for_a_get_stream_to_open_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let task = start_progress(&mut c, 4, "later").await;
    c.wait_status(&task, "completed").await;
    let mut sse = c.get(None).await.sse();
    let progress = collect(&mut sse, &task).await;
    let values: Vec<_> = progress
        .iter()
        .map(|m| m["params"]["progress"].clone())
        .collect();
    assert_eq!(values, [json!(1), json!(2), json!(3), json!(4)]);
}
