//! Following a call: its status and progress (a line per change, or the live line on a
//! terminal), a task to its result, and Ctrl-C cancelling it.

use std::sync::Arc;
use std::time::Instant;

use futures::{FutureExt, StreamExt};
use mcp_tasks_client::{Client, ClientError, Task, TaskHandle, TaskStatus};
use mcp_tasks_proto::methods;
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::Out;
use crate::term::interrupt::Interrupts;
use crate::term::live::{Live, Progress};
use crate::term::{self, Screen};

/// How a call's status and progress are shown: a line per change (not a terminal), or
/// the live line.
pub(crate) struct Report {
    live: Option<Live>,
    started: Instant,
    /// The status and message of the last status line printed (not on a terminal).
    shown: Mutex<Option<(TaskStatus, Option<String>)>>,
}

impl Report {
    /// For a call of `what`.
    pub(crate) fn new(what: &str) -> Self {
        Self {
            live: Screen::get().is_tty().then(|| Live::start(what)),
            started: Instant::now(),
            shown: Mutex::new(None),
        }
    }

    /// The task changed (or was first seen). Off a terminal a line is printed only when
    /// the status or its message differ from the last line's: a poll that sees only a new
    /// `lastUpdatedAt` (servers that stamp every `tasks/get` with the time of the read,
    /// such as FastMCP 4) prints nothing.
    pub(crate) fn status(&self, out: &Out, t: &Task) {
        match &self.live {
            Some(live) => live.task(t),
            None => {
                let now = (t.status, t.status_message.clone());
                let mut shown = self.shown.lock();
                if shown.as_ref() != Some(&now) {
                    *shown = Some(now);
                    out.status(t);
                }
            }
        }
    }

    /// A progress notification.
    fn progress(&self, p: Progress) {
        match &self.live {
            Some(live) => live.progress(p),
            None => {
                let mut line = format!("progress {}", json!(p.progress));
                if let Some(total) = p.total {
                    line.push_str(&format!("/{}", json!(total)));
                }
                if let Some(m) = &p.message {
                    line.push_str(&format!(" {m}"));
                }
                eprintln!("{line}");
            }
        }
    }

    /// The client retries something (`Some(why)`: the server's task store is unavailable),
    /// or that is over (`None`).
    pub(crate) fn notice(&self, why: Option<&str>) {
        match why {
            Some(why) => self.line(&format!("mcp-tasks: {why}")),
            None => self.line("mcp-tasks: the server answers again"),
        }
    }

    /// A line above the live line (plain on stderr elsewhere).
    pub(crate) fn line(&self, text: &str) {
        Screen::get().line(text);
    }

    /// Whether the live line is on.
    pub(crate) fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Take the live line away.
    pub(crate) fn finish(&self) {
        if let Some(live) = &self.live {
            live.finish();
        }
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Follow `task` to its result, showing its changes; returns the exit code.
///
/// Ctrl-C (counted by `interrupts`) cancels the task: "mcp-tasks: interrupted: cancelling
/// task ...", `tasks/cancel`, "task ... cancelled", exit 130. A second Ctrl-C while that
/// goes on leaves at once, printing the id to resume with.
pub(crate) async fn follow(
    task: &TaskHandle,
    out: &Out,
    report: &Report,
    interrupts: &mut Interrupts,
) -> u8 {
    if report.is_live() {
        // A task created here knows its tool; one picked up by id does not.
        let how = if task.tool().is_some() {
            "created"
        } else {
            "resumed"
        };
        report.line(&format!("task {} {how} (Ctrl-C cancels it)", task.id()));
    }
    report.status(out, &task.task());
    let mut updates = Box::pin(task.updates());
    let mut notices = Box::pin(task.notices());
    let outcome = {
        let result = task.result();
        tokio::pin!(result);
        loop {
            tokio::select! {
                r = &mut result => break Some(r),
                Some(t) = updates.next() => report.status(out, &t),
                Some(n) = notices.next() => report.notice(n.as_deref()),
                () = interrupts.next() => break None,
            }
        }
    };
    while let Some(Some(t)) = updates.next().now_or_never() {
        report.status(out, &t);
    }
    while let Some(Some(n)) = notices.next().now_or_never() {
        report.notice(n.as_deref());
    }
    match outcome {
        None => cancel_interrupted(task, out, report, interrupts).await,
        Some(Ok(r)) => {
            report.finish();
            let t = task.task();
            if report.is_live() {
                report.line(&format!(
                    "✓ task {} {} in {}",
                    t.task_id,
                    t.status,
                    term::duration(report.started.elapsed())
                ));
            }
            out.result(Some(&t), &r)
        }
        Some(Err(e)) => {
            report.finish();
            out.error(Some(&task.task()), &e)
        }
    }
}

/// The first Ctrl-C on a task: cancel it and wait for `cancelled`, unless a second
/// Ctrl-C comes first. Exit 130 either way.
pub(crate) async fn cancel_interrupted(
    task: &TaskHandle,
    out: &Out,
    report: &Report,
    interrupts: &mut Interrupts,
) -> u8 {
    let id = task.id().to_owned();
    // How to pick the task up again: 2026-07-28 has no tasks/result.
    let resume = if task.revision().tasks_are_extension() {
        format!("`mcp-tasks tasks get {id}`")
    } else {
        format!("`mcp-tasks tasks result {id}`")
    };
    if task.status().is_terminal() {
        report.finish();
        return out.interrupted(Some(&task.task()));
    }
    report.line(&format!(
        "mcp-tasks: interrupted: cancelling task {id} (Ctrl-C again to leave it running)"
    ));
    let cancelling = async {
        match task.cancel().await {
            Ok(t) if t.status.is_terminal() => Ok(t),
            // "MUST transition the task to cancelled status before sending the response";
            // a receiver that did not: wait for the end.
            Ok(_) => task.wait().await,
            Err(e) => Err(e),
        }
    };
    let outcome = tokio::select! {
        r = cancelling => Some(r),
        () = interrupts.next() => None,
    };
    report.finish();
    match outcome {
        None => {
            report.line(&format!(
                "mcp-tasks: left task {id} running; {resume} picks it up again"
            ));
        }
        Some(Ok(t)) if t.status == TaskStatus::Cancelled => {
            report.line(&format!("mcp-tasks: task {id} cancelled"));
        }
        Some(Ok(t)) => {
            report.line(&format!(
                "mcp-tasks: task {id} ended {} before it could be cancelled",
                t.status
            ));
        }
        Some(Err(e @ ClientError::Unsupported { .. })) => {
            report.line(&format!(
                "mcp-tasks: cannot cancel task {id} ({e}); it was left running: {resume} picks it up again"
            ));
        }
        Some(Err(e)) => {
            let now = task.task();
            if now.status.is_terminal() {
                report.line(&format!(
                    "mcp-tasks: task {id} ended {} before it could be cancelled",
                    now.status
                ));
            } else {
                report.line(&format!("mcp-tasks: cancelling task {id} failed: {e}"));
            }
        }
    }
    out.interrupted_json(Some(&task.task()))
}

/// Show the progress notifications of `token` until the returned task is aborted.
pub(crate) fn show_progress(
    client: &Client,
    token: Option<Value>,
    report: Arc<Report>,
) -> tokio::task::JoinHandle<()> {
    let mut notes = client.notifications();
    tokio::spawn(async move {
        while let Ok(n) = notes.recv().await {
            if n.method != methods::PROGRESS {
                continue;
            }
            let Some(p) = n.params else { continue };
            if token.is_some() && p.get("progressToken") != token.as_ref() {
                continue;
            }
            report.progress(Progress {
                progress: p.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
                total: p.get("total").and_then(Value::as_f64),
                message: p.get("message").and_then(Value::as_str).map(str::to_owned),
            });
        }
    })
}
