//! `mcp-tasks tasks list|get|result|cancel`: the tasks of any MCP 2025-11-25 server.

use clap::{Args, Subcommand};
use mcp_tasks_client::{Client, ClientError, Task};
use serde_json::json;

use crate::call::{
    AnswerArgs, ConnectArgs, Out, client_config, connect, exit, exit_with, follow, or_interrupt,
    task_json,
};

/// Options of `tasks`.
#[derive(Args, Debug)]
pub(crate) struct TasksArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// List the tasks the server shows this requestor (every page of `tasks/list`).
    List {
        #[command(flatten)]
        conn: ConnectArgs,
    },
    /// Show a task (`tasks/get`).
    Get {
        /// The task id.
        id: String,
        #[command(flatten)]
        conn: ConnectArgs,
    },
    /// Wait for a task's result and print it (`tasks/result`), answering what it asks.
    /// Exit codes as for `call`.
    Result {
        /// The task id.
        id: String,
        #[command(flatten)]
        answers: AnswerArgs,
        #[command(flatten)]
        conn: ConnectArgs,
    },
    /// Cancel a task (`tasks/cancel`).
    Cancel {
        /// The task id.
        id: String,
        #[command(flatten)]
        conn: ConnectArgs,
    },
}

/// `mcp-tasks tasks ...`.
pub(crate) async fn run(args: TasksArgs) -> anyhow::Result<()> {
    let (conn, answers) = match &args.action {
        Action::List { conn } | Action::Get { conn, .. } | Action::Cancel { conn, .. } => {
            (conn, None)
        }
        Action::Result { conn, answers, .. } => (conn, Some(answers)),
    };
    let out = Out::new(conn);
    let config = match client_config(conn, answers) {
        Ok(c) => c,
        Err(e) => return exit_with(out.usage(&e)),
    };
    let client = match or_interrupt(connect(conn, config)).await {
        None => return exit_with(out.interrupted(None)),
        Some(Err(e)) => return exit_with(out.usage(&e)),
        Some(Ok(Err(e))) => return exit_with(out.error(None, &e)),
        Some(Ok(Ok(c))) => c,
    };
    let code = match &args.action {
        Action::List { .. } => list(&client, &out).await,
        Action::Get { id, .. } => show(client.get_task(id), &out).await,
        Action::Cancel { id, .. } => show(client.cancel_task(id), &out).await,
        Action::Result { id, .. } => match or_interrupt(client.task(id)).await {
            None => out.interrupted(None),
            Some(Err(e)) => out.error(None, &e),
            Some(Ok(task)) => follow(&task, &out).await,
        },
    };
    client.close().await;
    exit_with(code)
}

async fn list(client: &Client, out: &Out) -> u8 {
    let tasks = match or_interrupt(client.list_tasks()).await {
        None => return out.interrupted(None),
        Some(Err(e)) => return out.error(None, &e),
        Some(Ok(t)) => t,
    };
    if out.json() {
        let tasks: Vec<_> = tasks.iter().map(task_json).collect();
        println!("{}", json!({ "tasks": tasks }));
    } else if tasks.is_empty() {
        eprintln!("no tasks");
    } else {
        for t in &tasks {
            println!("{}", task_line(t));
        }
    }
    exit::OK
}

/// One line: id, status, creation time, message.
fn task_line(t: &Task) -> String {
    let mut line = format!("{}\t{}\t{}", t.task_id, t.status, t.created_at);
    if let Some(m) = &t.status_message {
        line.push('\t');
        line.push_str(m);
    }
    line
}

async fn show(fut: impl Future<Output = Result<Task, ClientError>>, out: &Out) -> u8 {
    match or_interrupt(fut).await {
        None => out.interrupted(None),
        Some(Err(e)) => out.error(None, &e),
        Some(Ok(t)) => {
            if out.json() {
                println!("{}", json!({ "task": task_json(&t) }));
            } else {
                println!("task:         {}", t.task_id);
                println!("status:       {}", t.status);
                if let Some(m) = &t.status_message {
                    println!("message:      {m}");
                }
                println!("created:      {}", t.created_at);
                println!("updated:      {}", t.last_updated_at);
                match t.ttl {
                    Some(ms) => println!("ttl:          {ms} ms"),
                    None => println!("ttl:          unlimited"),
                }
                if let Some(ms) = t.poll_interval {
                    println!("pollInterval: {ms} ms");
                }
            }
            exit::OK
        }
    }
}
