//! A stdio server process, in its own process group, torn down as a whole.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::ClientError;

/// Owns a spawned server. Dropping it sends SIGTERM to the whole process group (the
/// server and anything it started), then SIGKILL to what is left shortly after.
pub(crate) struct ChildGuard {
    child: Option<Child>,
    pgid: Option<u32>,
}

impl ChildGuard {
    /// Spawn `command` with piped stdin/stdout as the leader of a new process group.
    pub(crate) fn spawn(
        command: &mut Command,
    ) -> Result<(Self, ChildStdin, ChildStdout), ClientError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = command
            .spawn()
            .map_err(|e| ClientError::Connect(format!("cannot start `{program}`: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Connect(format!(
                "`{program}` has no stdio pipes"
            )));
        };
        let pgid = child.id();
        Ok((
            Self {
                child: Some(child),
                pgid,
            },
            stdin,
            stdout,
        ))
    }

    /// Wait up to `grace` for the server to exit by itself (its input is closed), then
    /// tear the group down.
    pub(crate) async fn shutdown(mut self, grace: Duration) {
        if let Some(child) = self.child.as_mut() {
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(Ok(status)) => tracing::debug!(%status, "server exited"),
                Ok(Err(e)) => tracing::debug!(error = %e, "waiting for the server failed"),
                Err(_) => tracing::debug!("server still running after its input closed"),
            }
        }
        // Drop: whatever is left of the group goes.
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
        // `kill_on_drop` covers the leader where process groups do not exist.
        drop(self.child.take());
    }
}

#[cfg(unix)]
fn kill_group(pgid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    if test_kill_process_group(pid).is_err() {
        return;
    }
    let _ = kill_process_group(pid, Signal::TERM);
    // Give the group a moment to exit on SIGTERM, then make sure.
    std::thread::spawn(move || {
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(50));
            if test_kill_process_group(pid).is_err() {
                return;
            }
        }
        let _ = kill_process_group(pid, Signal::KILL);
    });
}
