//! The official TypeScript SDK client (1.32.2, `npm ci --prefix interop`) through the
//! round-robin proxy over three replicas on PostgreSQL, no session affinity:
//! `interop/lib/replicas.mjs` runs task calls with progress tokens, status notifications,
//! elicitation answered, resumption with `Last-Event-ID`, list and cancel; then this test
//! SIGKILLs a replica and the script checks that nothing acknowledged is lost.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::replicas::Cluster;

/// Every flow passes, each SSE stream resumed on other replicas (`--sse-hold 1s`), and a
/// replica killed with SIGKILL loses nothing the client was told.
///
/// Spec (2025-11-25, Streamable HTTP): "The server MAY use this header to replay messages
/// that would have been sent after the last event ID, on the stream that was
/// disconnected"; tasks: "The `progressToken` provided in the initial request remains
/// valid throughout the task lifetime."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_through_round_robin_replicas_with_resumption_and_a_kill() {
    let interop = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop");
    if !interop
        .join("node_modules/@modelcontextprotocol/sdk")
        .exists()
    {
        eprintln!("SKIPPED: the TypeScript SDK is not installed (run `npm ci --prefix interop`)");
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        return;
    }
    let cluster = Cluster::start(&["--sse-hold", "1s", "--sse-retry", "50ms"]).await;
    let url = format!("http://{}/mcp", cluster.proxy.addr());
    let mut node = tokio::process::Command::new("node")
        .args(["lib/replicas.mjs", &url, "tok-alice"])
        .current_dir(&interop)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut stderr = node.stderr.take().unwrap();
    let stderr_text = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    let mut out = Vec::new();
    let run = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == "KILL" {
                let victim = cluster.replicas[1].pid().to_string();
                let victim_addr = cluster.replicas[1].addr;
                let ok = std::process::Command::new("kill")
                    .args(["-KILL", &victim])
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "kill -KILL {victim}");
                // `kill` returns once the signal is sent, not once the process is gone: until
                // it has exited its listening socket still accepts, and a request the proxy
                // sends there in between is reset (a 502 the script would take for ours).
                gone(&victim, victim_addr).await;
                stdin.write_all(b"killed\n").await.unwrap();
                stdin.flush().await.unwrap();
            }
            out.push(line);
        }
        node.wait().await.unwrap()
    };
    let status = tokio::time::timeout(Duration::from_secs(150), run)
        .await
        .expect("node finishes in time");
    let stderr = stderr_text.await.unwrap();
    let stdout = out.join("\n");
    eprintln!("{stdout}\n{stderr}");
    assert!(status.success(), "node failed: {stderr}\n{stdout}");
    for flow in [
        "ok progress",
        "ok status",
        "ok elicitation",
        "ok resumption",
        "ok list",
        "ok cancel",
        "ok after kill",
        "ALL OK",
    ] {
        assert!(out.iter().any(|l| l == flow), "{flow}: {stdout}");
    }
    let hits = cluster.proxy.hits();
    assert!(
        hits.iter().all(|&n| n >= 5),
        "every replica served: {hits:?}"
    );
}

/// Wait (up to 10 s) until process `pid` has exited and its listening socket `addr` is
/// closed. The process is gone when `/proc/PID` is, or when it is a zombie; but a
/// multi-threaded process's leader shows as a zombie while its other threads still exit,
/// and the socket closes only with the last of them, so the port must refuse too.
async fn gone(pid: &str, addr: std::net::SocketAddr) {
    for _ in 0..1000 {
        let exited = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the command name in parentheses: `PID (comm) S ...`.
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
        };
        if exited && tokio::net::TcpStream::connect(addr).await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("process {pid} still running 10 s after SIGKILL");
}
