//! A lane: the supervised upstream connection of one downstream session.
//!
//! The lane starts the upstream when its session initializes, initializes it with the
//! session's own client capabilities, keeps its tool list, routes what the upstream sends
//! to the call it belongs to, and restarts the upstream with backoff when it dies. It
//! lives while its session or any call it runs needs it ([`Lease`]).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::{Mutex, RwLock};
use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_rpc::Peer;
use mcp_tasks_server::ToolContext;
use serde_json::Value;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use mcp_tasks_client::connect::Connector;
use mcp_tasks_client::connection::Connection;

use crate::error::unavailable;
use crate::notes::Notes;
use crate::notes::UpstreamSession;
use crate::tool_set::ToolSet;

mod routing;
mod supervise;
mod waiter;

pub(crate) use routing::RouteGuard;
pub(crate) use supervise::merge_initialize;
pub(crate) use waiter::Waiter;

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
    /// The generation spoken to the upstream (`--upstream-protocol`): a modern
    /// connection opens with `server/discover` and stamps the modern `_meta` on every
    /// request.
    pub upstream_protocol: mcp_tasks_proto::RevisionChoice,
    /// The server's metrics, once it is built: upstream restarts and call latency.
    metrics: OnceLock<mcp_tasks_core::Metrics>,
}

impl Limits {
    /// At most `max_upstreams` upstream connections at once; calls bounded by
    /// `call_timeout`.
    pub(crate) fn new(max_upstreams: usize, call_timeout: Option<Duration>) -> Self {
        Self {
            upstreams: Arc::new(Semaphore::new(max_upstreams.min(Semaphore::MAX_PERMITS))),
            max_upstreams,
            call_timeout,
            upstream_protocol: mcp_tasks_proto::RevisionChoice::Fixed(
                mcp_tasks_proto::Revision::V2025_11_25,
            ),
            metrics: OnceLock::new(),
        }
    }

    /// Count into `metrics` from now on (the first call wins).
    pub(crate) fn set_metrics(&self, metrics: &mcp_tasks_core::Metrics) {
        let _ = self.metrics.set(metrics.clone());
    }

    /// The server's metrics, if set.
    pub(crate) fn metrics(&self) -> Option<&mcp_tasks_core::Metrics> {
        self.metrics.get()
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
    mcp_tasks_proto::json_len(&v)
}

/// The state of a lane's connection.
#[derive(Clone, Debug)]
pub(crate) enum Link {
    /// Not started yet, or starting.
    Starting,
    /// Connected and initialized.
    Up(Arc<Connection>),
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
    /// Every call in flight, plain or running as an upstream task (its task id known
    /// yet or not), with the requests of its upstream connection whose response streams
    /// carry its questions, and the failure it may be given ([`Waiter`]).
    waiting: Vec<(u64, ToolContext, Arc<Waiter>)>,
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
    /// The lane serves stateless (2026-07-28) requests: there is no downstream session to
    /// send anything to outside a call ([`crate::modern`]).
    no_client: std::sync::atomic::AtomicBool,
    tools: RwLock<Arc<ToolSet>>,
    routes: Mutex<Routes>,
    /// What every [`Lease`] shares: the lane ends when the last one goes.
    held: OnceLock<Weak<Held>>,
    started: std::sync::Once,
    generation: AtomicU64,
    shutdown: CancellationToken,
    me: Weak<LaneInner>,
}

mcp_tasks_proto::debug_non_exhaustive!(LaneInner as "Lane", |s| {
    upstream: s.connector.describe(),
});

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

/// The -32603 error of a call on a lane that has ended.
pub(crate) fn ended() -> ErrorObject {
    unavailable("the gateway session has ended")
}

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
            no_client: std::sync::atomic::AtomicBool::new(false),
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
    pub(crate) fn conn(&self) -> Option<Arc<Connection>> {
        match &*self.link.borrow() {
            Link::Up(c) => Some(Arc::clone(c)),
            _ => None,
        }
    }

    /// A lease on this lane and its live connection, held for one call; the -32603 error
    /// to answer with when the session has ended or the upstream is not up.
    pub(crate) fn lease_and_conn(
        self: &Arc<Self>,
    ) -> Result<(Lease, Arc<Connection>), ErrorObject> {
        let lease = self.lease().ok_or_else(ended)?;
        let conn = self.conn().ok_or_else(|| self.unavailable_now())?;
        Ok((lease, conn))
    }

    /// The -32603 error of a call made while the upstream is not up.
    pub(crate) fn unavailable_now(&self) -> ErrorObject {
        match self.link() {
            Link::Down(why) => unavailable(format!("{why}; restarting")),
            Link::Starting => unavailable("the upstream server is starting"),
            Link::Closed => ended(),
            Link::Up(_) => unavailable("the upstream connection is being replaced"),
        }
    }

    /// Why a call on `conn` got no answer: the transport's explanation while the
    /// connection lives on (HTTP), else why the connection ended (waiting briefly for the
    /// supervisor to learn it).
    pub(crate) async fn lost_reason(&self, conn: &Connection, detail: Option<&str>) -> String {
        // A request of a connection whose input ended fails at once, before it closes.
        if !conn.is_input_ended() {
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
                        Link::Up(c) if c.generation() != conn.generation() => {
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
    pub(crate) async fn next_conn(&self, after_generation: u64) -> Option<Arc<Connection>> {
        let mut rx = self.link.subscribe();
        loop {
            {
                let link = rx.borrow_and_update();
                match &*link {
                    Link::Up(c) if c.generation() != after_generation => {
                        return Some(Arc::clone(c));
                    }
                    Link::Closed => return None,
                    _ => {}
                }
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Make this a lane of stateless (2026-07-28) requests: no downstream session will
    /// ever be ready, so notifications from the upstream outside a call are dropped at
    /// once (not kept), and its requests outside a call are refused at once (not kept
    /// waiting for a client).
    pub(crate) fn serve_no_client(&self) {
        self.no_client
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let mut early = self.early.lock();
        early.queue = None;
        early.bytes = 0;
    }

    /// Whether this lane serves stateless requests ([`Self::serve_no_client`]).
    pub(crate) fn has_no_client(&self) -> bool {
        self.no_client.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The tools of the current (or last) connection.
    pub(crate) fn tools(&self) -> Arc<ToolSet> {
        Arc::clone(&self.tools.read())
    }

    /// Make the first connection take up `session` again instead of starting a new one
    /// (where the upstream has sessions that can be; else a new one is started).
    pub(crate) fn reattach_first(&self, session: Option<UpstreamSession>) {
        *self.reattach.lock() = session;
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
        *self.init_params.lock() = init_params;
        let me = self.me.upgrade().ok_or_else(ended)?;
        let mut refused = false;
        self.started.call_once(
            || match Arc::clone(&self.limits.upstreams).try_acquire_owned() {
                Ok(permit) => {
                    tokio::spawn(supervise::supervise(me, permit));
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
}
