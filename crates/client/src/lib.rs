//! The requestor side of MCP Tasks, in both protocol generations: 2025-11-25 (tasks of
//! the core protocol) and 2026-07-28 with the tasks extension `io.modelcontextprotocol/tasks`
//! (SEP-2663).
//!
//! The client finds the server's era when it connects ([`RevisionChoice::Auto`], the default):
//! it probes with a 2026-07-28 `server/discover` and falls back to `initialize` when the
//! answer is not a recognized modern one; [`ClientConfig::protocol`] can fix the era. In
//! 2026-07-28 every request carries `_meta` (protocol version, client info, capabilities
//! declaring the tasks extension), over HTTP with the `MCP-Protocol-Version`, `Mcp-Method`
//! and `Mcp-Name` headers and no session; [`Client::start_call`] gives a result or a task
//! as the server decides, answering multi round-trip questions; a task is followed by
//! polling `tasks/get` and answering its `inputRequests` with `tasks/update`. What follows
//! describes 2025-11-25; the same calls work in 2026-07-28 except `tasks/list` (and
//! `tasks/result`, which the handle replaces by polling), which the extension has not.
//!
//! A [`Client`] connects to a server over stdio ([`Client::connect_stdio`], spawning it
//! in its own process group) or Streamable HTTP ([`Client::connect_http`]), initializes,
//! and remembers both sides' capabilities. Tools are called plainly
//! ([`Client::call_tool`]) or as tasks ([`Client::call_tool_as_task`]), which gives a
//! [`TaskHandle`]: its status, a stream of its changes, [`TaskHandle::wait`] (polling
//! `tasks/get` at the task's `pollInterval`, sooner on status notifications),
//! [`TaskHandle::result`] (the exact `CallToolResult`, or the task's own JSON-RPC error
//! as [`ClientError::Task`]) and [`TaskHandle::cancel`]. A task is resumed by id from any
//! connection with [`Client::task`]; [`Client::list_tasks`] pages through `tasks/list`.
//!
//! While a task is `input_required`, its questions (`elicitation/create`,
//! `sampling/createMessage`) arrive on the `tasks/result` stream and are answered by the
//! [`ElicitationHandler`] and [`SamplingHandler`] of the [`ClientConfig`].
//!
//! The client can also be a *receiver* of tasks: with a [`TaskReceiver`]
//! ([`ClientConfig::with_task_receiver`]) a server's task-augmented `elicitation/create` and
//! `sampling/createMessage` run as tasks in the client's own store, through the same
//! engine as the server's, and the server polls them with `tasks/get`, fetches them with
//! `tasks/result`, lists and cancels them (see [`receiver`]).
//!
//! Below the client, [`connect`] opens connections (a [`connect::StdioConnector`] starts a
//! command in its own process group with a clean environment, an
//! [`connect::HttpConnector`] opens Streamable HTTP sessions), the same way
//! [`Client::connect_stdio`] and [`Client::connect_http`] do; and [`connection`] is the
//! connection a program holds that passes on what a server sends (the gateway's upstream):
//! its requests, and a [`connection::ServerMessages`] for the server's own.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcp_tasks_client::ClientError> {
//! use mcp_tasks_client::{CallOptions, Client, ClientConfig, HttpClientConfig};
//! use serde_json::json;
//!
//! let client = Client::connect_http(
//!     HttpClientConfig::new("http://127.0.0.1:8080/mcp"),
//!     ClientConfig::default(),
//! )
//! .await?;
//! let task = client
//!     .call_tool_as_task("sleep", json!({"ms": 500}), &CallOptions::default())
//!     .await?;
//! let result = task.result().await?;
//! println!("{}", result.text());
//! # Ok(()) }
//! ```

mod call;
mod client;
mod client_tasks;
mod config;
pub mod connect;
pub mod connection;
pub mod era_cache;
mod error;
pub mod follow;
mod input;
mod modern;
mod process;
pub mod receiver;
pub mod rounds;
mod rpc;
mod start;
mod task;
mod task_follow;
mod task_state;
mod types;

pub use call::{CallOptions, Started};
pub use client::{Client, HttpSessionInfo};
pub use config::{ClientConfig, DEFAULT_MAX_INPUT_ROUNDS, DEFAULT_PROBE_TIMEOUT};
pub use era_cache::EraCache;
pub use error::ClientError;
pub use input::{
    ElicitationHandler, FixedElicitation, FixedSampling, SamplingHandler, ServerRequest, elicit,
    sampling, sampling_refused,
};
pub use mcp_tasks_core::Policy;
pub use mcp_tasks_proto::mcp::{Task, TaskStatus, TaskSupport, Tool};
pub use mcp_tasks_proto::{Revision, RevisionChoice};
pub use mcp_tasks_rpc::http_client::HttpClientConfig;
pub use modern::{Report, TaskDetail, TaskDetailExt};
pub use receiver::{DEFAULT_RECEIVER_POLL_MS, TaskReceiver};
pub use task::TaskHandle;
pub use task_state::{
    DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL, MIN_POLL_INTERVAL, poll_interval, poll_interval_ms,
};
pub use types::{CallToolResult, InitializeResult, TaskCapabilities, parse_task, task_support};
