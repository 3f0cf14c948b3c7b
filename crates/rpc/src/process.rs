//! A child process in a process group of its own, torn down as a whole: a stdio server
//! (the client's) or a stdio upstream (the gateway's) may start children of its own
//! (`npx`, shells, language servers), which must not outlive it.

use std::time::Duration;

use tokio::process::{Child, Command};

/// Kills the process group of a child when dropped: at once with SIGKILL, or, with a
/// grace period, SIGTERM first and SIGKILL to what is left after the grace. Where process
/// groups do not exist it does nothing (`kill_on_drop`, set by [`Self::prepare`], still
/// covers the child itself).
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<u32>,
    grace: Option<Duration>,
}

impl ProcessGroup {
    /// Make `command` start its child as the leader of a new process group, killed when
    /// its [`Child`] is dropped.
    pub fn prepare(command: &mut Command) -> &mut Command {
        command.kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        command
    }

    /// The group `child` leads (spawned from a command [`Self::prepare`]d), killed with
    /// SIGKILL when this is dropped.
    pub fn of(child: &Child) -> Self {
        Self {
            pgid: child.id(),
            grace: None,
        }
    }

    /// SIGTERM first when dropped, SIGKILL after `grace` to what is left.
    #[must_use]
    pub fn terminate_first(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid, self.grace);
        }
    }
}

#[cfg(unix)]
fn kill_group(pgid: u32, grace: Option<Duration>) {
    use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    if test_kill_process_group(pid).is_err() {
        return;
    }
    let Some(grace) = grace else {
        match kill_process_group(pid, Signal::KILL) {
            Ok(()) => tracing::debug!(pgid, "process group killed"),
            Err(e) => tracing::debug!(pgid, error = %e, "could not kill the process group"),
        }
        return;
    };
    let _ = kill_process_group(pid, Signal::TERM);
    // Give the group a moment to exit on SIGTERM, then make sure.
    std::thread::spawn(move || {
        let step = Duration::from_millis(50);
        let mut waited = Duration::ZERO;
        while waited < grace {
            std::thread::sleep(step);
            waited += step;
            if test_kill_process_group(pid).is_err() {
                return;
            }
        }
        let _ = kill_process_group(pid, Signal::KILL);
    });
}

#[cfg(not(unix))]
fn kill_group(_pgid: u32, _grace: Option<Duration>) {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn alive(pid: u32) -> bool {
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
        rustix::process::test_kill_process_group(pid).is_ok()
    }

    async fn gone(pgid: u32) -> bool {
        for _ in 0..100 {
            if !alive(pgid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn dropping_the_guard_kills_the_whole_group() {
        // A shell whose own child (a grandchild of ours) would outlive it.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        let mut child = ProcessGroup::prepare(&mut cmd).spawn().unwrap();
        let group = ProcessGroup::of(&child);
        let pgid = child.id().unwrap();
        assert!(alive(pgid));
        drop(group);
        // The leader is reaped here; the grandchild by whoever adopted it.
        let _ = child.wait().await;
        assert!(gone(pgid).await, "the group is gone");
    }

    #[tokio::test]
    async fn a_grace_period_terminates_first() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' TERM; sleep 30 & wait"]);
        let mut child = ProcessGroup::prepare(&mut cmd).spawn().unwrap();
        let pgid = child.id().unwrap();
        // Let the shell set its trap.
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(ProcessGroup::of(&child).terminate_first(Duration::from_millis(600)));
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(
            alive(pgid),
            "SIGTERM is ignored: the group waits for the grace"
        );
        let _ = child.wait().await;
        assert!(gone(pgid).await, "SIGKILL after the grace");
    }
}
