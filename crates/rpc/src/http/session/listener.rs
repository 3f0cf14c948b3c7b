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
//! A task's notifications follow the client's open `tasks/result` of that task the same
//! way. On one replica a task's `notifications/progress` and `notifications/tasks/status`
//! go on the newest open `tasks/result` stream of the task (the engine's deliverer), else
//! to the standalone stream. A replica (B) that starts serving a `tasks/result` of task T
//! on a stream (SSE accepted) says so to the others; the replica running T (A), whose
//! engine holds no `tasks/result` of T, routes T's notifications (by their related-task
//! `_meta`, or the `taskId` of a status) to B, which puts them on that request's stream,
//! as its own engine would, or on its standalone stream (or the GET holder's) when that
//! request is over. B holds the `tasks/result` response back, [`FINAL_WAIT`] at most,
//! until T's terminal status relayed by A is on the stream: the relay keeps A's order, so
//! every progress notification A sent before comes first, as on one server.
//!
//! Spec (2025-11-25, Streamable HTTP): "The server MAY send JSON-RPC requests and
//! notifications on the stream" (the GET stream), and "The server MUST send each of its
//! JSON-RPC messages on only one of the connected streams": a message is kept by exactly
//! one replica at a time (moved, never copied).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks_proto::{Message, RequestId, meta, methods};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::super::stream::{STANDALONE, StreamBuf};
use super::{HttpSession, State};
use crate::peer::{Outbound, Route};

/// The key of a relayed note saying which replica holds the session's GET.
const LISTENER: &str = "mcp-tasks.listener";
/// The key of a relayed standalone message addressed to one replica.
const TO: &str = "mcp-tasks.to";
/// The key of a relayed question: which replica holds the session's GET?
const ASK: &str = "mcp-tasks.ask";
/// The key of a relayed note saying which replica serves a `tasks/result` of a task (and
/// of a relayed message for that request's stream): the task id.
const TASK: &str = "mcp-tasks.task";
/// The key of a relayed note: this replica serves a `tasks/result` of the task `TASK`.
const RESULT: &str = "mcp-tasks.result";

/// The most tasks whose `tasks/result` a session's copy follows: those it serves (B), and
/// those another replica serves (A). Past it, the newest replaces the oldest on A, and B
/// announces no more (their notifications go to the standalone stream, as before).
pub(crate) const MAX_FOLLOWED: usize = 64;

/// How long a replica holds back the response of a `tasks/result` it serves for a task
/// running on another replica, once that replica relayed a message of the task to it,
/// waiting for the task's terminal `notifications/tasks/status` (the task's last message,
/// relayed in order after everything else it sent).
pub(crate) const FINAL_WAIT: Duration = Duration::from_secs(1);

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
    /// The directory (which records the requests a copy sends, [`HttpSession::outgoing`]).
    pub(crate) dir: Arc<dyn super::directory::SessionDirectory>,
}

impl Relay {
    /// Queue `message` of `session` for replica `to`; `false` when the queue is full.
    fn forward(&self, session: &str, to: &str, message: Value) -> bool {
        let note = json!({ TO: to, "message": message });
        self.tx.try_send((session.to_owned(), note)).is_ok()
    }

    /// Queue `message` of task `task` of `session` for replica `to`, for its `tasks/result`
    /// of that task; `false` when the queue is full.
    fn forward_task(&self, session: &str, to: &str, task: &str, message: Value) -> bool {
        let note = json!({ TO: to, TASK: task, "message": message });
        self.tx.try_send((session.to_owned(), note)).is_ok()
    }
}

/// A `tasks/result` of task T this copy serves on a stream, for T's notifications relayed
/// by the replica running T.
pub(crate) struct Follow {
    /// The `tasks/result` request.
    rid: RequestId,
    /// Whether a message of T relayed by another replica went on its stream.
    relayed: bool,
    /// Its response, held back until T's terminal status is on the stream.
    held: Option<Message>,
}

/// The task a message is about, and whether it is the task's terminal status: the
/// related-task `_meta` of its params, or the `taskId` of a `notifications/tasks/status`.
fn task_of(message: &Message) -> Option<(&str, bool)> {
    let Message::Notification(n) = message else {
        return None;
    };
    let params = n.params.as_ref()?;
    if n.method == methods::TASK_STATUS {
        let task = params.get("taskId")?.as_str()?;
        let terminal = matches!(
            params.get("status").and_then(Value::as_str),
            Some("completed" | "failed" | "cancelled")
        );
        return Some((task, terminal));
    }
    Some((meta::related_task(params)?, false))
}

/// A relayed note that is one of these (not a client's message), read.
pub(crate) enum Note<'a> {
    /// Replica `.0` holds the session's GET now.
    Listener(&'a str),
    /// A standalone message for replica `to`; with `task`, for its `tasks/result` of
    /// that task.
    To {
        to: &'a str,
        task: Option<&'a str>,
        message: &'a Value,
    },
    /// A replica that just loaded the session asks which one holds its GET.
    Ask,
    /// Replica `replica` serves a `tasks/result` of task `task` on a stream.
    Result { replica: &'a str, task: &'a str },
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
        let task = value.get(TASK).and_then(Value::as_str);
        if let Some(replica) = value.get(RESULT).and_then(Value::as_str) {
            return Some(Self::Result {
                replica,
                task: task?,
            });
        }
        let to = value.get(TO).and_then(Value::as_str)?;
        Some(Self::To {
            to,
            task,
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

    /// `message` has no request stream: to the replica serving a `tasks/result` of the
    /// task it is about, if another one does; else on the standalone stream here, unless
    /// nobody reads it here and another replica holds the session's GET (then it goes
    /// there).
    pub(crate) fn to_standalone(&self, streams: &mut HashMap<u64, StreamBuf>, message: &Message) {
        if let Some(relay) = self.relay.get()
            && let Some((task, terminal)) = task_of(message)
            && let Some(to) = self.result_holder(task, terminal)
            && *to != *relay.me
            && let Ok(value) = serde_json::from_str::<Value>(&message.to_json())
            && relay.forward_task(&self.id, &to, task, value)
        {
            return;
        }
        self.to_standalone_untasked(streams, message);
    }

    /// The replica that last said it serves a `tasks/result` of `task`; with `last` (the
    /// task's terminal status: nothing more of it follows), forgotten.
    fn result_holder(&self, task: &str, last: bool) -> Option<Arc<str>> {
        let mut followed = self.followed.lock();
        let i = followed.iter().position(|(t, _)| t == task)?;
        if last {
            return followed.remove(i).map(|(_, r)| r);
        }
        Some(Arc::clone(&followed[i].1))
    }

    /// [`Self::to_standalone`] without the `tasks/result` of another replica: a message
    /// another replica relayed for a `tasks/result` no longer served here goes at most to
    /// the GET holder (never back and forth).
    fn to_standalone_untasked(&self, streams: &mut HashMap<u64, StreamBuf>, message: &Message) {
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

    /// This copy serves `tasks/result` `rid` of task `task` on a stream (SSE accepted): the
    /// other replicas are told, so that the task's notifications come to it when the task
    /// runs on one of them. Within [`MAX_FOLLOWED`] requests (those no longer pending go
    /// first).
    pub(crate) fn follow_task(&self, task: &str, rid: &RequestId) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        {
            let mut st = self.state.lock();
            let State {
                pending, follows, ..
            } = &mut *st;
            follows.retain(|_, f| pending.contains_key(&f.rid));
            if follows.len() >= MAX_FOLLOWED && !follows.contains_key(task) {
                return;
            }
            follows.insert(
                task.to_owned(),
                Follow {
                    rid: rid.clone(),
                    relayed: false,
                    held: None,
                },
            );
        }
        let note = json!({ RESULT: &*relay.me, TASK: task });
        if relay.tx.try_send((self.id.clone(), note)).is_err() {
            tracing::warn!(session = %mcp_tasks_proto::logged::digest(&self.id), "the relay queue is full: the other replicas do not learn where a tasks/result of this session is");
        }
    }

    /// The response `message` to request `id` is being routed: held back (`None`) when
    /// `id` is a `tasks/result` this copy serves for a task running on another replica
    /// that relayed a message of the task here and not yet its terminal status (released
    /// by that status, or after [`FINAL_WAIT`]).
    pub(crate) fn hold_reply(
        &self,
        st: &mut State,
        id: &RequestId,
        message: Message,
    ) -> Option<Message> {
        if st.follows.is_empty() {
            return Some(message);
        }
        let Some((task, f)) = st.follows.iter_mut().find(|(_, f)| f.rid == *id) else {
            return Some(message);
        };
        if !f.relayed || f.held.is_some() {
            let task = task.clone();
            st.follows.remove(&task);
            return Some(message);
        }
        f.held = Some(message);
        let (task, rid, this) = (task.clone(), id.clone(), self.this.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                tokio::time::sleep(FINAL_WAIT).await;
                if let Some(s) = this.upgrade() {
                    s.release_reply(&task, &rid);
                }
            });
        }
        None
    }

    /// Route the response held back for `tasks/result` `rid` of `task`, if it still is.
    fn release_reply(&self, task: &str, rid: &RequestId) {
        let abandoned = {
            let mut st = self.state.lock();
            if st.follows.get(task).is_none_or(|f| f.rid != *rid) {
                return;
            }
            let Some(held) = st.follows.remove(task).and_then(|f| f.held) else {
                return;
            };
            tracing::debug!(session = %mcp_tasks_proto::logged::digest(&self.id), "no terminal status of a task running on another replica came: its tasks/result answered");
            self.route_locked(
                &mut st,
                Outbound {
                    message: held,
                    route: Route::Request(rid.clone()),
                },
            );
            self.enforce(&mut st, Instant::now())
        };
        self.cancel_requests(abandoned, "the replay buffers of the session are full");
    }

    /// `message` of task `task`, relayed by the replica running it: on this copy's
    /// `tasks/result` of the task when it still serves one, else as a standalone message.
    fn relayed_for_task(&self, task: &str, message: Message) {
        let terminal = task_of(&message).is_some_and(|(t, last)| t == task && last);
        let abandoned = {
            let mut st = self.state.lock();
            let rid = st
                .follows
                .get(task)
                .map(|f| f.rid.clone())
                .filter(|rid| st.pending.contains_key(rid));
            let Some(rid) = rid else {
                st.follows.remove(task);
                self.to_standalone_untasked(&mut st.streams, &message);
                return;
            };
            self.route_locked(
                &mut st,
                Outbound {
                    message,
                    route: Route::Request(rid.clone()),
                },
            );
            let held = st.follows.get_mut(task).and_then(|f| {
                f.relayed = true;
                if terminal { f.held.take() } else { None }
            });
            if terminal {
                st.follows.remove(task);
            }
            if let Some(reply) = held {
                self.route_locked(
                    &mut st,
                    Outbound {
                        message: reply,
                        route: Route::Request(rid),
                    },
                );
            }
            self.enforce(&mut st, Instant::now())
        };
        self.cancel_requests(abandoned, "the replay buffers of the session are full");
    }

    /// `out` is about to go on a stream of this copy of a shared session: a request to the
    /// client (numbered by the peer) is recorded in the directory as pending first, so
    /// that its answer reaching another replica is relayed here (and only an answer to a
    /// request pending somewhere is); a `notifications/cancelled` for one of them (its
    /// caller went away or timed out) ends that, in the background.
    pub(crate) async fn outgoing(&self, out: &Outbound) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        match &out.message {
            Message::Request(r) => {
                let RequestId::Number(n) = r.id else { return };
                if let Err(e) = relay.dir.request_sent(&self.id, n).await {
                    tracing::warn!(session = %mcp_tasks_proto::logged::digest(&self.id), error = %e, "a request to the client is not recorded for the other replicas: its answer must come to this one");
                }
            }
            Message::Notification(n) if n.method == methods::CANCELLED => {
                let Some(RequestId::Number(id)) = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                else {
                    return;
                };
                let (dir, session) = (Arc::clone(&relay.dir), self.id.clone());
                tokio::spawn(async move {
                    if let Err(e) = dir.request_done(&session, id).await {
                        tracing::debug!(session = %mcp_tasks_proto::logged::digest(&session), error = %e, "a cancelled request stays recorded until its session's sweep");
                    }
                });
            }
            _ => {}
        }
    }

    /// This replica starts serving the session's GET: the others are told, so that what
    /// they hold for the stream comes here.
    pub(crate) fn announce_listener(&self) {
        if let Some(relay) = self.relay.get() {
            *self.listener.lock() = Some(Arc::clone(&relay.me));
        }
        self.relay_note(
            LISTENER,
            "the other replicas do not learn where this session's GET is",
        );
    }

    /// This replica just loaded and registered a copy of the session (registered first:
    /// the answer is applied to registered copies only): the replica holding its GET (if
    /// any) is asked to say so again, so that what this copy routes to the standalone
    /// stream goes there.
    pub(crate) fn ask_listener(&self) {
        self.relay_note(
            ASK,
            "this replica does not learn where this session's GET is",
        );
    }

    /// Send the other replicas the note `{key: this replica}` about this session (with a
    /// directory); when the relay queue is full it is dropped, with a warning saying what
    /// is `lost`.
    fn relay_note(&self, key: &str, lost: &str) {
        let Some(relay) = self.relay.get() else {
            return;
        };
        let note = json!({ key: &*relay.me });
        if relay.tx.try_send((self.id.clone(), note)).is_err() {
            tracing::warn!(session = %mcp_tasks_proto::logged::digest(&self.id), "the relay queue is full: {lost}");
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
                // Under the state lock (as routing reads it): a message routed meanwhile
                // either is among the undelivered passed on below, or follows them.
                let mut st = self.state.lock();
                *self.listener.lock() = Some(Arc::clone(&to));
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
            Note::To {
                to,
                task: Some(task),
                message,
            } if to == &*relay.me => {
                let Ok(m) = Message::from_value(message.clone()) else {
                    return;
                };
                self.relayed_for_task(task, m);
            }
            Note::To { to, message, .. } if to == &*relay.me => {
                let Ok(m) = Message::from_value(message.clone()) else {
                    return;
                };
                let mut st = self.state.lock();
                super::push_standalone(&mut st.streams, &m, self.limits.standalone());
            }
            Note::To { .. } => {}
            Note::Result { replica, .. } if replica == &*relay.me => {}
            Note::Result { replica, task } => {
                let mut followed = self.followed.lock();
                followed.retain(|(t, _)| t != task);
                if followed.len() >= MAX_FOLLOWED {
                    followed.pop_front();
                }
                followed.push_back((task.to_owned(), Arc::from(replica)));
            }
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
