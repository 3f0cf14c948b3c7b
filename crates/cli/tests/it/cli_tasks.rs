//! `mcp-tasks tasks list|get|result|cancel`: output, `--json` shapes and exit codes, and
//! picking up a task (and the question it waits on) from another process.
#![allow(missing_docs)]

use crate::client_support as support;

use std::time::{Duration, Instant};

use mcp_tasks_client::{CallOptions, ClientConfig, TaskStatus};
use serde_json::json;
use support::{HttpServer, answering, cli, connect_http, json_out, run, stderr, stdout, tokens};

struct Fixture {
    _tokens: support::TempFile,
    srv: HttpServer,
}

impl Fixture {
    fn new() -> Self {
        let t = tokens();
        let srv = HttpServer::start(&["--auth-tokens", t.path()]);
        Self { _tokens: t, srv }
    }

    /// `mcp-tasks tasks ARGS --url URL` as alice.
    fn tasks(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["tasks"];
        all.extend_from_slice(args);
        all.extend(["--url", &self.srv.url]);
        run(cli(&all).env("MCP_TASKS_TOKEN", "tok-alice"))
    }

    /// Start a task as alice from a client that goes away at once: the id.
    fn start(&self, tool: &str, args: &[&str]) -> String {
        let c = tokio::runtime::Runtime::new().unwrap();
        c.block_on(async {
            // Declares elicitation and sampling, so that the server may ask (later, of
            // whoever calls tasks/result).
            let client = connect_http(&self.srv.url, Some("tok-alice"), answering()).await;
            let mut arguments = serde_json::Map::new();
            for a in args {
                let (k, v) = a.split_once('=').unwrap();
                arguments.insert(k.into(), serde_json::from_str(v).unwrap_or(json!(v)));
            }
            let t = client
                .call_tool_as_task(tool, arguments.into(), &CallOptions::default())
                .await
                .unwrap();
            let id = t.id().to_owned();
            client.close().await;
            id
        })
    }
}

#[test]
fn get_list_result_cancel() {
    let f = Fixture::new();
    let id = f.start("sleep", &["ms=300"]);

    let o = f.tasks(&["get", &id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["taskId"], id.as_str());
    assert_eq!(v["task"]["status"], "working");

    let o = f.tasks(&["get", &id]);
    assert!(
        stdout(&o).contains(&format!("task:         {id}")),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("status:       working"),
        "{}",
        stdout(&o)
    );

    let o = f.tasks(&["list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert!(
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["taskId"] == id.as_str())
    );
    let o = f.tasks(&["list"]);
    assert!(
        stdout(&o).lines().any(|l| l.starts_with(&id)),
        "{}",
        stdout(&o)
    );

    let o = f.tasks(&["result", &id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "completed");
    assert_eq!(v["result"]["content"][0]["text"], "slept 300");
    let o = f.tasks(&["result", &id]);
    assert_eq!(stdout(&o), "slept 300\n");

    // Cancelling a terminal task: the server's -32602, exit 2.
    let o = f.tasks(&["cancel", &id, "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(json_out(&o)["error"]["code"], -32602);

    // Unknown task.
    let o = f.tasks(&["get", "no-such-task"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn result_exit_codes_follow_the_task() {
    let f = Fixture::new();
    let failed = f.start("error", &["message=gone wrong", "code=-32011"]);
    let o = f.tasks(&["result", &failed, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json_out(&o);
    assert_eq!(v["error"], json!({"code": -32011, "message": "gone wrong"}));
    assert_eq!(v["task"]["status"], "failed");

    let long = f.start("sleep", &["ms=60000"]);
    let o = f.tasks(&["cancel", &long, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_out(&o)["task"]["status"], "cancelled");
    let o = f.tasks(&["result", &long]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

#[test]
fn a_waiting_question_is_answered_by_the_process_that_picks_the_task_up() {
    let f = Fixture::new();
    // Started elsewhere; nobody asked for its result, so its question waits.
    let id = f.start("ask", &["question=Which colour?"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = connect_http(&f.srv.url, Some("tok-alice"), ClientConfig::default()).await;
        let start = Instant::now();
        while c.get_task(&id).await.unwrap().status != TaskStatus::InputRequired {
            assert!(start.elapsed() < Duration::from_secs(20));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        c.close().await;
    });
    let o = f.tasks(&["result", &id, "--elicit-reply", r#"{"answer": "teal"}"#]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "teal\n");
    assert!(stderr(&o).contains("Which colour?"), "{}", stderr(&o));
}

#[test]
fn list_needs_the_capability() {
    // Without authentication the server cannot tell requesters apart and does not
    // declare tasks.list.
    let srv = HttpServer::start(&[]);
    let o = run(&mut cli(&["tasks", "list", "--url", &srv.url]));
    // Issue 15 #19: refused by the client itself (exit 4), not reported as a JSON-RPC error.
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not sent: the server does not offer tasks/list"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("tasks.list"), "{}", stderr(&o));
    let o = run(&mut cli(&["tasks", "list", "--url", &srv.url, "--json"]));
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let v = json_out(&o);
    assert!(v["error"].get("code").is_none(), "{v}");
    assert_eq!(v["error"]["unsupported"]["what"], "tasks/list", "{v}");
}
