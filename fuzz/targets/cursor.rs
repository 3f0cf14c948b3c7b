//! cargo-afl target: `mcp_tasks_core::fuzz::cursor`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        mcp_tasks_core::fuzz::cursor(data);
    });
}
