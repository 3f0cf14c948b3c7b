//! The integration tests of the server library, in process: the requestor speaks to a
//! [`mcp_tasks_server::Server`] over `tokio::io::duplex` (no child process), through
//! [`mcp_tasks_testkit::wire::Wire`], which validates every message against the schema.
//! Protocol behaviour is tested here; what needs the binary (flags, signals, exit codes)
//! is tested in `crates/cli/tests/it/`.
#![allow(missing_docs)]

mod support;

mod argument_validation;
mod bad_input;
mod catalog;
mod catalog_prompt_input;
mod lifecycle;
mod modern;
mod modern_http;
mod modern_tasks;
mod mrtr_replay;
mod mrtr_task;
mod output_schema;
mod tasks;
mod tool_api;
