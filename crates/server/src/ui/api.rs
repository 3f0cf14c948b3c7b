//! The dashboard's JSON API, under `/ui/api/`, authenticated like the endpoint:
//!
//! * `GET tasks?status=S&tool=T&limit=N`: the requester's tasks, newest first (at most
//!   `limit`, default [`DEFAULT_LIMIT`], capped to [`DASHBOARD_PAGE_MAX`]), with their
//!   counts by status and the tools they call;
//! * `GET tasks/ID`: one task with its request, status history and stored result or
//!   error (404 for a task of another principal, exactly as `tasks/get`);
//! * `POST tasks/ID/cancel`: cancels it through the engine, as `tasks/cancel` does (the
//!   tool is stopped); 409 when it is already terminal.
//!
//! Errors are `{"error": {"code": ..., "message": ...}}` with the HTTP status that fits; a
//! refusal by a rate limit (every call counts toward the requester's `requests` limit; a
//! lookup toward `lookup-failures`) is 429 with `Retry-After` and the -32029 error.

use mcp_tasks_core::clock::rfc3339;
use mcp_tasks_core::engine::dashboard::{
    DASHBOARD_PAGE_MAX, DashboardQuery, DashboardRow, tool_of,
};
use mcp_tasks_core::{EngineError, Requester, TaskEngine, TaskRecord};
use mcp_tasks_proto::codes;
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_rpc::http::{UiMethod, UiRequest, UiResponse};
use serde_json::{Map, Value, json};

/// Tasks a page shows when the request does not say.
pub const DEFAULT_LIMIT: usize = 100;

/// The API of one server's dashboard. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Api {
    engine: TaskEngine,
    admin: Option<String>,
}

fn error(status: u16, code: i64, message: impl Into<String>) -> UiResponse {
    UiResponse::json(
        status,
        json!({ "error": { "code": code, "message": message.into() } }).to_string(),
    )
}

/// 429 with `Retry-After` and the JSON-RPC error of the refusal (-32029, with
/// `data.limit` and `data.retryAfterMs`).
fn rate_limited(e: &mcp_tasks_proto::ErrorObject) -> UiResponse {
    let retry_ms = e
        .data
        .as_ref()
        .and_then(|d| d.get("retryAfterMs"))
        .and_then(Value::as_u64)
        .unwrap_or(1000);
    UiResponse::rate_limited(json!({ "error": e }).to_string(), retry_ms)
}

fn engine_error(e: &EngineError) -> UiResponse {
    if let EngineError::RateLimited(r) = e {
        return rate_limited(&r.to_error());
    }
    let (status, code) = match e {
        EngineError::NotFound | EngineError::Expired => (404, codes::INVALID_PARAMS),
        EngineError::AlreadyTerminal(_) => (409, codes::INVALID_PARAMS),
        EngineError::InvalidParams(_) => (400, codes::INVALID_PARAMS),
        EngineError::LimitExceeded { .. } => (429, codes::INTERNAL_ERROR),
        _ => (503, codes::INTERNAL_ERROR),
    };
    error(status, code, e.to_string())
}

/// A task as the page shows it: the `tasks/get` fields, its method and tool, and its
/// owner for a requester that sees every task.
fn task_json(rec: &TaskRecord, tool: Option<&str>, with_owner: bool) -> Value {
    let mut v = serde_json::to_value(rec.to_wire()).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut v {
        m.insert("method".into(), json!(rec.task.method));
        m.insert("tool".into(), json!(tool));
        if with_owner {
            m.insert("owner".into(), json!(rec.task.owner));
        }
    }
    v
}

impl Api {
    pub(crate) fn new(engine: TaskEngine, admin: Option<String>) -> Self {
        Self { engine, admin }
    }

    /// Who asks: without authentication every task of the server (as the local stdio
    /// peer); with it the principal, which sees every task when it is the administrator.
    fn requester(&self, principal: Option<String>) -> Requester {
        match principal {
            None => Requester::local(),
            Some(p) => Requester {
                sees_all: self.admin.as_deref() == Some(p.as_str()),
                principal: Some(p),
                ..Requester::default()
            },
        }
    }

    pub(crate) async fn answer(&self, req: UiRequest) -> UiResponse {
        let with_owner = req.principal.is_some()
            && self.admin.is_some()
            && req.principal.as_deref() == self.admin.as_deref();
        let who = self.requester(req.principal);
        // Every call of the API is a request of its requester, under `--rate-limit requests`.
        if let Err(e) = self.engine.guard().admit_request(&who, "ui/api") {
            return rate_limited(&e);
        }
        let parts: Vec<&str> = req.path.split('/').collect();
        match (req.method, parts.as_slice()) {
            (UiMethod::Get, ["tasks"]) => self.list(&who, &req.query, with_owner).await,
            (UiMethod::Get, ["tasks", id]) => self.detail(&who, id, with_owner).await,
            (UiMethod::Post, ["tasks", id, "cancel"]) => match self.engine.cancel(id, &who).await {
                Ok(task) => UiResponse::json(200, json!({ "task": task }).to_string()),
                Err(e) => engine_error(&e),
            },
            (UiMethod::Get, ["tasks", _, "cancel"]) | (UiMethod::Post, ["tasks", ..]) => error(
                405,
                codes::INVALID_REQUEST,
                "Method not allowed: cancel with POST",
            ),
            _ => error(404, codes::INVALID_REQUEST, "Not found: no such API path"),
        }
    }

    async fn list(&self, who: &Requester, query: &str, with_owner: bool) -> UiResponse {
        let mut limit = DEFAULT_LIMIT;
        let mut q = DashboardQuery::default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "status" if !v.is_empty() => match TaskStatus::parse(&v) {
                    Some(s) => q.status = Some(s),
                    None => {
                        return error(400, codes::INVALID_PARAMS, format!("Unknown status `{v}`"));
                    }
                },
                "tool" if !v.is_empty() => q.tool = Some(v.into_owned()),
                "limit" => match v.parse::<usize>() {
                    Ok(n) if (1..=DASHBOARD_PAGE_MAX).contains(&n) => limit = n,
                    _ => {
                        return error(
                            400,
                            codes::INVALID_PARAMS,
                            format!("`limit` must be 1 to {DASHBOARD_PAGE_MAX}"),
                        );
                    }
                },
                _ => {}
            }
        }
        q.limit = limit;
        let page = match self.engine.dashboard(who, &q).await {
            Ok(p) => p,
            Err(e) => return engine_error(&e),
        };
        let tasks: Vec<Value> = page
            .tasks
            .iter()
            .map(|DashboardRow { task, tool }| task_json(task, tool.as_deref(), with_owner))
            .collect();
        let mut counts = Map::new();
        for s in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            let n = page
                .counts
                .iter()
                .find(|(c, _)| *c == s)
                .map_or(0, |(_, n)| *n);
            counts.insert(s.as_str().into(), json!(n));
        }
        UiResponse::json(
            200,
            json!({
                "principal": who.principal,
                "seesAll": who.sees_all,
                "showsOwners": with_owner,
                "tasks": tasks,
                "matching": page.matching,
                "counts": counts,
                "tools": page.tools,
                "truncated": page.truncated,
            })
            .to_string(),
        )
    }

    async fn detail(&self, who: &Requester, id: &str, with_owner: bool) -> UiResponse {
        let (rec, history) = match self.engine.dashboard_task(id, who).await {
            Ok(r) => r,
            Err(e) => return engine_error(&e),
        };
        let request: Value = serde_json::from_str(&rec.task.request).unwrap_or(Value::Null);
        let (result, err) = match rec.outcome.as_ref().map(|o| o.decode()) {
            None => (Value::Null, Value::Null),
            Some(Ok(v)) => (v, Value::Null),
            Some(Err(e)) => (Value::Null, json!(e)),
        };
        let history: Vec<Value> = history
            .iter()
            .map(|h| {
                json!({
                    "status": h.status,
                    "statusMessage": h.status_message,
                    "at": rfc3339(h.at_ms),
                })
            })
            .collect();
        UiResponse::json(
            200,
            json!({
                "task": task_json(&rec, tool_of(&rec).as_deref(), with_owner),
                "request": request,
                "history": history,
                "result": result,
                "error": err,
            })
            .to_string(),
        )
    }
}
