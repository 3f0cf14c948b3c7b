//! The 16 MiB body limit: larger bodies get 413 (whether announced by Content-Length or
//! not), smaller ones are served.

use crate::http_common;

use http_common::{Client, Server};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: usize = 16 * 1024 * 1024;

/// POST with `Content-Length: len`, streaming the body in the background; the status.
async fn post_len(c: &Client, len: usize, announce: bool) -> u16 {
    let mut s = TcpStream::connect(c.addr).await.unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {}\r\n",
        c.addr,
        c.session.as_deref().unwrap()
    );
    if announce {
        head.push_str(&format!("Content-Length: {len}\r\n\r\n"));
    } else {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
    }
    s.write_all(head.as_bytes()).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let writer = tokio::spawn(async move {
        // A JSON string of `len` bytes in all: {"x":"aaaa..."}.
        let chunk = vec![b'a'; 64 * 1024];
        let mut sent = 0;
        let write = |bytes: Vec<u8>| {
            if announce {
                bytes
            } else {
                let mut c = format!("{:x}\r\n", bytes.len()).into_bytes();
                c.extend_from_slice(&bytes);
                c.extend_from_slice(b"\r\n");
                c
            }
        };
        let open = b"{\"x\":\"".to_vec();
        sent += open.len();
        if wr.write_all(&write(open)).await.is_err() {
            return;
        }
        while sent < len - 2 {
            let n = chunk.len().min(len - 2 - sent);
            sent += n;
            if wr.write_all(&write(chunk[..n].to_vec())).await.is_err() {
                return;
            }
        }
        let _ = wr.write_all(&write(b"\"}".to_vec())).await;
        if !announce {
            let _ = wr.write_all(b"0\r\n\r\n").await;
        }
        // Keep the write half open: a half-closed connection is dropped by the server.
        std::future::pending::<()>().await;
    });
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        let m = tokio::time::timeout(http_common::TIMEOUT, rd.read(&mut buf[n..]))
            .await
            .expect("a status in time")
            .unwrap();
        assert!(
            m > 0,
            "connection closed without a status (got {:?})",
            String::from_utf8_lossy(&buf[..n])
        );
        n += m;
    }
    writer.abort();
    let line = String::from_utf8_lossy(&buf[..n]).to_string();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn bodies_over_16_mib_get_413() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    assert_eq!(post_len(&c, LIMIT + 1, true).await, 413);
    assert_eq!(post_len(&c, LIMIT + 1, false).await, 413);
    // The session goes on.
    c.rpc("ping", json!({})).await;
}

#[tokio::test]
async fn bodies_up_to_the_limit_are_read() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    // Exactly the limit: read whole, then refused as a JSON-RPC message (no method).
    assert_eq!(post_len(&c, LIMIT, true).await, 400);
    // A large but valid request.
    let text = "b".repeat(4 * 1024 * 1024);
    let m = c
        .rpc(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}}),
        )
        .await;
    assert_eq!(
        m["result"]["content"][0]["text"].as_str().unwrap().len(),
        text.len()
    );
}

#[tokio::test]
async fn the_limit_follows_max_message_bytes() {
    let server = Server::start(&["--max-message-bytes", "1000"]);
    let mut c = Client::new(&server);
    c.initialize().await;
    assert_eq!(post_len(&c, 1001, true).await, 413);
    let r = c
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "c".repeat(2000)}}}))
        .await;
    assert_eq!(r.status, 413);
    let body = r.json().await;
    assert!(body.get("id").is_none());
}

/// A 1 MiB body of many tiny nested objects (within the byte limit and the depth limit)
/// would take about a hundred times its size to parse: it is refused before parsing,
/// 413 with -32600 naming the bound; the session goes on, and a 1 MiB body of text is
/// served.
#[tokio::test]
async fn a_body_of_many_tiny_objects_is_refused_before_it_is_parsed() {
    let server = Server::start(&[]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let tiny = r#"{"a":{"b":1}},"#;
    let items = tiny.repeat((1024 * 1024) / tiny.len());
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"t","many":[{}0]}}}}}}"#,
        items
    );
    assert!(body.len() <= 1024 * 1024 + 200);
    let r = c.post_with(&[], body.as_bytes()).await;
    assert_eq!(r.status, 413, "{r:?}");
    let e = r.json().await;
    assert_eq!(e["error"]["code"], -32600, "{e}");
    let m = e["error"]["message"].as_str().unwrap();
    assert!(
        m.contains(&format!(
            "{}-byte bound",
            mcp_tasks_proto::budget::MAX_PARSE_COST
        )),
        "{e}"
    );
    c.rpc("ping", json!({})).await;
    let text = "d".repeat(1024 * 1024);
    let m = c
        .rpc(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}}),
        )
        .await;
    assert_eq!(
        m["result"]["content"][0]["text"].as_str().unwrap().len(),
        text.len()
    );
}
