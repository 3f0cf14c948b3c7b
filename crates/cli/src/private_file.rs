//! Files that hold secrets (the bearer tokens of `--auth-tokens`, the private key of
//! `--tls-key`) should be readable and writable by their owner only: one that the group or
//! others may read or write is still used (refusing it would break a running deployment on
//! upgrade), with a warning on stderr saying how to mend it.

use std::path::Path;

/// The warning for `path` (what `flag` names) when its mode lets the group or others read
/// or write it; `None` when it does not, or cannot be read (opening it says why).
pub(crate) fn loose_mode_warning(path: &Path, flag: &str) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o066 != 0).then(|| {
            format!(
                "{flag} {}: the file holds secrets but its mode {mode:03o} lets the group or \
                 others read or write it; make it private (chmod 600)",
                path.display()
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (path, flag);
        None
    }
}

/// Warn (on stderr, through the log) when `path` is not private; see
/// [`loose_mode_warning`].
pub(crate) fn warn_if_loose(path: &Path, flag: &str) {
    if let Some(w) = loose_mode_warning(path, flag) {
        tracing::warn!("{w}");
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_others_may_read_or_write_is_warned_about_and_a_private_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(&path, "t alice\n").unwrap();
        for (mode, loose) in [
            (0o600, false),
            (0o400, false),
            (0o700, false),
            (0o640, true),
            (0o604, true),
            (0o620, true),
            (0o644, true),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let w = loose_mode_warning(&path, "--auth-tokens");
            assert_eq!(w.is_some(), loose, "{mode:o}: {w:?}");
            if let Some(w) = w {
                assert!(
                    w.contains(&format!("{mode:03o}")) && w.contains("chmod 600"),
                    "{w}"
                );
            }
        }
        assert!(loose_mode_warning(&dir.path().join("missing"), "--tls-key").is_none());
    }
}
