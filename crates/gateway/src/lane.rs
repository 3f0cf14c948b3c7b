//! A lane: the supervised upstream connection of one downstream session.
//!
//! The lane starts the upstream when its session initializes, initializes it with the
//! session's own client capabilities, keeps its tool list, routes what the upstream sends
//! to the call it belongs to, and restarts the upstream with backoff when it dies. It
//! lives while its session or any call it runs needs it ([`Lease`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::meta::{progress_token_key as token_key, related_task, strip_related_task};
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::{Peer, Route};
use mcp_tasks_server::ToolContext;
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::backoff;
use crate::conn::{CallError, Conn, ConnShared, UpstreamHandler};
use crate::connect::{Connector, UpstreamSession};
use crate::error::unavailable;
use crate::resume::{Note, Notes};
use crate::tools::ToolSet;

/// How long `initialize` (downstream) waits for the upstream's first start.
pub(crate) const FIRST_START_WAIT: Duration = Duration::from_secs(30);
/// How long one upstream `initialize` may take.
const INIT_TIMEOUT: Duration = Duration::from_secs(30);
/// An upstream that stayed up this long restarts from the smallest delay when it dies.
const STABLE_AFTER: Duration = Duration::from_secs(30);
/// How many `tools/list` pages are read at most.
const MAX_TOOL_PAGES: usize = 100;
/// How many notifications from the upstream are kept while the downstream session is not
/// ready for them (before its `notifications/initialized`); beyond it the oldest go.
pub(crate) const EARLY_NOTIFICATIONS: usize = 64;
/// How many bytes (as JSON) of such notifications are kept at most.
pub(crate) const EARLY_NOTIFICATION_BYTES: usize = 1024 * 1024;
/// How many requests from the upstream may wait for the downstream session to be ready;
/// beyond it they are answered with an error at once.
pub(crate) const EARLY_REQUESTS: usize = 64;

/// The bounds shared by all the lanes of a gateway.
#[derive(Debug)]
pub(crate) struct Limits {
    /// One permit per running lane (one upstream connection, for a command a process).
    upstreams: Arc<Semaphore>,
    max_upstreams: usize,
    /// How long one call to the upstream may take.
    pub call_timeout: Option<Duration>,
}

impl Limits {
    /// At most `max_upstreams` upstream connections at once; calls bounded by
    /// `call_timeout`.
    pub(crate) fn new(max_upstreams: usize, call_timeout: Option<Duration>) -> Self {
        Self {
            upstreams: Arc::new(Semaphore::new(max_upstreams.min(Semaphore::MAX_PERMITS))),
            max_upstreams,
            call_timeout,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::new(crate::config::DEFAULT_MAX_UPSTREAMS, None)
    }
}

/// Notifications from the upstream kept until the downstream session is ready: bounded
/// in number and bytes, the oldest dropped (with one warning per lane).
#[derive(Default)]
struct Early {
    /// `None` once the downstream is ready and everything kept was passed on.
    queue: Option<std::collections::VecDeque<(String, Option<Value>, usize)>>,
    bytes: usize,
    dropped: u64,
}

/// The size of `v` as JSON, without building the text.
fn json_len(v: Option<&Value>) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, &v);
    c.0
}

/// The state of a lane's connection.
#[derive(Clone, Debug)]
pub(crate) enum Link {
    /// Not started yet, or starting.
    Starting,
    /// Connected and initialized.
    Up(Arc<Conn>),
    /// Down (died or could not start), with why; a restart is scheduled.
    Down(String),
    /// The lane has ended.
    Closed,
}

#[derive(Default)]
struct Routes {
    next: u64,
    /// `progressToken` (as JSON text) -> the call it belongs to (`None`: a forwarded
    /// request, whose progress goes to the client as it is).
    progress: HashMap<String, (u64, Option<ToolContext>)>,
    /// Upstream task id -> the downstream call running it.
    tasks: HashMap<String, (u64, ToolContext)>,
    /// Plain upstream calls in flight.
    calls: Vec<(u64, ToolContext)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The lane's state, shared by its session, its calls, its supervisor and its
/// connections' handlers.
pub(crate) struct LaneInner {
    connector: Arc<dyn Connector>,
    overrides: Arc<std::collections::BTreeMap<String, TaskSupport>>,
    notes: Option<Arc<Notes>>,
    limits: Arc<Limits>,
    init_params: Mutex<Value>,
    /// A session of the upstream to take up again with the first connection (a task
    /// resumed after a restart).
    reattach: Mutex<Option<UpstreamSession>>,
    link: watch::Sender<Link>,
    downstream: watch::Sender<Option<Peer>>,
    /// Notifications for the downstream that came before it was ready.
    early: Mutex<Early>,
    /// A `tools/list_changed` is being handled (`false`), and another came meanwhile
    /// (`true`): one refresh at a time, whatever the upstream sends.
    refreshing: Mutex<Option<bool>>,
    /// One permit per request from the upstream waiting for the downstream to be ready.
    early_requests: Semaphore,
    tools: RwLock<Arc<ToolSet>>,
    routes: Mutex<Routes>,
    /// What every [`Lease`] shares: the lane ends when the last one goes.
    held: OnceLock<Weak<Held>>,
    started: std::sync::Once,
    generation: AtomicU64,
    shutdown: CancellationToken,
    me: Weak<LaneInner>,
}

impl std::fmt::Debug for LaneInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("upstream", &self.connector.describe())
            .finish_non_exhaustive()
    }
}

/// Keeps a lane alive; the lane (and its upstream process) ends when the last lease is
/// dropped.
pub(crate) struct Lease(Arc<Held>);

/// Shared by the leases of a lane (counted by its `Arc`): dropping it ends the lane.
struct Held(Arc<LaneInner>);

impl Lease {
    /// The lane held.
    pub(crate) fn lane(&self) -> &Arc<LaneInner> {
        &self.0.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        tracing::debug!(upstream = %self.0.connector.describe(), "lane released");
        self.0.shutdown.cancel();
    }
}

/// Removes a call's routes when the call ends (or is dropped).
pub(crate) struct RouteGuard {
    lane: Arc<LaneInner>,
    id: u64,
    linger: bool,
}

impl RouteGuard {
    /// Keep the call's progress route a moment after it ends: over HTTP the upstream's
    /// last progress notifications travel on another stream than its answer and may
    /// arrive after it.
    pub(crate) fn linger(&mut self) {
        self.linger = true;
    }
}

fn remove_routes(lane: &LaneInner, id: u64) {
    let mut r = lock(&lane.routes);
    r.progress.retain(|_, (i, _)| *i != id);
    r.tasks.retain(|_, (i, _)| *i != id);
    r.calls.retain(|(i, _)| *i != id);
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if self.linger
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let lane = Arc::clone(&self.lane);
            let id = self.id;
            rt.spawn(async move {
                tokio::time::sleep(ROUTE_LINGER).await;
                remove_routes(&lane, id);
            });
            return;
        }
        remove_routes(&self.lane, self.id);
    }
}

/// How long a finished call's progress route stays (see [`RouteGuard::linger`]).
const ROUTE_LINGER: Duration = Duration::from_millis(1000);

impl LaneInner {
    /// A new lane (not started) and the first lease on it.
    pub(crate) fn open_lane(
        connector: Arc<dyn Connector>,
        overrides: Arc<std::collections::BTreeMap<String, TaskSupport>>,
        notes: Option<Arc<Notes>>,
        limits: Arc<Limits>,
    ) -> Lease {
        let lane = Arc::new_cyclic(|me| Self {
            connector,
            overrides,
            notes,
            limits,
            init_params: Mutex::new(Value::Null),
            reattach: Mutex::new(None),
            link: watch::channel(Link::Starting).0,
            downstream: watch::channel(None).0,
            early: Mutex::new(Early {
                queue: Some(std::collections::VecDeque::new()),
                ..Early::default()
            }),
            refreshing: Mutex::new(None),
            early_requests: Semaphore::new(EARLY_REQUESTS),
            tools: RwLock::new(Arc::new(ToolSet::default())),
            routes: Mutex::new(Routes::default()),
            held: OnceLock::new(),
            started: std::sync::Once::new(),
            generation: AtomicU64::new(0),
            shutdown: CancellationToken::new(),
            me: me.clone(),
        });
        let held = Arc::new(Held(Arc::clone(&lane)));
        let _ = lane.held.set(Arc::downgrade(&held));
        Lease(held)
    }

    /// Another lease, unless the lane has already ended.
    pub(crate) fn lease(self: &Arc<Self>) -> Option<Lease> {
        self.held.get()?.upgrade().map(Lease)
    }

    /// The upstream, for logs.
    pub(crate) fn describe(&self) -> String {
        self.connector.describe()
    }

    /// The connection state now.
    pub(crate) fn link(&self) -> Link {
        self.link.borrow().clone()
    }

    /// The live connection, if up.
    pub(crate) fn conn(&self) -> Option<Arc<Conn>> {
        match &*self.link.borrow() {
            Link::Up(c) => Some(Arc::clone(c)),
            _ => None,
        }
    }

    /// The -32603 error of a call made while the upstream is not up.
    pub(crate) fn unavailable_now(&self) -> ErrorObject {
        match self.link() {
            Link::Down(why) => unavailable(format!("{why}; restarting")),
            Link::Starting => unavailable("the upstream server is starting"),
            Link::Closed => unavailable("the gateway session has ended"),
            Link::Up(_) => unavailable("the upstream connection is being replaced"),
        }
    }

    /// Why a call on `conn` got no answer: the transport's explanation while the
    /// connection lives on (HTTP), else why the connection ended (waiting briefly for the
    /// supervisor to learn it).
    pub(crate) async fn lost_reason(&self, conn: &Conn, detail: Option<&str>) -> String {
        // A request of a connection whose input ended fails at once, before it closes.
        if !conn.peer.is_input_ended() {
            return detail.map_or_else(
                || "the upstream connection failed".to_owned(),
                |d| format!("the upstream connection failed: {d}"),
            );
        }
        let mut rx = self.link.subscribe();
        let wait = async {
            loop {
                {
                    let link = rx.borrow_and_update();
                    match &*link {
                        Link::Down(why) => return why.clone(),
                        Link::Up(c) if c.generation != conn.generation => {
                            return "the upstream restarted".to_owned();
                        }
                        Link::Closed => return "the gateway session ended".to_owned(),
                        _ => {}
                    }
                }
                if rx.changed().await.is_err() {
                    return "the gateway session ended".to_owned();
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(2), wait)
            .await
            .unwrap_or_else(|_| "the upstream connection closed".to_owned())
    }

    /// Wait until a connection other than `generation` is up; `None` when the lane ends.
    pub(crate) async fn next_conn(&self, after_generation: u64) -> Option<Arc<Conn>> {
        let mut rx = self.link.subscribe();
        loop {
            {
                let link = rx.borrow_and_update();
                match &*link {
                    Link::Up(c) if c.generation != after_generation => return Some(Arc::clone(c)),
                    Link::Closed => return None,
                    _ => {}
                }
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    }

    /// The tools of the current (or last) connection.
    pub(crate) fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(
            &self
                .tools
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Make the first connection take up `session` again instead of starting a new one
    /// (where the upstream has sessions that can be; else a new one is started).
    pub(crate) fn reattach_first(&self, session: Option<UpstreamSession>) {
        *lock(&self.reattach) = session;
    }

    /// Set what `initialize` sends upstream, start the supervisor (once), and wait for the
    /// first start to succeed or fail (at most `wait`).
    ///
    /// # Errors
    /// When the gateway already runs its maximum of upstream connections
    /// (`--max-upstreams`): the lane is closed, nothing was started.
    pub(crate) async fn start(
        &self,
        init_params: Value,
        wait: Duration,
    ) -> Result<(), ErrorObject> {
        *lock(&self.init_params) = init_params;
        let Some(me) = self.me.upgrade() else {
            return Err(unavailable("the gateway session has ended"));
        };
        let mut refused = false;
        self.started.call_once(
            || match Arc::clone(&self.limits.upstreams).try_acquire_owned() {
                Ok(permit) => {
                    tokio::spawn(supervise(me, permit));
                }
                Err(_) => refused = true,
            },
        );
        if refused {
            self.link.send_replace(Link::Closed);
            tracing::warn!(upstream = %self.describe(), max = self.limits.max_upstreams, "session refused: the gateway runs its maximum of upstream connections");
            return Err(ErrorObject::new(
                mcp_tasks_proto::codes::INTERNAL_ERROR,
                format!(
                    "the gateway already runs its maximum of {} upstream connections (--max-upstreams); try again when a session has ended",
                    self.limits.max_upstreams
                ),
            ));
        }
        let mut rx = self.link.subscribe();
        let first = async {
            loop {
                if !matches!(*rx.borrow_and_update(), Link::Starting) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(wait, first).await;
        Ok(())
    }

    /// The downstream session is ready for messages (it sent `notifications/initialized`):
    /// the notifications kept until now are passed on (in order, before any later one).
    pub(crate) fn set_downstream(&self, peer: Option<Peer>) {
        let ready = peer.is_some();
        self.downstream.send_replace(peer);
        if !ready || lock(&self.early).queue.is_none() {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        tokio::spawn(async move { me.flush_early().await });
    }

    /// Pass the kept notifications on; the queue goes (`None`) only once it is empty, so
    /// that a notification arriving meanwhile queues behind them.
    async fn flush_early(&self) {
        loop {
            let Some(peer) = self.downstream.borrow().clone() else {
                return;
            };
            let batch: Vec<_> = {
                let mut early = lock(&self.early);
                let Some(queue) = early.queue.as_mut() else {
                    return;
                };
                if queue.is_empty() {
                    early.queue = None;
                    early.bytes = 0;
                    return;
                }
                let batch = queue.drain(..).collect();
                early.bytes = 0;
                batch
            };
            for (method, params, _) in batch {
                peer.notify(&method, params, Route::Standalone).await;
            }
        }
    }

    /// Keep a notification for the downstream until it is ready; `false` when it is
    /// ready (the caller sends it).
    fn keep_early(&self, method: &str, params: &mut Option<Value>) -> bool {
        let mut early = lock(&self.early);
        let early = &mut *early;
        let Some(queue) = early.queue.as_mut() else {
            return false;
        };
        let size = method.len() + json_len(params.as_ref());
        queue.push_back((method.to_owned(), params.take(), size));
        early.bytes += size;
        while queue.len() > EARLY_NOTIFICATIONS
            || (early.bytes > EARLY_NOTIFICATION_BYTES && !queue.is_empty())
        {
            let Some((_, _, n)) = queue.pop_front() else {
                break;
            };
            early.bytes -= n;
            if early.dropped == 0 {
                tracing::warn!(upstream = %self.describe(), kept = EARLY_NOTIFICATIONS, bytes = EARLY_NOTIFICATION_BYTES, "the upstream sends notifications before the client is ready; the oldest are dropped");
            }
            early.dropped += 1;
        }
        true
    }

    async fn downstream(&self, wait: Duration) -> Option<Peer> {
        let mut rx = self.downstream.subscribe();
        let found = async {
            loop {
                if let Some(p) = rx.borrow_and_update().clone() {
                    return Some(p);
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        };
        tokio::time::timeout(wait, found).await.ok().flatten()
    }

    /// Register a call's routes: its progress token and, for a plain call, the call
    /// itself (so that a request the upstream sends during it reaches its requestor).
    pub(crate) fn register_call(self: &Arc<Self>, cx: &ToolContext, plain: bool) -> RouteGuard {
        let mut r = lock(&self.routes);
        r.next += 1;
        let id = r.next;
        if let Some(key) = cx.request_params().and_then(token_key) {
            r.progress.insert(key, (id, Some(cx.clone())));
        }
        if plain {
            r.calls.push((id, cx.clone()));
        }
        RouteGuard {
            lane: Arc::clone(self),
            id,
            linger: false,
        }
    }

    /// Register the progress token of a forwarded request, so that its progress reaches
    /// the client; progress for no live request is dropped (a cancelled call's tool may
    /// go on reporting).
    fn register_forwarded(self: &Arc<Self>, params: Option<&Value>) -> Option<RouteGuard> {
        let key = params.and_then(token_key)?;
        let mut r = lock(&self.routes);
        r.next += 1;
        let id = r.next;
        r.progress.insert(key, (id, None));
        Some(RouteGuard {
            lane: Arc::clone(self),
            id,
            linger: false,
        })
    }

    /// Note durably that our task `task_id` is backed by `upstream_task_id`, created on
    /// `conn` (whose session is noted too), so that a restarted gateway follows it again.
    pub(crate) fn note_task(&self, task_id: &str, upstream_task_id: &str, conn: &Conn) {
        if let Some(notes) = &self.notes {
            notes.put(
                task_id,
                &Note {
                    upstream_task_id: upstream_task_id.to_owned(),
                    upstream: self.describe(),
                    init_params: lock(&self.init_params).clone(),
                    upstream_session: conn.upstream_session(),
                },
            );
        }
    }

    /// Forget the note of `task_id` (its upstream task has ended or was cancelled).
    pub(crate) fn forget_task(&self, task_id: &str) {
        if let Some(notes) = &self.notes {
            notes.remove(task_id);
        }
    }

    /// Tie an upstream task id to the call that created it.
    pub(crate) fn register_task(
        &self,
        guard: &RouteGuard,
        upstream_task_id: &str,
        cx: &ToolContext,
    ) {
        lock(&self.routes)
            .tasks
            .insert(upstream_task_id.to_owned(), (guard.id, cx.clone()));
    }

    /// The call a message from the upstream belongs to: by its related-task id, else the
    /// only plain call in flight.
    fn route_of(&self, params: &Value) -> Option<ToolContext> {
        let r = lock(&self.routes);
        if let Some(t) = related_task(params) {
            return r.tasks.get(t).map(|(_, cx)| cx.clone());
        }
        match r.calls.as_slice() {
            [(_, cx)] => Some(cx.clone()),
            _ => None,
        }
    }

    /// A request from the upstream (elicitation, sampling, roots, ping, ...).
    ///
    /// During a call it goes to that call's requestor: as a task, the task moves to
    /// `input_required` and the request travels on `tasks/result` with the downstream
    /// task's related-task `_meta`; the answer comes back here. Otherwise it goes to the
    /// client of the session as it is.
    pub(crate) async fn on_upstream_request(
        &self,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let target = params.as_ref().and_then(|p| self.route_of(p));
        if let Some(cx) = target {
            let mut params = params.unwrap_or_else(|| json!({}));
            strip_related_task(&mut params);
            tracing::debug!(method = %method, task = ?cx.task_id(), "upstream request relayed to its call's requestor");
            return match method.as_str() {
                methods::ELICITATION_CREATE => cx.elicit(params).await,
                methods::SAMPLING_CREATE_MESSAGE => cx.sample(params).await,
                _ => cx.request(&method, params).await,
            };
        }
        let mut params = params;
        if let Some(p) = params.as_mut()
            && related_task(p).is_some()
        {
            strip_related_task(p);
        }
        let ready = self.downstream.borrow().clone();
        let peer = match ready {
            Some(peer) => peer,
            None => {
                // Wait for the client to be ready, but only so many requests at once.
                let Ok(_waiting) = self.early_requests.try_acquire() else {
                    tracing::warn!(method = %method, "an upstream request before the client is ready refused: {EARLY_REQUESTS} already wait");
                    return Err(unavailable(format!(
                        "the client is not ready for requests yet and {EARLY_REQUESTS} already wait"
                    )));
                };
                let Some(peer) = self.downstream(Duration::from_secs(30)).await else {
                    return Err(unavailable("no client is connected to the gateway session"));
                };
                peer
            }
        };
        peer.request(&method, params, Route::Standalone)
            .await
            .map_err(mcp_tasks_rpc::PeerError::into_error_object)
    }

    /// A notification from the upstream: progress goes to its call (with the original
    /// token); `notifications/tasks/status` stays here (upstream task ids mean nothing
    /// downstream); a changed tool list is read again before it is passed on; everything
    /// else is passed on unchanged.
    pub(crate) async fn on_upstream_notification(&self, method: String, params: Option<Value>) {
        match method.as_str() {
            methods::TASK_STATUS | methods::CANCELLED => return,
            methods::PROGRESS => {
                let target = params.as_ref().and_then(|p| {
                    let key = p.get("progressToken").map(Value::to_string)?;
                    lock(&self.routes)
                        .progress
                        .get(&key)
                        .map(|(_, cx)| cx.clone())
                });
                match (target, params.clone()) {
                    (Some(Some(cx)), Some(mut p)) => {
                        strip_related_task(&mut p);
                        cx.notify(&method, p).await;
                        return;
                    }
                    (Some(None), _) => {}
                    _ => {
                        tracing::debug!("progress for no live request dropped");
                        return;
                    }
                }
            }
            TOOLS_LIST_CHANGED => {
                // One refresh at a time: a change announced during one is read by one
                // more, not by a task per notification.
                {
                    let mut r = lock(&self.refreshing);
                    if r.is_some() {
                        *r = Some(true);
                        return;
                    }
                    *r = Some(false);
                }
                if let Some(me) = self.me.upgrade() {
                    tokio::spawn(async move {
                        loop {
                            if let Some(conn) = me.conn() {
                                me.refresh_tools(&conn).await;
                            }
                            me.forward_down(method.clone(), params.clone()).await;
                            let mut r = lock(&me.refreshing);
                            if *r == Some(true) {
                                *r = Some(false);
                                continue;
                            }
                            *r = None;
                            break;
                        }
                    });
                }
                return;
            }
            _ => {
                if let Some(p) = &params
                    && related_task(p).is_some()
                    && let Some(cx) = self.route_of(p)
                {
                    let mut p = p.clone();
                    strip_related_task(&mut p);
                    cx.notify(&method, p).await;
                    return;
                }
            }
        }
        self.forward_down(method, params).await;
    }

    /// Pass a notification to the downstream client unchanged; while the session is not
    /// ready yet it is kept (bounded: [`EARLY_NOTIFICATIONS`], [`EARLY_NOTIFICATION_BYTES`],
    /// the oldest dropped) and passed on once it is.
    async fn forward_down(&self, method: String, mut params: Option<Value>) {
        if self.keep_early(&method, &mut params) {
            return;
        }
        let ready = self.downstream.borrow().clone();
        match ready {
            Some(peer) => peer.notify(&method, params, Route::Standalone).await,
            None => tracing::debug!(method = %method, "notification dropped: the client has gone"),
        }
    }

    /// Forward a downstream request the gateway does not interpret; the upstream's answer
    /// (result or error) comes back unchanged.
    pub(crate) async fn forward_request(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let Some(me) = self.me.upgrade() else {
            return Err(unavailable("the gateway session has ended"));
        };
        let Some(_lease) = me.lease() else {
            return Err(unavailable("the gateway session has ended"));
        };
        let Some(conn) = self.conn() else {
            return Err(self.unavailable_now());
        };
        let _routes = me.register_forwarded(params.as_ref());
        match conn.call(method, params).await {
            Ok(v) => Ok(v),
            Err(CallError::Upstream(e) | CallError::Failed(e)) => Err(e),
            Err(CallError::Lost(d)) => Err(unavailable(format!(
                "{} before answering `{method}`",
                self.lost_reason(&conn, d.as_deref()).await
            ))),
        }
    }

    /// Forward a downstream notification the gateway does not interpret.
    pub(crate) async fn forward_notification(&self, method: &str, params: Option<Value>) {
        if let Some(conn) = self.conn() {
            conn.notify(method, params).await;
        } else {
            tracing::debug!(method, "notification dropped: the upstream is not up");
        }
    }

    async fn refresh_tools(&self, conn: &Conn) -> bool {
        match list_all_tools(conn).await {
            Ok(raw) => {
                let set = ToolSet::build(
                    raw,
                    conn.runs_tool_tasks(),
                    &self.overrides,
                    self.me.clone(),
                );
                let mut g = self
                    .tools
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let changed = g.listing() != set.listing();
                *g = Arc::new(set);
                changed
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not list the upstream's tools");
                false
            }
        }
    }

    /// A connection that takes up the session noted by [`Self::reattach_first`], if there
    /// is one and the upstream can.
    async fn open_reattached(&self) -> Option<(Arc<Conn>, oneshot::Receiver<String>)> {
        let session = lock(&self.reattach).take()?;
        let shared = ConnShared::new(self.me.clone(), self.limits.call_timeout);
        let handler = Arc::new(UpstreamHandler(Arc::clone(&shared)));
        let params = lock(&self.init_params).clone();
        let connected = match self.connector.reattach(handler, &session, &params).await {
            Ok(Some(c)) => c,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "could not take up the upstream session again; starting a new one");
                return None;
            }
        };
        tracing::info!(upstream = %self.describe(), session = %session.session_id, "taking up the upstream session again");
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let conn = Arc::new(Conn::new(
            connected.peer,
            shared,
            generation,
            connected.guard,
            connected.session,
        ));
        conn.set_init_result(session.init_result);
        if let Some(settled) = connected.settled {
            settled.await;
        }
        Some((conn, connected.ended))
    }

    async fn open(&self) -> Result<(Arc<Conn>, oneshot::Receiver<String>), String> {
        if let Some(reattached) = self.open_reattached().await {
            return Ok(reattached);
        }
        let shared = ConnShared::new(self.me.clone(), self.limits.call_timeout);
        let handler = Arc::new(UpstreamHandler(Arc::clone(&shared)));
        let connected = self
            .connector
            .connect(handler)
            .await
            .map_err(|e| e.to_string())?;
        let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let conn = Arc::new(Conn::new(
            connected.peer,
            shared,
            generation,
            connected.guard,
            connected.session,
        ));
        let params = lock(&self.init_params).clone();
        let init = tokio::time::timeout(
            INIT_TIMEOUT,
            conn.call_unbounded(methods::INITIALIZE, Some(params)),
        )
        .await
        .map_err(|_| format!("the upstream did not answer initialize within {INIT_TIMEOUT:?}"))?;
        let init = match init {
            Ok(v) => v,
            Err(CallError::Upstream(e)) => {
                return Err(format!("the upstream refused initialize: {e}"));
            }
            Err(CallError::Failed(e)) => return Err(format!("initialize failed: {e}")),
            Err(CallError::Lost(_)) => {
                let mut ended = connected.ended;
                let why = tokio::time::timeout(Duration::from_secs(1), &mut ended)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_else(|| "the upstream closed the connection".into());
                return Err(format!("{why} during initialize"));
            }
        };
        conn.set_init_result(init);
        conn.notify(methods::INITIALIZED, None).await;
        if let Some(settled) = connected.settled {
            settled.await;
        }
        Ok((conn, connected.ended))
    }

    fn notify_tools_changed(&self) {
        if let Some(me) = self.me.upgrade() {
            tokio::spawn(async move {
                me.forward_down(TOOLS_LIST_CHANGED.to_owned(), None).await;
            });
        }
    }
}

const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

async fn list_all_tools(conn: &Conn) -> Result<Vec<Value>, String> {
    if conn
        .init_result()
        .pointer("/capabilities/tools")
        .is_none_or(Value::is_null)
    {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = cursor.take().map(|c| json!({ "cursor": c }));
        let page = conn
            .call(methods::TOOLS_LIST, params)
            .await
            .map_err(|e| format!("tools/list failed: {e:?}"))?;
        if let Some(tools) = page.get("tools").and_then(Value::as_array) {
            out.extend(
                tools
                    .iter()
                    .filter(|t| t.get("name").is_some_and(Value::is_string))
                    .cloned(),
            );
        }
        match page.get("nextCursor") {
            Some(c @ Value::String(_)) => cursor = Some(c.clone()),
            _ => return Ok(out),
        }
    }
    Ok(out)
}

/// Runs the lane's connections; `permit` is its place among the gateway's
/// `--max-upstreams`, given back when the lane ends (its last connection torn down).
async fn supervise(lane: Arc<LaneInner>, permit: OwnedSemaphorePermit) {
    supervise_conns(&lane).await;
    drop(permit);
}

async fn supervise_conns(lane: &Arc<LaneInner>) {
    let mut attempt: u32 = 0;
    let mut first = true;
    loop {
        if lane.shutdown.is_cancelled() {
            break;
        }
        let opened = tokio::select! {
            r = lane.open() => r,
            () = lane.shutdown.cancelled() => break,
        };
        match opened {
            Ok((conn, ended)) => {
                let up_at = Instant::now();
                let changed = lane.refresh_tools(&conn).await;
                tracing::info!(upstream = %lane.describe(), generation = conn.generation, tools = lane.tools().len(), "upstream connected");
                lane.link.send_replace(Link::Up(Arc::clone(&conn)));
                if changed && !first {
                    lane.notify_tools_changed();
                }
                first = false;
                let why = tokio::select! {
                    r = ended => r.unwrap_or_else(|_| "the upstream connection ended".into()),
                    () = lane.shutdown.cancelled() => {
                        lane.link.send_replace(Link::Closed);
                        drop(conn);
                        return;
                    }
                };
                conn.peer.close();
                tracing::warn!(upstream = %lane.describe(), reason = %why, "upstream connection lost");
                lane.link.send_replace(Link::Down(why));
                drop(conn);
                if up_at.elapsed() >= STABLE_AFTER {
                    attempt = 0;
                }
            }
            Err(why) => {
                tracing::warn!(upstream = %lane.describe(), reason = %why, "upstream failed to start");
                lane.link.send_replace(Link::Down(why));
            }
        }
        attempt = attempt.saturating_add(1);
        let delay = backoff::delay(attempt);
        tracing::info!(upstream = %lane.describe(), delay = ?delay, attempt, "restarting the upstream after a delay");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = lane.shutdown.cancelled() => break,
        }
    }
    lane.link.send_replace(Link::Closed);
}

/// Merge the upstream's `initialize` result into ours: the upstream's capabilities,
/// `serverInfo`, `instructions` and unknown fields pass unchanged, except that the
/// protocol version and `capabilities.tasks` are the gateway's, and `tools.listChanged`
/// is `true` (the tool list changes when the upstream restarts with other tools).
pub(crate) fn merge_initialize(ours: &mut Value, upstream: Option<&Value>) {
    let Some(Value::Object(up)) = upstream else {
        // The upstream is not up: our own result, announcing that the tools will change.
        if let Some(tools) = ours
            .pointer_mut("/capabilities/tools")
            .and_then(Value::as_object_mut)
        {
            tools.insert("listChanged".into(), Value::Bool(true));
        }
        return;
    };
    let mut merged: Map<String, Value> = up.clone();
    merged.insert(
        "protocolVersion".into(),
        ours.get("protocolVersion").cloned().unwrap_or(Value::Null),
    );
    let mut caps = match up.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    match ours.pointer("/capabilities/tasks") {
        Some(t) => {
            caps.insert("tasks".into(), t.clone());
        }
        None => {
            caps.remove("tasks");
        }
    }
    let mut tools = match caps.get("tools") {
        Some(Value::Object(t)) => t.clone(),
        _ => Map::new(),
    };
    tools.insert("listChanged".into(), Value::Bool(true));
    caps.insert("tools".into(), Value::Object(tools));
    merged.insert("capabilities".into(), Value::Object(caps));
    *ours = Value::Object(merged);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_merge_keeps_upstream_fields_and_takes_our_tasks() {
        let mut ours = json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"mcp-tasks","version":"0"}});
        let up = json!({"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true},"logging":{},"tools":{},"x-future":{"a":1},"tasks":{"list":{}}},"serverInfo":{"name":"up","version":"9","title":"Up"},"instructions":"hi","extra":[1]});
        merge_initialize(&mut ours, Some(&up));
        assert_eq!(
            ours,
            json!({"protocolVersion":"2025-11-25","capabilities":{"resources":{"subscribe":true},"logging":{},"tools":{"listChanged":true},"x-future":{"a":1},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"up","version":"9","title":"Up"},"instructions":"hi","extra":[1]})
        );
        let mut plain =
            json!({"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":false}}});
        merge_initialize(&mut plain, Some(&up));
        assert!(plain["capabilities"].get("tasks").is_none());
    }
}
