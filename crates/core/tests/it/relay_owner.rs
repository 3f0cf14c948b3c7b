//! The requests a task relays through `tasks/result` belong to the requester that created
//! the task: only it receives them and only its answers count (issue 15, item 2).
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::engine::{Classifier, TaskRun, TaskSpec};
use mcp_tasks_core::{
    MemoryStore, Policy, RequestSender, Requester, RequestorChannel, SystemClock, TaskEngine,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{ErrorObject, RequestId};
use serde_json::{Value, json};
use tokio::sync::mpsc;

struct Silent;
#[async_trait]
impl RequestorChannel for Silent {
    async fn request(&self, _m: &str, _p: Value) -> Result<Value, ErrorObject> {
        Err(ErrorObject::internal("no requestor"))
    }
    async fn notify(&self, _m: &str, _p: Value) {}
}

/// A `tasks/result` stream that records the requests it carries.
struct Recorder(mpsc::UnboundedSender<RequestId>);
#[async_trait]
impl RequestSender for Recorder {
    async fn send_request(&self, id: RequestId, _m: &str, _p: Value) -> Result<(), ErrorObject> {
        let _ = self.0.send(id);
        Ok(())
    }
    fn is_own_stream(&self) -> bool {
        true
    }
}

fn classify(_: &Value) -> (TaskStatus, Option<String>) {
    (TaskStatus::Completed, None)
}

fn session(id: &str) -> Requester {
    Requester {
        session: Some(id.into()),
        ..Requester::default()
    }
}

fn principal(p: &str, session_id: &str) -> Requester {
    Requester {
        principal: Some(p.into()),
        session: Some(session_id.into()),
        ..Requester::default()
    }
}

/// An engine with one task of `owner` that asks once and returns the answer.
async fn asking_task(owner: &Requester) -> (TaskEngine, String) {
    let engine = TaskEngine::new(
        Arc::new(MemoryStore::new()),
        Policy::default(),
        Arc::new(SystemClock),
    );
    let spec = TaskSpec {
        requester: owner.clone(),
        method: "tools/call".into(),
        params: json!({"name": "ask"}),
        task_field: json!({}),
        origin: Arc::new(Silent),
        classify: classify as Classifier,
    };
    let runner = Box::new(|run: TaskRun| {
        Box::pin(async move { run.channel.request("elicitation/create", json!({})).await })
            as futures::future::BoxFuture<'static, _>
    });
    let rec = engine.create(spec, runner).await.unwrap();
    (engine, rec.task.task_id)
}

type Waiting = tokio::task::JoinHandle<Value>;

/// `tasks/result` of `who` with a recording stream.
fn wait_result(
    engine: &TaskEngine,
    task: &str,
    who: &Requester,
) -> (Waiting, mpsc::UnboundedReceiver<RequestId>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (engine, task, who) = (engine.clone(), task.to_owned(), who.clone());
    let h = tokio::spawn(async move {
        engine
            .result(&task, &who, Some(Arc::new(Recorder(tx))))
            .await
            .unwrap()
            .unwrap()
    });
    (h, rx)
}

async fn next_request(rx: &mut mpsc::UnboundedReceiver<RequestId>) -> RequestId {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a request within 5 s")
        .unwrap()
}

#[tokio::test]
async fn without_a_principal_only_the_creating_session_receives_and_answers() {
    let owner = session("s-1");
    let (engine, task) = asking_task(&owner).await;

    // Another session can wait for the outcome but gets no request.
    let (other, mut other_rx) = wait_result(&engine, &task, &session("s-2"));
    let (mine, mut rx) = wait_result(&engine, &task, &owner);
    let id = next_request(&mut rx).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(200), other_rx.recv())
            .await
            .is_err(),
        "a session that did not create the task got its request"
    );

    let answer = || Ok(json!({"action": "accept"}));
    assert_eq!(engine.failed_lookups(), 0);
    assert!(!engine.deliver_answer(&id, &session("s-2"), answer()));
    assert!(!engine.deliver_answer(&id, &principal("mallory", "s-1"), answer()));
    assert!(!engine.deliver_answer(&id, &Requester::default(), answer()));
    assert_eq!(engine.failed_lookups(), 3);
    assert!(engine.deliver_answer(&id, &owner, Ok(json!({"action": "decline"}))));
    // Answered: a second answer finds nothing (and is no failed lookup).
    assert!(!engine.deliver_answer(&id, &owner, answer()));
    assert_eq!(engine.failed_lookups(), 3);

    let mut done = mine.await.unwrap();
    done.as_object_mut().unwrap().remove("_meta");
    assert_eq!(done, json!({"action": "decline"}));
    assert_eq!(other.await.unwrap()["action"], "decline");
}

#[tokio::test]
async fn with_a_principal_any_of_its_sessions_answers_and_no_other_principal() {
    let owner = principal("alice", "s-1");
    let (engine, task) = asking_task(&owner).await;
    // A second session of alice's receives the request.
    let (mine, mut rx) = wait_result(&engine, &task, &principal("alice", "s-2"));
    let id = next_request(&mut rx).await;
    assert!(!engine.deliver_answer(&id, &principal("bob", "s-1"), Ok(json!(1))));
    assert!(!engine.deliver_answer(&id, &session("s-1"), Ok(json!(2))));
    assert_eq!(engine.failed_lookups(), 2);
    assert!(engine.deliver_answer(&id, &principal("alice", "s-3"), Ok(json!({"n": 3}))));
    assert_eq!(mine.await.unwrap()["n"], 3);
}

#[tokio::test]
async fn the_local_stdio_peer_answers_everything() {
    let (engine, task) = asking_task(&session("s-1")).await;
    let (mine, mut rx) = wait_result(&engine, &task, &Requester::local());
    let id = next_request(&mut rx).await;
    assert!(engine.deliver_answer(&id, &Requester::local(), Ok(json!({"n": 1}))));
    assert_eq!(mine.await.unwrap()["n"], 1);
}
