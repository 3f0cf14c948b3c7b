//! Plain (non-task) calls and SSE resumption across three replicas on one PostgreSQL
//! database behind the round-robin proxy (issue 17, `docs/adr/0006-replicas.md`): a
//! `tools/call` without `task` runs on the replica its POST reached, and its request's
//! stream lives there; the client's answers and cancellations, and its reconnects, may
//! reach any replica.
//!
//! Each test makes a database of its own (admin URL `MCP_TASKS_TEST_PG`) and drops it.

use std::time::{Duration, Instant};

use crate::http_common::{Client, Sse, check_response};
use crate::replicas::Cluster;
use serde_json::{Value, json};

/// An initialized 2025-11-25 client of the principal of `token`, through the proxy.
async fn initialized(cluster: &Cluster, token: &str) -> Client {
    let mut c = cluster.client(token);
    c.initialize().await;
    c
}

/// A plain `tools/call` of `summarize` on `a`: its id, its SSE stream, and the
/// `sampling/createMessage` request the tool sends on it.
async fn summarize_on(a: &mut Client) -> (i64, Sse, Value) {
    let (call_id, resp) = a
        .request(
            "tools/call",
            json!({"name": "summarize", "arguments": {"text": "a long text"}}),
        )
        .await;
    assert!(resp.is_sse(), "{resp:?}");
    let mut sse = resp.sse();
    let request = loop {
        let e = sse.next().await.expect("A's stream has events");
        if let Some(m) = e
            .message()
            .filter(|m| m["method"] == "sampling/createMessage")
        {
            break m;
        }
    };
    (call_id, sse, request)
}

/// The client's answer to the sampling request `id`: an assistant message of `text`.
fn sampling_answer(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "role": "assistant", "model": "m", "stopReason": "endTurn",
        "content": {"type": "text", "text": text},
    }})
}

/// Spec (transport, resumability): "The server MAY use this header to replay messages
/// that would have been sent after the last event ID, on the stream that was
/// disconnected". The stream of a plain call lives on replica A (0); a GET with one of
/// its event ids reaching B (1) is answered with B's standalone stream (a priming event of
/// stream 0, no replay of anything else), not an error; a task started on A is still
/// read to its outcome on C (2) with `tasks/result`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_last_event_id_gets_a_fresh_stream_and_the_task_outcome_stays_readable() {
    let cluster = Cluster::start(&[]).await;
    let alice = initialized(&cluster, "tok-alice").await;
    let mut a = cluster.at(0, &alice);
    let b = cluster.at(1, &alice);
    let mut c = cluster.at(2, &alice);
    let task = a.start_task("sleep", json!({"ms": 100})).await;
    // A plain call with progress answers on an SSE stream of A's.
    let (_, resp) = a
        .request(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3, "ms": 20},
                   "_meta": {"progressToken": "p"}}),
        )
        .await;
    assert!(resp.is_sse(), "{resp:?}");
    let mut sse = resp.sse();
    let foreign = loop {
        let e = sse.next().await.expect("A's stream has events");
        if e.message().is_some() {
            break e.id.expect("events have ids");
        }
    };
    assert_ne!(
        foreign.split('-').next(),
        Some("0"),
        "a request stream: {foreign}"
    );
    let got = b.get(Some(&foreign)).await;
    assert_eq!(got.status, 200, "GET with A's Last-Event-ID on B: {got:?}");
    assert!(got.is_sse(), "{got:?}");
    let mut fresh = got.sse();
    let first = fresh.next().await.expect("a priming event");
    assert!(first.is_priming(), "{first:?}");
    assert_ne!(
        Some(first.stream()),
        foreign.split('-').next(),
        "B's standalone stream: {first:?}"
    );
    // The task's outcome is in the store: any replica hands it out. Once it is done, so
    // that `tasks/result` answers at once as JSON (a waiting one may answer on an SSE
    // stream: the wake-up across replicas is `replicas_wake`'s and `replicas`' to test).
    c.wait_status(&task, "completed").await;
    let r = c.rpc("tasks/result", json!({"taskId": task})).await;
    check_response("tasks/result", &r);
    assert_eq!(r["result"]["content"][0]["text"], "slept 100", "{r}");
    // A still serves its own streams as before.
    let own = a.get(Some(&foreign)).await;
    assert!(own.status == 200 || own.status == 204, "{own:?}");
}

/// A plain `summarize` (sampling; `ask` requires a task) runs on replica A (0): its
/// `sampling/createMessage` goes out on A's SSE response. The client's answer POSTed to B
/// (1) reaches A (relayed through the store's notification channel) and the call
/// completes with it; the same answer POSTed by another session of the principal to C
/// (2) beforehand is not taken (answers stay within their session, as on one server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_calls_sampling_answered_on_another_replica_reaches_it() {
    let cluster = Cluster::start(&[]).await;
    let alice = initialized(&cluster, "tok-alice").await;
    let other = initialized(&cluster, "tok-alice").await;
    let mut a = cluster.at(0, &alice);
    let b = cluster.at(1, &alice);
    let c_other = cluster.at(2, &other);
    let (call_id, mut sse, request) = summarize_on(&mut a).await;
    let answer = |text: &str| sampling_answer(&request["id"], text);
    // Another session's answer (on C) is ignored.
    let r = c_other.post(&answer("not mine")).await;
    assert_eq!(r.status, 202, "{r:?}");
    let at = Instant::now();
    let r = b.post(&answer("one line")).await;
    assert_eq!(r.status, 202, "{r:?}");
    let result = loop {
        let e = sse.next().await.expect("the call's response on A's stream");
        if let Some(m) = e.message().filter(|m| m["id"] == json!(call_id)) {
            break m;
        }
    };
    eprintln!(
        "answer on B reached the call on A within {:?}",
        at.elapsed()
    );
    check_response("tools/call", &result);
    assert_eq!(
        result["result"]["content"][0]["text"], "one line",
        "{result}"
    );
}

/// Spec (cancellation): "Receivers of cancellation notifications SHOULD: Stop processing
/// the cancelled request". A plain `progress` call runs on replica A (0); the client's
/// `notifications/cancelled` reaches B (1); A stops the tool and ends the call's stream
/// within a second, with no progress after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_received_by_another_replica_stops_a_plain_call() {
    let cluster = Cluster::start(&[]).await;
    let alice = initialized(&cluster, "tok-alice").await;
    let mut a = cluster.at(0, &alice);
    let b = cluster.at(1, &alice);
    let (call_id, resp) = a
        .request(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 400, "ms": 50},
                   "_meta": {"progressToken": "p"}}),
        )
        .await;
    assert!(resp.is_sse(), "{resp:?}");
    let mut sse = resp.sse();
    loop {
        let e = sse.next().await.expect("A's stream has events");
        if e.message()
            .is_some_and(|m| m["method"] == "notifications/progress")
        {
            break;
        }
    }
    let r = b
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": call_id, "reason": "enough"}}),
        )
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let at = Instant::now();
    let mut last_progress = None;
    let mut ended = None;
    while at.elapsed() < Duration::from_secs(3) {
        match sse.next_within(Duration::from_millis(100)).await {
            Ok(None) => {
                ended = Some(at.elapsed());
                break;
            }
            Ok(Some(e)) => {
                if let Some(m) = e.message() {
                    assert_ne!(
                        m["id"],
                        json!(call_id),
                        "a cancelled call is not answered: {m}"
                    );
                    if m["method"] == "notifications/progress" {
                        last_progress = Some(at.elapsed());
                    }
                }
            }
            Err(()) => {}
        }
    }
    eprintln!(
        "cancel on B: A ended the call's stream within {ended:?} (last progress {last_progress:?})"
    );
    let ended = ended.expect("A ends the cancelled call's stream");
    assert!(ended < Duration::from_secs(1), "{ended:?}");
    assert!(
        last_progress.is_none_or(|t| t < Duration::from_millis(500)),
        "progress {last_progress:?} after the cancel"
    );
}

/// A sampling answer far over a notification's payload (PostgreSQL's 8000 bytes) POSTed
/// to B still reaches the plain call on A: B stores it in `relayed_messages` and the
/// notification names the row. An answer over the 1 MiB a relayed message may carry is
/// refused with 400 and a JSON-RPC error saying so (not accepted and lost), and the call
/// keeps waiting for a valid one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_sampling_answer_on_another_replica_reaches_the_call_and_an_oversized_one_is_refused()
 {
    let cluster = Cluster::start(&[]).await;
    let alice = initialized(&cluster, "tok-alice").await;
    let mut a = cluster.at(0, &alice);
    let b = cluster.at(1, &alice);
    let (call_id, mut sse, request) = summarize_on(&mut a).await;
    let answer = |text: &str| sampling_answer(&request["id"], text);
    let huge = "h".repeat(1024 * 1024 + 1);
    let r = b.post(&answer(&huge)).await;
    assert_eq!(r.status, 400, "{r:?}");
    let e = r.json().await;
    let m = e["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        m.contains("another replica") && m.contains("over the 1048576 bytes"),
        "{e}"
    );
    let large = "l".repeat(200_000);
    let at = Instant::now();
    let r = b.post(&answer(&large)).await;
    assert_eq!(r.status, 202, "{r:?}");
    let result = loop {
        let e = sse.next().await.expect("the call's response on A's stream");
        if let Some(m) = e.message().filter(|m| m["id"] == json!(call_id)) {
            break m;
        }
    };
    eprintln!(
        "a 200 KB answer on B reached the call on A within {:?}",
        at.elapsed()
    );
    check_response("tools/call", &result);
    assert_eq!(
        result["result"]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(large.len()),
    );
}

/// Flooding the relay with answers to requests nobody sent blocks no real answer (issue
/// 28): alice's session POSTs to B sixteen 1 MiB answers to ids no replica's copy of it
/// has pending (numbered as the server numbers its requests, and strings), and bob does
/// the same: each is dropped (202, nothing relayed or stored: only an answer to a request
/// pending on some replica is relayed). Her real 200 KB sampling answer, POSTed to B
/// next, still reaches her call on A at once (before, the flood filled her 4 MiB share of
/// `relayed_messages` and the real answer was refused for 30 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_flooding_the_relay_does_not_block_another_clients_large_answer() {
    let cluster = Cluster::start(&[]).await;
    let alice = initialized(&cluster, "tok-alice").await;
    let bob = initialized(&cluster, "tok-bob").await;
    let mut a = cluster.at(0, &alice);
    let b = cluster.at(1, &alice);
    let bob_b = cluster.at(1, &bob);
    let (call_id, mut sse, request) = summarize_on(&mut a).await;
    let mib = "f".repeat(1024 * 1024 - 200);
    let sent = request["id"].as_i64().expect("a numbered request");
    for (who, c) in [("alice", &b), ("bob", &bob_b)] {
        for i in 0..16 {
            let id = if i % 4 == 3 {
                json!(format!("nobody-{i}"))
            } else {
                json!(sent + 1000 + i)
            };
            let r = c.post(&sampling_answer(&id, &mib)).await;
            assert_eq!(
                r.status, 202,
                "{who}'s answer {i} to {id} is dropped: {r:?}"
            );
        }
    }
    let large = "l".repeat(200_000);
    let at = Instant::now();
    let r = b.post(&sampling_answer(&request["id"], &large)).await;
    assert_eq!(r.status, 202, "{r:?}");
    let result = loop {
        let e = tokio::time::timeout(Duration::from_secs(5), sse.next())
            .await
            .expect("the real answer is not blocked")
            .expect("the call's response on A's stream");
        if let Some(m) = e.message().filter(|m| m["id"] == json!(call_id)) {
            break m;
        }
    };
    eprintln!("the real answer reached the call within {:?}", at.elapsed());
    assert_eq!(
        result["result"]["content"][0]["text"]
            .as_str()
            .map(str::len),
        Some(large.len()),
    );
}
