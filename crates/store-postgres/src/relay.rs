//! Messages relayed between replicas that a notification cannot carry: a
//! `NOTIFY` payload is at most 8000 bytes, so a larger message (a big sampling or
//! elicitation answer) is written to the table `relayed_messages` and the notification
//! names its row; each replica's session listener reads the row. Rows are never updated;
//! they live [`RelayLimits::ttl`] (every replica may read them meanwhile) and are swept by
//! the next large relay and by the sessions' periodic sweep ([`crate::PgSessions::sweep`]).
//!
//! Bounds (documented defaults, [`RelayLimits::default`]): a message of at most
//! [`MAX_RELAYED_MESSAGE_BYTES`] (1 MiB), at most [`MAX_RELAYED_TOTAL_BYTES`] (16 MiB)
//! stored at once across all replicas (checked under an advisory lock), of which one
//! owner (the owner of the session's shared record: its principal, or its client address
//! without authentication; the session itself when it has no record) holds at most
//! [`MAX_RELAYED_OWNER_BYTES`] (4 MiB), so that one client flooding the table leaves
//! room for the others' answers; each kept [`RELAYED_TTL`] (30 s). A relay over a bound
//! is refused with [`RelayError::Refused`], which the HTTP layer turns into a 400 for the
//! client: never a silent loss.

use std::time::Duration;

use mcp_tasks_core::StoreError;

pub(crate) const STORE: &str =
    "SELECT row_id, used, owner_used FROM relay_store($1, $2, $3, $4, $5, $6, $7)";
pub(crate) const FETCH: &str =
    "SELECT message FROM relayed_messages WHERE id = $1 AND session = $2";

/// The largest relayed message (bytes of its JSON text) by default.
pub const MAX_RELAYED_MESSAGE_BYTES: usize = 1024 * 1024;
/// The most bytes of relayed messages stored at once (all replicas) by default.
pub const MAX_RELAYED_TOTAL_BYTES: usize = 16 * 1024 * 1024;
/// The most bytes of relayed messages one owner (a principal, or a client address
/// without authentication) has stored at once by default: a quarter of the total.
pub const MAX_RELAYED_OWNER_BYTES: usize = MAX_RELAYED_TOTAL_BYTES / 4;
/// How long a stored relayed message is kept by default.
pub const RELAYED_TTL: Duration = Duration::from_secs(30);

/// The bounds of the relayed messages stored in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelayLimits {
    /// The largest message (bytes).
    pub max_message: usize,
    /// The most bytes stored at once.
    pub max_total: usize,
    /// The most bytes one owner has stored at once.
    pub max_per_owner: usize,
    /// How long a stored message is kept.
    pub ttl: Duration,
}

impl Default for RelayLimits {
    fn default() -> Self {
        Self {
            max_message: MAX_RELAYED_MESSAGE_BYTES,
            max_total: MAX_RELAYED_TOTAL_BYTES,
            max_per_owner: MAX_RELAYED_OWNER_BYTES,
            ttl: RELAYED_TTL,
        }
    }
}

impl RelayLimits {
    /// These bounds; one owner may hold a quarter of `max_total`
    /// ([`Self::with_max_per_owner`]).
    pub fn new(max_message: usize, max_total: usize, ttl: Duration) -> Self {
        Self {
            max_message,
            max_total,
            max_per_owner: max_total / 4,
            ttl,
        }
    }

    /// One owner may hold at most `max` bytes at once.
    #[must_use]
    pub fn with_max_per_owner(mut self, max: usize) -> Self {
        self.max_per_owner = max;
        self
    }
}

/// Why a message was not relayed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RelayError {
    /// Over a bound ([`RelayLimits`]): the client should be told (the message is lost
    /// otherwise).
    Refused(String),
    /// The database failed.
    Store(StoreError),
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(m) => f.write_str(m),
            Self::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RelayError {}

impl From<StoreError> for RelayError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn too_large(len: usize, max: usize) -> RelayError {
    RelayError::Refused(format!(
        "the message is {len} bytes, over the {max} bytes a message relayed to another replica may carry"
    ))
}

/// What a relaying statement's row says of a message of `len` bytes: stored (its first
/// column, the row id, is set), or refused by the owner's share (third column: what the
/// owner's messages hold) or by the total (second column: what all hold).
pub(crate) fn stored(
    row: &tokio_postgres::Row,
    len: usize,
    l: &RelayLimits,
) -> Result<(), RelayError> {
    if row.get::<_, Option<i64>>(0).is_some() {
        return Ok(());
    }
    let owner_used: i64 = row.get(2);
    if owner_used.saturating_add(to_i64(len)) > to_i64(l.max_per_owner) {
        return Err(over_share(len, owner_used, l.max_per_owner));
    }
    Err(full(len, row.get(1), l.max_total))
}

pub(crate) fn full(len: usize, used: i64, max: usize) -> RelayError {
    RelayError::Refused(format!(
        "the message of {len} bytes does not fit: {used} of the {max} bytes of messages relayed \
         between replicas are in use; try again later"
    ))
}

pub(crate) fn over_share(len: usize, used: i64, max: usize) -> RelayError {
    RelayError::Refused(format!(
        "the message of {len} bytes does not fit: this client's messages relayed between \
         replicas already take {used} of the {max} bytes one client may hold; try again later"
    ))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
