//! One Streamable HTTP session: its peer, the streams its messages travel on, and the
//! router that puts every outgoing message on exactly one of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_tasks_proto::{Message, RequestId};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::stream::{BufferLimits, Next, STANDALONE, StreamBuf, retry_frame};
use crate::peer::{Outbound, Peer, Route};

/// Largest chunk one connection write carries.
const MAX_CHUNK: usize = 256 * 1024;

/// How the answer to one POSTed request is on its way.
pub(crate) enum Pending {
    /// The POST handler waits for the first message of the request's route. With
    /// `upgrade`, a message other than the response turns the answer into an SSE stream;
    /// without, such messages go to the standalone stream and the answer stays JSON.
    Waiting {
        tx: oneshot::Sender<First>,
        upgrade: bool,
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
    pub(crate) pending: HashMap<RequestId, Pending>,
    pub(crate) streams: HashMap<u64, StreamBuf>,
    next_stream: u64,
}

/// Timing and bounds shared by the sessions of a server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    pub(crate) buffer: BufferLimits,
    /// How long a stream nobody reads is kept for replay.
    pub(crate) keep: Duration,
    /// How long one SSE connection is held before it is closed with a `retry` field.
    pub(crate) hold: Duration,
    /// The `retry` interval sent when a connection is closed before its stream ends.
    pub(crate) retry: Duration,
}

/// One session.
pub(crate) struct HttpSession {
    pub(crate) id: String,
    pub(crate) principal: Option<String>,
    pub(crate) peer: Peer,
    pub(crate) limits: SessionLimits,
    state: Mutex<State>,
    last_seen: Mutex<Instant>,
    /// Open SSE connections.
    connections: AtomicUsize,
    /// Fires when the session ends (DELETE, idle expiry, server exit).
    pub(crate) ended: CancellationToken,
}

impl std::fmt::Debug for HttpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSession")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

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

fn is_reply_to(message: &Message, id: &RequestId) -> bool {
    match message {
        Message::Response(r) => r.id == *id,
        Message::Error(e) => e.id.as_ref() == Some(id),
        _ => false,
    }
}

impl HttpSession {
    /// A session around `peer`; spawns the router draining `outbound`.
    pub(crate) fn start(
        id: String,
        principal: Option<String>,
        peer: Peer,
        outbound: mpsc::Receiver<Outbound>,
        limits: SessionLimits,
    ) -> Arc<Self> {
        let now = Instant::now();
        let mut streams = HashMap::new();
        streams.insert(STANDALONE, StreamBuf::new(STANDALONE, None, now));
        let session = Arc::new(Self {
            id,
            principal,
            peer,
            limits,
            state: Mutex::new(State {
                pending: HashMap::new(),
                streams,
                next_stream: 1,
            }),
            last_seen: Mutex::new(now),
            connections: AtomicUsize::new(0),
            ended: CancellationToken::new(),
        });
        tokio::spawn(Arc::clone(&session).route_all(outbound));
        session
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Note activity (any request naming this session).
    pub(crate) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    /// Whether the session saw no request for `idle` and has no open connection.
    pub(crate) fn is_idle(&self, idle: Duration, now: Instant) -> bool {
        let seen = *self
            .last_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.connections.load(Ordering::Relaxed) == 0 && now.duration_since(seen) >= idle
    }

    /// End the session: close the peer (in-flight handlers are cancelled; tasks, which
    /// the engine owns, go on) and drop every stream, which ends their connections.
    pub(crate) fn end(&self) {
        self.ended.cancel();
        self.peer.close();
        let mut st = self.lock();
        st.pending.clear();
        st.streams.clear();
    }

    /// Drain the peer's outgoing messages onto streams until the session ends.
    async fn route_all(self: Arc<Self>, mut outbound: mpsc::Receiver<Outbound>) {
        loop {
            let next = tokio::select! {
                m = outbound.recv() => m,
                () = self.ended.cancelled() => None,
            };
            let Some(out) = next else { break };
            self.route(out);
        }
    }

    /// Put one message on its stream.
    ///
    /// Spec: "The server MUST send each of its JSON-RPC messages on only one of the
    /// connected streams; that is, it MUST NOT broadcast the same message across multiple
    /// streams." A message tied to a request goes on that request's stream (or, while the
    /// request is answered as JSON, to the standalone stream); one tied to no request goes
    /// to the standalone stream, where it waits (bounded) for a GET.
    fn route(&self, out: Outbound) {
        let limits = self.limits.buffer;
        let mut st = self.lock();
        let State {
            pending,
            streams,
            next_stream,
        } = &mut *st;
        let Outbound { message, route } = out;
        let id = match route {
            Route::Standalone => {
                push_standalone(streams, &message, limits);
                return;
            }
            Route::Request(id) => id,
        };
        let reply = is_reply_to(&message, &id);
        match pending.remove(&id) {
            Some(Pending::Waiting { tx, upgrade }) => {
                if reply {
                    let _ = tx.send(First::Response(message));
                } else if upgrade {
                    let n = *next_stream;
                    *next_stream += 1;
                    let mut s = StreamBuf::new(n, Some(id.clone()), Instant::now());
                    s.push(&message, limits);
                    streams.insert(n, s);
                    pending.insert(id, Pending::Stream(n));
                    // If the POST is gone, the stream stays for a resuming GET.
                    let _ = tx.send(First::Upgraded(n));
                } else {
                    pending.insert(id, Pending::Waiting { tx, upgrade });
                    push_standalone(streams, &message, limits);
                }
            }
            Some(Pending::Stream(n)) => match streams.get_mut(&n) {
                Some(s) => {
                    s.push(&message, limits);
                    if reply {
                        s.finish();
                    } else {
                        pending.insert(id, Pending::Stream(n));
                    }
                }
                None if reply => {}
                None => push_standalone(streams, &message, limits),
            },
            None if reply => {
                tracing::debug!(id = %id, "response to a request nobody waits for dropped");
            }
            None => push_standalone(streams, &message, limits),
        }
    }

    /// A new SSE stream answering request `id`, registered as its pending answer.
    pub(crate) fn new_request_stream(st: &mut State, id: RequestId) -> u64 {
        let n = st.next_stream;
        st.next_stream += 1;
        st.streams
            .insert(n, StreamBuf::new(n, Some(id.clone()), Instant::now()));
        st.pending.insert(id, Pending::Stream(n));
        n
    }

    /// The client cancelled request `id`: its handler will not answer, so end its stream
    /// (or its waiting JSON answer).
    pub(crate) fn request_cancelled(&self, id: &RequestId) {
        let mut st = self.lock();
        match st.pending.remove(id) {
            Some(Pending::Stream(n)) => {
                if let Some(s) = st.streams.get_mut(&n) {
                    s.finish();
                }
            }
            Some(Pending::Waiting { .. }) | None => {}
        }
    }

    /// Drop streams nobody read for `keep`; a request whose stream is dropped before its
    /// response is cancelled (nobody can receive the answer any more).
    pub(crate) fn sweep_streams(&self, now: Instant) {
        let keep = self.limits.keep;
        let mut abandoned = Vec::new();
        {
            let mut st = self.lock();
            let State {
                pending, streams, ..
            } = &mut *st;
            streams.retain(|n, s| {
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
        }
        for id in abandoned {
            tracing::debug!(session = %self.id, id = %id, "stream abandoned; its request is cancelled");
            let peer = self.peer.clone();
            tokio::spawn(async move {
                let params = serde_json::json!({
                    "requestId": id.to_value(),
                    "reason": "the client left the stream of this request",
                });
                peer.receive(Message::notification(
                    mcp_tasks_proto::methods::CANCELLED,
                    Some(params),
                ))
                .await;
            });
        }
    }

    /// Open a connection reading stream `stream` from sequence `from`.
    pub(crate) fn connect(
        self: &Arc<Self>,
        stream: u64,
        from: Option<u64>,
        shutdown: CancellationToken,
    ) -> Connect {
        let mut st = self.lock();
        let limits = self.limits.buffer;
        let Some(s) = st.streams.get_mut(&stream) else {
            return Connect::Unknown;
        };
        if from.is_some_and(|f| !s.has_events_from(f)) && s.is_finished() {
            return Connect::Complete;
        }
        let from = match from {
            Some(f) => f,
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
        })
    }
}

/// The outcome of [`HttpSession::connect`].
pub(crate) enum Connect {
    /// A connection reading the stream.
    Reader(Reader),
    /// The stream ended and everything after the cursor was delivered already.
    Complete,
    /// No such stream (never, or no longer: dropped after the replay period).
    Unknown,
}

fn push_standalone(streams: &mut HashMap<u64, StreamBuf>, message: &Message, limits: BufferLimits) {
    if let Some(s) = streams.get_mut(&STANDALONE) {
        s.push(message, limits);
    }
}

/// One SSE connection: a cursor into one stream of a session.
pub(crate) struct Reader {
    session: Arc<HttpSession>,
    stream: u64,
    from: u64,
    conn_gen: u64,
    wake: watch::Receiver<()>,
    deadline: tokio::time::Instant,
    shutdown: CancellationToken,
    done: bool,
}

impl Reader {
    /// The next bytes to write, or `None` to end the response.
    ///
    /// Spec: "After the server has sent an SSE event with an event ID to the client, the
    /// server MAY close the connection (without terminating the SSE stream) at any time in
    /// order to avoid holding a long-lived connection." and "If the server does close the
    /// connection prior to terminating the SSE stream, it SHOULD send an SSE event with a
    /// standard `retry` field before closing the connection."
    pub(crate) async fn next_chunk(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        loop {
            self.wake.borrow_and_update();
            {
                let mut st = self.session.lock();
                let Some(s) = st.streams.get_mut(&self.stream) else {
                    self.done = true;
                    return None;
                };
                if !s.is_current(self.conn_gen) {
                    // A newer connection took this stream over.
                    self.done = true;
                    return None;
                }
                match s.next(self.from, MAX_CHUNK) {
                    Next::Events(bytes, cursor) => {
                        self.from = cursor;
                        return Some(bytes);
                    }
                    Next::End => {
                        self.done = true;
                        return None;
                    }
                    Next::Wait => {}
                }
            }
            tokio::select! {
                r = self.wake.changed() => {
                    if r.is_err() {
                        self.done = true;
                        return None;
                    }
                }
                () = tokio::time::sleep_until(self.deadline) => return Some(self.close_with_retry()),
                () = self.shutdown.cancelled() => return Some(self.close_with_retry()),
                () = self.session.ended.cancelled() => {
                    self.done = true;
                    return None;
                }
            }
        }
    }

    fn close_with_retry(&mut self) -> Bytes {
        self.done = true;
        retry_frame(self.session.limits.retry.as_millis())
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.session.connections.fetch_sub(1, Ordering::Relaxed);
        self.session.touch();
        if let Some(s) = self.session.lock().streams.get_mut(&self.stream) {
            s.detach(self.conn_gen, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::{Handler, RequestContext};
    use async_trait::async_trait;
    use mcp_tasks_proto::ErrorObject;
    use serde_json::{Value, json};

    /// `chatty` notifies on its own route before answering; `quiet` just answers.
    struct Chatty;

    #[async_trait]
    impl Handler for Chatty {
        async fn handle_request(
            &self,
            cx: RequestContext,
            method: String,
            _params: Option<Value>,
        ) -> Result<Value, ErrorObject> {
            if method == "chatty" {
                cx.notify("notifications/message", Some(json!({"n": 1})))
                    .await;
                cx.peer
                    .notify("notifications/elsewhere", None, Route::Standalone)
                    .await;
            }
            Ok(json!({"ok": method}))
        }
    }

    const LIMITS: SessionLimits = SessionLimits {
        buffer: BufferLimits {
            events: 100,
            bytes: 1 << 20,
        },
        keep: Duration::from_secs(60),
        hold: Duration::from_secs(60),
        retry: Duration::from_secs(1),
    };

    fn session() -> Arc<HttpSession> {
        let (peer, outbound) = Peer::new(Arc::new(Chatty));
        HttpSession::start("s".into(), None, peer, outbound, LIMITS)
    }

    fn text(session: &HttpSession, stream: u64) -> String {
        let mut st = session.lock();
        match st.streams.get_mut(&stream).unwrap().next(0, usize::MAX) {
            Next::Events(b, _) => String::from_utf8(b.to_vec()).unwrap(),
            Next::Wait | Next::End => String::new(),
        }
    }

    async fn wait(session: &Arc<HttpSession>, id: i64, method: &str, upgrade: bool) -> First {
        let (tx, rx) = oneshot::channel();
        session
            .lock()
            .pending
            .insert(id.into(), Pending::Waiting { tx, upgrade });
        session
            .peer
            .receive(Message::request(id.into(), method, None))
            .await;
        tokio::time::timeout(Duration::from_secs(5), rx)
            .await
            .unwrap()
            .unwrap()
    }

    #[tokio::test]
    async fn a_message_before_the_response_upgrades_to_a_stream() {
        let s = session();
        let First::Upgraded(n) = wait(&s, 1, "chatty", true).await else {
            panic!("expected an upgrade")
        };
        // Wait for the response to land on the stream.
        for _ in 0..100 {
            if s.lock().streams[&n].is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let t = text(&s, n);
        assert!(t.starts_with(&format!("id: {n}-0\ndata:\n\n")), "{t}");
        assert!(t.contains("notifications/message"), "{t}");
        assert!(t.contains(r#""ok":"chatty""#), "{t}");
        assert!(!t.contains("elsewhere"), "{t}");
        assert!(text(&s, STANDALONE).contains("notifications/elsewhere"));
        assert!(s.lock().pending.is_empty());
    }

    #[tokio::test]
    async fn json_only_requests_send_other_messages_to_the_standalone_stream() {
        let s = session();
        let First::Response(m) = wait(&s, 2, "chatty", false).await else {
            panic!("expected the response")
        };
        assert_eq!(m, Message::reply(2.into(), Ok(json!({"ok": "chatty"}))));
        let t = text(&s, STANDALONE);
        assert!(t.contains("notifications/message"), "{t}");
        assert!(t.contains("notifications/elsewhere"), "{t}");
        assert_eq!(s.lock().streams.len(), 1);
    }

    #[tokio::test]
    async fn a_response_first_stays_json() {
        let s = session();
        let First::Response(m) = wait(&s, 3, "quiet", true).await else {
            panic!("expected the response")
        };
        assert_eq!(m, Message::reply(3.into(), Ok(json!({"ok": "quiet"}))));
        assert_eq!(s.lock().streams.len(), 1);
    }

    #[tokio::test]
    async fn ending_a_session_drops_its_streams_and_waiters() {
        let s = session();
        let (tx, rx) = oneshot::channel();
        s.lock()
            .pending
            .insert(9.into(), Pending::Waiting { tx, upgrade: true });
        s.end();
        assert!(rx.await.is_err());
        assert!(s.lock().streams.is_empty());
        assert!(s.peer.is_closed());
    }
}
