//! A stdio server process, in its own process group, torn down as a whole.
//!
//! A client's server gets SIGTERM first and SIGKILL after [`TERM_GRACE`] (after
//! [`ChildGuard::shutdown`] gave it time to exit on its closed input); a gateway's
//! upstream connection is killed at once when the lane drops it (its tasks have already
//! been failed or noted for resuming by then).

use std::process::Stdio;
use std::time::Duration;

use mcp_tasks_rpc::process::ProcessGroup;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::ClientError;

/// How long the group has to exit on SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// Owns a spawned server. Dropping it sends SIGTERM to the whole process group (the
/// server and anything it started), then SIGKILL to what is left shortly after.
pub(crate) struct ChildGuard {
    // Declared first: the group is signalled before the child is dropped.
    _group: ProcessGroup,
    child: Box<Child>,
}

/// Spawn `command` with piped stdin/stdout as the leader of a new process group (killed
/// with the [`Child`] when it is dropped); `what` names it in the error. The one way a
/// stdio server is started: by [`ChildGuard::spawn`] for a client, by
/// [`crate::connect::StdioConnector`] for each connection of a gateway's upstream.
pub(crate) fn spawn_group(
    command: &mut Command,
    what: &str,
) -> Result<(Child, ChildStdin, ChildStdout), ClientError> {
    ProcessGroup::prepare(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| ClientError::Connect(format!("cannot start {what}: {e}")))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ClientError::Connect(format!("{what} has no stdio pipes")));
    };
    Ok((child, stdin, stdout))
}

impl ChildGuard {
    /// Spawn `command` with piped stdin/stdout as the leader of a new process group.
    pub(crate) fn spawn(
        command: &mut Command,
    ) -> Result<(Self, ChildStdin, ChildStdout), ClientError> {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let (child, stdin, stdout) = spawn_group(command, &format!("`{program}`"))?;
        let group = ProcessGroup::of(&child).terminate_first(TERM_GRACE);
        Ok((
            Self {
                _group: group,
                child: Box::new(child),
            },
            stdin,
            stdout,
        ))
    }

    /// Wait up to `grace` for the server to exit by itself (its input is closed), then
    /// tear the group down.
    pub(crate) async fn shutdown(mut self, grace: Duration) {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => tracing::debug!(%status, "server exited"),
            Ok(Err(e)) => tracing::debug!(error = %e, "waiting for the server failed"),
            Err(_) => tracing::debug!("server still running after its input closed"),
        }
        // Drop: whatever is left of the group goes.
    }
}
