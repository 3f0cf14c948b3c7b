//! Benchmarks of the engine's hot paths through [`TaskEngine`] on the in-memory store:
//!
//! * `create`: a task-augmented request accepted and its (instant) work completed;
//! * `get`: `tasks/get` of a random id among 10,000 stored tasks;
//! * `transition`: `tasks/cancel` of a working task (one compare-and-swap, the status
//!   notification, the work stopped);
//! * `result_wakeup`: from the work finishing to a blocked `tasks/result` returning;
//! * `metrics_per_task`: what the metrics record for one task-augmented call (the
//!   `tools/call` request timed and counted, the creation, the completion with its
//!   duration, three store operations timed), to be read beside `create`: the engine
//!   always counts, so this is the share of `create` that the counters cost (the HTTP
//!   cost of serving and scraping `/metrics` is `mcp-tasks bench --compare-metrics`).
//!
//! Each runs on a current-thread runtime, so the engine's background work is counted in
//! the iteration that caused it. Fresh engines are made every 10,000 iterations (outside
//! the timing) so that memory stays flat over long runs. In test mode
//! (`cargo test --benches`) each runs once.

#![allow(missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use mcp_tasks_core::engine::{Runner, TaskRun, TaskSpec};
use mcp_tasks_core::status::TaskStatus;
use mcp_tasks_core::{MemoryStore, Policy, Requester, RequestorChannel, SystemClock, TaskEngine};
use mcp_tasks_proto::{ErrorObject, Revision};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

const FRESH_EVERY: u64 = 10_000;

/// A requestor that is not listening (status notifications go nowhere).
struct Nobody;

#[async_trait]
impl RequestorChannel for Nobody {
    async fn request(&self, _method: &str, _params: Value) -> Result<Value, ErrorObject> {
        Err(ErrorObject::internal("no requestor in benches"))
    }
    async fn notify(&self, _method: &str, _params: Value) {}
}

fn engine() -> TaskEngine {
    let mut policy = Policy::default();
    policy.limits.max_active = Some(u32::MAX);
    TaskEngine::new(Arc::new(MemoryStore::new()), policy, Arc::new(SystemClock))
}

fn classify(_: &Value) -> (TaskStatus, Option<String>) {
    (TaskStatus::Completed, None)
}

fn spec() -> TaskSpec {
    TaskSpec {
        requester: Requester::default(),
        method: "tools/call".into(),
        params: json!({ "name": "sleep", "arguments": { "ms": 0 }, "task": { "ttl": 60_000 } }),
        task_field: json!({ "ttl": 60_000 }),
        origin: Arc::new(Nobody),
        classify,
    }
}

fn done_at_once() -> Runner {
    Box::new(|_run: TaskRun| {
        Box::pin(async { Ok(json!({ "content": [{ "type": "text", "text": "slept 0" }] })) })
    })
}

/// Work that ends when `rx` fires (or when cancelled).
fn done_when(rx: tokio::sync::oneshot::Receiver<()>) -> Runner {
    Box::new(move |run: TaskRun| {
        Box::pin(async move {
            tokio::select! {
                _ = rx => Ok(json!({ "content": [{ "type": "text", "text": "done" }] })),
                () = run.cancel.cancelled() => Err(ErrorObject::internal("cancelled")),
            }
        })
    })
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn create(c: &mut Criterion, rt: &Runtime) {
    c.bench_function("engine/create", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut e = engine();
            for i in 0..iters {
                if i % FRESH_EVERY == FRESH_EVERY - 1 {
                    e = engine();
                }
                let t0 = Instant::now();
                rt.block_on(async {
                    let rec = e.create(spec(), done_at_once()).await.expect("created");
                    // Let the work finish and its outcome be stored.
                    tokio::task::yield_now().await;
                    std::hint::black_box(rec);
                });
                total += t0.elapsed();
            }
            total
        });
    });
}

fn get(c: &mut Criterion, rt: &Runtime) {
    let e = engine();
    let ids: Vec<String> = rt.block_on(async {
        let mut ids = Vec::new();
        for _ in 0..10_000 {
            ids.push(
                e.create(spec(), done_at_once())
                    .await
                    .expect("created")
                    .task
                    .task_id,
            );
        }
        tokio::task::yield_now().await;
        ids
    });
    let who = Requester::default();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    c.bench_function("engine/get", |b| {
        b.iter(|| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let id = &ids[usize::try_from(rng % ids.len() as u64).unwrap_or(0)];
            rt.block_on(async { std::hint::black_box(e.get(id, &who).await.expect("found")) })
        });
    });
}

fn transition(c: &mut Criterion, rt: &Runtime) {
    let who = Requester::default();
    c.bench_function("engine/transition", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut e = engine();
            for i in 0..iters {
                if i % FRESH_EVERY == FRESH_EVERY - 1 {
                    e = engine();
                }
                let (_tx, rx) = tokio::sync::oneshot::channel();
                let id = rt
                    .block_on(e.create(spec(), done_when(rx)))
                    .expect("created")
                    .task
                    .task_id;
                let t0 = Instant::now();
                rt.block_on(async {
                    let task = e.cancel(&id, &who).await.expect("cancelled");
                    assert_eq!(task.status, TaskStatus::Cancelled);
                    tokio::task::yield_now().await;
                });
                total += t0.elapsed();
            }
            total
        });
    });
}

fn result_wakeup(c: &mut Criterion, rt: &Runtime) {
    let who = Requester::default();
    c.bench_function("engine/result_wakeup", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut e = engine();
            for i in 0..iters {
                if i % FRESH_EVERY == FRESH_EVERY - 1 {
                    e = engine();
                }
                total += rt.block_on(async {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let id = e
                        .create(spec(), done_when(rx))
                        .await
                        .expect("created")
                        .task
                        .task_id;
                    let waiter = {
                        let e = e.clone();
                        let who = who.clone();
                        tokio::spawn(async move { e.result(&id, &who, None).await })
                    };
                    // Let the waiter subscribe and block.
                    for _ in 0..4 {
                        tokio::task::yield_now().await;
                    }
                    let t0 = Instant::now();
                    tx.send(()).expect("the work is waiting");
                    let outcome = waiter.await.expect("joined").expect("a result");
                    let d = t0.elapsed();
                    assert!(outcome.is_ok());
                    d
                });
            }
            total
        });
    });
}

fn metrics_per_task(c: &mut Criterion, rt: &Runtime) {
    let e = engine();
    e.metrics().set_tools(["sleep"]);
    let working = rt
        .block_on(e.create(spec(), done_at_once()))
        .expect("created");
    let mut done = working.clone();
    done.status = TaskStatus::Completed;
    let metrics = e.metrics().clone();
    c.bench_function("engine/metrics_per_task", |b| {
        b.iter(|| {
            let timer = metrics.request("tools/call", Revision::V2025_11_25);
            metrics.task_created(&working, Some("sleep"));
            metrics.store_operation("create", Duration::from_micros(3));
            metrics.task_changed(&done);
            metrics.store_operation("transition", Duration::from_micros(3));
            metrics.store_operation("get", Duration::from_micros(1));
            timer.finish(true);
        });
    });
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    create(c, &rt);
    get(c, &rt);
    transition(c, &rt);
    result_wakeup(c, &rt);
    metrics_per_task(c, &rt);
}

criterion_group! {
    name = engine_benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(engine_benches);
