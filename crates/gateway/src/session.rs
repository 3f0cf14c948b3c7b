//! The gateway side of one downstream session, over a lane: the session's
//! [`ToolSource`] (the upstream's tools) and its [`Fallback`] (everything else goes
//! upstream).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use mcp_tasks_core::Requester;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, Revision, methods};
use mcp_tasks_rpc::{Peer, RequestContext};
use mcp_tasks_server::{ExtensionFactory, Fallback, SessionParts, Tool, ToolSource};
use serde_json::{Value, json};

use crate::lane::{FIRST_START_WAIT, LaneInner, Lease, Limits, merge_initialize};
use crate::modern::ModernLanes;
use crate::notes::Notes;
use crate::resume::GatewayResumer;
use futures::future::BoxFuture;
use mcp_tasks_client::connect::Connector;

/// Makes one gateway session (the private `GatewaySession`) per downstream session.
pub struct GatewayFactory {
    connector: Arc<dyn Connector>,
    overrides: Arc<BTreeMap<String, TaskSupport>>,
    /// Where upstream tasks are noted: a directory given at construction, replaced by the
    /// task store's notes when the store offers them ([`ExtensionFactory::attach_store`]).
    notes: Mutex<Option<Arc<Notes>>>,
    limits: Arc<Limits>,
    /// The lanes of 2026-07-28 requests, one per principal ([`crate::modern`]).
    modern: Arc<ModernLanes>,
}

mcp_tasks_proto::debug_non_exhaustive!(GatewayFactory, |s| { upstream: s.connector.describe() });

impl GatewayFactory {
    /// Sessions in front of what `connector` connects to, with per-tool task support
    /// `overrides`.
    pub fn new(connector: Arc<dyn Connector>, overrides: BTreeMap<String, TaskSupport>) -> Self {
        Self {
            connector,
            overrides: Arc::new(overrides),
            notes: Mutex::new(None),
            limits: Arc::new(Limits::default()),
            modern: Arc::default(),
        }
    }

    /// A new lane (not started) in front of the upstream, and the first lease on it.
    fn open_lane(&self) -> Lease {
        LaneInner::open_lane(
            Arc::clone(&self.connector),
            Arc::clone(&self.overrides),
            self.notes.lock().clone(),
            Arc::clone(&self.limits),
        )
    }

    /// Bound the upstream connections and calls with `limits`.
    #[must_use]
    pub(crate) fn with_limits(mut self, limits: Arc<Limits>) -> Self {
        self.limits = limits;
        self
    }

    /// Note upstream tasks in `notes`, so that they survive a restart (see
    /// [`crate::resume`]).
    #[must_use]
    pub(crate) fn with_notes(self, notes: Arc<Notes>) -> Self {
        *self.notes.lock() = Some(notes);
        self
    }

    /// The resumer of the noted tasks, if notes are kept.
    pub(crate) fn resumer(&self) -> Option<GatewayResumer> {
        self.notes.lock().as_ref().map(|n| {
            GatewayResumer::new(
                Arc::clone(n),
                Arc::clone(&self.connector),
                Arc::clone(&self.overrides),
                Arc::clone(&self.limits),
            )
        })
    }
}

impl ExtensionFactory for GatewayFactory {
    fn make(&self, _requester: &Requester) -> SessionParts {
        let lease = self.open_lane();
        let session = Arc::new(GatewaySession {
            lane: Arc::clone(lease.lane()),
            lease: Arc::new(Mutex::new(Some(lease))),
        });
        SessionParts {
            tools: Arc::clone(&session) as Arc<dyn ToolSource>,
            fallback: session,
        }
    }

    /// Upstream tasks are noted in the store when it keeps notes (PostgreSQL: any replica
    /// on the database follows them on after this one dies).
    fn attach_store(&self, store: &Arc<dyn mcp_tasks_core::TaskStore>) {
        if let Some(notes) = store.notes() {
            *self.notes.lock() = Some(Arc::new(Notes::Store(notes)));
        }
    }

    fn set_metrics(&self, metrics: &mcp_tasks_core::Metrics) {
        self.limits.set_metrics(metrics);
    }

    fn resumer(&self) -> Option<Arc<dyn mcp_tasks_core::Resumer>> {
        GatewayFactory::resumer(self).map(|r| Arc::new(r) as Arc<dyn mcp_tasks_core::Resumer>)
    }

    /// The gateway bridges the eras: 2026-07-28 requests are served from the upstream
    /// through a lane of their own (the private module `modern`).
    fn revisions(&self) -> &'static [Revision] {
        &Revision::ALL
    }

    fn stateless_tools<'a>(
        &'a self,
        requester: &'a Requester,
    ) -> BoxFuture<'a, Result<Arc<dyn ToolSource>, ErrorObject>> {
        Box::pin(self.modern.tools(requester, || self.open_lane()))
    }

    /// Resources, prompts and completion pass through to the upstream in 2026-07-28 as
    /// in 2025-11-25 (the list `modern::FORWARDED`), on the requester's modern lane.
    fn forwards_stateless(&self, method: &str) -> bool {
        crate::modern::FORWARDED.contains(&method)
    }

    fn stateless_capabilities<'a>(
        &'a self,
        requester: &'a Requester,
    ) -> BoxFuture<'a, Option<serde_json::Map<String, Value>>> {
        Box::pin(async move {
            self.modern
                .capabilities(requester, || self.open_lane())
                .await
                .ok()
        })
    }

    fn stateless_request<'a>(
        &'a self,
        requester: &'a Requester,
        method: &'a str,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Value, ErrorObject>> {
        Box::pin(
            self.modern
                .forward(requester, || self.open_lane(), method, params),
        )
    }
}

/// One downstream session of the gateway: its own upstream connection (lane).
pub(crate) struct GatewaySession {
    lane: Arc<LaneInner>,
    /// The session's hold on its lane; released when the downstream connection closes or
    /// the session is dropped (HTTP DELETE, idle expiry, stdio EOF), whichever is first.
    /// Running tasks hold leases of their own.
    lease: Arc<Mutex<Option<Lease>>>,
}

mcp_tasks_proto::debug_non_exhaustive!(GatewaySession, |s| { lane: s.lane });

/// The `initialize` params sent upstream: the client's own, with the negotiated protocol
/// version, and without the client's `tasks` capability (the gateway does not relay
/// task-augmented requests to the client).
fn upstream_init_params(downstream: &Value, version: &Value) -> Value {
    let mut p = match downstream {
        Value::Object(_) => downstream.clone(),
        _ => json!({}),
    };
    p["protocolVersion"] = version.clone();
    if let Some(caps) = p.get_mut("capabilities").and_then(Value::as_object_mut) {
        caps.remove("tasks");
    }
    p
}

/// The gateway lists every upstream tool on one page and never issues a cursor.
impl ToolSource for GatewaySession {
    fn listing(&self, with_execution: bool) -> Vec<Value> {
        self.lane.tools().tools_list(with_execution)
    }

    fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.lane.tools().get(name)
    }
}

#[async_trait]
impl Fallback for GatewaySession {
    async fn initialize(
        &self,
        cx: &RequestContext,
        params: &Value,
        result: &mut Value,
    ) -> Result<(), ErrorObject> {
        let version = result
            .get("protocolVersion")
            .cloned()
            .unwrap_or(Value::Null);
        if let Err(e) = self
            .lane
            .start(upstream_init_params(params, &version), FIRST_START_WAIT)
            .await
        {
            self.lease.lock().take();
            return Err(e);
        }
        let conn = self.lane.conn();
        merge_initialize(result, conn.as_ref().map(|c| c.init_result()));
        if conn.is_none() {
            tracing::warn!(upstream = %self.lane.describe(), "session initialized while the upstream is down: its tools will be announced when it is up");
        }
        // Release the lane when the downstream connection closes (running tasks keep
        // their own leases).
        let closed = cx.peer.closed();
        let lane = Arc::downgrade(&self.lane);
        let lease = Arc::downgrade(&self.lease);
        tokio::spawn(async move {
            closed.cancelled().await;
            if let Some(lane) = lane.upgrade() {
                lane.set_downstream(None);
            }
            if let Some(lease) = lease.upgrade() {
                let held = lease.lock().take();
                drop(held);
            }
        });
        Ok(())
    }

    fn forwards_ping(&self) -> bool {
        true
    }

    async fn request(
        &self,
        _cx: RequestContext,
        method: String,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        self.lane.forward_request(&method, params).await
    }

    async fn notification(&self, peer: &Peer, method: String, params: Option<Value>) {
        if method == methods::INITIALIZED {
            self.lane.set_downstream(Some(peer.clone()));
            return;
        }
        self.lane.forward_notification(&method, params).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_init_params_keep_the_client_but_not_its_tasks() {
        let d = json!({"protocolVersion":"2026-07-28","capabilities":{"elicitation":{"form":{}},"tasks":{"list":{}},"roots":{}},"clientInfo":{"name":"c","version":"1"},"_meta":{"k":1}});
        let u = upstream_init_params(&d, &json!("2025-11-25"));
        assert_eq!(
            u,
            json!({"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}},"roots":{}},"clientInfo":{"name":"c","version":"1"},"_meta":{"k":1}})
        );
    }
}
