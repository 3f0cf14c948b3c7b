//! The upstream's tools as the gateway lists and runs them.
//!
//! Tool policy: an upstream that declares `tasks.requests.tools.call` keeps
//! each tool's own `execution.taskSupport`; for any other upstream every tool is
//! `optional` (the gateway runs it as a task by calling it plainly upstream); either is
//! overridden per tool by configuration.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_server::{CallToolResult, Tool, ToolContext, ToolHandler};
use serde_json::{Value, json};

use crate::conn::{CallError, Conn};
use crate::error::unavailable;
use mcp_tasks_proto::meta::strip_related_task;

use crate::lane::{LaneInner, ended};

/// One listing of the upstream's tools.
#[derive(Default)]
pub(crate) struct ToolSet {
    /// The upstream's tool objects, unchanged.
    raw: Vec<Value>,
    /// The effective task support of each, in listing order.
    support: Vec<TaskSupport>,
    by_name: HashMap<String, Tool>,
}

mcp_tasks_proto::debug_non_exhaustive!(ToolSet, |s| { tools: s.raw.len() });

/// The upstream's own `execution.taskSupport` of a tool (absent: forbidden).
fn upstream_support(tool: &Value) -> TaskSupport {
    tool.pointer("/execution/taskSupport")
        .and_then(Value::as_str)
        .and_then(TaskSupport::parse)
        .unwrap_or(TaskSupport::Forbidden)
}

/// The task support the gateway lists for a tool.
pub(crate) fn effective_support(
    tool: &Value,
    upstream_runs_tasks: bool,
    overrides: &BTreeMap<String, TaskSupport>,
) -> TaskSupport {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    if let Some(s) = overrides.get(name) {
        return *s;
    }
    if upstream_runs_tasks {
        upstream_support(tool)
    } else {
        TaskSupport::Optional
    }
}

impl ToolSet {
    /// Build from the upstream's listing.
    pub(crate) fn build(
        raw: Vec<Value>,
        upstream_runs_tasks: bool,
        overrides: &BTreeMap<String, TaskSupport>,
        lane: Weak<LaneInner>,
    ) -> Self {
        let mut by_name = HashMap::new();
        let mut support = Vec::with_capacity(raw.len());
        for t in &raw {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            let eff = effective_support(t, upstream_runs_tasks, overrides);
            support.push(eff);
            let handler = Arc::new(BridgeTool {
                lane: lane.clone(),
                name: name.to_owned(),
                upstream: if upstream_runs_tasks {
                    upstream_support(t)
                } else {
                    TaskSupport::Forbidden
                },
            });
            let tool = Tool::with_handler(
                name,
                t.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                t.get("inputSchema").cloned().unwrap_or_else(|| json!({})),
                handler,
            )
            .task_support(eff)
            // The upstream checks its own arguments (and answers bad ones its own way).
            .validate_arguments(false);
            by_name.insert(name.to_owned(), tool);
        }
        Self {
            raw,
            support,
            by_name,
        }
    }

    /// How many tools.
    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }

    /// The tool `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Tool> {
        self.by_name.get(name).cloned()
    }

    /// The upstream listing with the effective task support (for change detection).
    pub(crate) fn listing(&self) -> Vec<Value> {
        self.tools_list(true)
    }

    /// The `tools` array of `tools/list`: each upstream tool object unchanged but for
    /// `execution.taskSupport`, which is the effective one when tasks are on and absent
    /// otherwise.
    pub(crate) fn tools_list(&self, with_execution: bool) -> Vec<Value> {
        self.raw
            .iter()
            .zip(&self.support)
            .map(|(t, s)| {
                let mut t = t.clone();
                let Some(obj) = t.as_object_mut() else {
                    return t;
                };
                if with_execution {
                    let exec = obj.entry("execution").or_insert_with(|| json!({}));
                    if !exec.is_object() {
                        *exec = json!({});
                    }
                    if let Some(e) = exec.as_object_mut() {
                        e.insert("taskSupport".into(), json!(s));
                    }
                } else if let Some(e) = obj.get_mut("execution").and_then(Value::as_object_mut) {
                    e.remove("taskSupport");
                    if e.is_empty() {
                        obj.remove("execution");
                    }
                }
                t
            })
            .collect()
    }
}

/// Runs an upstream tool for the receiver: as a plain upstream `tools/call` (its exact
/// outcome becomes the task's), or, when the upstream runs the tool as a task, as an
/// upstream task that the gateway follows to its end.
pub(crate) struct BridgeTool {
    lane: Weak<LaneInner>,
    name: String,
    /// The upstream's own task support (forbidden when it has no task capability).
    upstream: TaskSupport,
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
    conn: &Conn,
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
            Err(CallError::Upstream(e) | CallError::Failed(e)) => Err(e),
            Err(CallError::Lost(d)) => Err(unavailable(format!(
                "{} during the call",
                lane.lost_reason(conn, d.as_deref()).await
            ))),
        }
    };
    routes.unless_failed(call).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_keeps_upstream_support_only_for_task_capable_upstreams() {
        let req = json!({"name":"r","inputSchema":{},"execution":{"taskSupport":"required"}});
        let none = json!({"name":"n","inputSchema":{}});
        let mut o = BTreeMap::new();
        assert_eq!(effective_support(&req, true, &o), TaskSupport::Required);
        assert_eq!(effective_support(&none, true, &o), TaskSupport::Forbidden);
        assert_eq!(effective_support(&req, false, &o), TaskSupport::Optional);
        assert_eq!(effective_support(&none, false, &o), TaskSupport::Optional);
        o.insert("n".to_owned(), TaskSupport::Required);
        assert_eq!(effective_support(&none, true, &o), TaskSupport::Required);
    }

    #[test]
    fn listing_changes_only_task_support() {
        let raw = vec![
            json!({"name":"a","title":"A","inputSchema":{"type":"object"},"annotations":{"x":1},"_meta":{"k":"v"},"future":true}),
            json!({"name":"b","inputSchema":{},"execution":{"taskSupport":"forbidden","other":1}}),
        ];
        let set = ToolSet::build(raw, true, &BTreeMap::new(), Weak::new());
        let with = set.tools_list(true);
        assert_eq!(
            with[0],
            json!({"name":"a","title":"A","inputSchema":{"type":"object"},"annotations":{"x":1},"_meta":{"k":"v"},"future":true,"execution":{"taskSupport":"forbidden"}})
        );
        assert_eq!(
            with[1]["execution"],
            json!({"taskSupport":"forbidden","other":1})
        );
        let without = set.tools_list(false);
        assert!(without[0].get("execution").is_none());
        assert_eq!(without[1]["execution"], json!({"other":1}));
        assert!(without[0].get("description").is_none());
    }
}
