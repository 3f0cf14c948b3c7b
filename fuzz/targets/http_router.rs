//! cargo-afl target: `mcp_tasks_rpc::fuzz::http_router`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        mcp_tasks_rpc::fuzz::http_router(data);
    });
}
