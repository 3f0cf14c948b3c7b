//! Test support shared by the crates of mcp-tasks.
//!
//! * `conformance`: the suite every [`mcp_tasks_core::TaskStore`] must pass;
//! * `schema`: validation of wire messages against the official 2025-11-25 schema.

pub mod conformance;
pub mod schema;
