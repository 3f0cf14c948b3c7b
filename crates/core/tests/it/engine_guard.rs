//! The engine under a [`Guard`]: rate limits refuse and change nothing, suspicious
//! patterns are counted, every audited event is one JSON line; and the bound on the
//! requests a task may have waiting (issue 20).
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_core::audit::Audit;
use mcp_tasks_core::engine::{Classifier, TaskRun, TaskSpec};
use mcp_tasks_core::rate::{RateLimitConfig, Watch};
use mcp_tasks_core::{
    EngineError, Guard, MemoryStore, Policy, Requester, RequestorChannel, SystemClock, TaskEngine,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{ErrorObject, codes};
use serde_json::{Value, json};

struct Silent;
#[async_trait]
impl RequestorChannel for Silent {
    async fn request(&self, _m: &str, _p: Value) -> Result<Value, ErrorObject> {
        Err(ErrorObject::internal("no requestor"))
    }
    async fn notify(&self, _m: &str, _p: Value) {}
}

fn classify(_: &Value) -> (TaskStatus, Option<String>) {
    (TaskStatus::Completed, None)
}

fn engine(policy: Policy, guard: Option<Guard>) -> TaskEngine {
    let e = TaskEngine::new(Arc::new(MemoryStore::new()), policy, Arc::new(SystemClock));
    if let Some(g) = guard {
        assert!(e.set_guard(g));
    }
    e
}

fn spec(who: &Requester) -> TaskSpec {
    TaskSpec {
        requester: who.clone(),
        method: "tools/call".into(),
        params: json!({"name": "echo"}),
        task_field: json!({}),
        origin: Arc::new(Silent),
        classify: classify as Classifier,
    }
}

fn quick() -> mcp_tasks_core::engine::Runner {
    Box::new(|_run: TaskRun| {
        Box::pin(async move { Ok(json!({"content": []})) })
            as futures::future::BoxFuture<'static, _>
    })
}

fn alice() -> Requester {
    Requester {
        principal: Some("alice".into()),
        session: Some("session-of-alice".into()),
        ..Requester::default()
    }
}

fn bob() -> Requester {
    Requester {
        principal: Some("bob".into()),
        session: Some("session-of-bob".into()),
        ..Requester::default()
    }
}

async fn count(engine: &TaskEngine) -> usize {
    engine
        .list(None, &Requester::local())
        .await
        .unwrap()
        .0
        .len()
}

#[tokio::test]
async fn past_the_create_limit_nothing_is_created_and_others_are_not_affected() {
    let limits: RateLimitConfig = "create=3/h".parse().unwrap();
    let e = engine(
        Policy::default(),
        Some(Guard::new(limits, Watch::default(), Audit::default())),
    );
    for _ in 0..3 {
        e.create(spec(&alice()), quick()).await.unwrap();
    }
    let refused = e.create(spec(&alice()), quick()).await.unwrap_err();
    let EngineError::RateLimited(r) = &refused else {
        panic!("{refused:?}")
    };
    assert!(r.retry_after > Duration::from_secs(60));
    let rpc = refused.to_rpc("Failed to create task");
    assert_eq!(rpc.code, codes::RATE_LIMITED);
    assert_eq!(rpc.data.as_ref().unwrap()["limit"], "create");
    assert_eq!(count(&e).await, 3);
    // Bob's allowance is his own.
    e.create(spec(&bob()), quick()).await.unwrap();
    assert_eq!(count(&e).await, 4);
    let text = e.metrics().render(None, Duration::from_secs(1)).await;
    assert!(
        text.contains("mcp_tasks_rejected_requests_total{reason=\"rate_limited\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn spent_lookup_failures_refuse_lookups_and_the_pattern_is_reported() {
    let limits: RateLimitConfig = "lookup-failures=3/h".parse().unwrap();
    let e = engine(
        Policy::default(),
        Some(Guard::new(
            limits,
            Watch::new(Duration::from_secs(3600), 3),
            Audit::default(),
        )),
    );
    let mine = e
        .create(spec(&alice()), quick())
        .await
        .unwrap()
        .task
        .task_id;
    let foreign = e.create(spec(&bob()), quick()).await.unwrap().task.task_id;
    // Unknown and foreign ids alike: not found, until the allowance is spent...
    for id in ["nope-1", "nope-2", &foreign, "nope-3"] {
        assert!(matches!(
            e.get(id, &alice()).await,
            Err(EngineError::NotFound)
        ));
    }
    // ...then even alice's own task is refused, and bob is not affected.
    let r = e.get(&mine, &alice()).await.unwrap_err();
    assert_eq!(r.to_rpc("").code, codes::RATE_LIMITED, "{r:?}");
    assert!(e.get(&foreign, &bob()).await.is_ok());
    let text = e.metrics().render(None, Duration::from_secs(1)).await;
    assert!(
        text.contains("mcp_tasks_suspicious_patterns_total{pattern=\"failed_lookups\"} 1"),
        "{text}"
    );
    assert!(
        !text.contains("alice"),
        "a principal in the metrics: {text}"
    );
}

#[tokio::test]
async fn over_fast_polls_are_refused_only_with_a_poll_limit() {
    let mut policy = Policy::default();
    policy.poll_interval_ms = 3_600_000;
    let free = engine(policy.clone(), None);
    let id = free
        .create(spec(&alice()), quick())
        .await
        .unwrap()
        .task
        .task_id;
    for _ in 0..50 {
        free.poll(&id, &alice()).await.unwrap();
    }
    let limits: RateLimitConfig = "poll=2/h".parse().unwrap();
    let limited = engine(
        policy,
        Some(Guard::new(limits, Watch::default(), Audit::default())),
    );
    let id = limited
        .create(spec(&alice()), quick())
        .await
        .unwrap()
        .task
        .task_id;
    // The first poll is at the interval; two over-fast ones pass; the next is refused.
    for _ in 0..3 {
        limited.poll(&id, &alice()).await.unwrap();
    }
    let r = limited.poll(&id, &alice()).await.unwrap_err();
    assert_eq!(r.to_rpc("").code, codes::RATE_LIMITED);
    // A plain read (not a poll) is not limited; another requester polls freely.
    limited.get(&id, &alice()).await.unwrap();
    limited.poll(&id, &Requester::local()).await.unwrap();
}

#[tokio::test]
async fn a_task_may_wait_on_a_bounded_number_of_requests() {
    let mut policy = Policy::default();
    policy.max_pending_inputs_per_task = 4;
    let e = engine(policy, None);
    let probe = e.clone();
    let runner: mcp_tasks_core::engine::Runner = Box::new(move |run: TaskRun| {
        Box::pin(async move {
            for _ in 0..4 {
                let ch = Arc::clone(&run.channel);
                tokio::spawn(async move {
                    let _ = ch.request("elicitation/create", json!({})).await;
                });
            }
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while probe.pending_inputs(&run.task_id).len() < 4 {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "requests not queued"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let fifth = run
                .channel
                .request("elicitation/create", json!({}))
                .await
                .unwrap_err();
            let waiting = probe.pending_inputs(&run.task_id).len();
            Ok(json!({"fifth": fifth.message, "waiting": waiting}))
        }) as futures::future::BoxFuture<'static, _>
    });
    let id = e.create(spec(&alice()), runner).await.unwrap().task.task_id;
    let out = tokio::time::timeout(Duration::from_secs(20), e.result(&id, &alice(), None))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(out["waiting"], 4);
    assert!(
        out["fifth"]
            .as_str()
            .unwrap()
            .contains("already waits on 4"),
        "{out}"
    );
}
