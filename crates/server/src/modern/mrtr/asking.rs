//! A direct call whose handler may ask questions ([`Call`]), and the requestor as its
//! handler sees it ([`Asking`]): a question waits in the call until the client's retry
//! answers it, or is answered at once from the recorded answers of a re-run; once the
//! call became a task, its questions are the task's.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use mcp_tasks_core::RequestorChannel;
use mcp_tasks_proto::{ErrorObject, methods};
use mcp_tasks_rpc::RequestContext;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::modern::mrtr_state::Recorded;
#[cfg(doc)]
use crate::tool::ToolContext;

pub(super) type Answer = oneshot::Sender<Result<Value, ErrorObject>>;

/// One question of a call, waiting for its answer.
pub(super) struct Question {
    /// The key the handler named it by, if any (else `q<n>`).
    pub(super) key: Option<String>,
    pub(super) method: String,
    pub(super) params: Value,
    pub(super) answer: Answer,
}

/// A direct call whose handler may ask questions.
pub(super) struct Call {
    /// The questions waiting for answers, by number (key `q<n>`).
    pub(super) questions: Mutex<BTreeMap<u64, Question>>,
    pub(super) next: Mutex<u64>,
    /// The answers the handler was given, by question number: what a `requestState` of
    /// the call carries.
    pub(super) answered: Mutex<BTreeMap<u64, Recorded>>,
    /// Recorded answers a re-run hands to the handler's questions, by number.
    pub(super) script: Mutex<BTreeMap<u64, Recorded>>,
    pub(super) asked: Notify,
    /// The request now serving the call (its progress goes there).
    pub(super) current: Mutex<Option<RequestContext>>,
    pub(super) work: Mutex<Option<tokio::task::JoinHandle<Result<Value, ErrorObject>>>>,
    pub(super) cancel: CancellationToken,
    /// [`crate::Tool::task_after_input`]: `None` when the call cannot become a task,
    /// `Some(true)` once the handler asked to ([`ToolContext::start_task`]).
    pub(super) escalate: Mutex<Option<bool>>,
    /// The task's channel, once the handler runs as a task's work: its questions and
    /// notifications go there from then on.
    pub(super) task: watch::Sender<Option<Arc<dyn RequestorChannel>>>,
}

impl Call {
    /// A call whose handler is not started yet; `script`: the answers a re-run hands it.
    pub(super) fn new(script: BTreeMap<u64, Recorded>) -> Arc<Self> {
        Arc::new(Self {
            questions: Mutex::new(BTreeMap::new()),
            next: Mutex::new(0),
            answered: Mutex::new(BTreeMap::new()),
            script: Mutex::new(script),
            asked: Notify::new(),
            current: Mutex::new(None),
            work: Mutex::new(None),
            cancel: CancellationToken::new(),
            escalate: Mutex::new(None),
            task: watch::channel(None).0,
        })
    }
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
pub(super) struct Asking(pub(super) Weak<Call>);

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

    async fn start_task(&self) -> Result<(), ErrorObject> {
        let gone = || ErrorObject::internal("the call ended before its task was created");
        let mut rx = {
            let call = self.0.upgrade().ok_or_else(gone)?;
            {
                let mut escalate = call.escalate.lock();
                match *escalate {
                    // A call that cannot become a task goes on as it is.
                    None => return Ok(()),
                    Some(_) => *escalate = Some(true),
                }
            }
            let rx = call.task.subscribe();
            call.asked.notify_one();
            rx
        };
        rx.wait_for(Option::is_some)
            .await
            .map(|_| ())
            .map_err(|_| gone())
    }

    async fn notify(&self, method: &str, params: Value) {
        let task = self.0.upgrade().and_then(|call| call.task.borrow().clone());
        if let Some(channel) = task {
            return channel.notify(method, params).await;
        }
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
            let mut questions = call.questions.lock();
            // Once a task: the question is the task's (its `inputRequests`).
            let task = call.task.borrow().clone();
            if let Some(channel) = task {
                drop(questions);
                return match key {
                    Some(key) => channel.request_keyed(key, method, params).await,
                    None => channel.request(method, params).await,
                };
            }
            questions.insert(
                n,
                Question {
                    key: key.map(str::to_owned),
                    method: method.to_owned(),
                    params,
                    answer: tx,
                },
            );
            drop(questions);
            call.asked.notify_one();
            call.cancel.clone()
        };
        tokio::select! {
            r = rx => r.unwrap_or_else(|_| Err(gone())),
            () = cancel.cancelled() => Err(ErrorObject::internal("the call was cancelled")),
        }
    }
}
