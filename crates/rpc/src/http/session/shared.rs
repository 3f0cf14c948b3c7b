//! How this process serves the sessions of a [`SessionDirectory`]: a local copy of a
//! session another replica started, its row kept alive while it is used, the relay of
//! its messages to and from the replica that holds its streams, and the ends of sessions
//! told by the other replicas (see [`super::directory`]).

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use mcp_tasks_proto::logged::digest;
use mcp_tasks_proto::{Message, RequestId, methods};

use super::HttpSession;
use super::directory::{RelayFailure, now_ms};
use super::listener;
use crate::http::state::{Refused, Shared};
use crate::peer::Peer;

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
    pub(crate) fn relay(&self) -> Option<listener::Relay> {
        let dir = self.config.sessions.as_ref()?;
        let relay = self.relay.get_or_init(|| {
            let (tx, rx) = tokio::sync::mpsc::channel(listener::RELAY_QUEUE);
            let kept = Arc::clone(dir);
            let dir = Arc::clone(dir);
            tokio::spawn(listener::relay_all(rx, move |session, note| {
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
            listener::Relay {
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
        s.set_stored_until(rec.expires_ms);
        s.set_initialized();
        s.number_streams_randomly();
        if let Some(relay) = self.relay() {
            s.set_relay(relay);
        }
        tracing::debug!(session = %digest(&s.id), "session started on another replica served here");
        let kept = self
            .admit_copy(Arc::clone(&s), &rec.owner)
            .map_err(LoadError::Refused)?;
        // Asked only once the copy is registered: the answer (a note of the session) is
        // applied to the registered copy only, and may come back before this returns.
        if Arc::ptr_eq(&kept, &s) {
            s.ask_listener();
        }
        Ok(Some(kept))
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
