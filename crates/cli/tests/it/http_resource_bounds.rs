//! One client must not exhaust the HTTP server (issue 15, items 3, 4 and 7): SSE replay
//! memory, sessions and connections are bounded, and slow or silent clients are timed out.
//! Each test pushes past a bound (small ones, set by flags) and checks a figure of the
//! server process: resident memory, live sessions, open file descriptors.

use crate::http_common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_common::{Client, Server, VERSION, send};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn fds(server: &Server) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
        .unwrap()
        .count()
}

fn init_body() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": { "name": "bounds-test", "version": "0" },
        },
    })
    .to_string()
}

/// `initialize` without `notifications/initialized`: the session id, or the whole
/// refusal (status and JSON body).
async fn raw_initialize(addr: SocketAddr) -> Result<String, (u16, Value)> {
    let h = [
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Accept".to_owned(), "application/json".to_owned()),
    ];
    let r = send(addr, "POST", "/mcp", &h, init_body().as_bytes()).await;
    match r.header("mcp-session-id") {
        Some(s) if r.status == 200 => Ok(s.to_owned()),
        _ => {
            let status = r.status;
            Err((status, r.json().await))
        }
    }
}

/// Status of a `ping` naming session `sid`.
async fn ping(addr: SocketAddr, sid: &str) -> u16 {
    let h = [
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Accept".to_owned(), "application/json".to_owned()),
        ("Mcp-Session-Id".to_owned(), sid.to_owned()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    send(addr, "POST", "/mcp", &h, body.as_bytes()).await.status
}

/// Item 3: large calls answered as SSE streams (the client accepts only
/// `text/event-stream`) used to stay in memory for 5 minutes each (~70 MB/s in the
/// report). A stream read to its end now goes at the session's next request, and the
/// replay bytes are bounded per session and in total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_replay_memory_stays_bounded_under_large_calls() {
    const CALLS: usize = 120;
    const TEXT: usize = 256 * 1024;
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let text = "x".repeat(TEXT);
    let sse_only = [("Accept", "text/event-stream")];
    let call = async |c: &mut Client| {
        let id = c.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"text": text}}});
        let resp = c.post_with(&sse_only, body.to_string().as_bytes()).await;
        let events = resp.sse().until_response().await;
        let m = events.last().and_then(http_common::Event::message).unwrap();
        assert_eq!(m["id"], id);
        assert_eq!(
            m["result"]["content"][0]["text"].as_str().map(str::len),
            Some(TEXT)
        );
    };
    for _ in 0..10 {
        call(&mut c).await;
    }
    let before = server.rss_kib();
    for _ in 0..CALLS {
        call(&mut c).await;
    }
    let after = server.rss_kib();
    let grown = after.saturating_sub(before);
    // Kept for 5 minutes, the streams alone would be CALLS × 256 KiB = 30 MiB.
    eprintln!("RSS {before} KiB -> {after} KiB (+{grown} KiB) over {CALLS} calls of {TEXT} bytes");
    assert!(
        grown < 12 * 1024,
        "RSS grew by {grown} KiB over {CALLS} SSE calls of {TEXT} bytes"
    );
}

/// Item 4: `--max-sessions-per-principal` (without authentication: per client address)
/// replaces the idlest session, and refuses with 503 when every session is in use;
/// `--max-sessions` bounds the total the same way; a session whose client never completed
/// initialization expires after `--session-init-idle`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_per_principal_and_in_total() {
    let server = Server::start(&[
        "--max-sessions-per-principal",
        "3",
        "--session-init-idle",
        "600ms",
    ]);
    let addr = server.addr;
    // Three initialized sessions, each holding its GET stream open: all in use.
    let mut held = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut c = Client::new(&server);
        c.initialize().await;
        let mut sse = c.get(None).await.sse();
        assert!(sse.next().await.unwrap().is_priming());
        held.push(sse);
        clients.push(c);
    }
    let (status, body) = raw_initialize(addr).await.expect_err("refused");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("--max-sessions-per-principal"), "{msg}");
    // Once one is idle (its stream closed, which the server notices), a new session
    // replaces it.
    drop(held.remove(0));
    let deadline = Instant::now() + Duration::from_secs(5);
    let newest = loop {
        match raw_initialize(addr).await {
            Ok(sid) => break sid,
            Err((503, _)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("not admitted: {e:?}"),
        }
    };
    assert_eq!(ping(addr, clients[0].session.as_ref().unwrap()).await, 404);
    for c in &clients[1..] {
        assert_eq!(ping(addr, c.session.as_ref().unwrap()).await, 200);
    }
    // `newest` never completed initialization: it expires after --session-init-idle,
    // while the initialized sessions stay.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(ping(addr, &newest).await, 404);
    assert_eq!(ping(addr, clients[1].session.as_ref().unwrap()).await, 200);
    drop(held);

    // The total: 3000 `initialize` in a row (the report: 30,000 in 12 s, +220 MB kept for
    // an hour) leave at most --max-sessions, the newest, and bounded memory.
    let server = Server::start(&["--max-sessions", "50"]);
    let addr = server.addr;
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(raw_initialize(addr).await.unwrap());
    }
    let rss_at_cap = server.rss_kib();
    let t0 = Instant::now();
    for _ in 0..2900 {
        ids.push(raw_initialize(addr).await.unwrap());
    }
    let rss_after = server.rss_kib();
    let grown = rss_after.saturating_sub(rss_at_cap);
    eprintln!(
        "RSS {rss_at_cap} KiB at the cap -> {rss_after} KiB (+{grown} KiB) after 2900 more sessions in {:?}",
        t0.elapsed()
    );
    let live_tail = {
        let mut n = 0;
        for sid in &ids[ids.len() - 50..] {
            n += usize::from(ping(addr, sid).await == 200);
        }
        n
    };
    assert_eq!(live_tail, 50, "the 50 newest sessions are live");
    for sid in ids[..ids.len() - 50].iter().step_by(97) {
        assert_eq!(ping(addr, sid).await, 404, "older sessions were replaced");
    }
    assert!(
        grown < 8 * 1024,
        "RSS grew by {grown} KiB over 2900 sessions beyond the cap"
    );
}

/// Item 7: half-open connections (partial headers, then silence) used to be kept forever,
/// and 1,100 of them under a 1,024 fd limit stopped the server. Now at most
/// `--max-connections` are open (the rest wait in the listen backlog, costing no fd), each
/// closed after `--header-read-timeout`; a normal client is answered once they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_capped_and_timed_out() {
    const CAP: usize = 8;
    const HALF_OPEN: usize = 24;
    let server = Server::start(&[
        "--max-connections",
        &CAP.to_string(),
        "--header-read-timeout",
        "700ms",
    ]);
    let addr = server.addr;
    let baseline = fds(&server);
    let mut slow = Vec::new();
    for _ in 0..HALF_OPEN {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: appl")
            .await
            .unwrap();
        slow.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open = fds(&server);
    eprintln!("server fds: {baseline} at rest, {open} with {HALF_OPEN} half-open connections");
    assert!(
        open <= baseline + CAP,
        "{open} fds open (baseline {baseline}, cap {CAP})"
    );
    // A half-open connection is closed by the server after the header timeout.
    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(3), slow[0].read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(_) | Err(_))),
        "closed after the header timeout"
    );
    // An idle keep-alive connection is closed after the same timeout: a complete request,
    // its response, then nothing; the server closes the connection.
    let mut keep = TcpStream::connect(addr).await.unwrap();
    keep.write_all(b"GET /elsewhere HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(8), keep.read_to_end(&mut got))
        .await
        .expect("the idle keep-alive connection is closed")
        .unwrap();
    assert!(
        got.starts_with(b"HTTP/1.1 404"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // A normal client is answered once the half-open ones have timed out.
    let t0 = Instant::now();
    let mut c = Client::new(&server);
    c.initialize().await;
    c.rpc("ping", json!({})).await;
    let waited = t0.elapsed();
    assert!(waited < Duration::from_secs(8), "answered after {waited:?}");
    assert!(fds(&server) <= baseline + CAP);
}

/// Item 7: `--max-connections-per-ip` (503 beyond it) and `--body-read-timeout` (408).
#[tokio::test]
async fn per_address_connections_and_slow_bodies_are_refused() {
    let server = Server::start(&[
        "--max-connections-per-ip",
        "3",
        "--body-read-timeout",
        "500ms",
    ]);
    let addr = server.addr;
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(5), extra.read_to_string(&mut text))
        .await
        .expect("refused at once")
        .unwrap();
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("--max-connections-per-ip"), "{text}");
    drop(idle);
    tokio::time::sleep(Duration::from_millis(100)).await;

    // A body announced as 100 bytes of which 10 come: 408 after the body timeout.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .await
    .unwrap();
    let t0 = Instant::now();
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut text))
        .await
        .expect("answered and closed")
        .unwrap();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("--body-read-timeout"), "{text}");
    assert!(t0.elapsed() >= Duration::from_millis(400));
    // The server keeps serving.
    let mut c = Client::new(&server);
    c.initialize().await;
}
