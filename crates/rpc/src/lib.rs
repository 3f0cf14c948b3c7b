//! JSON-RPC peer of mcp-tasks, and its transports.
//!
//! A [`Peer`] is one logical connection: it dispatches incoming requests to a [`Handler`]
//! concurrently (each with a cancellation token that `notifications/cancelled` fires),
//! owns the lifecycle of the requests it sends ([`Peer::request_with`]: ids, the pending
//! map, [`RequestOptions::timeout`], `notifications/cancelled` when the caller goes away,
//! a typed [`PeerError`]), and emits every outgoing message as an [`Outbound`] tagged with
//! the [`Route`] it belongs to, so that a transport with several streams (Streamable HTTP)
//! can put each message on the right one. It knows nothing about tasks.
//!
//! Besides the transports ([`stdio`], `http`, `http_client`) it holds the pieces they and
//! their users share: the bounded line reader ([`line`](mod@line)), the one SSE parser ([`sse`]) and,
//! with the `process` feature, the process-group guard of stdio children (`process`).

pub mod error;

/// The hasher of the maps every request looks up (the sessions by id, the requests in
/// flight and waiting for their answer by request id): foldhash, seeded at random per
/// process, several times cheaper than the standard library's SipHash on these short
/// keys (~1.5 % of a `tasks/get`'s instructions went to SipHash). A client picks its
/// request ids, but only within its own session's maps, which its bounds keep small.
pub(crate) type FastHash = foldhash::fast::RandomState;

#[doc(hidden)]
pub mod fuzz;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http-client")]
pub mod http_client;
pub mod line;
mod outgoing;
pub mod peer;
mod pending;
#[cfg(feature = "process")]
pub mod process;
mod route;
pub mod sse;
pub mod stdio;

/// Make rustls's `ring` provider the process's default, for the HTTPS clients (reqwest)
/// built after it; a no-op when a provider is already installed.
#[cfg(feature = "http-client-tls")]
pub(crate) fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub use error::{PeerError, TransportError, TransportErrorKind};
pub use peer::{Handler, Outbound, Peer, RequestContext, Route, RouteDelivery};
pub use pending::RequestOptions;
