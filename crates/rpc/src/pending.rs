//! What a [`Peer`](crate::Peer)'s outgoing requests are sent with ([`RequestOptions`]) and
//! the requests it sent that wait for their answers ([`PendingMap`]: id allocation and
//! the answers' routing to their callers).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_tasks_proto::RequestId;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::PeerError;
use crate::route::Route;

pub(crate) type Answer = Result<Value, PeerError>;

/// How one outgoing request is sent and waited for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestOptions {
    /// The stream the request (and its cancellation) belongs to.
    pub route: Route,
    /// Give up after this long: the request fails with [`PeerError::Timeout`] and is
    /// cancelled.
    pub timeout: Option<Duration>,
    /// The `reason` of the `notifications/cancelled` sent when the caller stops waiting.
    pub cancel_reason: Cow<'static, str>,
    /// Where the id the peer gives the request is written, before it is sent: a caller
    /// that must recognize what arrives on the request's own stream
    /// ([`crate::RequestContext::stream_of`]) keeps it.
    pub id_sink: Option<Arc<OnceLock<RequestId>>>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        Self {
            route: Route::Standalone,
            timeout: None,
            cancel_reason: Cow::Borrowed("the requester stopped waiting"),
            id_sink: None,
        }
    }
}

impl RequestOptions {
    /// On `route`, unbounded.
    pub fn new(route: Route) -> Self {
        Self {
            route,
            ..Self::default()
        }
    }

    /// Bounded by `timeout` (`None`: unbounded).
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The reason given when the request is cancelled because its caller went away.
    #[must_use]
    pub fn cancel_reason(mut self, reason: impl Into<Cow<'static, str>>) -> Self {
        self.cancel_reason = reason.into();
        self
    }

    /// Write the request's id into `sink` before it is sent ([`Self::id_sink`]).
    #[must_use]
    pub fn record_id(mut self, sink: Arc<OnceLock<RequestId>>) -> Self {
        self.id_sink = Some(sink);
        self
    }
}

/// The requests sent and not answered yet.
pub(crate) struct PendingMap {
    map: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
}

impl PendingMap {
    pub(crate) fn new() -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
        }
    }

    /// A fresh id, and the receiver its answer will arrive on.
    pub(crate) fn open(&self) -> (RequestId, oneshot::Receiver<Answer>) {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.map.lock().insert(id.clone(), tx);
        (id, rx)
    }

    /// Number the requests from now on from `first`.
    pub(crate) fn number_from(&self, first: i64) {
        self.next_id.store(first, Ordering::Relaxed);
    }

    /// Whether a request of ours with id `id` waits for its answer.
    pub(crate) fn contains(&self, id: &RequestId) -> bool {
        self.map.lock().contains_key(id)
    }

    /// Whether `id` was pending (and no longer is).
    pub(crate) fn forget(&self, id: &RequestId) -> bool {
        self.map.lock().remove(id).is_some()
    }

    /// Complete `id`; hands the answer back when no request of ours waits for it.
    pub(crate) fn complete(&self, id: &RequestId, answer: Answer) -> Option<Answer> {
        match self.map.lock().remove(id) {
            Some(tx) => {
                let _ = tx.send(answer);
                None
            }
            None => Some(answer),
        }
    }

    /// Fail every pending request with `error`.
    pub(crate) fn fail_all(&self, error: &PeerError) {
        for (_, tx) in self.map.lock().drain() {
            let _ = tx.send(Err(error.clone()));
        }
    }

    /// Number of requests waiting for an answer.
    pub(crate) fn len(&self) -> usize {
        self.map.lock().len()
    }
}
