//! The audit trail: one JSON line per security-relevant event ([`Audit`]).
//!
//! Spec (security, audit and logging): receivers SHOULD "Log task creation, completion,
//! and retrieval events for audit purposes" and "Include auth context in logs when
//! available". Every event is a `tracing` line on [`AUDIT_TARGET`] (as before), and, with
//! a sink ([`Audit::open`]: `mcp-tasks serve --audit-log FILE`, or `-` for stderr), one
//! JSON object per line:
//!
//! ```json
//! {"time":"2026-12-03T17:00:00.123Z","event":"task_created","principal":"alice","session":"5f0c…","taskId":"…","method":"tools/call","tool":"sleep","outcome":"ok"}
//! ```
//!
//! `event` is one of `task_created`, `task_retrieved` (`tasks/result`, or `tasks/get` of
//! a terminal task), `task_completed`, `task_failed`, `task_cancelled` (with `by`:
//! `requester`, `work` (the task's own outcome), `expiry`, `shutdown`, `orphan`),
//! `task_expired`, `tasks_listed`, `lookup_failed`, `auth_failed` (with `reason`, never
//! the token), `rate_limited` (with `limit`). `session` is a digest of the connection's
//! internal id (never the `Mcp-Session-Id` itself). Params, results and tokens never
//! appear.
//!
//! The file is opened with `O_APPEND` (each line one `write`), reopened by
//! [`Audit::reopen`] (on SIGHUP, after logrotate moved it). Lines go through a bounded
//! queue to one writer task, so a slow disk never holds a request: when the queue is full
//! the line is dropped, counted (`mcp_tasks_audit_dropped_total`) and reported (a warning,
//! at most one a minute, with the count). Lines a write fails to store (a full disk) are
//! counted and reported the same way. The file is created with mode 0600: without
//! authentication its task ids are the keys to the tasks' results. Every client-supplied
//! string of a line (a task id, a method, a tool name) is cut to
//! [`mcp_tasks_proto::logged::LOG_FIELD_MAX`] bytes, saying so.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc};

use mcp_tasks_proto::logged::capped;

use crate::metrics::Metrics;
use crate::requester::Requester;

/// The `tracing` target of the audit lines (see the module documentation). Filter it
/// with `RUST_LOG=info,mcp_tasks::audit=off` (or `=warn`).
pub const AUDIT_TARGET: &str = "mcp_tasks::audit";

/// Default length of the queue to the audit writer, in lines.
pub const DEFAULT_QUEUE: usize = 4096;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// A task was created.
    Created,
    /// A task's result was read (`tasks/result`, `tasks/get` of a terminal task).
    Retrieved,
    /// A task completed.
    Completed,
    /// A task failed.
    Failed,
    /// A task was cancelled.
    Cancelled,
    /// A task's TTL passed and it was deleted.
    Expired,
    /// Tasks were listed.
    Listed,
    /// A lookup named an unknown or foreign task id.
    LookupFailed,
    /// A request was refused for its credentials.
    AuthFailed,
    /// A request was refused by a rate limit.
    RateLimited,
}

impl EventKind {
    /// Its `event` value.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Created => "task_created",
            EventKind::Retrieved => "task_retrieved",
            EventKind::Completed => "task_completed",
            EventKind::Failed => "task_failed",
            EventKind::Cancelled => "task_cancelled",
            EventKind::Expired => "task_expired",
            EventKind::Listed => "tasks_listed",
            EventKind::LookupFailed => "lookup_failed",
            EventKind::AuthFailed => "auth_failed",
            EventKind::RateLimited => "rate_limited",
        }
    }

    /// The message of its `tracing` line.
    fn message(self) -> &'static str {
        match self {
            EventKind::Created => "task created",
            EventKind::Retrieved => "task result retrieved",
            EventKind::Completed | EventKind::Failed => "task finished",
            EventKind::Cancelled => "task cancelled",
            EventKind::Expired => "task expired and was deleted",
            EventKind::Listed => "tasks listed",
            EventKind::LookupFailed => "failed task lookup",
            EventKind::AuthFailed => "authentication failed",
            EventKind::RateLimited => "request rate limited",
        }
    }
}

/// One event: [`Event::new`], then the setters.
#[derive(Debug, Clone)]
pub struct Event {
    kind: EventKind,
    principal: Option<String>,
    session: Option<SessionId>,
    task_id: Option<String>,
    method: Option<String>,
    outcome: &'static str,
    extra: Map<String, Value>,
}

/// The digest of a session's internal id written in the log: 16 hex digits of its
/// SHA-256, enough to tell sessions apart, useless to present as anything.
fn session_digest(session: &str) -> String {
    mcp_tasks_proto::logged::digest(session)
}

/// A session's internal id, kept as it is until a line is written, which carries only its
/// digest ([`session_digest`]): digesting it when the event is made cost a SHA-256 per
/// request (every terminal task's `tasks/get` is an event), though most events reach no
/// file. Its `Debug` shows the digest, never the id.
#[derive(Clone)]
struct SessionId(String);

impl std::fmt::Debug for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&session_digest(&self.0))
    }
}

impl Event {
    /// An event of `kind` with outcome `ok`.
    pub fn new(kind: EventKind) -> Self {
        Self {
            kind,
            principal: None,
            session: None,
            task_id: None,
            method: None,
            outcome: "ok",
            extra: Map::new(),
        }
    }

    /// Who asked: its principal and session.
    #[must_use]
    pub fn who(mut self, who: &Requester) -> Self {
        self.principal = who.principal.as_deref().map(|p| capped(p).owned());
        self.session = who.session.clone().map(SessionId);
        self
    }

    /// The principal (for events no requester caused: a task's own end).
    #[must_use]
    pub fn principal(mut self, principal: Option<&str>) -> Self {
        self.principal = principal.map(|p| capped(p).owned());
        self
    }

    /// The task.
    #[must_use]
    pub fn task(mut self, task_id: &str) -> Self {
        self.task_id = Some(capped(task_id).owned());
        self
    }

    /// The method (of the request, or the one the task wraps).
    #[must_use]
    pub fn method(mut self, method: &str) -> Self {
        self.method = Some(capped(method).owned());
        self
    }

    /// The outcome (`ok` unless set): `refused`, `not_found`, a task status...
    #[must_use]
    pub fn outcome(mut self, outcome: &'static str) -> Self {
        self.outcome = outcome;
        self
    }

    /// Another field (`tool`, `by`, `reason`, `limit`, `status`, `count`); a string
    /// value is [`capped`].
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        let value = match value.into() {
            Value::String(s) if s.len() > mcp_tasks_proto::logged::LOG_FIELD_MAX => {
                Value::String(capped(&s).owned())
            }
            v => v,
        };
        self.extra.insert(key.to_owned(), value);
        self
    }

    /// The kind.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The JSON line (without the newline), stamped `time`.
    pub fn to_line(&self, time: &str) -> String {
        let mut m = Map::new();
        m.insert("time".into(), json!(time));
        m.insert("event".into(), json!(self.kind.name()));
        m.insert("principal".into(), json!(self.principal));
        m.insert(
            "session".into(),
            json!(self.session.as_ref().map(|s| session_digest(&s.0))),
        );
        m.insert("taskId".into(), json!(self.task_id));
        m.insert("method".into(), json!(self.method));
        m.insert("outcome".into(), json!(self.outcome));
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m).to_string()
    }

    fn trace(&self) {
        // The fields below are copied out for the line: not when nobody reads it.
        if !tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO) {
            return;
        }
        let field = |k: &str| {
            self.extra
                .get(k)
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        };
        let (tool, status, by) = (field("tool"), field("status"), field("by"));
        tracing::info!(
            target: AUDIT_TARGET,
            event = %self.kind.name(),
            task_id = self.task_id.as_deref(),
            method = self.method.as_deref(),
            tool = tool.as_deref(),
            principal = self.principal.as_deref(),
            status = status.map(tracing::field::display),
            by = by.map(tracing::field::display),
            outcome = %self.outcome,
            "{}",
            self.kind.message()
        );
    }
}

/// Where lines are written.
#[derive(Debug, Clone)]
enum Target {
    File(PathBuf),
    Stderr,
}

impl Target {
    fn open(&self) -> std::io::Result<Box<dyn Write + Send>> {
        match self {
            Target::Stderr => Ok(Box::new(std::io::stderr())),
            Target::File(p) => {
                let mut o = std::fs::OpenOptions::new();
                o.append(true).create(true);
                // Created private: its task ids are, without authentication, the keys to
                // the tasks' results.
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
                Ok(Box::new(o.open(p)?))
            }
        }
    }
}

struct Sink {
    tx: mpsc::Sender<String>,
    reopen: Arc<Notify>,
}

struct Inner {
    sink: Option<Sink>,
    lost: Arc<Lost>,
}

/// How often a warning about lost lines is logged at most.
const LOST_WARNING_EVERY: Duration = Duration::from_secs(60);

/// Lines that never reached the file: dropped at a full queue, or lost to a failed write
/// (a full disk). Counted, and warned about at most once every [`LOST_WARNING_EVERY`] with
/// the count since the previous warning.
#[derive(Default)]
struct Lost {
    total: AtomicU64,
    since_warning: AtomicU64,
    last_warning: Mutex<Option<Instant>>,
    metrics: std::sync::OnceLock<Metrics>,
}

impl Lost {
    /// `n` lines lost, because of `why`.
    fn lost(&self, n: u64, why: &dyn std::fmt::Display) {
        self.total.fetch_add(n, Ordering::Relaxed);
        self.since_warning.fetch_add(n, Ordering::Relaxed);
        if let Some(m) = self.metrics.get() {
            for _ in 0..n {
                m.audit_dropped();
            }
        }
        let mut last = self.last_warning.lock();
        if last.is_none_or(|t| t.elapsed() >= LOST_WARNING_EVERY) {
            *last = Some(Instant::now());
            let count = self.since_warning.swap(0, Ordering::Relaxed);
            tracing::warn!(
                lost = count,
                total = self.total.load(Ordering::Relaxed),
                "audit lines were lost: {why} (warned at most once a minute)"
            );
        }
    }
}

/// The audit trail. Cheap to clone; [`Audit::default`] writes `tracing` lines only.
#[derive(Clone)]
pub struct Audit {
    inner: Arc<Inner>,
}

mcp_tasks_proto::debug_non_exhaustive!(Audit, |s| { file: s.inner.sink.is_some() });

impl Default for Audit {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner {
                sink: None,
                lost: Arc::default(),
            }),
        }
    }
}

impl Audit {
    /// An audit trail that also writes JSON lines to `path` (`-`: stderr), through a
    /// queue of `queue` lines to a writer task (spawned here: call within a Tokio runtime).
    ///
    /// # Errors
    /// The file cannot be opened for appending.
    pub fn open(path: &str, queue: usize) -> std::io::Result<Self> {
        let target = if path == "-" {
            Target::Stderr
        } else {
            Target::File(PathBuf::from(path))
        };
        let out = target.open()?;
        let (tx, rx) = mpsc::channel(queue.max(1));
        let reopen = Arc::new(Notify::new());
        let lost = Arc::<Lost>::default();
        tokio::spawn(write_lines(
            target,
            out,
            rx,
            Arc::clone(&reopen),
            Arc::clone(&lost),
        ));
        Ok(Self {
            inner: Arc::new(Inner {
                sink: Some(Sink { tx, reopen }),
                lost,
            }),
        })
    }

    /// Count dropped lines into `metrics` (once).
    pub fn set_metrics(&self, metrics: Metrics) {
        let _ = self.inner.lost.metrics.set(metrics);
    }

    /// Reopen the file (after logrotate moved it): the lines queued after this call go
    /// to a file at the configured path.
    pub fn reopen(&self) {
        if let Some(s) = &self.inner.sink {
            s.reopen.notify_one();
        }
    }

    /// Lines lost: dropped because the queue was full, or lost to a failed write.
    pub fn dropped(&self) -> u64 {
        self.inner.lost.total.load(Ordering::Relaxed)
    }

    /// Whether an event recorded now is written anywhere: to the file (or stderr) of
    /// [`Audit::open`], or as a `tracing` line on [`AUDIT_TARGET`] at `info`. When not,
    /// the callers on the request path do not build the event at all (its principal,
    /// session, task id and method are copies), and [`Audit::record`] drops it.
    pub fn wanted(&self) -> bool {
        self.inner.sink.is_some() || tracing::enabled!(target: AUDIT_TARGET, tracing::Level::INFO)
    }

    /// Record `event`: its `tracing` line, and its JSON line when there is a file. Never
    /// waits.
    pub fn record(&self, event: Event) {
        if !self.wanted() {
            return;
        }
        event.trace();
        let Some(sink) = &self.inner.sink else {
            return;
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let line = event.to_line(&crate::clock::rfc3339(now));
        if sink.tx.try_send(line).is_err() {
            self.inner
                .lost
                .lost(1, &"the audit log cannot keep up (its queue is full)");
        }
    }
}

/// The writer task: lines from `rx` to `out`, reopened on `reopen`; ends when every
/// [`Audit`] is gone.
async fn write_lines(
    target: Target,
    out: Box<dyn Write + Send>,
    mut rx: mpsc::Receiver<String>,
    reopen: Arc<Notify>,
    lost: Arc<Lost>,
) {
    let out = Arc::new(Mutex::new(out));
    loop {
        tokio::select! {
            biased;
            () = reopen.notified() => {
                let target = target.clone();
                match tokio::task::spawn_blocking(move || target.open()).await {
                    Ok(Ok(f)) => {
                        *out.lock() = f;
                        tracing::info!("audit log reopened");
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "could not reopen the audit log; writing on to the old file"),
                    Err(_) => {}
                }
            }
            line = rx.recv() => {
                let Some(first) = line else { return };
                let mut batch = first;
                batch.push('\n');
                let mut lines = 1u64;
                while batch.len() < 64 * 1024 {
                    match rx.try_recv() {
                        Ok(l) => {
                            batch.push_str(&l);
                            batch.push('\n');
                            lines += 1;
                        }
                        Err(_) => break,
                    }
                }
                let out = Arc::clone(&out);
                let written = tokio::task::spawn_blocking(move || {
                    let mut o = out.lock();
                    o.write_all(batch.as_bytes()).and_then(|()| o.flush())
                })
                .await;
                if let Ok(Err(e)) = written {
                    // A full disk: the batch is lost (some of it may have been written).
                    lost.lost(lines, &format_args!("could not write the audit log: {e}"));
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
