//! SSE framing per the transport spec: a priming event (id, empty data) first; event ids
//! unique across the session and naming their stream; a long wait closed after a `retry`
//! field and resumed by GET + `Last-Event-ID`; every message on exactly one stream.

use crate::http_common;

use std::collections::HashSet;
use std::time::Duration;

use http_common::{Auth, BOTH, Client, Event, Server, check_response, responses, start_as};
use serde_json::{Value, json};

#[tokio::test]
async fn streams_start_with_a_priming_event() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let task = c.start_task("sleep", json!({"ms": 60_000})).await;
    let (_, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    let first = sse.next().await.unwrap();
    assert!(first.is_priming(), "{first:?}");
    assert!(first.id.as_deref().unwrap().ends_with("-0"), "{first:?}");
    // Nothing else while the task works.
    assert!(
        sse.next_within(Duration::from_millis(300)).await.is_err(),
        "only the priming event while waiting"
    );
}

#[tokio::test]
async fn event_ids_are_unique_and_name_their_stream() {
    for auth in BOTH {
        event_ids_are_unique_and_name_their_stream_as(auth).await;
    }
}

async fn event_ids_are_unique_and_name_their_stream_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let mut standalone = c.get(None).await.sse();
    let mut ids = Vec::new();
    let mut streams = Vec::new();
    let mut messages = Vec::new();
    for ms in [200, 300] {
        let task = c.start_task("sleep", json!({"ms": ms})).await;
        let (_, resp) = c.request("tasks/result", json!({"taskId": task})).await;
        let events = resp.sse().rest().await;
        let prefixes: HashSet<&str> = events.iter().map(Event::stream).collect();
        assert_eq!(prefixes.len(), 1, "one stream per response: {events:?}");
        streams.push(prefixes.into_iter().next().unwrap().to_owned());
        ids.extend(events.iter().map(|e| e.id.clone().unwrap()));
        messages.extend(events.iter().filter_map(Event::message));
    }
    // The status notifications of both tasks, on their open tasks/result stream or (once
    // that has ended) on the standalone stream.
    while let Ok(Some(e)) = standalone.next_within(Duration::from_millis(300)).await {
        messages.extend(e.message());
        streams.push(e.stream().to_owned());
        ids.push(e.id.unwrap());
    }
    let completed = messages
        .iter()
        .filter(|m| {
            m["method"] == "notifications/tasks/status" && m["params"]["status"] == "completed"
        })
        .count();
    assert_eq!(completed, 2, "{messages:?}");
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "ids repeat: {ids:?}");
    assert_ne!(streams[0], streams[1]);
    assert!(!streams[2..].contains(&streams[0]));
    assert!(!streams[2..].contains(&streams[1]));
}

/// Reconnect with GET + `Last-Event-ID` until the stream ends; every event seen.
async fn follow(c: &Client, mut last: String, retry_expected: bool) -> (Vec<Event>, usize) {
    let mut all = Vec::new();
    let mut reconnects = 0;
    loop {
        let resp = c.get(Some(&last)).await;
        assert_eq!(resp.status, 200, "{resp:?}");
        reconnects += 1;
        let events = resp.sse().rest().await;
        // Clients learn where to resume only from event ids: every connection has one.
        assert!(
            events.first().is_some_and(|e| e.id.is_some()),
            "a connection without an event id: {events:?}"
        );
        let retry = events.last().and_then(|e| e.retry);
        for e in &events {
            if let Some(id) = &e.id {
                last.clone_from(id);
            }
        }
        let finished = events
            .iter()
            .any(|e| e.message().is_some_and(|m| m.get("id").is_some()));
        all.extend(events);
        if finished {
            return (all, reconnects);
        }
        let retry = retry.expect("a connection closed before the response carries `retry`");
        assert!(retry_expected);
        tokio::time::sleep(Duration::from_millis(retry)).await;
    }
}

#[tokio::test]
async fn long_waits_close_with_retry_and_resume() {
    for auth in BOTH {
        long_waits_close_with_retry_and_resume_as(auth).await;
    }
}

async fn long_waits_close_with_retry_and_resume_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &["--sse-hold", "300ms", "--sse-retry", "150ms"]);
    c.initialize().await;
    let task = c.start_task("sleep", json!({"ms": 1500})).await;
    let (id, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let events = resp.sse().rest().await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].is_priming());
    assert_eq!(events[1].retry, Some(150), "{events:?}");
    assert!(events[1].data.is_none() && events[1].id.is_none());

    let (more, reconnects) = follow(&c, events[0].id.clone().unwrap(), true).await;
    assert!(reconnects >= 2, "the wait spans several connections");
    // The response exactly once (the task's status notifications travel there too).
    let msgs = responses(&more);
    assert_eq!(msgs.len(), 1, "the response exactly once: {more:?}");
    check_response("tasks/result", &msgs[0]);
    assert_eq!(msgs[0]["id"], id);
    assert_eq!(msgs[0]["result"]["content"][0]["text"], "slept 1500");
    // Every id seen is unique.
    let ids: Vec<_> = events
        .iter()
        .chain(&more)
        .filter_map(|e| e.id.clone())
        .collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
}

#[tokio::test]
async fn the_standalone_stream_also_closes_with_retry() {
    let server = Server::start(&["--sse-hold", "200ms", "--sse-retry", "100ms"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let events = c.get(None).await.sse().rest().await;
    assert!(events[0].is_priming(), "{events:?}");
    assert_eq!(events.last().unwrap().retry, Some(100));
    // Resuming it with the priming id works and delivers what came meanwhile.
    let task = c.start_task("sleep", json!({"ms": 10})).await;
    c.wait_status(&task, "completed").await;
    let mut sse = c.get(Some(events[0].id.as_deref().unwrap())).await.sse();
    let mut statuses = Vec::new();
    while let Some(e) = sse.next().await {
        if let Some(m) = e.message() {
            statuses.push(m["params"]["status"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(statuses, ["completed"]);
}

#[tokio::test]
async fn every_message_goes_on_exactly_one_stream() {
    for auth in BOTH {
        every_message_goes_on_exactly_one_stream_as(auth).await;
    }
}

async fn every_message_goes_on_exactly_one_stream_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let mut standalone = c.get(None).await.sse();
    assert!(standalone.next().await.unwrap().is_priming());
    let created = c
        .rpc(
            "tools/call",
            json!({
                "name": "progress", "arguments": {"steps": 3, "ms": 50},
                "task": {"ttl": 60_000}, "_meta": {"progressToken": "tok"},
            }),
        )
        .await;
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let on_result: Vec<Value> = resp
        .sse()
        .rest()
        .await
        .iter()
        .filter_map(Event::message)
        .collect();
    let responses: Vec<&Value> = on_result.iter().filter(|m| m.get("id").is_some()).collect();
    assert_eq!(responses.len(), 1, "the response once: {on_result:?}");
    assert_eq!(responses[0]["result"]["content"][0]["text"], "done 3");

    // Each notification on exactly one stream: the open tasks/result, else the standalone.
    let mut all: Vec<Value> = on_result
        .iter()
        .filter(|m| m.get("id").is_none())
        .cloned()
        .collect();
    while let Ok(Some(e)) = standalone.next_within(Duration::from_millis(300)).await {
        all.extend(e.message());
    }
    let mut progress = Vec::new();
    let mut completed = 0;
    for m in &all {
        match m["method"].as_str().unwrap() {
            "notifications/progress" => progress.push(m["params"]["progress"].clone()),
            "notifications/tasks/status" => {
                completed += usize::from(m["params"]["status"] == "completed");
            }
            other => panic!("unexpected {other}"),
        }
    }
    progress.sort_by_key(Value::as_u64);
    assert_eq!(progress, [json!(1), json!(2), json!(3)], "{all:?}");
    assert_eq!(completed, 1, "{all:?}");
    // And nothing is sent twice on the standalone stream either.
    assert!(
        standalone
            .next_within(Duration::from_millis(200))
            .await
            .is_err()
    );
}
