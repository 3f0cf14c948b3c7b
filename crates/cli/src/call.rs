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

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_trait::async_trait;
use clap::Args;
use futures::{FutureExt, StreamExt};
use mcp_tasks_client::{
    CallOptions, CallToolResult, Client, ClientConfig, ClientError, ElicitationHandler,
    HttpClientConfig, SamplingHandler, ServerRequest, Task, TaskHandle, TaskReceiver, TaskStatus,
    TaskSupport, elicit, sampling, sampling_refused, task_support,
};
use mcp_tasks_proto::{ErrorObject, codes, methods};
use serde_json::{Map, Value, json};

use crate::term::interrupt::Interrupts;
use crate::term::live::{Live, Progress};
use crate::term::{self, Screen, prompt};

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

/// How to reach the server.
#[derive(Args, Debug)]
pub(crate) struct ConnectArgs {
    /// The server's Streamable HTTP endpoint (e.g. http://127.0.0.1:8080/mcp).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Bearer token sent to the server.
    #[arg(
        long,
        env = "MCP_TASKS_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    auth_token: Option<String>,
    /// Bound on each request (ms or a duration like `30s`; `0` for none). Plain tool calls
    /// and task results wait as long as the work takes.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    timeout: String,
    /// Print one JSON object on stdout: `{task?, result | error}`.
    #[arg(long)]
    json: bool,
    /// The server to spawn and speak to on stdio, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl ConnectArgs {
    /// The server, as the user named it (for display).
    pub(crate) fn target(&self) -> String {
        match &self.url {
            Some(u) => u.clone(),
            None => self.command.join(" "),
        }
    }
}

/// How to answer what the server asks.
#[derive(Args, Debug)]
pub(crate) struct AnswerArgs {
    /// Answer sampling requests (`sampling/createMessage`) with this text. Without it they
    /// are asked at a prompt on a terminal, and refused elsewhere.
    #[arg(long, value_name = "TEXT")]
    sample_reply: Option<String>,
    /// Answer elicitations: a JSON object (accepted as the content), `decline` or `cancel`.
    /// Without it they are asked at a prompt on a terminal, and declined elsewhere.
    #[arg(long, value_name = "JSON|decline")]
    elicit_reply: Option<String>,
}

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
            print_content(r);
            if r.is_error() {
                eprintln!("mcp-tasks: the tool reported an error (isError)");
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

fn print_content(r: &CallToolResult) {
    let content = r.content();
    if content.is_empty() {
        let v = r.structured_content().unwrap_or(r.as_value());
        println!("{v}");
        return;
    }
    for block in content {
        match block.get("text").and_then(Value::as_str) {
            Some(text) if block.get("type").and_then(Value::as_str) == Some("text") => {
                println!("{text}");
            }
            _ => println!("{block}"),
        }
    }
}

/// Milliseconds, a duration, or `0` for none.
pub(crate) fn parse_timeout(s: &str) -> anyhow::Result<Option<Duration>> {
    let d = match s.parse::<u64>() {
        Ok(ms) => Duration::from_millis(ms),
        Err(_) => humantime::parse_duration(s)
            .with_context(|| format!("--timeout: `{s}` is not milliseconds or a duration"))?,
    };
    Ok((!d.is_zero()).then_some(d))
}

/// Where a request from the server comes from, for the messages about it.
fn origin(request: &ServerRequest) -> String {
    match (&request.task_id, &request.related_task) {
        (Some(t), _) => format!(" (run as task {t} of this client)"),
        (None, Some(t)) => format!(" (task {t})"),
        (None, None) => String::new(),
    }
}

/// Answers elicitations from `--elicit-reply`, at a prompt on a terminal, or declines
/// (saying so).
struct CliElicitation {
    reply: Option<Value>,
    interactive: bool,
}

#[async_trait]
impl ElicitationHandler for CliElicitation {
    async fn elicit(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        let origin = origin(&request);
        if let Some(reply) = &self.reply {
            Screen::get().line(&format!(
                "elicitation{origin}: {} -> answered from --elicit-reply",
                request.message()
            ));
            return Ok(reply.clone());
        }
        if self.interactive {
            return Ok(prompt::elicit(&request).await);
        }
        Screen::get().line(&format!(
            "elicitation{origin}: {} -> declined (not on a terminal; pass --elicit-reply JSON|decline)",
            request.message()
        ));
        Ok(elicit::decline())
    }
}

/// Answers sampling requests from `--sample-reply`, at a prompt on a terminal, or refuses
/// (saying so).
struct CliSampling {
    reply: Option<String>,
    interactive: bool,
}

#[async_trait]
impl SamplingHandler for CliSampling {
    async fn create_message(&self, request: ServerRequest) -> Result<Value, ErrorObject> {
        let origin = origin(&request);
        if let Some(text) = &self.reply {
            Screen::get().line(&format!("sampling{origin}: answered from --sample-reply"));
            return Ok(sampling::text("mcp-tasks-cli", text));
        }
        if self.interactive {
            return prompt::sample(&request).await;
        }
        Screen::get().line(&format!(
            "sampling{origin}: declined (not on a terminal; pass --sample-reply TEXT)"
        ));
        Err(sampling_refused("no --sample-reply given"))
    }
}

/// Read `--elicit-reply`: a JSON object (accept), `decline` or `cancel`.
fn elicit_reply(s: &str) -> anyhow::Result<Value> {
    match s {
        "decline" => Ok(elicit::decline()),
        "cancel" => Ok(elicit::cancel()),
        _ => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Ok(elicit::accept(v)),
            _ => bail!("--elicit-reply: expected a JSON object, `decline` or `cancel`, got `{s}`"),
        },
    }
}

/// The client configuration for these answers.
pub(crate) fn client_config(
    conn: &ConnectArgs,
    answers: Option<&AnswerArgs>,
) -> anyhow::Result<ClientConfig> {
    let timeout = parse_timeout(&conn.timeout)?;
    let reply = answers
        .and_then(|a| a.elicit_reply.as_deref())
        .map(elicit_reply)
        .transpose()?;
    // Prompts need someone at the keyboard.
    let interactive = std::io::stdin().is_terminal();
    let mut config = ClientConfig {
        name: "mcp-tasks-cli".into(),
        ..ClientConfig::default()
    }
    .with_request_timeout(timeout)
    .with_elicitation(CliElicitation { reply, interactive })
    .with_sampling(CliSampling {
        reply: answers.and_then(|a| a.sample_reply.clone()),
        interactive,
    })
    // A server may task-augment what it asks: the answers then run as tasks of the CLI.
    .with_task_receiver(TaskReceiver::new());
    config.call_timeout = None;
    Ok(config)
}

/// Connect as `conn` says.
pub(crate) async fn connect(
    conn: &ConnectArgs,
    config: ClientConfig,
) -> anyhow::Result<Result<Client, ClientError>> {
    match (&conn.url, conn.command.split_first()) {
        (Some(_), Some(_)) => bail!("give either --url or `-- COMMAND`, not both"),
        (None, None) => bail!("no server: give --url URL or `-- COMMAND ARGS...`"),
        (Some(url), None) => {
            let mut http = HttpClientConfig::new(url.clone());
            http.bearer_token.clone_from(&conn.auth_token);
            Ok(Client::connect_http(http, config).await)
        }
        (None, Some((program, args))) => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            if Screen::get().is_tty() {
                // The server's stderr (its logs) goes above the live line, not through it.
                let (reader, writer) = std::io::pipe().context("cannot make a pipe")?;
                cmd.stderr(writer);
                std::thread::spawn(move || {
                    use std::io::BufRead;
                    for line in std::io::BufReader::new(reader).lines() {
                        let Ok(line) = line else { return };
                        Screen::get().line(&line);
                    }
                });
            }
            Ok(Client::connect_stdio(cmd, config).await)
        }
    }
}

/// Run `fut` unless Ctrl-C comes first.
pub(crate) async fn or_interrupt<T>(fut: impl std::future::Future<Output = T>) -> Option<T> {
    let mut interrupts = Interrupts::new();
    tokio::select! {
        r = fut => Some(r),
        () = interrupts.next() => None,
    }
}

/// How a call's status and progress are shown: a line per change (not a terminal), or
/// the live line.
pub(crate) struct Report {
    live: Option<Live>,
    started: Instant,
}

impl Report {
    /// For a call of `what`.
    pub(crate) fn new(what: &str) -> Self {
        Self {
            live: Screen::get().is_tty().then(|| Live::start(what)),
            started: Instant::now(),
        }
    }

    /// The task changed (or was first seen).
    pub(crate) fn status(&self, out: &Out, t: &Task) {
        match &self.live {
            Some(live) => live.task(t),
            None => out.status(t),
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
    let outcome = {
        let result = task.result();
        tokio::pin!(result);
        loop {
            tokio::select! {
                r = &mut result => break Some(r),
                Some(t) = updates.next() => report.status(out, &t),
                () = interrupts.next() => break None,
            }
        }
    };
    while let Some(Some(t)) = updates.next().now_or_never() {
        report.status(out, &t);
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
async fn cancel_interrupted(
    task: &TaskHandle,
    out: &Out,
    report: &Report,
    interrupts: &mut Interrupts,
) -> u8 {
    let id = task.id().to_owned();
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
                "mcp-tasks: left task {id} running; `mcp-tasks tasks result {id}` picks it up again"
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
                "mcp-tasks: cannot cancel task {id} ({e}); it was left running: `mcp-tasks tasks result {id}` picks it up again"
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

    #[test]
    fn elicit_replies_parse() {
        assert_eq!(
            elicit_reply("decline").unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            elicit_reply(r#"{"a":1}"#).unwrap(),
            json!({"action": "accept", "content": {"a": 1}})
        );
        assert!(elicit_reply("maybe").is_err());
    }

    #[test]
    fn timeouts_parse() {
        assert_eq!(parse_timeout("0").unwrap(), None);
        assert_eq!(
            parse_timeout("1500").unwrap(),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_timeout("2s").unwrap(), Some(Duration::from_secs(2)));
        assert!(parse_timeout("soon").is_err());
    }
}
