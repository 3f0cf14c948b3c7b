//! What a client can make the server write or reach beyond its bounds: client strings in
//! log lines are cut; `Host` is checked against DNS rebinding on every path; the dashboard
//! API and the notifications and responses a client POSTs count toward `--rate-limit
//! requests`; `/readyz` names no database to an anonymous caller.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::http_common::{Client, Server, TOKENS_ENV, send};

/// The status and body of `GET path` sent with `Host: host` on a fresh connection.
async fn get_with_host(addr: SocketAddr, path: &str, host: &str) -> (u16, String) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(20), tcp.read_to_string(&mut raw))
        .await
        .expect("an answer")
        .unwrap();
    let status = raw[9..12].parse().unwrap();
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
    (status, body)
}

/// A page served from a rebinding name (its `Host`) reads neither the endpoint, the
/// dashboard, its API, nor the metrics; the same paths by `localhost:PORT` or the address
/// are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_name_is_refused_on_every_path_and_localhost_is_served() {
    let server = Server::start(&[]);
    let addr = server.addr;
    let port = addr.port();
    for path in ["/mcp", "/ui/", "/ui/api/tasks", "/metrics"] {
        for host in ["evil.example", &format!("evil.example:{port}")] {
            let (status, body) = get_with_host(addr, path, host).await;
            assert_eq!(status, 403, "{path} with Host {host}: {body}");
            assert!(
                body.contains("host `evil.example") && body.contains("--allowed-host"),
                "{body}"
            );
        }
        for host in [
            format!("localhost:{port}"),
            "localhost".to_owned(),
            addr.to_string(),
        ] {
            let (status, body) = get_with_host(addr, path, &host).await;
            assert_ne!(status, 403, "{path} with Host {host}: {body}");
        }
    }
    let (status, _) = get_with_host(addr, "/ui/api/tasks", &format!("localhost:{port}")).await;
    assert_eq!(status, 200);
    let (status, _) = get_with_host(addr, "/metrics", "localhost").await;
    assert_eq!(status, 200);

    // A listed name is served.
    let server = Server::start(&["--allowed-host", "mcp.example.com"]);
    let (status, _) = get_with_host(server.addr, "/ui/api/tasks", "mcp.example.com:443").await;
    assert_eq!(status, 200);
    let (status, _) = get_with_host(server.addr, "/ui/api/tasks", "evil.example").await;
    assert_eq!(status, 403);
}

/// The head (status line and headers, lower-case names) and body of a raw request on a
/// fresh connection.
async fn raw_request(addr: SocketAddr, req: &str) -> (String, String) {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(20), tcp.read_to_string(&mut raw))
        .await
        .expect("an answer")
        .unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    (head.to_ascii_lowercase(), body.to_owned())
}

/// The values of header `name` in `head`, in order.
fn header_values(head: &str, name: &str) -> Vec<String> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.trim() == name)
        .map(|(_, v)| v.trim().to_owned())
        .collect()
}

/// A POST on the endpoint without `Origin` (what every non-browser client sends, served
/// without the router's layers: `handlers::plain_post`) passes the same checks and carries
/// the same CORS headers as a request the router serves: a foreign `Host` is refused with
/// 403, a missing token with 401, and the answers carry the `Vary` and
/// `Access-Control-Expose-Headers` of a GET (which the router serves).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_without_origin_is_checked_and_answered_as_the_router_answers() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-plain plain")]);
    let addr = server.addr;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let post = |host: &str, auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let token = "Authorization: Bearer tok-plain\r\n";
    let (head, answer) = raw_request(addr, &post("evil.example", token)).await;
    assert!(head.starts_with("http/1.1 403"), "{head}\n{answer}");
    assert!(answer.contains("host `evil.example"), "{answer}");
    let (head, _) = raw_request(addr, &post("localhost", "")).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(
        !header_values(&head, "www-authenticate").is_empty(),
        "{head}"
    );
    // Served: 400 (no session), with the router's CORS headers.
    let (plain, answer) = raw_request(addr, &post("localhost", token)).await;
    assert!(plain.starts_with("http/1.1 400"), "{plain}\n{answer}");
    let (routed, _) = raw_request(
        addr,
        &format!("GET /mcp HTTP/1.1\r\nHost: localhost\r\n{token}Connection: close\r\n\r\n"),
    )
    .await;
    for name in ["vary", "access-control-expose-headers"] {
        let want = header_values(&routed, name);
        assert!(!want.is_empty(), "the router's answer has {name}: {routed}");
        assert_eq!(header_values(&plain, name), want, "{name}");
    }
    assert!(header_values(&plain, "access-control-allow-origin").is_empty());
}

/// Lines of `text` (the server's stderr, the audit file) longer than the cap allows.
fn long_lines(text: &str) -> Vec<usize> {
    text.lines()
        .map(str::len)
        .filter(|n| *n > 8 * 1024)
        .collect()
}

/// A `tasks/get` with a 1 MiB request id and a 1 MiB task id: the audit line of the failed
/// lookup and every stderr line (the id is a field of the request's span) quote at most a
/// few hundred bytes of each, and say they were cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_request_id_and_task_id_are_cut_in_every_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.log");
    let server = Server::start_env(
        &["--audit-log", audit.to_str().unwrap()],
        &[("RUST_LOG", "debug")],
    );
    let mut c = Client::new(&server);
    c.initialize().await;
    let mib = 1 << 20;
    let body = json!({
        "jsonrpc": "2.0",
        "id": "i".repeat(mib),
        "method": "tasks/get",
        "params": {"taskId": "t".repeat(mib)},
    });
    let resp = c
        .post_with(
            &[("Accept", "application/json")],
            body.to_string().as_bytes(),
        )
        .await;
    let answer: Value = serde_json::from_slice(&resp.bytes().await).unwrap();
    assert_eq!(answer["error"]["code"], -32602, "{}", answer["error"]);
    let cut = format!("…(cut, {mib} bytes)");
    let deadline = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        if text.contains("lookup_failed") {
            break text;
        }
        assert!(Instant::now() < deadline, "no lookup_failed line: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(long_lines(&text).is_empty(), "{:?}", long_lines(&text));
    let line: Value =
        serde_json::from_str(text.lines().find(|l| l.contains("lookup_failed")).unwrap()).unwrap();
    assert!(line["taskId"].as_str().unwrap().ends_with(&cut), "{line}");
    let stderr = server.stderr();
    assert!(long_lines(&stderr).is_empty(), "{:?}", long_lines(&stderr));
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("failed task lookup") && l.contains(&cut)),
        "the lookup's log line shows the cut id"
    );
}

/// `initialize`'s `clientInfo` (kept by the session within its 64 KiB bound) is quoted
/// in the "session initialized" line cut to a few hundred bytes, saying it was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_client_info_is_cut_in_the_log_line() {
    let server = Server::start_env(&[], &[("RUST_LOG", "info")]);
    let c = Client::new(&server);
    let name = "n".repeat(60_000);
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": name, "version": "v".repeat(2_000)},
        },
    });
    let resp = c
        .post_with(
            &[("Accept", "application/json")],
            body.to_string().as_bytes(),
        )
        .await;
    let answer: Value = serde_json::from_slice(&resp.bytes().await).unwrap();
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let stderr = loop {
        let stderr = server.stderr();
        if stderr.contains("session initialized") {
            break stderr;
        }
        assert!(
            Instant::now() < deadline,
            "no `session initialized` line: {stderr}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(long_lines(&stderr).is_empty(), "{:?}", long_lines(&stderr));
    let line = stderr
        .lines()
        .find(|l| l.contains("session initialized"))
        .unwrap();
    assert!(line.contains("…(cut, 60000 bytes)"), "{line}");
    assert!(line.contains("…(cut, 2000 bytes)"), "{line}");
}

/// `--rate-limit requests=N`: the dashboard's API counts (the N+1th call is 429 with
/// `Retry-After` and -32029), and a lookup refused by `lookup-failures` is 429 too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_api_is_rate_limited_with_429() {
    let server = Server::start(&["--rate-limit", "requests=3/h"]);
    for _ in 0..3 {
        let r = send(server.addr, "GET", "/ui/api/tasks", &[], b"").await;
        assert_eq!(r.status, 200);
    }
    let r = send(server.addr, "GET", "/ui/api/tasks", &[], b"").await;
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
    let body: Value = serde_json::from_slice(&r.bytes().await).unwrap();
    assert_eq!(body["error"]["code"], -32029, "{body}");
    assert_eq!(body["error"]["data"]["limit"], "requests", "{body}");

    let server = Server::start(&["--rate-limit", "lookup-failures=2/h"]);
    let mut statuses = Vec::new();
    for n in 0..4 {
        let path = format!("/ui/api/tasks/guess-{n}");
        statuses.push(send(server.addr, "GET", &path, &[], b"").await.status);
    }
    assert_eq!(statuses[..2], [404, 404], "{statuses:?}");
    assert_eq!(statuses[3], 429, "{statuses:?}");
}

/// Notifications and responses a client POSTs count toward `--rate-limit requests`: past
/// it they are refused with 429 and -32029 instead of being taken in (and relayed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posted_notifications_and_responses_count_toward_the_request_limit() {
    let server = Server::start(&["--rate-limit", "requests=5/h"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let mut refused = None;
    for n in 0..10 {
        let msg = if n % 2 == 0 {
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": n, "progress": 1}})
        } else {
            json!({"jsonrpc": "2.0", "id": format!("nobody-asked-{n}"), "result": {}})
        };
        let r = c.post(&msg).await;
        if r.status == 429 {
            refused = Some((n, r));
            break;
        }
        assert_eq!(r.status, 202, "{n}");
    }
    let (n, r) = refused.expect("never refused");
    assert!(n <= 5, "refused only at {n}");
    assert!(r.header("retry-after").is_some());
    let body: Value = r.json().await;
    assert_eq!(body["error"]["code"], -32029, "{body}");
    // Requests are refused as well: it is the same allowance.
    let (_, r) = c.request("tools/list", json!({})).await;
    assert_eq!(r.status, 429);
}
