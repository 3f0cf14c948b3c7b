//! Reaching the server (`--url` or `-- COMMAND`) and answering what it asks
//! (`--elicit-reply`, `--sample-reply`, or prompts on a terminal).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, bail};
use async_trait::async_trait;
use clap::Args;
use mcp_tasks_client::{
    Client, ClientConfig, ClientError, ElicitationHandler, HttpClientConfig, RevisionChoice,
    SamplingHandler, ServerRequest, TaskReceiver, elicit, sampling, sampling_refused,
};
use mcp_tasks_proto::ErrorObject;
use serde_json::Value;

use crate::term::interrupt::Interrupts;
use crate::term::{Screen, prompt};

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
    /// Trust the CA certificates of this PEM file for an `https://` --url, besides the
    /// system's (`SSL_CERT_FILE` replaces those), e.g. a private CA or a self-signed
    /// server certificate.
    #[arg(long, value_name = "FILE", requires = "url")]
    ca_cert: Option<std::path::PathBuf>,
    /// Bound on each request (ms or a duration like `30s`; `0` for none). Plain tool calls
    /// and task results wait as long as the work takes.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::duration::parse)]
    timeout: Duration,
    /// Print one JSON object on stdout: `{task?, result | error}`.
    #[arg(long)]
    pub(super) json: bool,
    /// The protocol generation to speak: `auto` finds the server's (a 2026-07-28
    /// `server/discover` probe, 2025-11-25 `initialize` when the server does not answer it
    /// as a modern one); a server of both eras is spoken to in the one the command needs
    /// (`call`, `tasks list|result|watch`: 2025-11-25; `tasks get|cancel`: 2026-07-28).
    /// `legacy` (or `2025-11-25`) speaks 2025-11-25, `modern` (or `2026-07-28`) 2026-07-28
    /// with the tasks extension.
    #[arg(
        long,
        value_name = "ERA",
        default_value = "auto",
        value_parser = parse_revision_choice,
        env = "MCP_TASKS_PROTOCOL"
    )]
    protocol: RevisionChoice,
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

/// `--protocol`: `auto`, `legacy`, `modern` or a dated revision.
fn parse_revision_choice(s: &str) -> Result<RevisionChoice, String> {
    s.parse::<RevisionChoice>()
        .map_err(|e| format!("{e}, `auto`, `legacy` or `modern`"))
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

/// `d`, or `None` for `0` (no bound).
pub(crate) fn nonzero(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

/// Where a request from the server comes from, for the messages about it.
fn origin(request: &ServerRequest) -> String {
    match (&request.task_id, &request.related_task) {
        (Some(t), _) => format!(" (run as task {t} of this client)"),
        (None, Some(t)) => format!(" (task {t})"),
        (None, None) => String::new(),
    }
}

/// Answers one kind of request from the server: with the reply of its `--*-reply` flag,
/// at a prompt on a terminal, or not at all (saying so).
struct CliAnswer<T> {
    reply: Option<T>,
    interactive: bool,
}

/// Elicitations: from `--elicit-reply`, at a prompt, or declined.
#[async_trait]
impl ElicitationHandler for CliAnswer<Value> {
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

/// Sampling requests: from `--sample-reply`, at a prompt, or refused.
#[async_trait]
impl SamplingHandler for CliAnswer<String> {
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
    let timeout = nonzero(conn.timeout);
    let reply = answers
        .and_then(|a| a.elicit_reply.as_deref())
        .map(elicit_reply)
        .transpose()?;
    // Prompts need someone at the keyboard.
    let interactive = std::io::stdin().is_terminal();
    let mut config = ClientConfig::default();
    config.name = "mcp-tasks-cli".into();
    let mut config = config
        .with_request_timeout(timeout)
        .with_elicitation(CliAnswer { reply, interactive })
        .with_sampling(CliAnswer {
            reply: answers.and_then(|a| a.sample_reply.clone()),
            interactive,
        })
        // A server may task-augment what it asks: the answers then run as tasks of the CLI.
        .with_task_receiver(TaskReceiver::new());
    config.call_timeout = None;
    config.protocol = conn.protocol;
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
            if let Some(path) = &conn.ca_cert {
                let pem = std::fs::read(path)
                    .with_context(|| format!("--ca-cert: cannot read {}", path.display()))?;
                http.extra_root_certs.push(pem);
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn a_zero_timeout_is_none() {
        assert_eq!(nonzero(Duration::ZERO), None);
        assert_eq!(
            nonzero(Duration::from_millis(1500)),
            Some(Duration::from_millis(1500))
        );
    }
}
