//! `resources/subscribe` of a 2025-11-25 session: the URIs it watches, and the task that
//! forwards `notifications/resources/updated` for them.
//!
//! Spec (2025-11-25, resources, "Subscriptions"): "The protocol supports optional
//! subscriptions to resource changes. Clients can subscribe to specific resources and
//! receive notifications when they change".

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::{Peer, Route};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::broadcast;

/// The most resources one session may watch at once; a subscription past it is refused
/// with -32602 (unsubscribe first).
pub const MAX_SUBSCRIPTIONS_PER_SESSION: usize = 100;

/// Most bytes of one watched URI: what a session keeps for its life is bounded in size,
/// not only in number (100 URIs of a whole request body each would be 1.6 GB).
pub const MAX_SUBSCRIBED_URI_BYTES: usize = 4096;

/// The URIs one session watches.
#[derive(Debug, Default)]
pub struct Subscriptions {
    uris: Mutex<HashSet<String>>,
    forwarding: AtomicBool,
}

impl Subscriptions {
    /// Watch `uri` (again: no change).
    ///
    /// # Errors
    /// -32602 past [`MAX_SUBSCRIPTIONS_PER_SESSION`] or [`MAX_SUBSCRIBED_URI_BYTES`].
    pub(crate) fn add(&self, uri: &str) -> Result<(), ErrorObject> {
        if uri.len() > MAX_SUBSCRIBED_URI_BYTES {
            return Err(ErrorObject::invalid_params(format!(
                "a watched URI may have at most {MAX_SUBSCRIBED_URI_BYTES} bytes; this one has {}",
                uri.len()
            )));
        }
        let mut uris = self.uris.lock();
        if !uris.contains(uri) && uris.len() >= MAX_SUBSCRIPTIONS_PER_SESSION {
            return Err(ErrorObject::invalid_params(format!(
                "this session already watches {MAX_SUBSCRIPTIONS_PER_SESSION} resources, the most it may: unsubscribe from one first"
            )));
        }
        uris.insert(uri.to_owned());
        Ok(())
    }

    /// Stop watching `uri` (not watched: no change).
    pub(crate) fn remove(&self, uri: &str) {
        self.uris.lock().remove(uri);
    }

    /// Whether `uri` is watched.
    pub fn contains(&self, uri: &str) -> bool {
        self.uris.lock().contains(uri)
    }

    /// How many URIs are watched.
    pub fn len(&self) -> usize {
        self.uris.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Start (once per session) forwarding the updates of `updates` whose URI is watched
    /// to `peer`, until its connection closes.
    pub(crate) fn forward(
        self: &Arc<Self>,
        peer: &Peer,
        mut updates: broadcast::Receiver<Arc<str>>,
    ) {
        if self.forwarding.swap(true, Ordering::AcqRel) {
            return;
        }
        let (me, peer) = (Arc::clone(self), peer.clone());
        let closed = peer.closed();
        tokio::spawn(async move {
            loop {
                let uri = tokio::select! {
                    () = closed.cancelled() => return,
                    next = updates.recv() => match next {
                        Ok(uri) => uri,
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            tracing::debug!(missed = n, "resource updates dropped for a slow session");
                            continue;
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                };
                if me.contains(&uri) {
                    let params = json!({ "uri": &*uri });
                    peer.notify(methods::RESOURCE_UPDATED, Some(params), Route::Standalone)
                        .await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_watches_at_most_the_maximum() {
        let s = Subscriptions::default();
        for i in 0..MAX_SUBSCRIPTIONS_PER_SESSION {
            s.add(&format!("test://{i}")).unwrap();
        }
        s.add("test://0").expect("watched again: no new entry");
        let e = s.add("test://one-more").unwrap_err();
        assert_eq!(e.code, -32602);
        s.remove("test://0");
        s.add("test://one-more").expect("room after an unsubscribe");
        assert_eq!(s.len(), MAX_SUBSCRIPTIONS_PER_SESSION);
    }
}
