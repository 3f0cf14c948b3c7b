//! The status history of a task: one entry per creation and per status change, with its
//! time, kept by the store in the same atomic step as the change and deleted with the
//! task. What the dashboard shows in a task's detail.

use crate::status::TaskStatus;

/// Most history entries a store keeps per task; older ones are dropped (a task that
/// toggles between `working` and `input_required` many times keeps its latest changes).
pub const HISTORY_MAX: usize = 64;

/// One status a task entered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The status entered.
    pub status: TaskStatus,
    /// The status message set with it.
    pub status_message: Option<String>,
    /// When, ms since the epoch (the record's `last_updated_at_ms` after the change).
    pub at_ms: i64,
}

impl HistoryEntry {
    /// The entry a record's current status makes.
    pub fn of(rec: &crate::record::TaskRecord) -> Self {
        Self {
            status: rec.status,
            status_message: rec.task.status_message.clone(),
            at_ms: rec.last_updated_at_ms,
        }
    }
}

/// Append `e` to `entries`, dropping the oldest beyond [`HISTORY_MAX`].
pub fn push_bounded(entries: &mut std::collections::VecDeque<HistoryEntry>, e: HistoryEntry) {
    entries.push_back(e);
    while entries.len() > HISTORY_MAX {
        entries.pop_front();
    }
}
