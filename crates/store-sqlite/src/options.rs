//! How a [`crate::SqliteStore`] is opened: options, the `sqlite:` spec string, the default
//! path.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_tasks_core::StoreError;

/// The `PRAGMA synchronous` level of the store's connections (the database is always in
/// WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `synchronous=FULL` (the default): every commit is flushed to stable storage (one
    /// `fsync` of the write-ahead log per commit) before the call that made it returns. A
    /// task the store reported as created, cancelled or completed survives a power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: the write-ahead log is flushed only at checkpoints. Faster,
    /// and the database is never corrupted, but **a power loss or OS crash may lose the
    /// last commits** (a process crash loses nothing). A requestor may then have been told
    /// about a task, a cancellation or a result that is gone after the restart.
    Normal,
}

impl Synchronous {
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Options of a [`crate::SqliteStore`].
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Durability of commits; see [`Synchronous`].
    pub synchronous: Synchronous,
    /// How long a write (or a read) waits for a lock held by another connection or process
    /// before the call fails with [`StoreError::Unavailable`] (`PRAGMA busy_timeout`).
    pub busy_timeout: Duration,
    /// The most write operations the writer thread groups into one transaction.
    pub max_batch: usize,
    /// Idle read connections kept open for `get`/`list`.
    pub read_pool: usize,
    /// How often, while someone waits on a task, the store looks for changes committed by
    /// *other* processes sharing the file (`PRAGMA data_version`). Changes made through
    /// this store wake waiters immediately.
    pub remote_poll: Duration,
    /// Largest size of the database in pages (`PRAGMA max_page_count`); `None` is
    /// SQLite's maximum. A write that would grow the file beyond it fails as if the disk
    /// were full. See also [`crate::SqliteStore::set_max_pages`].
    pub max_pages: Option<u64>,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            max_batch: 512,
            read_pool: 8,
            remote_poll: Duration::from_millis(75),
            max_pages: None,
        }
    }
}

/// Parse a store spec `sqlite:PATH[?synchronous=full|normal][&busy_timeout_ms=N]`.
///
/// `sqlite:` alone means [`default_path`]; `sqlite://PATH` is accepted too (so
/// `sqlite:///var/lib/tasks.db` is an absolute path).
///
/// # Errors
/// [`StoreError::Unavailable`] naming the problem when the spec is not of that form.
pub fn parse_spec(spec: &str) -> Result<(PathBuf, SqliteOptions), StoreError> {
    let bad = |why: String| StoreError::Unavailable(format!("bad store spec {spec:?}: {why}"));
    let rest = spec
        .strip_prefix("sqlite:")
        .ok_or_else(|| bad("it must start with `sqlite:`".into()))?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let mut opts = SqliteOptions::default();
    for pair in query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "synchronous" => {
                opts.synchronous = match v.to_ascii_lowercase().as_str() {
                    "full" => Synchronous::Full,
                    "normal" => Synchronous::Normal,
                    other => {
                        return Err(bad(format!(
                            "synchronous must be `full` or `normal`, not {other:?}"
                        )));
                    }
                }
            }
            "busy_timeout_ms" => {
                let ms: u64 = v
                    .parse()
                    .map_err(|_| bad(format!("busy_timeout_ms must be a number, not {v:?}")))?;
                opts.busy_timeout = Duration::from_millis(ms);
            }
            other => {
                return Err(bad(format!(
                    "unknown option {other:?} (known: synchronous, busy_timeout_ms)"
                )));
            }
        }
    }
    let path = if path.is_empty() {
        default_path()
    } else {
        PathBuf::from(path)
    };
    Ok((path, opts))
}

/// Where the store lives when no path is given: `$XDG_DATA_HOME/mcp-tasks/tasks.db`, or
/// `$HOME/.local/share/mcp-tasks/tasks.db` when `XDG_DATA_HOME` is unset, empty or
/// relative (as the XDG base directory specification says), or `mcp-tasks/tasks.db` in
/// the current directory when `HOME` is unset too.
pub fn default_path() -> PathBuf {
    default_path_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

fn default_path_from(xdg_data_home: Option<OsString>, home: Option<OsString>) -> PathBuf {
    let base = xdg_data_home
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            home.filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".local").join("share"))
        })
        .unwrap_or_default();
    base.join("mcp-tasks").join("tasks.db")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let (p, o) = parse_spec("sqlite:/tmp/x.db").unwrap();
        assert_eq!(p, PathBuf::from("/tmp/x.db"));
        assert_eq!(o.synchronous, Synchronous::Full);
        let (p, o) =
            parse_spec("sqlite:///var/t.db?synchronous=NORMAL&busy_timeout_ms=250").unwrap();
        assert_eq!(p, PathBuf::from("/var/t.db"));
        assert_eq!(o.synchronous, Synchronous::Normal);
        assert_eq!(o.busy_timeout, Duration::from_millis(250));
        let (p, _) = parse_spec("sqlite:rel/t.db").unwrap();
        assert_eq!(p, PathBuf::from("rel/t.db"));
        let (p, _) = parse_spec("sqlite:").unwrap();
        assert!(p.ends_with("mcp-tasks/tasks.db"));
        let d = |x: Option<&str>, h: Option<&str>| {
            default_path_from(x.map(Into::into), h.map(Into::into))
        };
        assert_eq!(
            d(Some("/x"), Some("/h")),
            PathBuf::from("/x/mcp-tasks/tasks.db")
        );
        assert_eq!(
            d(Some(""), Some("/h")),
            PathBuf::from("/h/.local/share/mcp-tasks/tasks.db")
        );
        assert_eq!(
            d(Some("rel"), Some("/h")),
            PathBuf::from("/h/.local/share/mcp-tasks/tasks.db")
        );
        assert_eq!(d(None, None), PathBuf::from("mcp-tasks/tasks.db"));
        for bad in [
            "postgres://x",
            "sqlite:x.db?synchronous=off",
            "sqlite:x.db?journal=delete",
            "sqlite:x.db?busy_timeout_ms=soon",
        ] {
            let e = parse_spec(bad).unwrap_err().to_string();
            assert!(e.contains(bad), "{e}");
        }
    }
}
