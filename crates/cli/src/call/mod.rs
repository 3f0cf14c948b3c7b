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
//! * `connect`: the connection flags, the client and its answers to the server;
//! * `follow`: status, progress and the live line; a task followed to its result;
//! * `out`: what is printed, and the exit codes.

mod connect;
mod follow;
mod out;

use std::sync::Arc;

use anyhow::bail;
use clap::Args;
use mcp_tasks_client::{CallOptions, Client, ClientError, TaskSupport, task_support};
use serde_json::{Map, Value};

pub(crate) use connect::{
    AnswerArgs, ConnectArgs, client_config, connect, or_interrupt, parse_timeout,
};
pub(crate) use follow::{Report, follow, show_progress};
pub(crate) use out::{Exit, Out, exit, exit_with, task_json};

use crate::term::interrupt::Interrupts;

/// Options of `call`.
#[derive(Args, Debug)]
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

/// A `--arg` value typed by the property's schema: by its `type` (or list of types, in
/// order), else a JSON literal, else a string.
fn typed_value(key: &str, schema: Option<&Value>, raw: &str) -> anyhow::Result<Value> {
    let types: Vec<&str> = match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return Ok(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())));
    }
    let literal = serde_json::from_str::<Value>(raw).ok();
    for t in &types {
        let fits = match (*t, &literal) {
            ("string", _) => return Ok(Value::String(raw.to_owned())),
            ("integer", Some(v)) => v.is_i64() || v.is_u64(),
            ("number", Some(v)) => v.is_number(),
            ("boolean", Some(v)) => v.is_boolean(),
            ("null", Some(v)) => v.is_null(),
            ("object", Some(v)) => v.is_object(),
            ("array", Some(v)) => v.is_array(),
            _ => false,
        };
        if fits {
            return Ok(literal.unwrap_or(Value::Null));
        }
    }
    bail!(
        "--arg {key}: `{raw}` is not {} (as the tool's input schema requires)",
        types.join(" or ")
    )
}

/// The `arguments` object from `--args` and `--arg`.
fn build_arguments(
    args_json: Option<&str>,
    pairs: &[String],
    input_schema: Option<&Value>,
) -> anyhow::Result<Value> {
    let mut obj = match args_json {
        None => Map::new(),
        Some(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            Ok(_) => bail!("--args: expected a JSON object"),
            Err(e) => bail!("--args: not JSON: {e}"),
        },
    };
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            bail!("--arg `{pair}`: expected KEY=VALUE");
        };
        if key.is_empty() {
            bail!("--arg `{pair}`: the key is empty");
        }
        let schema = input_schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(key));
        obj.insert(key.to_owned(), typed_value(key, schema, raw)?);
    }
    Ok(Value::Object(obj))
}

/// `mcp-tasks call`.
pub(crate) async fn run(args: CallArgs) -> anyhow::Result<()> {
    let out = Out::new(&args.conn);
    let config = match client_config(&args.conn, Some(&args.answers)) {
        Ok(c) => c,
        Err(e) => return exit_with(out.usage(&e)),
    };
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
    let options = CallOptions {
        ttl: args.ttl,
        progress_token: Some(token.clone()),
    };
    let report = Arc::new(Report::new(&args.tool));
    let progress = show_progress(client, Some(token), Arc::clone(&report));
    let mut interrupts = Interrupts::new();
    let code = if as_task {
        let created = tokio::select! {
            r = client.call_tool_as_task(&args.tool, arguments, &options) => Some(r),
            () = interrupts.next() => None,
        };
        match created {
            None => {
                report.finish();
                out.interrupted(None)
            }
            Some(Err(e)) => {
                report.finish();
                out.error(None, &e)
            }
            Some(Ok(task)) => follow(&task, out, &report, &mut interrupts).await,
        }
    } else {
        let r = tokio::select! {
            r = client.call_tool_with(&args.tool, arguments, &options) => Some(r),
            () = interrupts.next() => None,
        };
        report.finish();
        match r {
            None => out.interrupted(None),
            Some(Err(e)) => out.error(None, &e),
            Some(Ok(r)) => out.result(None, &r),
        }
    };
    progress.abort();
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_typed_by_the_schema() {
        let schema = json!({"properties": {
            "ms": {"type": "integer"},
            "text": {"type": "string"},
            "flag": {"type": "boolean"},
            "either": {"type": ["integer", "string"]},
            "any": {},
        }});
        let a = build_arguments(
            Some(r#"{"ms": 1, "keep": true}"#),
            &[
                "ms=25".into(),
                "text=42".into(),
                "flag=true".into(),
                "either=x".into(),
                "any=[1,2]".into(),
                "free=hello world".into(),
                "eq=a=b".into(),
            ],
            Some(&schema),
        )
        .unwrap();
        assert_eq!(
            a,
            json!({"ms": 25, "keep": true, "text": "42", "flag": true, "either": "x", "any": [1, 2], "free": "hello world", "eq": "a=b"})
        );
        assert!(build_arguments(None, &["ms=soon".into()], Some(&schema)).is_err());
        assert!(build_arguments(None, &["novalue".into()], None).is_err());
        assert!(build_arguments(Some("[1]"), &[], None).is_err());
    }
}
