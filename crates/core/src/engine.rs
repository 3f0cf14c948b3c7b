//! The receiver engine: creates tasks, runs them, answers `tasks/*`, relays input.
//!
//! It is generic over the request a task wraps (the caller passes a runner future and a
//! classifier that maps its result to a terminal status) and over the transport (it
//! reaches peers through [`RequestorChannel`] and [`RequestSender`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use mcp_tasks_proto::mcp::{Task, set_related_task};
use mcp_tasks_proto::{ErrorObject, RequestId, codes, methods};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::channel::{RequestSender, RequestorChannel};
use crate::clock::Clock;
use crate::cursor::CursorCodec;
use crate::error::EngineError;
use crate::policy::Policy;
use crate::record::{NewTask, Outcome, TaskRecord};
use crate::status::TaskStatus;
use crate::store::{ListScope, TaskStore, Transition, TransitionResult};

/// Who is asking. Tasks are bound to `principal`; `sees_all` is the local stdio peer,
/// which sees its whole store.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requester {
    /// The authenticated principal, if any.
    pub principal: Option<String>,
    /// Whether this requester may see every task (stdio: the local peer owns the store).
    pub sees_all: bool,
    /// An opaque id of the session (connection) the request came on, unique per session
    /// and unguessable. Without a principal it is what a session's own state is bound to:
    /// its answers to relayed requests and (HTTP without auth) its task quota. Never sent to
    /// a peer.
    pub session: Option<String>,
}

impl Requester {
    /// The local peer of a stdio server.
    pub fn local() -> Self {
        Self {
            principal: None,
            sees_all: true,
            session: None,
        }
    }

    /// Spec: "If context-binding is available, receivers MUST reject `tasks/get`,
    /// `tasks/result`, and `tasks/cancel` requests for tasks that do not belong to the same
    /// authorization context as the requestor."
    pub fn can_see(&self, rec: &TaskRecord) -> bool {
        self.sees_all || rec.owner == self.principal
    }

    /// What this requester's tasks count against for the per-requester limits (active
    /// tasks, stored tasks, stored bytes): its principal when it has one; else the local
    /// stdio peer (one key); else its session, so that without auth each HTTP session has
    /// its own quota and one client cannot lock task creation for the others. Prefixed so
    /// that a principal can never share a session's key.
    pub fn quota_key(&self) -> String {
        match (&self.principal, self.sees_all, &self.session) {
            (Some(p), _, _) => format!("principal:{p}"),
            (None, true, _) => LOCAL_QUOTA_KEY.to_owned(),
            (None, false, Some(s)) => format!("session:{s}"),
            (None, false, None) => "anonymous".to_owned(),
        }
    }

    /// The `tasks/list` scope, or `None` when this requester cannot be identified.
    pub fn list_scope(&self) -> Option<ListScope> {
        if self.sees_all {
            Some(ListScope::All)
        } else {
            self.principal.clone().map(ListScope::Owner)
        }
    }
}

/// The quota key of the local stdio peer (and of tasks stored before quota keys existed
/// that were bound to no one).
pub const LOCAL_QUOTA_KEY: &str = "local";

/// The `tracing` target of the audit log: one `info` line when a task is created, reaches
/// a terminal status, has its result retrieved, or is cancelled (task id, method or tool,
/// principal; never params, results or tokens). Filter it with
/// `RUST_LOG=info,mcp_tasks::audit=off` (or `=warn`).
pub const AUDIT_TARGET: &str = "mcp_tasks::audit";

/// Decides the terminal status of a successful result (a `CallToolResult` with
/// `isError: true` is `failed`).
pub type Classifier = fn(&Value) -> (TaskStatus, Option<String>);

/// What a runner gets: the task id, its cancellation, and a channel to the requestor
/// through which requests become `input_required` and are relayed via `tasks/result`.
pub struct TaskRun {
    /// The task id.
    pub task_id: String,
    /// Fires when the task is cancelled or expires.
    pub cancel: CancellationToken,
    /// Task-mode channel to the requestor.
    pub channel: Arc<dyn RequestorChannel>,
}

/// The future that computes a task's outcome.
pub type Runner = Box<dyn FnOnce(TaskRun) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send>;

/// What to create.
pub struct TaskSpec {
    /// Who creates it.
    pub requester: Requester,
    /// The wrapped method.
    pub method: String,
    /// The wrapped params (kept as the original request).
    pub params: Value,
    /// The `task` field of the request.
    pub task_field: Value,
    /// Where status notifications go (the connection that created the task).
    pub origin: Arc<dyn RequestorChannel>,
    /// How a successful result maps to a terminal status.
    pub classify: Classifier,
}

struct PendingInput {
    id: RequestId,
    method: String,
    params: Value,
    /// The open `tasks/result` deliverers (generations) it was sent on.
    sent_on: Vec<u64>,
}

/// One open `tasks/result` that carries the task's requests and notifications.
struct OpenDeliverer {
    generation: u64,
    sender: Arc<dyn RequestSender>,
}

#[derive(Default)]
struct InputState {
    queue: Vec<PendingInput>,
    next_request: u64,
    next_gen: u64,
    /// Open `tasks/result` deliverers, oldest first.
    deliverers: Vec<OpenDeliverer>,
}

impl InputState {
    fn is_live_shared(&self, generation: u64) -> bool {
        self.deliverers
            .iter()
            .any(|d| d.generation == generation && !d.sender.is_own_stream())
    }
}

struct RunningTask {
    task_id: String,
    cancel: CancellationToken,
    origin: Arc<dyn RequestorChannel>,
    /// Who the task's relayed requests belong to: the requester that created it (a resumed
    /// task: its owner, or the first session that asks for its result).
    answerer: Mutex<Requester>,
    input: Mutex<InputState>,
    input_changed: Notify,
    /// Serialises the working <-> input_required transitions with queue changes.
    status_lock: tokio::sync::Mutex<()>,
}

impl RunningTask {
    fn input(&self) -> std::sync::MutexGuard<'_, InputState> {
        self.input
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `who` may receive and answer the requests this task relays: the requester
    /// the task belongs to, that is its principal when there is one, else the session
    /// that created it; the local stdio peer owns everything. A task resumed without
    /// either is claimed by the first session that asks (`claim`).
    ///
    /// Spec (the same rule for the messages of a task): "If context-binding is available,
    /// receivers MUST reject `tasks/get`, `tasks/result`, and `tasks/cancel` requests for
    /// tasks that do not belong to the same authorization context as the requestor."
    fn may_answer(&self, who: &Requester, claim: bool) -> bool {
        if who.sees_all {
            return true;
        }
        let mut owner = self
            .answerer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (&owner.principal, &owner.session) {
            (Some(p), _) => who.principal.as_ref() == Some(p),
            (None, Some(s)) => who.principal.is_none() && who.session.as_ref() == Some(s),
            (None, None) if claim && who.principal.is_none() && who.session.is_some() => {
                owner.session.clone_from(&who.session);
                true
            }
            (None, None) => false,
        }
    }

    /// The newest open `tasks/result` stream, if any.
    fn newest_sender(&self) -> Option<Arc<dyn RequestSender>> {
        self.input()
            .deliverers
            .last()
            .map(|d| Arc::clone(&d.sender))
    }

    /// Send a notification about the task to its requestor: on its newest open
    /// `tasks/result` stream, else on the connection that created it. Each goes out once.
    ///
    /// Spec: "Task-augmented requests support progress notifications as defined in the
    /// progress specification. The `progressToken` provided in the initial request remains
    /// valid throughout the task lifetime." and "clients SHOULD expect messages to be
    /// delivered on any SSE stream, including the HTTP GET stream. One possible approach is
    /// maintaining an SSE stream on `tasks/result`": a client that waits on `tasks/result`
    /// and never opens the GET stream still sees the task's progress and status.
    async fn notify_requestor(&self, method: &str, params: Value) {
        if let Some(sender) = self.newest_sender() {
            match sender.send_notification(method, params.clone()).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(task_id = %self.task_id, error = %e, "notification not sent on tasks/result; it goes to the task's origin");
                }
            }
        }
        self.origin.notify(method, params).await;
    }
}

/// A relayed request waiting for its answer.
struct PendingAnswer {
    task: Weak<RunningTask>,
    tx: oneshot::Sender<Result<Value, ErrorObject>>,
}

/// Work resumed for a task whose executor stopped: where its notifications go, how its
/// result maps to a status, and the future that computes its outcome.
pub struct Resumed {
    /// Where status notifications go (the original connection is gone).
    pub origin: Arc<dyn RequestorChannel>,
    /// How a successful result maps to a terminal status.
    pub classify: Classifier,
    /// The work.
    pub runner: Runner,
}

/// Picks up the work of tasks whose executor stopped, when that work can go on without
/// being re-run (a gateway following a task that runs on its upstream). Every other
/// orphaned task is failed, as before.
pub trait Resumer: Send + Sync + 'static {
    /// The work that resumes `rec`, or `None` to let it be failed as an orphan.
    fn resume(&self, rec: &TaskRecord) -> Option<Resumed>;
}

struct Inner {
    resumer: std::sync::OnceLock<Arc<dyn Resumer>>,
    store: Arc<dyn TaskStore>,
    policy: Policy,
    clock: Arc<dyn Clock>,
    instance: String,
    running: Mutex<HashMap<String, Arc<RunningTask>>>,
    answers: Mutex<HashMap<RequestId, PendingAnswer>>,
    /// Answers refused because they came from another requester than the task's.
    failed_lookups: AtomicU64,
    cursor: tokio::sync::OnceCell<CursorCodec>,
    shutdown: CancellationToken,
}

/// The engine. Cheap to clone.
#[derive(Clone)]
pub struct TaskEngine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TaskEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEngine")
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

/// First delay before storing a task's outcome again after the store failed; it doubles
/// up to [`OUTCOME_RETRY_MAX_MS`].
const OUTCOME_RETRY_FIRST_MS: u64 = 50;
/// Longest delay between two attempts to store a task's outcome.
const OUTCOME_RETRY_MAX_MS: u64 = 5_000;

/// The delays between tries to store an outcome: from [`OUTCOME_RETRY_FIRST_MS`],
/// doubling, up to [`OUTCOME_RETRY_MAX_MS`] (the workspace's one backoff, [`backon`]'s).
fn outcome_retries() -> backon::ExponentialBackoff {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(OUTCOME_RETRY_FIRST_MS))
        .with_max_delay(Duration::from_millis(OUTCOME_RETRY_MAX_MS))
        .without_max_times()
        .build()
}

fn next_delay(delays: &mut backon::ExponentialBackoff) -> Duration {
    delays
        .next()
        .unwrap_or(Duration::from_millis(OUTCOME_RETRY_MAX_MS))
}

/// Longest status message the engine stores for a finished task, in bytes: a tool's
/// error text is quoted in it and may be as large as its result (which is stored once, as
/// the outcome).
pub const MAX_STATUS_MESSAGE: usize = 1024;

/// `message`, cut to at most [`MAX_STATUS_MESSAGE`] bytes (at a character boundary, with
/// "…" when cut).
fn bounded_message(mut message: String) -> String {
    if message.len() > MAX_STATUS_MESSAGE {
        let mut end = MAX_STATUS_MESSAGE - '…'.len_utf8();
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// The transition that fails `task_id` with `err` (its message is the status message).
fn failed_transition(task_id: &str, err: &ErrorObject, at_ms: i64) -> Transition {
    Transition {
        task_id: task_id.to_owned(),
        to: TaskStatus::Failed,
        status_message: Some(err.message.clone()),
        outcome: Some(Outcome::error(err)),
        at_ms,
    }
}

/// The audit line of a task that reached a terminal status.
fn audit_finished(rec: &TaskRecord) {
    tracing::info!(
        target: AUDIT_TARGET,
        task_id = %rec.task_id,
        method = %rec.method,
        principal = rec.owner.as_deref(),
        status = %rec.status,
        "task finished"
    );
}

/// The status message of a task failed because its executor stopped.
pub const ORPHAN_MESSAGE: &str = "The server stopped before the task finished; it was not re-run.";
/// The status message of a cancelled task.
pub const CANCELLED_MESSAGE: &str = "The task was cancelled by request.";

/// The outcome `tasks/result` returns for a cancelled task: a JSON-RPC error with code
/// [`codes::TASK_CANCELLED`], the same every time.
pub fn cancelled_outcome(task_id: &str) -> ErrorObject {
    ErrorObject::new(
        codes::TASK_CANCELLED,
        "Task cancelled: the task was cancelled before it finished",
    )
    .with_data(json!({ "taskId": task_id, "status": "cancelled" }))
}

/// A new task id: a UUID v4 (122 random bits) from the OS CSPRNG.
///
/// Spec: "receivers MUST generate cryptographically secure task IDs with enough entropy to
/// prevent guessing".
pub fn new_task_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl TaskEngine {
    /// An engine over `store`.
    pub fn new(store: Arc<dyn TaskStore>, policy: Policy, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                resumer: std::sync::OnceLock::new(),
                store,
                policy,
                clock,
                instance: new_task_id(),
                running: Mutex::new(HashMap::new()),
                answers: Mutex::new(HashMap::new()),
                failed_lookups: AtomicU64::new(0),
                cursor: tokio::sync::OnceCell::new(),
                shutdown: CancellationToken::new(),
            }),
        }
    }

    /// Install the [`Resumer`] consulted before orphaned tasks are failed (once; set it
    /// before [`Self::start`]). Returns `false` if one was installed already.
    pub fn set_resumer(&self, resumer: Arc<dyn Resumer>) -> bool {
        self.inner.resumer.set(resumer).is_ok()
    }

    /// Adopt and resume the orphaned tasks the [`Resumer`] can go on with; the others are
    /// left to [`TaskStore::fail_orphans`].
    async fn resume_orphans(&self, now: i64) {
        let Some(resumer) = self.inner.resumer.get() else {
            return;
        };
        let orphans = match self.inner.store.orphans(now, 1000).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "could not list orphaned tasks");
                return;
            }
        };
        for rec in orphans {
            let Some(resumed) = resumer.resume(&rec) else {
                continue;
            };
            match self
                .inner
                .store
                .adopt(&rec.task_id, &self.inner.instance, now)
                .await
            {
                Ok(Some(rec)) => {
                    tracing::info!(task_id = %rec.task_id, "task resumed after its executor stopped");
                    let owner = Requester {
                        principal: rec.owner.clone(),
                        ..Requester::default()
                    };
                    self.launch(
                        rec.task_id,
                        owner,
                        resumed.origin,
                        resumed.classify,
                        resumed.runner,
                    );
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(task_id = %rec.task_id, error = %e, "could not adopt a task")
                }
            }
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// This process's executor id (for leases).
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    fn running(&self, task_id: &str) -> Option<Arc<RunningTask>> {
        self.inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(task_id)
            .cloned()
    }

    /// Number of tasks this process is executing.
    pub fn running_count(&self) -> usize {
        self.inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Take the executor lease and fail the tasks of executors that died, before the first
    /// task is accepted (so that no other process mistakes this one's new tasks for
    /// orphans, and a restart reports its predecessor's unfinished tasks at once when their
    /// lease has run out).
    ///
    /// # Errors
    /// A store failure.
    pub async fn start(&self) -> Result<(), EngineError> {
        let now = self.now();
        let until =
            now.saturating_add(i64::try_from(self.inner.policy.lease_ms).unwrap_or(i64::MAX));
        self.inner
            .store
            .heartbeat(&self.inner.instance, until)
            .await?;
        self.resume_orphans(now).await;
        for r in self.inner.store.fail_orphans(now, ORPHAN_MESSAGE).await? {
            tracing::warn!(task_id = %r.task_id, "task failed: its executor stopped before it finished");
        }
        Ok(())
    }

    /// Start the background work: one sweeper for expired tasks, lease renewal, and the
    /// failing of tasks whose executor died. Stops on [`Self::shutdown`].
    pub fn start_background(&self) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        let shutdown = self.inner.shutdown.clone();
        let sweep = Duration::from_millis(self.inner.policy.sweep_interval_ms.max(10));
        let lease = self.inner.policy.lease_ms;
        tokio::spawn(async move {
            let mut last_beat = i64::MIN;
            loop {
                let Some(engine) = Weak::upgrade(&weak).map(|inner| TaskEngine { inner }) else {
                    return;
                };
                let now = engine.now();
                if now.saturating_sub(last_beat) >= i64::try_from(lease / 3).unwrap_or(i64::MAX) {
                    let until = now.saturating_add(i64::try_from(lease).unwrap_or(i64::MAX));
                    match engine
                        .inner
                        .store
                        .heartbeat(&engine.inner.instance, until)
                        .await
                    {
                        Ok(()) => last_beat = now,
                        Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
                    }
                    engine.resume_orphans(now).await;
                    match engine.inner.store.fail_orphans(now, ORPHAN_MESSAGE).await {
                        Ok(recs) => {
                            for r in recs {
                                tracing::warn!(task_id = %r.task_id, "task failed: its executor stopped before it finished");
                            }
                        }
                        Err(e) => tracing::warn!(error = %e, "orphan sweep failed"),
                    }
                }
                engine.sweep_expired().await;
                drop(engine);
                tokio::select! {
                    () = tokio::time::sleep(sweep) => {}
                    () = shutdown.cancelled() => return,
                }
            }
        })
    }

    /// Delete expired tasks now; cancel the work of those still running.
    ///
    /// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and
    /// its results, regardless of the task status."
    pub async fn sweep_expired(&self) -> usize {
        let mut total = 0;
        loop {
            match self.inner.store.delete_expired(self.now(), 1000).await {
                Ok(ids) => {
                    total += ids.len();
                    for id in &ids {
                        tracing::info!(task_id = %id, "task expired and was deleted");
                        self.stop_local(id);
                    }
                    if ids.len() < 1000 {
                        return total;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "expiry sweep failed");
                    return total;
                }
            }
        }
    }

    /// Stop the local execution of a task (cancel its work, drop its pending requests).
    fn stop_local(&self, task_id: &str) {
        let task = self
            .inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(task_id);
        if let Some(task) = task {
            task.cancel.cancel();
            let ids: Vec<RequestId> = task.input().queue.drain(..).map(|p| p.id).collect();
            let mut answers = self
                .inner
                .answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for id in ids {
                answers.remove(&id);
            }
            task.input_changed.notify_waiters();
        }
    }

    /// Cancel all local work (used at shutdown after the grace period).
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Fail every task this process still runs with `message` (graceful shutdown after the
    /// grace period) and stop their work.
    pub async fn fail_running(&self, message: &str) {
        let ids: Vec<String> = self
            .inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for id in ids {
            let err = ErrorObject::internal(message.to_owned());
            // The status message is the plain sentence; the stored error carries the code.
            let t = Transition {
                status_message: Some(message.to_owned()),
                ..failed_transition(&id, &err, self.now())
            };
            if let Ok(TransitionResult::Applied(rec)) = self.inner.store.transition(t).await {
                audit_finished(&rec);
                self.announce(&rec).await;
            }
            self.stop_local(&id);
        }
    }

    async fn cursor(&self) -> Result<&CursorCodec, EngineError> {
        self.inner
            .cursor
            .get_or_try_init(|| async { self.inner.store.cursor_key().await.map(CursorCodec::new) })
            .await
            .map_err(EngineError::from)
    }

    async fn announce(&self, rec: &TaskRecord) {
        let running = self.running(&rec.task_id);
        if let Some(task) = running {
            let params = serde_json::to_value(rec.to_wire()).unwrap_or(Value::Null);
            // Spec: "notifications/tasks/status notifications SHOULD NOT include related-task
            // metadata, as the task ID is already present in the notification parameters."
            task.notify_requestor(methods::TASK_STATUS, params).await;
        }
    }

    /// Create a task and start it.
    ///
    /// Spec: "Receivers that accept a task-augmented request MUST return a
    /// `CreateTaskResult` as the response. This result SHOULD be returned as soon as
    /// possible after accepting the task." The record is committed before this returns
    /// (no reply before commit); the work runs in the background.
    ///
    /// # Errors
    /// -32602 for a malformed `task` field, the limit error when the requester has too many
    /// active tasks, -32603 when the store fails.
    pub async fn create(&self, spec: TaskSpec, runner: Runner) -> Result<TaskRecord, EngineError> {
        if self.inner.shutdown.is_cancelled() {
            return Err(EngineError::ShuttingDown);
        }
        let ttl = self.inner.policy.resolve_ttl(&spec.task_field)?;
        let task_id = new_task_id();
        let TaskSpec {
            requester,
            method,
            params,
            origin,
            classify,
            ..
        } = spec;
        let tool = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // The stored text is the only copy of the params the engine keeps: the value goes
        // now (the runner has what it needs).
        let request = params.to_string();
        drop(params);
        let new = NewTask {
            task_id: task_id.clone(),
            owner: requester.principal.clone(),
            quota_key: requester.quota_key(),
            created_at_ms: self.now(),
            ttl_ms: ttl,
            poll_interval_ms: Some(self.inner.policy.poll_interval_ms),
            method,
            request,
            executor: Some(self.inner.instance.clone()),
            status_message: None,
        };
        let rec = self
            .inner
            .store
            .create(new, &self.inner.policy.limits())
            .await?;
        tracing::info!(
            target: AUDIT_TARGET,
            task_id = %task_id,
            method = %rec.method,
            tool = tool.as_deref(),
            principal = requester.principal.as_deref(),
            ttl = ?ttl,
            "task created"
        );
        self.launch(task_id, requester, origin, classify, runner);
        Ok(rec)
    }

    /// Run `runner` for the stored task `task_id` in the background, until it ends or the
    /// task is cancelled or expires.
    fn launch(
        &self,
        task_id: String,
        answerer: Requester,
        origin: Arc<dyn RequestorChannel>,
        classify: Classifier,
        runner: Runner,
    ) {
        let task = Arc::new(RunningTask {
            task_id: task_id.clone(),
            cancel: CancellationToken::new(),
            origin,
            answerer: Mutex::new(answerer),
            input: Mutex::new(InputState::default()),
            input_changed: Notify::new(),
            status_lock: tokio::sync::Mutex::new(()),
        });
        self.inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(task_id.clone(), Arc::clone(&task));
        let channel: Arc<dyn RequestorChannel> = Arc::new(TaskChannel {
            engine: self.clone(),
            task: Arc::clone(&task),
        });
        let run = TaskRun {
            task_id: task_id.clone(),
            cancel: task.cancel.clone(),
            channel,
        };
        let fut = runner(run);
        let engine = self.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                () = task.cancel.cancelled() => None,
                r = fut => Some(r),
            };
            if let Some(outcome) = outcome {
                engine.finish(&task.task_id, outcome, classify).await;
            }
            engine.stop_local(&task.task_id);
        });
    }

    async fn finish(
        &self,
        task_id: &str,
        outcome: Result<Value, ErrorObject>,
        classify: Classifier,
    ) {
        let (to, message, stored) = match &outcome {
            Ok(v) => {
                let (status, message) = classify(v);
                (status, message.map(bounded_message), Outcome::result(v))
            }
            Err(e) => (
                TaskStatus::Failed,
                Some(bounded_message(format!(
                    "Request failed: {} ({})",
                    e.message, e.code
                ))),
                Outcome::error(e),
            ),
        };
        drop(outcome);
        let t = Transition {
            task_id: task_id.to_owned(),
            to,
            status_message: message,
            outcome: Some(stored),
            at_ms: self.now(),
        };
        let stored = match self.store_outcome(t).await {
            Ok(r) => Some(r),
            Err(e) => {
                // A task that cannot be finished would stay `working` (its lease is ours,
                // so no sweep fails it) and its waiters would block until its TTL: record
                // the failure itself, once the store takes it.
                let err =
                    ErrorObject::internal(format!("The task's result could not be stored: {e}"));
                tracing::error!(task_id = %task_id, error = %e, "could not store the outcome of a task; storing its failure instead");
                self.store_failure(task_id, &err).await
            }
        };
        match stored {
            Some(TransitionResult::Applied(rec)) => {
                audit_finished(&rec);
                self.announce(&rec).await;
            }
            Some(TransitionResult::Rejected(rec)) => {
                // Spec: "Once a task is cancelled, it MUST remain in cancelled status even if
                // execution continues to completion or fails." A late outcome is dropped.
                tracing::debug!(task_id = %task_id, status = %rec.status, "late outcome dropped");
            }
            Some(TransitionResult::Missing) => {
                tracing::debug!(task_id = %task_id, "outcome of a deleted task dropped")
            }
            None => {}
        }
    }

    /// Store a terminal transition within the policy's byte limits, retrying with backoff
    /// while the store fails, for up to [`Policy::outcome_retry_ms`]. The last error when
    /// it never succeeded.
    async fn store_outcome(&self, t: Transition) -> Result<TransitionResult, crate::StoreError> {
        let limits = self.inner.policy.limits();
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(self.inner.policy.outcome_retry_ms);
        let mut delays = outcome_retries();
        loop {
            match self.inner.store.transition_within(t.clone(), &limits).await {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let now = tokio::time::Instant::now();
                    if now >= deadline || self.inner.shutdown.is_cancelled() {
                        return Err(e);
                    }
                    let delay = next_delay(&mut delays);
                    tracing::warn!(task_id = %t.task_id, error = %e, retry_in = ?delay, "could not store the outcome of a task; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(delay.min(deadline - now)) => {}
                        () = self.inner.shutdown.cancelled() => return Err(e),
                    }
                }
            }
        }
    }

    /// Fail `task_id` with `err`, retrying every few seconds until the store takes it (the
    /// lease stays ours meanwhile, so no sweep fails the task in our place) or the engine
    /// shuts down (then the next start's lease check fails it).
    async fn store_failure(&self, task_id: &str, err: &ErrorObject) -> Option<TransitionResult> {
        let mut delays = outcome_retries();
        loop {
            let t = failed_transition(task_id, err, self.now());
            match self.inner.store.transition(t).await {
                Ok(r) => return Some(r),
                Err(e) => {
                    let delay = next_delay(&mut delays);
                    tracing::warn!(task_id = %task_id, error = %e, retry_in = ?delay, "could not store the failure of a task; retrying");
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = self.inner.shutdown.cancelled() => return None,
                    }
                }
            }
        }
    }

    async fn visible(&self, task_id: &str, who: &Requester) -> Result<TaskRecord, EngineError> {
        let rec = self.inner.store.get(task_id).await?;
        self.seen_by(rec, who)
    }

    /// [`Self::visible`] without the request and outcome (see [`TaskStore::get_summary`]).
    async fn visible_summary(
        &self,
        task_id: &str,
        who: &Requester,
    ) -> Result<TaskRecord, EngineError> {
        let rec = self.inner.store.get_summary(task_id).await?;
        self.seen_by(rec, who)
    }

    /// `rec` if `who` may see it and it has not expired.
    fn seen_by(&self, rec: Option<TaskRecord>, who: &Requester) -> Result<TaskRecord, EngineError> {
        let rec = rec
            .filter(|r| who.can_see(r))
            .ok_or(EngineError::NotFound)?;
        if rec.is_expired(self.now()) {
            return Err(EngineError::Expired);
        }
        Ok(rec)
    }

    /// `tasks/get`.
    ///
    /// # Errors
    /// Not found (also for a foreign task), expired, or a store failure.
    pub async fn get(&self, task_id: &str, who: &Requester) -> Result<Task, EngineError> {
        Ok(self.visible_summary(task_id, who).await?.to_wire())
    }

    /// `tasks/cancel`.
    ///
    /// Spec: "Receivers MUST reject cancellation requests for tasks already in a terminal
    /// status with error code -32602"; "Upon receiving a valid cancellation request,
    /// receivers SHOULD attempt to stop the task's execution and MUST transition the task
    /// to cancelled status before sending the response."
    ///
    /// # Errors
    /// Not found, expired, already terminal, or a store failure.
    pub async fn cancel(&self, task_id: &str, who: &Requester) -> Result<Task, EngineError> {
        let rec = self.visible_summary(task_id, who).await?;
        if rec.status.is_terminal() {
            return Err(EngineError::AlreadyTerminal(rec.status));
        }
        let t = Transition {
            task_id: task_id.to_owned(),
            to: TaskStatus::Cancelled,
            status_message: Some(CANCELLED_MESSAGE.to_owned()),
            outcome: Some(Outcome::error(&cancelled_outcome(task_id))),
            at_ms: self.now(),
        };
        match self.inner.store.transition(t).await? {
            TransitionResult::Applied(rec) => {
                tracing::info!(
                    target: AUDIT_TARGET,
                    task_id = %task_id,
                    method = %rec.method,
                    principal = who.principal.as_deref(),
                    "task cancelled"
                );
                self.announce(&rec).await;
                self.stop_local(task_id);
                Ok(rec.to_wire())
            }
            TransitionResult::Rejected(rec) => Err(EngineError::AlreadyTerminal(rec.status)),
            TransitionResult::Missing => Err(EngineError::NotFound),
        }
    }

    /// `tasks/list`: one page.
    ///
    /// Spec: "If a task is retrievable via `tasks/get` for a requestor, it MUST be
    /// retrievable via `tasks/list` for that requestor." and "Receivers MUST include a
    /// `nextCursor` in the response if more tasks are available."
    ///
    /// # Errors
    /// -32602 for a bad cursor; a store failure.
    pub async fn list(
        &self,
        cursor: Option<&str>,
        who: &Requester,
    ) -> Result<(Vec<Task>, Option<String>), EngineError> {
        let scope = who
            .list_scope()
            .ok_or_else(|| EngineError::InvalidParams("tasks/list is not available".into()))?;
        let codec = self.cursor().await?;
        let after = match cursor {
            None => None,
            Some(c) => Some(
                codec
                    .decode(c, &scope)
                    .ok_or_else(|| EngineError::InvalidParams("Invalid cursor".into()))?,
            ),
        };
        let size = self.inner.policy.page_size.max(1);
        let mut page = self.inner.store.list(&scope, after, size + 1).await?;
        let next = if page.len() > size {
            page.truncate(size);
            page.last().map(|r| codec.encode(r.seq, &scope))
        } else {
            None
        };
        let now = self.now();
        Ok((
            page.iter()
                .filter(|r| !r.is_expired(now))
                .map(TaskRecord::to_wire)
                .collect(),
            next,
        ))
    }

    /// `tasks/result`: block until the task is terminal, relaying its pending requests on
    /// `sender` meanwhile, then return the stored outcome.
    ///
    /// Spec: "When a receiver receives a `tasks/result` request for a task in any other
    /// non-terminal status (`working` or `input_required`), it MUST block the response
    /// until the task reaches a terminal status." The wait wakes on the store's change
    /// signal; nothing polls.
    ///
    /// Spec: "When the requestor encounters the `input_required` status, it SHOULD
    /// preemptively call `tasks/result`." and "In the Streamable HTTP (SSE) transport,
    /// clients MAY disconnect from an SSE stream opened by the server in response to a
    /// `tasks/result` request at any time." Every new `tasks/result` of the requester the
    /// task belongs to gets every pending request (same JSON-RPC id), also those already
    /// sent on an older stream of its own that the client may have dropped (not those on
    /// the connection a stdio peer shares: they arrived); requests that come up later go
    /// on the newest. Another requester's `tasks/result` (one that can see the task
    /// without owning it) only waits for the outcome: it gets no requests. Without
    /// `sender` (a `tasks/result` answered as JSON only) the requests stay queued for the
    /// next stream.
    ///
    /// # Errors
    /// The task's JSON-RPC error outcome (`Ok(Err(..))` never: the stored error is the
    /// `Err`), or not found / expired / store failures.
    pub async fn result(
        &self,
        task_id: &str,
        who: &Requester,
        sender: Option<Arc<dyn RequestSender>>,
    ) -> Result<Result<Value, ErrorObject>, EngineError> {
        let mut changes = self.inner.store.subscribe(task_id);
        let mut rec = self.visible(task_id, who).await?;
        let mut deliverer: Option<Deliverer> = None;
        loop {
            if rec.status.is_terminal() {
                tracing::info!(
                    target: AUDIT_TARGET,
                    task_id = %task_id,
                    method = %rec.method,
                    principal = who.principal.as_deref(),
                    status = %rec.status,
                    "task result retrieved"
                );
                let Some(outcome) = &rec.outcome else {
                    return Err(EngineError::Store(crate::StoreError::Corrupt(format!(
                        "terminal task {task_id} has no outcome"
                    ))));
                };
                return Ok(outcome.decode().map(|mut v| {
                    // Spec: "The tasks/result operation MUST include this metadata in its
                    // response, as the result structure itself does not contain the task ID."
                    set_related_task(&mut v, task_id);
                    v
                }));
            }
            let running = self.running(task_id);
            let notified = running.as_ref().map(|t| {
                let n = t.input_changed.notified();
                (Arc::clone(t), n)
            });
            let mut notified = notified.map(|(t, n)| (t, Box::pin(n)));
            if let (Some((task, n)), Some(sender)) = (notified.as_mut(), sender.as_ref()) {
                n.as_mut().enable();
                if deliverer.is_none() && task.may_answer(who, true) {
                    deliverer = Some(Deliverer::register(Arc::clone(task), Arc::clone(sender)));
                }
                if let Some(d) = deliverer.as_mut() {
                    d.deliver().await;
                }
            }
            let expires = rec.expires_at_ms();
            tokio::select! {
                r = changes.changed() => {
                    if r.is_err() {
                        return Err(EngineError::ShuttingDown);
                    }
                }
                () = async { match notified { Some((_, n)) => n.await, None => std::future::pending().await } } => {}
            }
            rec = match self.inner.store.get(task_id).await? {
                Some(r) => r,
                None if expires.is_some_and(|e| self.now() >= e) => {
                    return Err(EngineError::Expired);
                }
                None => return Err(EngineError::NotFound),
            };
            if rec.is_expired(self.now()) {
                return Err(EngineError::Expired);
            }
        }
    }

    /// Route the answer `from` a requester to a request the engine sent (by JSON-RPC
    /// id). Returns `false` when the id is not one of ours (or its task is gone: a late
    /// answer is ignored), and when `from` is not the requester the task belongs to: such
    /// an answer is ignored (the request stays pending), logged at debug and counted in
    /// [`Self::failed_lookups`].
    ///
    /// Issue 15: an answer must come from the requester the task belongs to (its
    /// principal with authentication, its session without); the ids carry 122 random bits
    /// besides.
    pub fn deliver_answer(
        &self,
        id: &RequestId,
        from: &Requester,
        outcome: Result<Value, ErrorObject>,
    ) -> bool {
        let pending = {
            let mut answers = self
                .inner
                .answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(p) = answers.get(id) else {
                return false;
            };
            let Some(task) = p.task.upgrade() else {
                answers.remove(id);
                return false;
            };
            if !task.may_answer(from, false) {
                self.inner.failed_lookups.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    task_id = %task.task_id,
                    principal = ?from.principal,
                    "an answer to a task's request from another requester was ignored"
                );
                return false;
            }
            answers.remove(id)
        };
        match pending {
            Some(p) => {
                let _ = p.tx.send(outcome);
                true
            }
            None => false,
        }
    }

    /// How many answers to relayed requests were refused because they came from another
    /// requester than the one the task belongs to (a metric of probing).
    pub fn failed_lookups(&self) -> u64 {
        self.inner.failed_lookups.load(Ordering::Relaxed)
    }

    /// Whether `id` names a request the engine is waiting on.
    pub fn is_engine_request(id: &RequestId) -> bool {
        matches!(id, RequestId::String(s) if s.starts_with(REQUEST_ID_PREFIX))
    }
}

const REQUEST_ID_PREFIX: &str = "mcp-tasks:";

/// The JSON-RPC id of the `n`th request task `task_id` relays:
/// `mcp-tasks:<taskId>:<n>:<32 hex digits>`, the last part a UUID v4 (122 bits from the
/// OS CSPRNG), so that nobody can guess an id from another.
fn relayed_request_id(task_id: &str, n: u64) -> RequestId {
    RequestId::String(format!(
        "{REQUEST_ID_PREFIX}{task_id}:{n}:{}",
        uuid::Uuid::new_v4().simple()
    ))
}

/// One open `tasks/result` that carries a task's pending requests.
struct Deliverer {
    task: Arc<RunningTask>,
    generation: u64,
    sender: Arc<dyn RequestSender>,
    /// Whether it has had its first delivery (everything pending).
    started: bool,
}

impl Deliverer {
    fn register(task: Arc<RunningTask>, sender: Arc<dyn RequestSender>) -> Self {
        let generation = {
            let mut st = task.input();
            st.next_gen += 1;
            let g = st.next_gen;
            st.deliverers.push(OpenDeliverer {
                generation: g,
                sender: Arc::clone(&sender),
            });
            g
        };
        Self {
            task,
            generation,
            sender,
            started: false,
        }
    }

    /// Send what this stream should carry and has not carried yet. The first time: every
    /// pending request (but not, on a shared connection, what is in flight on another
    /// open `tasks/result` of it). Later, while it is the newest: what no open stream
    /// carries.
    async fn deliver(&mut self) {
        let first = !self.started;
        self.started = true;
        let own = self.sender.is_own_stream();
        let to_send: Vec<(RequestId, String, Value)> = {
            let mut st = self.task.input();
            let newest = st.deliverers.last().map(|d| d.generation) == Some(self.generation);
            if !first && !newest {
                return;
            }
            let carried: Vec<Vec<bool>> = st
                .queue
                .iter()
                .map(|p| p.sent_on.iter().map(|g| st.is_live_shared(*g)).collect())
                .collect();
            let generation = self.generation;
            st.queue
                .iter_mut()
                .zip(carried)
                .filter(|(p, shared)| {
                    !p.sent_on.contains(&generation)
                        && if first {
                            own || !shared.iter().any(|s| *s)
                        } else {
                            p.sent_on.is_empty()
                        }
                })
                .map(|(p, _)| {
                    p.sent_on.push(generation);
                    (p.id.clone(), p.method.clone(), p.params.clone())
                })
                .collect()
        };
        for (id, method, params) in to_send {
            if let Err(e) = self.sender.send_request(id.clone(), &method, params).await {
                tracing::debug!(error = %e, "could not relay a task request; it stays queued");
                let mut st = self.task.input();
                if let Some(p) = st.queue.iter_mut().find(|p| p.id == id) {
                    p.sent_on.retain(|g| *g != self.generation);
                }
            }
        }
    }
}

impl Drop for Deliverer {
    fn drop(&mut self) {
        let mut st = self.task.input();
        st.deliverers.retain(|d| d.generation != self.generation);
        for p in &mut st.queue {
            // Unanswered: send again, with the same id, on the next tasks/result.
            p.sent_on.retain(|g| *g != self.generation);
        }
        drop(st);
        self.task.input_changed.notify_waiters();
    }
}

/// The requestor as seen from inside a running task: requests are queued, the task moves
/// to `input_required`, and the requests travel on the requestor's `tasks/result`.
struct TaskChannel {
    engine: TaskEngine,
    task: Arc<RunningTask>,
}

/// Removes a pending request when its waiter goes away (answered, cancelled, dropped).
struct PendingGuard<'a> {
    engine: &'a TaskEngine,
    task: &'a RunningTask,
    id: RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.task.input().queue.retain(|p| p.id != self.id);
        self.engine
            .inner
            .answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl TaskChannel {
    async fn set_status(&self, to: TaskStatus, message: Option<String>) {
        let t = Transition {
            task_id: self.task.task_id.clone(),
            to,
            status_message: message,
            outcome: None,
            at_ms: self.engine.now(),
        };
        match self.engine.inner.store.transition(t).await {
            Ok(TransitionResult::Applied(rec)) => self.engine.announce(&rec).await,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(task_id = %self.task.task_id, error = %e, "status change not stored")
            }
        }
    }
}

#[async_trait]
impl RequestorChannel for TaskChannel {
    /// Spec: "When a task receiver has messages for the requestor that are necessary to
    /// complete the task, the receiver SHOULD move the task to the `input_required`
    /// status." and "The receiver MUST include the `io.modelcontextprotocol/related-task`
    /// metadata in the request to associate it with the task."
    async fn request(&self, method: &str, mut params: Value) -> Result<Value, ErrorObject> {
        if !params.is_object() {
            params = json!({});
        }
        set_related_task(&mut params, &self.task.task_id);
        let (tx, rx) = oneshot::channel();
        let guard = {
            let _lock = self.task.status_lock.lock().await;
            let id = {
                let mut st = self.task.input();
                st.next_request += 1;
                let id = relayed_request_id(&self.task.task_id, st.next_request);
                self.engine
                    .inner
                    .answers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(
                        id.clone(),
                        PendingAnswer {
                            task: Arc::downgrade(&self.task),
                            tx,
                        },
                    );
                st.queue.push(PendingInput {
                    id: id.clone(),
                    method: method.to_owned(),
                    params,
                    sent_on: Vec::new(),
                });
                id
            };
            let guard = PendingGuard {
                engine: &self.engine,
                task: &self.task,
                id,
            };
            self.set_status(
                TaskStatus::InputRequired,
                Some(format!("Waiting for the requestor to answer {method}")),
            )
            .await;
            self.task.input_changed.notify_waiters();
            guard
        };
        let answer = tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(ErrorObject::internal("the task ended before the request was answered"))),
            () = self.task.cancel.cancelled() => Err(ErrorObject::new(codes::TASK_CANCELLED, "the task was cancelled")),
        };
        {
            let _lock = self.task.status_lock.lock().await;
            drop(guard);
            let empty = self.task.input().queue.is_empty();
            // Spec: "When the receiver receives all required input, the task SHOULD
            // transition out of input_required status (typically back to working)."
            if empty && !self.task.cancel.is_cancelled() {
                self.set_status(TaskStatus::Working, None).await;
            }
        }
        answer
    }

    async fn notify(&self, method: &str, mut params: Value) {
        if !params.is_object() {
            params = json!({});
        }
        set_related_task(&mut params, &self.task.task_id);
        self.task.notify_requestor(method, params).await;
    }
}
