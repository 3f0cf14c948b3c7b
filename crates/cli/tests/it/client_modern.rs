//! The client library against our dual-era server in 2026-07-28: era detection on both
//! transports, its bounds (the probe timeout, the multi round-trip rounds), a plain call
//! answered through multi round-trip results, and a task through `inputRequests`.

use std::time::{Duration, Instant};

use mcp_tasks_client::{
    CallOptions, Client, ClientConfig, ClientError, FixedSampling, HttpClientConfig, Revision,
    RevisionChoice, Started, TaskStatus,
};
use serde_json::json;

use crate::client_support::{HttpServer, answering, bin, stdio_command};

fn auto(config: ClientConfig) -> ClientConfig {
    config.with_protocol(RevisionChoice::Auto)
}

#[tokio::test]
async fn our_server_is_found_modern_on_both_transports() {
    let c = Client::connect_stdio(stdio_command("memory", &[]), auto(answering()))
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    assert_eq!(c.protocol_version(), "2026-07-28");
    assert!(c.server_tasks().tools_call && !c.server_tasks().list);
    assert_eq!(
        c.client_capabilities()["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    let r = c.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r.text(), "hi");
    c.close().await;

    let srv = HttpServer::start(&[]);
    let c = Client::connect_http(HttpClientConfig::new(&srv.url), auto(answering()))
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    // No session in 2026-07-28.
    assert_eq!(c.http_session().unwrap().session_id, None);
    let r = c
        .call_tool("echo", json!({"text": "over http"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "over http");
    // A `required` tool becomes a task; its question is answered with tasks/update.
    let r = c
        .call_tool("ask", json!({"question": "Name?"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "42");
    assert!(matches!(
        c.list_tasks().await,
        Err(ClientError::Unsupported { .. })
    ));
    c.close().await;
}

/// A server that does not answer the probe is legacy after `probe_timeout`.
#[tokio::test]
async fn a_silent_probe_falls_back_to_initialize_after_the_probe_timeout() {
    // The shell swallows the first line (the probe), then the server reads the rest.
    let script = format!("read -r probe; exec {} serve --stdio --store memory", bin());
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", &script]).env("RUST_LOG", "warn");
    let mut config = auto(ClientConfig::default());
    config.probe_timeout = Duration::from_millis(300);
    let started = Instant::now();
    let c = Client::connect_stdio(cmd, config).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(c.revision(), Revision::V2025_11_25);
    assert_eq!(c.protocol_version(), "2025-11-25");
    c.close().await;
}

/// Without the tasks extension a plain call that samples is answered by multi
/// round-trip results; past `max_input_rounds` the client gives up.
#[tokio::test]
async fn a_plain_call_goes_through_input_required_and_its_bound() {
    let sampling = FixedSampling {
        model: "test".into(),
        text: "short".into(),
    };
    let mut config = auto(ClientConfig::default().with_sampling(sampling.clone()));
    config.tasks_extension = false;
    let c = Client::connect_stdio(stdio_command("memory", &[]), config)
        .await
        .unwrap();
    assert_eq!(c.revision(), Revision::V2026_07_28);
    let r = c
        .start_call(
            "summarize",
            json!({"text": "a long text"}),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let Started::Result(r) = r else {
        panic!("no task without the extension: {r:?}")
    };
    assert_eq!(r.text(), "short");
    // A `required` tool needs the extension: -32021.
    let e = c
        .call_tool("ask", json!({"question": "?"}))
        .await
        .unwrap_err();
    assert_eq!(e.rpc_error().map(|e| e.code), Some(-32021), "{e}");
    c.close().await;

    let mut config = auto(ClientConfig::default().with_sampling(sampling));
    config.tasks_extension = false;
    config.max_input_rounds = 0;
    let c = Client::connect_stdio(stdio_command("memory", &[]), config)
        .await
        .unwrap();
    let e = c
        .call_tool("summarize", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ClientError::Protocol(m) if m.contains("after 0 rounds")),
        "{e}"
    );
    c.close().await;
}

/// A task is followed by polling; a failed one gives its JSON-RPC error, an `isError`
/// one completes; a cancelled one ends `cancelled`.
#[tokio::test]
async fn tasks_end_completed_failed_and_cancelled() {
    let c = Client::connect_stdio(
        stdio_command("memory", &["--task-after", "100ms"]),
        auto(answering()),
    )
    .await
    .unwrap();
    let options = CallOptions::default();
    let Started::Task(t) = c
        .start_call("sleep", json!({"ms": 400}), &options)
        .await
        .unwrap()
    else {
        panic!("sleep 400 outlives --task-after 100ms")
    };
    assert_eq!(t.result().await.unwrap().text(), "slept 400");
    assert_eq!(t.status(), TaskStatus::Completed);

    let e = c
        .call_tool("error", json!({"message": "boom", "ms": 300}))
        .await
        .unwrap_err();
    let task = e.task().expect("a task's error");
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(e.rpc_error().unwrap().message, "boom");

    let r = c
        .call_tool("fail", json!({"message": "bad", "ms": 300}))
        .await
        .unwrap();
    assert!(r.is_error());

    let Started::Task(t) = c
        .start_call("sleep", json!({"ms": 60_000}), &options)
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    let cancelled = t.cancel().await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let e = t.result().await.unwrap_err();
    assert!(e.is_cancelled(), "{e}");
    c.close().await;
}

/// Spec (streamable HTTP, "Custom Headers from Tool Parameters"): "When a server's tool
/// definition includes `x-mcp-header` annotations, conforming clients MUST mirror the
/// designated parameter values into HTTP headers." Our client calls the conformance
/// example's `test_custom_header` (`region` annotated `Region`) in 2026-07-28 over HTTP,
/// with a plain value and with one that needs the Base64 form, before and after listing
/// the tools; and so does a gateway in front of it (`--upstream-protocol modern`), called
/// by our client in turn.
#[tokio::test]
async fn x_mcp_header_arguments_are_mirrored_into_mcp_param_headers() {
    let up = crate::gateway_common::ConformanceHttp::start();
    let modern = || answering().with_protocol(RevisionChoice::Fixed(Revision::V2026_07_28));
    let gateway = HttpServer::start(&["--upstream-url", &up.url, "--upstream-protocol", "modern"]);
    for url in [&up.url, &gateway.url] {
        let c = Client::connect_http(HttpClientConfig::new(url), modern())
            .await
            .unwrap();
        for region in ["us-west1", "Hello, 世界", " padded ", "=?base64?literal?="] {
            let r = c
                .call_tool("test_custom_header", json!({"region": region}))
                .await
                .unwrap_or_else(|e| panic!("{url} {region:?}: {e}"));
            assert_eq!(r.text(), format!("Region: {region}"), "{url}");
        }
        let tools = c.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "test_custom_header"));
        let r = c
            .call_tool("test_custom_header", json!({"region": "Ünïcode"}))
            .await
            .unwrap();
        assert_eq!(r.text(), "Region: Ünïcode");
        c.close().await;
    }
}
