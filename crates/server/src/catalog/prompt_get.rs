//! A 2026-07-28 `prompts/get` of a prompt that asks ([`super::prompt::Prompt::asking`]):
//! its result, or an `InputRequiredResult` whose signed `requestState` carries the answers
//! so far; the client retries with `inputResponses`, and the handler is run again from the
//! start (so any replica can serve the retry). Spec (MRTR): "Notably, it allows servers to
//! request additional information without maintaining any server-side state."

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::modern::{InputRequiredResult, RetryFields};
use serde::Deserialize;
use serde_json::Value;

use super::asking::PromptContext;
use super::prompt::Prompt;
use crate::modern::mrtr_state::{self as st, MAX_REQUEST_STATE_BYTES, Recorded, State};

/// How long, once a question is asked, to wait for more before answering.
const SETTLE: Duration = Duration::from_millis(20);
/// How long a prompt's `requestState` is honoured.
const STATE_TTL: Duration = Duration::from_secs(600);

/// A 2026-07-28 `prompts/get` of `prompt`: its result, or an `InputRequiredResult` with
/// the handler's open questions and the answers so far in a signed `requestState`.
///
/// # Errors
/// -32602 for a malformed retry or a `requestState` that fails verification; the
/// handler's errors.
pub(crate) async fn get_modern(
    prompt: &Prompt,
    params: Option<&Value>,
    key: &[u8; 32],
    principal: Option<&str>,
    capabilities: Value,
) -> Result<Value, ErrorObject> {
    let arguments = params.and_then(|p| p.get("arguments"));
    let retry = match params {
        Some(p) => RetryFields::deserialize(p).map_err(|e| {
            ErrorObject::invalid_params(format!("inputResponses/requestState: {e}"))
        })?,
        None => RetryFields::default(),
    };
    let (binding, _) = st::binding(
        principal,
        &format!("prompt:{}", prompt.name),
        arguments.unwrap_or(&Value::Null),
    );
    let state = match retry.request_state.as_deref() {
        Some(text) => Some(st::decode(key, text, MAX_REQUEST_STATE_BYTES)?),
        None => None,
    }
    // A genuine state of another caller or prompt, or expired: start afresh.
    .filter(|s| s.binding == binding && s.expires_ms > st::now_ms());
    let mut answers: BTreeMap<String, Recorded> = BTreeMap::new();
    // The keys of the questions asked in the last round, and their methods.
    let mut asked_last: BTreeMap<String, String> = BTreeMap::new();
    if let Some(state) = state {
        for (n, k) in state.keys {
            if let Some(r) = state.answers.get(&n) {
                answers.insert(k, r.clone());
            } else if let Some(m) = state.asked.get(&n) {
                asked_last.insert(k, m.clone());
            }
        }
    }
    // The retry's answers to those questions; answers to anything else are ignored.
    for (k, response) in retry.input_responses.unwrap_or_default() {
        if let Some(method) = asked_last.get(&k) {
            if !response.is_object() {
                return Err(ErrorObject::invalid_params(format!(
                    "inputResponses[{k:?}] is not a valid answer to its {method}"
                )));
            }
            answers.insert(
                k,
                Recorded {
                    method: method.clone(),
                    response,
                },
            );
        }
    }
    let cx = PromptContext::new(None, capabilities, answers);
    let run = prompt.get(arguments, cx.clone());
    tokio::pin!(run);
    tokio::select! {
        r = &mut run => return r,
        () = cx.inner.questioned.notified() => {}
    }
    // Other questions asked at about the same time join this round.
    tokio::select! {
        r = &mut run => return r,
        () = tokio::time::sleep(SETTLE) => {}
    }
    let asked = std::mem::take(&mut *cx.inner.asked.lock());
    let mut state = State {
        handle: String::new(),
        binding,
        expires_ms: st::expiry(STATE_TTL),
        answers: BTreeMap::new(),
        asked: BTreeMap::new(),
        keys: BTreeMap::new(),
    };
    let mut n = 0u64;
    for (k, r) in &cx.inner.answers {
        n += 1;
        state.answers.insert(n, r.clone());
        state.keys.insert(n, k.clone());
    }
    for (k, q) in &asked {
        n += 1;
        let method = q["method"].as_str().unwrap_or_default().to_owned();
        state.asked.insert(n, method);
        state.keys.insert(n, k.clone());
    }
    let text = st::encode(key, &state, MAX_REQUEST_STATE_BYTES)?;
    serde_json::to_value(InputRequiredResult::new(asked, Some(text))).map_err(ErrorObject::internal)
}
