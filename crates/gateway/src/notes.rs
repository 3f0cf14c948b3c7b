//! The notes that let upstream tasks survive a gateway restart (see [`crate::resume`]):
//! which upstream task backs which of our tasks, and how the gateway spoke to the
//! upstream; kept in the task store when it offers a place for them
//! ([`mcp_tasks_core::TaskStore::notes`]: PostgreSQL), else as one small JSON file per
//! task in a directory (written atomically).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_tasks_client::connection::Connection;
use mcp_tasks_core::TaskNotes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The upstream session a connection speaks in, where a later connection can take it up
/// again (Streamable HTTP: the `Mcp-Session-Id`; a stdio session is its process and ends
/// with it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamSession {
    /// The session id the upstream assigned.
    pub session_id: String,
    /// The protocol version negotiated in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The upstream's `initialize` result in that session.
    #[serde(default)]
    pub init_result: Value,
}

impl UpstreamSession {
    /// The session `conn` speaks in now, if it has one a later connection can take up.
    pub(crate) fn of(conn: &Connection) -> Option<Self> {
        let (session_id, protocol_version) = conn.session()?;
        Some(Self {
            session_id,
            protocol_version,
            init_result: conn.init_result().clone(),
        })
    }
}

/// What the gateway notes about a task backed by an upstream task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Note {
    /// The upstream's task id.
    pub upstream_task_id: String,
    /// Which upstream ([`mcp_tasks_client::connect::Connector::identity`]): only the same upstream resumes it.
    pub upstream: String,
    /// The `initialize` params the upstream connection was opened with (the client's
    /// capabilities; a new connection is opened with the same).
    pub init_params: Value,
    /// The upstream session the task was created in (Streamable HTTP), taken up again
    /// after a restart: an upstream that binds tasks to their session still knows ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_session: Option<UpstreamSession>,
}

/// Where the notes are kept.
pub(crate) enum Notes {
    /// One file per task in a directory (beside a SQLite database).
    Dir(PathBuf),
    /// In the task store, beside the tasks (PostgreSQL).
    Store(Arc<dyn TaskNotes>),
}

impl std::fmt::Debug for Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Dir(d) => write!(f, "Notes({})", d.display()),
            Self::Store(_) => f.write_str("Notes(in the task store)"),
        }
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Notes {
    /// Notes kept in `dir` (created if missing).
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub(crate) fn open(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(Self::Dir(dir))
    }

    fn path(dir: &Path, task_id: &str) -> Option<PathBuf> {
        valid_id(task_id).then(|| dir.join(format!("{task_id}.json")))
    }

    /// Write the note of `task_id` (a file: atomically, a temporary file renamed over it).
    pub(crate) async fn put(&self, task_id: &str, note: &Note) {
        let r = match self {
            Self::Dir(dir) => {
                let Some(path) = Self::path(dir, task_id) else {
                    return;
                };
                let tmp = path.with_extension("json.tmp");
                serde_json::to_vec(note)
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| std::fs::write(&tmp, bytes).map_err(|e| e.to_string()))
                    .and_then(|()| std::fs::rename(&tmp, &path).map_err(|e| e.to_string()))
            }
            Self::Store(store) => match serde_json::to_vec(note) {
                Ok(bytes) => store
                    .put_note(task_id, &bytes)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
        };
        if let Err(e) = r {
            tracing::warn!(task_id, error = %e, "could not note the upstream task; it will not survive a restart");
        }
    }

    /// The note of `task_id`, if any (and readable).
    pub(crate) async fn get(&self, task_id: &str) -> Option<Note> {
        let bytes = match self {
            Self::Dir(dir) => std::fs::read(Self::path(dir, task_id)?).ok()?,
            Self::Store(store) => match store.note(task_id).await {
                Ok(n) => n?,
                Err(e) => {
                    tracing::warn!(task_id, error = %e, "could not read the note of a task");
                    return None;
                }
            },
        };
        serde_json::from_slice(&bytes).ok()
    }

    /// Forget `task_id`.
    pub(crate) async fn remove(&self, task_id: &str) {
        match self {
            Self::Dir(dir) => {
                if let Some(path) = Self::path(dir, task_id) {
                    let _ = std::fs::remove_file(path);
                }
            }
            Self::Store(store) => {
                if let Err(e) = store.remove_note(task_id).await {
                    tracing::warn!(task_id, error = %e, "could not forget the note of a task");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn notes_round_trip_and_refuse_odd_ids() {
        let dir = std::env::temp_dir().join(format!("gw-notes-{}", std::process::id()));
        let notes = Notes::open(&dir).unwrap();
        let n = Note {
            upstream_task_id: "u-1".into(),
            upstream: "stdio `x`".into(),
            init_params: json!({"capabilities": {}}),
            upstream_session: Some(UpstreamSession {
                session_id: "s-1".into(),
                protocol_version: Some("2025-11-25".into()),
                init_result: json!({"capabilities": {"tasks": {}}}),
            }),
        };
        notes.put("0f2c-ab", &n).await;
        assert_eq!(notes.get("0f2c-ab").await, Some(n.clone()));
        notes.remove("0f2c-ab").await;
        assert_eq!(notes.get("0f2c-ab").await, None);
        notes.put("../escape", &n).await;
        assert!(!dir.join("../escape.json").exists());
        let _ = std::fs::remove_dir_all(dir);
    }
}
