//! Argument validation through a real session (in process, over a pipe): the raw
//! `Tool::new` path is validated like `Tool::typed`, before a task is created, and
//! `validate_arguments(false)` hands the arguments over unchecked.

use std::time::Duration;

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_server::{CallToolResult, Server, Tool};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

fn raw_tool(name: &str) -> Tool {
    Tool::new(
        name,
        "Echoes `n` (at most 3).",
        json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}),
        |args: Value, _cx| async move { Ok(CallToolResult::text(format!("got {}", args["n"]))) },
    )
    .task_support(TaskSupport::Optional)
}

struct Conn {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    w: WriteHalf<DuplexStream>,
    next: u64,
}

impl Conn {
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.w
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
                .await
                .expect("an answer in time")
                .unwrap()
                .expect("the session is open");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    async fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params).await;
        assert!(r.get("error").is_none(), "{r}");
        r["result"].clone()
    }
}

async fn connect() -> Conn {
    let tools = vec![
        raw_tool("checked"),
        raw_tool("unchecked").validate_arguments(false),
    ];
    let server = Server::builder()
        .tools(tools)
        .build()
        .await
        .expect("a server with tasks in memory");
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        server
            .serve(
                mcp_tasks_server::Transport::io(sr, sw),
                std::future::pending(),
            )
            .await
    });
    let (cr, cw) = tokio::io::split(client_io);
    let mut c = Conn {
        lines: BufReader::new(cr).lines(),
        w: cw,
        next: 0,
    };
    c.ok(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    )
    .await;
    c.w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    c
}

#[tokio::test]
async fn a_raw_tool_is_validated_before_it_runs_and_before_a_task_exists() {
    let mut c = connect().await;
    let expected = json!({
        "content": [{"type": "text", "text": "Invalid arguments for tool `checked`: n: 5 is greater than the maximum of 3"}],
        "isError": true
    });
    let plain = c
        .ok(
            "tools/call",
            json!({"name": "checked", "arguments": {"n": 5}}),
        )
        .await;
    assert_eq!(plain, expected);
    let as_task = c
        .ok(
            "tools/call",
            json!({"name": "checked", "arguments": {"n": 5}, "task": {"ttl": 1000}}),
        )
        .await;
    assert_eq!(as_task, expected);
    let missing = c
        .ok("tools/call", json!({"name": "checked", "task": {}}))
        .await;
    assert_eq!(
        missing["content"][0]["text"],
        "Invalid arguments for tool `checked`: \"n\" is a required property"
    );
    assert_eq!(c.ok("tasks/list", json!({})).await["tasks"], json!([]));

    // Good arguments: the handler runs, plainly and as a task.
    let r = c
        .ok(
            "tools/call",
            json!({"name": "checked", "arguments": {"n": 2}}),
        )
        .await;
    assert_eq!(r, CallToolResult::text("got 2").to_value());
    let created = c
        .ok(
            "tools/call",
            json!({"name": "checked", "arguments": {"n": 2}, "task": {}}),
        )
        .await;
    assert!(created["task"]["taskId"].is_string(), "{created}");
}

#[tokio::test]
async fn validation_can_be_turned_off() {
    let mut c = connect().await;
    let r = c
        .ok(
            "tools/call",
            json!({"name": "unchecked", "arguments": {"n": 5}}),
        )
        .await;
    assert_eq!(r, CallToolResult::text("got 5").to_value());
}
