//! `subscriptions/listen` with `taskIds` (SEP-2663): `notifications/tasks` carrying the
//! full `DetailedTask` whenever a watched task changes.
//!
//! Served on stdio (the notifications travel on the request's route of the shared
//! channel). The other notification types of the filter (`toolsListChanged`, ...) are
//! not offered: this server's lists never change. The stream ends gracefully, with the
//! completion result, once every watched task is terminal (or when none was agreed);
//! until then it lasts until the client cancels it.

use std::collections::BTreeMap;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::modern::tasks::{GetTaskResult, TaskNotificationParams};
use mcp_tasks_proto::modern::{self, SUBSCRIPTION_ID_META, TASKS_EXTENSION};
use mcp_tasks_rpc::RequestContext;
use serde_json::{Value, json};

use super::ModernRequest;

/// `notifications/subscriptions/acknowledged`
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// Serve one `subscriptions/listen`.
///
/// Spec (subscriptions): "The server MUST send `notifications/subscriptions/acknowledged`
/// as the first message carrying the subscription's ID in `_meta` under
/// `io.modelcontextprotocol/subscriptionId`"; "The `notifications` field in the
/// acknowledgment reflects the subset the server agreed to honor"; "All notifications
/// delivered on the stream carry `io.modelcontextprotocol/subscriptionId`". Spec
/// (SEP-2663): "If a client requests task status notifications but does not declare the
/// `io.modelcontextprotocol/tasks` extension capability, the server MUST return a
/// JSON-RPC error" (-32021), and "Each notification carries a complete `DetailedTask` for
/// the current status, identical to what `tasks/get` would have returned at that moment."
///
/// # Errors
/// -32602 for a malformed filter, -32021 for `taskIds` without the extension.
pub(super) async fn listen(
    req: ModernRequest<'_>,
    params: Option<&Value>,
) -> Result<Value, ErrorObject> {
    let (session, cx, meta) = (req.session, req.cx, req.meta);
    let filter = params
        .and_then(|p| p.get("notifications"))
        .and_then(Value::as_object)
        .ok_or_else(|| ErrorObject::invalid_params("`notifications` (an object) is required"))?;
    let wanted: Vec<String> = match filter.get("taskIds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                ErrorObject::invalid_params("`notifications.taskIds` must be strings")
            })?,
        Some(_) => {
            return Err(ErrorObject::invalid_params(
                "`notifications.taskIds` must be an array",
            ));
        }
    };
    if filter.contains_key("taskIds") && !meta.client_capabilities.has_tasks_extension() {
        return Err(modern::missing_tasks_extension(&format!(
            "task notifications need the `{TASKS_EXTENSION}` extension"
        )));
    }
    let sub_meta = json!({ SUBSCRIPTION_ID_META: cx.id.to_value() });
    // Agree to the tasks the requester can see.
    let mut watched = BTreeMap::new();
    if let Some(engine) = session.state.engine.as_ref() {
        for id in wanted {
            let changes = engine.store().subscribe(&id);
            if engine.get(&id, &session.requester).await.is_ok() {
                watched.insert(id, changes);
            }
        }
    }
    let mut agreed = serde_json::Map::new();
    if filter.contains_key("taskIds") {
        agreed.insert("taskIds".into(), json!(watched.keys().collect::<Vec<_>>()));
    }
    cx.notify(
        ACKNOWLEDGED,
        Some(json!({ "_meta": sub_meta, "notifications": agreed })),
    )
    .await;
    // The current state of each task, then each change.
    let mut due: Vec<String> = watched.keys().cloned().collect();
    let Some(engine) = session.state.engine.as_ref() else {
        return Ok(json!({ "_meta": sub_meta }));
    };
    loop {
        for id in due.drain(..) {
            match super::tasks::get(engine, &session.requester, &id, false).await {
                Ok(task) => {
                    let terminal = task.task.task.status.is_terminal();
                    send(cx, task, &sub_meta).await;
                    if terminal {
                        watched.remove(&id);
                    }
                }
                // Expired or deleted meanwhile: nothing more will come.
                Err(_) => {
                    watched.remove(&id);
                }
            }
        }
        if watched.is_empty() {
            break;
        }
        let fired = {
            let changed = futures::future::select_all(
                watched
                    .values_mut()
                    .map(|rx| Box::pin(async move { rx.changed().await.is_ok() })),
            );
            tokio::select! {
                (_, i, _) = changed => i,
                () = cx.cancel.cancelled() => return Err(ErrorObject::internal("cancelled")),
            }
        };
        for (n, (id, rx)) in watched.iter_mut().enumerate() {
            if n == fired || rx.has_changed().unwrap_or(true) {
                rx.mark_unchanged();
                due.push(id.clone());
            }
        }
    }
    Ok(json!({ "_meta": sub_meta }))
}

/// Send one `notifications/tasks` on the subscription.
async fn send(cx: &RequestContext, task: GetTaskResult, sub_meta: &Value) {
    let params = TaskNotificationParams {
        task: task.task,
        meta: sub_meta.as_object().cloned(),
    };
    cx.notify(
        modern::methods::TASKS_NOTIFICATION,
        Some(serde_json::to_value(params).unwrap_or_else(|_| json!({}))),
    )
    .await;
}
