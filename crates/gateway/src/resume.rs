//! Upstream tasks survive a gateway restart, and the death of a gateway replica.
//!
//! When the upstream runs a call as a task of its own, the gateway writes down which
//! upstream task backs which of its tasks, and how it spoke to the upstream (removed when
//! the task ends): [`crate::notes`], in the task store when the store offers a place for
//! them (PostgreSQL, so that every replica on the database reads them), else in a
//! directory next to the SQLite database. When a task's executor has stopped (a restart,
//! or a replica that died and whose lease ran out), the engine offers the orphaned task to
//! the [`GatewayResumer`] before failing it: a task with such a note is adopted (by one
//! replica only: adoption is a compare-and-swap in the store), and the gateway opens a
//! connection to the upstream and follows the upstream task again. If the upstream no
//! longer knows it (a restarted stdio server forgets its tasks), the task fails with a
//! message that says so.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_tasks_core::engine::TaskRun;
use mcp_tasks_core::{RequestorChannel, Resumed, Resumer, TaskRecord};
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::{TaskSupport, progress_token};
use mcp_tasks_server::ToolContext;
use serde_json::{Value, json};

use crate::error::unavailable;
use crate::lane::{FIRST_START_WAIT, LaneInner, Limits};
use crate::notes::{Note, Notes};
use crate::upstream_call::{Call, CallError, call_error};
use crate::upstream_task::forgotten_after_restart;
use mcp_tasks_client::connect::Connector;
use mcp_tasks_proto::methods;

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
        let note = self.notes.get(&rec.task.task_id).await?;
        if !self.connector.is_identified_by(&note.upstream) {
            return None;
        }
        let request: Value = serde_json::from_str(&rec.task.request).unwrap_or_else(|_| json!({}));
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
    let id = &note.upstream_task_id;
    // A 2026-07-28 task is read with `tasks/get` (an upstream that no longer knows it fails
    // ours with a message that says so) and polled; a 2025-11-25 one followed with
    // `tasks/result`.
    let out = if conn.revision().tasks_are_extension() {
        match conn
            .call(methods::TASKS_GET, Some(json!({ "taskId": id })))
            .await
        {
            Ok(task) => crate::modern_upstream::poll(&lane, &conn, id, task, &cx).await,
            Err(CallError::Upstream(e)) => Err(forgotten_after_restart(id, &e)),
            Err(e) => Err(call_error(&lane, &conn, e).await),
        }
    } else {
        crate::upstream_task::resume(&lane, conn, id, &cx).await
    };
    drop(lease);
    out
}
