//! `mcp-tasks serve` over Streamable HTTP: flags, bearer tokens, the session factory that
//! binds each session to its principal, and graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use mcp_tasks_core::Requester;
use mcp_tasks_proto::{Request, methods};
use mcp_tasks_rpc::Handler;
use mcp_tasks_rpc::http::{BearerTokens, HttpConfig, HttpServer, OriginPolicy, ReplyMode};
use mcp_tasks_server::Server;

/// The environment variable holding bearer tokens (`TOKEN PRINCIPAL` entries separated by
/// `;` or newlines).
pub(crate) const TOKENS_ENV: &str = "MCP_TASKS_AUTH_TOKENS";

/// What a task still running after the shutdown grace period is failed with.
pub(crate) const SHUTDOWN_MESSAGE: &str = "The server shut down before the task finished";

/// Options of `serve` over HTTP (without `--stdio`).
#[derive(Args, Debug)]
pub(crate) struct HttpArgs {
    /// Address to serve Streamable HTTP on (endpoint `/mcp`); port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,
    /// A browser `Origin` allowed besides loopback origins (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// Bearer tokens: one `TOKEN PRINCIPAL` per line, `#` comments. Also read from
    /// `MCP_TASKS_AUTH_TOKENS` (entries separated by `;` or newlines). With any token, every
    /// request needs `Authorization: Bearer TOKEN` and tasks belong to its principal.
    #[arg(long, value_name = "FILE")]
    auth_tokens: Option<PathBuf>,
    /// Serve a non-loopback address without authentication (anyone who can reach it can
    /// run tools, and any task id is a capability).
    #[arg(long)]
    allow_unauthenticated: bool,
    /// End a session without requests or open streams for this long.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    session_idle: String,
    /// On SIGTERM, let running tasks finish for this long, then fail them.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    shutdown_grace: String,
    /// Close an SSE connection that waited this long, with a `retry` field; the client
    /// resumes with GET and `Last-Event-ID`.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    sse_hold: String,
    /// The reconnection delay sent in that `retry` field.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    sse_retry: String,
}

/// `1500` (milliseconds), `1.5s`, `1h`.
fn duration(flag: &str, s: &str) -> anyhow::Result<Duration> {
    if let Ok(ms) = s.parse::<u64>() {
        return Ok(Duration::from_millis(ms));
    }
    humantime::parse_duration(s)
        .with_context(|| format!("{flag}: `{s}` is not milliseconds or a duration like `10s`"))
}

/// Add the `TOKEN PRINCIPAL` entries of `text` (split at any of `separators`).
fn parse_tokens(
    text: &str,
    separators: &[char],
    source: &str,
    into: &mut BearerTokens,
) -> anyhow::Result<()> {
    for (i, entry) in text.split(separators).enumerate() {
        let entry = entry.trim();
        if entry.is_empty() || entry.starts_with('#') {
            continue;
        }
        let mut words = entry.split_whitespace();
        let (Some(token), Some(principal), None) = (words.next(), words.next(), words.next())
        else {
            bail!(
                "{source}: entry {}: expected `TOKEN PRINCIPAL`, got {} words",
                i + 1,
                entry.split_whitespace().count()
            );
        };
        into.insert(token, principal);
    }
    Ok(())
}

fn load_tokens(args: &HttpArgs) -> anyhow::Result<BearerTokens> {
    let mut tokens = BearerTokens::new();
    if let Some(path) = &args.auth_tokens {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--auth-tokens: cannot read {}", path.display()))?;
        parse_tokens(&text, &['\n'], &path.display().to_string(), &mut tokens)?;
        if tokens.is_empty() {
            bail!("--auth-tokens: {} holds no token", path.display());
        }
    }
    if let Ok(text) = std::env::var(TOKENS_ENV) {
        parse_tokens(&text, &['\n', ';'], TOKENS_ENV, &mut tokens)?;
    }
    Ok(tokens)
}

/// Which requests may be answered with an SSE stream: those before whose response
/// messages may come (a `tasks/result` relays the task's requests for input; a plain
/// `tools/call` may report progress or ask). They are answered as JSON all the same when
/// the response is ready at once. Everything else is `application/json`.
///
/// Spec (tasks): "Where possible, the server SHOULD NOT upgrade to an SSE stream in
/// response to a `tasks/get` request, as the client has indicated it wishes to poll for a
/// result."
fn reply_mode(req: &Request) -> ReplyMode {
    match req.method.as_str() {
        methods::TASKS_RESULT => ReplyMode::Auto,
        methods::TOOLS_CALL if req.params.as_ref().and_then(|p| p.get("task")).is_none() => {
            ReplyMode::Auto
        }
        _ => ReplyMode::Json,
    }
}

async fn resolve(listen: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = listen.parse() {
        return Ok(a);
    }
    tokio::net::lookup_host(listen)
        .await
        .with_context(|| format!("--listen: cannot resolve `{listen}`"))?
        .next()
        .with_context(|| format!("--listen: `{listen}` resolves to no address"))
}

/// Serve `server` over Streamable HTTP until SIGTERM/SIGINT, then shut down gracefully.
pub(crate) async fn run(args: &HttpArgs, server: &Server, max_body: usize) -> anyhow::Result<()> {
    let tokens = load_tokens(args)?;
    let addr = resolve(&args.listen).await?;
    let authenticated = !tokens.is_empty();
    if !authenticated && !addr.ip().is_loopback() && !args.allow_unauthenticated {
        bail!(
            "--listen {addr}: refusing to serve a non-loopback address without authentication; \
             give --auth-tokens FILE (or {TOKENS_ENV}), or --allow-unauthenticated"
        );
    }
    let grace = duration("--shutdown-grace", &args.shutdown_grace)?;
    let config = HttpConfig {
        max_body_bytes: max_body,
        tokens,
        origins: OriginPolicy::new(&args.allowed_origins),
        session_idle: duration("--session-idle", &args.session_idle)?,
        sse_hold: duration("--sse-hold", &args.sse_hold)?,
        sse_retry: duration("--sse-retry", &args.sse_retry)?,
        reply_policy: Arc::new(reply_mode),
        ..HttpConfig::default()
    };
    let sessions = server.clone();
    // With authentication every session belongs to its principal, which sees its own
    // tasks across sessions; without, nobody can be identified and tasks.list is off.
    let factory = move |principal: Option<&str>| -> Arc<dyn Handler> {
        let requester = Requester {
            principal: principal.map(str::to_owned),
            sees_all: false,
            session: None,
        };
        sessions.session(requester, principal.is_some())
    };
    let http = HttpServer::new(config, factory);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--listen: cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    eprintln!("listening on http://{local}/mcp");
    tracing::info!(
        address = %local,
        authenticated,
        "serving Streamable HTTP"
    );
    let mut serving = {
        let http = http.clone();
        tokio::spawn(async move { http.serve(listener).await })
    };
    tokio::select! {
        r = &mut serving => {
            return match r {
                Ok(r) => r.context("HTTP transport failed"),
                Err(e) => Err(e).context("HTTP transport panicked"),
            };
        }
        () = terminate() => {}
    }
    shutdown(&http, server, serving, grace).await;
    Ok(())
}

/// Stop accepting, close streams with a `retry`, give running tasks `grace` to finish,
/// then fail what is left.
async fn shutdown(
    http: &HttpServer,
    server: &Server,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
    grace: Duration,
) {
    let running = || {
        server
            .engine()
            .map_or(0, mcp_tasks_core::TaskEngine::running_count)
    };
    tracing::info!(
        running = running(),
        grace = ?grace,
        "shutting down: no new connections; running tasks may finish"
    );
    http.shutdown();
    let deadline = tokio::time::Instant::now() + grace;
    while running() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(engine) = server.engine() {
        let left = engine.running_count();
        if left > 0 {
            eprintln!("shutdown: failing {left} task(s) still running after the grace period");
            engine.fail_running(SHUTDOWN_MESSAGE).await;
        }
    }
    // Connections still open (a plain call still running) get what is left of the grace.
    let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
    if tokio::time::timeout(rest, serving).await.is_err() {
        tracing::info!("connections still open at the end of the grace period were dropped");
    }
}

/// SIGTERM or SIGINT.
async fn terminate() {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json as j;

    #[test]
    fn token_entries() {
        let mut t = BearerTokens::new();
        parse_tokens(
            "# comment\n tok-a alice \n\ntok-b bob\r\n",
            &['\n'],
            "f",
            &mut t,
        )
        .unwrap();
        parse_tokens("tok-c carol;tok-d dave", &['\n', ';'], "env", &mut t).unwrap();
        assert_eq!(t.authenticate("tok-a"), Some("alice"));
        assert_eq!(t.authenticate("tok-b"), Some("bob"));
        assert_eq!(t.authenticate("tok-d"), Some("dave"));
        assert!(parse_tokens("lonely", &['\n'], "f", &mut t).is_err());
        assert!(parse_tokens("a b c", &['\n'], "f", &mut t).is_err());
    }

    #[test]
    fn only_calls_that_may_stream_are_upgraded() {
        let req = |m: &str, p: serde_json::Value| Request {
            id: 1.into(),
            method: m.into(),
            params: Some(p),
        };
        assert_eq!(
            reply_mode(&req("tasks/result", j!({"taskId": "x"}))),
            ReplyMode::Auto
        );
        assert_eq!(
            reply_mode(&req("tools/call", j!({"name": "ask"}))),
            ReplyMode::Auto
        );
        assert_eq!(
            reply_mode(&req("tools/call", j!({"name": "ask", "task": {}}))),
            ReplyMode::Json
        );
        for m in [
            "tasks/get",
            "tasks/list",
            "tasks/cancel",
            "tools/list",
            "initialize",
            "ping",
        ] {
            assert_eq!(reply_mode(&req(m, j!({}))), ReplyMode::Json, "{m}");
        }
    }
}
