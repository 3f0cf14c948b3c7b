//! cargo-afl target: `mcp_tasks_rpc::fuzz::line_framer`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        mcp_tasks_rpc::fuzz::line_framer(data);
    });
}
