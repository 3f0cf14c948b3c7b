//! JSON-RPC peer of mcp-tasks, and its transports.
//!
//! A [`Peer`] is one logical connection: it dispatches incoming requests to a [`Handler`]
//! concurrently (each with a cancellation token that `notifications/cancelled` fires),
//! matches incoming responses to the requests it sent, and emits every outgoing message as
//! an [`Outbound`] tagged with the [`Route`] it belongs to, so that a transport with
//! several streams (Streamable HTTP) can put each message on the right one. It knows
//! nothing about tasks.

pub mod error;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http-client")]
pub mod http_client;
pub mod line;
mod outgoing;
pub mod peer;
#[cfg(feature = "process")]
pub mod process;
pub mod sse;
pub mod stdio;

pub use error::{PeerError, TransportError, TransportErrorKind};
pub use outgoing::RequestOptions;
pub use peer::{Handler, Outbound, Peer, RequestContext, Route, RouteDelivery};
