//! The SDK as a tool author uses it: the `forecast` example's own code served over stdio
//! (an in-process pipe speaking the stdio framing) and over Streamable HTTP on 127.0.0.1,
//! called plainly and as a task, with bad arguments; and the README's program is the
//! `render` example, verbatim.
#![allow(missing_docs)]

#[path = "../examples/forecast.rs"]
#[allow(dead_code)]
mod forecast;

use std::time::{Duration, Instant};

use mcp_tasks_client::{
    CallOptions, Client, ClientConfig, HttpClientConfig, Revision, RevisionChoice, TaskStatus,
};
use mcp_tasks_sdk::serde_json::json;
use mcp_tasks_sdk::{HttpOptions, Server, tokio};

const LIMIT: Duration = Duration::from_secs(30);

/// A client of `server` over an in-process pipe (newline-delimited JSON-RPC, as on stdio).
async fn over_stdio(server: &Server) -> Client {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (reader, writer) = tokio::io::split(server_io);
    let server = server.clone();
    tokio::spawn(async move {
        server
            .serve(
                mcp_tasks_sdk::Transport::io(reader, writer),
                std::future::pending(),
            )
            .await
    });
    let (cr, cw) = tokio::io::split(client_io);
    // These tests use 2025-11-25 task augmentation and `tasks/list`: no probe.
    let config =
        ClientConfig::default().with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25));
    Client::connect_io(tokio::io::BufReader::new(cr), cw, config)
        .await
        .expect("connect over stdio")
}

/// A client of `server` served over Streamable HTTP on 127.0.0.1; dropping the sender stops
/// serving.
async fn over_http(server: &Server) -> (Client, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = server.clone();
    tokio::spawn(async move {
        let transport = mcp_tasks_sdk::Transport::http(listener, HttpOptions::new());
        server
            .serve(transport, async {
                let _ = stopped.await;
            })
            .await
    });
    let config =
        ClientConfig::default().with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25));
    let client = Client::connect_http(HttpClientConfig::new(url), config)
        .await
        .expect("connect over HTTP");
    (client, stop)
}

/// A plain call and a task call of `forecast`, at the same time: each takes the two
/// seconds of the tool and answers one line.
async fn plain_and_task(c: &Client) {
    let t0 = Instant::now();
    let plain = c.call_tool("forecast", json!({"city": "Oslo"}));
    let task = async {
        let task = c
            .call_tool_as_task(
                "forecast",
                json!({"city": "Lima", "days": 7}),
                &CallOptions::default(),
            )
            .await
            .expect("a task is created");
        assert_eq!(task.status(), TaskStatus::Working);
        let done = task.wait().await.expect("the task ends");
        assert_eq!(done.status, TaskStatus::Completed);
        task.result().await.expect("the task's result")
    };
    let (plain, task) = tokio::time::timeout(LIMIT, async { tokio::join!(plain, task) })
        .await
        .expect("both calls answer");
    let plain = plain.expect("the plain call answers");
    assert!(!plain.is_error(), "{:?}", plain.0);
    assert!(
        plain.text().starts_with("Oslo, next 3 day(s): "),
        "the default of `days` applies: {}",
        plain.text()
    );
    assert!(!plain.text().contains('\n'), "one line: {}", plain.text());
    assert!(!task.is_error(), "{:?}", task.0);
    assert!(
        task.text().starts_with("Lima, next 7 day(s): "),
        "{}",
        task.text()
    );
    assert!(
        t0.elapsed() >= forecast::WORK,
        "each call takes two seconds"
    );
}

/// `days: 9`: an `isError` result naming the field and the bound, plainly and when a task
/// is asked for (no task is created).
async fn days_out_of_range(c: &Client) {
    let bad = c
        .call_tool("forecast", json!({"city": "Oslo", "days": 9}))
        .await
        .expect("a tool result, not a protocol error");
    assert!(bad.is_error(), "{:?}", bad.0);
    assert!(
        bad.text().contains("days") && bad.text().contains("maximum of 7"),
        "names the field and the bound: {}",
        bad.text()
    );
    let before = c.list_tasks().await.map(|t| t.len()).ok();
    let raw = c
        .request(
            "tools/call",
            Some(json!({"name": "forecast", "arguments": {"city": "Oslo", "days": 9}, "task": {}})),
        )
        .await
        .expect("a tool result, not a protocol error");
    assert_eq!(raw["isError"], true, "{raw}");
    assert!(raw.get("task").is_none(), "no task is created: {raw}");
    if let Some(before) = before {
        assert_eq!(c.list_tasks().await.unwrap().len(), before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forecast_over_stdio() {
    let server = forecast::server().await.unwrap();
    let c = over_stdio(&server).await;
    plain_and_task(&c).await;
    days_out_of_range(&c).await;
    c.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forecast_over_http() {
    let server = forecast::server().await.unwrap();
    let (c, _stop) = over_http(&server).await;
    plain_and_task(&c).await;
    days_out_of_range(&c).await;
    c.close().await;
    server.shutdown().await;
}

#[tokio::test]
async fn forecast_lists_its_schema_and_task_support() {
    let server = forecast::server().await.unwrap();
    let c = over_stdio(&server).await;
    let tools = c.list_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == "forecast").expect("listed");
    let tool = mcp_tasks_sdk::serde_json::to_value(tool).unwrap();
    assert_eq!(tool["execution"]["taskSupport"], "optional", "{tool}");
    let schema = &tool["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["city"]), "{schema}");
    assert_eq!(schema["properties"]["city"]["type"], "string");
    let days = &schema["properties"]["days"];
    assert_eq!(days["minimum"], 1, "{days}");
    assert_eq!(days["maximum"], 7, "{days}");
    assert_eq!(days["default"], 3, "{days}");
    c.close().await;
}

#[test]
fn forecast_flags() {
    use forecast::{Mode, parse_args};
    let args = |a: &[&str]| parse_args(a.iter().map(|s| (*s).to_owned()));
    assert_eq!(args(&["--stdio"]), Ok(Mode::Stdio));
    assert_eq!(
        args(&["--listen", "127.0.0.1:8080"]),
        Ok(Mode::Listen("127.0.0.1:8080".into()))
    );
    assert!(args(&[]).is_err());
    assert!(args(&["--listen"]).is_err());
    assert!(args(&["--stdio", "extra"]).is_err());
}

/// The README's "Serving your own tools" program is `examples/render.rs`, which CI
/// compiles (clippy and the build of every target), byte for byte.
#[test]
fn readme_program_is_the_render_example() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example = include_str!("../examples/render.rs");
    let section = readme
        .split("## Serving your own tools")
        .nth(1)
        .expect("the README has the section");
    let section = section.split("\n## ").next().unwrap();
    assert!(
        section.contains(&format!("```rust\n{example}```")),
        "README's program differs from crates/sdk/examples/render.rs"
    );
    assert!(
        section.contains("mcp-tasks-sdk"),
        "the section names the one dependency"
    );
}

/// The conformance example (`--stdio`) serves its fixtures over stdio in both
/// generations: a tool call and a resource read, to a 2025-11-25 and a 2026-07-28 client.
/// (The official suite drives it over HTTP: `interop/conformance/run.sh`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_example_serves_over_stdio_in_both_generations() {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap()
        .join("examples/conformance");
    assert!(
        bin.exists(),
        "{} is not built: build the examples (`cargo build --workspace --all-targets`)",
        bin.display()
    );
    for protocol in [
        RevisionChoice::Fixed(Revision::V2025_11_25),
        RevisionChoice::Fixed(Revision::V2026_07_28),
    ] {
        let mut cmd = tokio::process::Command::new(&bin);
        cmd.arg("--stdio");
        let config = ClientConfig::default().with_protocol(protocol);
        let client = tokio::time::timeout(LIMIT, Client::connect_stdio(cmd, config))
            .await
            .expect("connects in time")
            .unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        let tools = client.list_tools().await.unwrap();
        assert!(
            tools.iter().any(|t| t.name == "test_simple_text"),
            "{protocol:?}"
        );
        let r = tokio::time::timeout(LIMIT, client.call_tool("test_simple_text", json!({})))
            .await
            .expect("answers in time")
            .unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        assert_eq!(
            r.text(),
            "This is a simple text response for testing.",
            "{protocol:?}"
        );
        let read = client
            .request("resources/read", Some(json!({"uri": "test://static-text"})))
            .await
            .unwrap_or_else(|e| panic!("{protocol:?}: {e}"));
        assert_eq!(
            read["contents"][0]["text"], "This is the content of the static text resource.",
            "{protocol:?}: {read}"
        );
        client.close().await;
    }
}
