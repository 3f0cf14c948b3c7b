//! `mcp-tasks call`: call one tool of any MCP server, plainly or as a task; and what the
//! requestor commands share (connection flags, answers to the server, output, exit codes).
//!
//! Output: status changes and progress on stderr, the result on stdout; `--json` prints
//! one final object `{task?, result | error}` on stdout instead. On a terminal (stderr is
//! a TTY) status and progress are one live line instead of a line per change, and
//! elicitation and sampling are answered at prompts (stdin is a TTY); see [`crate::term`].
//!
//! Ctrl-C while a task runs cancels it (`tasks/cancel`), waits for `cancelled` and exits
//! 130; a second Ctrl-C leaves at once, the task left running (its id printed to resume).
//!
//! A server of both eras (our own, a gateway: its `server/discover` lists 2025-11-25 too)
//! is called in 2025-11-25 unless `--protocol` says otherwise: there `--task` and `--ttl`
//! are honoured, progress is reported, and the task is listed by `tasks list` and picked
//! up by `tasks result`. Against a 2026-07-28-only server (or `--protocol modern`) the
//! server decides whether a call becomes a task (`--task` and `--ttl` are not sent, and a
//! note says so when they were given); a task is followed the same way, its questions
//! (`inputRequests`) answered like 2025-11-25 requests.
//!
//! * `arguments`: the tool's arguments from `--args` and `--arg`;
//! * `connect`: the connection flags, the client and its answers to the server;
//! * `follow`: status, progress and the live line; a task followed to its result;
//! * `out`: what is printed, and the exit codes.

mod arguments;
mod connect;
mod follow;
mod out;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use clap::Args;
use mcp_tasks_client::{
    CallOptions, Client, ClientError, Revision, Started, TaskSupport, task_support,
};

use arguments::build_arguments;
pub(crate) use connect::{AnswerArgs, ConnectArgs, client_config, connect, nonzero, or_interrupt};
pub(crate) use follow::{Report, cancel_interrupted, follow, show_progress};
pub(crate) use out::{Exit, Out, exit, exit_with, task_json};

use crate::term::interrupt::Interrupts;

/// Options of `call`.
#[derive(Args, Debug)]
#[command(after_help = crate::duration::HELP)]
pub(crate) struct CallArgs {
    /// The tool to call.
    tool: String,
    /// An argument `KEY=VALUE` (repeatable). The value is typed by the tool's input
    /// schema, else read as a JSON literal, else taken as a string.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    arg: Vec<String>,
    /// The arguments as one JSON object (`--arg` entries override its keys).
    #[arg(long = "args", value_name = "JSON")]
    args_json: Option<String>,
    /// Run the tool as a task (a tool whose taskSupport is `required` always runs as one).
    #[arg(long)]
    task: bool,
    /// Requested task lifetime in milliseconds (implies --task).
    #[arg(long, value_name = "MS")]
    ttl: Option<u64>,
    #[command(flatten)]
    answers: AnswerArgs,
    #[command(flatten)]
    conn: ConnectArgs,
}

/// `mcp-tasks call`.
pub(crate) async fn run(args: CallArgs) -> anyhow::Result<()> {
    let out = Out::new(&args.conn);
    let mut config = match client_config(&args.conn, Some(&args.answers)) {
        Ok(c) => c,
        Err(e) => return exit_with(out.usage(&e)),
    };
    // What a call needs is 2025-11-25's: a task when asked for (with its ttl), progress,
    // a task `tasks list` shows and `tasks result` picks up.
    config.prefer_revision = Revision::V2025_11_25;
    let client = match or_interrupt(connect(&args.conn, config)).await {
        None => return exit_with(out.interrupted(None)),
        Some(Err(e)) => return exit_with(out.usage(&e)),
        Some(Ok(Err(e))) => return exit_with(out.error(None, &e)),
        Some(Ok(Ok(c))) => c,
    };
    let code = call(&client, &args, &out).await;
    client.close().await;
    exit_with(code)
}

async fn call(client: &Client, args: &CallArgs, out: &Out) -> u8 {
    let tool = match or_interrupt(client.tool(&args.tool)).await {
        None => return out.interrupted(None),
        Some(Err(e)) => return out.error(None, &e),
        Some(Ok(None)) => return out.error(None, &ClientError::unknown_tool(&args.tool)),
        Some(Ok(Some(t))) => t,
    };
    let arguments = match build_arguments(
        args.args_json.as_deref(),
        &args.arg,
        Some(&tool.input_schema),
    ) {
        Ok(a) => a,
        Err(e) => return out.usage(&e),
    };
    let as_task = args.task
        || args.ttl.is_some()
        || (task_support(&tool) == TaskSupport::Required && client.server_tasks().tools_call);
    let token = client.new_progress_token();
    let mut options = CallOptions::default().with_progress_token(token.clone());
    options.ttl = args.ttl;
    let report = Arc::new(Report::new(&args.tool));
    let progress = show_progress(client, Some(token), Arc::clone(&report));
    let mut interrupts = Interrupts::new();
    let server_decides = client.revision().tasks_are_extension();
    if server_decides && (args.task || args.ttl.is_some()) {
        report.line(
            "mcp-tasks: spoken to in 2026-07-28, the server decides whether the call runs as a task (--task and --ttl are not sent)",
        );
    }
    let start = async {
        if server_decides {
            client.start_call(&args.tool, arguments, &options).await
        } else if as_task {
            match client
                .call_tool_as_task(&args.tool, arguments, &options)
                .await
            {
                Ok(task) => Ok(Started::Task(task)),
                // No task: the server answered at once (bad arguments); that is the outcome.
                Err(ClientError::NotStarted(r)) => Ok(Started::Result(*r)),
                Err(e) => Err(e),
            }
        } else {
            client
                .call_tool_with(&args.tool, arguments, &options)
                .await
                .map(Started::Result)
        }
    };
    // A call that may become a task is not left at the first Ctrl-C: its task would be
    // created unseen and left running. It is awaited (a bounded while) and its task
    // cancelled like one interrupted while followed. A server without tasks creates none.
    let may_create = (server_decides || as_task) && client.server_tasks().tools_call;
    let started = starting(start, may_create, &report, &mut interrupts).await;
    let code = match started {
        Some((Ok(Started::Task(task)), true)) => {
            cancel_interrupted(&task, out, &report, &mut interrupts).await
        }
        Some((Ok(Started::Result(_)), true)) => {
            report.finish();
            out.interrupted(None)
        }
        Some((Ok(Started::Task(task)), false)) => {
            follow(&task, out, &report, &mut interrupts).await
        }
        None => {
            report.finish();
            out.interrupted(None)
        }
        Some((Ok(Started::Result(r)), false)) => {
            report.finish();
            out.result(None, &r)
        }
        Some((Err(e), _)) => {
            report.finish();
            out.error(None, &e)
        }
    };
    progress.abort();
    code
}

/// How long a call interrupted while it starts is still awaited, to learn the task it
/// may create (and cancel it). A 2025-11-25 `CreateTaskResult` comes at once; a
/// 2026-07-28 server answers once it decides (`--task-after` of our server: 1 s by
/// default). Past it the call is left (its request cancelled).
pub(crate) const CREATE_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Drive `start` to its outcome; `None` when left on Ctrl-C, else the outcome and whether
/// a Ctrl-C came while it started (then a task it created is to be cancelled).
async fn starting<F>(
    start: F,
    may_create: bool,
    report: &Report,
    interrupts: &mut Interrupts,
) -> Option<(Result<Started, ClientError>, bool)>
where
    F: std::future::Future<Output = Result<Started, ClientError>>,
{
    tokio::pin!(start);
    tokio::select! {
        r = &mut start => return Some((r, false)),
        () = interrupts.next() => {}
    }
    if !may_create {
        return None;
    }
    report.line(
        "mcp-tasks: interrupted while the call starts: waiting for its task to cancel it (Ctrl-C again to leave)",
    );
    tokio::select! {
        r = &mut start => Some((r, true)),
        () = interrupts.next() => None,
        () = tokio::time::sleep(CREATE_GRACE) => None,
    }
}
