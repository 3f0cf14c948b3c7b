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
//! Bounds: parked calls ([`MAX_PARKED`], [`PARK_TTL`], also the state's expiry) and the
//! state's size ([`super::mrtr_state::MAX_REQUEST_STATE_BYTES`]).
//!
//! Spec (MRTR): "Notably, it allows servers to request additional information without
//! maintaining any server-side state." and "the server processing the retry does not need
//! any information beyond what is directly present in the retry request."

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
use tokio::sync::{Notify, OnceCell, oneshot};
use tokio_util::sync::CancellationToken;

use super::mrtr_state::{self as st, MAX_REQUEST_STATE_BYTES, Recorded, State};
use super::tools::ToolCall;
use crate::session::Session;
use crate::tool::ToolContext;

/// Most calls parked at once, per server.
pub(crate) const MAX_PARKED: usize = 1024;
/// How long a parked call waits for its retry (and how long its `requestState` is
/// honoured on any replica).
pub(crate) const PARK_TTL: Duration = Duration::from_secs(600);
/// How long, once a question is asked, to wait for more before answering (a handler that
/// asks two things at once gets both into one `InputRequiredResult`).
const SETTLE: Duration = Duration::from_millis(20);

type Answer = oneshot::Sender<Result<Value, ErrorObject>>;

/// One question of a call, waiting for its answer.
struct Question {
    /// The key the handler named it by, if any (else `q<n>`).
    key: Option<String>,
    method: String,
    params: Value,
    answer: Answer,
}

/// A direct call whose handler may ask questions.
struct Call {
    /// The questions waiting for answers, by number (key `q<n>`).
    questions: Mutex<BTreeMap<u64, Question>>,
    next: Mutex<u64>,
    /// The answers the handler was given, by question number: what a `requestState` of
    /// the call carries.
    answered: Mutex<BTreeMap<u64, Recorded>>,
    /// Recorded answers a re-run hands to the handler's questions, by number.
    script: Mutex<BTreeMap<u64, Recorded>>,
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
        self.ask(None, method, params).await
    }

    async fn request_keyed(
        &self,
        key: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        self.ask(Some(key), method, params).await
    }

    async fn notify(&self, method: &str, params: Value) {
        let cx = self
            .0
            .upgrade()
            .and_then(|call| call.current.lock().clone());
        let streamed = method == methods::PROGRESS || method == methods::LOG_MESSAGE;
        if let (Some(cx), true) = (cx, streamed) {
            cx.notify(method, Some(params)).await;
        }
    }
}

impl Asking {
    /// Ask the client `method` with `params` (named `key` in the `inputRequests`, else
    /// `q<n>`), and wait for the answer.
    async fn ask(
        &self,
        key: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let gone = || ErrorObject::internal("the call ended before the question was answered");
        let (tx, rx) = oneshot::channel();
        let cancel = {
            let call = self.0.upgrade().ok_or_else(gone)?;
            let n = {
                let mut n = call.next.lock();
                *n += 1;
                *n
            };
            // A re-run: the recorded answer to this question, if it is the same question.
            let recorded = {
                let mut script = call.script.lock();
                match script.remove(&n) {
                    Some(r) if r.method == method => Some(r),
                    Some(_) => {
                        tracing::debug!(
                            question = n,
                            "a re-run handler asked another question than recorded; asking afresh"
                        );
                        script.clear();
                        None
                    }
                    None => None,
                }
            };
            if let Some(r) = recorded {
                let response = r.response.clone();
                call.answered.lock().insert(n, r);
                return Ok(response);
            }
            call.questions.lock().insert(
                n,
                Question {
                    key: key.map(str::to_owned),
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
}

/// A call waiting for its retry.
struct ParkedCall {
    principal: Option<String>,
    name: String,
    args: Value,
    expires: Instant,
    call: Arc<Call>,
}

/// The calls of a server waiting for their retry, by handle, and the key of its
/// `requestState`s.
#[derive(Default)]
pub(crate) struct Parked {
    calls: Mutex<HashMap<String, ParkedCall>>,
    key: OnceCell<[u8; 32]>,
}

impl Parked {
    /// The call `handle` names, if it is live and was made by `who` for `name` with
    /// `args`; it is taken out either way.
    fn take(&self, handle: &str, who: &Requester, name: &str, args: &Value) -> Option<Arc<Call>> {
        let p = self.calls.lock().remove(handle)?;
        (p.principal == who.principal
            && p.name == name
            && &p.args == args
            && p.expires > Instant::now())
        .then_some(p.call)
    }

    /// Park `call` under `handle`; `false` when too many calls are parked.
    fn park(
        &self,
        handle: String,
        who: &Requester,
        name: &str,
        args: &Value,
        call: Arc<Call>,
    ) -> bool {
        let now = Instant::now();
        let mut m = self.calls.lock();
        m.retain(|_, p| p.expires > now);
        if m.len() >= MAX_PARKED {
            return false;
        }
        m.insert(
            handle,
            ParkedCall {
                principal: who.principal.clone(),
                name: name.to_owned(),
                args: args.clone(),
                expires: now + PARK_TTL,
                call,
            },
        );
        true
    }

    /// The key of this server's states: derived from the store's key (the same on every
    /// replica of one database), or random per process without a task store.
    pub(crate) async fn key(&self, session: &Session) -> Result<&[u8; 32], ErrorObject> {
        self.key
            .get_or_try_init(|| async {
                match &session.state.engine {
                    Some(engine) => engine
                        .store()
                        .cursor_key()
                        .await
                        .map(|k| st::derive_key(&k))
                        .map_err(|e| {
                            ErrorObject::internal(format!("the store's key is unavailable: {e}"))
                        }),
                    None => Ok(st::random_key()),
                }
            })
            .await
    }
}

/// Serve a direct call of `tool` whose handler may ask `caps`' questions.
///
/// # Errors
/// The handler's JSON-RPC error; -32602 for a malformed retry, a `requestState` that
/// fails verification or is over its bound, or answers that outgrow that bound; -32603
/// when too many calls wait for input.
pub(super) async fn call(
    session: &Session,
    cx: &RequestContext,
    req: ToolCall<'_>,
) -> Result<Value, ErrorObject> {
    let retry = RetryFields::deserialize(&req.params)
        .map_err(|e| ErrorObject::invalid_params(format!("inputResponses/requestState: {e}")))?;
    let who = &session.requester;
    let parked = &session.state.parked;
    let key = parked.key(session).await?;
    let binding = st::binding(who.principal.as_deref(), &req.tool.name, &req.args);
    let state = match retry.request_state.as_deref() {
        Some(text) => Some(st::decode(key, text, MAX_REQUEST_STATE_BYTES)?),
        None => None,
    }
    // A genuine state of another caller or call, or expired: the call starts afresh.
    .filter(|s| s.binding == binding && s.expires_ms > st::now_ms());
    let responses = retry.input_responses.unwrap_or_default();
    let call = match state {
        Some(state) => match parked.take(&state.handle, who, &req.tool.name, &req.args) {
            Some(call) => {
                if let Err(e) = answer(&call, responses) {
                    // A malformed answer changes nothing: the call waits on under its handle.
                    parked.park(state.handle, who, &req.tool.name, &req.args, call);
                    return Err(e);
                }
                call
            }
            None => {
                let script = replay_script(state, responses)?;
                start(&req, script)
            }
        },
        None => start(&req, BTreeMap::new()),
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
            expires_ms: st::expiry(PARK_TTL),
            answers: call.answered.lock().clone(),
            asked,
            keys,
        };
        // Over the bound, the call ends here (dropped: its handler is aborted).
        let text = st::encode(key, &state, MAX_REQUEST_STATE_BYTES)?;
        *call.work.lock() = Some(work);
        *call.current.lock() = None;
        if !parked.park(handle, who, &req.tool.name, &req.args, Arc::clone(&call)) {
            return Err(ErrorObject::internal(
                "too many calls are waiting for input; try again later",
            ));
        }
        let result = InputRequiredResult::new(requests, Some(text));
        return serde_json::to_value(result).map_err(ErrorObject::internal);
    }
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

/// Start the handler of a new call (a re-run when `script` holds recorded answers).
fn start(req: &ToolCall<'_>, script: BTreeMap<u64, Recorded>) -> Arc<Call> {
    let call = Arc::new(Call {
        questions: Mutex::new(BTreeMap::new()),
        next: Mutex::new(0),
        answered: Mutex::new(BTreeMap::new()),
        script: Mutex::new(script),
        asked: Notify::new(),
        current: Mutex::new(None),
        work: Mutex::new(None),
        cancel: CancellationToken::new(),
    });
    let tcx = ToolContext::new(
        Arc::new(Asking(Arc::downgrade(&call))),
        mcp_tasks_proto::mcp::progress_token(Some(&req.params)),
        call.cancel.clone(),
        Arc::new(req.caps.clone()),
        None,
    )
    .with_request_params(strip_retry(req.params.clone()))
    .with_log_threshold(req.log.clone());
    let handler = Arc::clone(&req.tool.handler);
    let args = req.args.clone();
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
