//! A typed tool, `forecast`, served over stdio or Streamable HTTP, as a plain call or as a
//! task (task support optional).
//!
//! ```sh
//! cargo run -p mcp-tasks-sdk --example forecast -- --listen 127.0.0.1:8080   # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-tasks-sdk --example forecast -- --stdio
//! ```
//!
//! Its arguments are `city` (a string, required) and `days` (an integer from 1 to 7,
//! default 3): both the bounds and the default are attributes of the Rust type, and so
//! parts of the tool's input schema. A call takes two seconds and returns one line of
//! text. `{"city": "Oslo", "days": 9}` gets an `isError` result naming the field and the
//! bound (`days: 9 is greater than the maximum of 7`), and no task is created for it.

use std::time::Duration;

use mcp_tasks_sdk::prelude::*;
use mcp_tasks_sdk::{HttpOptions, tokio};

/// The arguments of `forecast`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(crate = "mcp_tasks_sdk::serde")]
#[schemars(crate = "mcp_tasks_sdk::schemars")]
pub(crate) struct Forecast {
    /// The city to forecast, e.g. "Oslo".
    city: String,
    /// How many days ahead, 1 to 7.
    #[serde(default = "three_days")]
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

fn three_days() -> u8 {
    3
}

/// How long one forecast takes.
pub(crate) const WORK: Duration = Duration::from_secs(2);

/// The `forecast` tool.
pub(crate) fn forecast_tool() -> Tool {
    Tool::typed(
        "forecast",
        "Weather forecast for a city, 1 to 7 days ahead (takes two seconds).",
        |a: Forecast, cx: ToolContext| async move {
            tokio::select! {
                () = tokio::time::sleep(WORK) => {}
                () = cx.cancellation().cancelled() => {
                    return Ok(CallToolResult::error("cancelled"));
                }
            }
            const SKIES: [&str; 4] = ["sunny", "cloudy", "rain", "wind"];
            let days: Vec<String> = (0..usize::from(a.days))
                .map(|d| format!("{} {}°C", SKIES[(a.city.len() + d) % 4], 12 + (d * 3) % 7))
                .collect();
            Ok(CallToolResult::text(format!(
                "{}, next {} day(s): {}",
                a.city,
                a.days,
                days.join(", ")
            )))
        },
    )
    .task_support(TaskSupport::Optional)
}

/// How to serve.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One client on stdin/stdout.
    Stdio,
    /// Streamable HTTP on this address.
    Listen(String),
}

/// `--stdio` or `--listen ADDR`.
pub(crate) fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Mode, String> {
    let usage = "usage: forecast --stdio | --listen 127.0.0.1:PORT";
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

/// The server of the example: tasks in memory.
pub(crate) async fn server() -> Result<Server, mcp_tasks_sdk::BuildError> {
    Server::builder()
        .info("forecast", "0.1.0")
        .tool(forecast_tool())
        .store_url("memory")
        .build()
        .await
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
    server.shutdown().await;
    Ok(())
}
