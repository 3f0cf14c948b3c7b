//! Several replicas on one database: the sessions they share.
//!
//! `serve_http` asks the [`SessionDirectory`] of the store (a table of the PostgreSQL
//! store, `docs/adr/0006-replicas.md`) when a request names a session this process does
//! not hold, and rebuilds the session from what its [`Session`] shared at `initialize`:
//! the negotiated version, the client's capabilities and info, and the requester (its
//! principal, and without authentication the session key its task quota counts against).

use std::sync::Arc;

use mcp_tasks_core::Requester;
use mcp_tasks_rpc::Handler;
use mcp_tasks_rpc::http::SessionDirectory;
use serde_json::Value;

use crate::Server;
use crate::session::{Negotiated, Session};

/// Where a server's sessions are shared with its other replicas.
pub(crate) type Directory = Arc<dyn SessionDirectory>;

/// The handler of a session of `principal` another replica started, from its shared
/// `state` ([`mcp_tasks_rpc::Handler::shared_state`] of a [`Session`]); `None` when the
/// state is not one (a newer replica's, say) or this server is a gateway.
pub(crate) fn restore(
    server: &Server,
    principal: Option<&str>,
    state: &Value,
) -> Option<Arc<dyn Handler>> {
    if server.state().extension.is_some() {
        return None;
    }
    let negotiated = Negotiated {
        protocol_version: state.get("protocolVersion")?.as_str()?.to_owned(),
        client_capabilities: Arc::new(state.get("clientCapabilities")?.clone()),
        client_info: state.get("clientInfo").cloned().unwrap_or(Value::Null),
    };
    let requester = Requester {
        principal: principal.map(str::to_owned),
        sees_all: false,
        session: state
            .get("session")
            .and_then(Value::as_str)
            .map(str::to_owned),
        client_address: None,
    };
    let session: Arc<Session> = server.session(requester, principal.is_some());
    session.set_negotiated(negotiated);
    Some(session)
}

#[cfg(feature = "postgres")]
pub(crate) use pg::directory;

#[cfg(feature = "postgres")]
mod pg {
    use std::sync::Arc;

    use async_trait::async_trait;
    use mcp_tasks_rpc::http::{
        Ended, EndedCallback, RelayFailure, SessionDirectory, SharedSession,
    };
    use mcp_tasks_store_postgres::{PgSessions, PgStore, RelayError, SessionEnded, SessionRow};

    use super::Directory;

    /// The shared sessions of the PostgreSQL store `store`.
    pub(crate) fn directory(store: &PgStore) -> Directory {
        Arc::new(Pg(store.sessions()))
    }

    struct Pg(PgSessions);

    fn text(e: mcp_tasks_core::StoreError) -> String {
        e.to_string()
    }

    #[async_trait]
    impl SessionDirectory for Pg {
        async fn insert(&self, s: &SharedSession, per_owner: usize) -> Result<Vec<String>, String> {
            let state = serde_json::to_vec(&s.state).map_err(|e| e.to_string())?;
            let row = SessionRow::new(
                s.id.clone(),
                s.principal.clone(),
                s.owner.clone(),
                state,
                s.expires_ms,
            );
            self.0.insert(&row, per_owner).await.map_err(text)
        }

        async fn find(&self, id: &str, now_ms: i64) -> Result<Option<SharedSession>, String> {
            let Some(row) = self.0.find(id, now_ms).await.map_err(text)? else {
                return Ok(None);
            };
            let Ok(state) = serde_json::from_slice(&row.state) else {
                tracing::warn!(session = %mcp_tasks_proto::logged::digest(id), "a shared session's state is not JSON; ignored");
                return Ok(None);
            };
            Ok(Some(row.with_state(state)))
        }

        async fn touch(&self, id: &str, expires_at_ms: i64) -> Result<bool, String> {
            self.0.touch(id, expires_at_ms).await.map_err(text)
        }

        async fn remove(&self, id: &str) -> Result<(), String> {
            self.0.remove(id).await.map_err(text)
        }

        async fn sweep(&self, now_ms: i64) -> Result<Vec<String>, String> {
            self.0.sweep(now_ms).await.map_err(text)
        }

        async fn existing(&self, ids: &[String]) -> Result<Vec<String>, String> {
            self.0.existing(ids).await.map_err(text)
        }

        async fn relay(
            &self,
            session: &str,
            message: &serde_json::Value,
        ) -> Result<(), RelayFailure> {
            self.0
                .relay(session, &message.to_string())
                .await
                .map_err(|e| match e {
                    RelayError::Refused(why) => RelayFailure::Refused(why),
                    other => RelayFailure::Failed(other.to_string()),
                })
        }

        async fn request_sent(&self, session: &str, id: i64) -> Result<(), String> {
            self.0.request_sent(session, id).await.map_err(text)
        }

        async fn request_done(&self, session: &str, id: i64) -> Result<(), String> {
            self.0.request_done(session, id).await.map_err(text)
        }

        async fn relay_answer(
            &self,
            session: &str,
            id: i64,
            message: &serde_json::Value,
        ) -> Result<bool, RelayFailure> {
            self.0
                .relay_answer(session, id, &message.to_string())
                .await
                .map_err(|e| match e {
                    RelayError::Refused(why) => RelayFailure::Refused(why),
                    other => RelayFailure::Failed(other.to_string()),
                })
        }

        fn on_ended(&self, f: EndedCallback) {
            self.0.on_ended(move |e| match e {
                SessionEnded::Id(id) => f(Ended::Session(id)),
                SessionEnded::Message { session, message } => {
                    if let Ok(message) = serde_json::from_str(&message) {
                        f(Ended::Relayed { session, message });
                    }
                }
                _ => f(Ended::Unknown),
            });
        }
    }
}
