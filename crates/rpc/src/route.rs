//! Where an outgoing message goes: the stream it belongs to ([`Route`]) and how a
//! handler's messages on its request's stream reach the other side ([`RouteDelivery`]).

use mcp_tasks_proto::{Message, RequestId};

/// Which stream an outgoing message belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Route {
    /// Sent while serving this incoming request (its response, and requests or
    /// notifications related to it).
    Request(RequestId),
    /// Tied to no open request.
    Standalone,
}

/// How the messages a handler sends on its request's route (before the response) reach
/// the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteDelivery {
    /// On the connection every route shares (stdio), in order with everything else.
    #[default]
    Shared,
    /// On a stream of the request's own (a Streamable HTTP SSE response), which the other
    /// side may drop while the session lives on.
    OwnStream,
    /// Not with this request: the other side accepts one JSON response only (a Streamable
    /// HTTP POST without `text/event-stream` in `Accept`); the transport diverts such
    /// messages to its standalone stream.
    Diverted,
}

/// An outgoing message and its route.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// The message.
    pub message: Message,
    /// The stream it belongs to.
    pub route: Route,
}
