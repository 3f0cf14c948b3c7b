//! Progress keeps flowing after the `CreateTaskResult` (the official TypeScript SDK loses
//! it here): on the task's open `tasks/result` stream, else on the GET stream, or queued
//! until one opens. Each notification goes out once.

use crate::http_common;

use std::time::Duration;

use http_common::{Auth, BOTH, Client, start_as};
use serde_json::{Value, json};

async fn start_progress(c: &mut Client, steps: u64, token: &str) -> String {
    start_progress_every(c, steps, 20, token).await
}

async fn start_progress_every(c: &mut Client, steps: u64, ms: u64, token: &str) -> String {
    let created = c
        .rpc(
            "tools/call",
            json!({
                "name": "progress", "arguments": {"steps": steps, "ms": ms},
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

/// Opens `tasks/result` at once and reads it to the response: the notifications it carried.
async fn read_result_stream(c: &mut Client, task: &str) -> Vec<Value> {
    let (rid, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    let mut seen = Vec::new();
    let done = sse.next_non_notification(&mut seen).await.unwrap();
    assert_eq!(done["id"], rid, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done 3");
    seen
}

fn progress_values(notes: &[Value]) -> Vec<Value> {
    notes
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].clone())
        .collect()
}

#[tokio::test]
async fn progress_travels_on_the_open_tasks_result_stream_without_a_get_stream() {
    for auth in BOTH {
        progress_travels_on_the_open_tasks_result_stream_as(auth).await;
    }
}

async fn progress_travels_on_the_open_tasks_result_stream_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    // The first step comes 300 ms after creation; tasks/result is open by then.
    let task = start_progress_every(&mut c, 3, 300, "res-1").await;
    let seen = read_result_stream(&mut c, &task).await;
    assert_eq!(
        progress_values(&seen),
        [json!(1), json!(2), json!(3)],
        "{auth:?}: {seen:?}"
    );
    for m in &seen {
        match m["method"].as_str().unwrap() {
            "notifications/progress" => {
                assert_eq!(m["params"]["progressToken"], "res-1");
                assert_eq!(
                    m["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
                    task.as_str()
                );
            }
            "notifications/tasks/status" => assert_eq!(m["params"]["taskId"], task.as_str()),
            other => panic!("unexpected {other}: {m}"),
        }
    }
}

#[tokio::test]
async fn with_a_get_stream_open_each_notification_goes_out_once() {
    for auth in BOTH {
        with_a_get_stream_open_each_notification_goes_out_once_as(auth).await;
    }
}

async fn with_a_get_stream_open_each_notification_goes_out_once_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let mut get = c.get(None).await.sse();
    let task = start_progress_every(&mut c, 3, 300, "once").await;
    let on_result = read_result_stream(&mut c, &task).await;
    let mut on_get = Vec::new();
    while let Ok(Some(e)) = get.next_within(Duration::from_millis(500)).await {
        on_get.extend(e.message());
    }
    let mut all = on_result.clone();
    all.extend(on_get.iter().cloned());
    let mut values = progress_values(&all);
    values.sort_by_key(|v| v.as_u64());
    assert_eq!(
        values,
        [json!(1), json!(2), json!(3)],
        "{auth:?}: each step once: result stream {on_result:?}, GET {on_get:?}"
    );
    assert!(
        progress_values(&on_result).contains(&json!(3)),
        "{auth:?}: the open tasks/result carries the progress: {on_result:?}"
    );
    let completed = all
        .iter()
        .filter(|m| {
            m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
        })
        .count();
    assert_eq!(completed, 1, "{auth:?}: {all:?}");
}
