//! The run: the virtual clients that play a workload ([`crate::config::Scenario`]) and
//! the phases of a run (connect, set up, warm up, measure).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use mcp_tasks_proto::Revision;

use crate::client::McpClient;
use crate::config::{Config, Scenario, op};
use crate::cpu;
use crate::message::{CallError, header_safe};
use crate::recorder::{Recorder, Window};
use crate::report::{Report, build_report};
use crate::stats::{Setup, Stats};
use crate::wire::{
    completed_at, create_params, created_task, inline_result_ok, poll_interval, task_status,
    tool_result_ok,
};

/// Why a run could not be done at all.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad settings.
    #[error("{0}")]
    Config(String),
    /// The sessions could not be opened.
    #[error("cannot open an MCP session with {url}: {error}")]
    Session {
        /// The server.
        url: String,
        /// What went wrong.
        error: CallError,
    },
    /// The tasks the scenario needs could not be created.
    #[error("setup failed: {0}")]
    Setup(String),
}

struct Ctx {
    cfg: Config,
    window: Window,
    /// One instant and the wall-clock time at it, to put an arrival on the server's clock
    /// (the same machine's) for [`op::OVERHEAD`].
    clock: (Instant, SystemTime),
}

impl Ctx {
    /// The wall-clock time of `at`.
    fn wall(&self, at: Instant) -> SystemTime {
        self.clock.1 + at.saturating_duration_since(self.clock.0)
    }
}

/// One iteration of the scenario. Errors have been recorded when it returns.
async fn iteration(
    ctx: &Ctx,
    client: &mut McpClient,
    waiter: Option<&mut McpClient>,
    rec: &mut Recorder<'_>,
    ids: &[String],
    rng: &mut fastrand::Rng,
    cursor: &mut Option<String>,
) {
    let cfg = &ctx.cfg;
    let ms = cfg.work();
    match cfg.scenario {
        Scenario::Create => {
            rec.create(client, cfg, ms).await;
        }
        Scenario::Get => {
            let id = &ids[rng.usize(0..ids.len())];
            let Ok((reply, started)) = rec
                .call(client, op::GET, "tasks/get", &json!({ "taskId": id }))
                .await
            else {
                return;
            };
            if let Err(e) = task_status(cfg.revision, &reply.result, id) {
                rec.bad(op::GET, started, e);
            }
        }
        Scenario::Lifecycle | Scenario::LifecyclePollInterval => {
            let honour = cfg.scenario == Scenario::LifecyclePollInterval;
            let Some((id, mut interval, t0)) = rec.create(client, cfg, ms).await else {
                return;
            };
            let params = json!({ "taskId": id });
            loop {
                let wait = if honour {
                    interval.unwrap_or(1000)
                } else {
                    cfg.poll_ms
                };
                tokio::time::sleep(Duration::from_millis(wait)).await;
                let Ok((reply, started)) = rec.call(client, op::GET, "tasks/get", &params).await
                else {
                    return;
                };
                match task_status(cfg.revision, &reply.result, &id) {
                    Ok("working") => {}
                    Ok("completed") if cfg.revision.tasks_are_extension() => {
                        // The modern way to a result: it is inline in the terminal task.
                        if let Err(e) = inline_result_ok(&reply.result) {
                            return rec.bad(op::GET, started, e);
                        }
                        return rec.derived(
                            op::LIFECYCLE,
                            t0,
                            reply.arrived.saturating_duration_since(t0),
                        );
                    }
                    Ok("completed") => break,
                    Ok(other) => {
                        return rec.bad(
                            op::GET,
                            started,
                            format!("task {id} is {other}, expected working or completed"),
                        );
                    }
                    Err(e) => return rec.bad(op::GET, started, e),
                }
                if let Some(p) = poll_interval(cfg.revision, &reply.result) {
                    interval = Some(p);
                }
            }
            let Ok((reply, started)) = rec.call(client, op::RESULT, "tasks/result", &params).await
            else {
                return;
            };
            if let Err(e) = tool_result_ok(&reply.result) {
                return rec.bad(op::RESULT, started, e);
            }
            rec.derived(
                op::LIFECYCLE,
                t0,
                reply.arrived.saturating_duration_since(t0),
            );
        }
        Scenario::ResultWait => {
            let Some((id, _, t0)) = rec.create(client, cfg, ms).await else {
                return;
            };
            let waiter = waiter.unwrap_or(client);
            let Ok((reply, started)) = rec
                .call(waiter, op::RESULT, "tasks/result", &json!({ "taskId": id }))
                .await
            else {
                return;
            };
            if let Err(e) = tool_result_ok(&reply.result) {
                return rec.bad(op::RESULT, started, e);
            }
            let due = t0 + Duration::from_millis(ms);
            rec.derived(
                op::LATENESS,
                t0,
                reply.arrived.saturating_duration_since(due),
            );
            rec.derived(
                op::LIFECYCLE,
                t0,
                reply.arrived.saturating_duration_since(t0),
            );
            // The task's completion as its server recorded it (`lastUpdatedAt` of the
            // terminal status, read after the result arrived), to the result's arrival.
            let arrived = ctx.wall(reply.arrived);
            let Ok((task, started)) = rec
                .call(waiter, op::GET, "tasks/get", &json!({ "taskId": id }))
                .await
            else {
                return;
            };
            match completed_at(&task.result) {
                Ok(done) => rec.derived(
                    op::OVERHEAD,
                    t0,
                    arrived.duration_since(done).unwrap_or_default(),
                ),
                Err(e) => rec.bad(op::GET, started, e),
            }
        }
        Scenario::List => {
            let params = match cursor.take() {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let Ok((reply, started)) = rec.call(client, op::LIST, "tasks/list", &params).await
            else {
                return;
            };
            let Some(tasks) = reply.result.get("tasks").and_then(Value::as_array) else {
                return rec.bad(
                    op::LIST,
                    started,
                    "tasks/list result without `tasks`".into(),
                );
            };
            if started >= rec.measure_from {
                rec.stats.listed_tasks += tasks.len() as u64;
            }
            match reply.result.get("nextCursor") {
                None | Some(Value::Null) => {}
                Some(Value::String(c)) => *cursor = Some(c.clone()),
                Some(other) => rec.bad(op::LIST, started, format!("bad `nextCursor`: {other}")),
            }
        }
    }
}

async fn virtual_client(
    ctx: Arc<Ctx>,
    mut client: McpClient,
    ids: Vec<String>,
    seed: u64,
) -> Stats {
    let mut stats = Stats::default();
    let mut waiter = ctx
        .cfg
        .wait_endpoint
        .clone()
        .filter(|_| ctx.cfg.scenario == Scenario::ResultWait)
        .map(|e| client.fork_to(e, 1));
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut cursor = None;
    {
        let mut rec = Recorder {
            stats: &mut stats,
            measure_from: ctx.window.start,
        };
        while ctx.window.go() {
            iteration(
                &ctx,
                &mut client,
                waiter.as_mut(),
                &mut rec,
                &ids,
                &mut rng,
                &mut cursor,
            )
            .await;
        }
    }
    stats.reconnects = client.reconnects + waiter.map_or(0, |w| w.reconnects);
    stats
}

type Seeded = (Vec<String>, u64, Option<String>);

/// Create `n` tasks (work 0) in the session of `client`, over `conns` connections.
async fn seed(
    era: Revision,
    params: Value,
    client: McpClient,
    n: u64,
    conns: usize,
    done: Arc<AtomicU64>,
) -> Seeded {
    let mut set = tokio::task::JoinSet::new();
    let conns = conns.max(1) as u64;
    for c in 0..conns {
        let share = n / conns + u64::from(c < n % conns);
        let mut fork = client.fork(c + 1);
        let params = params.clone();
        let done = Arc::clone(&done);
        set.spawn(async move {
            let mut ids = Vec::with_capacity(usize::try_from(share).unwrap_or(0));
            let mut errors = 0u64;
            let mut example = None;
            for _ in 0..share {
                let r = fork.call("tools/call", &params).await;
                match r
                    .map_err(|e| e.to_string())
                    .and_then(|r| created_task(era, &r.result))
                {
                    Ok((id, _)) => ids.push(id),
                    Err(e) => {
                        errors += 1;
                        example.get_or_insert(e);
                        if errors > 100 && ids.is_empty() {
                            break;
                        }
                    }
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
            (ids, errors, example)
        });
    }
    let mut out: Seeded = (Vec::new(), 0, None);
    while let Some(r) = set.join_next().await {
        if let Ok((i, e, x)) = r {
            out.0.extend(i);
            out.1 += e;
            if out.2.is_none() {
                out.2 = x;
            }
        }
    }
    out
}

/// Run the scenario and report.
///
/// # Errors
/// Bad settings, sessions that cannot be opened, or a setup that created nothing.
pub async fn run(cfg: Config) -> Result<Report, BenchError> {
    if cfg.concurrency == 0 {
        return Err(BenchError::Config(
            "--concurrency must be at least 1".into(),
        ));
    }
    if matches!(cfg.scenario, Scenario::Get | Scenario::List) && cfg.seeding.tasks == 0 {
        return Err(BenchError::Config(format!(
            "scenario {} needs --tasks of at least 1",
            cfg.scenario.name()
        )));
    }
    if !cfg.scenario.in_revision(cfg.revision) {
        return Err(BenchError::Config(format!(
            "scenario {} has no 2026-07-28 form: the tasks extension has no tasks/result and no tasks/list (modern scenarios: create, get, lifecycle, lifecycle-poll-interval)",
            cfg.scenario.name()
        )));
    }
    if cfg.revision.has_standard_headers() && !header_safe(&cfg.tool) {
        return Err(BenchError::Config(format!(
            "--tool `{}` cannot be sent as a plain Mcp-Name header value",
            cfg.tool
        )));
    }
    let work_timeout = cfg.timeout + Duration::from_millis(cfg.work());
    // Open the sessions.
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..cfg.concurrency {
        let mut client = McpClient::with_revision(cfg.endpoint.clone(), cfg.revision, work_timeout);
        opening.spawn(async move { client.open().await.map(|_| client) });
    }
    let mut clients = Vec::with_capacity(cfg.concurrency);
    while let Some(r) = opening.join_next().await {
        match r {
            Ok(Ok(c)) => clients.push(c),
            Ok(Err(error)) => {
                return Err(BenchError::Session {
                    url: format!("http://{}{}", cfg.endpoint.authority, cfg.endpoint.path),
                    error,
                });
            }
            Err(e) => return Err(BenchError::Setup(e.to_string())),
        }
    }

    // Set up: K tasks, spread over the sessions (a task may be visible only in the
    // session that created it).
    let mut ids_per_client = vec![Vec::new(); clients.len()];
    let mut setup = None;
    if cfg.seeds() {
        let t0 = Instant::now();
        let done = Arc::new(AtomicU64::new(0));
        let progress = cfg.progress.then(|| {
            let done = Arc::clone(&done);
            let total = cfg.seeding.tasks;
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    let n = done.load(Ordering::Relaxed);
                    #[allow(clippy::cast_precision_loss)]
                    let rate = n as f64 / t0.elapsed().as_secs_f64();
                    eprintln!("setup: {n}/{total} tasks created ({rate:.0}/s)");
                }
            })
        });
        let n = clients.len() as u64;
        let per_conn = cfg.seeding.concurrency.div_ceil(clients.len()).max(1);
        let mut seeding = Vec::new();
        for (i, c) in clients.iter().enumerate() {
            let share = cfg.seeding.tasks / n + u64::from((i as u64) < cfg.seeding.tasks % n);
            seeding.push(seed(
                cfg.revision,
                // `get` and `list` create their K tasks with the scenario's work (0 ms by
                // default: finished tasks; a long one keeps them working).
                create_params(cfg.revision, &cfg.tool, cfg.work(), cfg.ttl_ms),
                c.fork(0),
                share,
                per_conn,
                Arc::clone(&done),
            ));
        }
        let results = futures_join_all(seeding).await;
        if let Some(p) = progress {
            p.abort();
        }
        let mut s = Setup {
            elapsed: t0.elapsed(),
            ..Setup::default()
        };
        for (i, (ids, errors, example)) in results.into_iter().enumerate() {
            s.tasks += ids.len() as u64;
            s.errors += errors;
            if s.example.is_none() {
                s.example = example;
            }
            ids_per_client[i] = ids;
        }
        if cfg.scenario == Scenario::Get && ids_per_client.iter().any(Vec::is_empty) {
            return Err(BenchError::Setup(format!(
                "could not create the tasks to get ({} errors; first: {})",
                s.errors,
                s.example.as_deref().unwrap_or("-")
            )));
        }
        if s.tasks == 0 {
            return Err(BenchError::Setup(format!(
                "no task could be created ({} errors; first: {})",
                s.errors,
                s.example.as_deref().unwrap_or("-")
            )));
        }
        // Let 0 ms tasks finish, so that the store is at rest when measuring.
        tokio::time::sleep(Duration::from_millis(200)).await;
        setup = Some(s);
    }

    // Warm up, then measure.
    let now = Instant::now();
    let start = now + cfg.length.warmup;
    let end = if cfg.length.requests.is_some() {
        start + cfg.length.duration.max(Duration::from_secs(3600))
    } else {
        start + cfg.length.duration
    };
    let ctx = Arc::new(Ctx {
        window: Window {
            start,
            end,
            budget: cfg.length.requests.map(AtomicU64::new),
        },
        cfg: cfg.clone(),
        clock: (Instant::now(), SystemTime::now()),
    });
    let warm_until = start;
    let cpu_probe = tokio::spawn(async move {
        tokio::time::sleep_until(warm_until.into()).await;
        (
            Instant::now(),
            cpu::own(),
            cfg.server_pid.and_then(cpu::process),
        )
    });
    let mut set = tokio::task::JoinSet::new();
    for (i, (client, ids)) in clients.into_iter().zip(ids_per_client).enumerate() {
        set.spawn(virtual_client(Arc::clone(&ctx), client, ids, i as u64 + 1));
    }
    let mut stats = Stats::default();
    while let Some(r) = set.join_next().await {
        if let Ok(s) = r {
            stats.merge(s);
        }
    }
    let stopped = Instant::now();
    let own_end = cpu::own();
    let server_end = ctx.cfg.server_pid.and_then(cpu::process);
    let (probe_at, own_start, server_start) =
        cpu_probe.await.unwrap_or((start, Duration::ZERO, None));
    let measured = stats
        .last_done
        .unwrap_or(stopped)
        .saturating_duration_since(probe_at.min(start))
        .max(Duration::from_millis(1));
    let window_cpu = stopped.saturating_duration_since(probe_at);
    let server_cpu = match (server_start, server_end) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let memory = ctx.cfg.server_pid.and_then(cpu::memory);
    Ok(build_report(
        &ctx.cfg,
        stats,
        measured,
        setup,
        own_end.saturating_sub(own_start),
        server_cpu,
        window_cpu,
        memory,
    ))
}

/// Await every future (on the runtime's workers), keeping their order.
async fn futures_join_all<F, T>(futs: Vec<F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + Default + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    for (i, f) in futs.into_iter().enumerate() {
        set.spawn(async move { (i, f.await) });
    }
    let mut out: Vec<T> = Vec::new();
    out.resize_with(set.len(), T::default);
    while let Some(r) = set.join_next().await {
        if let Ok((i, v)) = r {
            out[i] = v;
        }
    }
    out
}
