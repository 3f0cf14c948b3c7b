//! The statements of the store, and how a row becomes a [`TaskRecord`].
//!
//! Each operation names its round trips to the database in its doc comment (once its
//! statements are prepared on the connection: the first use of a statement on a pooled
//! connection costs one more).

use mcp_tasks_core::{HistoryEntry, NewTask, Outcome, OutcomeKind, StoreError, TaskRecord};
use mcp_tasks_proto::mcp::TaskStatus;
use tokio_postgres::Row;

/// The columns every query of a whole task returns, in [`read_record`] order.
pub(crate) const COLS: &str = "seq, task_id, owner, status, status_message, created_ms, \
     last_updated_ms, ttl_ms, poll_interval_ms, method, request, outcome_kind, outcome, \
     executor, quota_key";

/// The non-terminal statuses, as an SQL list (matches the partial indexes' predicate).
pub(crate) const ACTIVE: &str = "('working', 'input_required')";

/// A task's executor has no live lease at `$1` (ms).
const NO_LIVE_LEASE: &str = "(executor IS NULL OR NOT EXISTS (SELECT 1 FROM executors e \
     WHERE e.instance = tasks.executor AND e.lease_until >= $1))";

/// Insert a task in `working`; no row comes back when the id exists already.
pub(crate) const INSERT: &str = "INSERT INTO tasks (task_id, owner, status, status_message, \
     created_ms, last_updated_ms, ttl_ms, expires_at, poll_interval_ms, method, request, \
     executor, quota_key, bytes) \
     VALUES ($1, $2, 'working', $3, $4, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
     ON CONFLICT (task_id) DO NOTHING RETURNING seq";

/// A creation within limits (see the `create_task` function of the schema): its `seq`,
/// or why not and the counts.
pub(crate) const CREATE: &str = "SELECT new_seq, refused, n_active, n_tasks, n_bytes, n_total \
     FROM create_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";

/// A terminal transition checked against the byte limits (see the `finish_task` function
/// of the schema): the record after it, or no row when it was not applied.
pub(crate) fn finish() -> String {
    format!(
        "SELECT {COLS} FROM finish_task($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    )
}

/// One task.
pub(crate) fn get() -> String {
    format!("SELECT {COLS} FROM tasks WHERE task_id = $1")
}

/// One task without its request and outcome: neither is read.
pub(crate) const GET_SUMMARY: &str = "SELECT seq, task_id, owner, status, status_message, \
     created_ms, last_updated_ms, ttl_ms, poll_interval_ms, method, ''::bytea, NULL::text, \
     NULL::bytea, executor, quota_key FROM tasks WHERE task_id = $1";

/// One task without its request: it is not read.
pub(crate) const GET_WITHOUT_REQUEST: &str = "SELECT seq, task_id, owner, status, \
     status_message, created_ms, last_updated_ms, ttl_ms, poll_interval_ms, method, ''::bytea, \
     outcome_kind, outcome, executor, quota_key FROM tasks WHERE task_id = $1";

/// The compare-and-swap of a non-terminal transition: one `UPDATE ... WHERE status =
/// ANY(allowed predecessors)`. Under concurrent writers PostgreSQL waits for the row's
/// lock and re-checks the condition on the row as committed, so this is a true
/// compare-and-swap, never read-modify-write.
pub(crate) fn cas() -> String {
    format!(
        "UPDATE tasks SET status = $2, status_message = $3, \
         last_updated_ms = greatest($4, last_updated_ms) \
         WHERE task_id = $1 AND status = ANY($5) RETURNING {COLS}"
    )
}

/// The compare-and-swap of a terminal transition: sets the outcome (once: no later
/// statement matches a terminal row) and clears the executor.
pub(crate) fn cas_terminal() -> String {
    format!(
        "UPDATE tasks SET status = $2, status_message = $3, \
         last_updated_ms = greatest($4, last_updated_ms), outcome_kind = $6, outcome = $7::bytea, \
         bytes = bytes + coalesce(octet_length($7::bytea), 0), executor = NULL \
         WHERE task_id = $1 AND status = ANY($5) RETURNING {COLS}"
    )
}

/// Keyset pages (`$3`: the owner, or NULL for every task), read by `list_page` once no
/// insert that drew a smaller `seq` is in flight (the list fence).
pub(crate) fn list() -> String {
    format!("SELECT {COLS} FROM list_page($1, $2, $3)")
}

/// Newest-first pages (the dashboard's), below `$1`, at most `$2`, of every task or (with
/// `$3`) of one owner: the same indexes read backwards, no fence (such pages promise no
/// consistency across them).
pub(crate) fn list_newest(of_owner: bool) -> String {
    if of_owner {
        format!("SELECT {COLS} FROM tasks WHERE owner = $3 AND seq < $1 ORDER BY seq DESC LIMIT $2")
    } else {
        format!("SELECT {COLS} FROM tasks WHERE seq < $1 ORDER BY seq DESC LIMIT $2")
    }
}

/// Delete up to `$2` tasks whose TTL has passed at `$1`, skipping the rows another
/// transaction holds (another replica's sweep takes them, or a transition is changing
/// them: they are deleted by a later sweep).
///
/// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and its
/// results, regardless of the task status."
pub(crate) const DELETE_EXPIRED: &str = "DELETE FROM tasks WHERE seq IN (SELECT seq FROM tasks \
     WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
     RETURNING task_id";

/// Upsert an executor's lease.
pub(crate) const HEARTBEAT: &str = "INSERT INTO executors (instance, lease_until) \
     VALUES ($1, $2) ON CONFLICT (instance) DO UPDATE SET lease_until = excluded.lease_until";

/// Fail the orphans at `$1` (message `$2`, outcome `$3`). With `skip`, the rows another
/// transaction holds are skipped (`FOR UPDATE SKIP LOCKED`: sweeping replicas never wait
/// for each other); without, the statement waits for them, locking in `seq` order (two
/// sweeps cannot deadlock), and re-checks each row once it has it.
pub(crate) fn fail_orphans(skip: bool) -> String {
    let lock = if skip {
        "FOR UPDATE SKIP LOCKED"
    } else {
        "FOR UPDATE"
    };
    format!(
        "UPDATE tasks SET status = 'failed', status_message = $2, \
         last_updated_ms = greatest($1, last_updated_ms), outcome_kind = 'error', \
         outcome = $3::bytea, bytes = bytes + octet_length($3::bytea), executor = NULL \
         WHERE seq IN (SELECT seq FROM tasks WHERE status IN {ACTIVE} AND {NO_LIVE_LEASE} \
         ORDER BY seq {lock}) AND status IN {ACTIVE} AND {NO_LIVE_LEASE} RETURNING {COLS}"
    )
}

/// Forget the leases that expired before `$1` (their tasks are failed by then).
pub(crate) const FORGET_LEASES: &str = "DELETE FROM executors WHERE lease_until < $1";

/// Non-terminal tasks whose executor has no live lease at `$1`, oldest first.
pub(crate) fn orphans() -> String {
    format!(
        "SELECT {COLS} FROM tasks WHERE status IN {ACTIVE} AND {NO_LIVE_LEASE} \
         ORDER BY seq LIMIT $2"
    )
}

/// Take over an orphaned task (`$2`: the new executor): one compare-and-swap on its
/// executor.
pub(crate) fn adopt() -> String {
    format!(
        "UPDATE tasks SET executor = $2 WHERE task_id = $3 AND status IN {ACTIVE} AND \
         {NO_LIVE_LEASE} RETURNING {COLS}"
    )
}

/// The status history of a task (`$1`), oldest first.
pub(crate) const HISTORY: &str =
    "SELECT status, status_message, at_ms FROM task_history WHERE task_id = $1 ORDER BY id";

/// A row of [`HISTORY`] as a [`HistoryEntry`].
pub(crate) fn read_history(row: &Row) -> Result<HistoryEntry, StoreError> {
    let get = |e: tokio_postgres::Error| corrupt(format!("a stored history cannot be read: {e}"));
    let status: String = row.try_get(0).map_err(get)?;
    Ok(HistoryEntry {
        status: TaskStatus::parse(&status)
            .ok_or_else(|| corrupt(format!("unknown status {status:?}")))?,
        status_message: row.try_get(1).map_err(get)?,
        at_ms: row.try_get(2).map_err(get)?,
    })
}

fn corrupt(what: String) -> StoreError {
    StoreError::Corrupt(what)
}

/// Rows of [`COLS`] as [`TaskRecord`]s.
pub(crate) fn read_records(rows: &[Row]) -> Result<Vec<TaskRecord>, StoreError> {
    rows.iter().map(read_record).collect()
}

/// A row of [`COLS`] as a [`TaskRecord`].
pub(crate) fn read_record(row: &Row) -> Result<TaskRecord, StoreError> {
    let get = |e: tokio_postgres::Error| corrupt(format!("a stored task cannot be read: {e}"));
    let status: String = row.try_get(3).map_err(get)?;
    let status =
        TaskStatus::parse(&status).ok_or_else(|| corrupt(format!("unknown status {status:?}")))?;
    let kind: Option<String> = row.try_get(11).map_err(get)?;
    let bytes: Option<Vec<u8>> = row.try_get(12).map_err(get)?;
    let outcome = match (kind, bytes) {
        (None, None) => None,
        (Some(k), Some(b)) => {
            let kind = OutcomeKind::parse(&k)
                .ok_or_else(|| corrupt(format!("unknown outcome kind {k:?}")))?;
            let json = String::from_utf8(b)
                .map_err(|e| corrupt(format!("a stored outcome is not UTF-8: {e}")))?;
            Some(Outcome { kind, json })
        }
        _ => {
            return Err(corrupt(
                "outcome kind and bytes must be both set or both NULL".into(),
            ));
        }
    };
    let request: Vec<u8> = row.try_get(10).map_err(get)?;
    Ok(TaskRecord {
        seq: row.try_get(0).map_err(get)?,
        task: NewTask {
            task_id: row.try_get(1).map_err(get)?,
            owner: row.try_get(2).map_err(get)?,
            quota_key: row.try_get(14).map_err(get)?,
            status_message: row.try_get(4).map_err(get)?,
            created_at_ms: row.try_get(5).map_err(get)?,
            ttl_ms: row
                .try_get::<_, Option<i64>>(7)
                .map_err(get)?
                .map(i64::cast_unsigned),
            poll_interval_ms: row
                .try_get::<_, Option<i64>>(8)
                .map_err(get)?
                .map(i64::cast_unsigned),
            method: row.try_get(9).map_err(get)?,
            request: String::from_utf8(request)
                .map_err(|e| corrupt(format!("a stored request is not UTF-8: {e}")))?,
            executor: row.try_get(13).map_err(get)?,
        },
        status,
        last_updated_at_ms: row.try_get(6).map_err(get)?,
        outcome,
    })
}

/// `created_ms + ttl_ms`, saturating; `None` never expires.
pub(crate) fn expires_at(created_ms: i64, ttl_ms: Option<u64>) -> Option<i64> {
    ttl_ms.map(|t| created_ms.saturating_add(i64::try_from(t).unwrap_or(i64::MAX)))
}

/// A count or sum as `u64`.
pub(crate) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
