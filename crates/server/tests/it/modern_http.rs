//! The 2026-07-28 era over Streamable HTTP, beside 2025-11-25 on the same endpoint: no
//! session, the request metadata headers checked against the body, the modern errors with
//! their HTTP statuses. Every modern body is validated against the 2026-07-28 schema.

use std::net::SocketAddr;

use mcp_tasks_proto::CallToolResult;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::modern::{PROTOCOL_VERSION_META, TASKS_EXTENSION};
use mcp_tasks_server::{HttpOptions, Server, Tool};
use mcp_tasks_testkit::schema::MODERN;
use mcp_tasks_testkit::wire::modern_meta;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::text_of;

/// One HTTP exchange: status, lower-cased headers, JSON body (`Null` when empty).
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// POST `body` with `headers` (plus Content-Type, Accept and `Connection: close`).
async fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Reply {
    let body = body.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("{head}\r\n{body}").as_bytes())
        .await
        .unwrap();
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{body:?}: {e}"))
    };
    Reply {
        status,
        headers,
        body,
    }
}

/// A modern request of `method` with `params` and the per-request `_meta`.
fn request(method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = modern_meta(capabilities);
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// POST a modern request with the headers a conforming client sends (`name` for
/// `Mcp-Name`), validating the body against the 2026-07-28 schema.
async fn modern(addr: SocketAddr, method: &str, name: Option<&str>, msg: &Value) -> Reply {
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = name {
        headers.push(("Mcp-Name", n));
    }
    let r = post(addr, &headers, msg).await;
    MODERN
        .validate_response(method, &r.body)
        .unwrap_or_else(|e| panic!("{}: {e}", r.body));
    r
}

/// A server with `echo` and `batch` (`taskSupport: required`), tasks on, over HTTP on a
/// loopback port.
async fn serve() -> SocketAddr {
    let echo = Tool::new(
        "echo",
        "Returns its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args: Value, _cx| async move {
            Ok(CallToolResult::text(
                args["text"].as_str().unwrap_or_default(),
            ))
        },
    );
    let batch = Tool::new(
        "batch",
        "Always a task.",
        json!({"type": "object"}),
        |_args: Value, _cx| async move { Ok(CallToolResult::text("batch done")) },
    )
    .task_support(TaskSupport::Required);
    let ask = Tool::new(
        "ask",
        "Asks for a name, always as a task.",
        json!({"type": "object"}),
        |_args: Value, cx| async move {
            let r = cx
                .elicit_raw(json!({"mode": "form", "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
                .await?;
            Ok(CallToolResult::text(format!(
                "got {}",
                r["content"]["name"].as_str().unwrap_or("-")
            )))
        },
    )
    .task_support(TaskSupport::Required);
    let region = Tool::new(
        "region",
        "Returns its region, mirrored in Mcp-Param-Region.",
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}),
        |args: Value, _cx| async move {
            Ok(CallToolResult::text(
                args["region"].as_str().unwrap_or("none"),
            ))
        },
    );
    let server = Server::builder()
        .tools([echo, batch, ask, region])
        .build()
        .await
        .expect("a server with tasks in memory");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let transport = mcp_tasks_server::Transport::http(listener, HttpOptions::new());
        server.serve(transport, std::future::pending()).await
    });
    addr
}

#[tokio::test]
async fn a_modern_call_needs_no_session_and_gets_none() {
    let addr = serve().await;
    let msg = request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
        json!({}),
    );
    let r = modern(addr, "tools/call", Some("echo"), &msg).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["result"]["resultType"], "complete");
    assert_eq!(text_of(&r.body["result"]), "hi");
    assert!(r.header("mcp-session-id").is_none(), "no session is minted");
    // A session id sent anyway is ignored.
    let r = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
            ("Mcp-Session-Id", "no-such-session"),
        ],
        &msg,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = modern(
        addr,
        "server/discover",
        None,
        &request("server/discover", json!({}), json!({})),
    )
    .await;
    assert_eq!(d.status, 200);
    assert_eq!(
        d.body["result"]["capabilities"]["extensions"],
        json!({TASKS_EXTENSION: {}})
    );
}

#[tokio::test]
async fn the_legacy_era_still_opens_a_session_on_the_same_endpoint() {
    let addr = serve().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "l", "version": "1"}}});
    let r = post(addr, &[], &init).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["result"]["protocolVersion"], "2025-11-25");
    assert!(r.header("mcp-session-id").is_some());
    // A legacy header with an unknown version is refused as before.
    let r = post(addr, &[("MCP-Protocol-Version", "1999-01-01")], &init).await;
    assert_eq!(r.status, 400);
}

/// `x-mcp-header` parameters: the `Mcp-Param-{Name}` header must carry the argument
/// (decoded when Base64-encoded); a missing, different, undecodable or argument-less one
/// is 400 with -32020, and the tool does not run.
#[tokio::test]
async fn mcp_param_headers_are_checked_against_the_arguments() {
    let addr = serve().await;
    let base = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "region"),
    ];
    let call = |args: Value| {
        request(
            "tools/call",
            json!({"name": "region", "arguments": args}),
            json!({}),
        )
    };
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h = base.to_vec();
        h.extend_from_slice(extra);
        h
    };
    for (args, extra) in [
        (
            json!({"region": "us-west1"}),
            with(&[("Mcp-Param-Region", "us-west1")]),
        ),
        (
            json!({"region": "Hello"}),
            with(&[("mcp-param-region", "=?base64?SGVsbG8=?=")]),
        ),
        // Without both markers the value is literal.
        (
            json!({"region": "SGVsbG8="}),
            with(&[("Mcp-Param-Region", "SGVsbG8=")]),
        ),
        (json!({}), with(&[])),
    ] {
        let r = post(addr, &extra, &call(args.clone())).await;
        assert_eq!(r.status, 200, "{extra:?}: {}", r.body);
        let want = args["region"].as_str().unwrap_or("none");
        assert_eq!(r.body["result"]["content"][0]["text"], want, "{}", r.body);
    }
    for (args, extra) in [
        // The header is missing while the argument is there.
        (json!({"region": "us-west1"}), with(&[])),
        (
            json!({"region": "us-west1"}),
            with(&[("Mcp-Param-Region", "eu-west1")]),
        ),
        // Broken Base64 padding; characters outside the alphabet.
        (
            json!({"region": "Hello"}),
            with(&[("Mcp-Param-Region", "=?base64?SGVsbG8?=")]),
        ),
        (
            json!({"region": "Hello"}),
            with(&[("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=")]),
        ),
        // A header for an argument that is not there.
        (json!({}), with(&[("Mcp-Param-Region", "us-west1")])),
    ] {
        let r = post(addr, &extra, &call(args)).await;
        assert_eq!(r.status, 400, "{extra:?}: {}", r.body);
        assert_eq!(r.body["error"]["code"], -32020, "{extra:?}: {}", r.body);
        MODERN
            .validate_def("HeaderMismatchError", &r.body)
            .unwrap_or_else(|e| panic!("{extra:?}: {e}"));
    }
}

#[tokio::test]
async fn header_mismatches_are_400_with_32020() {
    let addr = serve().await;
    let msg = request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
        json!({}),
    );
    let cases: &[&[(&str, &str)]] = &[
        // Mcp-Method differs from the body.
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
            ("Mcp-Name", "echo"),
        ],
        // Mcp-Name differs from params.name.
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "other"),
        ],
        // Mcp-Name missing for tools/call.
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
        ],
        // Mcp-Method missing.
        &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Name", "echo")],
        // MCP-Protocol-Version missing while the body is modern.
        &[("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
        // MCP-Protocol-Version differs from the body's.
        &[
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ],
    ];
    for headers in cases {
        let r = post(addr, headers, &msg).await;
        assert_eq!(r.status, 400, "{headers:?}: {}", r.body);
        MODERN
            .validate_def("HeaderMismatchError", &r.body)
            .unwrap_or_else(|e| panic!("{headers:?}: {e}"));
        assert_eq!(r.body["id"], 1);
    }
    // A modern header on a body without the modern `_meta` (or without its version): a
    // malformed request, -32602 with 400, answering its id (not a header mismatch).
    let caps = "io.modelcontextprotocol/clientCapabilities";
    for params in [json!({}), json!({"_meta": {caps: {}}})] {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params});
        let r = post(
            addr,
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/list"),
            ],
            &body,
        )
        .await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.body["error"]["code"], -32602, "{}", r.body);
        assert_eq!(r.body["id"], 2, "{}", r.body);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("protocolVersion"),
            "{}",
            r.body
        );
    }
    // A Base64-encoded Mcp-Name is decoded before the comparison.
    let named = request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "b"}}),
        json!({}),
    );
    let r = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "=?base64?ZWNobw==?="),
        ],
        &named,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn modern_errors_carry_their_http_statuses() {
    let addr = serve().await;
    // Unsupported version: 400 with -32022 listing both eras.
    let mut msg = request("tools/list", json!({}), json!({}));
    msg["params"]["_meta"][PROTOCOL_VERSION_META] = json!("2099-01-01");
    let r = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
        &msg,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    MODERN
        .validate_def("UnsupportedProtocolVersionError", &r.body)
        .unwrap();
    let supported = r.body["error"]["data"]["supported"].as_array().unwrap();
    assert!(supported.contains(&json!("2026-07-28")) && supported.contains(&json!("2025-11-25")));
    // Missing clientCapabilities: 400 with -32602.
    let mut msg = request("tools/list", json!({}), json!({}));
    msg["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let r = post(
        addr,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        &msg,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["code"], -32602);
    // A required tool for a client without the tasks extension: 400 with -32021.
    let r = modern(
        addr,
        "tools/call",
        Some("batch"),
        &request("tools/call", json!({"name": "batch"}), json!({})),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    MODERN
        .validate_def("MissingRequiredClientCapabilityError", &r.body)
        .unwrap();
    // A method this era does not have: 404 with -32601.
    let r = modern(addr, "ping", None, &request("ping", json!({}), json!({}))).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.body["error"]["code"], -32601);
    // tasks/get carries Mcp-Name = taskId; an unknown task is -32602 with 200.
    let r = modern(
        addr,
        "tasks/get",
        Some("t-1"),
        &request(
            "tasks/get",
            json!({"taskId": "t-1"}),
            json!({"extensions": {TASKS_EXTENSION: {}}}),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["error"]["code"], -32602);
}

#[tokio::test]
async fn a_task_created_over_http_is_read_by_a_later_request() {
    let addr = serve().await;
    let ext = json!({"extensions": {TASKS_EXTENSION: {}}});
    let created = modern(
        addr,
        "tools/call",
        Some("batch"),
        &request("tools/call", json!({"name": "batch"}), ext.clone()),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.body["result"]["resultType"], "task");
    let id = created.body["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut last = Value::Null;
    for _ in 0..200 {
        let r = modern(
            addr,
            "tasks/get",
            Some(&id),
            &request("tasks/get", json!({"taskId": id}), ext.clone()),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        last = r.body["result"].clone();
        if last["status"] == "completed" {
            assert_eq!(text_of(&last["result"]), "batch done");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the task never completed: {last}");
}

/// `tasks/get` of `id` over HTTP until `pred` holds; returns the result.
async fn poll(addr: SocketAddr, id: &str, caps: &Value, pred: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..500 {
        let r = modern(
            addr,
            "tasks/get",
            Some(id),
            &request("tasks/get", json!({"taskId": id}), caps.clone()),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        last = r.body["result"].clone();
        if pred(&last) {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never reached: {last}");
}

#[tokio::test]
async fn input_requests_are_answered_by_a_later_request_on_another_connection() {
    let addr = serve().await;
    let caps = json!({"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}});
    let created = modern(
        addr,
        "tools/call",
        Some("ask"),
        &request("tools/call", json!({"name": "ask"}), caps.clone()),
    )
    .await;
    let id = created.body["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let asked = poll(addr, &id, &caps, |t| t["status"] == "input_required").await;
    let key = asked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let ack = modern(
        addr,
        "tasks/update",
        Some(&id),
        &request(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}),
            caps.clone(),
        ),
    )
    .await;
    assert_eq!(ack.status, 200, "{}", ack.body);
    let done = poll(addr, &id, &caps, |t| t["status"] == "completed").await;
    assert_eq!(text_of(&done["result"]), "got Ada");
}
