//! A stdio upstream: a child process in its own process group, spoken to over its
//! stdin/stdout with [`mcp_tasks_rpc::stdio::serve`]. Its stderr goes to ours (the log).
//!
//! The child gets a clean environment: the variables of [`PASS_THROUGH`] (and `LC_*`)
//! that the gateway has, plus the upstream's own `env` (`--upstream-env`). With
//! `inherit_env` (`--upstream-inherit-env`) it gets the gateway's whole environment
//! instead, except the variables named `MCP_TASKS_*` (ours; some carry secrets such as
//! the bearer tokens of `MCP_TASKS_AUTH_TOKENS`). The upstream is often third-party code
//! started through `npx` or a language runtime: nothing of ours must reach it.

use std::ffi::OsString;
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_rpc::process::ProcessGroup;
use mcp_tasks_rpc::stdio::LineIo;
use mcp_tasks_rpc::{Handler, Peer};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use crate::config::UpstreamSpec;
use crate::connect::{Connected, Connector};
use crate::error::GatewayError;

/// The variables of the gateway's environment a stdio upstream gets (when set), besides
/// every `LC_*` and its own `--upstream-env`: what `npx`, `node`, `python` or `uv` need to
/// find programs, their caches and the user's locale, temporary directory and extra CA
/// certificates (the Windows names are there for the same reasons).
pub(crate) const PASS_THROUGH: &[&str] = &[
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

/// The prefix of the gateway's own variables, never passed to an upstream (some carry
/// secrets: `MCP_TASKS_AUTH_TOKENS`, `MCP_TASKS_TOKEN`).
pub(crate) const OWN_PREFIX: &str = "MCP_TASKS_";

/// Which of `vars` (the gateway's environment) a stdio upstream inherits: the
/// [`PASS_THROUGH`] list and `LC_*`, or with `inherit` all but `MCP_TASKS_*`.
pub(crate) fn inherited_env(
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

/// Starts the upstream command once per connection.
pub(crate) struct StdioConnector {
    spec: UpstreamSpec,
    max_line: usize,
}

impl StdioConnector {
    /// A connector for a [`UpstreamSpec::Stdio`].
    pub(crate) fn new(spec: UpstreamSpec, max_line: usize) -> Self {
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
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, GatewayError> {
        let UpstreamSpec::Stdio {
            program,
            args,
            env,
            cwd,
            inherit_env,
        } = &self.spec
        else {
            return Err(GatewayError::Config("not a stdio upstream".into()));
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_clear()
            .envs(inherited_env(*inherit_env, std::env::vars_os()))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        // The upstream may have started children of its own (`npx`, shells, language
        // servers): the whole group goes with the connection.
        let mut child = ProcessGroup::prepare(&mut cmd).spawn().map_err(|e| {
            GatewayError::Connect(format!("cannot start {}: {e}", self.spec.describe()))
        })?;
        let guard = ProcessGroup::of(&child);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(GatewayError::Connect(
                "the upstream's stdio is not piped".into(),
            ));
        };
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
            // upstream wrote before it went is read first.
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
}
