//! Multi round-trip requests for direct 2026-07-28 calls: a handler that asks the client
//! something (`ToolContext::elicit`, `sample`) is answered with an `InputRequiredResult`,
//! and the call goes on when the client retries with `inputResponses`.
//!
//! Two ways to go on, one `requestState` ([`super::mrtr_state`]):
//!
//! * **Fast path**: the replica that answered `input_required` keeps the handler waiting
//!   in its question, the call parked under a random handle named in the state. A retry
//!   reaching it hands the answers to the waiting questions, and the handler goes on from
//!   where it was (side effects before a question are not repeated).
//! * **Re-run**: any other replica (or this one after the parked call expired or was
//!   taken) runs the handler again from the start, feeding its questions, in the order it
//!   asks them (`q1`, `q2`, ...), the answers the state carries and the retry's
//!   `inputResponses`, until it asks a question not answered yet (a new
//!   `InputRequiredResult`) or finishes. Handlers must therefore be deterministic up to
//!   their questions: given the same arguments and answers, they ask the same questions
//!   in the same order (the method of each is checked; a question that differs from the
//!   recorded one is asked afresh and the rest of the record is dropped); what they do
//!   before a question may run again.
//!
//! The state carries the answers collected so far, bound by a keyed hash (HMAC-SHA256 with
//! a key derived from the store's key, shared by every replica on one database): a client
//! can neither forge nor alter an earlier answer; a state that fails verification is
//! refused (-32602). A genuine state for another caller, tool or arguments, or past its
//! expiry, is ignored: the call starts afresh, which the spec allows ("the server SHOULD
//! respond with a new `InputRequiredResult` requesting the missing information again").
//! Bounds: parked calls, per requester and per server, in number and in bytes
//! ([`MAX_PARKED_PER_REQUESTER`], [`MAX_PARKED_BYTES_PER_REQUESTER`], [`MAX_PARKED`],
//! [`MAX_PARKED_BYTES`]) and in time ([`PARK_TTL`]); the state's expiry ([`STATE_TTL`])
//! and size ([`super::mrtr_state::MAX_REQUEST_STATE_BYTES`]). A call that does not fit
//! its requester's share (or the server's bounds) is not parked: it is answered all the
//! same, and its retry takes the re-run way, so one requester filling its share costs
//! the others nothing.
//!
//! Spec (MRTR): "Notably, it allows servers to request additional information without
//! maintaining any server-side state." and "the server processing the retry does not need
//! any information beyond what is directly present in the retry request."

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::{RequestorChannel, TaskEngine};
use mcp_tasks_proto::modern::{InputRequiredResult, RetryFields};
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::RequestContext;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::deferred::{AbortOnDrop, HandOver, adopt};
use super::mrtr_state::{self as st, MAX_REQUEST_STATE_BYTES, Recorded, State};
use super::tool_call::ToolCall;
use crate::session::Session;
use crate::tool::ToolContext;

mod asking;
mod parked;

use self::asking::{Asking, Call, Question};
#[cfg(test)]
use self::parked::Full;
pub use self::parked::{
    MAX_PARKED, MAX_PARKED_BYTES, MAX_PARKED_BYTES_PER_REQUESTER, MAX_PARKED_PER_REQUESTER,
    PARK_TTL,
};
pub(crate) use self::parked::{Parked, Parking};

/// How long a `requestState` is honoured, on any replica (a re-run costs no memory while
/// the client thinks: the state travels with the client).
pub const STATE_TTL: Duration = Duration::from_secs(600);
/// How long, once a question is asked, to wait for more before answering (a handler that
/// asks two things at once gets both into one `InputRequiredResult`).
const SETTLE: Duration = Duration::from_millis(20);

/// Serve a direct call of `tool` whose handler may ask `caps`' questions.
///
/// A call that asks is parked for its retry within its requester's share and the server's
/// bounds ([`Parked::park`]); one that does not fit is answered all the same, and its
/// retry re-runs the handler.
///
/// With `task` (a [`crate::Tool::task_after_input`] tool, for a client with the tasks
/// extension) the call becomes a task of that engine when the handler calls
/// [`ToolContext::start_task`] or finishes with a result: the running handler is adopted
/// as the task's work and the reply is the `CreateTaskResult`, which carries no
/// `requestState` (the input rounds end there). Spec (SEP-2663): "The MRTR phase ends
/// when the server returns any non-`"input_required"` `resultType`, at which point its
/// `inputRequests` keys are consumed. The task phase begins with `CreateTaskResult` and
/// maintains _its own_ `inputRequests` keys independently."
///
/// # Errors
/// The handler's JSON-RPC error; -32602 for a malformed retry, a `requestState` that
/// fails verification or is over its bound, or answers that outgrow that bound; what the
/// engine refused when creating the task.
pub(super) async fn call(
    session: &Session,
    cx: &RequestContext,
    req: ToolCall<'_>,
    task: Option<&TaskEngine>,
) -> Result<Value, ErrorObject> {
    let retry = RetryFields::deserialize(&req.params)
        .map_err(|e| ErrorObject::invalid_params(format!("inputResponses/requestState: {e}")))?;
    let who = &session.requester;
    let parked = &session.state.parked;
    let key = parked.key(session).await?;
    let (binding, args_bytes) = st::binding(who.principal.as_deref(), &req.tool.name, &req.args);
    let state = match retry.request_state.as_deref() {
        Some(text) => Some(st::decode(key, text, MAX_REQUEST_STATE_BYTES)?),
        None => None,
    }
    // A genuine state of another caller or call, or expired: the call starts afresh.
    .filter(|s| s.binding == binding && s.expires_ms > st::now_ms());
    let responses = retry.input_responses.unwrap_or_default();
    // The task's params: the call's own, without this hop's MRTR fields.
    let task_params = task.map(|_| without_retry_fields(req.params.clone()));
    let fresh = |req, script| {
        let (call, held) = start(req, script);
        if task.is_some() {
            *call.escalate.lock() = Some(false);
        }
        let parking = Parking {
            owner: who.quota_key(),
            binding: binding.clone(),
            bytes: args_bytes.saturating_add(held),
        };
        (call, parking)
    };
    let (call, parking) = match state {
        Some(state) => match parked.take(&state.handle, &binding) {
            Some((call, parking)) => {
                if let Err(e) = answer(&call, responses) {
                    // A malformed answer changes nothing: the call waits on under its handle.
                    let _ = parked.park(state.handle, parking, call);
                    return Err(e);
                }
                (call, parking)
            }
            None => {
                let script = replay_script(state, responses)?;
                fresh(req, script)
            }
        },
        None => fresh(req, BTreeMap::new()),
    };
    *call.current.lock() = Some(cx.clone());
    let Some(mut work) = call.work.lock().take() else {
        return Err(ErrorObject::internal("the call is already being served"));
    };
    loop {
        let escalating = *call.escalate.lock() == Some(true);
        if let (Some(engine), Some(params), true) = (task, &task_params, escalating) {
            return escalate(session, engine, call, work, params.clone()).await;
        }
        let waiting = !call.questions.lock().is_empty();
        tokio::select! {
            r = &mut work => {
                let r = r.unwrap_or_else(|e| Err(ErrorObject::internal(format!("the tool failed: {e}"))));
                return match (task, task_params, r) {
                    // A result before `start_task`: the task is created all the same,
                    // already done (a JSON-RPC error before it stays the call's error).
                    (Some(engine), Some(params), Ok(result)) => {
                        *call.current.lock() = None;
                        let done = tokio::spawn(async move { Ok(result) });
                        escalate(session, engine, call, done, params).await
                    }
                    (_, _, r) => r,
                };
            }
            () = call.asked.notified(), if !waiting => continue,
            () = tokio::time::sleep(SETTLE), if waiting => {}
            () = cx.cancel.cancelled() => {
                call.cancel.cancel();
                work.abort();
                return Err(ErrorObject::internal("the call was cancelled"));
            }
        }
        if *call.escalate.lock() == Some(true) {
            continue;
        }
        // The handler waits for answers: hand the questions to the client.
        let (requests, asked, keys) = {
            let qs = call.questions.lock();
            let requests: Map<String, Value> = qs
                .iter()
                .map(|(n, q)| {
                    let key = q.key.clone().unwrap_or_else(|| format!("q{n}"));
                    (key, json!({"method": q.method, "params": q.params}))
                })
                .collect();
            let asked: BTreeMap<u64, String> =
                qs.iter().map(|(n, q)| (*n, q.method.clone())).collect();
            let keys: BTreeMap<u64, String> = qs
                .iter()
                .filter_map(|(n, q)| Some((*n, q.key.clone()?)))
                .collect();
            (requests, asked, keys)
        };
        let handle = mcp_tasks_core::engine::new_task_id();
        let state = State {
            handle: handle.clone(),
            binding,
            expires_ms: st::expiry(STATE_TTL),
            answers: call.answered.lock().clone(),
            asked,
            keys,
        };
        // Over the bound, the call ends here (dropped: its handler is aborted).
        let text = st::encode(key, &state, MAX_REQUEST_STATE_BYTES)?;
        *call.work.lock() = Some(work);
        *call.current.lock() = None;
        if let Err(full) = parked.park(handle, parking, call) {
            // Dropped here (its handler aborted); the state still carries every answer.
            tracing::debug!(
                bound = ?full,
                "a call waiting for input was not parked (over its requester's share or the \
                 server's bound); its retry re-runs the handler"
            );
        }
        let result = InputRequiredResult::new(requests, Some(text));
        return serde_json::to_value(result).map_err(ErrorObject::internal);
    }
}

/// Create the task that adopts the call's running handler (`work`), durably, and answer
/// with its `CreateTaskResult`. Questions the handler asked alongside
/// [`ToolContext::start_task`] go to the task, as the task's own.
async fn escalate(
    session: &Session,
    engine: &TaskEngine,
    call: Arc<Call>,
    work: tokio::task::JoinHandle<Result<Value, ErrorObject>>,
    params: Value,
) -> Result<Value, ErrorObject> {
    *call.current.lock() = None;
    let abort = AbortOnDrop(work.abort_handle());
    let cancel = call.cancel.clone();
    let hand_over: HandOver = Box::new(move |channel: Arc<dyn RequestorChannel>| {
        let waiting = {
            let mut questions = call.questions.lock();
            call.task.send_replace(Some(Arc::clone(&channel)));
            std::mem::take(&mut *questions)
        };
        for (n, q) in waiting {
            let channel = Arc::clone(&channel);
            tokio::spawn(async move {
                let key = q.key.unwrap_or_else(|| format!("q{n}"));
                let r = channel.request_keyed(&key, &q.method, q.params).await;
                let _ = q.answer.send(r);
            });
        }
        // The task keeps the call (and so the handler's channel) alive while it runs.
        Box::new(call) as Box<dyn Send>
    });
    adopt(session, engine, params, work, abort, cancel, hand_over).await
}

/// `params` without the MRTR fields of this hop (`inputResponses`, `requestState`).
fn without_retry_fields(mut params: Value) -> Value {
    if let Some(obj) = params.as_object_mut() {
        obj.remove("inputResponses");
        obj.remove("requestState");
    }
    params
}

/// The answers a re-run hands to the handler: those `state` carries and the retry's
/// `responses` to the questions it asked (validated as [`answer`] does; others ignored).
fn replay_script(
    state: State,
    responses: Map<String, Value>,
) -> Result<BTreeMap<u64, Recorded>, ErrorObject> {
    let mut script = state.answers;
    for (key, response) in responses {
        let named = state.keys.iter().find(|(_, k)| **k == key).map(|(n, _)| *n);
        let Some((n, method)) = named
            .or_else(|| question_number(&key))
            .and_then(|n| state.asked.get_key_value(&n))
        else {
            continue;
        };
        check_answer(&key, method, &response)?;
        script.insert(
            *n,
            Recorded {
                method: method.clone(),
                response,
            },
        );
    }
    Ok(script)
}

/// Start the handler of a new call (a re-run when `script` holds recorded answers), and
/// the bytes it holds besides the arguments: the JSON text of the params its handler sees
/// and of the client capabilities. The handler has the one copy of the arguments kept.
fn start(req: ToolCall<'_>, script: BTreeMap<u64, Recorded>) -> (Arc<Call>, usize) {
    let ToolCall {
        tool,
        args,
        params,
        caps,
        log,
    } = req;
    let call = Call::new(script);
    let params = for_handler(params, &args);
    let held = mcp_tasks_proto::json_len(&params).saturating_add(mcp_tasks_proto::json_len(&caps));
    let tcx = ToolContext::new(
        Arc::new(Asking(Arc::downgrade(&call))),
        mcp_tasks_proto::mcp::progress_token(Some(&params)),
        call.cancel.clone(),
        Arc::new(caps),
        None,
    )
    .with_request_params(params)
    .with_log_threshold(log)
    .in_revision(mcp_tasks_proto::Revision::V2026_07_28);
    let handler = Arc::clone(&tool.handler);
    let work = tokio::spawn(async move { handler.call(args, tcx).await.map(Value::from) });
    *call.work.lock() = Some(work);
    (call, held)
}

/// `params` as the handler of a call that may be parked sees them
/// ([`ToolContext::request_params`]): without the MRTR fields (they belong to this hop),
/// and without non-empty `arguments` (the handler has them as `args`: one copy is kept
/// while the call waits for its retry).
fn for_handler(params: Value, args: &Value) -> Value {
    let mut params = without_retry_fields(params);
    if let Some(obj) = params.as_object_mut()
        && args.as_object().is_some_and(|a| !a.is_empty())
    {
        obj.remove("arguments");
    }
    params
}

/// The number of the waiting question `key` names: one the handler named so, else `q<n>`.
fn number_of(questions: &BTreeMap<u64, Question>, key: &str) -> Option<u64> {
    questions
        .iter()
        .find(|(_, q)| q.key.as_deref() == Some(key))
        .map(|(n, _)| *n)
        .or_else(|| {
            question_number(key).filter(|n| questions.get(n).is_some_and(|q| q.key.is_none()))
        })
}

/// The number of the question key `q<n>`.
fn question_number(key: &str) -> Option<u64> {
    key.strip_prefix('q')
        .filter(|d| !d.starts_with('0'))
        .and_then(|d| d.parse().ok())
}

/// Spec (MRTR): "Servers SHOULD validate that the data provided by the client is a valid
/// `InputResponses` object": a response must be an object, and an answer to an
/// `elicitation/create` needs a valid `action`.
fn check_answer(key: &str, method: &str, response: &Value) -> Result<(), ErrorObject> {
    let valid = response.is_object()
        && (method != methods::ELICITATION_CREATE
            || matches!(
                response.get("action").and_then(Value::as_str),
                Some("accept" | "decline" | "cancel")
            ));
    if valid {
        Ok(())
    } else {
        Err(ErrorObject::invalid_params(format!(
            "inputResponses[{key:?}] is not a valid answer to its {method}"
        )))
    }
}

/// Hand the answers of a retry to the questions they answer; unknown keys are ignored.
///
/// Spec (MRTR): "If additional, unexpected parameters are provided in the
/// `InputResponses` object, the server SHOULD ignore any information it does not
/// recognize or need." Every answer is checked ([`check_answer`]) before anything is
/// handed over.
fn answer(call: &Call, responses: Map<String, Value>) -> Result<(), ErrorObject> {
    let mut questions = call.questions.lock();
    for (key, response) in &responses {
        if let Some(q) = number_of(&questions, key).and_then(|n| questions.get(&n)) {
            check_answer(key, &q.method, response)?;
        }
    }
    let mut answered = call.answered.lock();
    for (key, response) in responses {
        if let Some((n, q)) = number_of(&questions, &key).and_then(|n| questions.remove_entry(&n)) {
            answered.insert(
                n,
                Recorded {
                    method: q.method,
                    response: response.clone(),
                },
            );
            let _ = q.answer.send(Ok(response));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
