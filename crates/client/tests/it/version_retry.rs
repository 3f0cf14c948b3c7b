//! The `server/discover` probe and an `UnsupportedProtocolVersionError` that lists the
//! version this client speaks: the client probes again, once, with it (conformance client
//! scenario `request-metadata`). Spec (versioning): "Use one of the versions in its
//! advertised `supported` list."

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_tasks_client::{Client, ClientConfig, ClientError, Revision, RevisionChoice};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A scripted stdio server refusing the first `refusals` probes with -32022 (supported:
/// 2026-07-28), then answering with a `DiscoverResult`; returns how many probes it saw.
async fn connect(refusals: usize) -> (Result<Client, ClientError>, usize) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    tokio::spawn(async move {
        let (sr, mut sw) = tokio::io::split(server_io);
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["method"] != "server/discover" {
                continue;
            }
            // Counted before the answer: final by the time `connect` returns.
            let probes = counter.fetch_add(1, Ordering::SeqCst) + 1;
            assert_eq!(
                m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
            let reply = if probes <= refusals {
                json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}})
            } else {
                json!({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "complete",
                    "ttlMs": 0, "cacheScope": "private", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}})
            };
            let mut text = reply.to_string();
            text.push('\n');
            sw.write_all(text.as_bytes()).await.unwrap();
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    let config =
        ClientConfig::default().with_protocol(RevisionChoice::Fixed(Revision::V2026_07_28));
    let client = Client::connect_io(BufReader::new(cr), cw, config).await;
    if let Ok(c) = &client {
        assert!(c.revision().is_stateless());
    }
    (client, seen.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_refused_version_the_server_lists_is_probed_again_once() {
    let (client, probes) = connect(1).await;
    assert!(client.is_ok(), "{:?}", client.err());
    assert_eq!(probes, 2);
    // Refused twice: the second refusal is the error, and there is no third probe.
    let (client, probes) = connect(2).await;
    match client {
        Err(ClientError::Rpc { error, .. }) => assert_eq!(error.code, -32022),
        other => panic!("expected the server's -32022: {:?}", other.err()),
    }
    assert_eq!(probes, 2);
}
