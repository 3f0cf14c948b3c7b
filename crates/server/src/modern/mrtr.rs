//! Multi round-trip requests for direct 2026-07-28 calls: a handler that asks the client
//! something (`ToolContext::elicit`, `sample`) is answered with an `InputRequiredResult`,
//! and the call goes on when the client retries with `inputResponses`.
//!
//! The handler is kept waiting, not re-run: its questions wait for their answers while the
//! call is parked under a random handle, which is the `requestState`. A retry naming a
//! live handle, from the same principal, for the same tool and arguments, hands the
//! answers to the waiting questions and waits again for the handler to finish or ask
//! more. Any other `requestState` (unknown, expired, another caller's, another call's) is
//! ignored: the call starts afresh, which the spec allows ("the server SHOULD respond
//! with a new `InputRequiredResult` requesting the missing information again"). Tool
//! authors write straight-line code in both eras; side effects before a question are not
//! repeated. The cost: the retry must reach this process (true on stdio; several HTTP
//! replicas need routing by `requestState`), and parked calls are bounded
//! ([`MAX_PARKED`], [`PARK_TTL`]).
//!
//! Spec (MRTR): "If a client request contains a `requestState` field, servers MUST treat
//! `requestState` as an attacker-controlled input. If `requestState` influences
//! authorization, resource access, or business logic, servers MUST protect its integrity
//! ... and MUST reject state that fails verification." The handle carries no data: it
//! names server-side state (122 random bits from the OS CSPRNG), checked against the
//! caller ("the authenticated principal, rejecting state presented by a different
//! principal"), a short expiry, and the originating request (tool name and arguments).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_core::{Requester, RequestorChannel};
use mcp_tasks_proto::modern::{InputRequiredResult, RetryFields};
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::RequestContext;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::tools::ToolCall;
use crate::session::Session;
use crate::tool::{Tool, ToolContext};

/// Most calls parked at once, per server.
pub(crate) const MAX_PARKED: usize = 1024;
/// How long a parked call waits for its retry.
pub(crate) const PARK_TTL: Duration = Duration::from_secs(600);
/// How long, once a question is asked, to wait for more before answering (a handler that
/// asks two things at once gets both into one `InputRequiredResult`).
const SETTLE: Duration = Duration::from_millis(20);

type Answer = oneshot::Sender<Result<Value, ErrorObject>>;

/// One question of a call, waiting for its answer.
struct Question {
    method: String,
    params: Value,
    answer: Answer,
}

/// A direct call whose handler may ask questions.
struct Call {
    questions: Mutex<BTreeMap<String, Question>>,
    next: Mutex<u64>,
    asked: Notify,
    /// The request now serving the call (its progress goes there).
    current: Mutex<Option<RequestContext>>,
    work: Mutex<Option<tokio::task::JoinHandle<Result<Value, ErrorObject>>>>,
    cancel: CancellationToken,
}

impl Drop for Call {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(w) = self.work.get_mut().take() {
            w.abort();
        }
    }
}

/// The requestor as the handler of a direct call sees it. It does not keep the call
/// alive: a call nobody serves or parks any more (abandoned, expired) is dropped, which
/// fails its questions and aborts its handler.
struct Asking(Weak<Call>);

#[async_trait]
impl RequestorChannel for Asking {
    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let gone = || ErrorObject::internal("the call ended before the question was answered");
        let (tx, rx) = oneshot::channel();
        let cancel = {
            let call = self.0.upgrade().ok_or_else(gone)?;
            let key = {
                let mut n = call.next.lock();
                *n += 1;
                format!("q{n}")
            };
            call.questions.lock().insert(
                key,
                Question {
                    method: method.to_owned(),
                    params,
                    answer: tx,
                },
            );
            call.asked.notify_one();
            call.cancel.clone()
        };
        tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(gone())),
            () = cancel.cancelled() => Err(ErrorObject::internal("the call was cancelled")),
        }
    }

    async fn notify(&self, method: &str, params: Value) {
        let cx = self
            .0
            .upgrade()
            .and_then(|call| call.current.lock().clone());
        if let (Some(cx), true) = (cx, method == methods::PROGRESS) {
            cx.notify(method, Some(params)).await;
        }
    }
}

/// A call waiting for its retry.
struct ParkedCall {
    principal: Option<String>,
    name: String,
    args: Value,
    expires: Instant,
    call: Arc<Call>,
}

/// The calls of a server waiting for their retry, by `requestState`.
#[derive(Default)]
pub(crate) struct Parked(Mutex<HashMap<String, ParkedCall>>);

impl Parked {
    /// The call `handle` names, if it is live and was made by `who` for `name` with
    /// `args`; it is taken out either way.
    fn take(&self, handle: &str, who: &Requester, name: &str, args: &Value) -> Option<Arc<Call>> {
        let p = self.0.lock().remove(handle)?;
        (p.principal == who.principal
            && p.name == name
            && &p.args == args
            && p.expires > Instant::now())
        .then_some(p.call)
    }

    /// Park `call` under `handle` (a fresh one when `None`); `None` when too many calls
    /// are parked.
    fn park(
        &self,
        handle: Option<String>,
        who: &Requester,
        name: &str,
        args: &Value,
        call: Arc<Call>,
    ) -> Option<String> {
        let now = Instant::now();
        let mut m = self.0.lock();
        m.retain(|_, p| p.expires > now);
        if m.len() >= MAX_PARKED {
            return None;
        }
        let handle = handle.unwrap_or_else(mcp_tasks_core::engine::new_task_id);
        m.insert(
            handle.clone(),
            ParkedCall {
                principal: who.principal.clone(),
                name: name.to_owned(),
                args: args.clone(),
                expires: now + PARK_TTL,
                call,
            },
        );
        Some(handle)
    }
}

/// Serve a direct call of `tool` whose handler may ask `caps`' questions.
///
/// # Errors
/// The handler's JSON-RPC error; -32602 for a malformed retry; -32603 when too many calls
/// wait for input.
pub(super) async fn call(
    session: &Session,
    cx: &RequestContext,
    req: ToolCall<'_>,
) -> Result<Value, ErrorObject> {
    let retry = RetryFields::deserialize(&req.params)
        .map_err(|e| ErrorObject::invalid_params(format!("inputResponses/requestState: {e}")))?;
    let who = &session.requester;
    let parked = &session.state.parked;
    let resumed = retry
        .request_state
        .as_deref()
        .and_then(|h| parked.take(h, who, &req.tool.name, &req.args));
    let call = match resumed {
        Some(call) => {
            if let Err(e) = answer(&call, retry.input_responses.unwrap_or_default()) {
                // A malformed answer changes nothing: the call waits on under its handle.
                parked.park(retry.request_state, who, &req.tool.name, &req.args, call);
                return Err(e);
            }
            call
        }
        None => start(req.tool, req.args.clone(), req.params, req.caps),
    };
    *call.current.lock() = Some(cx.clone());
    let Some(mut work) = call.work.lock().take() else {
        return Err(ErrorObject::internal("the call is already being served"));
    };
    loop {
        let waiting = !call.questions.lock().is_empty();
        tokio::select! {
            r = &mut work => {
                return r.unwrap_or_else(|e| Err(ErrorObject::internal(format!("the tool failed: {e}"))));
            }
            () = call.asked.notified(), if !waiting => continue,
            () = tokio::time::sleep(SETTLE), if waiting => {}
            () = cx.cancel.cancelled() => {
                call.cancel.cancel();
                work.abort();
                return Err(ErrorObject::internal("the call was cancelled"));
            }
        }
        // The handler waits for answers: hand the questions to the client.
        let requests: Map<String, Value> = call
            .questions
            .lock()
            .iter()
            .map(|(k, q)| (k.clone(), json!({"method": q.method, "params": q.params})))
            .collect();
        *call.work.lock() = Some(work);
        *call.current.lock() = None;
        let Some(handle) = parked.park(None, who, &req.tool.name, &req.args, Arc::clone(&call))
        else {
            return Err(ErrorObject::internal(
                "too many calls are waiting for input; try again later",
            ));
        };
        let result = InputRequiredResult::new(requests, Some(handle));
        return serde_json::to_value(result).map_err(ErrorObject::internal);
    }
}

/// Start the handler of a new call.
fn start(tool: &Tool, args: Value, params: Value, caps: Value) -> Arc<Call> {
    let call = Arc::new(Call {
        questions: Mutex::new(BTreeMap::new()),
        next: Mutex::new(0),
        asked: Notify::new(),
        current: Mutex::new(None),
        work: Mutex::new(None),
        cancel: CancellationToken::new(),
    });
    let tcx = ToolContext::new(
        Arc::new(Asking(Arc::downgrade(&call))),
        mcp_tasks_proto::mcp::progress_token(Some(&params)),
        call.cancel.clone(),
        Arc::new(caps),
        None,
    )
    .with_request_params(strip_retry(params));
    let handler = Arc::clone(&tool.handler);
    let work = tokio::spawn(async move { handler.call(args, tcx).await.map(Value::from) });
    *call.work.lock() = Some(work);
    call
}

/// `params` without the MRTR fields (they belong to this hop).
fn strip_retry(mut params: Value) -> Value {
    if let Some(obj) = params.as_object_mut() {
        obj.remove("inputResponses");
        obj.remove("requestState");
    }
    params
}

/// Hand the answers of a retry to the questions they answer; unknown keys are ignored.
///
/// Spec (MRTR): "If additional, unexpected parameters are provided in the
/// `InputResponses` object, the server SHOULD ignore any information it does not
/// recognize or need." and "Servers SHOULD validate that the data provided by the client
/// is a valid `InputResponses` object": a response must be an object, and an answer to an
/// `elicitation/create` needs a valid `action` (checked before anything is handed over).
fn answer(call: &Call, responses: Map<String, Value>) -> Result<(), ErrorObject> {
    let mut questions = call.questions.lock();
    for (key, response) in &responses {
        let Some(q) = questions.get(key) else {
            continue;
        };
        let valid = response.is_object()
            && (q.method != methods::ELICITATION_CREATE
                || matches!(
                    response.get("action").and_then(Value::as_str),
                    Some("accept" | "decline" | "cancel")
                ));
        if !valid {
            return Err(ErrorObject::invalid_params(format!(
                "inputResponses[{key:?}] is not a valid answer to its {}",
                q.method
            )));
        }
    }
    for (key, response) in responses {
        if let Some(q) = questions.remove(&key) {
            let _ = q.answer.send(Ok(response));
        }
    }
    Ok(())
}
