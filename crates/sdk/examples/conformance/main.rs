//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`) is
//! run against: every tool, resource, resource template and prompt its server scenarios
//! call, written with the public API of this crate only. Both protocol generations on one
//! endpoint (2025-11-25 sessions and 2026-07-28 stateless requests), tasks in memory.
//!
//! ```sh
//! cargo run -p mcp-tasks-sdk --example conformance -- --listen 127.0.0.1:8080   # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-tasks-sdk --example conformance -- --stdio
//! interop/conformance/run.sh     # the suite against it (docs/conformance.md)
//! ```
//!
//! The fixtures, by the scenarios that call them:
//! * [`content`]: plain tools (text, image, audio, embedded resource, mixed content, an
//!   error, logging, progress, sampling, elicitation, a JSON Schema 2020-12 input schema);
//! * [`input`]: tools that ask the client for input (2026-07-28 `input_required` results,
//!   several questions at once, several rounds);
//! * [`tasks`]: the tasks extension's fixtures (`greet`, `slow_compute`, `failing_job`,
//!   `confirm_delete`, `multi_input`, ...);
//! * [`catalog`]: resources, a resource template, prompts and their completions.

mod catalog;
mod content;
mod input;
mod tasks;

use std::time::Duration;

use mcp_tasks_sdk::{HttpOptions, Server, ServerConfig, Transport, tokio};

/// How to serve.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// One client on stdin/stdout.
    Stdio,
    /// Streamable HTTP on this address.
    Listen(String),
}

/// `--stdio` or `--listen ADDR`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Mode, String> {
    let usage = "usage: conformance --stdio | --listen 127.0.0.1:PORT";
    let mode = match args.next().as_deref() {
        Some("--stdio") => Mode::Stdio,
        Some("--listen") => Mode::Listen(args.next().ok_or(usage)?),
        _ => return Err(usage.into()),
    };
    match args.next() {
        None => Ok(mode),
        Some(extra) => Err(format!("unexpected `{extra}`; {usage}")),
    }
}

/// The server of the example: every fixture, logging on, tasks in memory.
async fn server() -> Result<Server, mcp_tasks_sdk::BuildError> {
    // An optional tool still running after 200 ms becomes a task (2026-07-28, for a
    // client with the tasks extension): `slow_compute` with `seconds: 0` answers at once.
    let config = ServerConfig::default()
        .with_info("mcp-conformance-test-server", "1.0.0")
        .with_task_after(Duration::from_millis(200));
    let mut builder = Server::builder()
        .config(config)
        .tools(content::tools())
        .tools(input::tools())
        .tools(tasks::tools())
        .logging()
        .store_url("memory");
    for r in catalog::resources() {
        builder = builder.resource(r);
    }
    for t in catalog::templates() {
        builder = builder.resource_template(t);
    }
    for p in catalog::prompts() {
        builder = builder.prompt(p);
    }
    builder.build().await
}

#[tokio::main(crate = "mcp_tasks_sdk::tokio")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = match parse_args(std::env::args().skip(1)) {
        Ok(mode) => mode,
        Err(usage) => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let server = server().await?;
    // `test://watched-resource` changes every three seconds: its subscribers hear of it.
    let watcher = {
        let server = server.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(3));
            loop {
                every.tick().await;
                server.resource_updated(catalog::WATCHED);
            }
        })
    };
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let transport = match mode {
        Mode::Stdio => Transport::Stdio,
        Mode::Listen(addr) => {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            eprintln!("listening on http://{}/mcp", listener.local_addr()?);
            Transport::http(listener, HttpOptions::new())
        }
    };
    server.serve(transport, ctrl_c).await?;
    watcher.abort();
    server.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_choose_the_transport() {
        let args = |a: &[&str]| parse_args(a.iter().map(|s| (*s).to_owned()));
        assert_eq!(args(&["--stdio"]), Ok(Mode::Stdio));
        assert_eq!(
            args(&["--listen", "127.0.0.1:0"]),
            Ok(Mode::Listen("127.0.0.1:0".into()))
        );
        assert!(args(&[]).is_err());
        assert!(args(&["--listen"]).is_err());
        assert!(args(&["--stdio", "x"]).is_err());
    }
}
