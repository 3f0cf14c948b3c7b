//! A stdio server: a child process in its own process group, spoken to over its
//! stdin/stdout with [`mcp_tasks_rpc::stdio::serve`]. Its stderr goes to ours (the log).
//!
//! The child gets a clean environment: the variables of [`PASS_THROUGH`] (and `LC_*`)
//! that we have, plus the spec's own `env`. With `inherit_env` it gets our whole
//! environment instead, except the variables named `MCP_TASKS_*` (ours; some carry
//! secrets such as the bearer tokens of `MCP_TASKS_AUTH_TOKENS`). The server is often
//! third-party code started through `npx` or a language runtime: nothing of ours must
//! reach it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_rpc::process::ProcessGroup;
use mcp_tasks_rpc::stdio::LineIo;
use mcp_tasks_rpc::{Handler, Peer};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::{Connected, Connector};
use crate::ClientError;

/// The variables of our environment a stdio server gets (when set), besides every `LC_*`
/// and its own `env`: what `npx`, `node`, `python` or `uv` need to find programs, their
/// caches and the user's locale, temporary directory and extra CA certificates (the
/// Windows names are there for the same reasons).
pub const PASS_THROUGH: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
];

/// The prefix of our own variables, never passed to a stdio server (some carry secrets:
/// `MCP_TASKS_AUTH_TOKENS`, `MCP_TASKS_TOKEN`).
pub const OWN_PREFIX: &str = "MCP_TASKS_";

/// Which of `vars` (our environment) a stdio server inherits: the [`PASS_THROUGH`] list
/// and `LC_*`, or with `inherit` all but `MCP_TASKS_*`.
pub fn inherited_env(
    inherit: bool,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(k, _)| {
            let Some(k) = k.to_str() else {
                return inherit;
            };
            if k.starts_with(OWN_PREFIX) {
                return false;
            }
            inherit || k.starts_with("LC_") || PASS_THROUGH.contains(&k)
        })
        .collect()
}

/// A command to start as a stdio server. Its `Debug` shows the command as
/// [`Self::describe`] does and the names of its `env`, not their values (which may be
/// secrets).
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StdioSpec {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables of the command, on top of the [`PASS_THROUGH`] list or,
    /// with `inherit_env`, of our own environment.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Inherit our whole environment (except our own `MCP_TASKS_*` variables) instead of
    /// only the pass-through list.
    pub inherit_env: bool,
}

impl std::fmt::Debug for StdioSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioSpec")
            .field("command", &self.describe())
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("inherit_env", &self.inherit_env)
            .finish()
    }
}

impl StdioSpec {
    /// `program` with `args`, a clean environment, our working directory.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            program: program.into(),
            args,
            ..Self::default()
        }
    }

    /// For logs and error messages (arguments that look like secrets redacted).
    pub fn describe(&self) -> String {
        format!(
            "stdio `{}`",
            mcp_tasks_proto::logged::redact_command(&self.program, &self.args)
        )
    }

    /// The command, with its clean environment.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .env_clear()
            .envs(inherited_env(self.inherit_env, std::env::vars_os()))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stderr(Stdio::inherit());
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd
    }
}

/// Starts the command once per connection.
#[derive(Debug)]
pub struct StdioConnector {
    spec: StdioSpec,
    max_line: usize,
}

impl StdioConnector {
    /// A connector for `spec`; `max_line` bounds one message from the server.
    pub fn new(spec: StdioSpec, max_line: usize) -> Self {
        Self { spec, max_line }
    }
}

async fn wait_exit(mut child: Child) -> String {
    match child.wait().await {
        Ok(status) => match status.code() {
            Some(code) => format!("the upstream process exited with status {code}"),
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    if let Some(sig) = status.signal() {
                        return format!("the upstream process was killed by signal {sig}");
                    }
                }
                "the upstream process exited".to_owned()
            }
        },
        Err(e) => format!("the upstream process could not be waited for: {e}"),
    }
}

#[async_trait]
impl Connector for StdioConnector {
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, ClientError> {
        // The server may have started children of its own (`npx`, shells, language
        // servers): the whole group goes with the connection.
        let (child, stdin, stdout) =
            crate::process::spawn_group(&mut self.spec.command(), &self.spec.describe())?;
        let guard = ProcessGroup::of(&child);
        tracing::info!(pid = ?child.id(), upstream = %self.spec.describe(), "upstream started");
        let (peer, outbound) = Peer::new(handler);
        let (tx, ended) = oneshot::channel();
        let serving_peer = peer.clone();
        let max_line = self.max_line;
        tokio::spawn(async move {
            let reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
            let io = LineIo::new(reader, stdin).max_line(max_line);
            let serve = mcp_tasks_rpc::stdio::serve(serving_peer.clone(), outbound, io);
            tokio::pin!(serve);
            let exit = wait_exit(child);
            tokio::pin!(exit);
            // Whichever ends first: the process, or its stdout. Either way, what the
            // server wrote before it went is read first.
            let reason = tokio::select! {
                r = &mut serve => {
                    let closed = match r {
                        Ok(()) => "the upstream closed its stdout".to_owned(),
                        Err(e) => format!("the upstream's stdio failed: {e}"),
                    };
                    // The exit status says more, if it comes soon.
                    tokio::time::timeout(std::time::Duration::from_millis(500), &mut exit)
                        .await
                        .unwrap_or(closed)
                }
                reason = &mut exit => {
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), &mut serve).await;
                    reason
                }
            };
            serving_peer.close();
            let _ = tx.send(reason);
        });
        Ok(Connected {
            peer,
            ended,
            guard: Box::new(guard),
            session: None,
            settled: None,
        })
    }

    fn describe(&self) -> String {
        self.spec.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pass_through_list_unless_inherited_and_never_ours() {
        let vars = || {
            [
                ("PATH", "/bin"),
                ("LC_ALL", "C"),
                ("API_KEY", "k"),
                ("MCP_TASKS_AUTH_TOKENS", "t p"),
                ("MCP_TASKS_TOKEN", "t"),
            ]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        };
        let names = |inherit| {
            inherited_env(inherit, vars())
                .into_iter()
                .map(|(k, _)| k.into_string().unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(false), ["PATH", "LC_ALL"]);
        assert_eq!(names(true), ["PATH", "LC_ALL", "API_KEY"]);
    }

    #[test]
    fn debug_shows_the_names_of_the_env_not_their_values() {
        let mut spec = StdioSpec::new("srv", vec!["--token=s3cret-arg".into()]);
        spec.env.push(("API_KEY".into(), "s3cret-env".into()));
        let shown = format!("{:?}", StdioConnector::new(spec, 1024));
        assert!(shown.contains("API_KEY"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
