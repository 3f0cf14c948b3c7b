//! `mcp-tasks serve`.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use mcp_tasks_core::audit::Audit;
use mcp_tasks_core::rate::{DEFAULT_LOOKUP_FAILURES, Kind, RateLimitConfig, Watch};
use mcp_tasks_core::{Guard, Policy};
use mcp_tasks_server::{BuildError, Server, ServerConfig};
use mcp_tasks_store_sqlite::{SqliteOptions, default_path};

use crate::demo;
use crate::duration::{self, MaybeDuration};

/// The end of `serve --help`: where settings come from, and how durations are written.
fn serve_help() -> String {
    format!(
        "Every flag (but --print-config) may also be set by an environment variable \
         MCP_TASKS_<FLAG> (`--max-ttl` is MCP_TASKS_MAX_TTL, `--auth-tokens` is \
         MCP_TASKS_AUTH_TOKENS_FILE; a repeatable flag takes one value from it), or by a \
         key named like the flag in the --config file. Precedence: flag > environment > \
         file > default.\n\n{}",
        duration::HELP
    )
}

/// Options of `serve`.
#[derive(Args, Debug)]
#[command(after_help = serve_help())]
pub(crate) struct ServeArgs {
    /// Serve one client on stdin/stdout.
    #[arg(long)]
    stdio: bool,
    /// Where tasks are kept: `sqlite:PATH[?synchronous=normal]`, `memory`, or
    /// `postgres://USER[:PASSWORD]@HOST:PORT/DB[?pool=N&statement_timeout=5s]` (also
    /// `postgresql://`; the password may come from `PGPASSWORD`; several replicas may share
    /// one database). Default: SQLite at `$XDG_DATA_HOME/mcp-tasks/tasks.db` (else
    /// `~/.local/share/mcp-tasks/tasks.db`).
    #[arg(long, env = "MCP_TASKS_STORE", hide_env_values = true)]
    store: Option<String>,
    /// Turn tasks off: no `tasks` capability, every tool runs as a plain call.
    #[arg(long)]
    no_tasks: bool,
    /// Largest TTL granted to a task (ms, or a duration like `24h`), or `unlimited`.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = crate::duration::parse_or_unlimited)]
    max_ttl: MaybeDuration,
    /// TTL of a task whose request names none (ms, a duration, or `unlimited`).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = crate::duration::parse_or_unlimited)]
    default_ttl: MaybeDuration,
    /// Suggested `pollInterval` (ms, or a duration).
    #[arg(long, value_name = "DURATION", default_value = "1000", value_parser = crate::duration::parse)]
    poll_interval: Duration,
    /// 2026-07-28 clients with the tasks extension: a call of an `optional` tool runs
    /// directly and becomes a task if it has not finished after this long (or asks the
    /// client something first).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = crate::duration::parse)]
    task_after: Duration,
    /// Most active (non-terminal) tasks per requester: per principal with auth, else per
    /// session (HTTP) or for the one stdio peer.
    #[arg(long, default_value_t = 1000)]
    max_active_tasks: u32,
    /// Most stored tasks per requester, of any status (finished ones are kept until their
    /// TTL deletes them), or `unlimited`. Over it, creation is refused with -32003.
    #[arg(long, default_value = "10000")]
    max_stored_tasks: String,
    /// Most bytes of requests and results stored per requester (bytes, or `256MiB`,
    /// `1GiB`, ...), or `unlimited`. A creation whose request would go over it is refused
    /// with -32003; a task whose result would go over it fails instead, with a -32003 error
    /// naming the limit as its outcome.
    #[arg(long, default_value = "256MiB")]
    max_stored_bytes: String,
    /// Most bytes of requests and results stored in total, for all requesters (bytes, or
    /// `1GiB`, ...), or `unlimited`. Enforced like `--max-stored-bytes`.
    #[arg(long, default_value = "1GiB")]
    max_store_bytes: String,
    /// How long to keep retrying to store a task's result when the store fails (disk
    /// full, ...) before the task is failed with a message naming the cause (ms, or a
    /// duration); also how long a waiting `tasks/result` reads its task again while the
    /// store is unavailable.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::duration::parse)]
    outcome_retry: Duration,
    /// `tasks/list` page size.
    #[arg(long, default_value_t = 100)]
    page_size: usize,
    /// How long this process's lease on the tasks it runs lasts (renewed every third of
    /// it). When the process dies, another process sharing the store, or this one
    /// restarted, fails those tasks once the lease has run out.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::duration::parse)]
    executor_lease: Duration,
    /// Largest incoming message, in bytes: a stdio line, an HTTP request body (413 above
    /// it), and a message from a gateway's upstream.
    #[arg(long, default_value_t = mcp_tasks_rpc::stdio::DEFAULT_MAX_LINE)]
    max_message_bytes: usize,
    /// Most requests one task may have waiting for its requestor's answer at once
    /// (`input_required`); one more fails at once inside the task.
    #[arg(long, value_name = "N", env = "MCP_TASKS_MAX_PENDING_INPUTS", default_value_t = mcp_tasks_core::policy::DEFAULT_MAX_PENDING_INPUTS)]
    max_pending_inputs: usize,
    /// A rate limit per requester (principal; without auth the HTTP session or the stdio
    /// peer), repeatable: `KIND=N/UNIT[,burst=B]` or `KIND=off`; KIND is `create` (task
    /// creations), `poll` (`tasks/get` sooner than the task's pollInterval), `lookup-failures`
    /// (unknown or foreign task ids; once spent, lookups are refused) or `requests` (all);
    /// UNIT `s`, `m` or `h`; `burst` defaults to N. Default: `lookup-failures=10/s,burst=100`,
    /// the others off. Refused: JSON-RPC -32029 with `data.retryAfterMs` (HTTP 429 with
    /// `Retry-After`). Several in one value (as in the environment) are separated by `;`.
    #[arg(
        long = "rate-limit",
        value_name = "KIND=N/UNIT[,burst=B]",
        env = "MCP_TASKS_RATE_LIMIT"
    )]
    rate_limits: Vec<String>,
    /// Write the audit trail to FILE (or `-` for stderr): one JSON line per task created,
    /// retrieved, completed/failed/cancelled, listed, failed lookup, refused credential and
    /// rate-limit refusal. Appended (`O_APPEND`); reopened on SIGHUP (for logrotate).
    #[arg(long, value_name = "FILE", env = "MCP_TASKS_AUDIT_LOG")]
    audit_log: Option<String>,
    #[command(flatten)]
    http: Box<crate::http::HttpArgs>,
    #[command(flatten)]
    pub(crate) gateway: Box<crate::gateway::GatewayArgs>,
    /// Print the effective configuration (every setting with its value and where it comes
    /// from: flag, environment variable, config file or default; secrets masked) as TOML,
    /// and exit without opening the store.
    #[arg(long)]
    pub(crate) print_config: bool,
}

/// Bytes from `1048576`, `512KiB`, `256MiB`, `1GiB` (also `KB`/`MB`/`GB` as powers of
/// 1000); `None` for `unlimited`.
fn parse_bytes(flag: &str, s: &str) -> anyhow::Result<Option<u64>> {
    if s == "unlimited" {
        return Ok(None);
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => bail!("{flag}: `{s}` is not bytes (like `1048576`, `256MiB`, `1GiB`) or `unlimited`"),
    };
    let n: u64 = num.parse().with_context(|| {
        format!("{flag}: `{s}` is not bytes (like `1048576`, `256MiB`, `1GiB`) or `unlimited`")
    })?;
    n.checked_mul(scale)
        .map(Some)
        .with_context(|| format!("{flag}: `{s}` is too large"))
}

fn policy(args: &ServeArgs) -> anyhow::Result<Policy> {
    let max_ttl = args.max_ttl.millis();
    let mut default_ttl = args.default_ttl.millis();
    if default_ttl.is_none() && max_ttl.is_some() {
        bail!("--default-ttl unlimited needs --max-ttl unlimited");
    }
    if let (Some(d), Some(m)) = (default_ttl, max_ttl) {
        default_ttl = Some(d.min(m));
    }
    let poll = duration::millis(args.poll_interval);
    if args.page_size == 0 {
        bail!("--page-size must be at least 1");
    }
    let mut p = Policy::default();
    p.default_ttl_ms = default_ttl;
    p.max_ttl_ms = max_ttl;
    p.poll_interval_ms = poll;
    p.limits.max_active = Some(args.max_active_tasks);
    p.limits.max_tasks = match args.max_stored_tasks.as_str() {
        "unlimited" => None,
        n => Some(n.parse().with_context(|| {
            format!("--max-stored-tasks: `{n}` is not a number of tasks or `unlimited`")
        })?),
    };
    p.limits.max_bytes = parse_bytes("--max-stored-bytes", &args.max_stored_bytes)?;
    p.limits.max_total_bytes = parse_bytes("--max-store-bytes", &args.max_store_bytes)?;
    p.outcome_retry_ms = duration::millis(args.outcome_retry);
    p.page_size = args.page_size;
    p.lease_ms = match duration::millis(args.executor_lease) {
        ms if ms >= 100 => ms,
        _ => bail!("--executor-lease must be at least 100 ms"),
    };
    if args.max_pending_inputs == 0 {
        bail!("--max-pending-inputs must be at least 1");
    }
    p.max_pending_inputs_per_task = args.max_pending_inputs;
    Ok(p)
}

/// The rate limits: the defaults, then each `--rate-limit` in order.
fn rate_limits(args: &ServeArgs) -> anyhow::Result<RateLimitConfig> {
    let mut c = RateLimitConfig::default();
    c.set(Kind::LookupFailures, Some(DEFAULT_LOOKUP_FAILURES));
    for spec in &args.rate_limits {
        c.apply(spec).map_err(anyhow::Error::msg)?;
    }
    Ok(c)
}

/// The guard of the server: the rate limits and the audit trail (reopened on SIGHUP).
fn guard(args: &ServeArgs) -> anyhow::Result<Guard> {
    let limits = rate_limits(args)?;
    let audit = match &args.audit_log {
        None => Audit::default(),
        Some(path) => {
            let audit = Audit::open(path, mcp_tasks_core::audit::DEFAULT_QUEUE)
                .with_context(|| format!("--audit-log {path}"))?;
            reopen_on_sighup(audit.clone());
            audit
        }
    };
    for kind in Kind::ALL {
        if let Some(rate) = limits.get(kind) {
            tracing::info!(limit = kind.name(), %rate, "rate limit");
        }
    }
    Ok(Guard::new(limits, Watch::default(), audit))
}

/// Reopen the audit log on SIGHUP (logrotate's signal to reopen).
fn reopen_on_sighup(audit: Audit) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(mut hup) => {
                tokio::spawn(async move {
                    while hup.recv().await.is_some() {
                        tracing::info!("SIGHUP: reopening the audit log");
                        audit.reopen();
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot handle SIGHUP: the audit log will not be reopened")
            }
        }
    }
    #[cfg(not(unix))]
    drop(audit);
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let policy = policy(&args)?;
    let guard = guard(&args)?;
    let config = ServerConfig::default()
        .with_max_line_bytes(args.max_message_bytes)
        .with_shutdown_grace(args.http.shutdown_grace)
        .with_task_after(args.task_after);
    let mut builder = Server::builder().config(config).policy(policy).guard(guard);
    builder = match (args.no_tasks, args.store.as_deref()) {
        (true, _) => builder.no_tasks(),
        (false, Some(store)) => builder.store_url(store),
        (false, None) => builder.sqlite(default_path(), SqliteOptions::default()),
    };
    builder = if args.gateway.enabled() {
        builder.extension(crate::gateway::extension(
            &args.gateway,
            args.store.as_deref(),
            args.max_message_bytes,
            !args.no_tasks,
        )?)
    } else {
        let mut tools = demo::all();
        for (name, support) in args.gateway.demo_overrides()? {
            let Some(tool) = tools.iter_mut().find(|t| t.name == name) else {
                bail!("--tool-task-support or [tools] of --config: no tool named `{name}`");
            };
            tool.task_support = Some(support);
        }
        builder.tools(tools)
    };
    // Opens the store, installs a gateway's resumer, starts the engine and its sweeper.
    let server = builder.build().await.map_err(|e| match e {
        e @ BuildError::UnknownStore(_) => anyhow::anyhow!("--store: {e}"),
        BuildError::OpenStore { store, source } if args.store.is_some() => {
            anyhow::anyhow!("--store {store}: {source}")
        }
        BuildError::OpenStore { source, .. } => anyhow::anyhow!("{source}"),
        e => anyhow::anyhow!("{e}"),
    })?;
    let result = if args.stdio {
        tracing::info!(store = %server.store_description(), tasks = !args.no_tasks, "serving on stdio");
        server
            .serve(mcp_tasks_server::Transport::Stdio, async {
                terminate().await;
                tracing::info!("terminated by signal");
            })
            .await
            .context("stdio transport failed")
    } else {
        crate::http::run(&args.http, &server, args.max_message_bytes, terminate()).await
    };
    server.shutdown().await;
    result
}

/// SIGTERM or SIGINT.
pub(crate) async fn terminate() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
