//! The integration tests of the gateway library, in process: the requestor speaks to a
//! gateway [`mcp_tasks_server::Server`] over `tokio::io::duplex`, and the gateway to an
//! upstream `Server` over another pipe (a [`mcp_tasks_gateway::Connector`] of
//! the test's own), with no child process. What needs real upstream processes (process
//! groups, restarts, the environment) is tested in `crates/cli/tests/it/gateway_*.rs`.
#![allow(missing_docs)]

mod support;

mod bridge;
