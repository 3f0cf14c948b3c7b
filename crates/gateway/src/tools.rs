//! The upstream's tools as the gateway runs them ([`BridgeTool`]); their listing and
//! policy are [`crate::tool_set`].

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_server::{CallToolResult, ToolContext, ToolHandler};
use serde_json::{Value, json};

use mcp_tasks_client::connection::Connection;

use crate::upstream_call::{Call, call_error};
use mcp_tasks_proto::meta::strip_related_task;

use crate::lane::{LaneInner, ended};

/// Runs an upstream tool for the receiver: as a plain upstream `tools/call` (its exact
/// outcome becomes the task's), or, when the upstream runs the tool as a task, as an
/// upstream task that the gateway follows to its end.
pub(crate) struct BridgeTool {
    lane: Weak<LaneInner>,
    name: String,
    /// The upstream's own task support (forbidden when it has no task capability).
    upstream: TaskSupport,
}

impl BridgeTool {
    /// The handler of the upstream tool `name` on `lane`, whose own task support (as
    /// the gateway sees it) is `upstream`.
    pub(crate) fn handler(
        lane: Weak<LaneInner>,
        name: &str,
        upstream: TaskSupport,
    ) -> Arc<dyn ToolHandler> {
        Arc::new(Self {
            lane,
            name: name.to_owned(),
            upstream,
        })
    }
}

#[async_trait]
impl ToolHandler for BridgeTool {
    async fn call(&self, args: Value, cx: ToolContext) -> Result<CallToolResult, ErrorObject> {
        let lane = self.lane.upgrade().ok_or_else(ended)?;
        let (_lease, conn) = lane.lease_and_conn()?;
        let mut params = match cx.request_params() {
            Some(p) => with_arguments(p.clone(), args),
            None => json!({ "name": self.name, "arguments": args }),
        };
        let task_field = params.as_object_mut().and_then(|m| m.remove("task"));
        let as_task = self.upstream != TaskSupport::Forbidden
            && (cx.task_id().is_some() || self.upstream == TaskSupport::Required);
        let out = if conn.revision().tasks_are_extension() {
            crate::modern_upstream::call_tool(&lane, conn, params, &cx).await
        } else if as_task {
            crate::upstream_task::run(&lane, conn, params, task_field, &cx).await
        } else {
            plain(&lane, &conn, params, &cx).await
        }?;
        crate::upstream_task::into_call_tool_result(out)
    }
}

/// The request's `params` with its `arguments`: a direct 2026-07-28 call, which may wait
/// for the client's answers, hands its handler the params without non-empty `arguments`
/// ([`ToolContext::request_params`]), which go back where they were.
fn with_arguments(mut params: Value, args: Value) -> Value {
    if let Some(obj) = params.as_object_mut()
        && !obj.contains_key("arguments")
        && args.as_object().is_some_and(|a| !a.is_empty())
    {
        obj.insert("arguments".to_owned(), args);
    }
    params
}

/// A plain upstream `tools/call`: its result or JSON-RPC error, exactly.
async fn plain(
    lane: &Arc<LaneInner>,
    conn: &Connection,
    params: Value,
    cx: &ToolContext,
) -> Result<Value, ErrorObject> {
    let routes = lane.register_call(cx, true);
    let call = async {
        match conn
            .call_for(methods::TOOLS_CALL, Some(params), routes.waiter())
            .await
        {
            Ok(mut v) => {
                strip_related_task(&mut v);
                Ok(v)
            }
            Err(e) => Err(call_error(lane, conn, e).await),
        }
    };
    routes.unless_failed(call).await
}
