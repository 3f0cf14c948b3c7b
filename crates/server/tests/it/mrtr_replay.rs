//! MRTR across two servers sharing one task store (two replicas of one database, in
//! process): a retry reaching the server that did not park the call re-runs the handler,
//! feeding it the answers the `requestState` carries, in the order it asks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_tasks_core::MemoryStore;
use mcp_tasks_proto::CallToolResult;
use mcp_tasks_server::{MAX_PARKED_PER_REQUESTER, MAX_REQUEST_STATE_BYTES, Server, Tool};
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};

use crate::support::text_of;

/// `form`: asks a name, then a colour, counting its runs.
fn form(runs: Arc<AtomicUsize>) -> Tool {
    Tool::new(
        "form",
        "Asks two things in turn.",
        json!({"type": "object"}),
        move |_args: Value, cx| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let ask = |m: &str| {
                    json!({"mode": "form", "message": m, "requestedSchema":
                        {"type": "object", "properties": {"v": {"type": "string"}}}})
                };
                let name = cx.elicit_raw(ask("Name?")).await?;
                let colour = cx.elicit_raw(ask("Colour?")).await?;
                Ok(CallToolResult::text(format!(
                    "{} likes {}",
                    name["content"]["v"].as_str().unwrap_or("?"),
                    colour["content"]["v"].as_str().unwrap_or("?")
                )))
            }
        },
    )
}

/// `named`: asks a name and a colour at once, under the keys `name` and `colour`.
fn named() -> Tool {
    Tool::new(
        "named",
        "Asks two things at once, by name.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            let ask = |m: &str| {
                json!({"mode": "form", "message": m, "requestedSchema":
                    {"type": "object", "properties": {"v": {"type": "string"}}}})
            };
            let (name, colour) = tokio::try_join!(
                cx.ask("name", "elicitation/create", ask("Name?")),
                cx.ask("colour", "elicitation/create", ask("Colour?")),
            )?;
            Ok(CallToolResult::text(format!(
                "{} likes {}",
                name["content"]["v"].as_str().unwrap_or("?"),
                colour["content"]["v"].as_str().unwrap_or("?")
            )))
        },
    )
}

/// Two servers on one store, and the count of the handler's runs on both.
async fn pair() -> (Wire, Wire, Arc<AtomicUsize>) {
    let store = Arc::new(MemoryStore::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let serve = async |runs: Arc<AtomicUsize>| {
        let server = Server::builder()
            .tools([form(runs), named()])
            .store(store.clone())
            .build()
            .await
            .expect("a server on the store");
        crate::support::wire_to(server)
    };
    (serve(runs.clone()).await, serve(runs.clone()).await, runs)
}

fn caps() -> Value {
    json!({"elicitation": {"form": {}}})
}

fn accept(v: &str) -> Value {
    json!({"action": "accept", "content": {"v": v}})
}

/// The one key of `r`'s `inputRequests`, and its `requestState`.
fn asked(r: &Value, message: &str) -> (String, String) {
    assert_eq!(r["resultType"], "input_required", "{r}");
    let requests = r["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{r}");
    let (key, q) = requests.iter().next().unwrap();
    assert_eq!(q["params"]["message"], message, "{r}");
    (key.clone(), r["requestState"].as_str().unwrap().to_owned())
}

/// Spec (MRTR): "the server processing the retry does not need any information beyond
/// what is directly present in the retry request". Round 1 on A asks the name (q1); the
/// retry on B (which never saw the call) re-runs the handler with the name and gets the
/// colour question (q2); the last retry on A (whose parked call is not the one the state
/// names) re-runs it with both answers and completes. The fast path: the same answers
/// sent back to the server that parked the call go on without re-running.
#[tokio::test]
async fn a_retry_on_another_server_re_runs_the_handler_with_the_recorded_answers() {
    let (mut a, mut b, runs) = pair().await;
    let r = a
        .ok_modern("tools/call", json!({"name": "form"}), caps())
        .await;
    let (k1, s1) = asked(&r, "Name?");
    assert_eq!(k1, "q1");
    let r = b
        .ok_modern(
            "tools/call",
            json!({"name": "form", "requestState": s1, "inputResponses": {k1.clone(): accept("Ada")}}),
            caps(),
        )
        .await;
    let (k2, s2) = asked(&r, "Colour?");
    assert_eq!(k2, "q2");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "B re-ran the handler");
    let done = a
        .ok_modern(
            "tools/call",
            json!({"name": "form", "requestState": s2.clone(), "inputResponses": {k2.clone(): accept("green")}}),
            caps(),
        )
        .await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(text_of(&done), "Ada likes green");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "A re-ran it with both answers"
    );
    // The fast path: B still holds the call s2 names; it goes on without a re-run.
    let done = b
        .ok_modern(
            "tools/call",
            json!({"name": "form", "requestState": s2, "inputResponses": {k2: accept("blue")}}),
            caps(),
        )
        .await;
    assert_eq!(text_of(&done), "Ada likes blue");
    assert_eq!(runs.load(Ordering::SeqCst), 3, "no re-run on the fast path");
}

/// Questions asked under names (`ToolContext::ask`) are the keys of `inputRequests`, and
/// answers are taken by those keys: a retry answering one of two questions gets an
/// `InputRequiredResult` holding only the other (partial fulfilment); a retry of that on
/// another server re-runs the handler with the recorded answer, by key, and completes.
#[tokio::test]
async fn named_questions_are_answered_by_their_keys_one_at_a_time() {
    let (mut a, mut b, _) = pair().await;
    let r = a
        .ok_modern("tools/call", json!({"name": "named"}), caps())
        .await;
    let mut keys: Vec<&String> = r["inputRequests"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["colour", "name"], "{r}");
    let s1 = r["requestState"].as_str().unwrap().to_owned();
    let r = a
        .ok_modern(
            "tools/call",
            json!({"name": "named", "requestState": s1, "inputResponses": {"name": accept("Ada"), "q1": accept("x")}}),
            caps(),
        )
        .await;
    let (k, s2) = asked(&r, "Colour?");
    assert_eq!(k, "colour", "only the unanswered question is asked again");
    let done = b
        .ok_modern(
            "tools/call",
            json!({"name": "named", "requestState": s2, "inputResponses": {"colour": accept("green")}}),
            caps(),
        )
        .await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(text_of(&done), "Ada likes green");
}

/// Spec (MRTR): "servers MUST protect its integrity (e.g. HMAC or AEAD) and MUST reject
/// state that fails verification". An earlier answer altered in the state (re-encoded
/// without the key) is refused with -32602 on both servers, as is a state from a server
/// on another store; a state over `MAX_REQUEST_STATE_BYTES` is refused naming the bound.
#[tokio::test]
async fn a_forged_or_oversized_request_state_is_refused() {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let (mut a, mut b, _) = pair().await;
    let r = a
        .ok_modern("tools/call", json!({"name": "form"}), caps())
        .await;
    let (k1, s1) = asked(&r, "Name?");
    let r = a
        .ok_modern(
            "tools/call",
            json!({"name": "form", "requestState": s1, "inputResponses": {k1: accept("Ada")}}),
            caps(),
        )
        .await;
    let (k2, s2) = asked(&r, "Colour?");
    // Change the recorded name to Eve, keep the tag.
    let parts: Vec<&str> = s2.split('.').collect();
    let mut payload: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(payload["a"]["1"]["r"]["content"]["v"], "Ada", "{payload}");
    payload["a"]["1"]["r"]["content"]["v"] = json!("Eve");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap()),
        parts[2]
    );
    for s in [&mut a, &mut b] {
        let e = s
            .err_modern(
                "tools/call",
                json!({"name": "form", "requestState": forged, "inputResponses": {k2.clone(): accept("red")}}),
                caps(),
            )
            .await;
        assert_eq!(e["code"], -32602, "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("failed verification"),
            "{e}"
        );
    }
    // A server on another store (another key) refuses the genuine state too.
    let (mut other, _, _) = pair().await;
    let e = other
        .err_modern(
            "tools/call",
            json!({"name": "form", "requestState": s2, "inputResponses": {k2.clone(): accept("red")}}),
            caps(),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    // Over the bound: refused before decoding.
    let huge = "x".repeat(MAX_REQUEST_STATE_BYTES + 1);
    let e = b
        .err_modern(
            "tools/call",
            json!({"name": "form", "requestState": huge}),
            caps(),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("{} bytes", MAX_REQUEST_STATE_BYTES + 1))
            && m.contains(&format!("{MAX_REQUEST_STATE_BYTES}-byte bound")),
        "{e}"
    );
}

/// An answer so large that the state carrying it would pass `MAX_REQUEST_STATE_BYTES`:
/// the next question cannot be asked portably, so the call ends with -32602 naming the
/// size and the bound (not a silent truncation).
#[tokio::test]
async fn answers_outgrowing_the_state_bound_end_the_call_with_a_precise_error() {
    let (mut a, _, _) = pair().await;
    let r = a
        .ok_modern("tools/call", json!({"name": "form"}), caps())
        .await;
    let (k1, s1) = asked(&r, "Name?");
    let big = "n".repeat(MAX_REQUEST_STATE_BYTES);
    let e = a
        .err_modern(
            "tools/call",
            json!({"name": "form", "requestState": s1, "inputResponses": {k1: accept(&big)}}),
            caps(),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("requestState of")
            && m.contains(&format!("{MAX_REQUEST_STATE_BYTES}-byte bound")),
        "{e}"
    );
}

/// A handler that is not deterministic up to its questions (its first run elicits, later
/// runs sample): on the re-run the recorded answer (to an `elicitation/create`) is not
/// handed to the `sampling/createMessage` asked in its place; that question is asked
/// afresh, under the same key.
#[tokio::test]
async fn a_re_run_asking_another_method_than_recorded_is_asked_afresh() {
    let runs = Arc::new(AtomicUsize::new(0));
    let fickle = {
        let runs = Arc::clone(&runs);
        Tool::new(
            "fickle",
            "Elicits the first time, samples afterwards.",
            json!({"type": "object"}),
            move |_args: Value, cx| {
                let first = runs.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    let r = if first {
                        cx.elicit_raw(json!({"mode": "form", "message": "Name?",
                            "requestedSchema": {"type": "object", "properties": {}}}))
                            .await?
                    } else {
                        cx.sample_raw(json!({"messages": [], "maxTokens": 5}))
                            .await?
                    };
                    Ok(CallToolResult::text(r.to_string()))
                }
            },
        )
    };
    let store = Arc::new(MemoryStore::new());
    let mut wires = Vec::new();
    for _ in 0..2 {
        let server = Server::builder()
            .tool(fickle.clone())
            .store(store.clone())
            .build()
            .await
            .expect("a server on the store");
        let wire = crate::support::wire_to(server);
        wires.push(wire);
    }
    let caps = json!({"elicitation": {"form": {}}, "sampling": {}});
    let r = wires[0]
        .ok_modern("tools/call", json!({"name": "fickle"}), caps.clone())
        .await;
    let (k1, s1) = asked(&r, "Name?");
    let r = wires[1]
        .ok_modern(
            "tools/call",
            json!({"name": "fickle", "requestState": s1, "inputResponses": {k1: accept("Ada")}}),
            caps,
        )
        .await;
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(
        r["inputRequests"]["q1"]["method"], "sampling/createMessage",
        "{r}"
    );
}

/// A requester past its share of parked calls is not refused: the call is answered with
/// its `InputRequiredResult` all the same (no -32603), only not parked, so its retry
/// re-runs the handler; the calls parked before still go on without a re-run.
#[tokio::test]
async fn past_its_share_a_call_is_answered_unparked_and_its_retry_re_runs() {
    let (mut a, _, runs) = pair().await;
    let mut first = None;
    for n in 0..=MAX_PARKED_PER_REQUESTER {
        let r = a
            .ok_modern(
                "tools/call",
                json!({"name": "form", "arguments": {"n": n}}),
                caps(),
            )
            .await;
        let question = asked(&r, "Name?");
        first.get_or_insert(question.clone());
        if n == MAX_PARKED_PER_REQUESTER {
            let (k, s) = question;
            let r = a
                .ok_modern(
                    "tools/call",
                    json!({"name": "form", "arguments": {"n": n}, "requestState": s,
                        "inputResponses": {k: accept("Ada")}}),
                    caps(),
                )
                .await;
            asked(&r, "Colour?");
        }
    }
    let calls = MAX_PARKED_PER_REQUESTER + 1;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        calls + 1,
        "the unparked call re-ran"
    );
    let (k, s) = first.unwrap();
    let r = a
        .ok_modern(
            "tools/call",
            json!({"name": "form", "arguments": {"n": 0}, "requestState": s,
                "inputResponses": {k: accept("Bo")}}),
            caps(),
        )
        .await;
    asked(&r, "Colour?");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        calls + 1,
        "a parked call goes on"
    );
}
