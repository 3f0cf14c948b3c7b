//! `input_required` over HTTP: the task's elicitation/sampling request travels on the
//! requestor's open `tasks/result` stream and its answer arrives as a separate POST
//! (202), on any session of the same principal; without authentication only on the
//! session that created the task. Another requester's answer is ignored.

use crate::http_common;

use http_common::{Auth, BOTH, Client, Server, TOKENS_ENV, check_response, start_as};
use std::time::Duration;

use serde_json::{Value, json};

#[tokio::test]
async fn an_elicitation_answered_from_another_session_of_the_principal() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-1 alice;tok-2 alice")]);
    let mut s1 = Client::new(&server).with_token("tok-1");
    s1.initialize().await;
    let mut s2 = Client::new(&server).with_token("tok-2");
    s2.initialize().await;

    let task = s1.start_task("ask", json!({"question": "Proceed?"})).await;
    let (rid, resp) = s1.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    assert!(sse.next().await.unwrap().is_priming());
    let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Proceed?");
    assert_eq!(s2.task(&task).await["result"]["status"], "input_required");

    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"answer": "yes"}}});
    let r = s2.post(&answer).await;
    assert_eq!(r.status, 202);
    assert!(r.bytes().await.is_empty());

    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    check_response("tasks/result", &done);
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "yes");
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str()
    );
    assert_eq!(sse.next().await, None);
    assert_eq!(s1.task(&task).await["result"]["status"], "completed");
}

#[tokio::test]
async fn a_sampling_request_waits_for_the_creators_result_stream_then_is_answered() {
    let server = Server::start(&[]);
    let mut creator = Client::new(&server);
    creator.initialize().await;
    let task = creator
        .start_task("summarize", json!({"text": "A long story about tasks."}))
        .await;
    // Nobody reads yet: the task waits in input_required.
    creator.wait_status(&task, "input_required").await;

    // Another session (without auth the id is the capability to read the result) waits
    // for the outcome but is not the requestor: it gets no request.
    let mut reader = Client::new(&server);
    reader.initialize().await;
    let (other_rid, resp) = reader
        .request("tasks/result", json!({"taskId": task}))
        .await;
    assert!(resp.is_sse());
    let mut other = resp.sse();
    let mut quiet = Vec::new();
    while let Ok(Some(e)) = other.next_within(Duration::from_millis(400)).await {
        quiet.extend(e.message());
    }
    assert!(
        quiet.iter().all(|m| m.get("id").is_none()),
        "a session that did not create the task got its request: {quiet:?}"
    );

    // The creator's tasks/result carries it.
    let (rid, resp) = creator
        .request("tasks/result", json!({"taskId": task}))
        .await;
    let mut sse = resp.sse();
    let req = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(req["method"], "sampling/createMessage");

    // An answer from another session is ignored: the task still waits for input.
    let forged = json!({"jsonrpc": "2.0", "id": req["id"], "result": {
        "role": "assistant", "model": "test-model",
        "content": {"type": "text", "text": "Forged."},
    }});
    assert_eq!(reader.post(&forged).await.status, 202);
    assert_eq!(
        creator.task(&task).await["result"]["status"],
        "input_required"
    );

    let r = creator
        .post(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "model": "test-model",
            "content": {"type": "text", "text": "Tasks, briefly."},
        }}))
        .await;
    assert_eq!(r.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    check_response("tasks/result", &done);
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "Tasks, briefly.");
    let theirs = other.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(theirs["id"], other_rid);
    assert_eq!(theirs["result"]["content"][0]["text"], "Tasks, briefly.");
}

#[tokio::test]
async fn a_declined_elicitation_and_an_error_answer() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    for (answer, expect) in [
        (json!({"result": {"action": "decline"}}), json!("(decline)")),
        (
            json!({"error": {"code": -32600, "message": "no UI here"}}),
            Value::Null,
        ),
    ] {
        let task = c.start_task("ask", json!({"question": "?"})).await;
        let (_, resp) = c.request("tasks/result", json!({"taskId": task})).await;
        let mut sse = resp.sse();
        let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
        let mut msg = json!({"jsonrpc": "2.0", "id": ask["id"]});
        msg.as_object_mut()
            .unwrap()
            .extend(answer.as_object().unwrap().clone());
        assert_eq!(c.post(&msg).await.status, 202);
        let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
        if expect.is_null() {
            assert_eq!(done["error"]["message"], "no UI here", "{done}");
        } else {
            assert_eq!(done["result"]["content"][0]["text"], expect);
        }
    }
}

/// An `ask` answer (`elicitation/create` result) with `answer`.
fn accept(id: &Value, answer: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id,
        "result": {"action": "accept", "content": {"answer": answer}}})
}

#[tokio::test]
async fn an_answer_from_another_principal_is_ignored() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-a alice;tok-b bob")]);
    let mut alice = Client::new(&server).with_token("tok-a");
    alice.initialize().await;
    let mut bob = Client::new(&server).with_token("tok-b");
    bob.initialize().await;

    let task = alice
        .start_task("ask", json!({"question": "Deploy?"}))
        .await;
    let (rid, resp) = alice.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    // The id carries an unpredictable part: mcp-tasks:<taskId>:<n>:<32 hex digits>.
    let id = ask["id"].as_str().unwrap();
    let random = id
        .strip_prefix(&format!("mcp-tasks:{task}:1:"))
        .unwrap_or_else(|| panic!("unexpected request id {id}"));
    assert!(
        random.len() == 32 && random.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );

    // Bob learnt the id somehow: his answer is ignored, also under the old guessable id.
    assert_eq!(bob.post(&accept(&ask["id"], "bob")).await.status, 202);
    let guessed = json!(format!("mcp-tasks:{task}:1"));
    assert_eq!(bob.post(&accept(&guessed, "bob")).await.status, 202);
    assert_eq!(
        alice.task(&task).await["result"]["status"],
        "input_required"
    );

    assert_eq!(alice.post(&accept(&ask["id"], "alice")).await.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    check_response("tasks/result", &done);
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "alice");
}

/// Plain (non-task) calls: the server's request waits in the session's own pending map,
/// which only that session's answers reach, whatever their principal.
#[tokio::test]
async fn a_plain_call_s_request_is_answered_only_on_its_own_session() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-1 alice;tok-2 alice;tok-b bob")]);
    let mut s1 = Client::new(&server).with_token("tok-1");
    s1.initialize().await;
    let mut s2 = Client::new(&server).with_token("tok-2");
    s2.initialize().await;
    let mut bob = Client::new(&server).with_token("tok-b");
    bob.initialize().await;

    let (rid, resp) = s1
        .request(
            "tools/call",
            json!({"name": "summarize", "arguments": {"text": "A plain call."}}),
        )
        .await;
    let mut sse = resp.sse();
    let req = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(req["method"], "sampling/createMessage");
    let sampled = |text: &str| {
        json!({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "model": "test-model",
            "content": {"type": "text", "text": text},
        }})
    };
    for other in [&s2, &bob] {
        assert_eq!(other.post(&sampled("Forged.")).await.status, 202);
    }
    assert_eq!(s1.post(&sampled("Genuine.")).await.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    check_response("tools/call", &done);
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "Genuine.");
}

#[tokio::test]
async fn a_new_tasks_result_gets_the_pending_elicitation_again_after_a_dropped_stream() {
    for auth in BOTH {
        a_new_tasks_result_gets_the_pending_elicitation_again_as(auth).await;
    }
}

async fn a_new_tasks_result_gets_the_pending_elicitation_again_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let task = c.start_task("ask", json!({"question": "Again?"})).await;
    let (_, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut first = resp.sse();
    let ask = first.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    // The client leaves the stream without resuming it.
    drop(first);

    let (rid, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut second = resp.sse();
    let again = second.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(
        again["id"], ask["id"],
        "sent again with the same id ({auth:?})"
    );
    assert_eq!(again["params"], ask["params"]);

    assert_eq!(c.post(&accept(&ask["id"], "twice")).await.status, 202);
    let done = second.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "twice");
}

#[tokio::test]
async fn a_json_only_tasks_result_pushes_no_request_to_the_get_stream() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let mut get = c.get(None).await.sse();
    let task = c.start_task("ask", json!({"question": "JSON?"})).await;
    c.wait_status(&task, "input_required").await;

    let body =
        json!({"jsonrpc": "2.0", "id": 900, "method": "tasks/result", "params": {"taskId": task}});
    let json_only = {
        let c = c.clone();
        tokio::spawn(async move {
            let r = c
                .post_with(
                    &[("Accept", "application/json")],
                    body.to_string().as_bytes(),
                )
                .await;
            assert!(r.is_json(), "{r:?}");
            r.json().await
        })
    };
    let mut on_get = Vec::new();
    while let Ok(Some(e)) = get.next_within(Duration::from_millis(500)).await {
        on_get.extend(e.message());
    }
    assert!(
        on_get.iter().all(|m| m.get("id").is_none()),
        "a request went to the GET stream: {on_get:?}"
    );

    // The next tasks/result with a stream carries it.
    let (rid, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    let mut sse = resp.sse();
    let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(c.post(&accept(&ask["id"], "streamed")).await.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "streamed");
    let j = json_only.await.unwrap();
    check_response("tasks/result", &j);
    assert_eq!(j["id"], 900);
    assert_eq!(j["result"]["content"][0]["text"], "streamed");
}
