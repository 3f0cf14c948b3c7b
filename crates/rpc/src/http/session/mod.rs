//! One Streamable HTTP session: its peer, the streams its messages travel on, and the
//! router that puts every outgoing message on exactly one of them.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_tasks_proto::logged::digest;
use mcp_tasks_proto::{Message, RequestId};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::stream::{BufferLimits, Meter, STANDALONE, StreamBuf};
use crate::peer::{Outbound, Peer};

pub(crate) mod directory;
pub(crate) mod listener;
mod reader;
pub(crate) mod resume;
mod routing;
pub(crate) mod shared;

pub(crate) use reader::{Connect, Reader};

/// Largest chunk one connection write carries.
const MAX_CHUNK: usize = 256 * 1024;

/// How long a stream must have had no reader before a session over its replay bound may
/// drop it. A stream answering a POST has no reader for the moment between its creation
/// and the POST handler's connecting to it; this grace keeps it safe meanwhile.
const UNREAD_GRACE: Duration = Duration::from_secs(1);

/// How the answer to one POSTed request is on its way.
pub(crate) enum Pending {
    /// The POST handler waits for the first message of the request's route. With
    /// `upgrade`, a message other than the response turns the answer into an SSE stream;
    /// without, such messages go to the standalone stream and the answer stays JSON.
    Waiting {
        tx: oneshot::Sender<First>,
        upgrade: bool,
        /// The tag of the stream it becomes (see [`resume`]).
        tag: Option<Arc<str>>,
    },
    /// The answer is the SSE stream with this id.
    Stream(u64),
}

/// What the POST handler learns first.
pub(crate) enum First {
    /// The response, before anything else: answer `application/json`.
    Response(Message),
    /// Something else came first: answer with this SSE stream.
    Upgraded(u64),
}

/// The mutable part of a session.
pub(crate) struct State {
    pub(crate) pending: HashMap<RequestId, Pending, crate::FastHash>,
    pub(crate) streams: HashMap<u64, StreamBuf>,
    next_stream: u64,
    /// Counts the bytes of `streams`.
    meter: Arc<Meter>,
    /// The last [`MAX_ENDED`] streams dropped after a connection read them to their end
    /// (response included): a resumption of one of them has nothing more to give (204),
    /// rather than an unknown stream (400). The TypeScript SDK 1.32.2 resumes a request
    /// stream whose last message was an error response (it counts only results as the
    /// response), often after its next request acknowledged, and so dropped, the stream.
    ended: VecDeque<u64>,
    /// With shared sessions: the `tasks/result` requests of this copy that carry a task's
    /// notifications relayed by the replica running it, by task id ([`listener`]; at most
    /// [`listener::MAX_FOLLOWED`]).
    pub(crate) follows: HashMap<String, listener::Follow>,
}

/// How many ended streams a session remembers (8 bytes each).
const MAX_ENDED: usize = 64;

fn remember_ended(ended: &mut VecDeque<u64>, stream: u64) {
    if ended.len() == MAX_ENDED {
        ended.pop_front();
    }
    ended.push_back(stream);
}

/// Timing and bounds shared by the sessions of a server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    /// Events per stream; bytes per session (all its streams together).
    pub(crate) buffer: BufferLimits,
    /// Bytes of every session's streams together.
    pub(crate) total_bytes: usize,
    /// How long a stream nobody reads is kept for replay.
    pub(crate) keep: Duration,
    /// How long a stream read to its end (response included) is kept for replay when no
    /// new request on the session acknowledges it first.
    pub(crate) ack: Duration,
    /// How long one SSE connection is held before it is closed with a `retry` field.
    pub(crate) hold: Duration,
    /// The `retry` interval sent when a connection is closed before its stream ends.
    pub(crate) retry: Duration,
}

impl SessionLimits {
    /// Bounds of the standalone stream: half the session's bytes, so that a client that
    /// never opens its GET stream still leaves room for replay on its request streams.
    pub(crate) fn standalone(&self) -> BufferLimits {
        BufferLimits {
            events: self.buffer.events,
            bytes: (self.buffer.bytes / 2).max(1),
        }
    }
}

/// One session.
pub(crate) struct HttpSession {
    pub(crate) id: String,
    pub(crate) principal: Option<String>,
    pub(crate) peer: Peer,
    pub(crate) limits: SessionLimits,
    /// The streams and pending requests (held briefly, never across an `.await`).
    pub(crate) state: Mutex<State>,
    last_seen: Mutex<Instant>,
    /// The client completed initialization (sent `notifications/initialized` or any
    /// request after `initialize`).
    initialized: AtomicBool,
    /// Open SSE connections.
    pub(crate) connections: AtomicUsize,
    /// Fires when the session ends (DELETE, idle expiry, server exit).
    pub(crate) ended: CancellationToken,
    /// With shared sessions: when the directory's row expires as far as this process
    /// knows (milliseconds since the epoch; `i64::MIN`: unknown).
    stored_until: AtomicI64,
    /// With shared sessions: how this copy reaches the other replicas.
    relay: std::sync::OnceLock<listener::Relay>,
    /// With shared sessions: the replica that last said it holds the session's GET.
    listener: Mutex<Option<Arc<str>>>,
    /// With shared sessions: the replicas that last said they serve a `tasks/result` of a
    /// task, oldest first (at most [`listener::MAX_FOLLOWED`]).
    followed: Mutex<VecDeque<(String, Arc<str>)>>,
    /// This session (for the timers it starts).
    this: std::sync::Weak<HttpSession>,
}

mcp_tasks_proto::debug_non_exhaustive!(HttpSession, |s| { principal: s.principal });

/// A new session id: 128 bits from the OS CSPRNG, as 32 hex digits (visible ASCII).
///
/// Spec: "The session ID SHOULD be globally unique and cryptographically secure".
pub(crate) fn new_session_id() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS random number generator failed");
    let mut s = String::with_capacity(32);
    for x in b {
        use std::fmt::Write;
        let _ = write!(s, "{x:02x}");
    }
    s
}

impl HttpSession {
    /// A session around `peer`; spawns the router draining `outbound`.
    pub(crate) fn start(
        id: String,
        principal: Option<String>,
        peer: Peer,
        outbound: mpsc::Receiver<Outbound>,
        limits: SessionLimits,
        global_bytes: Arc<AtomicUsize>,
    ) -> Arc<Self> {
        let session = Self::unrouted(id, principal, peer, limits, global_bytes);
        tokio::spawn(Arc::clone(&session).route_all(outbound));
        session
    }

    /// A session around `peer` whose router is not spawned yet.
    fn unrouted(
        id: String,
        principal: Option<String>,
        peer: Peer,
        limits: SessionLimits,
        global_bytes: Arc<AtomicUsize>,
    ) -> Arc<Self> {
        let now = Instant::now();
        let meter = Meter::new(global_bytes);
        let mut streams = HashMap::new();
        streams.insert(STANDALONE, StreamBuf::new(STANDALONE, None, now, &meter));
        Arc::new_cyclic(|this| Self {
            id,
            principal,
            peer,
            limits,
            state: Mutex::new(State {
                pending: HashMap::default(),
                streams,
                next_stream: 1,
                meter,
                ended: VecDeque::new(),
                follows: HashMap::new(),
            }),
            last_seen: Mutex::new(now),
            initialized: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            ended: CancellationToken::new(),
            stored_until: AtomicI64::new(i64::MIN),
            relay: std::sync::OnceLock::new(),
            listener: Mutex::new(None),
            followed: Mutex::new(VecDeque::new()),
            this: this.clone(),
        })
    }

    /// A copy of a session another replica started numbers its streams from a random
    /// base (`n << 20`, `n` in 1..2^31): its standalone stream is `n << 20`, its request
    /// streams follow. So an event id of another replica (`stream-seq`; the replica that
    /// started the session numbers its standalone stream 0 and its request streams from 1)
    /// names no stream here, and the ids of a session are unique across its replicas.
    /// Spec (2025-11-25, Streamable HTTP): "If present, the ID MUST be globally unique
    /// across all streams within that session". The resumption of a foreign stream never
    /// replays one of this replica's streams ("The server MUST NOT replay messages that
    /// would have been delivered on a different stream"). Its
    /// outgoing requests are numbered from the same base, so that an answer relayed from
    /// another replica never matches a request of this copy's by chance (below 2^53:
    /// exact in every JSON implementation).
    pub(crate) fn number_streams_randomly(&self) {
        let mut b = [0u8; 4];
        getrandom::fill(&mut b).expect("the OS random number generator failed");
        let n = u64::from(u32::from_le_bytes(b) >> 1) + 1;
        let mut st = self.state.lock();
        let meter = Arc::clone(&st.meter);
        st.streams.insert(
            STANDALONE,
            StreamBuf::new(n << 20, None, Instant::now(), &meter),
        );
        st.next_stream = (n << 20) + 1;
        drop(st);
        self.peer
            .pending()
            .number_from(i64::try_from(n << 20).unwrap_or(1));
    }

    /// The directory's row of this session expires at `ms` (as far as this process knows).
    pub(crate) fn set_stored_until(&self, ms: i64) {
        self.stored_until.store(ms, Ordering::Relaxed);
    }

    /// Whether the directory's row should be pushed forward now, `idle_ms` after `now_ms`:
    /// when less than three quarters of the idle period are left on it, so that each
    /// process renews a session at most once per quarter of the idle period however much
    /// it is used. The new expiry, recorded as written (a failed write resets it).
    pub(crate) fn touch_due(&self, now_ms: i64, idle_ms: i64) -> Option<i64> {
        let until = now_ms.saturating_add(idle_ms);
        let left = self
            .stored_until
            .load(Ordering::Relaxed)
            .saturating_sub(now_ms);
        if left >= idle_ms / 4 * 3 {
            return None;
        }
        let prev = self.stored_until.swap(until, Ordering::Relaxed);
        (prev.saturating_sub(now_ms) < idle_ms / 4 * 3).then_some(until)
    }

    /// Note activity (any request naming this session).
    pub(crate) fn touch(&self) {
        *self.last_seen.lock() = Instant::now();
    }

    /// When the session last saw a request.
    pub(crate) fn last_seen(&self) -> Instant {
        *self.last_seen.lock()
    }

    /// Whether the session saw no request for `idle`, has no open SSE connection and no
    /// request in flight (a plain call still running is not idleness: its POST is open, or
    /// its stream is kept for resumption and the call cancelled when that stream goes).
    pub(crate) fn is_idle(&self, idle: Duration, now: Instant) -> bool {
        !self.is_busy() && now.duration_since(self.last_seen()) >= idle
    }

    /// Whether a connection reads one of its streams or a request of it is in flight.
    pub(crate) fn is_busy(&self) -> bool {
        self.connections.load(Ordering::Relaxed) > 0 || self.peer.inflight() > 0
    }

    /// The client completed initialization: it sent `notifications/initialized` or a
    /// request after `initialize`.
    pub(crate) fn set_initialized(&self) {
        self.initialized.store(true, Ordering::Relaxed);
    }

    /// Whether the client completed initialization.
    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    /// End the session: close the peer (in-flight handlers are cancelled; tasks, which
    /// the engine owns, go on) and drop every stream, which ends their connections.
    pub(crate) fn end(&self) {
        self.ended.cancel();
        self.peer.close();
        let mut st = self.state.lock();
        st.pending.clear();
        st.streams.clear();
        st.follows.clear();
    }

    /// Keep the session's replay buffers within their bounds: the session's own
    /// ([`SessionLimits::buffer`]`.bytes`) and the server's
    /// ([`SessionLimits::total_bytes`]). Returns the requests whose stream was dropped
    /// before their response (the caller cancels them, unlocked).
    ///
    /// What goes first, until the counts are back under the bounds:
    /// 1. events already handed to a connection (kept only so that a reconnect can replay
    ///    them), oldest stream first. An event larger than the bound therefore never
    ///    stays once delivered: it is simply not replayable;
    /// 2. whole streams no connection has read for [`UNREAD_GRACE`], oldest first (their
    ///    client left; a resumption gets 400, and an unanswered request is cancelled).
    ///
    /// Events not yet delivered on a stream that is being read stay: they are the
    /// client's messages, not replay copies (each stream keeps at most its byte bound of
    /// them, and the newest whatever its size). The server-wide bound is enforced by
    /// whichever session adds bytes while it is exceeded, and by the sweeper for all.
    pub(crate) fn enforce(&self, st: &mut State, now: Instant) -> Vec<RequestId> {
        let limits = self.limits;
        let over = |m: &Meter| m.session() > limits.buffer.bytes || m.global() > limits.total_bytes;
        if !over(&st.meter) {
            return Vec::new();
        }
        let mut ids: Vec<u64> = st.streams.keys().copied().collect();
        ids.sort_unstable();
        for n in &ids {
            if let Some(s) = st.streams.get_mut(n) {
                s.drop_delivered();
            }
            if !over(&st.meter) {
                return Vec::new();
            }
        }
        let mut abandoned = Vec::new();
        for n in ids {
            if n == STANDALONE || !over(&st.meter) {
                continue;
            }
            let unread = st.streams.get(&n).and_then(StreamBuf::idle_since);
            if unread.is_none_or(|t| now.duration_since(t) < UNREAD_GRACE) {
                continue;
            }
            if let Some(s) = st.streams.remove(&n) {
                tracing::debug!(session = %digest(&self.id), stream = n, bytes = s.bytes(), "replay bound reached: unread stream dropped");
                if !s.is_finished()
                    && let Some(id) = s.request()
                {
                    st.pending.remove(id);
                    abandoned.push(id.clone());
                }
            }
        }
        abandoned
    }

    /// A new request on the session acknowledges the streams read to their end: the
    /// client has their responses, so their replay buffers go.
    pub(crate) fn ack_completed(&self) {
        let mut st = self.state.lock();
        let State { streams, ended, .. } = &mut *st;
        streams.retain(|n, s| {
            if s.completed_at().is_none() {
                return true;
            }
            remember_ended(ended, *n);
            false
        });
    }

    /// Cancel requests `ids` (nobody can receive their answer any more): their handlers
    /// stop as if the client had sent `notifications/cancelled`.
    pub(crate) fn cancel_requests(&self, ids: Vec<RequestId>, reason: &'static str) {
        for id in ids {
            tracing::debug!(session = %digest(&self.id), id = %id, reason, "request cancelled");
            let peer = self.peer.clone();
            tokio::spawn(async move {
                let params = serde_json::json!({
                    "requestId": id.to_value(),
                    "reason": reason,
                });
                peer.receive(Message::notification(
                    mcp_tasks_proto::methods::CANCELLED,
                    Some(params),
                ))
                .await;
            });
        }
    }

    /// Drop streams nobody read for `keep`, and streams read to their end `ack` ago; a
    /// request whose stream is dropped before its response is cancelled (nobody can
    /// receive the answer any more). Then enforce the replay bounds.
    pub(crate) fn sweep_streams(&self, now: Instant) {
        let keep = self.limits.keep;
        let ack = self.limits.ack;
        let mut abandoned = Vec::new();
        {
            let mut st = self.state.lock();
            let State {
                pending,
                streams,
                ended,
                ..
            } = &mut *st;
            streams.retain(|n, s| {
                if s.completed_at()
                    .is_some_and(|t| now.duration_since(t) >= ack)
                {
                    remember_ended(ended, *n);
                    return false;
                }
                let Some(since) = s.idle_since() else {
                    return true;
                };
                if now.duration_since(since) < keep {
                    return true;
                }
                if *n == STANDALONE {
                    s.drop_delivered();
                    return true;
                }
                if !s.is_finished()
                    && let Some(id) = s.request()
                {
                    pending.remove(id);
                    abandoned.push(id.clone());
                }
                false
            });
            let over = self.enforce(&mut st, now);
            abandoned.extend(over);
        }
        self.cancel_requests(abandoned, "the client left the stream of this request");
    }

    /// The stream an event id's stream number names here: the event ids of the standalone
    /// stream carry its number (0 only on the replica that started the session), its
    /// buffer is kept under [`STANDALONE`]; another replica's standalone number names no
    /// stream here (`u64::MAX`).
    pub(crate) fn stream_of_event(&self, number: u64) -> u64 {
        let own = self
            .state
            .lock()
            .streams
            .get(&STANDALONE)
            .map_or(STANDALONE, StreamBuf::id);
        match number {
            n if n == own => STANDALONE,
            STANDALONE => u64::MAX,
            n => n,
        }
    }

    /// Open a connection reading stream `stream` from sequence `from`.
    pub(crate) fn connect(
        self: &Arc<Self>,
        stream: u64,
        from: Option<u64>,
        shutdown: CancellationToken,
    ) -> Connect {
        let mut st = self.state.lock();
        let limits = self.limits.buffer;
        let Some(s) = st.streams.get_mut(&stream) else {
            if st.ended.contains(&stream) {
                return Connect::Complete;
            }
            return Connect::Unknown;
        };
        if from.is_some_and(|f| !s.has_events_from(f)) && s.is_finished() {
            return Connect::Complete;
        }
        let from = match from {
            // A cursor past the newest event (an id this stream never sent, or one whose
            // successor overflows): nothing in the buffer follows it.
            Some(f) => f.min(s.next_seq()),
            // A fresh GET gets what no connection took yet.
            None if stream == STANDALONE => s.delivered(),
            None => 0,
        };
        // Every connection starts with an event id: if nothing is there to deliver, a new
        // priming event (a fresh id, empty data). A resumed connection that closed again
        // before anything happened would otherwise leave the client without a
        // `Last-Event-ID` for its next reconnect.
        if !s.has_events_from(from) && !s.is_finished() {
            s.push_priming(limits);
        }
        let (conn_gen, wake) = s.attach();
        drop(st);
        self.connections.fetch_add(1, Ordering::Relaxed);
        Connect::Reader(Reader {
            session: Arc::clone(self),
            stream,
            from,
            conn_gen,
            wake,
            deadline: tokio::time::Instant::now() + self.limits.hold,
            shutdown,
            done: false,
            preface: None,
        })
    }
}

fn push_standalone(streams: &mut HashMap<u64, StreamBuf>, message: &Message, limits: BufferLimits) {
    if let Some(s) = streams.get_mut(&STANDALONE) {
        s.push(message, limits);
    }
}

#[cfg(test)]
mod fake_directory;
#[cfg(test)]
mod load_tests;
#[cfg(test)]
mod tests;
