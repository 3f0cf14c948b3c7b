//! cargo-afl target: `mcp_tasks_rpc::fuzz::sse_parser`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        mcp_tasks_rpc::fuzz::sse_parser(data);
    });
}
