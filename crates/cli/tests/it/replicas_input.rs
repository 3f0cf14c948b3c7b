//! A task's input requests across three replicas on one PostgreSQL database (issue 17):
//! "the tool runs on A, the client's `tasks/result` lands on B: B delivers A's
//! elicitation/sampling request (related-task `_meta`, same ids), and the client's
//! answer, whichever replica it reaches, gets back to A". In 2026-07-28 the same through
//! `tasks/get` (`inputRequests`) and `tasks/update`. See `docs/adr/0006-replicas.md`.
//!
//! Each test makes a database of its own (admin URL `MCP_TASKS_TEST_PG`) and drops it.

use std::time::{Duration, Instant};

use crate::http_common::{check_response, send};
use crate::replicas::Cluster;
use mcp_tasks_client::{
    Client as McpClient, ClientConfig, HttpClientConfig, Revision, RevisionChoice, ServerRequest,
    elicit,
};
use mcp_tasks_testkit::wire::modern_meta;
use serde_json::{Value, json};

const WITHIN: Duration = Duration::from_secs(20);

impl Cluster {
    /// A 2026-07-28 request of the principal of `token` to replica `i`; its response.
    async fn modern(&self, i: usize, token: &str, method: &str, mut params: Value) -> Value {
        params["_meta"] = modern_meta(json!({
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        }));
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut headers: Vec<(String, String)> = vec![
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
            ("MCP-Protocol-Version".into(), "2026-07-28".into()),
            ("Mcp-Method".into(), method.into()),
            ("Authorization".into(), format!("Bearer {token}")),
        ];
        // Spec (streamable HTTP): `Mcp-Name` mirrors `params.name` or `params.taskId`.
        let name = params.get("name").or_else(|| params.get("taskId"));
        if let Some(n) = name.and_then(Value::as_str) {
            headers.push(("Mcp-Name".into(), n.to_owned()));
        }
        let r = send(
            self.replicas[i].addr,
            "POST",
            "/mcp",
            &headers,
            body.to_string().as_bytes(),
        )
        .await;
        assert_eq!(r.status, 200, "{method} on replica {i}: {r:?}");
        r.json().await
    }

    /// `tasks/get` of `task` on replica `i` until `done` holds; the task.
    async fn modern_until(&self, i: usize, task: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WITHIN;
        loop {
            let r = self
                .modern(i, "tok-alice", "tasks/get", json!({"taskId": task}))
                .await;
            let t = r["result"].clone();
            if done(&t) {
                return t;
            }
            assert!(Instant::now() < deadline, "task {task} on replica {i}: {r}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

fn ask_answer(answer: &str) -> Value {
    json!({"action": "accept", "content": {"answer": answer}})
}

/// Spec (SEP-2663): "The `inputRequests` field MUST contain all outstanding requests from
/// the server to the client that need to be fulfilled before the task can proceed", and
/// the client answers them with `tasks/update`. The tool runs on replica A (0);
/// `tasks/get` on B (1) shows A's request; another principal's `tasks/update` on C (2) is
/// refused as on one server; the owner's on C reaches A, and the task completes with the
/// answer, read on B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_input_requests_are_shown_and_answered_on_other_replicas() {
    let cluster = Cluster::start(&[]).await;
    let created = cluster
        .modern(
            0,
            "tok-alice",
            "tools/call",
            json!({"name": "ask", "arguments": {"question": "Which replica?"}}),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();

    let waiting = cluster
        .modern_until(1, &task, |t| {
            t["status"] == "input_required"
                && t["inputRequests"]
                    .as_object()
                    .is_some_and(|m| !m.is_empty())
        })
        .await;
    let requests = waiting["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{waiting}");
    let (key, request) = requests.iter().next().unwrap();
    assert!(key.starts_with("mcp-tasks:"), "{key}");
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Which replica?");
    assert!(
        request["params"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none(),
        "the related-task _meta is 2025-11-25's: {request}"
    );
    // The same key on every replica, A's included.
    let on_a = cluster.modern_until(0, &task, |_| true).await;
    assert_eq!(on_a["inputRequests"], waiting["inputRequests"]);

    // Another principal: the task does not exist for bob, on any replica.
    let update = json!({"taskId": task, "inputResponses": {key.clone(): ask_answer("bob's")}});
    let refused = cluster
        .modern(2, "tok-bob", "tasks/update", update.clone())
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let still = cluster.modern_until(1, &task, |_| true).await;
    assert_eq!(still["status"], "input_required", "{still}");
    assert_eq!(still["inputRequests"], waiting["inputRequests"]);

    let update = json!({"taskId": task, "inputResponses": {key.clone(): ask_answer("from C")}});
    let answered = Instant::now();
    let ack = cluster.modern(2, "tok-alice", "tasks/update", update).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let done = cluster
        .modern_until(1, &task, |t| t["status"] == "completed")
        .await;
    let took = answered.elapsed();
    assert_eq!(done["result"]["content"][0]["text"], "from C", "{done}");
    eprintln!("tasks/update on C to completed read on B: {took:?}");
    // A late answer to the request, now gone, is ignored.
    let late = json!({"taskId": task, "inputResponses": {key.clone(): ask_answer("late")}});
    let ack = cluster.modern(1, "tok-alice", "tasks/update", late).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let again = cluster.modern_until(2, &task, |_| true).await;
    assert_eq!(again["result"]["content"][0]["text"], "from C");
}

/// Our client in 2026-07-28 through the round-robin proxy: its `tools/call`, each
/// `tasks/get` and its `tasks/update` go to the next replica; the `ask` task ends with
/// the answer, whichever replica runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_modern_client_answers_a_task_through_the_proxy() {
    let cluster = Cluster::start(&[]).await;
    let mut http = HttpClientConfig::new(format!("http://{}/mcp", cluster.proxy.addr()));
    http.bearer_token = Some("tok-alice".into());
    let config = ClientConfig::default()
        .with_protocol(RevisionChoice::Fixed(Revision::V2026_07_28))
        .with_elicitation(FixedAnswer);
    let c = McpClient::connect_http(http, config).await.unwrap();
    for i in 0..3 {
        let r = c
            .call_tool("ask", json!({"question": format!("Round {i}?")}))
            .await
            .unwrap();
        assert_eq!(r.text(), format!("answer to Round {i}?"));
    }
    c.close().await;
    let hits = cluster.proxy.hits();
    assert!(
        hits.iter().all(|n| *n > 0),
        "every replica served: {hits:?}"
    );
}

/// Answers every elicitation with "answer to <message>".
struct FixedAnswer;

#[async_trait::async_trait]
impl mcp_tasks_client::ElicitationHandler for FixedAnswer {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, mcp_tasks_proto::ErrorObject> {
        let message = request.message();
        Ok(elicit::accept(
            json!({"answer": format!("answer to {message}")}),
        ))
    }
}

/// Spec (2025-11-25 tasks): "The receiver MUST include the
/// `io.modelcontextprotocol/related-task` metadata in the request to associate it with
/// the task." The tool runs on A (0); the client's `tasks/result` on B (1) carries A's
/// request with its id and related-task `_meta`; another principal's answer POSTed to C
/// (2) is ignored; the owner's answer POSTed to C reaches A, and B's `tasks/result`
/// answers with the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_result_on_another_replica_relays_the_request_and_its_answer() {
    let cluster = Cluster::start(&[]).await;
    let mut alice = cluster.client("tok-alice");
    alice.initialize().await;
    let mut bob = cluster.client("tok-bob");
    bob.initialize().await;
    let task = cluster
        .at(0, &alice)
        .start_task("ask", json!({"question": "Across?"}))
        .await;
    cluster
        .at(2, &alice)
        .wait_status(&task, "input_required")
        .await;

    let mut on_b = cluster.at(1, &alice);
    let (rid, resp) = on_b.request("tasks/result", json!({"taskId": task})).await;
    assert_eq!(resp.status, 200, "{resp:?}");
    assert!(resp.is_sse(), "{resp:?}");
    let mut sse = resp.sse();
    let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Across?");
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str()
    );
    assert!(
        ask["id"].as_str().unwrap().starts_with("mcp-tasks:"),
        "{ask}"
    );

    // Bob's answer, on his own session, is ignored: the task still waits.
    let forged = json!({"jsonrpc": "2.0", "id": ask["id"], "result": ask_answer("bob's")});
    assert_eq!(cluster.at(2, &bob).post(&forged).await.status, 202);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = cluster.at(0, &alice).task(&task).await;
    assert_eq!(t["result"]["status"], "input_required", "{t}");

    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": ask_answer("via C")});
    let posted = Instant::now();
    assert_eq!(cluster.at(2, &alice).post(&answer).await.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    let took = posted.elapsed();
    check_response("tasks/result", &done);
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "via C", "{done}");
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task.as_str()
    );
    eprintln!("answer POSTed to C to B's tasks/result response: {took:?}");
}

/// Our client in 2025-11-25 through the round-robin proxy: the `ask` task's
/// `tasks/result` and the elicitation's answer land on whichever replica comes next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_legacy_client_answers_a_task_through_the_proxy() {
    let cluster = Cluster::start(&[]).await;
    let mut http = HttpClientConfig::new(format!("http://{}/mcp", cluster.proxy.addr()));
    http.bearer_token = Some("tok-alice".into());
    let config = ClientConfig::default()
        .with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25))
        .with_elicitation(FixedAnswer);
    let c = McpClient::connect_http(http, config).await.unwrap();
    for i in 0..3 {
        let r = c
            .call_tool("ask", json!({"question": format!("Legacy {i}?")}))
            .await
            .unwrap();
        assert_eq!(r.text(), format!("answer to Legacy {i}?"));
    }
    c.close().await;
    let hits = cluster.proxy.hits();
    assert!(
        hits.iter().all(|n| *n > 0),
        "every replica served: {hits:?}"
    );
}

/// Without authentication a task's requests belong to the session that created it, on
/// every replica: another session's `tasks/result` on B only waits (it gets no request),
/// another session's answer POSTed to C is ignored, and the creator's answer on C
/// completes the task running on A.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_the_requests_belong_to_the_creating_session_on_every_replica() {
    let cluster = Cluster::start_with(&[], &[]).await;
    let mut creator = cluster.client("unused");
    creator.token = None;
    creator.initialize().await;
    let mut other = creator.fresh();
    other.initialize().await;
    let task = cluster
        .at(0, &creator)
        .start_task("ask", json!({"question": "Whose?"}))
        .await;
    cluster
        .at(1, &creator)
        .wait_status(&task, "input_required")
        .await;

    // Another session's tasks/result on B carries no request.
    let (_, resp) = cluster
        .at(1, &other)
        .request("tasks/result", json!({"taskId": task}))
        .await;
    let mut theirs = resp.sse();
    let mut quiet = Vec::new();
    while let Ok(Some(e)) = theirs.next_within(Duration::from_millis(400)).await {
        quiet.extend(e.message());
    }
    assert!(
        quiet.iter().all(|m| m.get("id").is_none()),
        "another session got the task's request: {quiet:?}"
    );

    let (rid, resp) = cluster
        .at(1, &creator)
        .request("tasks/result", json!({"taskId": task}))
        .await;
    let mut sse = resp.sse();
    let ask = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let forged = json!({"jsonrpc": "2.0", "id": ask["id"], "result": ask_answer("other")});
    assert_eq!(cluster.at(2, &other).post(&forged).await.status, 202);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = cluster.at(2, &creator).task(&task).await;
    assert_eq!(t["result"]["status"], "input_required", "{t}");

    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": ask_answer("mine")});
    assert_eq!(cluster.at(2, &creator).post(&answer).await.status, 202);
    let done = sse.next_non_notification(&mut Vec::new()).await.unwrap();
    assert_eq!(done["id"], rid);
    assert_eq!(done["result"]["content"][0]["text"], "mine", "{done}");
}
