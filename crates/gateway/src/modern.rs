//! 2026-07-28 ("modern") clients in front of a 2025-11-25 upstream.
//!
//! Modern requests are stateless: no `initialize` opens a downstream session, so nothing
//! starts the lane of the session a request comes on (and over HTTP each modern request
//! has a session of its own). They are served from a *modern lane* instead: one per
//! principal (all unauthenticated requests share one), shared by every modern request of
//! that principal, started on its first modern `tools/list` or `tools/call` with a
//! 2025-11-25 `initialize` of the gateway's own ([`modern_init_params`]), supervised and
//! restarted like any lane, counted against `--max-upstreams`, and released after
//! [`MODERN_IDLE`] without a modern request (a call or task running on it keeps it with
//! its own lease until it ends). See `docs/adr/0005-two-generations.md`.
//!
//! The receiver does the rest with the same tools: the server decides per request whether
//! a call becomes a task, `tasks/get|update|cancel` read and steer it, and a request the
//! upstream sends during a call reaches the call's [`mcp_tasks_server::ToolContext`],
//! which turns an elicitation into the task's `inputRequests` or a multi round-trip
//! `InputRequiredResult`. A request the upstream sends outside any call (or that cannot be
//! attributed to one call) has no client to go to: it is answered with an error at once,
//! and the calls then waiting on the lane fail with a message saying why
//! ([`LaneInner::on_upstream_request`]).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mcp_tasks_core::Requester;
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::LATEST_PROTOCOL_VERSION;
use mcp_tasks_server::{Tool, ToolSource};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::lane::{FIRST_START_WAIT, LaneInner, Lease, Link};

/// The 2026-07-28 requests a modern lane passes to the upstream as they are: what the
/// gateway does not interpret (its tools and tasks it serves itself).
pub(crate) const FORWARDED: [&str; 6] = [
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// The forwarded requests whose 2026-07-28 results are cacheable: schema, `ttlMs` and
/// `cacheScope` required. A 2025-11-25 upstream gives no hint, and its lists may change
/// at any time (`list_changed`): `ttlMs` 0 ("The response SHOULD be considered
/// immediately stale") and `cacheScope` `private` (served from the requester's own lane:
/// "Caches MUST NOT be shared across authorization contexts"). A 2026-07-28 upstream's
/// own hints are kept.
const CACHEABLE: [&str; 4] = [
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
];

/// How long a modern lane stays without a modern request before it is released (its
/// upstream process or session ends; the next modern request starts a new one).
pub(crate) const MODERN_IDLE: Duration = Duration::from_secs(300);

/// The `initialize` params of a modern lane: the gateway's own client identity, with the
/// capabilities it can relay to a modern client during a call (elicitation in form mode
/// and sampling, as `inputRequests` or `InputRequiredResult`). Whether one client can
/// answer is decided per call by the capabilities that client declared on its request.
pub(crate) fn modern_init_params() -> Value {
    json!({
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": { "elicitation": { "form": {} }, "sampling": {} },
        "clientInfo": { "name": "mcp-tasks-gateway", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// One modern lane and when it was last used.
struct Held {
    lease: Lease,
    last_used: Instant,
}

/// The modern lanes of a gateway, by principal.
pub(crate) struct ModernLanes {
    lanes: Mutex<HashMap<Option<String>, Held>>,
    reaper: std::sync::Once,
}

impl Default for ModernLanes {
    fn default() -> Self {
        Self {
            lanes: Mutex::new(HashMap::new()),
            reaper: std::sync::Once::new(),
        }
    }
}

impl ModernLanes {
    /// The modern lane of `requester`, opened with `open` if there is none (or the last
    /// one has ended), started and up.
    ///
    /// # Errors
    /// -32603 when the gateway already runs its maximum of upstream connections, or the
    /// upstream is not up (it could not start, or is restarting).
    pub(crate) async fn tools(
        self: &Arc<Self>,
        requester: &Requester,
        open: impl FnOnce() -> Lease,
    ) -> Result<Arc<dyn ToolSource>, ErrorObject> {
        let lane = self.lane(requester, open).await?;
        Ok(Arc::new(ModernTools(lane)))
    }

    /// Pass a modern request the gateway does not interpret (resources, prompts,
    /// completion: [`FORWARDED`]) to the modern lane of `requester`; the upstream's
    /// answer comes back unchanged (a 2026-07-28 upstream's `complete` result made a
    /// legacy one first, which the server stamps again).
    ///
    /// # Errors
    /// As [`Self::tools`], or the upstream's error.
    pub(crate) async fn forward(
        self: &Arc<Self>,
        requester: &Requester,
        open: impl FnOnce() -> Lease,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ErrorObject> {
        let lane = self.lane(requester, open).await?;
        let mut result = lane.forward_request(method, params).await?;
        if CACHEABLE.contains(&method)
            && let Some(obj) = result.as_object_mut()
        {
            obj.entry("ttlMs").or_insert_with(|| json!(0));
            obj.entry("cacheScope").or_insert_with(|| json!("private"));
        }
        Ok(result)
    }

    /// What `server/discover` declares of the upstream besides tools, from the
    /// `initialize` (or `server/discover`) result of `requester`'s modern lane: its
    /// `resources`, `prompts` and `completions`, which [`FORWARDED`] serves, without
    /// `subscribe` and `listChanged` (their 2026-07-28 form, `subscriptions/listen`, is
    /// not relayed).
    ///
    /// # Errors
    /// As [`Self::tools`].
    pub(crate) async fn capabilities(
        self: &Arc<Self>,
        requester: &Requester,
        open: impl FnOnce() -> Lease,
    ) -> Result<serde_json::Map<String, Value>, ErrorObject> {
        let lane = self.lane(requester, open).await?;
        let mut out = serde_json::Map::new();
        let Some(conn) = lane.conn() else {
            return Ok(out);
        };
        let caps = conn.init_result().get("capabilities");
        for key in ["resources", "prompts", "completions"] {
            if let Some(Value::Object(c)) = caps.and_then(|c| c.get(key)) {
                let mut c = c.clone();
                c.remove("subscribe");
                c.remove("listChanged");
                out.insert(key.to_owned(), Value::Object(c));
            }
        }
        Ok(out)
    }

    /// The modern lane of `requester`, opened with `open` if there is none (or the last
    /// one has ended), started and up.
    async fn lane(
        self: &Arc<Self>,
        requester: &Requester,
        open: impl FnOnce() -> Lease,
    ) -> Result<Arc<LaneInner>, ErrorObject> {
        self.reaper.call_once(|| {
            tokio::spawn(reap(Arc::downgrade(self), MODERN_IDLE));
        });
        let lane = {
            let mut lanes = self.lanes.lock();
            let key = requester.principal.clone();
            let reusable = lanes
                .get(&key)
                .is_some_and(|h| !matches!(h.lease.lane().link(), Link::Closed));
            if !reusable {
                let lease = open();
                lease.lane().serve_no_client();
                lanes.insert(
                    key.clone(),
                    Held {
                        lease,
                        last_used: Instant::now(),
                    },
                );
            }
            let held = lanes.get_mut(&key).expect("just inserted");
            held.last_used = Instant::now();
            Arc::clone(held.lease.lane())
        };
        if let Err(e) = lane.start(modern_init_params(), FIRST_START_WAIT).await {
            self.forget(&lane);
            return Err(e);
        }
        if lane.conn().is_none() {
            return Err(lane.unavailable_now());
        }
        Ok(lane)
    }

    /// Drop the lease of `lane` if it is still the one held.
    fn forget(&self, lane: &Arc<LaneInner>) {
        self.lanes
            .lock()
            .retain(|_, h| !Arc::ptr_eq(h.lease.lane(), lane));
    }

    /// Release the lanes unused for `idle`; returns how many remain.
    fn release_idle(&self, idle: Duration) -> usize {
        let gone: Vec<Held> = {
            let mut lanes = self.lanes.lock();
            let keys: Vec<_> = lanes
                .iter()
                .filter(|(_, h)| h.last_used.elapsed() >= idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter().filter_map(|k| lanes.remove(k)).collect()
        };
        for h in &gone {
            tracing::debug!(upstream = %h.lease.lane().describe(), "modern lane released after {idle:?} without a request");
        }
        drop(gone);
        self.lanes.lock().len()
    }

    /// How many modern lanes are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lanes.lock().len()
    }
}

/// Release idle modern lanes every tenth of `idle`, as long as the gateway lives.
async fn reap(lanes: Weak<ModernLanes>, idle: Duration) {
    let mut tick = tokio::time::interval(idle / 10);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(lanes) = lanes.upgrade() else { return };
        lanes.release_idle(idle);
    }
}

/// The tools of a modern lane.
struct ModernTools(Arc<LaneInner>);

impl ToolSource for ModernTools {
    fn listing(&self, with_execution: bool) -> Vec<Value> {
        self.0.tools().tools_list(with_execution)
    }

    fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.0.tools().get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modern_initialize_is_2025_11_25_with_what_can_be_relayed() {
        let p = modern_init_params();
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(
            p["capabilities"],
            json!({"elicitation": {"form": {}}, "sampling": {}})
        );
        assert!(p["capabilities"].get("tasks").is_none());
    }

    #[test]
    fn idle_lanes_are_released_and_used_ones_kept() {
        let lanes = ModernLanes::default();
        let open = || {
            LaneInner::open_lane(
                crate::connectors::connector(
                    &crate::UpstreamSpec::Stdio(crate::StdioSpec::new("true", Vec::new())),
                    1024,
                    mcp_tasks_proto::Revision::V2025_11_25.into(),
                )
                .unwrap(),
                Arc::default(),
                None,
                Arc::default(),
            )
        };
        for p in ["a", "b"] {
            lanes.lanes.lock().insert(
                Some(p.to_owned()),
                Held {
                    lease: open(),
                    last_used: Instant::now(),
                },
            );
        }
        lanes
            .lanes
            .lock()
            .get_mut(&Some("a".to_owned()))
            .unwrap()
            .last_used = Instant::now() - Duration::from_secs(10);
        assert_eq!(lanes.release_idle(Duration::from_secs(5)), 1);
        assert_eq!(lanes.len(), 1);
        assert!(lanes.lanes.lock().contains_key(&Some("b".to_owned())));
    }
}
