//! Sessions shared between replicas: the `sessions` table, and a listener that
//! tells this process when a session ends on any replica.
//!
//! A row is written once at `initialize`, read once by each other replica that meets the
//! session, pushed forward (`expires_ms`) at most every quarter of the idle period per
//! replica, and deleted when the session ends (`DELETE`, idle expiry, replacement beyond
//! the per-principal bound). A row trigger notifies every deletion on the channel
//! `<schema>_sessions` with the session id; one listener connection per
//! [`PgSessions`] receives them.

use std::sync::Arc;

use mcp_tasks_core::StoreError;
use mcp_tasks_proto::logged::digest;
use mcp_tasks_proto::session::SharedSession;
use parking_lot::Mutex;
use tokio_postgres::types::ToSql;

use crate::answers;
use crate::db::Db;
use crate::listen::{listen_on, new_backoff};
use crate::options::PgConfig;
use crate::relay::{self, RelayError, RelayLimits};

const INSERT: &str = "SELECT session_insert($1, $2, $3, $4, $5, $6)";
const FIND: &str =
    "SELECT principal, owner, state, expires_ms FROM sessions WHERE id = $1 AND expires_ms > $2";
const TOUCH: &str = "UPDATE sessions SET expires_ms = greatest(expires_ms, $2) WHERE id = $1";
const REMOVE: &str = "DELETE FROM sessions WHERE id = $1";
/// Also sweeps the relayed messages past their TTL (`relay.rs`), in the same statement.
/// And the pending requests past their TTL (`answers.rs`).
const SWEEP: &str = "WITH relayed AS (DELETE FROM relayed_messages WHERE expires_ms <= $1), \
     requests AS (DELETE FROM session_requests WHERE expires_ms <= $1) \
     DELETE FROM sessions WHERE id IN (SELECT id FROM sessions \
     WHERE expires_ms <= $1 ORDER BY expires_ms LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING id";
const RELAY: &str = "SELECT pg_notify($1, $2)";
const EXISTING: &str = "SELECT id FROM sessions WHERE id = ANY($1)";

/// A shared session as stored: its handler's state as the bytes of its JSON.
pub type SessionRow = SharedSession<Vec<u8>>;

/// What ended, as the listener tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEnded {
    /// This session ended.
    Id(String),
    /// The listener (re)connected: ends may have been missed.
    Resync,
    /// A replica relayed a message of a session's client ([`PgSessions::relay`]): the
    /// session id and the message (JSON text).
    Message {
        /// The session.
        session: String,
        /// The JSON-RPC message, as text.
        message: String,
    },
}

/// The largest relayed message carried by the notification itself (bytes of its payload):
/// PostgreSQL's limit on a `NOTIFY` payload is 8000 bytes. A larger one goes through the
/// table `relayed_messages` (`RelayLimits`).
pub const MAX_RELAYED_BYTES: usize = 7900;

type Callback = Arc<dyn Fn(SessionEnded) + Send + Sync>;

/// The sessions table of a [`PgStore`](crate::PgStore)'s database and schema. Cheap to
/// clone; shares the store's connection pool. Its listener runs once [`Self::on_ended`]
/// is called, until the last clone is dropped.
#[derive(Clone)]
pub struct PgSessions {
    db: Db,
    cfg: PgConfig,
    limits: RelayLimits,
    listener: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

mcp_tasks_proto::debug_non_exhaustive!(PgSessions, |s| { store: s.cfg.description() });

impl Drop for PgSessions {
    fn drop(&mut self) {
        if Arc::strong_count(&self.listener) == 1
            && let Some(t) = self.listener.lock().take()
        {
            t.abort();
        }
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl PgSessions {
    /// The sessions table of the store whose pool `db` runs on, configured by `cfg`
    /// ([`PgStore::sessions`](crate::PgStore::sessions)).
    pub(crate) fn new(db: Db, cfg: PgConfig) -> Self {
        PgSessions {
            db,
            cfg,
            limits: RelayLimits::default(),
            listener: Arc::new(Mutex::new(None)),
        }
    }

    /// The channel of this schema's session notifications, and the payload of the one
    /// that carries `message` of `session` (see [`MAX_RELAYED_BYTES`]).
    fn notification(&self, session: &str, message: &str) -> (String, String) {
        let channel = format!("{}_sessions", self.cfg.options.schema);
        let payload = serde_json::json!({"session": session, "message": message}).to_string();
        (channel, payload)
    }

    /// The limits within which a message too large for a notification is stored in
    /// `relayed_messages`, and its time to live (ms); a message over
    /// [`RelayLimits::max_message`] is refused.
    fn stored_limits(&self, message: &str) -> Result<(RelayLimits, i64), RelayError> {
        let l = self.limits;
        if message.len() > l.max_message {
            return Err(relay::too_large(message.len(), l.max_message));
        }
        let ttl = i64::try_from(l.ttl.as_millis()).unwrap_or(i64::MAX);
        Ok((l, ttl))
    }

    /// Run `sql` (the statement of function `function`), which stores `message`, too large
    /// for a notification, in `relayed_messages` within the limits ([`Self::stored_limits`]):
    /// its params are `channel`, `session`, `id` when there is one, the message, now, its
    /// time to live and the limits. The row it returns, and those limits.
    async fn store_relayed(
        &self,
        sql: &str,
        function: &str,
        channel: &str,
        session: &str,
        id: Option<i64>,
        message: &str,
    ) -> Result<(tokio_postgres::Row, RelayLimits), RelayError> {
        let (l, ttl) = self.stored_limits(message)?;
        let (bytes, now) = (message.as_bytes(), relay::now_ms());
        let (max_total, max_per_owner) =
            (relay::to_i64(l.max_total), relay::to_i64(l.max_per_owner));
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&channel, &session];
        if let Some(id) = &id {
            params.push(id);
        }
        params.extend([
            &bytes as &(dyn ToSql + Sync),
            &now,
            &ttl,
            &max_total,
            &max_per_owner,
        ]);
        let row = self.db.query(sql, &params).await?.into_iter().next();
        let row = row.ok_or_else(|| StoreError::Corrupt(format!("{function} returned no row")))?;
        Ok((row, l))
    }

    /// The session ids a statement returns (its first column).
    async fn ids(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<String>, StoreError> {
        Ok(self
            .db
            .query(sql, params)
            .await?
            .iter()
            .filter_map(|r| r.get::<_, Option<String>>(0))
            .collect())
    }

    /// Insert `row`; beyond `per_owner` sessions of its owner, end the owner's sessions
    /// closest to expiry. One round trip. The ids ended.
    ///
    /// # Errors
    /// The database fails (or the id exists).
    pub async fn insert(
        &self,
        row: &SessionRow,
        per_owner: usize,
    ) -> Result<Vec<String>, StoreError> {
        let per_owner = to_i64(per_owner.max(1));
        self.ids(
            INSERT,
            &[
                &row.id,
                &row.principal,
                &row.owner,
                &row.state,
                &row.expires_ms,
                &per_owner,
            ],
        )
        .await
    }

    /// The session `id` unless it expired at `now_ms`. One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn find(&self, id: &str, now_ms: i64) -> Result<Option<SessionRow>, StoreError> {
        Ok(self
            .db
            .query(FIND, &[&id, &now_ms])
            .await?
            .first()
            .map(|r| SessionRow::new(id.to_owned(), r.get(0), r.get(1), r.get(2), r.get(3))))
    }

    /// Push the expiry of `id` to `expires_ms` at least; `false` when it no longer exists.
    /// One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn touch(&self, id: &str, expires_ms: i64) -> Result<bool, StoreError> {
        let (c, st) = self.db.prepared(TOUCH).await?;
        let n = c
            .execute(&st, &[&id, &expires_ms])
            .await
            .map_err(|e| self.db.err(&e))?;
        Ok(n > 0)
    }

    /// End session `id` everywhere. One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn remove(&self, id: &str) -> Result<(), StoreError> {
        self.db.query(REMOVE, &[&id]).await.map(|_| ())
    }

    /// End the sessions expired at `now_ms` (at most 1000; replicas sweeping at once skip
    /// each other's rows); their ids. One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn sweep(&self, now_ms: i64) -> Result<Vec<String>, StoreError> {
        self.ids(SWEEP, &[&now_ms]).await
    }

    /// Which of `ids` exist. One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn existing(&self, ids: &[String]) -> Result<Vec<String>, StoreError> {
        self.ids(EXISTING, &[&ids]).await
    }

    /// These bounds for the relayed messages stored in the table (default
    /// [`RelayLimits::default`]).
    #[must_use]
    pub fn with_relay_limits(mut self, limits: RelayLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Pass `message` (JSON text) of the client of `session` to every replica's listener
    /// ([`SessionEnded::Message`]), on the sessions' channel: one round trip. A message
    /// whose notification fits [`MAX_RELAYED_BYTES`] is carried by it (nothing stored); a
    /// larger one is stored in `relayed_messages` for [`RelayLimits::ttl`] and the
    /// notification names its row, which each listener reads (one more round trip per
    /// replica).
    ///
    /// # Errors
    /// [`RelayError::Refused`] for a message over [`RelayLimits::max_message`], or when
    /// the stored messages would pass [`RelayLimits::max_total`], or those of the
    /// session's owner [`RelayLimits::max_per_owner`]; else the database fails.
    pub async fn relay(&self, session: &str, message: &str) -> Result<(), RelayError> {
        let (channel, payload) = self.notification(session, message);
        if payload.len() <= MAX_RELAYED_BYTES {
            return self
                .db
                .query(RELAY, &[&channel, &payload])
                .await
                .map(|_| ())
                .map_err(RelayError::from);
        }
        let (row, l) = self
            .store_relayed(
                relay::STORE,
                "relay_store",
                &channel,
                session,
                None,
                message,
            )
            .await?;
        relay::stored(&row, message.len(), &l)
    }

    /// The peer of a copy of `session` sends request `id` to the client: it is pending
    /// (so that an answer reaching another replica is relayed, [`Self::relay_answer`]),
    /// for [`answers::PENDING_REQUEST_TTL`] at most, within the session's
    /// [`answers::MAX_PENDING_REQUESTS_PER_SESSION`] newest. Nothing is recorded for a
    /// session the table does not hold. One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn request_sent(&self, session: &str, id: i64) -> Result<(), StoreError> {
        let ttl = i64::try_from(answers::PENDING_REQUEST_TTL.as_millis()).unwrap_or(i64::MAX);
        let expires = relay::now_ms().saturating_add(ttl);
        let max = relay::to_i64(answers::MAX_PENDING_REQUESTS_PER_SESSION);
        self.db
            .query(answers::PUT, &[&session, &id, &expires, &max])
            .await
            .map(|_| ())
    }

    /// Request `id` of `session` is no longer pending (answered on the replica that sent
    /// it, or cancelled). One round trip.
    ///
    /// # Errors
    /// The database fails.
    pub async fn request_done(&self, session: &str, id: i64) -> Result<(), StoreError> {
        self.db
            .query(answers::DONE, &[&session, &id])
            .await
            .map(|_| ())
    }

    /// As [`Self::relay`], for `message`, the client's answer to request `id` of
    /// `session`: relayed only when a copy of the session has that request pending
    /// ([`Self::request_sent`]), in the same statement, which ends its pending state.
    /// `Ok(false)`: pending nowhere, nothing relayed or stored. One round trip.
    ///
    /// # Errors
    /// As [`Self::relay`] (a refused answer stays pending, for a retry).
    pub async fn relay_answer(
        &self,
        session: &str,
        id: i64,
        message: &str,
    ) -> Result<bool, RelayError> {
        let (channel, payload) = self.notification(session, message);
        let now = relay::now_ms();
        if payload.len() <= MAX_RELAYED_BYTES {
            let rows = self
                .db
                .query(
                    answers::RELAY_SMALL,
                    &[&channel, &payload, &session, &id, &now],
                )
                .await?;
            return Ok(!rows.is_empty());
        }
        let (row, l) = self
            .store_relayed(
                answers::RELAY_LARGE,
                "relay_store_answer",
                &channel,
                session,
                Some(id),
                message,
            )
            .await?;
        if !row.get::<_, bool>(3) {
            return Ok(false);
        }
        relay::stored(&row, message.len(), &l)?;
        Ok(true)
    }

    /// Call `f` with the id of every session that ends from now on, on any replica, and
    /// with [`SessionEnded::Resync`] each time the listener (re)connects. Replaces any
    /// earlier callback.
    pub fn on_ended(&self, f: impl Fn(SessionEnded) + Send + Sync + 'static) {
        let f: Callback = Arc::new(f);
        let task = tokio::spawn(listen_forever(self.cfg.clone(), self.db.clone(), f));
        if let Some(old) = self.listener.lock().replace(task) {
            old.abort();
        }
    }
}

async fn listen_forever(cfg: PgConfig, db: Db, f: Callback) {
    let mut backoff = new_backoff();
    loop {
        let mut listened = false;
        if let Err(e) = listen_once(&cfg, &db, &f, &mut listened).await {
            tracing::warn!(store = %cfg.description(), error = %e, "the session listener failed; reconnecting");
        }
        if listened {
            backoff = new_backoff();
        }
        let delay = backoff.next().unwrap_or(std::time::Duration::from_secs(5));
        tokio::time::sleep(delay).await;
    }
}

async fn listen_once(
    cfg: &PgConfig,
    db: &Db,
    f: &Callback,
    listened: &mut bool,
) -> Result<(), tokio_postgres::Error> {
    let channel = format!("{}_sessions", cfg.options.schema);
    let listening = || {
        *listened = true;
        f(SessionEnded::Resync);
    };
    listen_on(cfg, &channel, listening, |payload| deliver(db, f, payload)).await
}

fn deliver(db: &Db, f: &Callback, p: &str) {
    // A session id is visible ASCII without `{`; a relayed message is a JSON object,
    // carrying the message or naming its row in `relayed_messages`.
    if p.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(p).unwrap_or_default();
        let Some(session) = v.get("session").and_then(serde_json::Value::as_str) else {
            return;
        };
        let session = session.to_owned();
        if let Some(message) = v.get("message").and_then(serde_json::Value::as_str) {
            f(SessionEnded::Message {
                session,
                message: message.to_owned(),
            });
        } else if let Some(row) = v.get("row").and_then(serde_json::Value::as_i64) {
            let (db, f) = (db.clone(), Arc::clone(f));
            tokio::spawn(async move {
                match db.query(relay::FETCH, &[&row, &session]).await {
                    Ok(rows) => {
                        let Some(bytes) = rows.first().map(|r| r.get::<_, Vec<u8>>(0)) else {
                            return;
                        };
                        if let Ok(message) = String::from_utf8(bytes) {
                            f(SessionEnded::Message { session, message });
                        }
                    }
                    Err(e) => {
                        tracing::warn!(session = %digest(&session), error = %e, "could not read a relayed message");
                    }
                }
            });
        }
    } else {
        f(SessionEnded::Id(p.to_owned()));
    }
}
