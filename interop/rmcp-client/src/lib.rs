//! Interop tests (in `tests/`) with rmcp 3.11, the official Rust MCP SDK, as a client of
//! the `mcp-tasks` binary in the 2026-07-28 era with the tasks extension (SEP-2663).
//!
//! The tests run the binary next to the test executable (`target/debug/mcp-tasks`, built
//! by `cargo build --workspace`), or `$MCP_TASKS_BIN`. This library is empty: the crate
//! exists so that rmcp stays a dev-dependency of a test crate, outside the runtime.
