//! The fuzz corpora (`fuzz/corpus/<target>/`, grown by cargo-afl, docs/fuzzing.md)
//! replayed as ordinary tests: every file through the same entry function its fuzz
//! target calls, so CI checks each input ever found interesting (the regressions
//! included) without afl.
#![allow(missing_docs)]

use std::path::PathBuf;

fn replay(target: &str, entry: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: an empty corpus", dir.display());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let outcome = std::panic::catch_unwind(|| entry(&bytes));
        assert!(outcome.is_ok(), "{target}: {} fails", f.display());
    }
}

#[test]
fn jsonrpc_decode() {
    replay("jsonrpc_decode", mcp_tasks_proto::fuzz::jsonrpc_decode);
}

#[test]
fn line_framer() {
    replay("line_framer", mcp_tasks_rpc::fuzz::line_framer);
}

#[test]
fn sse_parser() {
    replay("sse_parser", mcp_tasks_rpc::fuzz::sse_parser);
}

#[test]
fn cursor() {
    replay("cursor", mcp_tasks_core::fuzz::cursor);
}

#[test]
fn jwt_jwks() {
    replay("jwt_jwks", mcp_tasks_rpc::fuzz::jwt_jwks);
}

#[test]
fn http_router() {
    replay("http_router", mcp_tasks_rpc::fuzz::http_router);
}
