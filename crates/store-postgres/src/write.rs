//! The writes that go through group commit (`group`): creations and terminal transitions,
//! each alone (one statement) or many in one statement, hence one transaction and one
//! commit (`create_tasks`, `finish_tasks`: schema version 7,
//! `migrations/0007_batch_functions.sql`).
//!
//! `create_tasks` is replaced at schema version 9 by a set-based one (`setbased`): one
//! insert per batch, every lock taken up front; `finish_tasks` likewise by a later
//! migration (`finish`): one update per batch. What follows describes version 7's.
//!
//! A batch function takes the advisory locks of every quota key of its rows first, in
//! `hashtext` order, then the store-wide one when a row has a store-wide byte limit, and
//! only then runs the one-row function (`create_task`, `finish_task`) of each row, whose own
//! lock calls then find the locks held. A one-row call takes its key's lock, then the
//! store-wide one, and waits for nothing after: no lock cycle between batches and single
//! rows. The rows are run in the order of their `store_bytes` shard (`hashtext(task_id) &
//! 63`, stable), so that the counter rows the statement triggers lock in each row's
//! statement are taken in shard order by every batch: two batches of different keys
//! cannot deadlock on the shards.

use std::sync::Arc;

use mcp_tasks_core::status::allowed_predecessors;
use mcp_tasks_core::store::within_limits;
use mcp_tasks_core::{Limit, Limits, NewTask, StoreError, TaskRecord, Transition};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::announce::Announcer;
use crate::db::Db;
use crate::listen::Listener;
use crate::ops;

const CREATE_BATCH: &str = "SELECT row_no, new_seq, refused, n_active, n_tasks, n_bytes, n_total \
     FROM create_tasks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";

/// [`ops::COLS`] of the `rec` column of `finish_tasks`, then the row number.
fn finish_batch_sql() -> String {
    let cols: Vec<String> = ops::COLS
        .split(',')
        .map(|c| format!("(b.rec).{}", c.trim()))
        .collect();
    format!(
        "SELECT {}, b.row_no FROM finish_tasks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
         $12, $13) AS b",
        cols.join(", ")
    )
}

/// Runs the grouped writes, and tells the waiters of what they changed.
pub(crate) struct Writer {
    /// The pool, and the database's name for errors.
    pub(crate) db: Db,
    pub(crate) listener: Arc<Listener>,
    pub(crate) announcer: Announcer,
}

/// A count or limit as a `bigint`.
fn big(m: Option<u64>) -> Option<i64> {
    m.map(|m| i64::try_from(m).unwrap_or(i64::MAX))
}

/// The limits of a creation as the `max_*` parameters of `create_task`.
fn maxes(l: &Limits) -> [Option<i64>; 4] {
    [
        l.max_active.map(i64::from),
        big(l.max_tasks),
        big(l.max_bytes),
        big(l.max_total_bytes),
    ]
}

/// The parameters of `finish_task` for a terminal transition within `limits`.
pub(crate) struct Finish {
    id: String,
    to: &'static str,
    message: Option<String>,
    at: i64,
    from: String,
    kind: Option<&'static str>,
    json: Option<Vec<u8>>,
    max_bytes: Option<i64>,
    max_total: Option<i64>,
    over_bytes: (Option<String>, Option<Vec<u8>>),
    over_total: (Option<String>, Option<Vec<u8>>),
}

impl Finish {
    /// The byte limits are checked only for an outcome (as `TaskStore::transition_within`
    /// says); otherwise this is the plain compare-and-swap of the transition.
    pub(crate) fn of(t: &Transition, limits: &Limits) -> Self {
        let checked =
            t.outcome.is_some() && (limits.max_bytes.is_some() || limits.max_total_bytes.is_some());
        // What is stored instead over each byte limit, decided by the function.
        let over = |limit: Limit, max: Option<u64>| {
            let Some(max) = max.filter(|_| checked) else {
                return (None, None);
            };
            let o = within_limits(t.clone(), |_| Err(StoreError::LimitExceeded { limit, max }));
            (o.status_message, o.outcome.map(|o| o.json.into_bytes()))
        };
        let from: Vec<&str> = allowed_predecessors(t.to)
            .iter()
            .map(|s| s.as_str())
            .collect();
        Self {
            id: t.task_id.clone(),
            to: t.to.as_str(),
            message: t.status_message.clone(),
            at: t.at_ms,
            from: from.join(","),
            kind: t.outcome.as_ref().map(|o| o.kind.as_str()),
            json: t.outcome.as_ref().map(|o| o.json.as_bytes().to_vec()),
            max_bytes: big(limits.max_bytes.filter(|_| checked)),
            max_total: big(limits.max_total_bytes.filter(|_| checked)),
            over_bytes: over(Limit::StoredBytes, limits.max_bytes),
            over_total: over(Limit::StoreBytes, limits.max_total_bytes),
        }
    }
}

/// What a row of `create_task` (or `create_tasks` from its second column) answers for `t`:
/// its `seq`, or the error naming why it was refused.
fn created(
    row: &Row,
    at: usize,
    t: &NewTask,
    limits: &Limits,
    target: &str,
) -> Result<i64, StoreError> {
    let get = |e: tokio_postgres::Error| StoreError::Corrupt(format!("{target}: {e}"));
    if let Some(seq) = row.try_get::<_, Option<i64>>(at).map_err(get)? {
        return Ok(seq);
    }
    let n = |i: usize| -> Result<u64, StoreError> {
        Ok(ops::to_u64(row.try_get::<_, i64>(at + i).map_err(get)?))
    };
    match row.try_get::<_, Option<&str>>(at + 1).map_err(get)? {
        Some("duplicate") => Err(StoreError::Duplicate(t.task_id.clone())),
        _ => {
            limits.check_create(n(2)?, n(3)?, n(4)?, n(5)?, t.stored_bytes())?;
            Err(StoreError::Corrupt(format!(
                "{target}: create_task refused a task that is within its limits"
            )))
        }
    }
}

impl Writer {
    fn err(&self, e: &tokio_postgres::Error) -> StoreError {
        self.db.err(e)
    }

    async fn conn(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.db.conn().await
    }

    /// After a committed change of `ids`: wake their waiters here, and announce the change
    /// to the other replicas (`announce`).
    pub(crate) fn woke(&self, ids: impl IntoIterator<Item = impl AsRef<str>>) {
        for id in ids {
            self.listener.wake.notify(id.as_ref());
            self.announcer.changed(id.as_ref());
        }
    }

    /// After task `id` was created: wake its waiters here only. Nobody elsewhere waits on
    /// a task before it exists (every waiter, `tasks/result`, a modern subscription, the
    /// runner's watch for an end elsewhere, reads the task after subscribing and gives up
    /// on one it cannot see), and its id is known only once its creation is answered; an
    /// announcement would cost a `NOTIFY`, its delivery to every replica, and the runner's
    /// read of its own task when its own announcement comes back (0.46 one-row reads per
    /// creation under load, `docs/performance.md`).
    pub(crate) fn created(&self, id: &str) {
        self.listener.wake.notify(id);
    }

    /// One creation, alone: the insert (no limits: `INSERT ... ON CONFLICT DO NOTHING`) or
    /// one call of `create_task`. One round trip.
    pub(crate) async fn create_one(&self, t: &NewTask, limits: &Limits) -> Result<i64, StoreError> {
        let c = self.conn().await?;
        let row = NewRow::of(t);
        let mut params = row.params();
        if *limits == Limits::NONE {
            let st = c
                .prepare_cached(ops::INSERT)
                .await
                .map_err(|e| self.err(&e))?;
            let r = c.query_opt(&st, &params).await.map_err(|e| self.err(&e))?;
            return r
                .map(|r| r.get(0))
                .ok_or_else(|| StoreError::Duplicate(t.task_id.clone()));
        }
        let st = c
            .prepare_cached(ops::CREATE)
            .await
            .map_err(|e| self.err(&e))?;
        let m = maxes(limits);
        params.extend(m.iter().map(|m| m as &(dyn ToSql + Sync)));
        let r = c.query_one(&st, &params).await.map_err(|e| self.err(&e))?;
        created(&r, 0, t, limits, self.db.target())
    }

    /// Creations in one call of `create_tasks`: one round trip, one commit. `Err` when the
    /// statement failed as a whole (nothing of it committed); otherwise each creation's own
    /// answer, in order.
    pub(crate) async fn create_many(
        &self,
        jobs: &[(&NewTask, &Limits)],
    ) -> Result<Vec<Result<i64, StoreError>>, StoreError> {
        let rows: Vec<NewRow<'_>> = jobs.iter().map(|(t, _)| NewRow::of(t)).collect();
        let col = |f: &dyn Fn(&NewRow<'_>) -> Option<String>| -> Vec<Option<String>> {
            rows.iter().map(f).collect()
        };
        let int = |f: &dyn Fn(&NewRow<'_>) -> Option<i64>| -> Vec<Option<i64>> {
            rows.iter().map(f).collect()
        };
        let ids = col(&|r| Some(r.t.task_id.clone()));
        let owners = col(&|r| r.t.owner.clone());
        let messages = col(&|r| r.t.status_message.clone());
        let created_ms = int(&|r| Some(r.t.created_at_ms));
        let ttl = int(&|r| r.ttl_ms);
        let expires = int(&|r| r.expires_at);
        let poll = int(&|r| r.poll_interval_ms);
        let methods = col(&|r| Some(r.t.method.clone()));
        let requests: Vec<&[u8]> = rows.iter().map(|r| r.request).collect();
        let executors = col(&|r| r.t.executor.clone());
        let keys = col(&|r| Some(r.t.quota_key.clone()));
        let bytes = int(&|r| Some(r.bytes));
        let m: Vec<[Option<i64>; 4]> = jobs.iter().map(|(_, l)| maxes(l)).collect();
        let max = |i: usize| -> Vec<Option<i64>> { m.iter().map(|m| m[i]).collect() };
        let (m0, m1, m2, m3) = (max(0), max(1), max(2), max(3));
        let params: [&(dyn ToSql + Sync); 16] = [
            &ids,
            &owners,
            &messages,
            &created_ms,
            &ttl,
            &expires,
            &poll,
            &methods,
            &requests,
            &executors,
            &keys,
            &bytes,
            &m0,
            &m1,
            &m2,
            &m3,
        ];
        let c = self.conn().await?;
        let st = c
            .prepare_cached(CREATE_BATCH)
            .await
            .map_err(|e| self.err(&e))?;
        let out = c.query(&st, &params).await.map_err(|e| self.err(&e))?;
        let mut answers: Vec<Option<Result<i64, StoreError>>> = jobs.iter().map(|_| None).collect();
        for r in &out {
            let i = row_index(r, 0, jobs.len(), self.db.target())?;
            let (t, limits) = jobs[i];
            answers[i] = Some(created(r, 1, t, limits, self.db.target()));
        }
        Ok(complete(answers, self.db.target(), "create_tasks"))
    }

    /// One terminal transition, alone: one call of `finish_task` (one round trip). The
    /// record it wrote, or `None` when it was not applied.
    pub(crate) async fn finish_one(&self, f: &Finish) -> Result<Option<TaskRecord>, StoreError> {
        let c = self.conn().await?;
        let sql = ops::finish();
        let st = c.prepare_cached(&sql).await.map_err(|e| self.err(&e))?;
        let from: Vec<&str> = f.from.split(',').collect();
        let params: [&(dyn ToSql + Sync); 13] = [
            &f.id,
            &f.to,
            &f.message,
            &f.at,
            &from,
            &f.kind,
            &f.json,
            &f.max_bytes,
            &f.max_total,
            &f.over_bytes.0,
            &f.over_bytes.1,
            &f.over_total.0,
            &f.over_total.1,
        ];
        let rows = c.query(&st, &params).await.map_err(|e| self.err(&e))?;
        rows.first().map(ops::read_record).transpose()
    }

    /// Terminal transitions in one call of `finish_tasks`: one round trip, one commit.
    /// `Err` when the statement failed as a whole; otherwise each transition's record, or
    /// `None` when it was not applied, in order.
    pub(crate) async fn finish_many(
        &self,
        jobs: &[&Finish],
    ) -> Result<Vec<Option<TaskRecord>>, StoreError> {
        let ids: Vec<&str> = jobs.iter().map(|f| f.id.as_str()).collect();
        let to: Vec<&str> = jobs.iter().map(|f| f.to).collect();
        let messages: Vec<Option<&str>> = jobs.iter().map(|f| f.message.as_deref()).collect();
        let at: Vec<i64> = jobs.iter().map(|f| f.at).collect();
        let from: Vec<&str> = jobs.iter().map(|f| f.from.as_str()).collect();
        let kinds: Vec<Option<&str>> = jobs.iter().map(|f| f.kind).collect();
        let json: Vec<Option<&[u8]>> = jobs.iter().map(|f| f.json.as_deref()).collect();
        let max_bytes: Vec<Option<i64>> = jobs.iter().map(|f| f.max_bytes).collect();
        let max_total: Vec<Option<i64>> = jobs.iter().map(|f| f.max_total).collect();
        let obm: Vec<Option<&str>> = jobs.iter().map(|f| f.over_bytes.0.as_deref()).collect();
        let obj: Vec<Option<&[u8]>> = jobs.iter().map(|f| f.over_bytes.1.as_deref()).collect();
        let otm: Vec<Option<&str>> = jobs.iter().map(|f| f.over_total.0.as_deref()).collect();
        let otj: Vec<Option<&[u8]>> = jobs.iter().map(|f| f.over_total.1.as_deref()).collect();
        let params: [&(dyn ToSql + Sync); 13] = [
            &ids, &to, &messages, &at, &from, &kinds, &json, &max_bytes, &max_total, &obm, &obj,
            &otm, &otj,
        ];
        let c = self.conn().await?;
        let st = c
            .prepare_cached(&finish_batch_sql())
            .await
            .map_err(|e| self.err(&e))?;
        let out = c.query(&st, &params).await.map_err(|e| self.err(&e))?;
        let mut recs: Vec<Option<TaskRecord>> = jobs.iter().map(|_| None).collect();
        for r in &out {
            let i = row_index(r, 15, jobs.len(), self.db.target())?;
            recs[i] = Some(ops::read_record(r)?);
        }
        Ok(recs)
    }
}

/// The job a batch function's row answers (its 1-based `row_no` in column `col`).
fn row_index(r: &Row, col: usize, n: usize, target: &str) -> Result<usize, StoreError> {
    let no: i32 = r
        .try_get(col)
        .map_err(|e| StoreError::Corrupt(format!("{target}: {e}")))?;
    usize::try_from(no)
        .ok()
        .and_then(|no| no.checked_sub(1))
        .filter(|i| *i < n)
        .ok_or_else(|| StoreError::Corrupt(format!("{target}: a batch answered row {no} of {n}")))
}

/// Every job's answer; one the function left unanswered is an error of its own.
fn complete(
    answers: Vec<Option<Result<i64, StoreError>>>,
    target: &str,
    function: &str,
) -> Vec<Result<i64, StoreError>> {
    answers
        .into_iter()
        .map(|a| {
            a.unwrap_or_else(|| {
                Err(StoreError::Corrupt(format!(
                    "{target}: {function} gave no answer for a row"
                )))
            })
        })
        .collect()
}

/// The columns of a new task, as the parameters `$1` to `$12` of [`ops::INSERT`] and of
/// [`ops::CREATE`] (which adds the limits after them).
pub(crate) struct NewRow<'a> {
    t: &'a NewTask,
    request: &'a [u8],
    ttl_ms: Option<i64>,
    expires_at: Option<i64>,
    poll_interval_ms: Option<i64>,
    bytes: i64,
}

impl<'a> NewRow<'a> {
    fn of(t: &'a NewTask) -> Self {
        Self {
            t,
            request: t.request.as_bytes(),
            ttl_ms: t.ttl_ms.map(u64::cast_signed),
            expires_at: ops::expires_at(t.created_at_ms, t.ttl_ms),
            poll_interval_ms: t.poll_interval_ms.map(u64::cast_signed),
            bytes: i64::try_from(t.stored_bytes()).unwrap_or(i64::MAX),
        }
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let t = self.t;
        vec![
            &t.task_id,
            &t.owner,
            &t.status_message,
            &t.created_at_ms,
            &self.ttl_ms,
            &self.expires_at,
            &self.poll_interval_ms,
            &t.method,
            &self.request,
            &t.executor,
            &t.quota_key,
            &self.bytes,
        ]
    }
}
