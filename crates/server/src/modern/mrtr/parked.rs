//! The direct calls of a server waiting for their retry ([`Parked`]), within the bounds
//! of each requester's share and of the server, in number, bytes and time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use parking_lot::Mutex;
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::asking::Call;
use crate::modern::mrtr_state as st;
use crate::session::Session;

/// Most calls parked at once, per server.
pub const MAX_PARKED: usize = 1024;
/// Most calls parked at once for one requester (its principal; without authentication its
/// client address, [`mcp_tasks_core::Requester::quota_key`]): its share of [`MAX_PARKED`].
pub const MAX_PARKED_PER_REQUESTER: usize = 64;
/// Most bytes parked calls hold at once, per server: the JSON text of their arguments,
/// of the rest of their params and of the client capabilities they carry.
pub const MAX_PARKED_BYTES: usize = 256 * 1024 * 1024;
/// Most bytes the parked calls of one requester hold at once (as [`MAX_PARKED_BYTES`]
/// counts them): twice the default body limit, so one call of the largest body parks.
pub const MAX_PARKED_BYTES_PER_REQUESTER: usize = 32 * 1024 * 1024;
/// How long a parked call waits for its retry; it is dropped then (its handler aborted),
/// and a later retry re-runs the handler.
pub const PARK_TTL: Duration = Duration::from_secs(120);

/// A call waiting for its retry. It keeps no copy of the call's arguments: the handler
/// holds the one copy, and a retry is matched by the state's binding (a digest of the
/// caller, the tool and the arguments).
struct ParkedCall {
    /// Whose share it counts against ([`mcp_tasks_core::Requester::quota_key`]).
    owner: String,
    /// [`st::binding`] of the call.
    binding: String,
    /// What it holds ([`MAX_PARKED_BYTES`]).
    bytes: usize,
    expires: Instant,
    call: Arc<Call>,
}

/// The parked calls, by handle.
type Table = Mutex<HashMap<String, ParkedCall>>;

/// Why a call was not parked (its retry re-runs the handler instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The requester holds [`MAX_PARKED_PER_REQUESTER`] calls, or
    /// [`MAX_PARKED_BYTES_PER_REQUESTER`] bytes with this one.
    Share,
    /// The server holds [`MAX_PARKED`] calls, or [`MAX_PARKED_BYTES`] bytes with this one.
    Server,
}

/// What a call to park is: whose, bound to what, and how large.
pub(crate) struct Parking {
    pub(crate) owner: String,
    pub(crate) binding: String,
    pub(crate) bytes: usize,
}

/// The calls of a server waiting for their retry, by handle, and the key of its
/// `requestState`s.
#[derive(Default)]
pub(crate) struct Parked {
    calls: Arc<Table>,
    key: OnceCell<[u8; 32]>,
}

impl Parked {
    /// How many calls the table holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.calls.lock().len()
    }

    /// The call `handle` names, if it is live and `binding` is its binding (the same
    /// caller, tool and arguments); it is taken out either way.
    pub(super) fn take(&self, handle: &str, binding: &str) -> Option<(Arc<Call>, Parking)> {
        let p = self.calls.lock().remove(handle)?;
        (p.binding == binding && p.expires > Instant::now()).then(|| {
            let parking = Parking {
                owner: p.owner,
                binding: p.binding,
                bytes: p.bytes,
            };
            (p.call, parking)
        })
    }

    /// Park `call` under `handle` for [`PARK_TTL`], within the requester's share and the
    /// server's bounds. A call that does not fit is not parked (it is dropped by the
    /// caller, which aborts its handler): the calls already parked stay, and its retry
    /// re-runs the handler from the answers its `requestState` carries.
    pub(super) fn park(
        &self,
        handle: String,
        parking: Parking,
        call: Arc<Call>,
    ) -> Result<(), Full> {
        let now = Instant::now();
        {
            let mut m = self.calls.lock();
            m.retain(|_, p| p.expires > now);
            let (mut count, mut bytes) = (0, 0);
            for p in m.values().filter(|p| p.owner == parking.owner) {
                count += 1;
                bytes += p.bytes;
            }
            if count >= MAX_PARKED_PER_REQUESTER
                || bytes.saturating_add(parking.bytes) > MAX_PARKED_BYTES_PER_REQUESTER
            {
                return Err(Full::Share);
            }
            let total: usize = m.values().map(|p| p.bytes).sum();
            if m.len() >= MAX_PARKED || total.saturating_add(parking.bytes) > MAX_PARKED_BYTES {
                return Err(Full::Server);
            }
            m.insert(
                handle,
                ParkedCall {
                    owner: parking.owner,
                    binding: parking.binding,
                    bytes: parking.bytes,
                    expires: now + PARK_TTL,
                    call,
                },
            );
        }
        // Dropped at its expiry even when nothing else is parked or taken meanwhile.
        let table = Arc::downgrade(&self.calls);
        tokio::spawn(async move {
            tokio::time::sleep(PARK_TTL).await;
            if let Some(table) = table.upgrade() {
                let now = Instant::now();
                table.lock().retain(|_, p| p.expires > now);
            }
        });
        Ok(())
    }

    /// The key of this server's states: derived from the store's key (the same on every
    /// replica of one database), or random per process without a task store.
    pub(crate) async fn key(&self, session: &Session) -> Result<&[u8; 32], ErrorObject> {
        self.key
            .get_or_try_init(|| async {
                match &session.state.engine {
                    Some(engine) => engine
                        .store()
                        .cursor_key()
                        .await
                        .map(|k| st::derive_key(&k))
                        .map_err(|e| {
                            ErrorObject::internal(format!("the store's key is unavailable: {e}"))
                        }),
                    None => Ok(st::random_key()),
                }
            })
            .await
    }
}
