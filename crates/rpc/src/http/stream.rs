//! One SSE stream of a session: its numbered events, kept in a bounded replay buffer.
//!
//! Every stream is a sequence of events `0, 1, 2, ...`; the SSE id of event `seq` on
//! stream `n` is `n-seq`, unique across the session and naming its stream, so that a
//! `Last-Event-ID` leads back to the right stream. Stream 0 is the standalone (GET)
//! stream; streams 1, 2, ... belong to the POSTed requests answered with SSE, and their
//! event 0 is the priming event.
//!
//! The buffer is the single source of what a connection writes: a connection is just a
//! cursor into it, so live delivery and replay after a reconnect are the same code.
//!
//! Every byte a buffer holds is counted twice in a [`Meter`]: for its session and for the
//! whole server. The session enforces its bounds on these counts (see
//! `session::enforce`); a buffer returns its bytes when events leave it and when it is
//! dropped, so the counts are exact whatever path removes a stream.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use mcp_tasks_proto::{Message, RequestId};
use tokio::sync::watch;

/// The id of the standalone stream (GET without `Last-Event-ID`).
pub(crate) const STANDALONE: u64 = 0;

/// Bounds of every stream's replay buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BufferLimits {
    /// Most events kept.
    pub(crate) events: usize,
    /// Most bytes kept (the newest event is kept for delivery whatever its size).
    pub(crate) bytes: usize,
}

/// Bytes held by the replay buffers of one session, and of the whole server.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    session: AtomicUsize,
    global: Arc<AtomicUsize>,
}

impl Meter {
    /// A meter for a new session, adding to the server-wide count `global`.
    pub(crate) fn new(global: Arc<AtomicUsize>) -> Arc<Self> {
        Arc::new(Self {
            session: AtomicUsize::new(0),
            global,
        })
    }

    /// Bytes held by the session's buffers.
    pub(crate) fn session(&self) -> usize {
        self.session.load(Ordering::Relaxed)
    }

    /// Bytes held by every session's buffers.
    pub(crate) fn global(&self) -> usize {
        self.global.load(Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.session.fetch_add(n, Ordering::Relaxed);
        self.global.fetch_add(n, Ordering::Relaxed);
    }

    fn sub(&self, n: usize) {
        self.session.fetch_sub(n, Ordering::Relaxed);
        self.global.fetch_sub(n, Ordering::Relaxed);
    }
}

/// An SSE event id: stream and sequence number, and the stream's tag if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) stream: u64,
    pub(crate) seq: u64,
    /// What another replica needs to answer the stream's request again (see
    /// [`StreamBuf::new`]): `stream-seq-tag`.
    pub(crate) tag: Option<String>,
}

impl EventId {
    /// Parse `n-seq` or `n-seq-tag`.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let mut parts = s.trim().splitn(3, '-');
        let stream = parts.next()?.parse().ok()?;
        let seq = parts.next()?.parse().ok()?;
        let tag = parts.next().map(str::to_owned);
        Some(Self { stream, seq, tag })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.stream, self.seq)?;
        if let Some(t) = &self.tag {
            write!(f, "-{t}")?;
        }
        Ok(())
    }
}

/// A stream: buffer, end marker and which connection (if any) reads it.
pub(crate) struct StreamBuf {
    id: u64,
    /// Appended to its event ids (`n-seq-tag`): how another replica answers the stream's
    /// request again when the client resumes it there.
    tag: Option<Arc<str>>,
    events: VecDeque<(u64, Bytes)>,
    bytes: usize,
    meter: Arc<Meter>,
    /// When a connection read the whole stream, response included, to its end.
    completed_at: Option<Instant>,
    next_seq: u64,
    /// One past the highest sequence number handed to a connection.
    delivered: u64,
    /// The response went out: no event follows.
    finished: bool,
    /// The request this stream answers (none for the standalone stream).
    request: Option<RequestId>,
    /// Generation of the connection allowed to read; a newer connection takes over.
    conn_gen: u64,
    connected: bool,
    /// When the last connection went away (or the stream was created).
    detached_at: Instant,
    /// Undelivered events dropped because the buffer was full.
    dropped: u64,
    wake: watch::Sender<()>,
}

mcp_tasks_proto::debug_non_exhaustive!(StreamBuf, |s| {
    id: s.id,
    events: s.events.len(),
    next_seq: s.next_seq,
    finished: s.finished,
});

/// What a connection may write next.
pub(crate) enum Next {
    /// These event bytes; the cursor moves to the given sequence number.
    Events(Bytes, u64),
    /// Nothing yet: wait for a wake-up.
    Wait,
    /// The stream is complete for this cursor: end the response.
    End,
}

fn frame(stream: u64, seq: u64, tag: Option<&str>, data: &str) -> Bytes {
    use std::fmt::Write;
    let mut s = String::with_capacity(data.len() + 32 + tag.map_or(0, str::len));
    let _ = write!(s, "id: {stream}-{seq}");
    if let Some(t) = tag {
        s.push('-');
        s.push_str(t);
    }
    s.push_str("\ndata:");
    if !data.is_empty() {
        s.push(' ');
        s.push_str(data);
    }
    s.push_str("\n\n");
    Bytes::from(s)
}

/// The `data` of an event frame made by [`frame`].
fn data_of(f: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(f).ok()?;
    let (_, rest) = text.split_once("\ndata:")?;
    let data = rest.strip_suffix("\n\n")?;
    Some(data.strip_prefix(' ').unwrap_or(data))
}

/// The frame that ends a connection without ending the stream: the client waits `ms` and
/// reconnects with `Last-Event-ID`.
pub(crate) fn retry_frame(ms: u128) -> Bytes {
    Bytes::from(format!("retry: {ms}\n\n"))
}

impl StreamBuf {
    /// A new stream. A request stream starts with its priming event (id `n-0`, empty
    /// data).
    ///
    /// Spec: "The server SHOULD immediately send an SSE event consisting of an event ID and
    /// an empty `data` field in order to prime the client to reconnect (using that event
    /// ID as `Last-Event-ID`)."
    pub(crate) fn new(
        id: u64,
        request: Option<RequestId>,
        now: Instant,
        meter: &Arc<Meter>,
    ) -> Self {
        Self::tagged(id, request, None, now, meter)
    }

    /// [`Self::new`], with `tag` appended to its event ids (`n-seq-tag`).
    pub(crate) fn tagged(
        id: u64,
        request: Option<RequestId>,
        tag: Option<Arc<str>>,
        now: Instant,
        meter: &Arc<Meter>,
    ) -> Self {
        let mut s = Self {
            id,
            tag,
            events: VecDeque::new(),
            bytes: 0,
            meter: Arc::clone(meter),
            completed_at: None,
            next_seq: 0,
            delivered: 0,
            finished: false,
            request,
            conn_gen: 0,
            connected: false,
            detached_at: now,
            dropped: 0,
            wake: watch::channel(()).0,
        };
        if s.request.is_some() {
            s.push_priming_unbounded();
        }
        s
    }

    fn push_priming_unbounded(&mut self) {
        let f = frame(self.id, self.next_seq, self.tag.as_deref(), "");
        self.hold(f);
    }

    /// Append frame `f` as event `next_seq`, counting its bytes.
    fn hold(&mut self, f: Bytes) {
        self.bytes += f.len();
        self.meter.add(f.len());
        self.events.push_back((self.next_seq, f));
        self.next_seq += 1;
    }

    /// Remove the oldest event, returning its bytes to the meter.
    fn pop_front(&mut self) -> Option<u64> {
        let (seq, f) = self.events.pop_front()?;
        self.bytes -= f.len();
        self.meter.sub(f.len());
        Some(seq)
    }

    /// Append an empty event so that a connection with nothing to deliver yet still starts
    /// with an id to resume from (clients only learn a resumption point from an event id).
    pub(crate) fn push_priming(&mut self, limits: BufferLimits) {
        self.push_priming_unbounded();
        self.trim(limits);
    }

    /// Append `message` as the next event and wake the reader.
    pub(crate) fn push(&mut self, message: &Message, limits: BufferLimits) {
        let f = frame(
            self.id,
            self.next_seq,
            self.tag.as_deref(),
            &message.to_json(),
        );
        self.hold(f);
        self.trim(limits);
        self.wake.send_modify(|()| {});
    }

    fn trim(&mut self, limits: BufferLimits) {
        // Keep at least the newest event, however large: it is still to be delivered (once
        // delivered, the session's bound drops it, see `session::enforce`).
        while self.events.len() > 1
            && (self.events.len() > limits.events || self.bytes > limits.bytes)
        {
            if let Some(seq) = self.pop_front()
                && seq >= self.delivered
            {
                {
                    self.dropped += 1;
                    // Once per stream at warn level (a session that never opens its GET
                    // stream would otherwise flood the log), then at debug level.
                    if self.dropped == 1 {
                        tracing::warn!(
                            stream = self.id,
                            seq,
                            "SSE buffer full: undelivered events are being dropped (oldest first); no client reads this stream"
                        );
                    } else {
                        tracing::debug!(
                            stream = self.id,
                            seq,
                            "SSE buffer full: undelivered event dropped"
                        );
                    }
                }
            }
        }
    }

    /// Mark the stream complete (its response is in the buffer) and wake the reader.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
        self.wake.send_modify(|()| {});
    }

    /// Whether the response went out.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// The request this stream answers.
    pub(crate) fn request(&self) -> Option<&RequestId> {
        self.request.as_ref()
    }

    /// One past the highest sequence number handed to a connection.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// The tag its event ids carry.
    pub(crate) fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The stream number its event ids carry.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether a connection reads the stream now.
    pub(crate) fn is_connected(&self) -> bool {
        self.connected
    }

    /// Remove the events no connection was handed yet and return their messages (the JSON
    /// text of each, oldest first; priming events carry none): what another replica's
    /// reader of the session's standalone stream is to deliver instead. The sequence
    /// numbers are not reused.
    pub(crate) fn take_undelivered(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while self
            .events
            .back()
            .is_some_and(|(seq, _)| *seq >= self.delivered)
        {
            let Some((_, f)) = self.events.pop_back() else {
                break;
            };
            self.bytes -= f.len();
            self.meter.sub(f.len());
            if let Some(data) = data_of(&f).filter(|d| !d.is_empty()) {
                out.push(data.to_owned());
            }
        }
        out.reverse();
        out
    }

    /// Whether an event with sequence number `from` or later exists.
    pub(crate) fn has_events_from(&self, from: u64) -> bool {
        self.next_seq > from
    }

    /// The sequence number the next event gets.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// A connection read the stream to its end (the response included) at `now`.
    pub(crate) fn mark_completed(&mut self, now: Instant) {
        if self.finished && self.completed_at.is_none() {
            self.completed_at = Some(now);
        }
    }

    /// When a connection read the whole stream, response included.
    pub(crate) fn completed_at(&self) -> Option<Instant> {
        self.completed_at
    }

    /// Let a new connection read (taking over from any older one). Returns its generation
    /// and a wake-up receiver.
    pub(crate) fn attach(&mut self) -> (u64, watch::Receiver<()>) {
        self.conn_gen += 1;
        self.connected = true;
        let rx = self.wake.subscribe();
        // Wake the older connection so that it notices it was replaced.
        self.wake.send_modify(|()| {});
        (self.conn_gen, rx)
    }

    /// The connection of generation `conn_gen` went away.
    pub(crate) fn detach(&mut self, conn_gen: u64, now: Instant) {
        if self.conn_gen == conn_gen {
            self.connected = false;
            self.detached_at = now;
        }
    }

    /// Whether `conn_gen` is still the reading connection.
    pub(crate) fn is_current(&self, conn_gen: u64) -> bool {
        self.conn_gen == conn_gen
    }

    /// Whether no connection reads, and since when.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        (!self.connected).then_some(self.detached_at)
    }

    /// What a connection whose cursor is `from` writes next (at most about `max_bytes`).
    pub(crate) fn next(&mut self, from: u64, max_bytes: usize) -> Next {
        let start = self.events.partition_point(|(seq, _)| *seq < from);
        if start < self.events.len() {
            let mut out = Vec::new();
            let mut last = from;
            for (seq, f) in self.events.iter().skip(start) {
                if !out.is_empty() && out.len() + f.len() > max_bytes {
                    break;
                }
                out.extend_from_slice(f);
                last = *seq;
            }
            let cursor = last + 1;
            self.delivered = self.delivered.max(cursor);
            return Next::Events(Bytes::from(out), cursor);
        }
        if self.finished { Next::End } else { Next::Wait }
    }

    /// Forget delivered events (they are no longer replayable).
    pub(crate) fn drop_delivered(&mut self) {
        while self
            .events
            .front()
            .is_some_and(|(seq, _)| *seq < self.delivered)
        {
            self.pop_front();
        }
    }
}

impl Drop for StreamBuf {
    fn drop(&mut self) {
        self.meter.sub(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMITS: BufferLimits = BufferLimits {
        events: 3,
        bytes: 1 << 20,
    };

    fn meter() -> Arc<Meter> {
        Meter::new(Arc::default())
    }

    fn text(b: &Bytes) -> String {
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[test]
    fn request_stream_primes_then_replays_from_any_cursor() {
        let mut s = StreamBuf::new(4, Some(7.into()), Instant::now(), &meter());
        s.push(&Message::notification("a", None), LIMITS);
        let Next::Events(b, cur) = s.next(0, 1 << 20) else {
            panic!()
        };
        assert_eq!(
            text(&b),
            "id: 4-0\ndata:\n\nid: 4-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n"
        );
        assert_eq!(cur, 2);
        assert!(matches!(s.next(2, 1 << 20), Next::Wait));
        s.push(&Message::reply(7.into(), Ok(json!({}))), LIMITS);
        s.finish();
        // Resume after 4-1: only the response.
        let Next::Events(b, cur) = s.next(2, 1 << 20) else {
            panic!()
        };
        assert!(text(&b).starts_with("id: 4-2\n"));
        assert!(matches!(s.next(cur, 1 << 20), Next::End));
    }

    #[test]
    fn buffer_is_bounded() {
        let mut s = StreamBuf::new(STANDALONE, None, Instant::now(), &meter());
        for i in 0..10 {
            s.push(&Message::notification(format!("m{i}"), None), LIMITS);
        }
        let Next::Events(b, _) = s.next(0, 1 << 20) else {
            panic!()
        };
        let t = text(&b);
        assert!(t.starts_with("id: 0-7\n"), "{t}");
        assert_eq!(t.matches("id: ").count(), 3);
    }

    #[test]
    fn undelivered_events_are_taken_in_order_and_the_ids_go_on() {
        let m = meter();
        let mut s = StreamBuf::new(STANDALONE, None, Instant::now(), &m);
        let note = |n: i64| Message::notification("n", Some(json!({ "n": n })));
        s.push(&note(1), LIMITS);
        assert!(matches!(s.next(0, 1 << 20), Next::Events(_, 1)));
        s.push_priming(LIMITS);
        s.push(&note(2), LIMITS);
        s.push(&note(3), LIMITS);
        let taken = s.take_undelivered();
        assert_eq!(taken.len(), 2, "{taken:?}");
        assert!(
            taken[0].contains(r#""n":2"#) && taken[1].contains(r#""n":3"#),
            "{taken:?}"
        );
        assert_eq!(s.bytes(), m.session(), "the meter follows");
        s.push(&note(4), LIMITS);
        let Next::Events(b, _) = s.next(1, 1 << 20) else {
            panic!("an event")
        };
        assert!(text(&b).starts_with("id: 0-4\n"), "{}", text(&b));
    }

    #[test]
    fn event_ids_parse() {
        assert_eq!(
            EventId::parse("12-34"),
            Some(EventId {
                stream: 12,
                seq: 34,
                tag: None,
            })
        );
        let tagged = EventId::parse("12-34-a-b_c").unwrap();
        assert_eq!(tagged.tag.as_deref(), Some("a-b_c"));
        assert_eq!(tagged.to_string(), "12-34-a-b_c");
        assert_eq!(EventId::parse("x-1"), None);
        assert_eq!(EventId::parse("12"), None);
    }
}
