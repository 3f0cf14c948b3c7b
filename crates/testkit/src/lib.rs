//! Test support shared by the crates of mcp-tasks.
//!
//! * `conformance`: the suite every [`mcp_tasks_core::TaskStore`] must pass;
//! * `oauth`: a test authorization server (metadata, JWKS) and signed access tokens;
//! * `proxy`: a round-robin HTTP proxy with no stickiness (each request to the next
//!   replica), for tests of several replicas behind a load balancer;
//! * `schema`: validation of wire messages against the official schemas (2025-11-25 and
//!   2026-07-28);
//! * `wire`: the requestor's side of an in-process server or gateway, over
//!   `tokio::io::duplex`;
//! * [`NoRequestor`]: a requestor channel for engine tests whose tasks ask nothing.

pub mod conformance;
pub mod oauth;
pub mod proxy;
pub mod schema;
pub mod wire;

use mcp_tasks_proto::ErrorObject;
use serde_json::Value;

/// A [`mcp_tasks_core::RequestorChannel`] with no one behind it: requests fail,
/// notifications go nowhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRequestor;

#[async_trait::async_trait]
impl mcp_tasks_core::RequestorChannel for NoRequestor {
    async fn request(&self, _method: &str, _params: Value) -> Result<Value, ErrorObject> {
        Err(ErrorObject::internal("no requestor"))
    }
    async fn notify(&self, _method: &str, _params: Value) {}
}
