//! A 2026-07-28 request of several rounds (multi round-trip requests, MRTR): sent, and
//! while the server answers `input_required`, its `inputRequests` answered and the
//! request sent again with `inputResponses` and the `requestState` echoed. The one loop of
//! a [`crate::Client`]'s own calls (its handlers answer) and of a program that passes a
//! call on to a server (the gateway relays each question to its own client): each says
//! how a round is sent and who answers as a [`RoundTrips`].

use async_trait::async_trait;
use mcp_tasks_proto::modern::ResultType;
use serde_json::{Map, Value};

/// How the rounds of one request are sent, and who answers the server's questions.
#[async_trait]
pub trait RoundTrips: Send + Sync {
    /// What a round that got no answer fails with.
    type Error: Send;

    /// Send the request with `params` (the first round's, or a retry's) and return the
    /// server's result.
    ///
    /// # Errors
    /// The request's.
    async fn send(&self, params: Value) -> Result<Value, Self::Error>;

    /// The answers to `requests` (an `inputRequests` map), by key (`inputResponses`).
    ///
    /// # Errors
    /// That of a question that got no answer.
    async fn answer(&self, requests: Map<String, Value>)
    -> Result<Map<String, Value>, Self::Error>;
}

/// The end of the rounds: a result that is not `input_required`.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// `resultType: "complete"` (or none): the result.
    Complete(Value),
    /// `resultType: "task"`: the `CreateTaskResult`.
    Task(Value),
}

/// Why the rounds ended without a [`Answered`] result.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundsError<E> {
    /// A round got no answer, or a question none ([`RoundTrips`]'s error).
    Peer(E),
    /// The server still asked for input after this many rounds were answered.
    TooMany(u32),
    /// The server answered with this unknown `resultType`.
    UnknownResult(String),
}

impl<E> From<E> for RoundsError<E> {
    fn from(e: E) -> Self {
        Self::Peer(e)
    }
}

/// Send the request with `params` until the server answers other than `input_required`:
/// each `inputRequests` map answered ([`RoundTrips::answer`]) and the request sent again
/// with those `inputResponses` (none when there were no questions) and the result's
/// `requestState` (none when it had none), at most `max_rounds` times.
///
/// Spec (MRTR): "If an `InputRequiredResult` contains the `requestState` field, the
/// client MUST echo back the exact value of that field when retrying the original
/// request. ... If the `InputRequiredResult` does not contain a `requestState` field, the
/// client MUST NOT include one in the retry." Spec (basic): "A `resultType` of any value
/// unrecognized by the client MUST be considered invalid."
///
/// # Errors
/// [`RoundsError`]: a round's or a question's, the bound, an unknown `resultType`.
pub async fn run_rounds<R: RoundTrips + ?Sized>(
    peer: &R,
    mut params: Map<String, Value>,
    max_rounds: u32,
) -> Result<Answered, RoundsError<R::Error>> {
    let mut rounds = 0;
    loop {
        let v = peer.send(Value::Object(params.clone())).await?;
        match ResultType::of(&v) {
            ResultType::Complete => return Ok(Answered::Complete(v)),
            ResultType::Task => return Ok(Answered::Task(v)),
            ResultType::InputRequired => {
                rounds += 1;
                if rounds > max_rounds {
                    return Err(RoundsError::TooMany(max_rounds));
                }
                let requests = v
                    .get("inputRequests")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let responses = peer.answer(requests).await?;
                params.remove("inputResponses");
                params.remove("requestState");
                if !responses.is_empty() {
                    params.insert("inputResponses".into(), Value::Object(responses));
                }
                if let Some(state) = v.get("requestState") {
                    params.insert("requestState".into(), state.clone());
                }
            }
            ResultType::Other(t) => return Err(RoundsError::UnknownResult(t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use serde_json::json;

    /// Answers each round from a script and keeps what was sent.
    struct Script {
        answers: Mutex<Vec<Value>>,
        sent: Mutex<Vec<Value>>,
    }

    #[async_trait]
    impl RoundTrips for Script {
        type Error = String;
        async fn send(&self, params: Value) -> Result<Value, String> {
            self.sent.lock().push(params);
            self.answers.lock().pop().ok_or_else(|| "no answer".into())
        }
        async fn answer(&self, requests: Map<String, Value>) -> Result<Map<String, Value>, String> {
            Ok(requests
                .keys()
                .map(|k| (k.clone(), json!({"ok": k})))
                .collect())
        }
    }

    fn script(mut answers: Vec<Value>) -> Script {
        answers.reverse();
        Script {
            answers: Mutex::new(answers),
            sent: Mutex::new(Vec::new()),
        }
    }

    #[tokio::test]
    async fn retries_carry_the_answers_and_echo_the_state_only_when_given() {
        let peer = script(vec![
            json!({"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list"}}, "requestState": "s1"}),
            json!({"resultType": "input_required", "requestState": "s2"}),
            json!({"resultType": "input_required", "inputRequests": {"r": {}}}),
            json!({"resultType": "complete", "content": []}),
        ]);
        let params = json!({"name": "t"}).as_object().cloned().unwrap();
        let out = run_rounds(&peer, params, 32).await.unwrap();
        assert_eq!(
            out,
            Answered::Complete(json!({"resultType": "complete", "content": []}))
        );
        let sent = peer.sent.lock();
        assert_eq!(sent[0], json!({"name": "t"}));
        assert_eq!(
            sent[1],
            json!({"name": "t", "inputResponses": {"q": {"ok": "q"}}, "requestState": "s1"})
        );
        assert_eq!(sent[2], json!({"name": "t", "requestState": "s2"}));
        assert_eq!(
            sent[3],
            json!({"name": "t", "inputResponses": {"r": {"ok": "r"}}})
        );
    }

    #[tokio::test]
    async fn the_bound_and_unknown_results_end_the_rounds() {
        let ask = json!({"resultType": "input_required", "inputRequests": {"q": {}}});
        let peer = script(vec![ask.clone(); 4]);
        let params = Map::new();
        assert_eq!(
            run_rounds(&peer, params.clone(), 2).await,
            Err(RoundsError::TooMany(2))
        );
        assert_eq!(
            peer.sent.lock().len(),
            3,
            "two rounds answered, the third refused"
        );
        let peer = script(vec![json!({"resultType": "later"})]);
        assert_eq!(
            run_rounds(&peer, params.clone(), 2).await,
            Err(RoundsError::UnknownResult("later".into()))
        );
        let peer = script(vec![json!({"resultType": "task", "taskId": "t"})]);
        assert!(matches!(
            run_rounds(&peer, params, 2).await,
            Ok(Answered::Task(_))
        ));
    }
}
