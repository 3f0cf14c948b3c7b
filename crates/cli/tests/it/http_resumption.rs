//! Resumption with GET + `Last-Event-ID`: a `tasks/result` stream cut mid-elicitation
//! delivers the elicitation and then the final response exactly once; the standalone
//! stream loses and duplicates nothing; replay never crosses streams.

use crate::http_common;

use std::time::Duration;

use http_common::{Auth, BOTH, Client, Event, Server, check_response, responses, start_as};
use serde_json::json;

/// The next event that carries a request or a response (notifications passed over).
async fn next_request_event(sse: &mut http_common::Sse) -> Event {
    loop {
        let e = sse.next().await.expect("stream open");
        if e.message().is_some_and(|m| m.get("id").is_some()) {
            return e;
        }
    }
}

#[tokio::test]
async fn a_result_stream_cut_mid_elicitation_resumes_exactly_once() {
    for auth in BOTH {
        a_result_stream_cut_mid_elicitation_resumes_exactly_once_as(auth).await;
    }
}

async fn a_result_stream_cut_mid_elicitation_resumes_exactly_once_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let task = c
        .start_task("ask", json!({"question": "Favourite colour?"}))
        .await;
    let (rid, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    let priming = sse.next().await.unwrap();
    assert!(priming.is_priming());
    let ask_event = next_request_event(&mut sse).await;
    let ask = ask_event.message().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str()
    );
    // The connection drops before the client handled the elicitation.
    drop(sse);
    c.wait_status(&task, "input_required").await;

    // Resume after the priming event: the elicitation again, same event id, same request.
    let mut sse = c.get(priming.id.as_deref()).await.sse();
    let replayed = next_request_event(&mut sse).await;
    assert_eq!(replayed, ask_event);
    assert!(
        sse.next_within(Duration::from_millis(200)).await.is_err(),
        "nothing else yet"
    );
    drop(sse);

    // Resume after the elicitation: nothing is replayed; the answer (a separate POST)
    // completes the task and the response arrives on this connection, once.
    let mut sse = c.get(ask_event.id.as_deref()).await.sse();
    let primed = sse.next().await.unwrap();
    assert!(primed.is_priming(), "a fresh id to resume from: {primed:?}");
    assert_eq!(primed.stream(), priming.stream());
    assert_ne!(primed.id, ask_event.id);
    assert!(sse.next_within(Duration::from_millis(200)).await.is_err());
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "teal"}}}))
        .await;
    assert_eq!(r.status, 202);
    let rest = sse.rest().await;
    let msgs = responses(&rest);
    assert_eq!(msgs.len(), 1, "the response exactly once: {rest:?}");
    check_response("tasks/result", &msgs[0]);
    assert_eq!(msgs[0]["id"], rid);
    assert_eq!(msgs[0]["result"]["content"][0]["text"], "teal");
    // Only this stream's messages were replayed (the task's status notifications travel
    // on it too).
    assert!(
        rest.iter()
            .chain([&replayed])
            .all(|e| e.stream() == priming.stream())
    );

    // Resuming after the response has nothing more to give.
    let last = rest.last().unwrap().id.clone().unwrap();
    let after = c.get(Some(&last)).await;
    assert_eq!(after.status, 204, "{after:?}");
    // Resuming from before the response replays just the response.
    let again = c.get(primed.id.as_deref()).await.sse().rest().await;
    let msgs = responses(&again);
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["id"], rid);
}

#[tokio::test]
async fn the_standalone_stream_resumes_without_loss_or_duplicates() {
    for auth in BOTH {
        the_standalone_stream_resumes_without_loss_or_duplicates_as(auth).await;
    }
}

async fn the_standalone_stream_resumes_without_loss_or_duplicates_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let mut sse = c.get(None).await.sse();
    let mut last = sse.next().await.unwrap().id.unwrap();
    c.rpc(
        "tools/call",
        json!({
            "name": "progress", "arguments": {"steps": 20, "ms": 15},
            "task": {"ttl": 60_000}, "_meta": {"progressToken": 7},
        }),
    )
    .await;
    let mut progress = Vec::new();
    let mut done = false;
    let mut connections = 1;
    while !done {
        // Read a few events, then cut the connection and resume after the last id seen.
        for _ in 0..4 {
            let Some(e) = sse.next().await else { break };
            last = e.id.clone().unwrap();
            let m = e.message().unwrap();
            if m["method"] == "notifications/progress" {
                assert_eq!(m["params"]["progressToken"], 7);
                progress.push(m["params"]["progress"].as_u64().unwrap());
            } else if m["params"]["status"] == "completed" {
                done = true;
                break;
            }
        }
        drop(sse);
        tokio::time::sleep(Duration::from_millis(40)).await;
        sse = c.get(Some(&last)).await.sse();
        connections += 1;
    }
    assert!(connections > 3);
    assert_eq!(progress, (1..=20).collect::<Vec<u64>>());
}

#[tokio::test]
async fn a_new_get_takes_over_the_standalone_stream() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let mut first = c.get(None).await.sse();
    assert!(first.next().await.unwrap().is_priming());
    let mut second = c.get(None).await.sse();
    assert!(second.next().await.unwrap().is_priming());
    // The first connection ends: one reader per stream, no broadcast.
    assert_eq!(first.next().await, None);
    let task = c.start_task("sleep", json!({"ms": 10})).await;
    let m = second.next().await.unwrap().message().unwrap();
    assert_eq!(m["params"]["taskId"], task.as_str());
}

#[tokio::test]
async fn bad_or_unknown_last_event_ids_are_refused() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    assert_eq!(c.get(Some("garbage")).await.status, 400);
    assert_eq!(c.get(Some("987-3")).await.status, 400);
}

/// Issue 15, item 15: `Last-Event-ID: n-18446744073709551615` used to wrap the cursor to 0
/// and replay the whole stream (a debug build, like this test's, panicked). An id at or
/// past the stream's end has nothing after it: a finished stream answers 204, an open one
/// delivers only what comes next.
#[tokio::test]
async fn an_overflowing_last_event_id_replays_nothing() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    // A finished request stream: two progress notifications, then the response.
    let (_, resp) = c
        .request(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 2, "ms": 150},
                   "_meta": {"progressToken": "p"}}),
        )
        .await;
    let events = resp.sse().rest().await;
    assert!(events.len() >= 4, "{events:?}");
    let stream = events[0].stream().to_owned();
    for seq in ["18446744073709551615", "18446744073709551614", "99999"] {
        let r = c.get(Some(&format!("{stream}-{seq}"))).await;
        assert_eq!(r.status, 204, "{stream}-{seq}: {r:?}");
    }
    assert_eq!(c.get(Some("18446744073709551616-0")).await.status, 400);
    // A new request acknowledges the stream (its buffer goes); resuming it still has
    // nothing more to give, not an unknown stream (the TypeScript SDK 1.32.2 resumes a
    // stream that ended with an error response, often after its next request).
    c.rpc("tools/list", json!({})).await;
    let r = c.get(Some(&format!("{stream}-1"))).await;
    assert_eq!(r.status, 204, "an acknowledged stream: {r:?}");

    // Notifications of a JSON-answered call wait on the standalone stream (0).
    let msg = c
        .post_with(
            &[("Accept", "application/json")],
            json!({"jsonrpc": "2.0", "id": 90, "method": "tools/call",
                   "params": {"name": "progress", "arguments": {"steps": 2, "ms": 10},
                              "_meta": {"progressToken": "q"}}})
            .to_string()
            .as_bytes(),
        )
        .await
        .json()
        .await;
    assert_eq!(msg["id"], 90);
    let mut sse = c.get(Some("0-18446744073709551615")).await.sse();
    let first = sse.next().await.expect("a priming event");
    assert!(first.is_priming(), "{first:?}");
    assert_eq!(
        sse.next_within(Duration::from_millis(400)).await,
        Err(()),
        "nothing is replayed"
    );
    // The server is still serving.
    c.rpc("ping", json!({})).await;
}
