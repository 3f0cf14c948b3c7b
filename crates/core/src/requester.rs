//! [`Requester`]: who is asking, and what its tasks and limits are bound to.

use crate::record::TaskRecord;
use crate::store::ListScope;

/// Who is asking. Tasks are bound to `principal`; `sees_all` is the local stdio peer,
/// which sees its whole store.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requester {
    /// The authenticated principal, if any.
    pub principal: Option<String>,
    /// Whether this requester may see every task (stdio: the local peer owns the store).
    pub sees_all: bool,
    /// An opaque id of the session (connection) the request came on, unique per session
    /// and unguessable. Without a principal it is what a session's own state is bound to:
    /// its answers to relayed requests and (HTTP without auth) its task quota. Never sent to
    /// a peer.
    pub session: Option<String>,
    /// The network address of a client without a principal whose requests have no
    /// session of their own to count against (2026-07-28 requests over HTTP, each served
    /// statelessly): what its per-requester limits count against, as connection limits
    /// count anonymous clients. A client cannot renew it for free, as it could a session.
    pub client_address: Option<std::net::IpAddr>,
}

impl Requester {
    /// The local peer of a stdio server.
    pub fn local() -> Self {
        Self {
            sees_all: true,
            ..Self::default()
        }
    }

    /// Spec: "If context-binding is available, receivers MUST reject `tasks/get`,
    /// `tasks/result`, and `tasks/cancel` requests for tasks that do not belong to the same
    /// authorization context as the requestor."
    pub fn can_see(&self, rec: &TaskRecord) -> bool {
        self.sees_all || rec.task.owner == self.principal
    }

    /// What this requester's tasks count against for the per-requester limits (active
    /// tasks, stored tasks, stored bytes, rate limits, the suspicious-pattern watch): its
    /// principal when it has one; else the local stdio peer (one key); else its
    /// [`client address`](Self::client_address) when it has no session of its own (an
    /// anonymous 2026-07-28 request: one key per address, not per request); else its
    /// session, so that without auth each HTTP session has its own quota and one client
    /// cannot lock task creation for the others. Prefixed so that a principal can never
    /// share a session's or an address's key.
    pub fn quota_key(&self) -> String {
        match (
            &self.principal,
            self.sees_all,
            self.client_address,
            &self.session,
        ) {
            // Joined, not `format!`ted: this runs on every `tasks/get` (its poll-rate check).
            (Some(p), ..) => ["principal:", p].concat(),
            (None, true, ..) => LOCAL_QUOTA_KEY.to_owned(),
            (None, false, Some(a), _) => format!("address:{a}"),
            (None, false, None, Some(s)) => ["session:", s].concat(),
            (None, false, None, None) => "anonymous".to_owned(),
        }
    }

    /// The `tasks/list` scope, or `None` when this requester cannot be identified.
    pub fn list_scope(&self) -> Option<ListScope> {
        if self.sees_all {
            Some(ListScope::All)
        } else {
            self.principal.clone().map(ListScope::Owner)
        }
    }
}

/// The quota key of the local stdio peer (and of tasks stored before quota keys existed
/// that were bound to no one).
pub const LOCAL_QUOTA_KEY: &str = "local";
