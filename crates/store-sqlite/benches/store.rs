//! Benchmarks of the SQLite task store; results and targets in `BENCHMARKS.md`.
//!
//! * `transitions`: compare-and-swap transitions per second from 1 and 64 concurrent
//!   writers, at `synchronous=FULL` and `NORMAL` (group commit at work);
//! * `get` and `list`: one task by id, and a 100-task keyset page, in a store holding
//!   100,000 tasks (1,000,000 with `MCP_TASKS_BENCH_BIG=1`), with p50/p99/max latencies
//!   printed besides criterion's estimates.
//!
//! The big database is built once with the bulk `import` path and kept in the target
//! directory for later runs. In test mode (`cargo test --benches`, or `cargo bench` without
//! `--bench`) everything runs once on small data, so CI stays quick.

#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use mcp_tasks_core::{
    Limits, ListQuery, ListScope, NewTask, TaskStore, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use tokio::runtime::Runtime;

const T0: i64 = 1_700_000_000_000;
const OWNERS: u64 = 100;

fn bench_mode() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn task(i: u64) -> NewTask {
    NewTask {
        task_id: format!("{i:08x}-bench-0000-0000-{i:012x}"),
        owner: Some(format!("owner-{}", i % OWNERS)),
        quota_key: format!("principal:owner-{}", i % OWNERS),
        created_at_ms: T0 + i64::try_from(i).unwrap_or(0),
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(1000),
        method: "tools/call".into(),
        request: format!(r#"{{"name":"slow_echo","arguments":{{"text":"task {i}","ms":250}}}}"#),
        executor: Some("bench-executor".into()),
        status_message: None,
    }
}

fn open(path: &Path, synchronous: Synchronous) -> SqliteStore {
    let mut options = SqliteOptions::default();
    options.synchronous = synchronous;
    SqliteStore::open(path, options).expect("open the bench store")
}

/// Transitions per second from `writers` concurrent tasks, each toggling its own tasks
/// between `working` and `input_required` (every call is a real compare-and-swap write).
fn transitions(c: &mut Criterion, rt: &Runtime) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("transitions");
    group.throughput(Throughput::Elements(1));
    if bench_mode() {
        group.measurement_time(Duration::from_secs(8));
        group.sample_size(20);
    }
    for (sync, sync_name) in [(Synchronous::Full, "full"), (Synchronous::Normal, "normal")] {
        for writers in [1usize, 64] {
            let path = dir
                .path()
                .join(format!("transitions-{sync_name}-{writers}.db"));
            let store = Arc::new(open(&path, sync));
            let ids: Vec<String> = rt.block_on(async {
                let mut ids = Vec::new();
                for i in 0..writers as u64 {
                    ids.push(
                        store
                            .create(task(i), &Limits::NONE)
                            .await
                            .expect("create")
                            .task
                            .task_id,
                    );
                }
                ids
            });
            let state = Arc::new(parking_lot::Mutex::new(vec![false; writers]));
            group.bench_function(
                BenchmarkId::new(
                    format!("synchronous={sync_name}"),
                    format!("{writers} writers"),
                ),
                |b| {
                    b.iter_custom(|iters| {
                        let per = iters.div_ceil(writers as u64).max(1);
                        rt.block_on(async {
                            let started = Instant::now();
                            let mut handles = Vec::new();
                            for (w, id) in ids.iter().enumerate() {
                                let store = Arc::clone(&store);
                                let id = id.clone();
                                let state = Arc::clone(&state);
                                handles.push(tokio::spawn(async move {
                                    let mut waiting = state.lock()[w];
                                    for _ in 0..per {
                                        let to = if waiting {
                                            TaskStatus::Working
                                        } else {
                                            TaskStatus::InputRequired
                                        };
                                        let t = Transition {
                                            task_id: id.clone(),
                                            to,
                                            status_message: None,
                                            outcome: None,
                                            at_ms: T0,
                                        };
                                        match store.transition(t).await.expect("transition") {
                                            TransitionResult::Applied(_) => waiting = !waiting,
                                            other => panic!("not applied: {other:?}"),
                                        }
                                    }
                                    state.lock()[w] = waiting;
                                }));
                            }
                            for h in handles {
                                h.await.expect("writer");
                            }
                            // Scale to the `iters` criterion asked for.
                            let elapsed = started.elapsed();
                            elapsed.mul_f64(iters as f64 / (per * writers as u64) as f64)
                        })
                    });
                },
            );
            let s = store.stats();
            eprintln!(
                "transitions synchronous={sync_name} {writers} writers: {} ops in {} commits ({:.1} ops/commit)",
                s.ops,
                s.batches,
                s.ops as f64 / s.batches.max(1) as f64
            );
        }
    }
    group.finish();
}

/// The database with `n` tasks, built once with the bulk path and kept for later runs.
fn big_db(rt: &Runtime, n: u64) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("store-sqlite-bench");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let path = dir.join(format!("tasks-{n}.db"));
    let ready = dir.join(format!("tasks-{n}.ready"));
    if ready.exists() && path.exists() {
        return path;
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let started = Instant::now();
    let store = open(&path, Synchronous::Normal);
    rt.block_on(async {
        let chunk = 50_000u64;
        let mut i = 0;
        while i < n {
            let end = (i + chunk).min(n);
            store
                .import((i..end).map(task).collect())
                .await
                .expect("bulk import");
            i = end;
        }
    });
    drop(store);
    eprintln!(
        "built a store of {n} tasks in {:.1?} ({} MB)",
        started.elapsed(),
        std::fs::metadata(&path)
            .map(|m| m.len() / 1_000_000)
            .unwrap_or(0)
    );
    std::fs::write(&ready, b"ok").expect("mark the bench db ready");
    path
}

/// A tiny deterministic generator (xorshift), to pick random tasks without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn percentiles(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    eprintln!(
        "{name}: n={} p50={:?} p99={:?} p99.9={:?} max={:?}",
        samples.len(),
        at(0.50),
        at(0.99),
        at(0.999),
        samples[samples.len() - 1]
    );
}

fn reads(c: &mut Criterion, rt: &Runtime) {
    let big = std::env::var("MCP_TASKS_BENCH_BIG").is_ok_and(|v| v == "1");
    let n: u64 = match (bench_mode(), big) {
        (_, true) => 1_000_000,
        (true, false) => 100_000,
        (false, false) => 2_000,
    };
    let path = big_db(rt, n);
    let store = Arc::new(open(&path, Synchronous::Full));
    let samples = if bench_mode() { 20_000 } else { 50 };

    // Latency distributions (criterion reports means; the targets are p99s).
    rt.block_on(async {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..200 {
            store
                .get(&task(rng.below(n)).task_id)
                .await
                .expect("warm-up");
        }
        let mut lat = Vec::with_capacity(samples);
        for _ in 0..samples {
            let id = task(rng.below(n)).task_id;
            let t = Instant::now();
            let rec = store.get(&id).await.expect("get");
            lat.push(t.elapsed());
            assert!(rec.is_some());
        }
        percentiles(&format!("get ({n} tasks)"), lat);
        for (scope_name, owner) in [("all", false), ("owner", true)] {
            let mut lat = Vec::with_capacity(samples / 4);
            for _ in 0..samples / 4 {
                let after = i64::try_from(rng.below(n)).unwrap_or(0);
                let scope = if owner {
                    ListScope::Owner(format!("owner-{}", rng.below(OWNERS)))
                } else {
                    ListScope::All
                };
                let t = Instant::now();
                let page = store
                    .list(ListQuery::new(scope, Some(after), 100))
                    .await
                    .expect("list");
                lat.push(t.elapsed());
                assert!(!page.is_empty() || after > i64::try_from(n).unwrap_or(0) - 10_000);
            }
            percentiles(&format!("list 100, scope {scope_name} ({n} tasks)"), lat);
        }
    });

    let mut group = c.benchmark_group(format!("reads_{n}_tasks"));
    let mut rng = Rng(42);
    group.bench_function("get", |b| {
        b.to_async(rt).iter(|| {
            let id = task(rng.below(n)).task_id;
            let store = Arc::clone(&store);
            async move { store.get(&id).await.expect("get") }
        });
    });
    let mut rng = Rng(43);
    group.bench_function("list_100_all", |b| {
        b.to_async(rt).iter(|| {
            let after = i64::try_from(rng.below(n)).unwrap_or(0);
            let store = Arc::clone(&store);
            async move {
                store
                    .list(ListQuery::new(ListScope::All, Some(after), 100))
                    .await
                    .expect("list")
            }
        });
    });
    let mut rng = Rng(44);
    group.bench_function("list_100_owner", |b| {
        b.to_async(rt).iter(|| {
            let after = i64::try_from(rng.below(n)).unwrap_or(0);
            let scope = ListScope::Owner(format!("owner-{}", rng.below(OWNERS)));
            let store = Arc::clone(&store);
            async move {
                store
                    .list(ListQuery::new(scope, Some(after), 100))
                    .await
                    .expect("list")
            }
        });
    });
    // For comparison: the same `get` on one raw connection, without the blocking-thread hop.
    let raw = rusqlite::Connection::open(&path).expect("raw connection");
    let mut rng = Rng(45);
    group.bench_function("get_raw_connection_reference", |b| {
        b.iter(|| {
            let id = task(rng.below(n)).task_id;
            raw.query_row(
                "SELECT seq, status, request FROM tasks WHERE task_id = ?1",
                [&id],
                |r| r.get::<_, i64>(0),
            )
            .expect("raw get")
        });
    });
    // And with a fresh connection per read (the alternative to a pool).
    let mut rng = Rng(46);
    group.bench_function("get_connection_per_read_reference", |b| {
        b.iter(|| {
            let id = task(rng.below(n)).task_id;
            let conn = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .expect("open");
            conn.query_row(
                "SELECT seq, status, request FROM tasks WHERE task_id = ?1",
                [&id],
                |r| r.get::<_, i64>(0),
            )
            .expect("get")
        });
    });
    group.finish();
}

fn main() {
    let rt = runtime();
    let mut c = Criterion::default().configure_from_args();
    if !bench_mode() {
        c = c
            .warm_up_time(Duration::from_millis(10))
            .measurement_time(Duration::from_millis(10));
    }
    transitions(&mut c, &rt);
    reads(&mut c, &rt);
    c.final_summary();
}
