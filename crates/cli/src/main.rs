//! `mcp-tasks`: a spec-exact MCP task server (2025-11-25, and 2026-07-28 with the tasks
//! extension), gateway, client and load generator.

mod alloc;
mod bench;
mod bench_compare;
mod call;
mod config;
mod demo;
#[cfg(test)]
mod demo_tests;
mod duration;
mod gateway;
mod http;
mod metrics_args;
mod oauth;
mod private_file;
mod serve;
mod tasks_cmd;
mod term;
mod tls_args;

use clap::{Parser, Subcommand};

/// Durable, spec-exact MCP Tasks (protocol revisions 2025-11-25 and 2026-07-28).
#[derive(Parser, Debug)]
#[command(name = "mcp-tasks", version, about, long_about = None, after_help = EXAMPLES)]
struct Cli {
    /// How log lines on stderr look: `text` (one line per event, for people) or `json`
    /// (one JSON object per line: `timestamp`, `level`, `target`, `fields` with the
    /// message and the event's fields such as the task id, `span` and `spans`).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = LogFormat::Text,
        env = "MCP_TASKS_LOG_FORMAT"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// See [`Cli::log_format`].
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

const EXAMPLES: &str = "\
Examples:
  mcp-tasks serve --stdio                      serve the demo tools on stdin/stdout
  mcp-tasks serve --stdio --store memory       ... keeping tasks in memory only
  mcp-tasks serve --stdio --max-ttl 1h         ... granting tasks at most one hour
  RUST_LOG=debug mcp-tasks serve --stdio       ... with debug logs on stderr";

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the task server with the built-in demo tools.
    Serve(serve::ServeArgs),
    /// Call a tool of an MCP server (stdio or HTTP), plainly or as a task.
    Call(call::CallArgs),
    /// List, show, await or cancel the tasks of an MCP server.
    Tasks(tasks_cmd::TasksArgs),
    /// Load-test a task server over Streamable HTTP (any MCP 2025-11-25 server).
    Bench(bench::BenchArgs),
}

/// The environment variables of ours that carry secrets. They are read once at start-up
/// (clap reads `MCP_TASKS_TOKEN` and `MCP_TASKS_BENCH_TOKEN` into the arguments, and
/// [`scrub_secrets`] keeps `MCP_TASKS_AUTH_TOKENS`), then removed from the process
/// environment, so that no child process (a gateway's upstream command) can inherit them.
const SECRET_VARS: &[&str] = &[http::TOKENS_ENV, "MCP_TASKS_TOKEN", "MCP_TASKS_BENCH_TOKEN"];

/// `MCP_TASKS_AUTH_TOKENS` as it was at start-up (see [`SECRET_VARS`]).
static AUTH_TOKENS_ENV: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// The text of `MCP_TASKS_AUTH_TOKENS` read at start-up, if it was set.
pub(crate) fn auth_tokens_env() -> Option<&'static str> {
    AUTH_TOKENS_ENV.get().and_then(Option::as_deref)
}

/// Read the secrets of [`SECRET_VARS`] and remove them from the process environment.
/// Must run before any other thread exists (before the logger and the runtime).
#[allow(unsafe_code)]
fn scrub_secrets() {
    let _ = AUTH_TOKENS_ENV.set(std::env::var(http::TOKENS_ENV).ok());
    for name in SECRET_VARS {
        if std::env::var_os(name).is_some() {
            // SAFETY: `remove_var` is unsound only while another thread may read or write
            // the environment. This runs in `main` after argument parsing and before the
            // logger, the tokio runtime or any other thread is started: the process is
            // single-threaded here.
            unsafe { std::env::remove_var(name) };
        }
    }
}

fn main() -> std::process::ExitCode {
    alloc::purge_at_once();
    // The command line, the `MCP_TASKS_*` variables and `serve --config FILE`.
    let parsed = config::parse(std::env::args_os().collect()).unwrap_or_else(|e| e.exit());
    let cli = parsed.cli;
    // Still single-threaded: clap has read its `env` arguments, nothing else has started.
    scrub_secrets();
    if let (Command::Serve(args), Some(effective)) = (&cli.command, &parsed.serve)
        && args.print_config
    {
        print!("{}", config::render(effective, &args.gateway.file));
        return std::process::ExitCode::SUCCESS;
    }
    // The requestor commands speak to a person: only warnings unless RUST_LOG says more.
    let requestor = matches!(cli.command, Command::Call(_) | Command::Tasks(_));
    init_logging(
        if requestor { "warn" } else { "info" },
        requestor,
        cli.log_format,
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-tasks: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Call(args) => call::run(args).await,
            Command::Tasks(args) => tasks_cmd::run(args).await,
            Command::Bench(args) => match bench::run(args).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(anyhow::anyhow!("the run saw errors (counted above)")),
                Err(e) => Err(e),
            },
        }
    });
    // Do not wait for detached work (running tools) at exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A requestor command said what it had to; it only sets the exit code.
        Err(ref e) if let Some(&call::Exit(code)) = e.downcast_ref::<call::Exit>() => {
            std::process::ExitCode::from(code)
        }
        Err(e) => {
            eprintln!("mcp-tasks: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Whether log lines are JSON (`--log-format json`).
static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Say `line` on stderr whatever `RUST_LOG` says (`listening on URL`: scripts and tests
/// read it to find the port): as it is, or with `--log-format json` as a log object like
/// the others (`fields.message` is the line).
pub(crate) fn announce(line: &str) {
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        let v = serde_json::json!({
            "timestamp": humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string(),
            "level": "INFO",
            "fields": {"message": line},
            "target": "mcp_tasks",
        });
        eprintln!("{v}");
    } else {
        eprintln!("{line}");
    }
}

/// Logs go to stderr only: stdout is the stdio transport. `RUST_LOG` is honoured, else
/// `default` applies. `above_live_line`: printed above the live line of a requestor
/// command on a terminal (see [`term::Screen`]).
fn init_logging(default: &str, above_live_line: bool, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false);
    JSON_LOGS.store(
        format == LogFormat::Json,
        std::sync::atomic::Ordering::Relaxed,
    );
    match (format, above_live_line) {
        (LogFormat::Json, true) => fmt.json().with_writer(term::LogWriter).init(),
        (LogFormat::Json, false) => fmt.json().with_writer(std::io::stderr).init(),
        (LogFormat::Text, true) => fmt.with_writer(term::LogWriter).init(),
        (LogFormat::Text, false) => fmt.with_writer(std::io::stderr).init(),
    }
}
