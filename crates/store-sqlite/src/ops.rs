//! The statements of the store. Each write op runs on the writer's connection inside the
//! batch transaction (under its own savepoint) and returns what it did plus the task ids
//! whose waiters must wake once the batch is committed.

use mcp_tasks_core::status::allowed_predecessors;
use mcp_tasks_core::store::within_limits;
use mcp_tasks_core::{
    AdoptQuery, HISTORY_MAX, HistoryEntry, Limits, ListOrder, ListQuery, NewTask, OrphanSweep,
    Outcome, OutcomeKind, StoreError, TaskRecord, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_proto::{ErrorObject, codes};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::sync::LazyLock;

use crate::usage::{Counts, TOTAL, Usage};

/// The columns every query returns, in [`read_record`] order.
const COLS: &str = "seq, task_id, owner, status, status_message, created_ms, last_updated_ms, \
                    ttl_ms, poll_interval_ms, method, request, outcome_kind, outcome, executor, \
                    quota_key";

/// The non-terminal statuses, as an SQL list (matches the partial indexes' predicate).
const ACTIVE: &str = "('working', 'input_required')";

fn conversion(idx: usize, ty: Type, msg: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, ty, msg.into())
}

/// A row as a [`TaskRecord`].
pub(crate) fn read_record(row: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    // Read in place: the status text is not kept.
    let status = row.get_ref(3)?.as_str()?;
    let status = TaskStatus::parse(status)
        .ok_or_else(|| conversion(3, Type::Text, format!("unknown status {status:?}")))?;
    let kind: Option<String> = row.get(11)?;
    let bytes: Option<Vec<u8>> = row.get(12)?;
    let outcome = match (kind, bytes) {
        (None, None) => None,
        (Some(k), Some(b)) => {
            let kind = OutcomeKind::parse(&k)
                .ok_or_else(|| conversion(11, Type::Text, format!("unknown outcome kind {k:?}")))?;
            let json = String::from_utf8(b)
                .map_err(|e| conversion(12, Type::Blob, format!("outcome is not UTF-8: {e}")))?;
            Some(Outcome { kind, json })
        }
        _ => {
            return Err(conversion(
                12,
                Type::Blob,
                "outcome kind and bytes must be both set or both NULL".into(),
            ));
        }
    };
    Ok(TaskRecord {
        task: NewTask {
            task_id: row.get(1)?,
            owner: row.get(2)?,
            quota_key: row.get(14)?,
            status_message: row.get(4)?,
            created_at_ms: row.get(5)?,
            ttl_ms: row.get::<_, Option<i64>>(7)?.map(i64::cast_unsigned),
            poll_interval_ms: row.get::<_, Option<i64>>(8)?.map(i64::cast_unsigned),
            method: row.get(9)?,
            request: row.get(10)?,
            executor: row.get(13)?,
        },
        seq: row.get(0)?,
        status,
        last_updated_at_ms: row.get(6)?,
        outcome,
    })
}

/// A failed write op: either an SQLite error (mapped by the writer, which knows the file)
/// or a domain refusal.
#[derive(Debug)]
pub(crate) enum OpError {
    Sqlite(rusqlite::Error),
    Domain(mcp_tasks_core::StoreError),
}

impl From<rusqlite::Error> for OpError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

/// What a write op did, and whom to wake after the commit.
pub(crate) type OpResult<T> = Result<(T, Vec<String>), OpError>;

fn expires_at(created_ms: i64, ttl_ms: Option<u64>) -> Option<i64> {
    ttl_ms.map(|t| created_ms.saturating_add(i64::try_from(t).unwrap_or(i64::MAX)))
}

/// A plain `INSERT` (no `RETURNING`: SQLite builds an ephemeral table for it, ~11 % of a
/// task creation's instructions); the new row's `seq` is its rowid. The row carries its
/// status history: the creation, its first entry.
fn insert(conn: &Connection, t: &NewTask) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "INSERT INTO tasks (task_id, owner, status, status_message, created_ms, \
         last_updated_ms, ttl_ms, expires_at, poll_interval_ms, method, request, executor, \
         quota_key, bytes, history, history_n) \
         VALUES (?1, ?2, 'working', ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, \
         json_object('s', 'working', 'm', ?3, 'at', ?4) || char(10), 1)",
    )?
    .execute(params![
        t.task_id,
        t.owner,
        t.status_message,
        t.created_at_ms,
        t.ttl_ms.map(u64::cast_signed),
        expires_at(t.created_at_ms, t.ttl_ms),
        t.poll_interval_ms.map(u64::cast_signed),
        t.method,
        t.request,
        t.executor,
        t.quota_key,
        stored_bytes(t),
    ])?;
    Ok(conn.last_insert_rowid())
}

fn stored_bytes(t: &NewTask) -> i64 {
    i64::try_from(t.stored_bytes()).unwrap_or(i64::MAX)
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

// The bound in `history_terms!` and in the schema's migration is this one.
const _: () = assert!(HISTORY_MAX == 64);

/// The `SET` terms that append an entry to a row's status history when an `UPDATE`
/// changes its status or status message (`status` and `status_message` here are the row's
/// values before the update; `$to`, `$msg` and `$at` are SQL expressions of the new ones),
/// dropping the oldest entry beyond `HISTORY_MAX` (64). The history is one line of JSON
/// per entry, oldest first.
macro_rules! history_terms {
    ($to:literal, $msg:literal, $at:literal) => {
        concat!(
            "history = CASE WHEN status IS NOT ",
            $to,
            " OR status_message IS NOT ",
            $msg,
            " THEN (CASE WHEN history_n >= 64 THEN substr(history, instr(history, char(10)) + 1) \
             ELSE history END) || json_object('s', ",
            $to,
            ", 'm', ",
            $msg,
            ", 'at', ",
            $at,
            ") || char(10) ELSE history END, \
             history_n = CASE WHEN status IS NOT ",
            $to,
            " OR status_message IS NOT ",
            $msg,
            " THEN min(history_n + 1, 64) ELSE history_n END"
        )
    };
}

fn domain(e: StoreError) -> OpError {
    OpError::Domain(e)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Insert a task in `working`, checking its requester's limits (active tasks on the
/// partial index, stored tasks and bytes in the writer's [`Usage`]) in the same
/// transaction.
pub(crate) fn create(
    conn: &Connection,
    usage: &mut Usage,
    t: NewTask,
    limits: &Limits,
) -> OpResult<TaskRecord> {
    if *limits != Limits::NONE {
        let mine = if limits.max_active.is_some()
            || limits.max_tasks.is_some()
            || limits.max_bytes.is_some()
        {
            usage.get(conn, &t.quota_key)?
        } else {
            Counts::default()
        };
        let total = if limits.max_total_bytes.is_some() {
            usage.get(conn, TOTAL)?.bytes
        } else {
            0
        };
        limits
            .check_create(
                to_u64(mine.active),
                to_u64(mine.tasks),
                to_u64(mine.bytes),
                to_u64(total),
                t.stored_bytes(),
            )
            .map_err(domain)?;
    }
    let seq = insert(conn, &t).map_err(|e| duplicate_or(e, &t))?;
    usage.change(&t.quota_key, 1, stored_bytes(&t), 1);
    let id = t.task_id.clone();
    Ok((t.into_record(seq), vec![id]))
}

/// An insert's error: a taken task id is [`StoreError::Duplicate`] (the id is the only
/// unique column a caller chooses).
fn duplicate_or(e: rusqlite::Error, t: &NewTask) -> OpError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ConstraintViolation) => {
            OpError::Domain(StoreError::Duplicate(t.task_id.clone()))
        }
        _ => OpError::Sqlite(e),
    }
}

/// A transition whose outcome is checked against the byte limits first (in the same
/// transaction): over one, [`within_limits`] stores a `failed` outcome naming it instead.
pub(crate) fn transition_within(
    conn: &Connection,
    usage: &mut Usage,
    t: Transition,
    limits: &Limits,
) -> OpResult<TransitionResult> {
    let checked = t.to.is_terminal()
        && t.outcome.is_some()
        && (limits.max_bytes.is_some() || limits.max_total_bytes.is_some());
    if !checked {
        return transition(conn, usage, &t);
    }
    let key: Option<String> = conn
        .prepare_cached("SELECT quota_key FROM tasks WHERE task_id = ?1")?
        .query_row([&t.task_id], |r| r.get(0))
        .optional()?;
    let t = match key {
        None => t,
        Some(key) => {
            let bytes = to_u64(usage.get(conn, &key)?.bytes);
            let total = to_u64(usage.get(conn, TOTAL)?.bytes);
            within_limits(t, |adding| limits.check_bytes(bytes, total, adding))
        }
    };
    transition(conn, usage, &t)
}

/// Insert many tasks (no limit check): the bulk path for imports and benchmarks.
pub(crate) fn import(conn: &Connection, usage: &mut Usage, tasks: &[NewTask]) -> OpResult<usize> {
    for t in tasks {
        insert(conn, t).map_err(|e| duplicate_or(e, t))?;
        usage.change(&t.quota_key, 1, stored_bytes(t), 1);
    }
    Ok((tasks.len(), Vec::new()))
}

/// The compare-and-swap `UPDATE` of a transition to `to`, built once per status (the
/// statement cache is looked up by its text; building it for every call cost two
/// allocations and a `format!`).
fn transition_sql(to: TaskStatus) -> &'static str {
    static SQL: LazyLock<Vec<(TaskStatus, String)>> = LazyLock::new(|| {
        TaskStatus::ALL
            .iter()
            .map(|&to| (to, build_transition_sql(to)))
            .collect()
    });
    SQL.iter()
        .find(|(s, _)| *s == to)
        .map_or("", |(_, sql)| sql.as_str())
}

fn build_transition_sql(to: TaskStatus) -> String {
    let names: Vec<String> = allowed_predecessors(to)
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    let from = format!("({})", names.join(", "));
    if to.is_terminal() {
        format!(
            "UPDATE tasks SET {}, status = ?2, status_message = ?3, \
             last_updated_ms = max(?4, last_updated_ms), outcome_kind = ?5, outcome = ?6, \
             bytes = bytes + ifnull(length(?6), 0), executor = NULL \
             WHERE task_id = ?1 AND status IN {from}",
            history_terms!("?2", "?3", "max(?4, last_updated_ms)")
        )
    } else {
        format!(
            "UPDATE tasks SET {}, status = ?2, status_message = ?3, \
             last_updated_ms = max(?4, last_updated_ms) \
             WHERE task_id = ?1 AND status IN {from}",
            history_terms!("?2", "?3", "max(?4, last_updated_ms)")
        )
    }
}

/// One compare-and-swap: `UPDATE ... WHERE task_id = ? AND status IN (allowed
/// predecessors)`, never read-modify-write.
///
/// Spec: "Tasks in `completed`, `failed`, or `cancelled` status are in a terminal state and
/// MUST NOT transition to any other state." A terminal transition sets the outcome (once:
/// no later statement can match a terminal row) and clears the executor.
///
/// The status history gains an entry in the same statement when the status or its message
/// changes; a terminal transition's outcome bytes count against the task's quota key.
pub(crate) fn transition(
    conn: &Connection,
    usage: &mut Usage,
    t: &Transition,
) -> OpResult<TransitionResult> {
    // Plain `UPDATE`s, then the row read back by its key in the same transaction: cheaper
    // than `UPDATE ... RETURNING` and its ephemeral table.
    let mut stmt = conn.prepare_cached(transition_sql(t.to))?;
    let changed = if t.to.is_terminal() {
        stmt.execute(params![
            t.task_id,
            t.to.as_str(),
            t.status_message,
            t.at_ms,
            t.outcome.as_ref().map(|o| o.kind.as_str()),
            t.outcome.as_ref().map(|o| o.json.as_bytes()),
        ])?
    } else {
        stmt.execute(params![t.task_id, t.to.as_str(), t.status_message, t.at_ms])?
    };
    drop(stmt);
    let applied = if changed == 1 {
        get(conn, &t.task_id)?
    } else {
        None
    };
    if let Some(rec) = applied {
        // The predecessors of a terminal status are non-terminal: one more terminal task,
        // one active task fewer, and its outcome's bytes stored.
        if t.to.is_terminal() {
            let bytes = t.outcome.as_ref().map_or(0, |o| len_i64(o.json.len()));
            usage.change(&rec.task.quota_key, 0, bytes, -1);
            usage.count_status(t.to, 1);
        }
        let id = rec.task.task_id.clone();
        return Ok((TransitionResult::Applied(rec), vec![id]));
    }
    Ok((
        match get(conn, &t.task_id)? {
            Some(rec) => TransitionResult::Rejected(rec),
            None => TransitionResult::Missing,
        },
        Vec::new(),
    ))
}

/// Delete up to `limit` tasks whose TTL has passed (`expires_at <= now`).
///
/// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and its
/// results, regardless of the task status."
/// What they stored leaves their quota keys' counts; their history goes with them.
pub(crate) fn delete_expired(
    conn: &Connection,
    usage: &mut Usage,
    now_ms: i64,
    limit: usize,
) -> OpResult<Vec<String>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows: Vec<(String, String, i64, String)> = conn
        .prepare_cached(
            "DELETE FROM tasks WHERE seq IN (SELECT seq FROM tasks WHERE expires_at <= ?1 \
             ORDER BY expires_at LIMIT ?2) RETURNING task_id, quota_key, bytes, status",
        )?
        .query_map(params![now_ms, limit], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut ids = Vec::with_capacity(rows.len());
    for (id, key, bytes, status) in rows {
        let status = TaskStatus::parse(&status);
        let active = status.is_some_and(|s| !s.is_terminal());
        usage.change(&key, -1, -bytes, -i64::from(active));
        if let Some(s) = status {
            usage.count_status(s, -1);
        }
        ids.push(id);
    }
    Ok((ids.clone(), ids))
}

/// Upsert the executor's lease.
pub(crate) fn heartbeat(conn: &Connection, executor: &str, until_ms: i64) -> OpResult<()> {
    conn.prepare_cached(
        "INSERT INTO executors (instance, lease_until) VALUES (?1, ?2) \
         ON CONFLICT (instance) DO UPDATE SET lease_until = excluded.lease_until",
    )?
    .execute(params![executor, until_ms])?;
    Ok(((), Vec::new()))
}

/// Fail every non-terminal task whose executor has no lease or an expired one, in one
/// statement; then forget the expired leases (their tasks are all failed by now).
pub(crate) fn fail_orphans(
    conn: &Connection,
    usage: &mut Usage,
    s: &OrphanSweep,
) -> OpResult<Vec<TaskRecord>> {
    let (now_ms, message) = (s.now_ms, s.message.as_str());
    let outcome = Outcome::error(&ErrorObject::new(codes::INTERNAL_ERROR, message));
    let recs: Vec<TaskRecord> = conn
        .prepare_cached(&format!(
            "UPDATE tasks INDEXED BY tasks_active_quota SET {}, status = 'failed', \
             status_message = ?2, \
             last_updated_ms = max(?1, last_updated_ms), outcome_kind = 'error', \
             outcome = ?3, bytes = bytes + length(?3), executor = NULL \
             WHERE status IN {ACTIVE} AND (executor IS NULL OR executor NOT IN \
             (SELECT instance FROM executors WHERE lease_until >= ?1)) RETURNING {COLS}",
            history_terms!("'failed'", "?2", "max(?1, last_updated_ms)")
        ))?
        .query_map(
            params![now_ms, message, outcome.json.as_bytes()],
            read_record,
        )?
        .collect::<rusqlite::Result<_>>()?;
    conn.prepare_cached("DELETE FROM executors WHERE lease_until < ?1")?
        .execute([now_ms])?;
    for r in &recs {
        usage.change(&r.task.quota_key, 0, len_i64(outcome.json.len()), -1);
    }
    usage.count_status(TaskStatus::Failed, len_i64(recs.len()));
    let ids = recs.iter().map(|r| r.task.task_id.clone()).collect();
    Ok((recs, ids))
}

/// Non-terminal tasks whose executor has no live lease, oldest first.
pub(crate) fn orphans(
    conn: &Connection,
    now_ms: i64,
    limit: usize,
) -> rusqlite::Result<Vec<TaskRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {COLS} FROM tasks INDEXED BY tasks_active_quota WHERE status IN {ACTIVE} AND \
         (executor IS NULL OR executor \
         NOT IN (SELECT instance FROM executors WHERE lease_until >= ?1)) ORDER BY seq LIMIT ?2"
    ))?
    .query_map(
        params![now_ms, i64::try_from(limit).unwrap_or(i64::MAX)],
        read_record,
    )?
    .collect()
}

/// Take over an orphaned task: one compare-and-swap on its executor.
pub(crate) fn adopt(conn: &Connection, q: &AdoptQuery) -> OpResult<Option<TaskRecord>> {
    let rec = conn
        .prepare_cached(&format!(
            "UPDATE tasks SET executor = ?2 WHERE task_id = ?1 AND status IN {ACTIVE} AND \
             (executor IS NULL OR executor NOT IN \
             (SELECT instance FROM executors WHERE lease_until >= ?3)) RETURNING {COLS}"
        ))?
        .query_row(params![q.task_id, q.executor, q.now_ms], read_record)
        .optional()?;
    Ok((rec, Vec::new()))
}

/// The read of one task by id without its request (`''` in its place), the outcome
/// columns given (`NULL, NULL` to leave it out too); columns in [`read_record`] order.
macro_rules! without_request {
    ($outcome:literal) => {
        concat!(
            "SELECT seq, task_id, owner, status, status_message, created_ms, last_updated_ms, ",
            "ttl_ms, poll_interval_ms, method, '', ",
            $outcome,
            ", executor, quota_key FROM tasks WHERE task_id = ?1"
        )
    };
}

/// One task without its request and outcome ([`TaskRecord::summary`]): neither is read.
pub(crate) fn get_summary(
    conn: &Connection,
    task_id: &str,
) -> rusqlite::Result<Option<TaskRecord>> {
    one(conn, without_request!("NULL, NULL"), task_id)
}

/// One task without its request ([`TaskRecord::without_request`]): it is not read.
pub(crate) fn get_without_request(
    conn: &Connection,
    task_id: &str,
) -> rusqlite::Result<Option<TaskRecord>> {
    one(conn, without_request!("outcome_kind, outcome"), task_id)
}

/// One task.
pub(crate) fn get(conn: &Connection, task_id: &str) -> rusqlite::Result<Option<TaskRecord>> {
    one(
        conn,
        &format!("SELECT {COLS} FROM tasks WHERE task_id = ?1"),
        task_id,
    )
}

/// The task `sql` (with `task_id` as `?1`, columns in [`read_record`] order) reads.
fn one(conn: &Connection, sql: &str, task_id: &str) -> rusqlite::Result<Option<TaskRecord>> {
    conn.prepare_cached(sql)?
        .query_row([task_id], read_record)
        .optional()
}

/// One keyset page: `WHERE seq > ? [AND owner = ?] ORDER BY seq LIMIT ?`, or newest first
/// `WHERE seq < ? ... ORDER BY seq DESC` (the same indexes, read backwards).
pub(crate) fn list(conn: &Connection, q: &ListQuery) -> rusqlite::Result<Vec<TaskRecord>> {
    let limit = q.limit_i64();
    let (cmp, order, from) = match q.order {
        ListOrder::OldestFirst => (">", "", q.after_or_min()),
        ListOrder::NewestFirst => ("<", " DESC", q.before_or_max()),
    };
    match q.scope.owner() {
        None => conn
            .prepare_cached(&format!(
                "SELECT {COLS} FROM tasks WHERE seq {cmp} ?1 ORDER BY seq{order} LIMIT ?2"
            ))?
            .query_map(params![from, limit], read_record)?
            .collect(),
        Some(o) => conn
            .prepare_cached(&format!(
                "SELECT {COLS} FROM tasks WHERE owner = ?1 AND seq {cmp} ?2 ORDER BY seq{order} LIMIT ?3"
            ))?
            .query_map(params![o, from, limit], read_record)?
            .collect(),
    }
}

/// The status history of `task_id`, oldest first (see `TaskStore::history`): the lines
/// of its row's `history`.
pub(crate) fn history(conn: &Connection, task_id: &str) -> rusqlite::Result<Vec<HistoryEntry>> {
    let Some(text) = conn
        .prepare_cached("SELECT history FROM tasks WHERE task_id = ?1")?
        .query_row([task_id], |r| r.get::<_, String>(0))
        .optional()?
    else {
        return Ok(Vec::new());
    };
    text.lines().map(history_entry).collect()
}

/// One line of a row's history: `{"s": status, "m": message or null, "at": ms}`.
fn history_entry(line: &str) -> rusqlite::Result<HistoryEntry> {
    let bad = |what: &str| conversion(0, Type::Text, format!("history entry {line:?}: {what}"));
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
    let status = v
        .get("s")
        .and_then(serde_json::Value::as_str)
        .and_then(TaskStatus::parse)
        .ok_or_else(|| bad("no known status"))?;
    let status_message = match v.get("m") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(m)) => Some(m.clone()),
        Some(_) => return Err(bad("the message is not a string")),
    };
    let at_ms = v
        .get("at")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| bad("no time"))?;
    Ok(HistoryEntry {
        status,
        status_message,
        at_ms,
    })
}

/// How many tasks are stored in each status (those with none left out): the non-terminal
/// ones counted through the partial index of active tasks, the terminal ones read from
/// `status_counts`, in one statement (one snapshot).
pub(crate) fn count_by_status(conn: &Connection) -> rusqlite::Result<Vec<(TaskStatus, u64)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT status, count(*) FROM tasks INDEXED BY tasks_active_quota \
         WHERE status IN {ACTIVE} GROUP BY status \
         UNION ALL SELECT status, tasks FROM status_counts WHERE tasks > 0"
    ))?;
    let rows = stmt.query_map([], |row| {
        let status: String = row.get(0)?;
        let n: i64 = row.get(1)?;
        let status = TaskStatus::parse(&status)
            .ok_or_else(|| conversion(0, Type::Text, format!("unknown status {status:?}")))?;
        Ok((status, to_u64(n)))
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests;
