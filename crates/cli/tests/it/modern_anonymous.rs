//! Anonymous 2026-07-28 requests over HTTP (no authentication): each is served without a
//! session, so the per-requester bounds count them by the client's address, not per
//! request. Every POST here comes from 127.0.0.1.

use serde_json::{Value, json};

use crate::http_common::{Client, Server};

/// A modern `tools/call` of `ask` (a `required` tool: a task at once) from a client with
/// the tasks extension and form elicitation; the JSON-RPC response.
async fn create(c: &Client, id: i64) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "ask", "arguments": {"question": "Name?"},
        "_meta": mcp_tasks_testkit::wire::modern_meta(json!({
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        })),
    }});
    let r = c
        .post_with(
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "ask"),
            ],
            body.to_string().as_bytes(),
        )
        .await;
    let v = r.json().await;
    assert_eq!(v["id"], json!(id), "{v}");
    v
}

/// `--max-active-tasks 5`: five anonymous modern creations from one address are tasks
/// (waiting for input, so active); the sixth is refused, as five of one session would be.
#[tokio::test]
async fn anonymous_modern_creations_from_one_address_share_the_active_task_bound() {
    let server = Server::start(&["--max-active-tasks", "5"]);
    let c = Client::new(&server);
    for id in 1..=5 {
        let r = create(&c, id).await;
        assert_eq!(r["result"]["resultType"], "task", "{r}");
    }
    let r = create(&c, 6).await;
    let e = &r["error"];
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("at most 5"),
        "{r}"
    );
}

/// `--rate-limit create=5/h`: the sixth anonymous modern creation from one address is
/// refused by the `create` limit (a fresh requester per request would never be).
#[tokio::test]
async fn the_create_rate_limit_counts_anonymous_modern_requests_per_address() {
    let server = Server::start(&["--rate-limit", "create=5/h"]);
    let c = Client::new(&server);
    for id in 1..=5 {
        let r = create(&c, id).await;
        assert_eq!(r["result"]["resultType"], "task", "{r}");
    }
    let r = create(&c, 6).await;
    assert_eq!(r["error"]["data"]["limit"], "create", "{r}");
}
