//! `mcp-tasks bench`: a load generator for any MCP 2025-11-25 task server over Streamable
//! HTTP, in the spirit of `redis-benchmark`.
//!
//! Each virtual client opens its own MCP session (`initialize` +
//! `notifications/initialized`, `Mcp-Session-Id`, `MCP-Protocol-Version`) on its own
//! keep-alive HTTP/1.1 connection and runs one [`Scenario`] with a `sleep {ms}` tool as the
//! work. Latencies go into HDR histograms ([`hdrhistogram`], 0.8 % precision); every JSON-RPC error and
//! malformed answer is counted; the bench reports its own CPU time (getrusage) and, given
//! the server's pid, the server's CPU and memory, and flags figures that may be the load
//! generator's limit rather than the server's.
//!
//! * [`client`]: the lean MCP-over-HTTP client (JSON or SSE answers, the latter read with
//!   the workspace's one SSE parser, [`mcp_tasks_rpc::sse`]);
//! * [`scenario`]: the workloads and the run;
//! * [`report`]: JSON and text output;
//! * [`cpu`]: CPU time and memory of the bench and of the server.

pub mod client;
pub mod cpu;
pub mod report;
pub mod scenario;

pub use client::{CallError, Endpoint, McpClient};
pub use hdrhistogram::Histogram;
pub use report::Report;
pub use scenario::{BenchError, Config, Scenario, run};
