//! `input_required` over HTTP: the task's elicitation/sampling request travels on the
//! requestor's open `tasks/result` stream and its answer arrives as a separate POST
//! (202), on any session of the same principal.

mod http_common;

use http_common::{Client, Server, TOKENS_ENV, check_response};
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
    let ask = sse.next().await.unwrap().message().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Proceed?");
    assert_eq!(s2.task(&task).await["result"]["status"], "input_required");

    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"answer": "yes"}}});
    let r = s2.post(&answer).await;
    assert_eq!(r.status, 202);
    assert!(r.bytes().await.is_empty());

    let done = sse.next().await.unwrap().message().unwrap();
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
async fn a_sampling_request_waits_for_a_result_stream_then_is_answered() {
    let server = Server::start(&[]);
    let mut creator = Client::new(&server);
    creator.initialize().await;
    let task = creator
        .start_task("summarize", json!({"text": "A long story about tasks."}))
        .await;
    // Nobody reads yet: the task waits in input_required.
    creator.wait_status(&task, "input_required").await;

    // Another session (without auth the id is the capability) fetches the result and
    // gets the queued request on its stream.
    let mut reader = Client::new(&server);
    reader.initialize().await;
    let (rid, resp) = reader
        .request("tasks/result", json!({"taskId": task}))
        .await;
    assert!(resp.is_sse());
    let mut sse = resp.sse();
    assert!(sse.next().await.unwrap().is_priming());
    let req: Value = sse.next().await.unwrap().message().unwrap();
    assert_eq!(req["method"], "sampling/createMessage");

    // Answered from a third session.
    let mut answerer = Client::new(&server);
    answerer.initialize().await;
    let r = answerer
        .post(&json!({"jsonrpc": "2.0", "id": req["id"], "result": {
            "role": "assistant", "model": "test-model",
            "content": {"type": "text", "text": "Tasks, briefly."},
        }}))
        .await;
    assert_eq!(r.status, 202);
    let done = sse.next().await.unwrap().message().unwrap();
    check_response("tasks/result", &done);
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "Tasks, briefly.");
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
        sse.next().await.unwrap();
        let ask = sse.next().await.unwrap().message().unwrap();
        let mut msg = json!({"jsonrpc": "2.0", "id": ask["id"]});
        msg.as_object_mut()
            .unwrap()
            .extend(answer.as_object().unwrap().clone());
        assert_eq!(c.post(&msg).await.status, 202);
        let done = sse.next().await.unwrap().message().unwrap();
        if expect.is_null() {
            assert_eq!(done["error"]["message"], "no UI here", "{done}");
        } else {
            assert_eq!(done["result"]["content"][0]["text"], expect);
        }
    }
}
