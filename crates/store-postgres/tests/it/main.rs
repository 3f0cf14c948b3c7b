//! The PostgreSQL store's integration tests (one binary). They need PostgreSQL: the admin
//! URL is `MCP_TASKS_TEST_PG` (default `postgres://postgres@127.0.0.1:5432/postgres`);
//! each test creates a database of its own with a random name and drops it at the end.

mod batch;
mod common;
mod conformance;
mod deltas;
mod group;
mod inputs;
mod listing;
mod notes;
mod open;
mod relay;
mod sessions;
mod usage;
mod wake;
