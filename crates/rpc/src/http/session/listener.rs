//! With sessions shared between replicas: the session's standalone (GET) stream follows
//! the replica that holds the client's GET, wherever the message for it comes from.
//!
//! A message with no request stream to go on (a task's `notifications/progress` and
//! `notifications/tasks/status` once its `tools/call` is answered, say) is routed by the
//! replica that has it (A), to the session's standalone stream. When no connection reads
//! that stream on A, and another replica (R) last said that it holds the session's GET,
//! A passes the message to R through the directory (`SessionDirectory::relay`, a
//! `pg_notify` on PostgreSQL) instead of keeping it where nobody reads it; R puts it on
//! its standalone stream. A replica that starts serving the session's GET says so to the
//! others (one relay per GET), and each of them passes on what its own standalone stream
//! holds undelivered: nothing waits on a replica the client no longer reads.
//!
//! Spec (2025-11-25, Streamable HTTP): "The server MAY send JSON-RPC requests and
//! notifications on the stream" (the GET stream), and "The server MUST send each of its
//! JSON-RPC messages on only one of the connected streams": a message is kept by exactly
//! one replica at a time (moved, never copied).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_tasks_proto::Message;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::super::stream::{STANDALONE, StreamBuf};
use super::HttpSession;

/// The key of a relayed note saying which replica holds the session's GET.
const LISTENER: &str = "mcp-tasks.listener";
/// The key of a relayed standalone message addressed to one replica.
const TO: &str = "mcp-tasks.to";
/// The key of a relayed question: which replica holds the session's GET?
const ASK: &str = "mcp-tasks.ask";

/// Messages waiting to be relayed, in this process (each is small; the directory's relay
/// bounds them, 1 MiB each on PostgreSQL). Past it, a message stays on this replica's
/// standalone stream, as without replicas.
pub(crate) const RELAY_QUEUE: usize = 4096;

/// How a shared session's copy reaches the other replicas: this process's replica id and
/// the queue of one task that relays in order (PostgreSQL delivers notifications in commit
/// order, so a task's progress stays in order).
#[derive(Clone)]
pub(crate) struct Relay {
    pub(crate) me: Arc<str>,
    pub(crate) tx: mpsc::Sender<(String, Value)>,
}

impl Relay {
    /// Queue `message` of `session` for replica `to`; `false` when the queue is full.
    fn forward(&self, session: &str, to: &str, message: Value) -> bool {
        let note = json!({ TO: to, "message": message });
        self.tx.try_send((session.to_owned(), note)).is_ok()
    }
}

/// A relayed note that is one of these (not a client's message), read.
pub(crate) enum Note<'a> {
    /// Replica `.0` holds the session's GET now.
    Listener(&'a str),
    /// A standalone message for replica `to`.
    To { to: &'a str, message: &'a Value },
    /// A replica that just loaded the session asks which one holds its GET.
    Ask,
}

impl<'a> Note<'a> {
    /// `value` as a note of this module, if it is one.
    pub(crate) fn parse(value: &'a Value) -> Option<Self> {
        if let Some(l) = value.get(LISTENER).and_then(Value::as_str) {
            return Some(Self::Listener(l));
        }
        if value.get(ASK).is_some() {
            return Some(Self::Ask);
        }
        let to = value.get(TO).and_then(Value::as_str)?;
        Some(Self::To {
            to,
            message: value.get("message")?,
        })
    }
}

impl HttpSession {
    /// Make this session's standalone stream follow the replica holding its GET (a session
    /// shared between replicas).
    pub(crate) fn set_relay(&self, relay: Relay) {
        let _ = self.relay.set(relay);
    }

    /// `message` has no request stream: on the standalone stream here, unless nobody reads
    /// it here and another replica holds the session's GET (then it goes there).
    pub(crate) fn to_standalone(&self, streams: &mut HashMap<u64, StreamBuf>, message: &Message) {
        if let Some(relay) = self.relay.get()
            && !streams.get(&STANDALONE).is_some_and(|s| s.is_connected())
            && let Some(to) = self.listener.lock().clone()
            && *to != *relay.me
            && let Ok(value) = serde_json::from_str::<Value>(&message.to_json())
            && relay.forward(&self.id, &to, value)
        {
            return;
        }
        super::push_standalone(streams, message, self.limits.standalone());
    }

    /// This replica starts serving the session's GET: the others are told, so that what
    /// they hold for the stream comes here.
    pub(crate) fn announce_listener(&self) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        *self.listener.lock() = Some(Arc::clone(&relay.me));
        let note = json!({ LISTENER: &*relay.me });
        if relay.tx.try_send((self.id.clone(), note)).is_err() {
            tracing::warn!(session = %mcp_tasks_proto::logged::digest(&self.id), "the relay queue is full: the other replicas do not learn where this session's GET is");
        }
    }

    /// This replica just loaded a copy of the session: the replica holding its GET (if
    /// any) is asked to say so again, so that what this copy routes to the standalone
    /// stream goes there.
    pub(crate) fn ask_listener(&self) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        let note = json!({ ASK: &*relay.me });
        if relay.tx.try_send((self.id.clone(), note)).is_err() {
            tracing::warn!(session = %mcp_tasks_proto::logged::digest(&self.id), "the relay queue is full: this replica does not learn where this session's GET is");
        }
    }

    /// A note of another replica about this session.
    pub(crate) fn noted(&self, note: &Note<'_>) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        match *note {
            Note::Listener(l) if l == &*relay.me => {}
            Note::Listener(l) => {
                let to: Arc<str> = Arc::from(l);
                *self.listener.lock() = Some(Arc::clone(&to));
                let mut st = self.state.lock();
                let Some(s) = st.streams.get_mut(&STANDALONE) else {
                    return;
                };
                if s.is_connected() {
                    return;
                }
                let mut kept = Vec::new();
                for text in s.take_undelivered() {
                    let Ok(value) = serde_json::from_str::<Value>(&text) else {
                        continue;
                    };
                    if !relay.forward(&self.id, &to, value) {
                        kept.push(text);
                    }
                }
                for text in kept {
                    if let Ok(m) = Message::parse(text.as_bytes()) {
                        super::push_standalone(&mut st.streams, &m, self.limits.standalone());
                    }
                }
            }
            Note::To { to, message } if to == &*relay.me => {
                let Ok(m) = Message::from_value(message.clone()) else {
                    return;
                };
                let mut st = self.state.lock();
                super::push_standalone(&mut st.streams, &m, self.limits.standalone());
            }
            Note::To { .. } => {}
            Note::Ask => {
                let mine = self
                    .listener
                    .lock()
                    .as_ref()
                    .is_some_and(|l| **l == *relay.me);
                if mine {
                    self.announce_listener();
                }
            }
        }
    }
}

/// The task that relays the queued notes of every shared session of this process, in
/// order, through `relay` (the directory's).
pub(crate) async fn relay_all<F, Fut>(mut rx: mpsc::Receiver<(String, Value)>, relay: F)
where
    F: Fn(String, Value) -> Fut,
    Fut: Future<Output = ()>,
{
    while let Some((session, note)) = rx.recv().await {
        relay(session, note).await;
    }
}
