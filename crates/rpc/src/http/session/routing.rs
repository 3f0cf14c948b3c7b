//! The router of a session's outgoing messages: each goes on exactly one stream (its
//! request's SSE stream, the JSON answer a POST waits for, or the standalone stream).

use std::sync::Arc;
use std::time::Instant;

use mcp_tasks_proto::{Message, RequestId};
use tokio::sync::mpsc;

use super::{First, HttpSession, Pending, State};
use crate::http::stream::StreamBuf;
use crate::peer::{Outbound, Route};

impl HttpSession {
    /// Drain the peer's outgoing messages onto streams until the session ends.
    pub(crate) async fn route_all(self: Arc<Self>, mut outbound: mpsc::Receiver<Outbound>) {
        loop {
            let next = tokio::select! {
                m = outbound.recv() => m,
                () = self.ended.cancelled() => None,
            };
            let Some(out) = next else { break };
            self.outgoing(&out).await;
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
    pub(super) fn route(&self, out: Outbound) {
        let abandoned = {
            let mut st = self.state.lock();
            self.route_locked(&mut st, out);
            self.enforce(&mut st, Instant::now())
        };
        self.cancel_requests(abandoned, "the replay buffers of the session are full");
    }

    pub(super) fn route_locked(&self, st: &mut State, out: Outbound) {
        let limits = self.limits.buffer;
        let Outbound { message, route } = out;
        let id = match route {
            Route::Standalone => {
                self.to_standalone(&mut st.streams, &message);
                return;
            }
            Route::Request(id) => id,
        };
        let reply = is_reply_to(&message, &id);
        let message = if reply && !st.follows.is_empty() {
            match self.hold_reply(st, &id, message) {
                Some(m) => m,
                None => return,
            }
        } else {
            message
        };
        let State {
            pending,
            streams,
            next_stream,
            meter,
            ..
        } = st;
        match pending.remove(&id) {
            Some(Pending::Waiting { tx, upgrade, tag }) => {
                if reply {
                    let _ = tx.send(First::Response(message));
                } else if upgrade {
                    let n = *next_stream;
                    *next_stream += 1;
                    let mut s = StreamBuf::tagged(n, Some(id.clone()), tag, Instant::now(), meter);
                    s.push(&message, limits);
                    streams.insert(n, s);
                    pending.insert(id, Pending::Stream(n));
                    // If the POST is gone, the stream stays for a resuming GET.
                    let _ = tx.send(First::Upgraded(n));
                } else {
                    pending.insert(id, Pending::Waiting { tx, upgrade, tag });
                    self.to_standalone(streams, &message);
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
                None => self.to_standalone(streams, &message),
            },
            None if reply => {
                tracing::debug!(id = %id, "response to a request nobody waits for dropped");
            }
            None => self.to_standalone(streams, &message),
        }
    }

    /// A new SSE stream answering request `id`, registered as its pending answer; `tag`
    /// goes into its event ids (see [`resume`](super::resume)).
    pub(crate) fn new_request_stream(st: &mut State, id: RequestId, tag: Option<Arc<str>>) -> u64 {
        let n = st.next_stream;
        st.next_stream += 1;
        let s = StreamBuf::tagged(n, Some(id.clone()), tag, Instant::now(), &st.meter);
        st.streams.insert(n, s);
        st.pending.insert(id, Pending::Stream(n));
        n
    }

    /// The client cancelled request `id`: its handler will not answer, so end its stream
    /// (or its waiting JSON answer).
    pub(crate) fn request_cancelled(&self, id: &RequestId) {
        let mut st = self.state.lock();
        match st.pending.remove(id) {
            Some(Pending::Stream(n)) => {
                if let Some(s) = st.streams.get_mut(&n) {
                    s.finish();
                }
            }
            Some(Pending::Waiting { .. }) | None => {}
        }
    }
}

fn is_reply_to(message: &Message, id: &RequestId) -> bool {
    match message {
        Message::Response(r) => r.id == *id,
        Message::Error(e) => e.id.as_ref() == Some(id),
        _ => false,
    }
}
