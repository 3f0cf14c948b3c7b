//! cargo-afl target: `mcp_tasks_rpc::fuzz::jwt_jwks`.
fn main() {
    afl::fuzz!(|data: &[u8]| {
        mcp_tasks_rpc::fuzz::jwt_jwks(data);
    });
}
