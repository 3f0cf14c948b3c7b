//! Upstream tasks survive a gateway restart, and the death of a gateway replica.
//!
//! When the upstream runs a call as a task of its own, the gateway writes down which
//! upstream task backs which of its tasks, and how it spoke to the upstream (removed when
//! the task ends). The note is kept in the task store when the store offers a place for
//! it ([`mcp_tasks_core::TaskStore::notes`]: PostgreSQL, so that every replica on the
//! database reads it), else as one small JSON file per task in a directory next to the
//! SQLite database (written atomically). When a task's executor has stopped (a restart,
//! or a replica that died and whose lease ran out), the engine offers the orphaned task to
//! the [`GatewayResumer`] before failing it: a task with such a note is adopted (by one
//! replica only: adoption is a compare-and-swap in the store), and the gateway opens a
//! connection to the upstream and follows the upstream task again. If the upstream no
//! longer knows it (a restarted stdio server forgets its tasks), the task fails with a
//! message that says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_tasks_core::engine::TaskRun;
use mcp_tasks_core::{RequestorChannel, Resumed, Resumer, TaskNotes, TaskRecord};
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::{TaskSupport, progress_token};
use mcp_tasks_server::ToolContext;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::unavailable;
use crate::lane::{FIRST_START_WAIT, LaneInner, Limits};
use mcp_tasks_client::connect::Connector;

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

/// What the gateway notes about a task backed by an upstream task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Note {
    /// The upstream's task id.
    pub upstream_task_id: String,
    /// Which upstream ([`Connector::describe`]): only the same upstream resumes it.
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

/// Status notifications of a resumed task have nowhere to go: its connection is gone.
struct Nowhere;

#[async_trait::async_trait]
impl RequestorChannel for Nowhere {
    async fn request(&self, method: &str, _params: Value) -> Result<Value, ErrorObject> {
        Err(unavailable(format!("no client connection for `{method}`")))
    }
    async fn notify(&self, _method: &str, _params: Value) {}
}

/// Resumes the tasks this gateway noted, after a restart.
pub(crate) struct GatewayResumer {
    notes: Arc<Notes>,
    connector: Arc<dyn Connector>,
    overrides: Arc<BTreeMap<String, TaskSupport>>,
    limits: Arc<Limits>,
}

mcp_tasks_proto::debug_non_exhaustive!(GatewayResumer, |s| { notes: s.notes });

impl GatewayResumer {
    /// A resumer of the notes in `notes`, for the upstream of `connector` (whose
    /// connections count against `limits`).
    pub(crate) fn new(
        notes: Arc<Notes>,
        connector: Arc<dyn Connector>,
        overrides: Arc<BTreeMap<String, TaskSupport>>,
        limits: Arc<Limits>,
    ) -> Self {
        Self {
            notes,
            connector,
            overrides,
            limits,
        }
    }
}

#[async_trait::async_trait]
impl Resumer for GatewayResumer {
    async fn resume(&self, rec: &TaskRecord) -> Option<Resumed> {
        let note = self.notes.get(&rec.task_id).await?;
        if note.upstream != self.connector.describe() {
            return None;
        }
        let request: Value = serde_json::from_str(&rec.request).unwrap_or_else(|_| json!({}));
        let notes = Arc::clone(&self.notes);
        let connector = Arc::clone(&self.connector);
        let overrides = Arc::clone(&self.overrides);
        let limits = Arc::clone(&self.limits);
        let runner = Box::new(move |run: TaskRun| {
            Box::pin(async move {
                let task_id = run.task_id.clone();
                let out = follow_again(run, note, request, connector, overrides, limits).await;
                notes.remove(&task_id).await;
                out
            }) as futures::future::BoxFuture<'static, _>
        });
        Some(Resumed {
            origin: Arc::new(Nowhere),
            classify: mcp_tasks_server::classify,
            runner,
        })
    }
}

async fn follow_again(
    run: TaskRun,
    note: Note,
    request: Value,
    connector: Arc<dyn Connector>,
    overrides: Arc<BTreeMap<String, TaskSupport>>,
    limits: Arc<Limits>,
) -> Result<Value, ErrorObject> {
    tracing::info!(task_id = %run.task_id, upstream_task = %note.upstream_task_id, "following the upstream task again after a restart");
    let lease = LaneInner::open_lane(connector, overrides, None, limits);
    let lane = Arc::clone(lease.lane());
    lane.reattach_first(note.upstream_session.clone());
    lane.start(note.init_params.clone(), FIRST_START_WAIT)
        .await?;
    let caps = note
        .init_params
        .get("capabilities")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let cx = ToolContext::new(
        run.channel,
        progress_token(Some(&request)),
        run.cancel.clone(),
        Arc::new(caps),
        Some(run.task_id.clone()),
    )
    .with_request_params(request);
    let Some(conn) = lane.next_conn(0).await else {
        return Err(lane.unavailable_now());
    };
    let out = if conn.revision().tasks_are_extension() {
        crate::modern_upstream::resume(&lane, conn, &note.upstream_task_id, &cx).await
    } else {
        crate::upstream_task::resume(&lane, conn, &note.upstream_task_id, &cx).await
    };
    drop(lease);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
