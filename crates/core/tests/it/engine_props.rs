//! Property tests: random interleavings of complete / fail / cancel / expire / get / result
//! against the engine and the in-memory store.
//!
//! Invariants: no illegal transition is ever observed, terminal states never change, every
//! waiter wakes, and no outcome is lost or altered.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use mcp_tasks_core::engine::{Classifier, TaskRun, TaskSpec};
use mcp_tasks_core::status::can_transition;
use mcp_tasks_core::{Clock, MemoryStore, Policy, Requester, TaskEngine};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{ErrorObject, codes};
use mcp_tasks_testkit::NoRequestor;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::sync::oneshot;

struct ManualClock(AtomicI64);
impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

fn classify(v: &Value) -> (TaskStatus, Option<String>) {
    if v.get("isError") == Some(&Value::Bool(true)) {
        (TaskStatus::Failed, Some("tool error".into()))
    } else {
        (TaskStatus::Completed, None)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Complete(usize),
    IsError(usize),
    Fail(usize),
    Cancel(usize),
    Advance(u16),
    Get(usize),
    Wait(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..6usize).prop_map(Op::Complete),
        (0..6usize).prop_map(Op::IsError),
        (0..6usize).prop_map(Op::Fail),
        (0..6usize).prop_map(Op::Cancel),
        (0..400u16).prop_map(Op::Advance),
        (0..6usize).prop_map(Op::Get),
        (0..6usize).prop_map(Op::Wait),
    ]
}

type Waited = Result<Result<Value, ErrorObject>, mcp_tasks_core::EngineError>;

/// What a task's runner will produce when told to finish.
enum Finish {
    Ok(Value),
    Err(ErrorObject),
}

struct Harness {
    engine: TaskEngine,
    clock: Arc<ManualClock>,
    ids: Vec<String>,
    triggers: Vec<Option<oneshot::Sender<Finish>>>,
    /// The outcome each task was told to produce first (what must be stored if it won).
    produced: HashMap<usize, Result<Value, ErrorObject>>,
    cancelled_ok: HashMap<usize, bool>,
    last_seen: HashMap<usize, TaskStatus>,
    waiters: Vec<(usize, tokio::task::JoinHandle<Waited>)>,
}

impl Harness {
    async fn new(n: usize, ttl: u64) -> Self {
        let clock = Arc::new(ManualClock(AtomicI64::new(1_000_000)));
        let mut policy = Policy::default();
        policy.default_ttl_ms = Some(ttl);
        let engine = TaskEngine::new(Arc::new(MemoryStore::new()), policy, clock.clone());
        let mut ids = Vec::new();
        let mut triggers = Vec::new();
        for _ in 0..n {
            let (tx, rx) = oneshot::channel::<Finish>();
            let spec = TaskSpec {
                requester: Requester::local(),
                method: "tools/call".into(),
                params: json!({"name": "t"}),
                task_field: json!({}),
                origin: Arc::new(NoRequestor),
                classify: classify as Classifier,
            };
            let runner = Box::new(move |_run: TaskRun| {
                Box::pin(async move {
                    match rx.await {
                        Ok(Finish::Ok(v)) => Ok(v),
                        Ok(Finish::Err(e)) => Err(e),
                        Err(_) => std::future::pending().await,
                    }
                }) as futures::future::BoxFuture<'static, _>
            });
            let rec = engine.create(spec, runner).await.unwrap();
            ids.push(rec.task.task_id);
            triggers.push(Some(tx));
        }
        Self {
            engine,
            clock,
            ids,
            triggers,
            produced: HashMap::new(),
            cancelled_ok: HashMap::new(),
            last_seen: HashMap::new(),
            waiters: Vec::new(),
        }
    }

    fn finish(&mut self, i: usize, f: Finish) {
        if let Some(tx) = self.triggers[i].take() {
            let expected = match &f {
                Finish::Ok(v) => Ok(v.clone()),
                Finish::Err(e) => Err(e.clone()),
            };
            if tx.send(f).is_ok() {
                self.produced.insert(i, expected);
            }
        }
    }

    fn observe(&mut self, i: usize, status: TaskStatus) {
        if let Some(prev) = self.last_seen.get(&i).copied() {
            assert!(
                prev == status
                    || can_transition(prev, status)
                    || (prev == TaskStatus::InputRequired && status == TaskStatus::Working),
                "illegal {prev} -> {status}"
            );
            if prev.is_terminal() {
                assert_eq!(prev, status, "terminal status changed");
            }
        }
        self.last_seen.insert(i, status);
    }

    async fn apply(&mut self, op: Op) {
        let n = self.ids.len();
        match op {
            Op::Complete(i) => self.finish(i % n, Finish::Ok(json!({"content": [{"type": "text", "text": format!("r{i}")}], "_meta": {"keep": i}}))),
            Op::IsError(i) => self.finish(i % n, Finish::Ok(json!({"content": [], "isError": true}))),
            Op::Fail(i) => self.finish(i % n, Finish::Err(ErrorObject::new(-32050 - i as i64, format!("e{i}")))),
            Op::Cancel(i) => {
                let i = i % n;
                match self.engine.cancel(&self.ids[i], &Requester::local()).await {
                    Ok(t) => {
                        assert_eq!(t.status, TaskStatus::Cancelled);
                        self.cancelled_ok.insert(i, true);
                        self.observe(i, TaskStatus::Cancelled);
                    }
                    Err(e) => {
                        let rpc = e.to_rpc("");
                        assert_eq!(rpc.code, codes::INVALID_PARAMS, "{e}");
                    }
                }
            }
            Op::Advance(ms) => {
                self.clock.0.fetch_add(i64::from(ms), Ordering::SeqCst);
                self.engine.sweep_expired().await;
            }
            Op::Get(i) => {
                let i = i % n;
                if let Ok(t) = self.engine.get(&self.ids[i], &Requester::local()).await {
                    self.observe(i, t.status);
                }
            }
            Op::Wait(i) => {
                let i = i % n;
                let engine = self.engine.clone();
                let id = self.ids[i].clone();
                self.waiters.push((i, tokio::spawn(async move { engine.result(&id, &Requester::local(), None).await })));
            }
        }
        // Let the executor tasks run.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }

    /// Resolve everything still running, then check every waiter and every stored outcome.
    async fn settle(mut self) {
        let n = self.ids.len();
        for i in 0..n {
            self.finish(i, Finish::Ok(json!({"content": [], "late": i})));
        }
        let waiters = std::mem::take(&mut self.waiters);
        for (i, w) in waiters {
            let r = tokio::time::timeout(Duration::from_secs(5), w)
                .await
                .expect("every waiter wakes")
                .unwrap();
            self.check_outcome(i, r).await;
        }
        for i in 0..n {
            let r = tokio::time::timeout(
                Duration::from_secs(5),
                self.engine.result(&self.ids[i], &Requester::local(), None),
            )
            .await
            .expect("result of a resolved task returns");
            self.check_outcome(i, r).await;
        }
    }

    async fn check_outcome(
        &mut self,
        i: usize,
        r: Result<Result<Value, ErrorObject>, mcp_tasks_core::EngineError>,
    ) {
        let status = match self.engine.get(&self.ids[i], &Requester::local()).await {
            Ok(t) => t.status,
            Err(_) => {
                // Expired/deleted: the waiter must have said so, not invented an outcome.
                if let Err(e) = &r {
                    assert_eq!(e.to_rpc("").code, codes::INVALID_PARAMS);
                }
                return;
            }
        };
        self.observe(i, status);
        let Ok(outcome) = r else { return };
        if self.cancelled_ok.get(&i).copied().unwrap_or(false) {
            assert_eq!(status, TaskStatus::Cancelled);
            assert_eq!(outcome.unwrap_err().code, codes::TASK_CANCELLED);
            return;
        }
        let produced = self
            .produced
            .get(&i)
            .cloned()
            .expect("a terminal, non-cancelled task was produced by its runner");
        match (produced, outcome) {
            (Ok(mut want), Ok(got)) => {
                mcp_tasks_proto::mcp::set_related_task(&mut want, &self.ids[i]);
                assert_eq!(got, want, "result altered");
                let expect = if want.get("isError") == Some(&Value::Bool(true)) {
                    TaskStatus::Failed
                } else {
                    TaskStatus::Completed
                };
                assert_eq!(status, expect);
            }
            (Err(want), Err(got)) => {
                assert_eq!(got, want, "error altered");
                assert_eq!(status, TaskStatus::Failed);
            }
            (p, o) => panic!("outcome mismatch: produced {p:?}, stored {o:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_interleavings_keep_the_invariants(ops in proptest::collection::vec(op(), 1..40), ttl in 100u64..5_000) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let mut h = Harness::new(6, ttl).await;
            for op in ops {
                h.apply(op).await;
            }
            h.settle().await;
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_cancel_and_complete_have_one_winner() {
    for round in 0..200 {
        let mut h = Harness::new(1, 60_000).await;
        let engine = h.engine.clone();
        let id = h.ids[0].clone();
        let tx = h.triggers[0].take().unwrap();
        let cancel = tokio::spawn(async move { engine.cancel(&id, &Requester::local()).await });
        let _ = tx.send(Finish::Ok(json!({"content": [], "round": round})));
        let cancelled = cancel.await.unwrap().is_ok();
        tokio::time::sleep(Duration::from_millis(1)).await;
        let t = h.engine.get(&h.ids[0], &Requester::local()).await.unwrap();
        let r = h
            .engine
            .result(&h.ids[0], &Requester::local(), None)
            .await
            .unwrap();
        if cancelled {
            assert_eq!(t.status, TaskStatus::Cancelled);
            assert_eq!(r.unwrap_err().code, codes::TASK_CANCELLED);
        } else {
            assert_eq!(t.status, TaskStatus::Completed);
            assert_eq!(r.unwrap()["round"], round);
        }
    }
}
