//! The lifecycle of the requests a [`Peer`] sends: id allocation, the pending map, the
//! timeout, and `notifications/cancelled` when the caller goes away.
//!
//! Spec (basic/utilities/cancellation): "When a party wants to cancel an in-progress
//! request, it sends a `notifications/cancelled` notification"; "The `initialize` request
//! MUST NOT be cancelled by clients". A request future dropped (or timed out) after the
//! request went out and before its answer came sends one, naming the request's id.

use std::borrow::Cow;

use mcp_tasks_proto::{RequestId, methods};
use serde_json::{Value, json};

use crate::error::PeerError;
use crate::peer::{Peer, Route};
use crate::pending::RequestOptions;

/// Removes a pending request whose caller went away, and tells the other side.
struct Outstanding<'a> {
    peer: &'a Peer,
    id: RequestId,
    method: &'a str,
    route: Route,
    reason: Cow<'static, str>,
    sent: bool,
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        if !self.peer.pending().forget(&self.id) || !self.sent {
            return;
        }
        // Spec (lifecycle): "The `initialize` request MUST NOT be cancelled by clients".
        if self.method == methods::INITIALIZE || self.peer.is_closed() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::debug!(id = %self.id, method = self.method, "cancelling an abandoned request");
        let peer = self.peer.clone();
        let route = self.route.clone();
        let params = json!({ "requestId": self.id.to_value(), "reason": self.reason });
        rt.spawn(async move {
            peer.notify(methods::CANCELLED, Some(params), route).await;
        });
    }
}

impl Peer {
    /// Send a request and wait for its response, without a time bound. Dropping the
    /// future before the answer cancels the request (`notifications/cancelled`).
    ///
    /// # Errors
    /// The other side's error, or why no answer came (see [`PeerError`]).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        route: Route,
    ) -> Result<Value, PeerError> {
        self.request_with(method, params, RequestOptions::new(route))
            .await
    }

    /// Send a request and wait for its response as `options` say. Every request this
    /// peer sends goes through here: the peer allocates its id and keeps it pending until
    /// the answer comes, the connection closes or its input ends ([`PeerError::Closed`]),
    /// the transport fails it ([`PeerError::Transport`]), or the timeout runs out
    /// ([`PeerError::Timeout`]). When the caller stops waiting (the future is dropped, or
    /// times out) the request is cancelled with `notifications/cancelled` on its route
    /// (never `initialize`), and a late answer is ignored.
    ///
    /// # Errors
    /// See [`PeerError`].
    pub async fn request_with(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value, PeerError> {
        request(self, method, params, options).await
    }
}

/// Send `method` on `peer` and wait for its answer (see [`Peer::request_with`]).
pub(crate) async fn request(
    peer: &Peer,
    method: &str,
    params: Option<Value>,
    options: RequestOptions,
) -> Result<Value, PeerError> {
    if peer.is_closed() || peer.input_ended().is_cancelled() {
        return Err(PeerError::Closed);
    }
    let (id, rx) = peer.pending().open();
    if let Some(sink) = &options.id_sink {
        let _ = sink.set(id.clone());
    }
    let mut outstanding = Outstanding {
        peer,
        id: id.clone(),
        method,
        route: options.route.clone(),
        reason: options.cancel_reason,
        sent: false,
    };
    let message = mcp_tasks_proto::Message::request(id, method, params);
    peer.send(message, options.route)
        .await
        .map_err(|_| PeerError::Closed)?;
    outstanding.sent = true;
    let closed = peer.closed();
    let ended = peer.input_ended();
    let wait = async {
        tokio::select! {
            r = rx => r.unwrap_or(Err(PeerError::Closed)),
            () = closed.cancelled() => Err(PeerError::Closed),
            () = ended.cancelled() => Err(PeerError::Closed),
        }
    };
    let Some(limit) = options.timeout else {
        return wait.await;
    };
    match tokio::time::timeout(limit, wait).await {
        Ok(out) => out,
        Err(_) => {
            outstanding.reason = Cow::Owned(format!("no answer within {limit:?}"));
            drop(outstanding);
            Err(PeerError::Timeout(limit))
        }
    }
}
