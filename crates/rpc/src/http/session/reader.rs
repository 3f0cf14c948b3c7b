//! One SSE connection reading one stream of a session.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::super::stream::{Next, retry_frame};
use super::{HttpSession, MAX_CHUNK};

/// The outcome of [`HttpSession::connect`].
pub(crate) enum Connect {
    /// A connection reading the stream.
    Reader(Reader),
    /// The stream ended and everything after the cursor was delivered already.
    Complete,
    /// No such stream (never, or no longer: dropped after the replay period).
    Unknown,
}

/// One SSE connection: a cursor into one stream of a session.
pub(crate) struct Reader {
    pub(super) session: Arc<HttpSession>,
    pub(super) stream: u64,
    pub(super) from: u64,
    pub(super) conn_gen: u64,
    pub(super) wake: watch::Receiver<()>,
    pub(super) deadline: tokio::time::Instant,
    pub(super) shutdown: CancellationToken,
    pub(super) done: bool,
    /// Bytes written before the stream's events (an SSE comment).
    pub(super) preface: Option<Bytes>,
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
        if let Some(p) = self.preface.take() {
            return Some(p);
        }
        loop {
            self.wake.borrow_and_update();
            {
                let mut st = self.session.state.lock();
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
                        // What was just handed out is a replay copy now: within bounds?
                        let abandoned = self.session.enforce(&mut st, Instant::now());
                        drop(st);
                        self.session.cancel_requests(
                            abandoned,
                            "the replay buffers of the session are full",
                        );
                        return Some(bytes);
                    }
                    Next::End => {
                        s.mark_completed(Instant::now());
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

    /// Write `comment` (an SSE comment line, which clients skip) before the events.
    pub(crate) fn with_comment(mut self, comment: &str) -> Self {
        let line: String = comment
            .chars()
            .filter(|c| *c != '\n' && *c != '\r')
            .collect();
        self.preface = Some(Bytes::from(format!(": {line}\n\n")));
        self
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
        if let Some(s) = self.session.state.lock().streams.get_mut(&self.stream) {
            s.detach(self.conn_gen, Instant::now());
        }
    }
}
