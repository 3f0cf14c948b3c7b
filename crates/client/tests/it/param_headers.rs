//! `x-mcp-header` tool parameters over Streamable HTTP in 2026-07-28, against our own
//! server (which refuses a `tools/call` whose `Mcp-Param-{Name}` headers do not match the
//! arguments with -32020): the client mirrors the annotated arguments, and leaves out of
//! `tools/list` a tool whose annotations are invalid (conformance client scenarios
//! `http-custom-headers`, `http-invalid-tool-headers`).

use mcp_tasks_client::{Client, ClientConfig, HttpClientConfig, Revision, RevisionChoice};
use mcp_tasks_proto::CallToolResult;
use mcp_tasks_server::{HttpOptions, Server, Tool};
use serde_json::{Value, json};

/// `region` (a valid annotation; echoes its argument) and `broken` (an annotation on a
/// `number`, which the spec forbids).
async fn serve() -> String {
    let region = Tool::new(
        "region",
        "Returns its region, mirrored in Mcp-Param-Region.",
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"}}}),
        |args: Value, _cx| async move {
            Ok(CallToolResult::text(format!(
                "{} {}",
                args["region"].as_str().unwrap_or("none"),
                args["n"]
            )))
        },
    );
    let broken = Tool::new(
        "broken",
        "An x-mcp-header on a number.",
        json!({"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}),
        |_args: Value, _cx| async move { Ok(CallToolResult::text("called")) },
    );
    let server = Server::builder()
        .tools([region, broken])
        .no_tasks()
        .build()
        .await
        .expect("a server without tasks");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let transport = mcp_tasks_server::Transport::http(listener, HttpOptions::new());
        server.serve(transport, std::future::pending()).await
    });
    url
}

async fn connect(url: &str) -> Client {
    Client::connect_http(
        HttpClientConfig::new(url),
        ClientConfig::default().with_protocol(RevisionChoice::Fixed(Revision::V2026_07_28)),
    )
    .await
    .expect("connect")
}

/// Spec (streamable HTTP): "Clients using the Streamable HTTP transport **MUST** reject
/// tool definitions where any `x-mcp-header` value violates these constraints. Rejection
/// means the client **MUST** exclude the invalid tool from the result of `tools/list`";
/// "conforming clients **MUST** mirror the designated parameter values into HTTP headers"
/// (a non-ASCII value in the Base64 sentinel form, which our server decodes).
#[tokio::test]
async fn annotated_arguments_are_mirrored_and_invalid_tools_left_out() {
    let url = serve().await;
    let c = connect(&url).await;
    let tools = c.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["region"], "the invalid tool is excluded");
    let r = c
        .call_tool("region", json!({"region": "Hello, 世界", "n": 7}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Hello, 世界 7");
    // An absent argument: no header, and the server agrees.
    let r = c.call_tool("region", json!({"n": 1})).await.unwrap();
    assert_eq!(r.text(), "none 1");
}

/// Spec (streamable HTTP): "If the server rejects a request with a `HeaderMismatch` error
/// because required `Mcp-Param-*` headers are missing ..., the client **SHOULD** call
/// `tools/list` to check for changes to the tool's `inputSchema`, then retry the original
/// request with the appropriate headers": a call before any `tools/list` goes through.
#[tokio::test]
async fn a_call_before_tools_list_is_retried_with_its_headers() {
    let url = serve().await;
    let c = connect(&url).await;
    let r = c
        .call_tool("region", json!({"region": "eu-west1", "n": 2}))
        .await
        .unwrap();
    assert_eq!(r.text(), "eu-west1 2");
}
