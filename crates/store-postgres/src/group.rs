//! Group commit: creations and terminal transitions wait in one bounded queue, and
//! [`crate::PgOptions::writers`] writer tasks (default [`crate::options::WRITERS`]) write
//! them in batches of up to [`BATCH`], each batch in one statement of a batch function
//! (`write`), hence one transaction and one commit, where each used to be its own.
//!
//! Why: every commit waits for its flush to the write-ahead log (`synchronous_commit`), and
//! creations of one requester (and, under a store-wide byte limit, all creations) hold an
//! advisory lock until their commit, so one commit per creation capped a replica at a few
//! hundred creations per second on the 2-core machine (`docs/performance.md`). A batch
//! pays one flush and takes each lock once for all its rows.
//!
//! What each caller gets is unchanged: its own answer (a creation's `seq`, or the duplicate
//! or the limit that refused it; a transition's record, or that it lost the
//! compare-and-swap, which only its caller hears), and only after the batch committed (a
//! statement outside a transaction commits before the server says it is done). When a
//! batch fails as a whole (one row's bad value, a deadlock, a timeout), nothing of it is
//! committed and each of its jobs is run again alone, so that an error in one row fails
//! that row only. A writer takes the jobs waiting when it is free, so at low load a batch
//! is one job and costs what a lone write did (one round trip).
//!
//! The queue holds [`crate::PgOptions::write_queue`] jobs (default
//! [`crate::WRITE_QUEUE`]); past it a caller waits for room (backpressure), and a stalled
//! database is bounded by the statement timeout of the batches ahead.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_tasks_core::{Limits, NewTask, StoreError, TaskRecord, Transition};
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::write::{Finish, Writer};

/// The most jobs one batch (one statement, one commit) carries.
pub(crate) const BATCH: usize = 64;

/// One write waiting in the queue, and where its answer goes.
pub(crate) enum Job {
    Create {
        t: NewTask,
        limits: Limits,
        reply: oneshot::Sender<Result<TaskRecord, StoreError>>,
    },
    Finish {
        f: Finish,
        reply: oneshot::Sender<Result<Option<TaskRecord>, StoreError>>,
    },
}

/// How many batches and jobs the writers have written (for tests and figures).
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) batches: AtomicU64,
    pub(crate) jobs: AtomicU64,
    pub(crate) fallbacks: AtomicU64,
}

/// The sending side, kept by the store; the writers end once it is dropped and the queue
/// is empty.
pub(crate) struct Queue {
    tx: mpsc::Sender<Job>,
    pub(crate) counts: Arc<Counts>,
}

fn gone() -> StoreError {
    StoreError::Unavailable("the task store's writers have stopped".into())
}

impl Queue {
    /// Start `writers` writers on a queue of `bound` jobs.
    pub(crate) fn start(writer: Arc<Writer>, bound: usize, writers: usize) -> Self {
        let (tx, rx) = mpsc::channel(bound.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let counts = Arc::new(Counts::default());
        for _ in 0..writers.max(1) {
            tokio::spawn(run(
                Arc::clone(&writer),
                Arc::clone(&rx),
                Arc::clone(&counts),
            ));
        }
        Self { tx, counts }
    }

    /// Create `t` within `limits`; its record once committed.
    pub(crate) async fn create(
        &self,
        t: NewTask,
        limits: Limits,
    ) -> Result<TaskRecord, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Job::Create { t, limits, reply })
            .await
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// The terminal transition `t` within `limits`: the record it wrote once committed, or
    /// `None` when it was not applied.
    pub(crate) async fn finish(
        &self,
        t: &Transition,
        limits: &Limits,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let (reply, rx) = oneshot::channel();
        let f = Finish::of(t, limits);
        self.tx
            .send(Job::Finish { f, reply })
            .await
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}

/// One writer: take what waits (up to [`BATCH`]), write it, answer, again.
async fn run(w: Arc<Writer>, rx: Arc<Mutex<mpsc::Receiver<Job>>>, counts: Arc<Counts>) {
    loop {
        // The receiver is shared by the writers: the one holding it waits for the next
        // job and takes what else already waits (up to a batch), then lets the other in.
        let mut jobs = Vec::with_capacity(BATCH);
        if rx.lock().await.recv_many(&mut jobs, BATCH).await == 0 {
            return;
        }
        counts.jobs.fetch_add(jobs.len() as u64, Ordering::Relaxed);
        let mut creates = Vec::new();
        let mut finishes = Vec::new();
        for j in jobs {
            match j {
                Job::Create { t, limits, reply } => creates.push((t, limits, reply)),
                Job::Finish { f, reply } => finishes.push((f, reply)),
            }
        }
        // Two statements (two transactions) on two connections at once: creations and
        // completions never wait for each other's locks.
        tokio::join!(
            create_batch(&w, creates, &counts),
            finish_batch(&w, finishes, &counts)
        );
    }
}

type CreateJob = (
    NewTask,
    Limits,
    oneshot::Sender<Result<TaskRecord, StoreError>>,
);

async fn create_batch(w: &Writer, jobs: Vec<CreateJob>, counts: &Counts) {
    if jobs.is_empty() {
        return;
    }
    counts.batches.fetch_add(1, Ordering::Relaxed);
    let args: Vec<(&NewTask, &Limits)> = jobs.iter().map(|(t, l, _)| (t, l)).collect();
    // One job alone is written as before group commit: one statement of its own.
    let batch = if args.len() > 1 {
        Some(w.create_many(&args).await)
    } else {
        None
    };
    let answers = or_one_by_one(w, counts, "creations", batch, &args, |(t, l)| {
        w.create_one(t, l)
    })
    .await;
    for ((t, _, reply), answer) in jobs.into_iter().zip(answers) {
        let answer = answer.map(|seq| {
            let rec = t.into_record(seq);
            w.created(&rec.task.task_id);
            rec
        });
        let _ = reply.send(answer);
    }
}

type FinishJob = (
    Finish,
    oneshot::Sender<Result<Option<TaskRecord>, StoreError>>,
);

async fn finish_batch(w: &Writer, jobs: Vec<FinishJob>, counts: &Counts) {
    if jobs.is_empty() {
        return;
    }
    counts.batches.fetch_add(1, Ordering::Relaxed);
    let args: Vec<&Finish> = jobs.iter().map(|(f, _)| f).collect();
    // One job alone is written as before group commit: one statement of its own.
    let batch = if args.len() > 1 {
        Some(
            w.finish_many(&args)
                .await
                .map(|a| a.into_iter().map(Ok).collect()),
        )
    } else {
        None
    };
    let answers = or_one_by_one(w, counts, "transitions", batch, &args, |f| w.finish_one(f)).await;
    for ((_, reply), answer) in jobs.into_iter().zip(answers) {
        if let Ok(Some(rec)) = &answer {
            w.woke([&rec.task.task_id]);
        }
        let _ = reply.send(answer);
    }
}

/// The answers of a batch of `what` (`creations`, `transitions`): those of its statement
/// (`batch`, `None` for a lone job), or, when there is none or it failed as a whole (a
/// fallback, counted), each of `args` written alone by `one`, in turn.
async fn or_one_by_one<'a, A, T, Fut>(
    w: &Writer,
    counts: &Counts,
    what: &str,
    batch: Option<Result<Vec<Result<T, StoreError>>, StoreError>>,
    args: &'a [A],
    one: impl Fn(&'a A) -> Fut,
) -> Vec<Result<T, StoreError>>
where
    Fut: Future<Output = Result<T, StoreError>>,
{
    match batch {
        Some(Ok(a)) => a,
        failed => {
            if let Some(Err(e)) = failed {
                counts.fallbacks.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(store = %w.db.target(), error = %e, count = args.len(),
                    "a batch of {what} failed; writing them one by one");
            }
            let mut a = Vec::with_capacity(args.len());
            for arg in args {
                a.push(one(arg).await);
            }
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn task(i: usize) -> NewTask {
        NewTask {
            task_id: format!("t{i}"),
            owner: None,
            quota_key: "k".into(),
            created_at_ms: 0,
            ttl_ms: None,
            poll_interval_ms: None,
            method: "tools/call".into(),
            request: "{}".into(),
            executor: None,
            status_message: None,
        }
    }

    /// Past its bound the queue makes a caller wait for room (nothing is dropped, nothing
    /// grows), and lets it in as soon as a writer takes a job.
    #[tokio::test]
    async fn a_full_queue_makes_the_next_caller_wait() {
        const BOUND: usize = 3;
        let (tx, mut rx) = mpsc::channel(BOUND);
        let queue = Arc::new(Queue {
            tx,
            counts: Arc::default(),
        });
        let mut callers = Vec::new();
        for i in 0..=BOUND {
            let q = Arc::clone(&queue);
            callers.push(tokio::spawn(async move {
                q.create(task(i), Limits::NONE).await
            }));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The bound's jobs are queued; the one past it waits to get in.
        assert_eq!(rx.len(), BOUND);
        assert!(!callers[BOUND].is_finished(), "it waits, it is not refused");
        // Once a writer takes a job there is room, and it gets in.
        let mut taken = Vec::new();
        for _ in 0..BOUND {
            let job = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
            taken.push(job.expect("a job").expect("a job"));
        }
        let Job::Create { t, reply, .. } = taken.pop().expect("the last one") else {
            panic!("a creation");
        };
        assert_eq!(t.task_id, format!("t{}", BOUND - 1));
        let _ = reply.send(Ok(t.into_record(7)));
        let last = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        let Some(Job::Create { t, .. }) = last.expect("the waiting caller gets in") else {
            panic!("a creation");
        };
        assert_eq!(t.task_id, format!("t{BOUND}"));
        let rec = callers.remove(BOUND - 1).await.unwrap().expect("answered");
        assert_eq!(rec.seq, 7);
        // A writer that stopped without answering: its callers get an error, not a hang.
        drop((taken, t));
        for c in callers {
            assert!(matches!(c.await.unwrap(), Err(StoreError::Unavailable(_))));
        }
    }
}
