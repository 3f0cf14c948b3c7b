//! Sessions shared between replicas: a [`SessionDirectory`] (a table in the task store's
//! database) that every replica of a server asks when a request names a session it does
//! not hold, so that any replica serves any request with no affinity at the load balancer.
//!
//! A session lives in the directory from its successful `initialize` to its end: a
//! `DELETE`, its idle expiry (`expires_at_ms`, pushed forward as the session is used), or
//! its replacement beyond the session bounds. A replica that meets an unknown session id
//! looks it up once and keeps a local copy (its handler rebuilt from the shared state:
//! negotiated version, client capabilities, principal); the directory tells every replica
//! when a session ends, and each ends its copy. Streams (SSE replay buffers, requests in
//! flight) stay on the replica that holds them.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use mcp_tasks_proto::logged::digest;
use mcp_tasks_proto::{Message, RequestId, methods};

use super::HttpSession;
use crate::http::{Refused, Shared};
use crate::peer::Peer;

/// A session as every replica sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SharedSession {
    /// The session id (`Mcp-Session-Id`).
    pub id: String,
    /// The principal it belongs to (`None` without authentication).
    pub principal: Option<String>,
    /// Whose sessions it counts with against the per-principal bound.
    pub owner: String,
    /// The handler's state ([`crate::Handler::shared_state`]).
    pub state: Value,
    /// When it expires unless used (milliseconds since the Unix epoch).
    pub expires_at_ms: i64,
}

impl SharedSession {
    /// A session record.
    pub fn new(
        id: String,
        principal: Option<String>,
        owner: String,
        state: Value,
        expires_at_ms: i64,
    ) -> Self {
        Self {
            id,
            principal,
            owner,
            state,
            expires_at_ms,
        }
    }
}

/// Why [`SessionDirectory::relay`] did not pass a message on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayFailure {
    /// Over one of the directory's bounds (too large, or too much in flight): the client
    /// is told (HTTP 400 with a JSON-RPC error), since the message is otherwise lost.
    Refused(String),
    /// The directory failed (logged; the message is still applied locally).
    Failed(String),
}

/// What the directory tells the replicas about ended sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// This session ended (on any replica).
    Session(String),
    /// Ends may have been missed (the directory's connection was lost): check every local
    /// copy with [`SessionDirectory::existing`].
    Unknown,
    /// Another replica received `message` (a response, or `notifications/cancelled`) from
    /// the client of `session` and did not hold what it answers or cancels
    /// ([`SessionDirectory::relay`]).
    Relayed {
        /// The session whose client sent it.
        session: String,
        /// The JSON-RPC message.
        message: Value,
    },
}

/// Called with each [`Ended`].
pub type EndedCallback = Arc<dyn Fn(Ended) + Send + Sync>;

/// Where the sessions of every replica are kept. Errors are messages for logs and for
/// the client (they never carry a secret).
#[async_trait]
pub trait SessionDirectory: Send + Sync + 'static {
    /// Record the new session `s`. Beyond `per_owner` sessions of its owner, the owner's
    /// sessions closest to expiry end to make room (as a single server replaces its idlest
    /// session); their ids are returned.
    async fn insert(&self, s: &SharedSession, per_owner: usize) -> Result<Vec<String>, String>;

    /// The session `id`, if it exists and has not expired at `now_ms`.
    async fn find(&self, id: &str, now_ms: i64) -> Result<Option<SharedSession>, String>;

    /// The session `id` was used: it expires at `expires_at_ms` at the earliest. `false`
    /// when it no longer exists.
    async fn touch(&self, id: &str, expires_at_ms: i64) -> Result<bool, String>;

    /// End session `id` everywhere.
    async fn remove(&self, id: &str) -> Result<(), String>;

    /// End the sessions expired at `now_ms`; their ids.
    async fn sweep(&self, now_ms: i64) -> Result<Vec<String>, String>;

    /// Which of `ids` still exist.
    async fn existing(&self, ids: &[String]) -> Result<Vec<String>, String>;

    /// Call `f` for every session that ends from now on (on any replica), and for every
    /// message relayed by another replica.
    fn on_ended(&self, f: EndedCallback);

    /// Pass `message`, a response or a `notifications/cancelled` the client of `session`
    /// sent to this replica about a request this replica does not hold, to every replica
    /// (as [`Ended::Relayed`]): the one whose request it answers or cancels applies it.
    /// A directory without replicas does nothing.
    ///
    /// # Errors
    /// [`RelayFailure::Refused`] when the message is over a bound of the directory.
    async fn relay(&self, session: &str, message: &Value) -> Result<(), RelayFailure> {
        let _ = (session, message);
        Ok(())
    }

    /// The copy of `session` on this replica sends request `id` to the client: record it
    /// as pending until [`Self::request_done`] (bounded per session by the directory), so
    /// that the client's answer reaching another replica is relayed
    /// ([`Self::relay_answer`]). Awaited before the request goes out.
    async fn request_sent(&self, session: &str, id: i64) -> Result<(), String> {
        let _ = (session, id);
        Ok(())
    }

    /// Request `id` of `session` is no longer pending: answered on this replica, or
    /// cancelled.
    async fn request_done(&self, session: &str, id: i64) -> Result<(), String> {
        let _ = (session, id);
        Ok(())
    }

    /// As [`Self::relay`] for `message`, the client's answer to request `id` of
    /// `session`, which this replica did not send: passed on only when a replica's copy of
    /// the session recorded it pending ([`Self::request_sent`]), which it then no longer
    /// is. `Ok(false)`: pending nowhere, nothing passed on. The default relays it.
    ///
    /// # Errors
    /// As [`Self::relay`].
    async fn relay_answer(
        &self,
        session: &str,
        id: i64,
        message: &Value,
    ) -> Result<bool, RelayFailure> {
        let _ = id;
        self.relay(session, message).await.map(|()| true)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Why a session of another replica could not be served here.
pub(crate) enum LoadError {
    /// The directory failed.
    Directory(String),
    /// This process's session bounds.
    Refused(Refused),
}

impl Shared {
    /// With a directory: how this process's copies of shared sessions reach the other
    /// replicas ([`super::listener`]); the task that relays for all of them starts with the
    /// first.
    pub(crate) fn relay(&self) -> Option<super::listener::Relay> {
        let dir = self.config.sessions.as_ref()?;
        let relay = self.relay.get_or_init(|| {
            let (tx, rx) = tokio::sync::mpsc::channel(super::listener::RELAY_QUEUE);
            let kept = Arc::clone(dir);
            let dir = Arc::clone(dir);
            tokio::spawn(super::listener::relay_all(rx, move |session, note| {
                let dir = Arc::clone(&dir);
                async move {
                    if let Err(e) = dir.relay(&session, &note).await {
                        let e = match e {
                            RelayFailure::Refused(why) | RelayFailure::Failed(why) => why,
                        };
                        tracing::warn!(session = %digest(&session), error = %e, "could not pass a message of the session's standalone stream to another replica");
                    }
                }
            }));
            super::listener::Relay {
                me: Arc::from(super::new_session_id()),
                tx,
                dir: kept,
            }
        });
        Some(relay.clone())
    }

    /// Register the copy `s` of a session another replica started, within this process's
    /// bounds; the copy already registered if another request loaded it meanwhile.
    pub(crate) fn admit_copy(
        &self,
        s: Arc<HttpSession>,
        owner: &str,
    ) -> Result<Arc<HttpSession>, Refused> {
        if let Some(existing) = self.session(&s.id) {
            s.end();
            return Ok(existing);
        }
        self.admit(&s, owner)?;
        // Two loads of one id at once: the first registered wins.
        match self.session(&s.id) {
            Some(kept) if !Arc::ptr_eq(&kept, &s) => {
                s.end();
                Ok(kept)
            }
            _ => Ok(s),
        }
    }

    /// The session `id` as the directory holds it, loaded here as a local copy, if it
    /// exists and belongs to `principal` (another principal's session looks exactly like
    /// an unknown one). `Ok(None)` without a directory.
    pub(crate) async fn load_shared(
        self: &Arc<Self>,
        id: &str,
        principal: Option<&String>,
    ) -> Result<Option<Arc<HttpSession>>, LoadError> {
        let Some(dir) = &self.config.sessions else {
            return Ok(None);
        };
        let now = now_ms();
        let Some(rec) = dir.find(id, now).await.map_err(LoadError::Directory)? else {
            return Ok(None);
        };
        if rec.principal.as_ref() != principal {
            return Ok(None);
        }
        let Some(handler) = self.factory.restore(rec.principal.as_deref(), &rec.state) else {
            tracing::debug!(session = %digest(id), "a shared session could not be restored here");
            return Ok(None);
        };
        let (peer, outbound) = Peer::new(handler);
        let s = HttpSession::start(
            rec.id,
            rec.principal,
            peer,
            outbound,
            self.config.limits(),
            Arc::clone(&self.replay_bytes),
        );
        s.set_stored_until(rec.expires_at_ms);
        s.set_initialized();
        s.number_streams_randomly();
        if let Some(relay) = self.relay() {
            s.set_relay(relay);
            s.ask_listener();
        }
        tracing::debug!(session = %digest(&s.id), "session started on another replica served here");
        self.admit_copy(s, &rec.owner)
            .map(Some)
            .map_err(LoadError::Refused)
    }

    /// A request named session `s`: with a directory, push its expiry there when a quarter
    /// of the idle period has passed since this process last did (in the background; a
    /// session that no longer exists there ends here too).
    pub(crate) fn touch_shared(self: &Arc<Self>, s: &Arc<HttpSession>) {
        let Some(dir) = &self.config.sessions else {
            return;
        };
        let idle = i64::try_from(self.config.session_idle.as_millis()).unwrap_or(i64::MAX);
        let Some(until) = s.touch_due(now_ms(), idle) else {
            return;
        };
        let (dir, me, s) = (Arc::clone(dir), Arc::downgrade(self), Arc::clone(s));
        tokio::spawn(async move {
            match dir.touch(&s.id, until).await {
                Ok(true) => {}
                Ok(false) => {
                    if let Some(me) = me.upgrade() {
                        me.ended_elsewhere(&s.id);
                    }
                }
                Err(e) => {
                    s.set_stored_until(i64::MIN);
                    tracing::warn!(session = %digest(&s.id), error = %e, "could not renew a shared session");
                }
            }
        });
    }

    /// Session `id` ended on another replica (or in the directory): end the copy here.
    pub(crate) fn ended_elsewhere(&self, id: &str) {
        if let Some(s) = self.remove(id) {
            tracing::debug!(session = %digest(id), "session ended on another replica");
            s.end();
        }
    }

    /// Another replica relayed `message` from the client of session `id`
    /// ([`SessionDirectory::relay`]): applied to this replica's copy of that session only
    /// (an answer never reaches another session, as on one server), and only when it
    /// answers a request of ours still waiting or cancels a request being served here.
    pub(crate) async fn relayed(&self, id: &str, message: Value) {
        let Some(s) = self.session(id) else { return };
        let Ok(message) = Message::from_value(message) else {
            return;
        };
        match &message {
            Message::Response(r) if s.peer.pending().contains(&r.id) => {}
            Message::Error(e) if e.id.as_ref().is_some_and(|i| s.peer.pending().contains(i)) => {}
            Message::Notification(n) if n.method == methods::CANCELLED => {
                let Some(rid) = cancelled_id(n.params.as_ref()) else {
                    return;
                };
                if !s.peer.is_inflight(&rid) {
                    return;
                }
                tracing::debug!(session = %digest(id), id = %rid, "cancellation relayed by another replica");
                s.peer.receive(message).await;
                s.request_cancelled(&rid);
                return;
            }
            _ => return,
        }
        tracing::debug!(session = %digest(id), "response relayed by another replica");
        s.peer.receive(message).await;
    }

    /// With a directory: pass `message` from the client of session `s` to the other
    /// replicas when this one holds no request it answers or cancels (a plain call's
    /// request went out, or its handler runs, on the replica its POST reached).
    ///
    /// # Errors
    /// Why the directory refused the message (over its bounds): the caller answers 400.
    pub(crate) async fn relay_if_foreign(
        &self,
        s: &HttpSession,
        message: &Message,
    ) -> Result<(), String> {
        let Some(dir) = &self.config.sessions else {
            return Ok(());
        };
        let answered = match message {
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let foreign = match message {
            Message::Notification(n) if n.method == methods::CANCELLED => {
                cancelled_id(n.params.as_ref()).is_some_and(|i| !s.peer.is_inflight(&i))
            }
            _ => false,
        };
        let answer = match answered {
            // Answered here: no longer pending for the other replicas.
            Some(RequestId::Number(n)) if s.peer.pending().contains(&RequestId::Number(*n)) => {
                let (dir, session, n) = (Arc::clone(dir), s.id.clone(), *n);
                tokio::spawn(async move {
                    if let Err(e) = dir.request_done(&session, n).await {
                        tracing::debug!(session = %digest(&session), error = %e, "an answered request stays recorded until its session's sweep");
                    }
                });
                return Ok(());
            }
            Some(RequestId::Number(n)) => Some(*n),
            // A task's request (its id chosen by the task engine) is answered through the
            // task store's mailbox wherever the task runs; any other id was sent by nobody.
            _ => None,
        };
        if answer.is_none() && !foreign {
            return Ok(());
        }
        let Ok(value) = serde_json::from_str::<Value>(&message.to_json()) else {
            return Ok(());
        };
        let relayed = match answer {
            Some(n) => dir.relay_answer(&s.id, n, &value).await.map(|pending| {
                if !pending {
                    tracing::debug!(session = %digest(&s.id), id = n, "an answer to a request pending on no replica was dropped");
                }
            }),
            None => dir.relay(&s.id, &value).await,
        };
        match relayed {
            Ok(()) => Ok(()),
            Err(RelayFailure::Refused(why)) => {
                tracing::warn!(session = %digest(&s.id), reason = %why, "a message to relay to the other replicas was refused");
                Err(why)
            }
            Err(RelayFailure::Failed(e)) => {
                tracing::warn!(session = %digest(&s.id), error = %e, "could not relay a message to the other replicas");
                Ok(())
            }
        }
    }

    /// Check every local copy against the directory (ends may have been missed).
    pub(crate) async fn resync(self: Arc<Self>) {
        let Some(dir) = &self.config.sessions else {
            return;
        };
        let ids: Vec<String> = self.all().iter().map(|s| s.id.clone()).collect();
        if ids.is_empty() {
            return;
        }
        match dir.existing(&ids).await {
            Ok(live) => {
                let live: HashSet<String> = live.into_iter().collect();
                for id in ids.iter().filter(|id| !live.contains(*id)) {
                    self.ended_elsewhere(id);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not check the shared sessions"),
        }
    }

    /// With a directory: end the sessions expired everywhere, and keep the sessions in use
    /// here (an open stream, a request in flight) from expiring there.
    pub(crate) async fn sweep_shared(self: &Arc<Self>) {
        let Some(dir) = &self.config.sessions else {
            return;
        };
        for s in self.all() {
            if s.is_busy() {
                self.touch_shared(&s);
            }
        }
        match dir.sweep(now_ms()).await {
            Ok(ids) => {
                for id in ids {
                    tracing::info!(session = %digest(&id), "session expired after being idle");
                    self.ended_elsewhere(&id);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not sweep the shared sessions"),
        }
    }
}

/// The `requestId` of a `notifications/cancelled`'s params.
fn cancelled_id(params: Option<&Value>) -> Option<RequestId> {
    serde_json::from_value(params?.get("requestId")?.clone()).ok()
}
