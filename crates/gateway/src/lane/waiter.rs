//! What the lane keeps of each call in flight ([`Waiter`]): the upstream requests whose
//! response streams may carry the upstream's questions for it, and the failure it is given
//! when such a question cannot be attributed.

use std::sync::{Arc, OnceLock};

use mcp_tasks_proto::{ErrorObject, RequestId};
use parking_lot::Mutex;
use tokio::sync::watch;

/// What the lane keeps of one call in flight besides its context: the ids of its
/// requests upstream whose response streams may carry the upstream's questions for it
/// (Streamable HTTP), and the error it is failed with when the upstream asked a question
/// the gateway could not attribute ([`LaneInner::on_upstream_request`](super::LaneInner::on_upstream_request)).
pub(crate) struct Waiter {
    posts: Mutex<Vec<Arc<OnceLock<RequestId>>>>,
    failed: watch::Sender<Option<ErrorObject>>,
}

impl Waiter {
    pub(super) fn new() -> Self {
        Self {
            posts: Mutex::new(Vec::new()),
            failed: watch::channel(None).0,
        }
    }

    /// A request of this call is about to be sent upstream: its id will be written into
    /// the returned sink, which stays registered until the [`Post`] is dropped.
    pub(crate) fn post(self: &Arc<Self>) -> Post {
        let sink = Arc::new(OnceLock::new());
        self.posts.lock().push(Arc::clone(&sink));
        Post {
            waiter: Arc::clone(self),
            sink,
        }
    }

    /// Whether the upstream request `id` of ours belongs to this call.
    pub(super) fn sent(&self, id: &RequestId) -> bool {
        self.posts.lock().iter().any(|s| s.get() == Some(id))
    }

    /// Whether the call was failed ([`Self::fail`]).
    pub(crate) fn is_failed(&self) -> bool {
        self.failed.borrow().is_some()
    }

    /// Fail the call with `error` (the first failure wins).
    pub(super) fn fail(&self, error: ErrorObject) {
        self.failed.send_if_modified(|f| {
            if f.is_some() {
                return false;
            }
            *f = Some(error);
            true
        });
    }

    /// `work`'s outcome, unless the call is failed first (or already was): then that
    /// error, and `work` is dropped (its request upstream abandoned, so cancelled).
    pub(crate) async fn unless_failed<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, ErrorObject>>,
    ) -> Result<T, ErrorObject> {
        let mut rx = self.failed.subscribe();
        let failed = async move {
            let seen = rx.wait_for(Option::is_some).await.map(|e| {
                e.clone()
                    .unwrap_or_else(|| ErrorObject::internal("the call failed"))
            });
            match seen {
                Ok(e) => e,
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            e = failed => Err(e),
            r = work => r,
        }
    }
}

/// One request of a call registered with its [`Waiter`]; deregistered when dropped.
pub(crate) struct Post {
    waiter: Arc<Waiter>,
    sink: Arc<OnceLock<RequestId>>,
}

impl Post {
    /// Where the peer writes the request's id.
    pub(crate) fn sink(&self) -> Arc<OnceLock<RequestId>> {
        Arc::clone(&self.sink)
    }
}

impl Drop for Post {
    fn drop(&mut self) {
        self.waiter
            .posts
            .lock()
            .retain(|s| !Arc::ptr_eq(s, &self.sink));
    }
}
