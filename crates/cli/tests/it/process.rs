//! The process: version, help, logs on stderr only, clean exits.

use crate::common;
use std::process::Command;
use std::time::Duration;

use common::{Stdio, bin};
use serde_json::json;

#[test]
fn version_and_help() {
    let out = Command::new(bin()).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("mcp-tasks "));
    let out = Command::new(bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Examples:") && help.contains("serve --stdio"),
        "{help}"
    );
}

#[test]
fn exits_cleanly_on_stdin_eof() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    s.close_stdin();
    let status = s.wait_exit(Duration::from_secs(5)).expect("exit after EOF");
    assert!(status.success(), "{status}");
}

#[test]
fn exits_cleanly_on_sigterm() {
    let mut s = Stdio::spawn(&[]);
    s.initialize();
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = s
        .wait_exit(Duration::from_secs(5))
        .expect("exit after SIGTERM");
    assert!(status.success(), "{status}");
}

#[test]
fn logs_never_reach_stdout() {
    // Every line on stdout is a JSON-RPC message even at trace level.
    let mut child = Command::new(bin())
        .args(["serve", "--stdio", "--store", "memory"])
        .env("RUST_LOG", "trace")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().unwrap();
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
        writeln!(stdin, "{init}").unwrap();
        writeln!(stdin, "{}", json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1},"task":{}}})).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().count() >= 2);
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("non-JSON on stdout: {line}: {e}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    assert!(!out.stderr.is_empty(), "logs go to stderr");
}
