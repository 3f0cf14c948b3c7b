//! What the requestor commands print and how they exit: the result on stdout, status and
//! errors on stderr, or one `--json` object; the exit codes.

use mcp_tasks_client::{CallToolResult, ClientError, Task, TaskStatus};
use mcp_tasks_proto::codes;
use serde_json::{Value, json};

use super::ConnectArgs;
use crate::term::Screen;

/// Exit codes of the requestor commands.
pub(crate) mod exit {
    /// Success.
    pub(crate) const OK: u8 = 0;
    /// The tool failed: a result with `isError`, or a failed task.
    pub(crate) const TOOL_FAILED: u8 = 1;
    /// A JSON-RPC, connection or usage error.
    pub(crate) const ERROR: u8 = 2;
    /// The task was cancelled.
    pub(crate) const CANCELLED: u8 = 3;
    /// Refused by the client before anything was sent: the server does not offer it (a
    /// capability it does not declare, a tool it does not list, a tool whose
    /// `taskSupport` forbids a task).
    pub(crate) const UNSUPPORTED: u8 = 4;
    /// Interrupted (Ctrl-C).
    pub(crate) const INTERRUPTED: u8 = 130;
}

/// A requestor command's outcome, carried to `main` as an error so that it can exit with
/// that code (what had to be said is said already).
#[derive(Debug)]
pub(crate) struct Exit(pub(crate) u8);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit code {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// `Ok` for 0, else an [`Exit`] error.
pub(crate) fn exit_with(code: u8) -> anyhow::Result<()> {
    if code == exit::OK {
        Ok(())
    } else {
        Err(Exit(code).into())
    }
}

/// Prints and exits the way every requestor command does.
pub(crate) struct Out {
    json: bool,
}

impl Out {
    pub(crate) fn new(conn: &ConnectArgs) -> Self {
        Self { json: conn.json }
    }

    /// Whether `--json` is on.
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// A status line on stderr.
    pub(crate) fn status(&self, task: &Task) {
        let mut line = format!("task {}: {}", task.task_id, task.status);
        if let Some(m) = &task.status_message {
            line.push_str(&format!(" ({m})"));
        }
        eprintln!("{line}");
    }

    /// Report `e` and return its exit code.
    pub(crate) fn error(&self, task: Option<&Task>, e: &ClientError) -> u8 {
        let code = match e {
            ClientError::Task { task, .. } if task.status == TaskStatus::Cancelled => {
                exit::CANCELLED
            }
            ClientError::Task { .. } => exit::TOOL_FAILED,
            ClientError::Unsupported { .. } => exit::UNSUPPORTED,
            _ => exit::ERROR,
        };
        let task = e.task().or(task);
        if self.json {
            let error = match e.rpc_error() {
                Some(err) => serde_json::to_value(err).unwrap_or(Value::Null),
                None => match e {
                    ClientError::Transport { error, .. } => {
                        let mut v =
                            serde_json::to_value(error.to_error_object()).unwrap_or(Value::Null);
                        v["message"] = json!(e.to_string());
                        v
                    }
                    // No JSON-RPC error: nothing was sent, the server did not fail.
                    ClientError::Unsupported { what, why } => json!({
                        "message": e.to_string(),
                        "unsupported": { "what": what, "why": why },
                    }),
                    _ => json!({ "code": codes::INTERNAL_ERROR, "message": e.to_string() }),
                },
            };
            let mut obj = json!({ "error": error });
            if let Some(t) = task {
                obj["task"] = task_json(t);
            }
            println!("{obj}");
        } else {
            match e {
                ClientError::Task { task, error } => {
                    let what = if task.status == TaskStatus::Cancelled {
                        "was cancelled"
                    } else {
                        "failed"
                    };
                    eprintln!("mcp-tasks: task {} {what}: {error}", task.task_id);
                    if let Some(data) = &error.data {
                        eprintln!("  data: {data}");
                    }
                }
                other => eprintln!("mcp-tasks: {other}"),
            }
        }
        code
    }

    /// A usage error (before or outside the protocol): exit 2.
    pub(crate) fn usage(&self, e: &anyhow::Error) -> u8 {
        if self.json {
            println!(
                "{}",
                json!({ "error": { "code": codes::INVALID_PARAMS, "message": format!("{e:#}") } })
            );
        } else {
            eprintln!("mcp-tasks: {e:#}");
        }
        exit::ERROR
    }

    /// Print a tool result (and its task); exit 0, or 1 for `isError` or a failed task.
    pub(crate) fn result(&self, task: Option<&Task>, r: &CallToolResult) -> u8 {
        let failed = r.is_error() || task.is_some_and(|t| t.status == TaskStatus::Failed);
        if self.json {
            let mut obj = json!({ "result": r.as_value() });
            if let Some(t) = task {
                obj["task"] = task_json(t);
            }
            println!("{obj}");
        } else {
            let lines = content_lines(r);
            for line in &lines {
                println!("{line}");
            }
            if r.is_error() {
                eprintln!("mcp-tasks: the tool reported an error (isError)");
            } else if let Some(t) = task.filter(|t| t.status == TaskStatus::Failed) {
                let why = t.status_message.as_deref().unwrap_or("no message");
                eprintln!("mcp-tasks: task {} failed ({why})", t.task_id);
            }
            if lines.is_empty() {
                eprintln!("mcp-tasks: the result has no content");
            }
        }
        if failed { exit::TOOL_FAILED } else { exit::OK }
    }

    /// The interruption notice; exit 130.
    pub(crate) fn interrupted(&self, task: Option<&Task>) -> u8 {
        match task {
            Some(t) if !t.status.is_terminal() => Screen::get().line(&format!(
                "mcp-tasks: interrupted; task {} was left running (`mcp-tasks tasks result {}` picks it up again)",
                t.task_id, t.task_id
            )),
            _ => Screen::get().line("mcp-tasks: interrupted"),
        }
        self.interrupted_json(task)
    }

    /// The `--json` object of an interruption (nothing else); exit 130.
    pub(crate) fn interrupted_json(&self, task: Option<&Task>) -> u8 {
        if self.json {
            let mut obj =
                json!({ "error": { "code": codes::INTERNAL_ERROR, "message": "interrupted" } });
            if let Some(t) = task {
                obj["task"] = task_json(t);
            }
            println!("{obj}");
        }
        exit::INTERRUPTED
    }
}

pub(crate) fn task_json(t: &Task) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// What a result prints on stdout: each text block's text, any other block as JSON;
/// without content its `structuredContent`, else the fields it has besides the protocol's
/// own (`_meta`, `isError`, `resultType`), else nothing.
pub(crate) fn content_lines(r: &CallToolResult) -> Vec<String> {
    let content = r.content();
    if content.is_empty() {
        if let Some(v) = r.structured_content() {
            return vec![v.to_string()];
        }
        let rest: serde_json::Map<String, Value> = r
            .as_value()
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "_meta" | "isError" | "resultType" | "content"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        return if rest.is_empty() {
            Vec::new()
        } else {
            vec![Value::Object(rest).to_string()]
        };
    }
    content
        .iter()
        .map(|block| match block.get("text").and_then(Value::as_str) {
            Some(text) if block.get("type").and_then(Value::as_str) == Some("text") => {
                text.to_owned()
            }
            _ => block.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: Value) -> Vec<String> {
        content_lines(&CallToolResult(v))
    }

    #[test]
    fn text_blocks_print_as_text_and_others_as_json() {
        assert_eq!(
            lines(json!({"content": [{"type": "text", "text": "slept 5"},
                                     {"type": "image", "data": "AA==", "mimeType": "image/png"}]})),
            vec![
                "slept 5".to_owned(),
                r#"{"data":"AA==","mimeType":"image/png","type":"image"}"#.to_owned()
            ]
        );
        assert_eq!(
            lines(json!({"content": [], "structuredContent": {"n": 1}})),
            vec![r#"{"n":1}"#.to_owned()]
        );
    }

    /// A failed task's result without content (only the protocol's own fields) prints
    /// nothing on stdout: no raw `{"_meta": ...}`.
    #[test]
    fn a_result_without_content_prints_no_protocol_fields() {
        let failed = json!({"content": [], "isError": true, "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}});
        assert!(lines(failed).is_empty());
        assert!(lines(json!({"_meta": {"k": 1}})).is_empty());
        assert_eq!(
            lines(json!({"_meta": {"k": 1}, "answer": 42})),
            vec![r#"{"answer":42}"#.to_owned()]
        );
    }
}
