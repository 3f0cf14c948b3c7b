//! What the task dashboard (`/ui`) reads: a requester's tasks, newest first, filtered by
//! status and tool, with their counts by status; one task with its request, outcome and
//! status history. The same visibility as `tasks/get` and `tasks/list`: a requester sees
//! its own tasks (a foreign task is not found), one that sees all (the local peer, an
//! administrator) every task.

use std::collections::BTreeSet;

use super::query::Read;
use super::{Requester, TaskEngine};
use crate::error::EngineError;
use crate::history::HistoryEntry;
use crate::record::TaskRecord;
use crate::status::TaskStatus;
use crate::store::ListQuery;

/// Most tasks of one dashboard page ([`DashboardQuery::limit`] is capped to it).
pub const DASHBOARD_PAGE_MAX: usize = 500;
/// Most tasks one dashboard refresh reads from the store (four store pages, newest first):
/// past it the counts and the matches cover the newest tasks only, and
/// [`DashboardPage::truncated`] says so. Each refresh also counts toward the requester's
/// `requests` rate limit.
pub const DASHBOARD_SCAN_MAX: usize = 4 * SCAN_PAGE;
/// Most distinct tool names a page reports (for the tool filter).
pub const DASHBOARD_TOOLS_MAX: usize = 200;
/// Tasks read from the store per call while scanning.
const SCAN_PAGE: usize = 500;

/// Which tasks a dashboard page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DashboardQuery {
    /// Only tasks in this status.
    pub status: Option<TaskStatus>,
    /// Only `tools/call` tasks of this tool.
    pub tool: Option<String>,
    /// Most tasks to show (newest first); capped to [`DASHBOARD_PAGE_MAX`], at least 1.
    pub limit: usize,
}

/// One task of a page: its summary (no request, no outcome) and the tool it calls.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardRow {
    /// The task, as [`TaskRecord::summary`].
    pub task: TaskRecord,
    /// The tool of a `tools/call` task.
    pub tool: Option<String>,
}

/// A dashboard page.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct DashboardPage {
    /// The tasks that match the query, newest first, at most its limit.
    pub tasks: Vec<DashboardRow>,
    /// How many tasks match the query (the page shows the newest of them), among those
    /// scanned.
    pub matching: u64,
    /// The requester's tasks by status (all those scanned, whatever the filter).
    pub counts: Vec<(TaskStatus, u64)>,
    /// The tools of the requester's tasks, sorted (for the tool filter).
    pub tools: Vec<String>,
    /// Whether the scan stopped at [`DASHBOARD_SCAN_MAX`] tasks (older ones exist that the
    /// counts leave out).
    pub truncated: bool,
}

/// The tool a `tools/call` task calls: the `name` of its params.
pub fn tool_of(rec: &TaskRecord) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Call {
        name: Option<String>,
    }
    if rec.task.method != mcp_tasks_proto::methods::TOOLS_CALL {
        return None;
    }
    serde_json::from_str::<Call>(&rec.task.request).ok()?.name
}

impl TaskEngine {
    /// A dashboard page for `who`.
    ///
    /// # Errors
    /// -32602 when `who` cannot be identified (no principal and not one that sees all); a
    /// store failure.
    pub async fn dashboard(
        &self,
        who: &Requester,
        query: &DashboardQuery,
    ) -> Result<DashboardPage, EngineError> {
        let scope = who.list_scope().ok_or_else(|| {
            EngineError::InvalidParams("the dashboard needs an identified requester".into())
        })?;
        let limit = query.limit.clamp(1, DASHBOARD_PAGE_MAX);
        let now = self.now();
        let mut page = DashboardPage::default();
        let mut shown: Vec<DashboardRow> = Vec::with_capacity(limit);
        let mut tools = BTreeSet::new();
        let mut before = None;
        let mut scanned = 0usize;
        // The only `list` of the dashboard: pages newest first, so that the page shows the
        // newest matches and a refresh reads at most DASHBOARD_SCAN_MAX tasks however many
        // are stored.
        loop {
            let batch = self
                .inner
                .store
                .list(ListQuery::newest_first(scope.clone(), before, SCAN_PAGE))
                .await?;
            let full = batch.len() == SCAN_PAGE;
            before = batch.last().map(|r| r.seq);
            for rec in batch {
                scanned += 1;
                if rec.is_expired(now) {
                    continue;
                }
                match page.counts.iter_mut().find(|(s, _)| *s == rec.status) {
                    Some((_, n)) => *n += 1,
                    None => page.counts.push((rec.status, 1)),
                }
                let tool = tool_of(&rec);
                if let Some(t) = &tool
                    && tools.len() < DASHBOARD_TOOLS_MAX
                {
                    tools.insert(t.clone());
                }
                let matches = query.status.is_none_or(|s| s == rec.status)
                    && query.tool.as_ref().is_none_or(|t| tool.as_ref() == Some(t));
                if matches {
                    page.matching += 1;
                    if shown.len() < limit {
                        shown.push(DashboardRow {
                            task: rec.summary(),
                            tool,
                        });
                    }
                }
            }
            if !full {
                break;
            }
            if scanned >= DASHBOARD_SCAN_MAX {
                page.truncated = true;
                break;
            }
        }
        page.tasks = shown;
        page.tools = tools.into_iter().collect();
        Ok(page)
    }

    /// One task for the dashboard's detail view: its whole record (request and outcome)
    /// and its status history, if `who` may see it (as `tasks/get` decides: a foreign task
    /// is not found).
    ///
    /// # Errors
    /// Not found (also for a foreign task), expired, or a store failure.
    pub async fn dashboard_task(
        &self,
        task_id: &str,
        who: &Requester,
    ) -> Result<(TaskRecord, Vec<HistoryEntry>), EngineError> {
        let rec = self.visible(task_id, who, Read::Full, "ui/task").await?;
        let history = self.inner.store.history(task_id).await?;
        Ok((rec, history))
    }
}
