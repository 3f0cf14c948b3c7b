//! `mcp-tasks serve` over Streamable HTTP: flags, bearer tokens, the session factory that
//! binds each session to its principal, and graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use mcp_tasks_server::Server;
use mcp_tasks_server::http::{BearerTokens, HttpOptions, UiServing};

/// The environment variable holding bearer tokens (`TOKEN PRINCIPAL` entries separated by
/// `;` or newlines).
pub(crate) const TOKENS_ENV: &str = "MCP_TASKS_AUTH_TOKENS";

/// Options of `serve` over HTTP (without `--stdio`).
#[derive(Args, Debug)]
pub(crate) struct HttpArgs {
    /// Address to serve Streamable HTTP on (endpoint `/mcp`); port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,
    /// A browser `Origin` allowed besides loopback origins (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// A `Host` name this server may be reached by (repeatable; `*` for any), for DNS
    /// rebinding protection on `/mcp`, `/ui` and `/metrics`: IP addresses and `localhost`
    /// are always accepted; on a loopback address any other name gets 403, elsewhere names
    /// are checked only when some are given.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Bearer tokens: one `TOKEN PRINCIPAL` per line, `#` comments. Also read from
    /// `MCP_TASKS_AUTH_TOKENS` (entries separated by `;` or newlines). With any token, every
    /// request needs `Authorization: Bearer TOKEN` and tasks belong to its principal.
    #[arg(long, value_name = "FILE")]
    auth_tokens: Option<PathBuf>,
    /// Serve a non-loopback address without authentication (anyone who can reach it can
    /// run tools, and any task id is a capability).
    #[arg(long)]
    allow_unauthenticated: bool,
    /// Where `/metrics` is served.
    #[command(flatten)]
    metrics: crate::metrics_args::MetricsArgs,
    #[command(flatten)]
    oauth: crate::oauth::OAuthArgs,
    #[command(flatten)]
    tls: crate::tls_args::TlsArgs,
    /// Do not serve the task dashboard at `/ui`.
    #[arg(long, conflicts_with = "admin_principal")]
    no_ui: bool,
    /// The principal that sees every task (with its owner) on the dashboard at `/ui`.
    #[arg(long, value_name = "NAME")]
    admin_principal: Option<String>,
    /// End a session without requests or open streams for this long.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = crate::duration::parse)]
    session_idle: Duration,
    /// On SIGTERM, let running tasks finish for this long, then fail them. With `--stdio`,
    /// at the end of the input: let the requests in flight answer for this long, then
    /// cancel them (the running tasks are failed at once: nobody is left to collect them).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse)]
    pub(crate) shutdown_grace: Duration,
    /// On SIGTERM over HTTP, first answer `/readyz` with 503 for this long while still
    /// serving every request (a load balancer stops sending new ones), then shut down.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = crate::duration::parse)]
    drain: Duration,
    /// Close an SSE connection that waited this long, with a `retry` field; the client
    /// resumes with GET and `Last-Event-ID`.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::duration::parse)]
    sse_hold: Duration,
    /// The reconnection delay sent in that `retry` field.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse)]
    sse_retry: Duration,
    /// End a session whose client never completed initialization (no request naming the
    /// session after `initialize`, not even `notifications/initialized`) after this long.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::duration::parse)]
    session_init_idle: Duration,
    /// Most sessions in total. A new one beyond it replaces the idlest session without an
    /// open stream or a request in flight (never-initialized ones first); if every session
    /// is in use, `initialize` gets 503 with a JSON-RPC error.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_sessions: usize,
    /// Most sessions per principal; without authentication, per client IP address (all
    /// anonymous clients of one address count as one principal). Beyond it the
    /// principal's idlest session is replaced, as with --max-sessions.
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_sessions_per_principal: usize,
    /// Most bytes the SSE streams of one session keep (for delivery and for replay after
    /// a reconnect), all its streams together. Delivered events go first when it is
    /// exceeded; a larger event is delivered but not replayable.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    sse_replay_bytes: usize,
    /// Most bytes the SSE streams of all sessions keep together.
    #[arg(long, value_name = "BYTES", default_value_t = 128 << 20)]
    sse_replay_total_bytes: usize,
    /// Keep an SSE response stream read to its end (response delivered) for replay this
    /// long, unless the client's next request on the session acknowledges it sooner.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = crate::duration::parse)]
    sse_replay_ack: Duration,
    /// Most open connections; further clients wait (in the listen backlog) until one
    /// closes. Keep it below the file descriptor limit (`ulimit -n`).
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_connections: usize,
    /// Most open connections from one IP address; more get 503 and are closed.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections_per_ip: usize,
    /// Time a client has to send a request's headers (from the connection's start or the
    /// end of the previous response, so it is also the keep-alive idle timeout); then the
    /// connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse)]
    header_read_timeout: Duration,
    /// Time a client has to send a request's body; then 408 and the connection closes.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::duration::parse)]
    body_read_timeout: Duration,
}

/// A bound that must be at least 1.
fn at_least_one(flag: &str, n: usize) -> anyhow::Result<usize> {
    if n == 0 {
        bail!("{flag}: must be at least 1");
    }
    Ok(n)
}

/// A timeout that must not be zero.
fn positive(flag: &str, d: Duration) -> anyhow::Result<Duration> {
    if d.is_zero() {
        bail!("{flag}: must be longer than 0");
    }
    Ok(d)
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
        crate::private_file::warn_if_loose(path, "--auth-tokens");
        parse_tokens(&text, &['\n'], &path.display().to_string(), &mut tokens)?;
        if tokens.is_empty() {
            bail!("--auth-tokens: {} holds no token", path.display());
        }
    }
    // Read (and removed from the environment) at start-up: see `crate::scrub_secrets`.
    if let Some(text) = crate::auth_tokens_env() {
        parse_tokens(text, &['\n', ';'], TOKENS_ENV, &mut tokens)?;
    }
    Ok(tokens)
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

/// Serve `server` over Streamable HTTP until `shutdown` (SIGTERM/SIGINT), then shut down
/// gracefully: the flags become [`HttpOptions`] for [`mcp_tasks_server::Transport::http`].
pub(crate) async fn run(
    args: &HttpArgs,
    server: &Server,
    max_body: usize,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let tokens = load_tokens(args)?;
    let oauth = args.oauth.build()?;
    let tls = args.tls.load()?;
    let addr = resolve(&args.listen).await?;
    if tokens.is_empty()
        && oauth.is_none()
        && !addr.ip().is_loopback()
        && !args.allow_unauthenticated
    {
        bail!(
            "--listen {addr}: refusing to serve a non-loopback address without authentication; \
             give --auth-tokens FILE (or {TOKENS_ENV}) or --oauth-issuer URL, or \
             --allow-unauthenticated"
        );
    }
    if let Some(o) = &oauth
        && o.resource().is_none()
        && addr.ip().is_unspecified()
    {
        bail!(
            "--listen {addr}: on every interface the resource URL clients use cannot be \
             derived; give --resource-url URL"
        );
    }
    let mut options = HttpOptions::new()
        .max_body_bytes(max_body)
        .tokens(tokens)
        .allowed_origins(&args.allowed_origins)
        .allowed_hosts(&args.allowed_hosts)
        .allow_unauthenticated(args.allow_unauthenticated)
        .drain(args.drain)
        .metrics(args.metrics.serving(args.allow_unauthenticated)?)
        .ui(if args.no_ui {
            UiServing::Off
        } else {
            UiServing::On {
                admin: args.admin_principal.clone(),
            }
        });
    if let Some(o) = oauth {
        options = options.oauth(o);
    }
    let transport = &mut options.transport;
    transport.session_idle = args.session_idle;
    transport.sse_hold = args.sse_hold;
    transport.sse_retry = args.sse_retry;
    transport.session_init_idle = args.session_init_idle;
    transport.max_sessions = at_least_one("--max-sessions", args.max_sessions)?;
    transport.max_sessions_per_principal = at_least_one(
        "--max-sessions-per-principal",
        args.max_sessions_per_principal,
    )?;
    transport.replay_bytes = at_least_one("--sse-replay-bytes", args.sse_replay_bytes)?;
    transport.replay_total_bytes =
        at_least_one("--sse-replay-total-bytes", args.sse_replay_total_bytes)?;
    transport.replay_ack = args.sse_replay_ack;
    transport.max_connections = at_least_one("--max-connections", args.max_connections)?;
    transport.max_connections_per_ip =
        at_least_one("--max-connections-per-ip", args.max_connections_per_ip)?;
    transport.header_read_timeout = positive("--header-read-timeout", args.header_read_timeout)?;
    transport.body_read_timeout = positive("--body-read-timeout", args.body_read_timeout)?;
    transport.tls_handshake_timeout = args.tls.tls_handshake_timeout;
    let scheme = match &tls {
        Some(files) => {
            crate::tls_args::reload_on_hangup(files)?;
            #[cfg(feature = "tls")]
            {
                transport.tls = Some(std::sync::Arc::clone(files));
            }
            "https"
        }
        None => "http",
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("--listen: cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    crate::announce(&format!("listening on {scheme}://{local}/mcp"));
    server
        .serve(
            mcp_tasks_server::Transport::http(listener, options),
            shutdown,
        )
        .await
        .context("HTTP transport failed")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
