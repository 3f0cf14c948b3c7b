//! Supervision: starting the upstream connection (the client's [`Connection::start`], or
//! taking up a noted session again), reading its tool list, and restarting it with
//! backoff when it dies.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tasks_proto::Revision;
use mcp_tasks_proto::logged::digest;
use mcp_tasks_rpc::http_client::ResumeSession;
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::{INIT_TIMEOUT, LaneInner, Link, MAX_TOOL_PAGES, STABLE_AFTER};
use crate::backoff;

use async_trait::async_trait;
use mcp_tasks_client::connection::{
    Adopted, Connection, Requests, ServerMessages, StartAs, StartError, Started,
};
use mcp_tasks_proto::modern::Implementation;
use mcp_tasks_proto::{ErrorObject, RequestId};
use std::sync::Weak;

use crate::tool_set::ToolSet;
use crate::tools::BridgeTool;
use crate::upstream_call::CallError;

/// What an upstream connection sends goes to its lane, while the lane lives; the latency
/// of each call to the server's metrics.
struct ToLane {
    lane: Weak<LaneInner>,
    metrics: Option<mcp_tasks_core::Metrics>,
}

#[async_trait]
impl ServerMessages for ToLane {
    async fn request(
        &self,
        method: String,
        params: Option<Value>,
        stream_of: Option<RequestId>,
    ) -> Result<Value, ErrorObject> {
        match self.lane.upgrade() {
            Some(lane) => lane.on_upstream_request(method, params, stream_of).await,
            None => Err(super::ended()),
        }
    }

    async fn notification(&self, method: String, params: Option<Value>) {
        if let Some(lane) = self.lane.upgrade() {
            lane.on_upstream_notification(method, params).await;
        }
    }

    fn observe(&self, method: &str, elapsed: Duration, ok: bool) {
        if let Some(m) = &self.metrics {
            m.upstream_call(method, elapsed, ok);
        }
    }
}

/// The `reason` of the `notifications/cancelled` of a request abandoned downstream.
const CANCEL_REASON: &str = "The request was cancelled by the client of the gateway";

impl LaneInner {
    pub(super) async fn refresh_tools(&self, conn: &Connection) -> bool {
        match conn
            .list_tools(MAX_TOOL_PAGES)
            .await
            .map_err(|e| format!("tools/list failed: {:?}", CallError::of_client(e)))
        {
            Ok(raw) => {
                let set = ToolSet::build(
                    raw,
                    conn.runs_tool_tasks(),
                    &self.overrides,
                    |name, upstream| BridgeTool::handler(self.me.clone(), name, upstream),
                );
                let mut g = self.tools.write();
                let changed = g.listing() != set.listing();
                *g = Arc::new(set);
                changed
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not list the upstream's tools");
                false
            }
        }
    }

    /// A connection that takes up the session noted by [`Self::reattach_first`], if there
    /// is one and the upstream can.
    pub(super) async fn open_reattached(
        &self,
    ) -> Option<(Arc<Connection>, oneshot::Receiver<String>)> {
        let session = self.reattach.lock().take()?;
        let resume = ResumeSession {
            session_id: session.session_id.clone(),
            protocol_version: session.protocol_version.clone(),
            init_params: self.init_params.lock().clone(),
        };
        let opened = Connection::reattach(
            &*self.connector,
            self.messages(),
            self.requests(),
            resume,
            &self.generation,
        )
        .await;
        let Adopted {
            connection,
            ended,
            settled,
        } = match opened {
            Ok(Some(c)) => c,
            Ok(None) => return None,
            Err(e) => {
                let e = crate::connectors::reason(e);
                tracing::warn!(error = %e, "could not take up the upstream session again; starting a new one");
                return None;
            }
        };
        tracing::info!(upstream = %self.describe(), session = %digest(&session.session_id), "taking up the upstream session again");
        let conn = Arc::new(connection);
        conn.set_init_result(session.init_result);
        if let Some(settled) = settled {
            settled.await;
        }
        Some((conn, ended))
    }

    /// Where what the upstream sends on a new connection goes.
    fn messages(&self) -> Arc<dyn ServerMessages> {
        Arc::new(ToLane {
            lane: self.me.clone(),
            metrics: self.limits.metrics().cloned(),
        })
    }

    /// How a new connection's requests are sent: at most `--upstream-timeout`.
    fn requests(&self) -> Requests {
        Requests::new(self.limits.call_timeout, CANCEL_REASON)
    }

    /// A new connection of the lane: the session noted by [`Self::reattach_first`] taken
    /// up again, or a connection started as `--upstream-protocol` says, initialized with
    /// the downstream session's own params; the reason it did not start.
    pub(super) async fn open(
        &self,
    ) -> Result<(Arc<Connection>, oneshot::Receiver<String>), String> {
        // An upstream of a stateless revision has no session to take up.
        if !self
            .limits
            .upstream_protocol
            .fixed()
            .is_some_and(Revision::is_stateless)
            && let Some(reattached) = self.open_reattached().await
        {
            return Ok(reattached);
        }
        let how = StartAs::new(
            self.limits.upstream_protocol,
            self.init_params.lock().clone(),
            Implementation::new("mcp-tasks-gateway", env!("CARGO_PKG_VERSION")),
            INIT_TIMEOUT,
        );
        let started = Connection::start(
            &*self.connector,
            self.messages(),
            self.requests(),
            &self.generation,
            &how,
        )
        .await;
        match started {
            Ok(Started {
                connection, ended, ..
            }) => Ok((Arc::new(connection), ended)),
            Err(e) => Err(start_failure(e).await),
        }
    }

    pub(super) fn notify_tools_changed(&self) {
        if let Some(me) = self.me.upgrade() {
            tokio::spawn(async move {
                me.forward_down(TOOLS_LIST_CHANGED.to_owned(), None).await;
            });
        }
    }
}

pub(super) const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

/// Runs the lane's connections; `permit` is its place among the gateway's
/// `--max-upstreams`, given back when the lane ends (its last connection torn down).
pub(super) async fn supervise(lane: Arc<LaneInner>, permit: OwnedSemaphorePermit) {
    supervise_conns(&lane).await;
    drop(permit);
}

pub(super) async fn supervise_conns(lane: &Arc<LaneInner>) {
    let mut attempt: u32 = 0;
    let mut delays = backoff::restarts();
    let mut first = true;
    loop {
        if lane.shutdown.is_cancelled() {
            break;
        }
        let opened = tokio::select! {
            r = lane.open() => r,
            () = lane.shutdown.cancelled() => break,
        };
        match opened {
            Ok((conn, ended)) => {
                let up_at = Instant::now();
                let changed = lane.refresh_tools(&conn).await;
                tracing::info!(upstream = %lane.describe(), generation = conn.generation(), tools = lane.tools().len(), "upstream connected");
                lane.link.send_replace(Link::Up(Arc::clone(&conn)));
                if changed && !first {
                    lane.notify_tools_changed();
                }
                first = false;
                let why = tokio::select! {
                    r = ended => r.unwrap_or_else(|_| "the upstream connection ended".into()),
                    () = lane.shutdown.cancelled() => {
                        lane.link.send_replace(Link::Closed);
                        drop(conn);
                        return;
                    }
                };
                conn.close();
                tracing::warn!(upstream = %lane.describe(), reason = %why, "upstream connection lost");
                lane.link.send_replace(Link::Down(why));
                drop(conn);
                if up_at.elapsed() >= STABLE_AFTER {
                    attempt = 0;
                    delays = backoff::restarts();
                }
            }
            Err(why) => {
                tracing::warn!(upstream = %lane.describe(), reason = %why, "upstream failed to start");
                lane.link.send_replace(Link::Down(why));
            }
        }
        attempt = attempt.saturating_add(1);
        let delay = backoff::jittered(delays.next().unwrap_or(backoff::MAX));
        tracing::info!(upstream = %lane.describe(), delay = ?delay, attempt, "restarting the upstream after a delay");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = lane.shutdown.cancelled() => break,
        }
        if let Some(m) = lane.limits.metrics() {
            m.upstream_restart();
        }
    }
    lane.link.send_replace(Link::Closed);
}

/// The reason a connection did not start, as the lane reports it.
async fn start_failure(e: StartError) -> String {
    match e {
        StartError::Connect(e) => crate::connectors::reason(e),
        StartError::NoAnswer { method, timeout } => {
            format!("the upstream did not answer {method} within {timeout:?}")
        }
        StartError::Failed {
            method,
            error,
            mut ended,
        } => match CallError::of_client(error) {
            CallError::Upstream(e) => format!("the upstream refused {method}: {e}"),
            CallError::Failed(e) => format!("{method} failed: {e}"),
            CallError::Lost(_) => {
                let why = tokio::time::timeout(Duration::from_secs(1), &mut ended)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_else(|| "the upstream closed the connection".into());
                format!("{why} during {method}")
            }
        },
        _ => "the upstream did not start".to_owned(),
    }
}

/// Merge the upstream's `initialize` result into ours: the upstream's capabilities,
/// `serverInfo`, `instructions` and unknown fields pass unchanged, except that the
/// protocol version and `capabilities.tasks` are the gateway's, and `tools.listChanged`
/// is `true` (the tool list changes when the upstream restarts with other tools).
pub(crate) fn merge_initialize(ours: &mut Value, upstream: Option<&Value>) {
    let Some(Value::Object(up)) = upstream else {
        // The upstream is not up: our own result, announcing that the tools will change.
        if let Some(tools) = ours
            .pointer_mut("/capabilities/tools")
            .and_then(Value::as_object_mut)
        {
            tools.insert("listChanged".into(), Value::Bool(true));
        }
        return;
    };
    let mut merged: Map<String, Value> = up.clone();
    merged.insert(
        "protocolVersion".into(),
        ours.get("protocolVersion").cloned().unwrap_or(Value::Null),
    );
    let mut caps = match up.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    match ours.pointer("/capabilities/tasks") {
        Some(t) => {
            caps.insert("tasks".into(), t.clone());
        }
        None => {
            caps.remove("tasks");
        }
    }
    let mut tools = match caps.get("tools") {
        Some(Value::Object(t)) => t.clone(),
        _ => Map::new(),
    };
    tools.insert("listChanged".into(), Value::Bool(true));
    caps.insert("tools".into(), Value::Object(tools));
    merged.insert("capabilities".into(), Value::Object(caps));
    *ours = Value::Object(merged);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn initialize_merge_keeps_upstream_fields_and_takes_our_tasks() {
        let mut ours = json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":false},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"mcp-tasks","version":"0"}});
        let up = json!({"protocolVersion":"2025-06-18","capabilities":{"resources":{"subscribe":true},"logging":{},"tools":{},"x-future":{"a":1},"tasks":{"list":{}}},"serverInfo":{"name":"up","version":"9","title":"Up"},"instructions":"hi","extra":[1]});
        merge_initialize(&mut ours, Some(&up));
        assert_eq!(
            ours,
            json!({"protocolVersion":"2025-11-25","capabilities":{"resources":{"subscribe":true},"logging":{},"tools":{"listChanged":true},"x-future":{"a":1},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"up","version":"9","title":"Up"},"instructions":"hi","extra":[1]})
        );
        let mut plain =
            json!({"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":false}}});
        merge_initialize(&mut plain, Some(&up));
        assert!(plain["capabilities"].get("tasks").is_none());
    }
}
