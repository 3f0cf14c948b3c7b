//! 2026-07-28 multi round-trip requests across three replicas on one PostgreSQL database
//! behind the round-robin proxy (issues 17 and 18, `docs/adr/0005-two-generations.md`):
//! a direct `tools/call` answered `input_required` by one replica completes when its retry
//! reaches another, which re-runs the handler with the answers the `requestState`
//! carries; a state altered by the client is refused by every replica.

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::http_common::Client;
use crate::replicas::Cluster;

/// Post a 2026-07-28 `tools/call` of `summarize` (`extra` merged into its params) with
/// the sampling capability; the JSON-RPC response.
async fn summarize(c: &Client, id: i64, extra: Value) -> Value {
    let mut params = json!({
        "name": "summarize",
        "arguments": {"text": "a long text"},
        "_meta": mcp_tasks_testkit::wire::modern_meta(json!({"sampling": {}})),
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let r = c
        .post_with(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "summarize"),
            ],
            body.to_string().as_bytes(),
        )
        .await;
    assert!(r.status == 200 || r.status == 400, "{r:?}");
    let v = r.json().await;
    assert_eq!(v["id"], json!(id), "{v}");
    v
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "model": "m", "stopReason": "endTurn",
           "content": {"type": "text", "text": text}})
}

/// The key of the one sampling request of an `input_required` result, and its state.
fn asked(r: &Value) -> (String, String) {
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required", "{r}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{r}");
    let (key, q) = requests.iter().next().unwrap();
    assert_eq!(q["method"], "sampling/createMessage", "{r}");
    (
        key.clone(),
        result["requestState"].as_str().unwrap().to_owned(),
    )
}

/// Spec (MRTR): "Note that the requests in each step are completely independent: the
/// server processing the retry does not need any information beyond what is directly
/// present in the retry request." The first request reaches replica A (0), the retry B
/// (1), which never saw the call: it completes with the answer. The same through the
/// round-robin proxy (the retry lands on the next replica).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_on_another_replica_completes_the_call() {
    let cluster = Cluster::start(&[]).await;
    let alice = cluster.client("tok-alice");
    let (a, b) = (cluster.at(0, &alice), cluster.at(1, &alice));
    let (key, state) = asked(&summarize(&a, 1, json!({})).await);
    assert_eq!(key, "q1");
    let at = Instant::now();
    let done = summarize(
        &b,
        2,
        json!({"requestState": state, "inputResponses": {key: sampled("one line")}}),
    )
    .await;
    eprintln!(
        "retry on B (re-run of the handler) answered in {:?}",
        at.elapsed()
    );
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "one line", "{done}");
    // Through the proxy: each request goes to the next replica.
    let (key, state) = asked(&summarize(&alice, 3, json!({})).await);
    let done = summarize(
        &alice,
        4,
        json!({"requestState": state, "inputResponses": {key: sampled("via the proxy")}}),
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "via the proxy",
        "{done}"
    );
}

/// Spec (MRTR): "servers MUST treat `requestState` as an attacker-controlled input ... and
/// MUST reject state that fails verification". A state issued by A whose payload the
/// client altered (the bound arguments' digest swapped for another call's) is refused
/// with -32602 by every replica; another principal's genuine state does not carry its
/// answers over (bob's call starts afresh).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_request_state_is_rejected_on_every_replica() {
    let cluster = Cluster::start(&[]).await;
    let alice = cluster.client("tok-alice");
    let (key, state) = asked(&summarize(&cluster.at(0, &alice), 1, json!({})).await);
    let parts: Vec<&str> = state.split('.').collect();
    assert_eq!(parts.len(), 3, "{state}");
    let mut payload: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    payload["a"] = json!({"1": {"m": "sampling/createMessage", "r": sampled("forged")}});
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap()),
        parts[2]
    );
    for i in 0..3 {
        let r = summarize(
            &cluster.at(i, &alice),
            10,
            json!({"requestState": forged, "inputResponses": {}}),
        )
        .await;
        assert_eq!(r["error"]["code"], -32602, "replica {i}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("failed verification"),
            "{r}"
        );
    }
    // Bob presents alice's genuine state with an answer: not honoured, asked afresh.
    let bob = cluster.client("tok-bob");
    let r = summarize(
        &cluster.at(2, &bob),
        11,
        json!({"requestState": state, "inputResponses": {key: sampled("bob's")}}),
    )
    .await;
    let (_, bobs) = asked(&r);
    assert_ne!(bobs, state);
}
