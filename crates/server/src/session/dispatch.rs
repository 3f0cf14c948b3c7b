//! A session's requests and notifications, to the handler of each method: a request
//! carrying the 2026-07-28 `_meta` to the stateless `modern` module, anything else to
//! this session as 2025-11-25 (`docs/adr/0005-two-generations.md`); the RPC [`Handler`] of
//! a [`Session`].

use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_core::serve;
use mcp_tasks_proto::logged::capped;
use mcp_tasks_proto::modern;
use mcp_tasks_proto::trace::TraceContext;
use mcp_tasks_proto::{ErrorObject, Notification, Request, RequestId, Revision, methods};
use mcp_tasks_rpc::{Handler, Peer, RequestContext};
use serde_json::Value;
use tracing::Instrument;

use super::Session;
use crate::catalog::{Gen, Side};
use crate::handlers;
use crate::modern::Reply;

/// The span of one request: its method, id and era, and the W3C trace context its
/// `_meta` carries (`traceparent` / `tracestate`; over HTTP also the headers, which the
/// transport puts into `_meta`) as `trace_id`, `parent_span_id` and `tracestate`, so
/// that every log line of the request names the caller's trace. A malformed trace context
/// is ignored. The client's strings (method, id, tracestate) are [`capped`]: they are
/// fields of every log line of the request.
///
/// Spec (2026-07-28, basic, `_meta`): "the keys `traceparent`, `tracestate`, and
/// `baggage` are reserved for OpenTelemetry trace context propagation."
fn request_span(
    id: &RequestId,
    method: &str,
    revision: Revision,
    params: Option<&Value>,
) -> tracing::Span {
    let span = tracing::info_span!(
        "request",
        method = %capped(method),
        id = %id,
        era = revision.as_str(),
        trace_id = tracing::field::Empty,
        parent_span_id = tracing::field::Empty,
        tracestate = tracing::field::Empty,
    );
    if !span.is_disabled()
        && let Some(t) = TraceContext::from_meta(params)
    {
        span.record("trace_id", t.trace_id.as_str());
        span.record("parent_span_id", t.parent_span_id.as_str());
        if let Some(state) = &t.tracestate {
            span.record("tracestate", tracing::field::display(capped(state)));
        }
    }
    span
}

impl Session {
    /// A request, to the handler of its method; `text`: the answer is wanted as JSON text
    /// (a modern `tasks/get` then writes it without a `Value` tree).
    async fn dispatch(
        &self,
        cx: RequestContext,
        method: String,
        mut params: Option<Value>,
        text: bool,
    ) -> Result<Reply, ErrorObject> {
        // The revision is a property of each request: a stateless revision's `_meta` is
        // served statelessly, anything else by this session as 2025-11-25
        // (docs/adr/0005-two-generations.md). A transport that decided the revision and
        // read the `_meta` already hands it over checked (`RequestContext::request_meta`):
        // it is not parsed again.
        let modern = match cx.request_meta.clone() {
            Some(meta) if crate::modern::serves(self, meta.revision) => Some(meta),
            _ => crate::modern::request_revision(self, params.as_mut())?.map(Arc::new),
        };
        if let Some(meta) = modern {
            let req = crate::modern::ModernRequest {
                session: self,
                cx: &cx,
                method: &method,
                meta: &meta,
                text,
            };
            return crate::modern::handle(req, params).await;
        }
        // A `tasks/get` or `tasks/list` wanted as text is written from the tasks' fields,
        // no `Value` tree.
        if text && self.is_initialized() {
            let written = match method.as_str() {
                methods::TASKS_GET => Some(handlers::tasks::get_text(self, params.as_ref()).await),
                methods::TASKS_LIST => {
                    Some(handlers::tasks::list_text(self, params.as_ref()).await)
                }
                _ => None,
            };
            if let Some(written) = written {
                return written.map(Reply::Text);
            }
        }
        self.dispatch_legacy(cx, method, params, text).await
    }

    /// A 2025-11-25 request (or one before `initialize`), to the handler of its method;
    /// `text` as for [`Self::dispatch`].
    async fn dispatch_legacy(
        &self,
        cx: RequestContext,
        method: String,
        params: Option<Value>,
        text: bool,
    ) -> Result<Reply, ErrorObject> {
        match method.as_str() {
            methods::INITIALIZE => {
                let mut result = handlers::initialize::handle(self, params.clone())?;
                self.fallback
                    .initialize(&cx, params.as_ref().unwrap_or(&Value::Null), &mut result)
                    .await?;
                return Ok(Reply::Value(result));
            }
            // A fallback may take an initialized session's ping (a gateway, to its upstream).
            methods::PING if !self.fallback.forwards_ping() || !self.is_initialized() => {
                return Ok(Reply::Value(serde_json::json!({})));
            }
            methods::SERVER_DISCOVER => {
                return Err(ErrorObject::method_not_found(
                    "server/discover is a 2026-07-28 method: send it with `_meta[\"io.modelcontextprotocol/protocolVersion\"]` and `clientCapabilities`, or use initialize for 2025-11-25",
                ));
            }
            _ => {}
        }
        let Some(negotiated) = self.negotiated() else {
            return Err(not_initialized(&method));
        };
        let value = match method.as_str() {
            methods::TOOLS_LIST => handlers::tools_list::handle(self, params.as_ref()),
            methods::TOOLS_CALL => {
                return handlers::tools_call::handle(self, &cx, &negotiated, params, text).await;
            }
            m if serve::is_tasks_method(m) => {
                handlers::tasks::handle(self, &cx, m, params.as_ref()).await
            }
            m if self.state.catalog.serves(m, Gen::Legacy) => {
                let side = Side::Session {
                    log: &self.log_threshold,
                    subscriptions: &self.subscriptions,
                    cx: &cx,
                    capabilities: (*negotiated.client_capabilities).clone(),
                };
                self.state.catalog.handle(m, params.as_ref(), side).await
            }
            _ => self.fallback.request(cx, method, params).await,
        };
        value.map(Reply::Value)
    }
}

impl Session {
    /// Serve one request: counted in `mcp_tasks_requests_total` and
    /// `mcp_tasks_request_duration_seconds` by method and era, run in a `request` span
    /// ([`request_span`]), refused with -32029 (and `data.retryAfterMs`) past the
    /// `requests` rate limit of the requester before anything else.
    async fn served(
        &self,
        cx: RequestContext,
        req: Request,
        text: bool,
    ) -> Result<Reply, ErrorObject> {
        // A transport that checked the `_meta` of a stateless revision says which; else
        // it is read here (a request naming a revision we do not serve counts as the
        // latest: it is refused as such).
        let revision = match &cx.request_meta {
            Some(meta) => meta.revision,
            None if modern::names_revision_in_meta(req.params.as_ref()) => Revision::LATEST,
            None => Revision::V2025_11_25,
        };
        let span = request_span(&cx.id, &req.method, revision, req.params.as_ref());
        let timer = self.state.metrics.request(&req.method, revision);
        if let Err(e) = self.state.guard.admit_request(&self.requester, &req.method) {
            timer.finish(false);
            return Err(revision_error(revision, e));
        }
        let answer = self
            .dispatch(cx, req.method, req.params, text)
            .instrument(span)
            .await;
        timer.finish(answer.is_ok());
        answer.map_err(|e| revision_error(revision, e))
    }
}

#[async_trait]
impl Handler for Session {
    /// Serve one request: counted in `mcp_tasks_requests_total` and
    /// `mcp_tasks_request_duration_seconds` by method and era, run in a `request` span,
    /// refused with -32029 (and `data.retryAfterMs`) past the `requests` rate limit of the
    /// requester before anything else (the private `Session::served`).
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        self.served(cx, req, false).await?.into_value()
    }

    /// As [`Self::handle_request`], the answer as JSON text: a modern `tasks/get` writes
    /// it straight from its fields (see `crate::modern::Reply`).
    async fn handle_request_text(
        &self,
        cx: RequestContext,
        req: Request,
    ) -> Result<String, ErrorObject> {
        self.served(cx, req, true).await?.into_text()
    }

    fn is_sequential(&self, method: &str) -> bool {
        // Requests pipelined after `initialize` must see the session initialized.
        method == methods::INITIALIZE
    }

    async fn handle_notification(&self, peer: &Peer, n: Notification) {
        let Notification { method, params } = n;
        match method.as_str() {
            // The peer already stopped the cancelled request; the cancellation is per hop.
            methods::CANCELLED => {}
            _ if self.is_initialized() => {
                self.fallback.notification(peer, method, params).await;
            }
            methods::INITIALIZED => {}
            other => tracing::debug!(method = %capped(other), "notification ignored"),
        }
    }

    /// The negotiated version, the client's capabilities and info, and the requester's
    /// session key (its task quota without authentication): what another replica needs to
    /// serve this session ([`crate::http`] shares it through the store). `None` before
    /// `initialize`, and for a gateway's sessions (their upstream connection lives here).
    fn shared_state(&self) -> Option<Value> {
        if self.state.extension.is_some() {
            return None;
        }
        let n = self.negotiated()?;
        Some(serde_json::json!({
            "protocolVersion": n.protocol_version,
            "clientCapabilities": *n.client_capabilities,
            "clientInfo": n.client_info,
            "session": self.requester.session,
        }))
    }

    /// Whether this process's engine executes task `task_id`: then a `tasks/result` of
    /// a shared session gets the task's messages here, and the other replicas are not
    /// asked to relay them.
    fn runs_task_here(&self, task_id: &str) -> bool {
        self.state
            .engine
            .as_ref()
            .is_some_and(|e| e.runs_here(task_id))
    }

    /// A notification or a response a client POSTs counts toward its `requests` rate
    /// limit, as a request does.
    fn admit_message(&self, method: Option<&str>) -> Result<(), ErrorObject> {
        self.state
            .guard
            .admit_request(&self.requester, method.unwrap_or("(response)"))
    }

    fn handle_unmatched_response(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        // Answers to requests a task relayed through tasks/result: routed by id (to the
        // replica running the task, through the store's mailbox, when it is another one),
        // accepted only from the requester the task belongs to.
        let delivered = self
            .state
            .engine
            .as_ref()
            .is_some_and(|e| e.route_answer(&id, &self.requester, outcome));
        if !delivered {
            tracing::debug!(id = %id, "late or unknown response ignored");
        }
    }
}

/// `e` as the revision of its request may carry it: a 2026-07-28 answer uses the codes
/// that revision reserves only as it defines them ([`modern::valid_error`]: a rate limit,
/// a quota or a tool's reserved code goes out as -32603 with the original code in its
/// `data`).
fn revision_error(revision: Revision, e: ErrorObject) -> ErrorObject {
    if revision.is_stateless() {
        modern::valid_error(e)
    } else {
        e
    }
}

/// The answer to a request (not `initialize`, not `ping`) on a connection that opened no
/// 2025-11-25 session and that does not carry the 2026-07-28 `_meta`: -32602, naming both
/// ways to be served. It is a malformed 2026-07-28 request as much as an early 2025-11-25
/// one, and the code LSP uses for the latter (-32002) is one 2026-07-28 reserves.
///
/// Spec (basic, `_meta`): "A request missing any required field is malformed; the server
/// MUST reject it with JSON-RPC error code `-32602` (Invalid params)." Spec (basic, "Error
/// Codes"): "Implementations of this protocol version MUST NOT emit these codes: `-32002`".
fn not_initialized(method: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "`{method}` carries no `_meta[\"{}\"]` (required on every 2026-07-28 request), and no 2025-11-25 session is open on this connection (send `initialize` first)",
        modern::PROTOCOL_VERSION_META
    ))
}
