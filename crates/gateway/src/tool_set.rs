//! The upstream's tools as the gateway lists them: the tool policy.
//!
//! An upstream that declares `tasks.requests.tools.call` keeps each tool's own
//! `execution.taskSupport`; for any other upstream every tool is `optional` (the gateway
//! runs it as a task by calling it plainly upstream); either is overridden per tool by
//! configuration.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_server::{Tool, ToolHandler};
use serde_json::{Value, json};

/// One listing of the upstream's tools.
#[derive(Default)]
pub(crate) struct ToolSet {
    /// The upstream's tool objects, unchanged.
    raw: Vec<Value>,
    /// The effective task support of each, in listing order.
    support: Vec<TaskSupport>,
    by_name: HashMap<String, Arc<Tool>>,
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
    /// Build from the upstream's listing; `handler(name, upstream_support)` runs a tool
    /// (its upstream task support: forbidden when the upstream runs no tasks).
    pub(crate) fn build(
        raw: Vec<Value>,
        upstream_runs_tasks: bool,
        overrides: &BTreeMap<String, TaskSupport>,
        handler: impl Fn(&str, TaskSupport) -> Arc<dyn ToolHandler>,
    ) -> Self {
        let mut by_name = HashMap::new();
        let mut support = Vec::with_capacity(raw.len());
        for t in &raw {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            let eff = effective_support(t, upstream_runs_tasks, overrides);
            support.push(eff);
            let upstream = if upstream_runs_tasks {
                upstream_support(t)
            } else {
                TaskSupport::Forbidden
            };
            let tool = Tool::with_handler(
                name,
                t.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                t.get("inputSchema").cloned().unwrap_or_else(|| json!({})),
                handler(name, upstream),
            )
            .task_support(eff)
            // The upstream checks its own arguments (and answers bad ones its own way).
            .validate_arguments(false);
            by_name.insert(name.to_owned(), Arc::new(tool));
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
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Tool>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool that is never called.
    struct Nothing;

    #[async_trait::async_trait]
    impl ToolHandler for Nothing {
        async fn call(
            &self,
            _args: Value,
            _cx: mcp_tasks_server::ToolContext,
        ) -> Result<mcp_tasks_server::CallToolResult, mcp_tasks_proto::ErrorObject> {
            Err(mcp_tasks_proto::ErrorObject::internal("not called"))
        }
    }

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
        let set = ToolSet::build(raw, true, &BTreeMap::new(), |_, _| Arc::new(Nothing));
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
