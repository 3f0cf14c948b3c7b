//! `mcp-tasks bench`: a load generator for MCP task servers over Streamable HTTP, in the
//! spirit of `redis-benchmark`, in either protocol revision ([`Config::revision`],
//! [`message::era_name`]): 2025-11-25 tasks,
//! or 2026-07-28 with the tasks extension (SEP-2663).
//!
//! Each virtual client has its own keep-alive HTTP/1.1 connection and runs one
//! [`Scenario`] with a `sleep {ms}` tool as the work. In the legacy era it opens its own
//! MCP session (`initialize` + `notifications/initialized`, `Mcp-Session-Id`,
//! `MCP-Protocol-Version`); in the modern era it sends `server/discover` once and then
//! stateless requests, each with its `_meta` and standard headers. Latencies go into HDR histograms ([`hdrhistogram`], 0.8 % precision); every JSON-RPC error and
//! malformed answer is counted; the bench reports its own CPU time (getrusage) and, given
//! the server's pid, the server's CPU and memory, and flags figures that may be the load
//! generator's limit rather than the server's.
//!
//! * [`client`]: the lean MCP-over-HTTP client (JSON or SSE answers, the latter read with
//!   the workspace's one SSE parser, [`mcp_tasks_rpc::sse`]);
//! * [`message`]: the endpoint, the revision's names and `_meta`, a call's answer;
//! * [`config`]: the workloads and a run's settings;
//! * [`scenario`]: the run (virtual clients, phases);
//! * [`stats`]: what a run measures;
//! * [`wire`]: what is sent and checked, per era;
//! * [`report`]: JSON and text output;
//! * [`cpu`]: CPU time and memory of the bench and of the server.

pub mod client;
pub mod config;
pub mod cpu;
pub mod message;
mod recorder;
pub mod report;
pub mod scenario;
pub mod stats;
pub mod wire;

pub use client::McpClient;
pub use config::{Config, Scenario};
pub use hdrhistogram::Histogram;
pub use message::{CallError, Endpoint, era_name, parse_era};
pub use report::Report;
pub use scenario::{BenchError, run};
