//! Helpers shared by the integration tests of the SQLite store.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::process::Command;

use mcp_tasks_core::NewTask;

/// A task created at `T0` by "tests".
pub fn task(owner: Option<&str>) -> NewTask {
    mcp_tasks_testkit::conformance::new_task(owner, Some("tests"))
}

/// Run the test `name` of this test binary (its path, `module::test`) in a child process
/// with `env` set (and as `uid` when given), and return whether it passed; its output is
/// echoed.
pub fn run_child(name: &str, env: &[(&str, &str)], uid: Option<u32>) -> bool {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(uid) = uid {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(uid);
    }
    let out = cmd.output().expect("spawn the child test");
    eprintln!(
        "--- child {name} ---\n{}{}--- end of child ---",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed")
}

/// Whether this process ignores file permission bits (root, or CAP_DAC_OVERRIDE): probed
/// by opening a read-only file for writing.
pub fn permissions_bypassed(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("permission-probe");
    std::fs::write(&probe, b"x").expect("write the probe");
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let bypassed = std::fs::OpenOptions::new().write(true).open(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    bypassed
}
