//! A stdio server process, in its own process group, torn down as a whole.

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

impl ChildGuard {
    /// Spawn `command` with piped stdin/stdout as the leader of a new process group.
    pub(crate) fn spawn(
        command: &mut Command,
    ) -> Result<(Self, ChildStdin, ChildStdout), ClientError> {
        ProcessGroup::prepare(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = command
            .spawn()
            .map_err(|e| ClientError::Connect(format!("cannot start `{program}`: {e}")))?;
        let group = ProcessGroup::of(&child).terminate_first(TERM_GRACE);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Connect(format!(
                "`{program}` has no stdio pipes"
            )));
        };
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
