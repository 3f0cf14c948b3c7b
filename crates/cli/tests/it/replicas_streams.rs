//! The session's SSE streams across replicas: a task's notifications reach the client's
//! GET stream on whichever replica holds it, and the event ids of a session are unique
//! across replicas (a resumption on another replica says plainly that nothing is
//! replayed). Three `mcp-tasks serve` replicas on one PostgreSQL database
//! ([`crate::replicas::Cluster`]).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http_common::Sse;
use crate::replicas::Cluster;

/// The JSON-RPC messages of `stream` until `done` says so, within `within`.
async fn messages_until(
    stream: &mut Sse,
    within: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let start = Instant::now();
    let mut out = Vec::new();
    while !done(&out) {
        let left = within.saturating_sub(start.elapsed());
        assert!(!left.is_zero(), "not there within {within:?}: {out:#?}");
        match stream.next_within(left).await {
            Ok(Some(e)) => out.extend(e.message()),
            Ok(None) => panic!("the stream ended: {out:#?}"),
            Err(()) => panic!("not there within {within:?}: {out:#?}"),
        }
    }
    out
}

fn is_final_status(m: &Value) -> bool {
    m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
}

/// A 2025-11-25 task's `notifications/progress` (under the request's `progressToken`, in
/// order) and its `notifications/tasks/status` reach the client's GET stream held by
/// another replica than the one running the task; the session itself was started on a
/// third.
///
/// Spec (2025-11-25 tasks): "Task-augmented requests support progress notifications as
/// defined in the progress specification. The `progressToken` provided in the initial
/// request remains valid throughout the task lifetime." Streamable HTTP: "The server MAY
/// send JSON-RPC requests and notifications on the stream" (the GET stream).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_notifications_reach_the_get_stream_on_another_replica() {
    let cluster = Cluster::start(&[]).await;
    let mut alice = cluster.at(0, &cluster.client("tok-alice"));
    alice.initialize().await;
    let b = cluster.at(1, &alice);
    let mut c = cluster.at(2, &alice);
    let get = b.get(None).await;
    assert_eq!(get.status, 200, "{get:?}");
    let mut stream = get.sse();
    let first = stream.next().await.expect("a priming event");
    assert!(first.is_priming(), "{first:?}");
    for round in 0..2 {
        let token = format!("p{round}");
        let msg = c
            .rpc(
                "tools/call",
                json!({
                    "name": "progress", "arguments": {"steps": 5, "ms": 40},
                    "task": {"ttl": 600_000}, "_meta": {"progressToken": token},
                }),
            )
            .await;
        let task = msg["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{msg}"))
            .to_owned();
        let got = messages_until(&mut stream, Duration::from_secs(10), |ms| {
            ms.iter()
                .any(|m| is_final_status(m) && m["params"]["taskId"] == task.as_str())
        })
        .await;
        let progress: Vec<f64> = got
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| {
                assert_eq!(m["params"]["progressToken"], token.as_str(), "{m}");
                m["params"]["progress"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(
            progress.len(),
            5,
            "every progress notification of round {round}: {got:#?}"
        );
        assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
        let done = got.iter().position(is_final_status).unwrap();
        let last_progress = got
            .iter()
            .rposition(|m| m["method"] == "notifications/progress")
            .unwrap();
        assert!(
            last_progress < done,
            "progress before the final status: {got:#?}"
        );
    }
}

/// The raw start of an SSE response: its first chunks appended to `text`, until `want`
/// is in it.
async fn raw_until(resp: &mut crate::http_common::Resp, text: &mut String, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !text.contains(want) {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, resp.body.chunk())
            .await
            .unwrap_or_else(|_| panic!("`{want}` not within 10 s: {text:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the response ended without `{want}`: {text:?}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// The first event id of `text` (`id: ...`).
fn first_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("id: "))
        .unwrap_or_else(|| panic!("no event id in {text:?}"))
        .to_owned()
}

/// Each replica's standalone stream of one session has event ids of its own, and a
/// `Last-Event-ID` of one replica's stream, presented to another, gets that replica's
/// standalone stream with an SSE comment saying that nothing is replayed.
///
/// Spec (2025-11-25, Streamable HTTP): "If present, the ID MUST be globally unique across
/// all streams within that session, or all streams with that specific client, if
/// session management is not in use." and "The server MUST NOT replay messages that
/// would have been delivered on a different stream."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_ids_are_unique_across_replicas_and_a_foreign_resumption_says_nothing_is_replayed() {
    let cluster = Cluster::start(&[]).await;
    let mut alice = cluster.at(0, &cluster.client("tok-alice"));
    alice.initialize().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut get = cluster.at(i, &alice).get(None).await;
        assert_eq!(get.status, 200, "{get:?}");
        let mut text = String::new();
        raw_until(&mut get, &mut text, "\n\n").await;
        ids.push(first_id(&text));
    }
    let streams: Vec<&str> = ids.iter().map(|id| id.split('-').next().unwrap()).collect();
    assert!(
        streams[0] != streams[1] && streams[1] != streams[2] && streams[0] != streams[2],
        "the replicas' standalone streams share a number: {ids:?}"
    );
    // Replica C resumes B's stream: C's own stream, said plainly, with an id of C's.
    let mut resumed = cluster.at(2, &alice).get(Some(&ids[1])).await;
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let mut text = String::new();
    raw_until(&mut resumed, &mut text, "\ndata:").await;
    assert!(
        text.starts_with(": nothing replayed: Last-Event-ID "),
        "the resumption says that nothing is replayed: {text:?}"
    );
    assert_eq!(
        first_id(&text).split('-').next(),
        Some(streams[2]),
        "C's own stream: {text:?}"
    );
    // On the replica that holds it, the same id resumes that stream (no comment).
    let mut own = cluster.at(1, &alice).get(Some(&ids[1])).await;
    assert_eq!(own.status, 200, "{own:?}");
    let mut text = String::new();
    raw_until(&mut own, &mut text, "\ndata:").await;
    assert!(!text.contains("nothing replayed"), "{text:?}");
    assert!(
        first_id(&text).starts_with(&format!("{}-", streams[1])),
        "{text:?}"
    );
}

/// A 2025-11-25 task runs on replica A (0), which received its `tools/call`; the client
/// waits for its outcome with `tasks/result` on replica B (1), and holds no GET stream.
/// Every `notifications/progress` of the task (under the request's `progressToken`, in
/// order) and its terminal `notifications/tasks/status` come on that `tasks/result`
/// stream, before its response, as on one server; nothing of the task is left on A's
/// standalone stream (each message goes out once).
///
/// Spec (2025-11-25 tasks): "Task-augmented requests support progress notifications as
/// defined in the progress specification. The `progressToken` provided in the initial
/// request remains valid throughout the task lifetime." and "clients SHOULD expect
/// messages to be delivered on any SSE stream, including the HTTP GET stream. One possible
/// approach is maintaining an SSE stream on `tasks/result`". Streamable HTTP: "The server
/// MUST send each of its JSON-RPC messages on only one of the connected streams".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_notifications_reach_its_tasks_result_stream_on_another_replica() {
    let cluster = Cluster::start(&[]).await;
    let mut a = cluster.at(0, &cluster.client("tok-alice"));
    a.initialize().await;
    let mut b = cluster.at(1, &a);
    for round in 0..2 {
        let token = format!("r{round}");
        let msg = a
            .rpc(
                "tools/call",
                json!({
                    "name": "progress", "arguments": {"steps": 4, "ms": 150},
                    "task": {"ttl": 600_000}, "_meta": {"progressToken": token},
                }),
            )
            .await;
        let task = msg["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("{msg}"))
            .to_owned();
        let (rid, resp) = b.request("tasks/result", json!({"taskId": task})).await;
        assert_eq!(resp.status, 200, "{resp:?}");
        assert!(
            resp.is_sse(),
            "the waiting tasks/result is a stream: {resp:?}"
        );
        let mut sse = resp.sse();
        let mut seen = Vec::new();
        let done = tokio::time::timeout(
            Duration::from_secs(10),
            sse.next_non_notification(&mut seen),
        )
        .await
        .unwrap_or_else(|_| panic!("no response within 10 s: {seen:#?}"))
        .unwrap_or_else(|| panic!("the stream ended without its response: {seen:#?}"));
        assert_eq!(done["id"], json!(rid), "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "done 4", "{done}");
        let progress: Vec<f64> = seen
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| {
                assert_eq!(m["params"]["progressToken"], token.as_str(), "{m}");
                assert_eq!(
                    m["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
                    task.as_str(),
                    "{m}"
                );
                m["params"]["progress"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(
            progress,
            [1.0, 2.0, 3.0, 4.0],
            "round {round}: every progress notification on B's tasks/result: {seen:#?}"
        );
        let finals: Vec<&Value> = seen
            .iter()
            .filter(|m| is_final_status(m) && m["params"]["taskId"] == task.as_str())
            .collect();
        assert_eq!(
            finals.len(),
            1,
            "round {round}: the terminal status once, on the tasks/result stream: {seen:#?}"
        );
    }
    // Nothing of the tasks waits on A's standalone stream: a GET there gets no copy.
    let get = a.get(None).await;
    assert_eq!(get.status, 200, "{get:?}");
    let mut stream = get.sse();
    let mut left = Vec::new();
    while let Ok(Some(e)) = stream.next_within(Duration::from_millis(500)).await {
        left.extend(e.message());
    }
    assert!(
        left.iter()
            .all(|m| m["method"] != "notifications/progress" && !is_final_status(m)),
        "each message once: A's standalone stream holds {left:#?}"
    );
}
