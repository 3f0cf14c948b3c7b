//! cargo-afl target: `mcp_tasks_proto::fuzz::jsonrpc_decode`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        mcp_tasks_proto::fuzz::jsonrpc_decode(data);
    });
}
