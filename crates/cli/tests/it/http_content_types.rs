//! Which requests are answered `application/json` and which `text/event-stream`: SSE
//! exactly when messages may precede the response (a waiting `tasks/result`, a plain
//! `tools/call` that reports progress or asks), JSON for everything else, `tasks/get`
//! above all.

use crate::http_common;

use http_common::{Auth, BOTH, Client, Server, TOKENS_ENV, check_response, start_as};
use serde_json::json;

#[tokio::test]
async fn task_methods_and_listings_are_json() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-a alice")]);
    let mut c = Client::new(&server).with_token("tok-a");
    c.initialize().await; // asserts JSON
    c.rpc("tools/list", json!({})).await;
    c.rpc("ping", json!({})).await;
    // The CreateTaskResult.
    let task = c.start_task("sleep", json!({"ms": 60_000})).await;
    // tasks/get on a working task: JSON, however often it is polled.
    for _ in 0..3 {
        let m = c.task(&task).await;
        assert_eq!(m["result"]["status"], "working");
    }
    let list = c.rpc("tasks/list", json!({})).await;
    assert_eq!(list["result"]["tasks"][0]["taskId"], task.as_str());
    let cancelled = c.rpc("tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    // Errors too.
    let missing = c.rpc("tasks/get", json!({"taskId": "no-such-task"})).await;
    assert!(missing["error"]["code"].is_i64());
}

#[tokio::test]
async fn tasks_result_streams_while_waiting_and_is_json_when_terminal() {
    for auth in BOTH {
        tasks_result_streams_while_waiting_and_is_json_when_terminal_as(auth).await;
    }
}

async fn tasks_result_streams_while_waiting_and_is_json_when_terminal_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    let task = c.start_task("sleep", json!({"ms": 400})).await;
    let (id, resp) = c.request("tasks/result", json!({"taskId": task})).await;
    assert_eq!(resp.status, 200);
    assert!(resp.is_sse(), "a waiting tasks/result streams: {resp:?}");
    assert_eq!(resp.header("cache-control"), Some("no-cache"));
    let events = resp.sse().rest().await;
    // The response (after the task's status notifications, which travel here too).
    let msgs = http_common::responses(&events);
    assert_eq!(msgs.len(), 1, "{events:?}");
    check_response("tasks/result", &msgs[0]);
    assert_eq!(msgs[0]["id"], id);
    assert_eq!(msgs[0]["result"]["content"][0]["text"], "slept 400");

    // Terminal now: a plain JSON answer, the same result.
    let again = c.rpc("tasks/result", json!({"taskId": task})).await;
    assert_eq!(again["result"], msgs[0]["result"]);
    // A failed task's JSON-RPC error, as JSON.
    let failing = c
        .start_task("error", json!({"message": "boom", "code": -32042}))
        .await;
    c.wait_status(&failing, "failed").await;
    let err = c.rpc("tasks/result", json!({"taskId": failing})).await;
    assert_eq!(err["error"]["code"], -32042);
    assert_eq!(err["error"]["message"], "boom");
}

#[tokio::test]
async fn plain_calls_stream_only_when_something_precedes_the_response() {
    for auth in BOTH {
        plain_calls_stream_only_when_something_precedes_the_response_as(auth).await;
    }
}

async fn plain_calls_stream_only_when_something_precedes_the_response_as(auth: Auth) {
    let (_server, mut c) = start_as(auth, &[]);
    c.initialize().await;
    // No progress, no input: JSON.
    let echo = c
        .rpc(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": "e"}}),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "hi");
    // Progress before the response: SSE, progress first, the response last.
    let (id, resp) = c
        .request(
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3, "ms": 30}, "_meta": {"progressToken": "p"}}),
        )
        .await;
    assert!(resp.is_sse(), "{resp:?}");
    let events = resp.sse().rest().await;
    assert!(events[0].is_priming(), "{events:?}");
    let msgs: Vec<_> = events.iter().filter_map(|e| e.message()).collect();
    assert_eq!(msgs.len(), 4, "{msgs:?}");
    for (i, m) in msgs[..3].iter().enumerate() {
        assert_eq!(m["method"], "notifications/progress");
        assert_eq!(m["params"]["progressToken"], "p");
        assert_eq!(m["params"]["progress"], i + 1);
    }
    check_response("tools/call", &msgs[3]);
    assert_eq!(msgs[3]["id"], id);
    assert_eq!(msgs[3]["result"]["content"][0]["text"], "done 3");
}

#[tokio::test]
async fn a_plain_call_that_asks_streams_its_question() {
    // With tasks off, `ask` runs as a plain call and asks on the call's own stream.
    let server = Server::start(&["--no-tasks"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let (id, resp) = c
        .request(
            "tools/call",
            json!({"name": "ask", "arguments": {"question": "Name?"}}),
        )
        .await;
    assert!(resp.is_sse(), "{resp:?}");
    let mut sse = resp.sse();
    assert!(sse.next().await.unwrap().is_priming());
    let ask = sse.next().await.unwrap().message().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "Ada"}}}))
        .await;
    assert_eq!(r.status, 202);
    let done = sse.next().await.unwrap().message().unwrap();
    check_response("tools/call", &done);
    assert_eq!(done["id"], id);
    assert_eq!(done["result"]["content"][0]["text"], "Ada");
    assert!(
        sse.next().await.is_none(),
        "the stream ends after the response"
    );
}

#[tokio::test]
async fn accept_header_is_honoured() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let task = c.start_task("sleep", json!({"ms": 300})).await;
    // A client that takes JSON only gets JSON even for a waiting tasks/result.
    let body =
        json!({"jsonrpc": "2.0", "id": 50, "method": "tasks/result", "params": {"taskId": task}});
    let r = c
        .post_with(
            &[("Accept", "application/json")],
            body.to_string().as_bytes(),
        )
        .await;
    assert!(r.is_json(), "{r:?}");
    let m = r.json().await;
    assert_eq!(m["result"]["content"][0]["text"], "slept 300");
    // One that takes neither is refused.
    let r = c
        .post_with(&[("Accept", "text/html")], body.to_string().as_bytes())
        .await;
    assert_eq!(r.status, 406);
}
