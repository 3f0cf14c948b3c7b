//! `mcp-tasks bench`: load-test an MCP task server over Streamable HTTP, in the 2025-11-25
//! era or the 2026-07-28 one with the tasks extension (`--era`).

use std::time::Duration;

use clap::Args;
use mcp_tasks_bench::config::{Length, Seeding};
use mcp_tasks_bench::{Config, Endpoint, Scenario, parse_era};
use mcp_tasks_proto::Revision;

use crate::duration::{self, MaybeDuration};

/// Options of `bench`.
#[derive(Args, Debug)]
#[command(after_help = BENCH_HELP)]
pub(crate) struct BenchArgs {
    /// The server's Streamable HTTP endpoint.
    #[arg(long, value_name = "URL", required_unless_present = "compare_metrics")]
    url: Option<String>,
    /// Measure what `/metrics` costs: start `mcp-tasks serve` on loopback twice per round,
    /// with `--no-metrics` and with metrics on (scraped every second), run the workload
    /// against each and print both throughputs and the median ratio on/off.
    #[arg(long, conflicts_with_all = ["url", "server_pid"])]
    compare_metrics: bool,
    /// `--compare-metrics`: how many rounds (each runs both servers).
    #[arg(long, default_value_t = 3, requires = "compare_metrics")]
    rounds: usize,
    /// `--compare-metrics`: an argument for the servers it starts (repeat it; default
    /// `--store memory`).
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "compare_metrics"
    )]
    serve_arg: Vec<String>,
    /// `result-wait`: send `tasks/result` to this endpoint instead, another replica on the
    /// same PostgreSQL store (sessions are shared), so that the waiter and the executor of
    /// each task are on different replicas.
    #[arg(long, value_name = "URL")]
    wait_url: Option<String>,
    /// The protocol generation: `legacy` (2025-11-25: a session per client, task-augmented
    /// calls, tasks/result) or `modern` (2026-07-28 with the tasks extension: stateless,
    /// the server makes the task, the result inline in tasks/get; the tool must become a
    /// task, e.g. `serve --tool-task-support sleep=required`).
    #[arg(long, default_value = "legacy", value_parser = parse_era)]
    era: Revision,
    /// The workload: create, get, lifecycle, lifecycle-poll-interval, result-wait, list
    /// (modern: the first four; lifecycle polls tasks/get until the task is terminal).
    #[arg(long, short = 's', default_value = "create", value_parser = parse_scenario)]
    scenario: Scenario,
    /// Virtual clients, each with its own MCP session and connection.
    #[arg(long, short = 'c', default_value_t = 16)]
    concurrency: usize,
    /// How long to measure (ms or a duration like `10s`).
    #[arg(long, short = 'd', value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse)]
    duration: Duration,
    /// How long to run before measuring.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse)]
    warmup: Duration,
    /// Stop after this many measured iterations instead of after --duration.
    #[arg(long, short = 'n')]
    requests: Option<u64>,
    /// The `ms` argument of the work tool (ms or a duration; default: 0 for
    /// create/get/list, 100 otherwise). For get and list it is the work of the K tasks
    /// created first: a long one keeps them `working` while they are read.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    work_ms: Option<Duration>,
    /// `lifecycle`: poll `tasks/get` this often (ms or a duration).
    #[arg(long, value_name = "DURATION", default_value = "50", value_parser = crate::duration::parse)]
    poll_ms: Duration,
    /// K: tasks created before measuring, for `get` (ids picked among them) and `list`
    /// (tasks stored).
    #[arg(long, short = 'k', default_value_t = 1000)]
    tasks: u64,
    /// Connections that create those tasks.
    #[arg(long, default_value_t = 32)]
    seed_concurrency: usize,
    /// `list`: do not create tasks first; page through those the server already holds.
    #[arg(long)]
    no_seed: bool,
    /// The `ttl` to ask for each task, in ms, or `none` to send no `ttl`.
    #[arg(long, value_name = "DURATION", default_value = "3600000", value_parser = crate::duration::parse_or_none)]
    ttl: MaybeDuration,
    /// The work tool (it must take `{ms}`).
    #[arg(long, default_value = "sleep")]
    tool: String,
    /// A bearer token to send (needed by servers that list tasks only to authenticated
    /// requesters).
    #[arg(long, env = "MCP_TASKS_BENCH_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The server's process id: its CPU time and memory are read from /proc and the
    /// figures marked load-generator-bound when the bench used more than half its CPU.
    #[arg(long, value_name = "PID")]
    server_pid: Option<u32>,
    /// Longest wait for an answer, besides the work itself.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::duration::parse)]
    timeout: Duration,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

const BENCH_HELP: &str = "\
Examples:
  mcp-tasks bench --url http://127.0.0.1:8080/mcp                    task creations, 16 clients, 10 s
  mcp-tasks bench --url URL -s get -c 16 -k 1000                     tasks/get of random ids among 1,000
  mcp-tasks bench --url URL -s lifecycle -c 64 --work-ms 100         create, poll every 50 ms, result
  mcp-tasks bench --url URL -s result-wait -c 16                     how late tasks/result answers
  mcp-tasks bench --url URL_A --wait-url URL_B -s result-wait        ... waiting on another replica
  mcp-tasks bench --url URL -s list -c 1 -k 100000 --token TOKEN     page through 100,000 tasks
  mcp-tasks bench --url URL --server-pid $(pgrep -n mcp-tasks) --json
  mcp-tasks bench --compare-metrics -s get --rounds 5                what /metrics costs on tasks/get
  mcp-tasks bench --url URL --era modern -s create                   2026-07-28 task creations (the
                                    server: serve --tool-task-support sleep=required)
  mcp-tasks bench --url URL --era modern -s lifecycle -c 64          create, poll tasks/get to the result

The figures are per operation: successful operations per second and latency percentiles.
Every JSON-RPC error and malformed answer is counted and shown; the exit status is 1
when there was any.";

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    s.parse()
}

/// Run `bench`; `Ok(false)` when the run saw errors.
pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<bool> {
    // With --compare-metrics the endpoint is replaced by each server started.
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| "http://127.0.0.1:1/mcp".to_owned());
    let endpoint = Endpoint::parse(&url, args.token.clone()).map_err(anyhow::Error::msg)?;
    let mut cfg = Config::new(endpoint, args.scenario);
    cfg.wait_endpoint = match &args.wait_url {
        Some(u) => Some(Endpoint::parse(u, args.token.clone()).map_err(anyhow::Error::msg)?),
        None => None,
    };
    cfg.revision = args.era;
    cfg.concurrency = args.concurrency;
    cfg.length = Length {
        duration: args.duration,
        warmup: args.warmup,
        requests: args.requests,
    };
    cfg.work_ms = args.work_ms.map(duration::millis);
    cfg.poll_ms = duration::millis(args.poll_ms);
    cfg.seeding = Seeding {
        tasks: args.tasks,
        concurrency: args.seed_concurrency,
        list: !args.no_seed,
    };
    cfg.ttl_ms = args.ttl.millis();
    cfg.tool = args.tool;
    cfg.server_pid = args.server_pid;
    cfg.timeout = args.timeout;
    cfg.progress = !args.compare_metrics;
    if args.compare_metrics {
        return crate::bench_compare::run(cfg, args.rounds, &args.serve_arg, args.token, args.json)
            .await;
    }
    let report = mcp_tasks_bench::run(cfg).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(report.errors.total == 0)
}
