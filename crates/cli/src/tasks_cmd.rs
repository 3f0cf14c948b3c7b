//! `mcp-tasks tasks list|get|result|cancel|watch`: the tasks of any MCP 2025-11-25
//! server. A server of both eras is spoken to in the one each command needs: `list`,
//! `result` and `watch` in 2025-11-25 (the only one with `tasks/list`, `tasks/result` and
//! status notifications), `get` and `cancel` in 2026-07-28 (whose `tasks/get` inlines the
//! result or error). Against a 2026-07-28-only server (the tasks extension, SEP-2663)
//! `get`, `cancel` and `watch ID...` work; `list` and `result` exit 4 saying that the
//! extension has no such method; without the extension every one of them exits 4 (nothing
//! sent) saying that the server does not declare it.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use clap::{Args, Subcommand};
use mcp_tasks_client::{Client, ClientError, Revision, Task, TaskDetail, parse_task};
use mcp_tasks_proto::methods;
use serde_json::json;

use crate::call::{
    AnswerArgs, ConnectArgs, Out, Report, client_config, connect, exit, exit_with, follow, nonzero,
    or_interrupt, task_json,
};
use crate::term::interrupt::Interrupts;
use crate::term::{Screen, table};

/// Options of `tasks`.
#[derive(Args, Debug)]
#[command(after_help = crate::duration::HELP)]
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
    /// Show the tasks live, until Ctrl-C: a table on a terminal (status, age,
    /// statusMessage), refreshed from `tasks/list`, `tasks/get` and status notifications;
    /// elsewhere a line per change (`--json`: an object per change).
    Watch {
        /// Tasks to watch by id, besides those `tasks/list` shows (needed when the server
        /// does not declare `tasks.list`, as over HTTP without authentication).
        ids: Vec<String>,
        /// How often to refresh (ms or a duration). Default: the shortest `pollInterval`
        /// of the unfinished tasks (1 s when none), kept within 250 ms..5 s.
        #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
        interval: Option<Duration>,
        /// Most rows shown on a terminal (the newest tasks).
        #[arg(long, default_value_t = 20)]
        rows: usize,
        #[command(flatten)]
        conn: ConnectArgs,
    },
}

/// `mcp-tasks tasks ...`.
pub(crate) async fn run(args: TasksArgs) -> anyhow::Result<()> {
    let (conn, answers) = match &args.action {
        Action::List { conn }
        | Action::Get { conn, .. }
        | Action::Cancel { conn, .. }
        | Action::Watch { conn, .. } => (conn, None),
        Action::Result { conn, answers, .. } => (conn, Some(answers)),
    };
    let out = Out::new(conn);
    let mut config = match client_config(conn, answers) {
        Ok(c) => c,
        Err(e) => return exit_with(out.usage(&e)),
    };
    if matches!(
        args.action,
        Action::List { .. } | Action::Result { .. } | Action::Watch { .. }
    ) {
        config.prefer_revision = Revision::V2025_11_25;
    }
    let client = match or_interrupt(connect(conn, config)).await {
        None => return exit_with(out.interrupted(None)),
        Some(Err(e)) => return exit_with(out.usage(&e)),
        Some(Ok(Err(e))) => return exit_with(out.error(None, &e)),
        Some(Ok(Ok(c))) => c,
    };
    // 2026-07-28 has no tasks/result (nor, without the extension, any tasks method).
    let refused = match &args.action {
        Action::Result { .. } => client.revision_refusal(methods::TASKS_RESULT),
        _ => None,
    };
    let code = match (&args.action, refused) {
        (_, Some(e)) => out.error(None, &e),
        (Action::List { .. }, None) => list(&client, &out).await,
        (Action::Get { id, .. }, None) if client.revision().tasks_are_extension() => {
            show_detail(client.get_task_detail(id), &out).await
        }
        (Action::Get { id, .. }, None) => show(client.get_task(id), &out).await,
        (Action::Cancel { id, .. }, None) => show(client.cancel_task(id), &out).await,
        (Action::Result { id, .. }, None) => {
            let mut interrupts = Interrupts::new();
            let task = tokio::select! {
                r = client.task(id) => Some(r),
                () = interrupts.next() => None,
            };
            match task {
                None => out.interrupted(None),
                Some(Err(e)) => out.error(None, &e),
                Some(Ok(task)) => {
                    let report = Report::new(&format!("task {id}"));
                    follow(&task, &out, &report, &mut interrupts).await
                }
            }
        }
        (
            Action::Watch {
                ids,
                interval,
                rows,
                conn,
            },
            None,
        ) => {
            let target = conn.target();
            let interval = interval.and_then(nonzero);
            watch(&client, ids, interval, *rows, &out, &target).await
        }
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
    show_detail(async { fut.await.map(TaskDetail::bare) }, out).await
}

/// A task, and what 2026-07-28 inlines: its result or error (`--json`: `result`, `error`
/// beside `task`).
async fn show_detail(fut: impl Future<Output = Result<TaskDetail, ClientError>>, out: &Out) -> u8 {
    match or_interrupt(fut).await {
        None => out.interrupted(None),
        Some(Err(e)) => out.error(None, &e),
        Some(Ok(d)) => {
            let t = &d.task;
            if out.json() {
                let mut obj = json!({ "task": task_json(t) });
                if let Some(r) = &d.result {
                    obj["result"] = r.clone();
                }
                if let Some(e) = &d.error {
                    obj["error"] = serde_json::to_value(e).unwrap_or_default();
                }
                println!("{obj}");
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
                if let Some(r) = &d.result {
                    println!("result:       {r}");
                }
                if let Some(e) = &d.error {
                    println!("error:        {e}");
                }
            }
            exit::OK
        }
    }
}

/// The refresh interval when none is given: the shortest `pollInterval` of the unfinished
/// tasks, within 250 ms..5 s; 1 s when none names one.
fn auto_interval(tasks: &HashMap<String, Task>) -> Duration {
    tasks
        .values()
        .filter(|t| !t.status.is_terminal())
        .filter_map(|t| t.poll_interval)
        .min()
        .map_or(Duration::from_secs(1), Duration::from_millis)
        .clamp(Duration::from_millis(250), Duration::from_secs(5))
}

/// Record `t`; remember it in `changed` when it is new or differs. A terminal status is
/// final: an older view does not undo it.
fn merge(tasks: &mut HashMap<String, Task>, changed: &mut Vec<Task>, t: Task) {
    let old = tasks.get(&t.task_id);
    if old == Some(&t) || old.is_some_and(|o| o.status.is_terminal() && !t.status.is_terminal()) {
        return;
    }
    changed.retain(|c| c.task_id != t.task_id);
    changed.push(t.clone());
    tasks.insert(t.task_id.clone(), t);
}

fn by_creation(a: &Task, b: &Task) -> std::cmp::Ordering {
    (&a.created_at, &a.task_id).cmp(&(&b.created_at, &b.task_id))
}

/// `tasks watch`: returns the exit code (0 when left with Ctrl-C).
async fn watch(
    client: &Client,
    ids: &[String],
    interval: Option<Duration>,
    rows: usize,
    out: &Out,
    target: &str,
) -> u8 {
    let listing = client.server_tasks().list;
    let refusal = if ids.is_empty() {
        client.revision_refusal(methods::TASKS_LIST)
    } else {
        client.revision_refusal(methods::TASKS_GET)
    };
    if let Some(e) = refusal {
        return out.error(None, &e);
    }
    if !listing && ids.is_empty() {
        return out.error(
            None,
            &ClientError::unsupported(
                "tasks/list",
                "its capabilities do not declare tasks.list: over HTTP without authentication tasks are bound to no one; name the tasks to watch: `mcp-tasks tasks watch ID...`",
            ),
        );
    }
    let screen = Screen::get();
    let live = screen.is_tty();
    let mut notes = client.notifications();
    let mut interrupts = Interrupts::new();
    let mut tasks: HashMap<String, Task> = HashMap::new();
    let mut changed: Vec<Task> = Vec::new();
    let mut refreshed = Instant::now();
    let mut next_refresh = Instant::now();
    loop {
        if Instant::now() >= next_refresh {
            if listing {
                match client.list_tasks().await {
                    Ok(list) => {
                        for t in list {
                            merge(&mut tasks, &mut changed, t);
                        }
                    }
                    Err(e) => return out.error(None, &e),
                }
            }
            // tasks/get for the named tasks, and (without a list) for the unfinished ones.
            let mut wanted: Vec<String> = ids.to_vec();
            if !listing {
                wanted.extend(
                    tasks
                        .values()
                        .filter(|t| !t.status.is_terminal() && !ids.contains(&t.task_id))
                        .map(|t| t.task_id.clone()),
                );
            }
            for id in wanted {
                if tasks.get(&id).is_some_and(|t| t.status.is_terminal()) {
                    continue;
                }
                match client.get_task(&id).await {
                    Ok(t) => merge(&mut tasks, &mut changed, t),
                    // Unknown or expired: not shown.
                    Err(ClientError::Rpc { .. }) => {}
                    Err(e) => return out.error(None, &e),
                }
            }
            refreshed = Instant::now();
            next_refresh = refreshed + interval.unwrap_or_else(|| auto_interval(&tasks));
        }
        if live {
            let mut sorted: Vec<Task> = tasks.values().cloned().collect();
            sorted.sort_by(by_creation);
            let footer = format!(
                "{} task(s) · {target} · refreshed {} ago · Ctrl-C to stop",
                sorted.len(),
                crate::term::duration(refreshed.elapsed())
            );
            screen.block(&table::render(&sorted, rows, SystemTime::now(), &footer));
            changed.clear();
        } else {
            changed.sort_by(by_creation);
            for t in changed.drain(..) {
                if out.json() {
                    println!("{}", json!({ "task": task_json(&t) }));
                } else {
                    println!("{}", task_line(&t));
                }
            }
        }
        let mut wait = next_refresh.saturating_duration_since(Instant::now());
        if live {
            // The ages and the footer move on.
            wait = wait.min(Duration::from_millis(500));
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            n = notes.recv() => {
                if let Ok(n) = n
                    && n.method == methods::TASK_STATUS
                    && let Some(t) = n.params.as_ref().and_then(|p| parse_task(p).ok())
                    && (listing || ids.contains(&t.task_id) || tasks.contains_key(&t.task_id))
                {
                    merge(&mut tasks, &mut changed, t);
                }
            }
            () = interrupts.next() => return exit::OK,
        }
    }
}
